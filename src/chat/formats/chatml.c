/* chatml.c -- ChatML: "<|im_start|>{role}\n{content}<|im_end|>\n" per
 * message (also the plain turns of the Qwen templates, st_chat_im_turn).
 */
#include "chat/formats/internal.h"

enum st_status st_chat_im_turn(const struct st_chat_msg *m, struct st_buf *out)
{
    enum st_status rc = st_chat_puts(out, "<|im_start|>");

    if (rc == ST_OK)
        rc = st_chat_put(out, m->role);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\n");
    if (rc == ST_OK)
        rc = st_chat_put(out, chat_content(m));
    return rc == ST_OK ? st_chat_puts(out, "<|im_end|>\n") : rc;
}

/* <|im_start|>{role}\n{content}<|im_end|>\n per message. */
enum st_status st_chat_render_chatml(const struct st_chat_req *req, struct st_buf *out)
{
    enum st_status rc = ST_OK;
    size_t i;

    for (i = 0; i < req->n_msgs && rc == ST_OK; i++)
        rc = st_chat_im_turn(&req->msgs[i], out);
    if (rc == ST_OK && req->add_generation_prompt)
        rc = st_chat_puts(out, "<|im_start|>assistant\n");
    return rc;
}
