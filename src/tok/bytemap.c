/* bytemap.c -- GPT-2 bytes_to_unicode, the byte <-> code point mapping that
 * byte-level BPE vocabularies are stored in (docs/design/ENGINE.md 5.2 step 3).
 *
 * Bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF map to the same code point; the
 * other 68 bytes map in increasing byte order to U+0100..U+0143 (so ' ' is
 * U+0120 'Ġ' and '\n' is U+010A 'Ċ').
 */
#include "tok/internal.h"
#include "tok/unicode/unicode.h"

static bool maps_to_self(uint32_t b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

/* The 68 remapped bytes are 0x00-0x20 (33), 0x7F-0xA0 (34) and 0xAD, in
 * that order, so both directions have a closed form. */
uint32_t st_bytemap_cp(unsigned char b)
{
    if (maps_to_self(b))
        return b;
    if (b <= 0x20)
        return 0x100u + b;
    if (b <= 0xA0)
        return 0x100u + 33 + (b - 0x7Fu);
    return 0x143u;                  /* 0xAD */
}

/* Byte for a mapped code point, or -1. */
static int byte_of(uint32_t cp)
{
    if (cp < 0x100)
        return maps_to_self(cp) ? (int)cp : -1;
    if (cp < 0x100 + 33)
        return (int)(cp - 0x100);
    if (cp < 0x100 + 67)
        return (int)(cp - 0x100 - 33 + 0x7F);
    return cp == 0x143 ? 0xAD : -1;
}

enum st_status st_bytemap_decode(const char *s, size_t n, struct st_buf *out)
{
    const unsigned char *p = (const unsigned char *)s;
    enum st_status rc = ST_OK;
    size_t i = 0, k;

    while (i < n && rc == ST_OK) {
        uint32_t cp;
        k = st_utf8_decode(p + i, n - i, &cp);
        int b = (cp & ST_UNI_INVALID) ? -1 : byte_of(cp);
        if (b >= 0) {
            char c = (char)b;
            rc = st_buf_append(out, &c, 1);
        } else {
            rc = st_buf_append(out, s + i, k);  /* not a mapped char: keep */
        }
        i += k;
    }
    return rc;
}
