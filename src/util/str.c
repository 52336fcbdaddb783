/* str.c -- string views and the growable owned buffer. The only place that
 * copies string bytes by hand. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "strata/str.h"

bool st_str_eq(struct st_str a, struct st_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

bool st_str_eq_c(struct st_str a, const char *c)
{
    return st_str_eq(a, st_str_c(c));
}

bool st_str_ieq_c(struct st_str a, const char *c)
{
    size_t n = strlen(c);
    return a.len == n && (n == 0 || strncasecmp(a.ptr, c, n) == 0);
}

char *st_str_dup(struct st_str s)
{
    char *p = malloc(s.len + 1);
    if (!p)
        return NULL;
    if (s.len)
        memcpy(p, s.ptr, s.len);
    p[s.len] = '\0';
    return p;
}

void st_buf_init(struct st_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void st_buf_fini(struct st_buf *b)
{
    free(b->data);
    st_buf_init(b);
}

void st_buf_reset(struct st_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static enum st_status reserve(struct st_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return ST_OK;
    size_t need = b->len + extra + 1;
    if (need < b->len)
        return ST_ERR_NOMEM;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return ST_ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return ST_OK;
}

enum st_status st_buf_append(struct st_buf *b, const void *p, size_t n)
{
    enum st_status rc = reserve(b, n);
    if (rc != ST_OK)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return ST_OK;
}

enum st_status st_buf_printf(struct st_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum st_status rc = st_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

enum st_status st_buf_vprintf(struct st_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return ST_ERR_INVALID;
    enum st_status rc = reserve(b, (size_t)n);
    if (rc != ST_OK)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return ST_OK;
}

/* The bytes a JSON string cannot hold as they are. */
static bool json_needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

/* p[0..n) starts with C0 80, U+0000 inside Strata's C strings (strata/mutf8.h). */
static bool mutf8_nul(const unsigned char *p, size_t n)
{
    return n >= 2 && p[0] == 0xC0 && p[1] == 0x80;
}

/* The escape of one such byte: \n style where JSON has one, else \u00XX. */
static enum st_status json_escape(struct st_buf *b, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char esc[6] = { '\\', 0, 0, 0, 0, 0 };
    size_t len = 2;
    switch (c) {
    case '"':  esc[1] = '"'; break;
    case '\\': esc[1] = '\\'; break;
    case '\n': esc[1] = 'n'; break;
    case '\r': esc[1] = 'r'; break;
    case '\t': esc[1] = 't'; break;
    case '\b': esc[1] = 'b'; break;
    case '\f': esc[1] = 'f'; break;
    default:
        esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
        esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
        len = 6;
    }
    return st_buf_append(b, esc, len);
}

enum st_status st_buf_json_chars(struct st_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    enum st_status rc = reserve(b, n);
    size_t i = 0;
    while (rc == ST_OK && i < n) {
        /* copy the longest run that needs no escaping in one append */
        size_t j = i;
        while (j < n && !json_needs_escape(p[j]) && !mutf8_nul(p + j, n - j))
            j++;
        if (j > i) {
            rc = st_buf_append(b, s + i, j - i);
            i = j;
        } else if (mutf8_nul(p + i, n - i)) {
            rc = st_buf_append(b, "\\u0000", 6);
            i += 2;
        } else {
            rc = json_escape(b, p[i++]);
        }
    }
    return rc;
}

enum st_status st_buf_json_str(struct st_buf *b, const char *s, size_t n)
{
    ST_TRY(st_buf_append(b, "\"", 1));
    ST_TRY(st_buf_json_chars(b, s, n));
    return st_buf_append(b, "\"", 1);
}

char *st_buf_steal(struct st_buf *b)
{
    char *p = b->data;
    if (!p)
        p = calloc(1, 1);
    st_buf_init(b);
    return p;
}
