/* gemma.c -- the Gemma template (no tools). */
#include "chat/formats/internal.h"

/* Gemma: bos, "<start_of_turn>{user|model}\n{content|trim}<end_of_turn>\n";
 * a system message becomes a prefix ("{system}\n\n") of the first turn
 * (Gemma 3; Gemma 2's template would refuse a system message instead). */
enum st_status st_chat_render_gemma(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err)
{
    size_t first = chat_role_is(&req->msgs[0], "system") ? 1 : 0;
    struct st_out o;

    ST_TRY(st_chat_check_alternating(req, first, "gemma", err));
    st_out_init(&o, out);
    st_out_text(&o, t->bos);
    for (size_t i = first; i < req->n_msgs; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        st_out_text(&o, chat_role_is(m, "assistant") ? "<start_of_turn>model\n"
                                                     : "<start_of_turn>user\n");
        if (first && i == first) {
            chat_put(&o, chat_content(&req->msgs[0]));
            st_out_text(&o, "\n\n");
        }
        chat_put(&o, st_chat_strip(chat_content(m), 3, NULL));
        st_out_text(&o, "<end_of_turn>\n");
    }
    if (req->add_generation_prompt)
        st_out_text(&o, "<start_of_turn>model\n");
    return st_out_finish(&o);
}
