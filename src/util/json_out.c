/* json_out.c -- writing JSON values into an st_buf.
 *
 * The string writer sanitises UTF-8: token bytes can be a partial
 * character, and JSON text must be valid UTF-8, so every invalid sequence
 * becomes U+FFFD (as browsers' TextDecoder and Python's errors="replace"),
 * but C0 80, Strata's U+0000 (strata/mutf8.h), which becomes \u0000.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/json_out.h"

/* A string literal and its length, for st_buf_append. */
#define LIT(s) (s), (sizeof(s) - 1)

/* Length of the valid UTF-8 sequence starting at s (n bytes left), or 0
 * when it is invalid (overlong, surrogate, > U+10FFFF, truncated). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;          /* overlong */
        if (c == 0xED)
            hi = 0x9F;          /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;          /* > U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

bool st_json_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(p + i, n - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

enum st_status st_json_str(struct st_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    enum st_status rc = st_buf_append(b, LIT("\""));
    size_t i = 0;
    while (rc == ST_OK && i < n) {
        /* escape the longest valid stretch in one call; an invalid byte
         * becomes one U+FFFD */
        size_t j = i, k = 0;
        while (j < n && (k = utf8_seq(p + j, n - j)) > 0)
            j += k;
        if (j > i) {
            rc = st_buf_json_chars(b, s + i, j - i);
            i = j;
        } else if (i + 1 < n && p[i] == 0xC0 && p[i + 1] == 0x80) {
            rc = st_buf_append(b, LIT("\\u0000"));   /* U+0000 (strata/mutf8.h) */
            i += 2;
        } else {
            rc = st_buf_append(b, LIT("\xEF\xBF\xBD"));
            i++;
        }
    }
    if (rc == ST_OK)
        rc = st_buf_append(b, LIT("\""));
    return rc;
}

enum st_status st_json_cstr(struct st_buf *b, const char *s)
{
    if (!s)
        return st_buf_append(b, LIT("null"));
    return st_json_str(b, s, strlen(s));
}

enum st_status st_json_num(struct st_buf *b, double v)
{
    if (!isfinite(v))
        return st_buf_append(b, LIT("null"));
    char tmp[32];
    /* shortest of 15 or 17 digits that reads back as the same double */
    snprintf(tmp, sizeof(tmp), "%.15g", v);
    if (strtod(tmp, NULL) != v)
        snprintf(tmp, sizeof(tmp), "%.17g", v);
    return st_buf_append(b, tmp, strlen(tmp));
}

enum st_status st_json_bytes(struct st_buf *b, const char *s, size_t n)
{
    ST_TRY(st_buf_append(b, LIT("[")));
    for (size_t i = 0; i < n; i++)
        ST_TRY(st_buf_printf(b, i ? ",%u" : "%u", (unsigned)(unsigned char)s[i]));
    return st_buf_append(b, LIT("]"));
}
