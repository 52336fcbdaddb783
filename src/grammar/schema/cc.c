/* cc.c -- the schema compiler's context helpers (cc.h) that schema.c,
 * values.c and pattern.c all call: the 400 naming the schema path, string
 * literals into the string pool, and counts.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/schema/cc.h"

enum st_status jsc_fail(struct js_cc *c, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return st_err_set(c->err, ST_ERR_INVALID, "%s (at '%s')", msg,
                      c->path_len ? c->path : "/");
}

/* Append a decoded JSON string 's' to strs re-escaped as the server
 * writes strings: quotes included when 'quoted'. */
enum st_status jsc_put_string(struct js_cc *c, struct st_str s, bool quoted, uint32_t *off,
                              uint32_t *len)
{
    struct st_buf tmp;
    st_buf_init(&tmp);
    enum st_status rc = st_json_string_append(s, &tmp);
    *off = (uint32_t)c->strs.len;
    if (rc == ST_OK)
        rc = quoted ? st_buf_json_str(&c->strs, tmp.data ? tmp.data : "", tmp.len)
                    : st_buf_json_chars(&c->strs, tmp.data ? tmp.data : "", tmp.len);
    st_buf_fini(&tmp);
    *len = (uint32_t)(c->strs.len - *off);
    if (rc == ST_OK && *len > ST_JSON_SCHEMA_MAX_LITERAL)
        return jsc_fail(c, "a property name or 'enum'/'const' string is longer than %d bytes",
                        ST_JSON_SCHEMA_MAX_LITERAL);
    return rc;
}

enum st_status jsc_get_count(struct js_cc *c, struct st_str v, const char *kw, uint32_t *out)
{
    char num[32];
    if (st_json_type(v) != ST_JSON_NUMBER || v.len >= sizeof(num))
        return jsc_fail(c, "'%s' must be a non-negative integer", kw);
    memcpy(num, v.ptr, v.len);
    num[v.len] = '\0';
    double d = strtod(num, NULL);
    if (!(d >= 0 && d <= 1e9) || d != (double)(uint32_t)d)
        return jsc_fail(c, "'%s' must be a non-negative integer", kw);
    *out = (uint32_t)d;
    return ST_OK;
}
