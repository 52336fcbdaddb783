/* chat/internal.h -- shared by chat.c (st_chat_render), registry.c and
 * continue.c.
 */
#ifndef STRATA_CHAT_INTERNAL_H
#define STRATA_CHAT_INTERNAL_H

#include "strata/chat.h"

/* st_chat_render's work once the messages are checked: every turn by the
 * template's renderer (registry.c), or ending inside the last message
 * (continue.c, which calls st_chat_render_turns). */
enum st_status st_chat_render_turns(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err);
enum st_status st_chat_render_continued(const struct st_chat_tmpl *t,
                                        const struct st_chat_req *req,
                                        struct st_buf *out, struct st_err *err);

#endif /* STRATA_CHAT_INTERNAL_H */
