/* pstr.c -- the validator's reading of a string value whose
 * schema has a "pattern" or a "format" (grammar/regex/regex.h): the JSON text of
 * the string is decoded to code points (escapes, \uXXXX, surrogate pairs,
 * UTF-8) and each code point is run through the node's DFA, whose every
 * state can still reach acceptance.
 *
 * Exactness: a byte is refused as soon as no completion of the string can
 * match. A byte that only starts a code point (a UTF-8 lead or
 * continuation byte, '\', "\u" and its hex digits) is taken when some
 * code point it may still become has a transition: the interval of those
 * code points is checked against the DFA's class intervals. The closing
 * quote only in an accepting state.
 *
 * Strictness (beyond plain strings): the text must be valid UTF-8 and a
 * surrogate escape must be a pair (\uD800-\uDBFF then \uDC00-\uDFFF), so
 * that the code points are well defined; lengths (minLength / maxLength)
 * are part of the DFA. Once in a state from which every string matches
 * (JS_RX_ANY: an unanchored pattern found), ASCII bytes are taken as a free
 * string takes them (no stepping: the state cannot change; UTF-8 is still
 * checked), so the mask's
 * free-string fast path applies (st_json_schema_in_string).
 *
 * Stack fields used (include/strata/json_schema.h): rx (DFA state), psub
 * (PS_* below), pu8 (UTF-8 bytes to come | length << 2), pacc.
 */
#include <string.h>

#include "grammar/schema/internal.h"

#define PS_CHR   0u      /* at a character */
#define PS_ESC   1u      /* after '\' */
#define PS_HEX   2u      /* in \uXXXX: PS_HEX + digits seen (0..3) */
#define PS_SUB   7u      /* mask of the above */
#define PS_LOW   8u      /* a high surrogate came: its low half must follow */

static int hexv(unsigned char b)
{
    if (b >= '0' && b <= '9')
        return b - '0';
    b |= 0x20;
    return b >= 'a' && b <= 'f' ? b - 'a' + 10 : -1;
}

/* Take code point cp. */
static int step(const struct js_regex *r, struct st_js_stack *k, uint32_t cp)
{
    uint32_t t = st_js_regex_step(r, k->rx, cp);
    if (t == JS_RX_DEAD)
        return JS_PSTR_REFUSE;
    k->rx = (uint16_t)t;
    return JS_PSTR_TAKEN;
}

/* Some first UTF-16 unit in [lo, hi] can go on: a code point of the
 * units outside the surrogates, or of a pair whose high half is in it. */
static bool units_live(const struct js_regex *r, uint32_t s, uint32_t lo, uint32_t hi)
{
    if (st_js_regex_live(r, s, lo, hi))   /* skips the surrogates */
        return true;
    uint32_t a = ST_MAX(lo, 0xd800), b = ST_MIN(hi, 0xdbff);
    return a <= b && st_js_regex_live(r, s, 0x10000 + ((a - 0xd800) << 10),
                                      0x10000 + ((b - 0xd800) << 10) + 0x3ff);
}

/* A hex digit of \uXXXX. */
static int push_hex(const struct js_regex *r, struct st_js_stack *k, unsigned char b)
{
    int h = hexv(b);
    if (h < 0)
        return JS_PSTR_REFUSE;
    uint32_t seen = (k->psub & PS_SUB) - PS_HEX + 1u;   /* digits with this one */
    uint32_t v = (k->pacc & 0xffffu) * 16 + (uint32_t)h, shift = 4 * (4 - seen);
    uint32_t lo = v << shift, hi = lo | ((1u << shift) - 1);
    uint32_t high = k->pacc >> 16 & 0x3ff;
    bool low = k->psub & PS_LOW;
    if (low) {   /* the low half of a pair */
        lo = ST_MAX(lo, 0xdc00);
        hi = ST_MIN(hi, 0xdfff);
        uint32_t base = 0x10000 + (high << 10) - 0xdc00;
        if (lo > hi || !st_js_regex_live(r, k->rx, base + lo, base + hi))
            return JS_PSTR_REFUSE;
    } else if (!units_live(r, k->rx, lo, hi)) {
        return JS_PSTR_REFUSE;
    }
    k->pacc = (k->pacc & ~0xffffu) | v;
    if (seen < 4) {
        k->psub = (uint8_t)((k->psub & PS_LOW) | (PS_HEX + seen));
        return JS_PSTR_TAKEN;
    }
    k->psub = PS_CHR;
    k->pacc = 0;
    if (v >= 0xd800 && v <= 0xdbff) {   /* units_live saw a pair can go on */
        k->psub = PS_LOW;
        k->pacc = (v - 0xd800) << 16;
        return JS_PSTR_TAKEN;
    }
    return step(r, k, low ? 0x10000 + (high << 10) + (v - 0xdc00) : v);
}

static int push_esc(const struct js_regex *r, struct st_js_stack *k, unsigned char b)
{
    static const char from[] = "\"\\/bfnrt";
    static const char to[] = "\"\\/\b\f\n\r\t";
    if (b == 'u' && ((k->psub & PS_LOW) || units_live(r, k->rx, 0, 0xffff))) {
        k->psub = (uint8_t)((k->psub & PS_LOW) | PS_HEX);
        k->pacc &= ~0xffffu;
        return JS_PSTR_TAKEN;
    }
    const char *e = b ? strchr(from, b) : NULL;
    if (!e || (k->psub & PS_LOW))
        return JS_PSTR_REFUSE;
    k->psub = PS_CHR;
    return step(r, k, (unsigned char)to[e - from]);
}

/* A UTF-8 continuation byte: the code points still possible must include
 * a valid one (not overlong, not a surrogate, at most 0x10FFFF) that goes on. */
static int push_cont(const struct js_regex *r, struct st_js_stack *k, unsigned char b)
{
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if ((b & 0xc0) != 0x80)
        return JS_PSTR_REFUSE;
    uint32_t left = (k->pu8 & 3u) - 1, len = k->pu8 >> 2;
    uint32_t acc = k->pacc << 6 | (b & 0x3fu), shift = 6 * left;
    uint32_t lo = ST_MAX(acc << shift, min_cp[len]), hi = (acc << shift) | ((1u << shift) - 1);
    if (!st_js_regex_live(r, k->rx, lo, hi))
        return JS_PSTR_REFUSE;
    k->pacc = acc;
    k->pu8 = (uint8_t)(len << 2 | left);
    if (left)
        return JS_PSTR_TAKEN;
    k->pu8 = 0;
    k->pacc = 0;
    return step(r, k, acc);
}

/* A UTF-8 lead byte. */
static int push_lead(const struct js_regex *r, struct st_js_stack *k, unsigned char b)
{
    uint32_t len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
    if (b < 0xc2 || b > 0xf4)
        return JS_PSTR_REFUSE;
    uint32_t acc = b & (0x7fu >> len), shift = 6 * (len - 1);
    uint32_t lo = acc << shift, hi = lo | ((1u << shift) - 1);
    if (len == 3)
        lo = ST_MAX(lo, 0x800);
    if (len == 4)
        lo = ST_MAX(lo, 0x10000);
    if (!st_js_regex_live(r, k->rx, lo, hi))
        return JS_PSTR_REFUSE;
    k->pacc = acc;
    k->pu8 = (uint8_t)(len << 2 | (len - 1));
    return JS_PSTR_TAKEN;
}

int st_js_pstr_push(const struct js_regex *r, struct st_js_stack *k, unsigned char b)
{
    if (k->pu8)
        return push_cont(r, k, b);
    switch (k->psub & PS_SUB) {
    case PS_CHR:
        break;
    case PS_ESC:
        return push_esc(r, k, b);
    default:
        return push_hex(r, k, b);
    }
    if (k->psub & PS_LOW) {   /* only "\u" + the low half */
        if (b != '\\')
            return JS_PSTR_REFUSE;
        k->psub = PS_LOW | PS_ESC;
        return JS_PSTR_TAKEN;
    }
    if (b == '"')
        return r->accept[k->rx] ? JS_PSTR_CLOSED : JS_PSTR_REFUSE;
    if ((r->accept[k->rx] & JS_RX_ANY) && b >= 0x20 && b < 0x80 && b != '\\')
        return JS_PSTR_TAKEN;   /* whatever follows matches: bytes as a free string takes them */
    if (b == '\\') {
        if (!st_js_regex_live(r, k->rx, 0, JS_RX_CP_END - 1))
            return JS_PSTR_REFUSE;
        k->psub = PS_ESC;
        return JS_PSTR_TAKEN;
    }
    if (b < 0x20)
        return JS_PSTR_REFUSE;
    return b < 0x80 ? step(r, k, b) : push_lead(r, k, b);
}
