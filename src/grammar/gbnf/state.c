/* state.c -- the GBNF recognizer (include/strata/gbnf.h): a set of
 * pushdown stacks over the compiled program, fed one byte at a time.
 *
 * A stack's entries are program elements, the top the next to match;
 * after every character each stack is expanded until its top is a
 * terminal (or it is empty: the text may end): a reference at the top is
 * replaced by its continuation (the element after it, unless that is the
 * alternative's end: a tail call, so x* and right recursion do not grow
 * the stack) and one new stack per alternative of the rule is made, each
 * with that alternative's first element on top; an alternative's end pops.
 * The work per character has a budget (GB_BUDGET element visits); the
 * compiler bounds one stack's expansion below it (bound.c).
 * An alternative is taken only where its need fits in ST_GBNF_MAX_DEPTH
 * (gbnf.c), so every kept stack can be completed. Identical stacks are
 * kept once; past ST_GBNF_MAX_STACKS (or ST_GBNF_MAX_ENTRIES entries) the
 * later ones are dropped.
 *
 * UTF-8: a character's bytes are read one at a time; after each of its
 * first bytes only the stacks whose top terminal holds some character
 * starting with those bytes are kept (the characters a prefix may become
 * are one range, surrogates and overlong forms left out), and the
 * character is matched when whole.
 */
#include <string.h>

#include "grammar/gbnf/internal.h"

#define GB_MAX_LEVEL 256          /* nested expansions of alternatives not followed in place */
#define GB_HASH      (2 * ST_GBNF_MAX_STACKS)   /* dedup table slots (a power of 2) */

struct gx {
    const struct st_gbnf *g;
    struct st_gbnf_state *dst;
    uint32_t budget;
    uint16_t slot[GB_HASH];   /* stack index + 1 by hash of its entries; 0: free */
};

static void gx_init(struct gx *x, const struct st_gbnf *g, struct st_gbnf_state *dst)
{
    x->g = g;
    x->dst = dst;
    x->budget = GB_BUDGET;
    memset(x->slot, 0, sizeof(x->slot));
}

/* Add stack e[0..len) to x->dst unless it is there already (a hash table
 * keeps the check O(1) with hundreds of stacks) or there is no room. */
static void add_stack(struct gx *x, const uint16_t *e, uint32_t len)
{
    struct st_gbnf_state *d = x->dst;
    uint32_t h = 2166136261u ^ len;
    for (uint32_t k = 0; k < len; k++)
        h = (h ^ e[k]) * 16777619u;
    for (uint32_t i = h & (GB_HASH - 1);; i = (i + 1) & (GB_HASH - 1)) {
        uint32_t j = x->slot[i];
        if (j == 0) {
            if (d->n >= ST_GBNF_MAX_STACKS || d->off[d->n] + len > ST_GBNF_MAX_ENTRIES)
                return;
            x->slot[i] = (uint16_t)(d->n + 1);
            break;
        }
        j--;
        if ((uint32_t)(d->off[j + 1] - d->off[j]) == len &&
            !memcmp(d->e + d->off[j], e, len * sizeof(*e)))
            return;
    }
    memcpy(d->e + d->off[d->n], e, len * sizeof(*e));
    d->off[d->n + 1] = (uint16_t)(d->off[d->n] + len);
    d->n++;
}

/* An alternative starting at element f may go at index 'base'. */
static bool fits(const struct st_gbnf *g, uint32_t base, uint32_t f)
{
    return g->el[f].need != GB_INF && base + 1 + g->el[f].need <= ST_GBNF_MAX_DEPTH;
}

/* Of the alternatives [a0, a1) that fit at 'base', the one to follow in
 * place: the last that does not start with a terminal (it may go on
 * through the empty text and expand much more), else the last. The others
 * nest a level each (GB_MAX_LEVEL), and one that starts with a terminal
 * ends at once, so a long row of rules like `"" | "x"` does not nest
 * past the limit (which would drop the ways on through the empty text).
 * UINT32_MAX: none fits. */
static uint32_t in_place(const struct st_gbnf *g, uint32_t base, uint32_t a0, uint32_t a1)
{
    uint32_t last = UINT32_MAX, open = UINT32_MAX;
    for (uint32_t a = a0; a < a1; a++) {
        if (!fits(g, base, g->alt[a]))
            continue;
        last = a;
        open = g->el[g->alt[a]].type != GB_CHAR ? a : open;
    }
    return open != UINT32_MAX ? open : last;
}

/* Expand tmp[0..len) (ST_GBNF_MAX_DEPTH entries of room) until every
 * stack's top is a terminal or it is empty, into x->dst. */
static void expand(struct gx *x, uint16_t *tmp, uint32_t len, uint32_t level)
{
    const struct st_gbnf *g = x->g;
    for (;;) {
        if (x->budget == 0)
            return;
        x->budget--;
        if (len == 0) {
            add_stack(x, tmp, 0);
            return;
        }
        uint32_t p = tmp[len - 1];
        const struct gb_el *el = &g->el[p];
        if (el->type == GB_END) {
            len--;
            continue;
        }
        if (el->type == GB_CHAR) {
            add_stack(x, tmp, len);
            return;
        }
        bool tail = g->el[p + 1].type == GB_END;
        uint32_t base = tail ? len - 1 : len;
        if (!tail)
            tmp[len - 1] = (uint16_t)(p + 1);
        uint32_t a0 = g->rule_alt[el->arg], a1 = g->rule_alt[el->arg + 1];
        uint32_t keep = in_place(g, base, a0, a1);
        if (keep == UINT32_MAX)
            return;
        for (uint32_t a = a0; a < a1 && level < GB_MAX_LEVEL; a++) {
            if (a == keep || !fits(g, base, g->alt[a]))
                continue;
            uint16_t sub[ST_GBNF_MAX_DEPTH];
            memcpy(sub, tmp, base * sizeof(*sub));
            sub[base] = (uint16_t)g->alt[a];
            expand(x, sub, base + 1, level + 1);
        }
        tmp[base] = (uint16_t)g->alt[keep];
        len = base + 1;
    }
}

void st_gbnf_state_init(struct st_gbnf_state *st, const struct st_gbnf *g)
{
    st->g = g;
    st->n = 0;
    st->off[0] = 0;
    st->u8_len = st->u8_left = 0;
    st->u8_cp = 0;
    uint16_t tmp[ST_GBNF_MAX_DEPTH] = { 0 };   /* el[0]: the reference to root */
    struct gx x;
    gx_init(&x, g, st);
    expand(&x, tmp, 1, 0);
}

void st_gbnf_state_copy(struct st_gbnf_state *dst, const struct st_gbnf_state *src)
{
    size_t head = offsetof(struct st_gbnf_state, off);
    memcpy(dst, src, head + ((size_t)src->n + 1) * sizeof(src->off[0]));
    memcpy(dst->e, src->e, (size_t)src->off[src->n] * sizeof(src->e[0]));
}

static const struct gb_set *top_set(const struct st_gbnf_state *st, uint32_t i)
{
    uint32_t a = st->off[i], b = st->off[i + 1];
    if (a == b)
        return NULL;
    const struct gb_el *el = &st->g->el[st->e[b - 1]];
    return &st->g->sets[el->arg];
}

static bool set_meets(const struct st_gbnf *g, const struct gb_set *s, uint32_t lo,
                      uint32_t hi)
{
    if (s->all_high || s->n == 0)
        return s->all_high;
    const struct gb_range *r = g->ranges + s->first;
    for (uint32_t k = 0; k < s->n; k++) {
        if (r[k].lo <= hi && r[k].hi >= lo)
            return true;
    }
    return false;
}

/* The whole character cp: every stack whose top holds it moves on. */
static bool push_cp(struct st_gbnf_state *st, uint32_t cp)
{
    struct st_gbnf_state ns;
    ns.g = st->g;
    ns.n = 0;
    ns.off[0] = 0;
    ns.u8_len = ns.u8_left = 0;
    ns.u8_cp = 0;
    struct gx x;
    gx_init(&x, st->g, &ns);
    for (uint32_t i = 0; i < st->n; i++) {
        const struct gb_set *s = top_set(st, i);
        if (!s || !st_gb_set_has(st->g, s, cp))
            continue;
        uint16_t tmp[ST_GBNF_MAX_DEPTH];
        uint32_t len = (uint32_t)(st->off[i + 1] - st->off[i]);
        memcpy(tmp, st->e + st->off[i], len * sizeof(*tmp));
        tmp[len - 1]++;   /* past the terminal */
        expand(&x, tmp, len, 0);
    }
    st_gbnf_state_copy(st, &ns);
    return ns.n > 0;
}

/* The code points a character whose first bytes gave 'cp' (u8_left
 * bytes still to come) may be: [*lo, *hi]; false when none is valid. */
static bool u8_range(const struct st_gbnf_state *st, uint32_t *lo, uint32_t *hi)
{
    static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    static const uint32_t max[5] = { 0, 0, 0x7FF, 0xFFFF, 0x10FFFF };
    uint32_t sh = 6u * st->u8_left;
    uint32_t a = st->u8_cp << sh, b = a | ((1u << sh) - 1);
    a = ST_MAX(a, min[st->u8_len]);
    b = ST_MIN(b, max[st->u8_len]);
    if (b >= 0xD800 && a <= 0xDFFF) {   /* surrogates: never in UTF-8 */
        if (a >= 0xD800)
            return false;
        b = 0xD7FF;
    }
    *lo = a;
    *hi = b;
    return a <= b;
}

/* Keep the stacks whose top holds a character in [lo, hi]. */
static bool keep_meeting(struct st_gbnf_state *st, uint32_t lo, uint32_t hi)
{
    uint32_t k = 0, w = 0;
    for (uint32_t i = 0; i < st->n; i++) {
        const struct gb_set *s = top_set(st, i);
        uint32_t a = st->off[i], len = (uint32_t)(st->off[i + 1] - a);
        if (!s || !set_meets(st->g, s, lo, hi))
            continue;
        memmove(st->e + w, st->e + a, len * sizeof(st->e[0]));
        st->off[k] = (uint16_t)w;
        w += len;
        k++;
    }
    st->off[k] = (uint16_t)w;
    st->n = (uint16_t)k;
    return k > 0;
}

static bool fail(struct st_gbnf_state *st)
{
    st->n = 0;
    st->off[0] = 0;
    return false;
}

bool st_gbnf_push(struct st_gbnf_state *st, unsigned char b)
{
    if (st->n == 0)
        return false;
    if (st->u8_left > 0) {
        if ((b & 0xC0) != 0x80)
            return fail(st);
        st->u8_cp = (st->u8_cp << 6) | (b & 0x3Fu);
        st->u8_left--;
    } else if (b < 0x80) {
        return push_cp(st, b) || fail(st);
    } else {
        uint32_t len = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3
                     : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
        if (len == 0)
            return fail(st);
        st->u8_len = (uint8_t)len;
        st->u8_left = (uint8_t)(len - 1);
        st->u8_cp = b & (0x7Fu >> len);
    }
    uint32_t lo, hi;
    if (!u8_range(st, &lo, &hi))
        return fail(st);
    if (st->u8_left > 0)
        return keep_meeting(st, lo, hi) || fail(st);
    st->u8_len = 0;
    return push_cp(st, lo) || fail(st);
}

bool st_gbnf_feed(struct st_gbnf_state *st, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!st_gbnf_push(st, (unsigned char)s[i]))
            return false;
    }
    return st->n > 0;
}

bool st_gbnf_valid(const struct st_gbnf_state *st)
{
    return st->n > 0;
}

bool st_gbnf_complete(const struct st_gbnf_state *st)
{
    if (st->u8_left > 0)
        return false;
    for (uint32_t i = 0; i < st->n; i++) {
        if (st->off[i] == st->off[i + 1])
            return true;
    }
    return false;
}

bool st_gbnf_may_continue(const struct st_gbnf_state *st)
{
    if (st->u8_left > 0)
        return st->n > 0;
    for (uint32_t i = 0; i < st->n; i++) {
        if (st->off[i] != st->off[i + 1])
            return true;
    }
    return false;
}

void st_gbnf_first_bytes(const struct st_gbnf_state *st, bool first[256])
{
    memset(first, 0, 256 * sizeof(bool));
    if (st->n == 0)
        return;
    struct st_gbnf_state t;   /* header only: u8_range reads the character's fields */
    t.u8_cp = st->u8_cp;
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t lo, hi;
        if (st->u8_left > 0) {
            if ((b & 0xC0) != 0x80)
                continue;
            t.u8_len = st->u8_len;
            t.u8_left = (uint8_t)(st->u8_left - 1);
            t.u8_cp = (st->u8_cp << 6) | (b & 0x3Fu);
        } else if (b < 0x80) {
            for (uint32_t i = 0; i < st->n && !first[b]; i++) {
                const struct gb_set *s = top_set(st, i);
                first[b] = s && ((s->ascii[b >> 6] >> (b & 63)) & 1u);
            }
            continue;
        } else {
            uint32_t len = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3
                         : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
            if (len == 0)
                continue;
            t.u8_len = (uint8_t)len;
            t.u8_left = (uint8_t)(len - 1);
            t.u8_cp = b & (0x7Fu >> len);
        }
        if (!u8_range(&t, &lo, &hi))
            continue;
        for (uint32_t i = 0; i < st->n && !first[b]; i++) {
            const struct gb_set *s = top_set(st, i);
            first[b] = s && (lo == hi ? st_gb_set_has(st->g, s, lo) : set_meets(st->g, s, lo, hi));
        }
    }
}

/* Stacks a and b of two states are the same. */
static bool same_state(const struct st_gbnf_state *a, const struct st_gbnf_state *b)
{
    return a->n == b->n && a->u8_left == 0 && b->u8_left == 0 &&
           !memcmp(a->off, b->off, ((size_t)a->n + 1) * sizeof(a->off[0])) &&
           !memcmp(a->e, b->e, (size_t)a->off[a->n] * sizeof(a->e[0]));
}

/* Try stack i's top as the loop: the characters only it takes, and one of
 * them leaves the state as it is. */
static bool loop_of(const struct st_gbnf_state *st, uint32_t i, bool loop[256])
{
    const struct gb_set *s = top_set(st, i);
    if (!s)
        return false;
    uint64_t only[2] = { s->ascii[0], s->ascii[1] };
    bool high = s->all_high;
    for (uint32_t j = 0; j < st->n; j++) {
        const struct gb_set *o = j == i ? NULL : top_set(st, j);
        if (!o)
            continue;
        only[0] &= ~o->ascii[0];
        only[1] &= ~o->ascii[1];
        high = high && !o->any_high;
    }
    if (!only[0] && !only[1] && !high)
        return false;
    struct st_gbnf_state t;
    st_gbnf_state_copy(&t, st);
    uint32_t c = 0;
    while (c < 128 && !((only[c >> 6] >> (c & 63)) & 1u))
        c++;
    bool ok = c < 128 ? push_cp(&t, c) : push_cp(&t, 0x80);
    if (!ok || !same_state(&t, st))
        return false;
    for (uint32_t b = 0; b < 256; b++)
        loop[b] = b < 128 ? (only[b >> 6] >> (b & 63)) & 1u : high;
    return true;
}

bool st_gbnf_loop_bytes(const struct st_gbnf_state *st, bool loop[256])
{
    memset(loop, 0, 256 * sizeof(bool));
    if (st->n == 0 || st->u8_left > 0)
        return false;
    for (uint32_t i = 0; i < st->n && i < 4; i++) {
        if (loop_of(st, i, loop))
            return true;
    }
    return false;
}
