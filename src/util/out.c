/* out.c -- the sticky-error writer (out.h): each append runs only while no
 * failure is recorded, and a failed append leaves the buffer as it was. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "strata/json_out.h"
#include "strata/out.h"

void st_out_init(struct st_out *o, struct st_buf *b)
{
    o->buf = b;
    o->rc = ST_OK;
    o->max = 0;
}

void st_out_cap(struct st_out *o, size_t max)
{
    o->max = max;
}

enum st_status st_out_finish(const struct st_out *o)
{
    return o->rc;
}

void st_out_to(struct st_out *o, struct st_buf *b)
{
    o->buf = b;
}

void st_out_check(struct st_out *o, enum st_status rc)
{
    if (o->rc == ST_OK)
        o->rc = rc;
}

/* Close one append that started at length 'before': record its status, and
 * on failure (its own, or passing the cap) cut buf back to 'before'. */
static void done(struct st_out *o, size_t before, enum st_status rc)
{
    if (rc == ST_OK && o->max && o->buf->len > o->max)
        rc = ST_ERR_NOMEM;
    if (rc != ST_OK && o->buf->len > before) {
        o->buf->len = before;
        o->buf->data[before] = '\0';
    }
    st_out_check(o, rc);
}

void st_out_raw(struct st_out *o, const void *p, size_t n)
{
    if (o->rc != ST_OK)
        return;
    size_t before = o->buf->len;
    done(o, before, st_buf_append(o->buf, p, n));
}

void st_out_printf(struct st_out *o, const char *fmt, ...)
{
    if (o->rc != ST_OK)
        return;
    /* most pieces fit on the stack: format once and copy */
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        o->rc = ST_ERR_INVALID;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        st_out_raw(o, small, (size_t)n);
        return;
    }
    size_t before = o->buf->len;
    va_start(ap, fmt);
    enum st_status rc = st_buf_vprintf(o->buf, fmt, ap);
    va_end(ap);
    done(o, before, rc);
}

void st_out_json_str(struct st_out *o, const char *s, size_t n)
{
    if (o->rc == ST_OK) {
        size_t before = o->buf->len;
        done(o, before, st_json_str(o->buf, s, n));
    }
}

void st_out_json_cstr(struct st_out *o, const char *s)
{
    if (o->rc == ST_OK) {
        size_t before = o->buf->len;
        done(o, before, st_json_cstr(o->buf, s));
    }
}

void st_out_json_num(struct st_out *o, double v)
{
    if (o->rc == ST_OK) {
        size_t before = o->buf->len;
        done(o, before, st_json_num(o->buf, v));
    }
}

void st_out_json_bytes(struct st_out *o, const char *s, size_t n)
{
    if (o->rc == ST_OK) {
        size_t before = o->buf->len;
        done(o, before, st_json_bytes(o->buf, s, n));
    }
}

void st_out_json_i64(struct st_out *o, int64_t v)
{
    st_out_printf(o, "%" PRId64, v);
}

void st_out_json_u64(struct st_out *o, uint64_t v)
{
    st_out_printf(o, "%" PRIu64, v);
}

void st_out_json_bool(struct st_out *o, bool v)
{
    st_out_text(o, v ? "true" : "false");
}

void st_out_sep(struct st_out *o)
{
    const struct st_buf *b = o->buf;
    char last = b->len ? b->data[b->len - 1] : '{';
    if (last != '{' && last != '[' && last != ',' && last != ':')
        st_out_raw(o, ",", 1);
}

void st_out_key(struct st_out *o, const char *key)
{
    st_out_sep(o);
    st_out_printf(o, "\"%s\":", key);
}

void st_out_kv_str(struct st_out *o, const char *key, const char *s)
{
    st_out_key(o, key);
    st_out_json_cstr(o, s);
}

void st_out_kv_num(struct st_out *o, const char *key, double v)
{
    st_out_key(o, key);
    st_out_json_num(o, v);
}

void st_out_kv_i64(struct st_out *o, const char *key, int64_t v)
{
    st_out_key(o, key);
    st_out_json_i64(o, v);
}

void st_out_kv_u64(struct st_out *o, const char *key, uint64_t v)
{
    st_out_key(o, key);
    st_out_json_u64(o, v);
}

void st_out_kv_bool(struct st_out *o, const char *key, bool v)
{
    st_out_key(o, key);
    st_out_json_bool(o, v);
}

void st_out_kv_raw(struct st_out *o, const char *key, const char *text)
{
    st_out_key(o, key);
    st_out_text(o, text);
}
