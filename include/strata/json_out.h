/* json_out.h -- writing JSON values into an st_buf (util/json_out.c).
 *
 * Responses are rendered by hand, not through a cJSON tree: a stream chunk
 * is built for every token, so it must be cheap. struct st_out (out.h)
 * wraps these for output code that appends many pieces in a row.
 */
#ifndef STRATA_JSON_OUT_H
#define STRATA_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "strata/compiler.h"
#include "strata/status.h"
#include "strata/str.h"

/* Append 's' (n bytes) as a JSON string literal. Invalid UTF-8 sequences
 * become U+FFFD, so the output is always valid JSON and valid UTF-8. */
ST_MUST_CHECK enum st_status st_json_str(struct st_buf *b, const char *s, size_t n);
ST_MUST_CHECK enum st_status st_json_cstr(struct st_buf *b, const char *s);   /* NULL -> null */
/* A finite double, shortest round-trip form; NaN/Inf -> null. */
ST_MUST_CHECK enum st_status st_json_num(struct st_buf *b, double v);
/* [b0,b1,...] of the raw bytes, as OpenAI's logprobs "bytes". */
ST_MUST_CHECK enum st_status st_json_bytes(struct st_buf *b, const char *s, size_t n);
/* True when s[0..n) is valid UTF-8. */
bool st_json_utf8_valid(const char *s, size_t n);

#endif /* STRATA_JSON_OUT_H */
