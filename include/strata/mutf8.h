/* mutf8.h -- U+0000 inside Strata's C strings.
 *
 * Request text travels as C strings (the JSON reader's values, chat
 * messages, the rendered prompt, generated text), where a zero byte would
 * end the string. So inside Strata U+0000 is written as the two bytes
 * C0 80 (the "modified UTF-8" of Java and Android): never valid UTF-8
 * otherwise, so it cannot stand for anything else. The JSON reader makes
 * it from \u0000 (st_mutf8_json), the tokenizer turns it back into the
 * byte 0 (st_mutf8_decode), the detokenizer writes a zero byte as it and
 * the JSON writer as \u0000. A request body that holds the raw bytes
 * C0 80 is refused (it is not UTF-8), so no client text turns into U+0000.
 *
 * Threads: pure functions.
 */
#ifndef STRATA_MUTF8_H
#define STRATA_MUTF8_H

#include <stdbool.h>
#include <stddef.h>

#include "strata/compiler.h"
#include "strata/status.h"

#define ST_MUTF8_NUL "\xC0\x80"

/* JSON text in[0..n) with every \u0000 escape (in a string or a key) as
 * ST_MUTF8_NUL. *out NULL: nothing to change (the text reads as it is);
 * else *out (malloc'd, NUL-terminated, the caller's) holds *out_n bytes.
 * ST_ERR_INVALID when the text holds the raw bytes C0 80 (*bad_at: their
 * offset; else n); ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_mutf8_json(const char *in, size_t n, char **out, size_t *out_n,
                             size_t *bad_at);

/* Whether s[0..n) holds ST_MUTF8_NUL. */
bool st_mutf8_has_nul(const char *s, size_t n);

/* Turn every ST_MUTF8_NUL of s[0..n) into a zero byte, in place; returns
 * the new length. */
size_t st_mutf8_decode(char *s, size_t n);

/* JSON text t[0..n) printed from values that hold ST_MUTF8_NUL (cJSON's
 * printer copies it as it is) with each written \u0000: a malloc'd,
 * NUL-terminated copy (the caller's), NULL on no memory. */
char *st_mutf8_json_escape(const char *t, size_t n);

#endif /* STRATA_MUTF8_H */
