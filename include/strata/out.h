/* out.h -- a sticky-error writer for output built from many appends.
 *
 * Output code (JSON bodies, the Prometheus text) appends dozens of pieces
 * in a row. Checking each status made that code a chain of
 * `if (rc == ST_OK) rc = ...;`. A struct st_out remembers the first failure
 * instead: every append after it does nothing, and st_out_finish says how
 * it went. So a writer is a plain list of appends and one status at the
 * end:
 *
 *     struct st_out o;
 *     st_out_init(&o, &buf);
 *     st_out_text(&o, "{");
 *     st_out_kv_i64(&o, "id", id);
 *     st_out_kv_str(&o, "name", name);
 *     st_out_text(&o, "}");
 *     return st_out_finish(&o);
 *
 * The text goes into a caller's st_buf (borrowed), so writers that take an
 * st_buf and writers that take an st_out mix freely.
 */
#ifndef STRATA_OUT_H
#define STRATA_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "strata/compiler.h"
#include "strata/status.h"
#include "strata/str.h"

struct st_out {
    struct st_buf *buf;   /* borrowed: where the text goes */
    enum st_status rc;    /* the first failure; ST_OK until one */
    size_t max;           /* 0: no cap; else the most bytes buf may hold */
};

void st_out_init(struct st_out *o, struct st_buf *b);
/* Cap buf at max bytes (0: no cap): an append that would pass it fails
 * with ST_ERR_NOMEM, as if memory had run out, and appends nothing. */
void st_out_cap(struct st_out *o, size_t max);
/* The first failure, or ST_OK. The text so far stays in buf either way. */
ST_MUST_CHECK enum st_status st_out_finish(const struct st_out *o);

static inline bool st_out_ok(const struct st_out *o)
{
    return o->rc == ST_OK;
}

/* Write into b from now on, keeping the status: for writers that fill
 * several buffers side by side and fail as one. */
void st_out_to(struct st_out *o, struct st_buf *b);

/* Record rc (from a writer that takes the st_buf) unless a failure is
 * already recorded. Call such writers only while st_out_ok. */
void st_out_check(struct st_out *o, enum st_status rc);

/* ---- text ------------------------------------------------------------- */

void st_out_raw(struct st_out *o, const void *p, size_t n);
static inline void st_out_text(struct st_out *o, const char *s)   /* s as it is */
{
    st_out_raw(o, s, strlen(s));
}
void st_out_printf(struct st_out *o, const char *fmt, ...) ST_PRINTF(2, 3);

/* ---- JSON values (json_out.h writes them) ----------------------------- */

void st_out_json_str(struct st_out *o, const char *s, size_t n);   /* a string literal */
void st_out_json_cstr(struct st_out *o, const char *s);            /* NULL -> null */
void st_out_json_num(struct st_out *o, double v);                  /* NaN/Inf -> null */
void st_out_json_i64(struct st_out *o, int64_t v);
void st_out_json_u64(struct st_out *o, uint64_t v);
void st_out_json_bool(struct st_out *o, bool v);
void st_out_json_bytes(struct st_out *o, const char *s, size_t n);   /* [b0,b1,...] */

/* ---- JSON members and elements ---------------------------------------- */

/* A comma, unless the text so far ends where a member or element starts
 * (after '{', '[', ',' or ':', or nothing written yet). A JSON value never
 * ends in one of those, so this gives the commas of compact JSON. */
void st_out_sep(struct st_out *o);
/* st_out_sep, then "key": ('key' is written as it is: a name the code
 * owns, never input). The value follows. */
void st_out_key(struct st_out *o, const char *key);
void st_out_kv_str(struct st_out *o, const char *key, const char *s);   /* NULL -> null */
void st_out_kv_num(struct st_out *o, const char *key, double v);
void st_out_kv_i64(struct st_out *o, const char *key, int64_t v);
void st_out_kv_u64(struct st_out *o, const char *key, uint64_t v);
void st_out_kv_bool(struct st_out *o, const char *key, bool v);
/* "key":text, the text as it is: a literal such as "null" or "\"model\"". */
void st_out_kv_raw(struct st_out *o, const char *key, const char *text);

#endif /* STRATA_OUT_H */
