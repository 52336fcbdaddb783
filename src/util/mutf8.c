/* mutf8.c -- U+0000 as C0 80 inside Strata's C strings (strata/mutf8.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strata/mutf8.h"

/* The offset of the first ST_MUTF8_NUL in s[0..n), or n. */
static size_t find_nul(const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if ((unsigned char)s[i] == 0xC0 && (unsigned char)s[i + 1] == 0x80)
            return i;
    }
    return n;
}

bool st_mutf8_has_nul(const char *s, size_t n)
{
    return find_nul(s, n) < n;
}

size_t st_mutf8_decode(char *s, size_t n)
{
    size_t w = 0;
    for (size_t r = 0; r < n; r++) {
        if ((unsigned char)s[r] == 0xC0 && r + 1 < n && (unsigned char)s[r + 1] == 0x80) {
            s[w++] = '\0';
            r++;
        } else {
            s[w++] = s[r];
        }
    }
    return w;
}

/* Whether the text has the escape at all (most bodies: one scan, no copy). */
static bool has_escape(const char *in, size_t n)
{
    static const char esc[] = "\\u0000";
    for (size_t i = 0; i + 6 <= n; i++) {
        if (in[i] == '\\' && memcmp(in + i, esc, 6) == 0)
            return true;
    }
    return false;
}

enum st_status st_mutf8_json(const char *in, size_t n, char **out, size_t *out_n,
                             size_t *bad_at)
{
    *out = NULL;
    *out_n = 0;
    *bad_at = 0;
    *bad_at = find_nul(in, n);
    if (*bad_at < n)
        return ST_ERR_INVALID;
    if (!has_escape(in, n))
        return ST_OK;
    char *o = malloc(n + 1);
    if (!o)
        return ST_ERR_NOMEM;
    size_t w = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (!in_str) {
            in_str = c == '"';
            o[w++] = c;
        } else if (c == '"') {
            in_str = false;
            o[w++] = c;
        } else if (c != '\\' || i + 1 == n) {
            o[w++] = c;
        } else if (i + 6 <= n && memcmp(in + i, "\\u0000", 6) == 0) {
            memcpy(o + w, ST_MUTF8_NUL, 2);
            w += 2;
            i += 5;
        } else {   /* any other escape: both bytes as they are */
            o[w++] = c;
            o[w++] = in[++i];
        }
    }
    o[w] = '\0';
    *out = o;
    *out_n = w;
    return ST_OK;
}

char *st_mutf8_json_escape(const char *t, size_t n)
{
    size_t k = 0;
    for (size_t i = find_nul(t, n); i < n; i = i + 2 + find_nul(t + i + 2, n - i - 2))
        k++;
    if (k > (SIZE_MAX - n - 1) / 4)
        return NULL;
    char *o = malloc(n + 4 * k + 1);
    if (!o)
        return NULL;
    size_t w = 0;
    for (size_t r = 0; r < n; r++) {
        if (r + 1 < n && (unsigned char)t[r] == 0xC0 && (unsigned char)t[r + 1] == 0x80) {
            memcpy(o + w, "\\u0000", 6);
            w += 6;
            r++;
        } else {
            o[w++] = t[r];
        }
    }
    o[w] = '\0';
    return o;
}
