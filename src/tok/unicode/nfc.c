/* nfc.c -- Unicode Normalization Form C (UAX #15) for the tokenizer.
 *
 * Qwen's tokenizer.json runs an NFC normalizer before pre-tokenizing, so
 * "e" + U+0301 tokenizes like "é". Steps: fast check (no NFC-unsafe code
 * point -> already NFC), else full canonical decomposition into a code point
 * array, canonical ordering (stable sort of combining-mark runs by class),
 * and canonical composition. Bytes that are not valid UTF-8 are carried
 * through untouched as ccc-0 "starters" that never compose.
 */
#include <stdlib.h>
#include <string.h>

#include "strata/xalloc.h"

#include "tok/unicode/internal.h"

#define SBASE 0xAC00u
#define LBASE 0x1100u
#define VBASE 0x1161u
#define TBASE 0x11A7u
#define LCOUNT 19u
#define VCOUNT 21u
#define TCOUNT 28u
#define NCOUNT (VCOUNT * TCOUNT)
#define SCOUNT (LCOUNT * NCOUNT)

/* A growable code point array: the working storage of one normalization. */
struct cpvec {
    uint32_t *v;
    size_t    n, cap;
};

static enum st_status cpvec_push(struct cpvec *a, uint32_t cp)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64, bytes;
        uint32_t *p;
        if (!st_mul_ok(cap, sizeof(*p), &bytes))
            return ST_ERR_NOMEM;
        p = realloc(a->v, bytes);
        if (!p)
            return ST_ERR_NOMEM;
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = cp;
    return ST_OK;
}

static bool is_unsafe(uint32_t cp)
{
    size_t lo = 0, hi = st_uni_nfc_unsafe_len;

    if (cp < 0x300 || (cp & ST_UNI_INVALID))
        return false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < st_uni_nfc_unsafe[mid].lo)
            hi = mid;
        else if (cp > st_uni_nfc_unsafe[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

static const struct st_uni_decomp *find_decomp(uint32_t cp)
{
    size_t lo = 0, hi = st_uni_decomp_tab_len;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < st_uni_decomp_tab[mid].cp)
            hi = mid;
        else if (cp > st_uni_decomp_tab[mid].cp)
            lo = mid + 1;
        else
            return &st_uni_decomp_tab[mid];
    }
    return NULL;
}

/* Canonical composite of (a, b), or 0 if they do not compose. */
static uint32_t compose(uint32_t a, uint32_t b)
{
    size_t lo = 0, hi = st_uni_comp_tab_len;

    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 &&
        b > TBASE && b < TBASE + TCOUNT)
        return a + (b - TBASE);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct st_uni_comp *c = &st_uni_comp_tab[mid];
        if (a < c->first || (a == c->first && b < c->second))
            hi = mid;
        else if (a > c->first || b > c->second)
            lo = mid + 1;
        else
            return c->composite;
    }
    return 0;
}

static uint8_t ccc_of(uint32_t cp)
{
    return (cp & ST_UNI_INVALID) ? 0 : st_uni_ccc(cp);
}

static enum st_status decompose_one(struct cpvec *a, uint32_t cp)
{
    const struct st_uni_decomp *d;

    if (cp >= SBASE && cp < SBASE + SCOUNT) {   /* Hangul: L V [T] */
        uint32_t s = cp - SBASE;
        ST_TRY(cpvec_push(a, LBASE + s / NCOUNT));
        ST_TRY(cpvec_push(a, VBASE + (s % NCOUNT) / TCOUNT));
        return s % TCOUNT ? cpvec_push(a, TBASE + s % TCOUNT) : ST_OK;
    }
    d = (cp & ST_UNI_INVALID) ? NULL : find_decomp(cp);
    if (!d)
        return cpvec_push(a, cp);
    for (size_t i = 0; i < d->len; i++)
        ST_TRY(cpvec_push(a, st_uni_decomp_pool[d->off + i]));
    return ST_OK;
}

/* Stable insertion sort of each run of non-starters by combining class. */
static void canonical_order(struct cpvec *a)
{
    size_t i, j;

    for (i = 1; i < a->n; i++) {
        uint32_t c = a->v[i];
        uint8_t cc = ccc_of(c);
        if (cc == 0)
            continue;
        for (j = i; j > 0; j--) {
            uint8_t pc = ccc_of(a->v[j - 1]);
            if (pc <= cc)
                break;
            a->v[j] = a->v[j - 1];
        }
        a->v[j] = c;
    }
}

/* In-place canonical composition; returns the new length. */
static size_t canonical_compose(uint32_t *v, size_t n)
{
    size_t i, out = 0, starter = SIZE_MAX;
    uint8_t last = 0;

    for (i = 0; i < n; i++) {
        uint32_t c = v[i], comp;
        uint8_t cc = ccc_of(c);
        bool adjacent = starter != SIZE_MAX && out == starter + 1;

        if (starter != SIZE_MAX && (adjacent || (last != 0 && last < cc)) &&
            !(v[starter] & ST_UNI_INVALID) && !(c & ST_UNI_INVALID) &&
            (comp = compose(v[starter], c)) != 0) {
            v[starter] = comp;
            continue;
        }
        if (cc == 0) {
            starter = out;
            last = 0;
        } else {
            last = cc;
        }
        v[out++] = c;
    }
    return out;
}

static enum st_status emit(const struct cpvec *a, struct st_buf *out)
{
    enum st_status rc = ST_OK;
    size_t i;

    for (i = 0; i < a->n && rc == ST_OK; i++) {
        char b[4];
        uint32_t cp = a->v[i];
        if (cp & ST_UNI_INVALID) {
            b[0] = (char)(cp & 0xFF);
            rc = st_buf_append(out, b, 1);
        } else {
            rc = st_buf_append(out, b, st_utf8_encode(cp, b));
        }
    }
    return rc;
}

enum st_status st_uni_nfc(const char *s, size_t n, struct st_buf *out, bool *same)
{
    const unsigned char *p = (const unsigned char *)s;
    struct cpvec a = { NULL, 0, 0 };
    enum st_status rc = ST_OK;
    size_t i = 0, k;
    uint32_t cp;
    bool unsafe = false;

    st_buf_reset(out);
    while (i < n && !unsafe) {
        if (p[i] < 0xCC) {          /* ASCII and lead bytes below U+0300 */
            i += p[i] < 0x80 ? 1 : st_utf8_decode(p + i, n - i, &cp);
            continue;
        }
        i += st_utf8_decode(p + i, n - i, &cp);
        unsafe = is_unsafe(cp);
    }
    *same = !unsafe;
    if (!unsafe)
        return ST_OK;
    for (i = 0; i < n && rc == ST_OK; i += k) {
        k = st_utf8_decode(p + i, n - i, &cp);
        if ((cp & ST_UNI_INVALID) && k > 1) {
            size_t j;                       /* keep every byte of a bad subpart */
            for (j = 0; j < k && rc == ST_OK; j++)
                rc = cpvec_push(&a, ST_UNI_INVALID | p[i + j]);
            continue;
        }
        rc = decompose_one(&a, cp);
    }
    if (rc == ST_OK) {
        canonical_order(&a);
        a.n = canonical_compose(a.v, a.n);
        rc = emit(&a, out);
    }
    free(a.v);
    return rc;
}
