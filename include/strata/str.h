/* str.h -- string views and the few owned-string helpers we allow.
 *
 * A struct st_str is a borrowed (ptr, len) view, not NUL-terminated. Copies
 * are made only at an owner boundary, through st_str_dup / st_xstrndup.
 * st_buf is a growable owned byte buffer (always NUL-terminated).
 */
#ifndef STRATA_STR_H
#define STRATA_STR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/status.h"

struct st_str {
    const char *ptr;  /* borrowed */
    size_t      len;  /* bytes */
};

static inline struct st_str st_str_c(const char *s)
{
    struct st_str r = { s, 0 };
    while (s && s[r.len])
        r.len++;
    return r;
}

bool st_str_eq(struct st_str a, struct st_str b);
bool st_str_eq_c(struct st_str a, const char *c);
bool st_str_ieq_c(struct st_str a, const char *c);   /* ASCII case-insensitive */

/* Returns owned NUL-terminated copy; free(). NULL on out of memory. */
char *st_str_dup(struct st_str s);

struct st_buf {
    char  *data;  /* owned; NUL-terminated when cap > 0 */
    size_t len;   /* bytes, excluding the NUL */
    size_t cap;   /* bytes allocated */
};

void st_buf_init(struct st_buf *b);
void st_buf_fini(struct st_buf *b);
ST_MUST_CHECK enum st_status st_buf_append(struct st_buf *b, const void *p, size_t n);
ST_MUST_CHECK enum st_status st_buf_printf(struct st_buf *b, const char *fmt, ...) ST_PRINTF(2, 3);
ST_MUST_CHECK enum st_status st_buf_vprintf(struct st_buf *b, const char *fmt, va_list ap)
    ST_PRINTF(2, 0);
/* Append 's' as a JSON string literal (quotes and escapes included; C0 80,
 * U+0000 in Strata's C strings (strata/mutf8.h), as \u0000; other bytes
 * >= 0x80 are copied as they are: util/json_out.c's st_json_str also repairs
 * invalid UTF-8). */
ST_MUST_CHECK enum st_status st_buf_json_str(struct st_buf *b, const char *s, size_t n);
/* The same without the quotes: the escaped body of the literal. */
ST_MUST_CHECK enum st_status st_buf_json_chars(struct st_buf *b, const char *s, size_t n);
void st_buf_reset(struct st_buf *b);
/* Hand the data to the caller (free()); leaves b empty. */
char *st_buf_steal(struct st_buf *b);

#endif /* STRATA_STR_H */
