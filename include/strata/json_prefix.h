/* json_prefix.h -- a byte-at-a-time JSON prefix validator (RFC 8259) for
 * constrained sampling (response_format json_object, docs/API.md).
 *
 * The state is small (16 bytes) and plain: copy it to try bytes without
 * committing to them (the sampler walks every candidate token's bytes from
 * a copy). It answers two questions after each byte: is the text so far
 * still the start of some valid document, and is it a complete one (the
 * top-level value closed, only whitespace after)?
 *
 * The top-level value must be an object (OpenAI's json_object): leading
 * whitespace, then '{'. Containers nest at most ST_JSON_MAX_DEPTH deep (one
 * bit per level: object or array). Inside strings, bytes >= 0x80 pass
 * through unchecked (UTF-8 is the detokenizer's business; a token may hold
 * half a character); bytes < 0x20 are invalid there, as JSON says.
 * Once invalid, the state stays invalid.
 *
 * Storage: caller-owned value, nothing allocated. Threads: one per object.
 */
#ifndef STRATA_JSON_PREFIX_H
#define STRATA_JSON_PREFIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ST_JSON_MAX_DEPTH 64

struct st_json_prefix {
    uint64_t stack;     /* bit d set: level d (0 = outermost) is an array, else an object */
    uint8_t  depth;     /* open containers, 0..ST_JSON_MAX_DEPTH */
    uint8_t  mode;      /* lexical state (json_prefix.c enum jmode) */
    uint8_t  aux;       /* \u digits seen, or literal id * 8 + bytes matched */
    uint8_t  key;       /* the string being read is an object key */
};

/* The empty text: a valid prefix, not complete. */
void st_json_prefix_init(struct st_json_prefix *j);
/* Append one byte; false when the text is no longer a valid prefix. */
bool st_json_prefix_push(struct st_json_prefix *j, unsigned char b);
/* Append n bytes; false as soon as one makes the text invalid. */
bool st_json_prefix_feed(struct st_json_prefix *j, const char *s, size_t n);
bool st_json_prefix_valid(const struct st_json_prefix *j);
/* Inside a string, not in an escape: any bytes but '"', '\\' and
 * those < 0x20 may come (the sampler's fast path for string content). */
bool st_json_prefix_in_string(const struct st_json_prefix *j);
/* Between the grammar's tokens (not in a string, number or literal):
 * whitespace leaves the state as it is. */
bool st_json_prefix_between(const struct st_json_prefix *j);
/* Nothing but whitespace so far (the top-level object has not opened). */
bool st_json_prefix_empty(const struct st_json_prefix *j);
/* One top-level object done, at most whitespace after it. */
bool st_json_prefix_complete(const struct st_json_prefix *j);

#endif /* STRATA_JSON_PREFIX_H */
