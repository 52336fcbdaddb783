/* gemma.c -- the Gemma template (no tools). */
#include "chat/formats/internal.h"

/* Gemma: bos, "<start_of_turn>{user|model}\n{content|trim}<end_of_turn>\n";
 * a system message becomes a prefix ("{system}\n\n") of the first turn
 * (Gemma 3; Gemma 2's template would refuse a system message instead). */
enum st_status st_chat_render_gemma(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err)
{
    size_t first = chat_role_is(&req->msgs[0], "system") ? 1 : 0, i;
    enum st_status rc = st_chat_check_alternating(req, first, "gemma", err);

    if (rc == ST_OK)
        rc = st_chat_puts(out, t->bos);
    for (i = first; i < req->n_msgs && rc == ST_OK; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        rc = st_chat_puts(out, chat_role_is(m, "assistant") ? "<start_of_turn>model\n"
                                                       : "<start_of_turn>user\n");
        if (rc == ST_OK && first && i == first) {
            rc = st_chat_put(out, chat_content(&req->msgs[0]));
            if (rc == ST_OK)
                rc = st_chat_puts(out, "\n\n");
        }
        if (rc == ST_OK)
            rc = st_chat_put(out, st_chat_strip(chat_content(m), 3, NULL));
        if (rc == ST_OK)
            rc = st_chat_puts(out, "<end_of_turn>\n");
    }
    if (rc == ST_OK && req->add_generation_prompt)
        rc = st_chat_puts(out, "<start_of_turn>model\n");
    return rc;
}
