/* chatml.c -- ChatML: "<|im_start|>{role}\n{content}<|im_end|>\n" per
 * message (also the plain turns of the Qwen templates, st_chat_im_turn).
 */
#include "chat/formats/internal.h"

void st_chat_im_turn(struct st_out *o, const struct st_chat_msg *m)
{
    st_out_text(o, "<|im_start|>");
    chat_put(o, m->role);
    st_out_text(o, "\n");
    chat_put(o, chat_content(m));
    st_out_text(o, "<|im_end|>\n");
}

enum st_status st_chat_render_chatml(const struct st_chat_req *req, struct st_buf *out)
{
    struct st_out o;

    st_out_init(&o, out);
    for (size_t i = 0; i < req->n_msgs; i++)
        st_chat_im_turn(&o, &req->msgs[i]);
    if (req->add_generation_prompt)
        st_out_text(&o, "<|im_start|>assistant\n");
    return st_out_finish(&o);
}
