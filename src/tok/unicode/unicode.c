/* unicode.c -- UTF-8 coding, the \p{L} \p{N} \s classes, and NFC.
 *
 * The classes and the canonical data come from the generated tables in
 * unicode_tables.c (binary search over sorted ranges, ASCII answered
 * directly). NFC follows UAX #15: full canonical decomposition (Hangul
 * algorithmically), canonical ordering by combining class, then canonical
 * composition of unblocked pairs. A string without any "NFC-unsafe" code
 * point is already NFC, which is the common case and costs one scan.
 */
#include <stdlib.h>
#include <string.h>

#include "tok/unicode/internal.h"

/* ---- UTF-8 ---- */

/* Valid range of the second byte after lead 'b' (Unicode Table 3-7). */
static void second_range(unsigned char b, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b == 0xE0)
        *lo = 0xA0;
    else if (b == 0xED)
        *hi = 0x9F;
    else if (b == 0xF0)
        *lo = 0x90;
    else if (b == 0xF4)
        *hi = 0x8F;
}

/* Sequence length announced by a lead byte; 0 for an invalid lead. */
static size_t lead_len(unsigned char b)
{
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        return 2;
    if (b >= 0xE0 && b <= 0xEF)
        return 3;
    if (b >= 0xF0 && b <= 0xF4)
        return 4;
    return 0;
}

size_t st_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    size_t need = lead_len(s[0]), i;
    unsigned char lo, hi;
    uint32_t v;

    if (need == 1) {
        *cp = s[0];
        return 1;
    }
    *cp = ST_UNI_INVALID | s[0];
    if (need == 0)
        return 1;
    second_range(s[0], &lo, &hi);
    v = s[0] & (0x7F >> need);
    for (i = 1; i < need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi)
            return i;               /* maximal subpart, as WHATWG decoders do */
        v = (v << 6) | (s[i] & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    *cp = v;
    return need;
}

size_t st_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t st_utf8_incomplete_tail(const unsigned char *s, size_t n)
{
    size_t k, need, i;
    unsigned char lo, hi;

    for (k = 1; k <= 3 && k <= n; k++) {
        unsigned char b = s[n - k];
        if (b >= 0x80 && b <= 0xBF)
            continue;                       /* continuation: look further back */
        need = lead_len(b);
        if (need <= k)
            return 0;                       /* ASCII, bad lead, or complete */
        second_range(b, &lo, &hi);
        for (i = 1; i < k; i++) {
            if (s[n - k + i] < lo || s[n - k + i] > hi)
                return 0;                   /* already broken: not "incomplete" */
            lo = 0x80;
            hi = 0xBF;
        }
        return k;
    }
    return 0;
}

bool st_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    uint32_t cp;

    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        i += st_utf8_decode(p + i, n - i, &cp);
        if (cp & ST_UNI_INVALID)
            return false;
    }
    return true;
}

/* ---- classes ---- */

static bool in_ranges(const struct st_uni_range *r, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

bool st_uni_is_letter(uint32_t cp)
{
    if (cp < 0x80)
        return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    return in_ranges(st_uni_letter, st_uni_letter_len, cp);
}

bool st_uni_is_number(uint32_t cp)
{
    if (cp < 0x80)
        return cp >= '0' && cp <= '9';
    return in_ranges(st_uni_number, st_uni_number_len, cp);
}

uint8_t st_uni_case_class(uint32_t cp)
{
    size_t lo = 0, hi = st_uni_case_tab_len;

    if (cp < 0x80)
        return (cp >= 'A' && cp <= 'Z') ? ST_UNI_CASE_UP
             : (cp >= 'a' && cp <= 'z') ? ST_UNI_CASE_LOW : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < st_uni_case_tab[mid].lo)
            hi = mid;
        else if (cp > st_uni_case_tab[mid].hi)
            lo = mid + 1;
        else
            return st_uni_case_tab[mid].cls;
    }
    return 0;
}

/* The White_Space property (PropList.txt), which is what \s means in the
 * Oniguruma regexes of Hugging Face tokenizers and in llama.cpp. Stable
 * since Unicode 6.3. */
bool st_uni_is_space(uint32_t cp)
{
    if (cp < 0x80)
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

uint8_t st_uni_ccc(uint32_t cp)
{
    size_t lo = 0, hi = st_uni_ccc_tab_len;

    if (cp < 0x300)
        return 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < st_uni_ccc_tab[mid].lo)
            hi = mid;
        else if (cp > st_uni_ccc_tab[mid].hi)
            lo = mid + 1;
        else
            return st_uni_ccc_tab[mid].ccc;
    }
    return 0;
}
