/* chat/jinja/strings.h -- Python str operations (strings.c) that the
 * methods and filters share. Results live in the render's arena. */
#ifndef STRATA_CHAT_JINJA_STRINGS_H
#define STRATA_CHAT_JINJA_STRINGS_H

#include "chat/jinja/internal.h"

/* which: 1 left, 2 right, 3 both; chars NULL / none = whitespace. */
enum st_status js_strip(struct jrender *r, struct st_str s, int which, const struct jv *chars,
                        struct st_str *out);
/* str.split(sep, maxsplit): sep NULL / none splits on runs of whitespace. */
enum st_status js_split(struct jrender *r, struct st_str s, const struct jv *sep,
                        int64_t maxsplit, struct jv *out);
/* count < 0: every occurrence. */
enum st_status js_replace(struct jrender *r, struct st_str s, struct st_str old,
                          struct st_str new, int64_t count, struct st_str *out);
enum st_status js_case(struct jrender *r, struct st_str s, char mode, struct st_str *out);
bool    js_starts(struct st_str s, struct st_str prefix);
bool    js_ends(struct st_str s, struct st_str suffix);
int64_t js_find(struct st_str s, struct st_str sub);   /* byte offset or -1 */
size_t  js_cp_len(struct st_str s);                    /* code points */

#endif /* STRATA_CHAT_JINJA_STRINGS_H */
