/* chat/internal.h -- shared by chat.c (st_chat_render), registry.c and
 * continue.c.
 */
#ifndef STRATA_CHAT_INTERNAL_H
#define STRATA_CHAT_INTERNAL_H

#include <stdint.h>

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

/* The request rendered by the template's Jinja interpreter (jinja_req.c):
 * the messages, tools and kwargs as the template's variables. */
enum st_status st_chat_render_jinja(const struct st_chat_tmpl *t, const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err);
/* Set t->jinja_object_args: a call whose arguments are a JSON string does
 * not show them as JSON members, one whose arguments are an object does
 * (llama.cpp probes templates the same way); and t->jinja_no_system: a
 * system message's text does not reach the render. */
void st_chat_jinja_probe_args(struct st_chat_tmpl *t);

/* fast_path.c: the template source's hash (64-bit FNV-1a), and whether
 * the C renderer of 'kind' is known to render that exact template byte for
 * byte as the interpreter does. */
uint64_t st_chat_tmpl_hash(const char *src, size_t len);
bool st_chat_fast_path(const char *src, size_t len, enum st_chat_kind kind);
size_t st_chat_fast_path_count(void);   /* templates listed */

/* chat.c: st_chat_tmpl_init, warning about an unrecognized template or not. */
void st_chat_tmpl_recognize(struct st_chat_tmpl *t, const char *source, size_t len,
                            const char *bos, const char *eos, const char *model_name,
                            bool warn);

#endif /* STRATA_CHAT_INTERNAL_H */
