/* dfa.c -- the pattern DFA of regex.h: subset
 * construction from regex.c's NFA, pruning to the states that can
 * still reach acceptance, merging code point classes, intersection (a
 * pattern with a format, or with minLength / maxLength as a counter
 * automaton), and the lookups the validator makes per code point.
 *
 * Classes: every boundary of every NFA range splits [0, 0x10FFFF] into
 * intervals; the subset construction treats each interval as one symbol.
 * Assertions: ^ is followed only in the start state's closure, $ only
 * when asking whether a state accepts (the string ends there); so the
 * start state is never merged with a later one that has the same set.
 * A work budget bounds the construction (a 400 past it).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/unicode/unicode.h"
#include "grammar/regex/regex.h"


static enum st_status rx_fail(char *msg, size_t cap, const char *fmt, ...) ST_PRINTF(3, 4);

static enum st_status rx_fail(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return ST_ERR_INVALID;
}

void st_js_regex_free(struct js_regex *r)
{
    free(r->lo);
    free(r->cls);
    free(r->next);
    free(r->accept);
    memset(r, 0, sizeof(*r));
}

static enum st_status rx_alloc(struct js_regex *r, uint32_t states, uint32_t classes,
                               uint32_t ivs)
{
    r->n_states = states;
    r->n_classes = classes;
    r->n_iv = ivs;
    r->lo = malloc(ivs * sizeof(*r->lo));
    r->cls = malloc(ivs * sizeof(*r->cls));
    r->next = malloc(((size_t)states * classes + 1) * sizeof(*r->next));
    r->accept = calloc(states + 1, 1);
    if (r->lo && r->cls && r->next && r->accept)
        return ST_OK;
    st_js_regex_free(r);
    return ST_ERR_NOMEM;
}

static uint32_t iv_of(const uint32_t *lo, uint32_t n, uint32_t cp);

/* ---- prune and merge --------------------------------------------------- */

/* live[i] = 1 for every state that can reach an accepting one: a
 * breadth-first walk of the reversed edges (CSR). */
static enum st_status mark_live(const struct js_regex *r, uint8_t *live)
{
    uint32_t ns = r->n_states, nc = r->n_classes;
    size_t cells = (size_t)ns * nc;
    uint32_t *first = calloc(ns + 2, sizeof(*first));
    uint32_t *from = malloc((cells + 1) * sizeof(*from));
    uint32_t *queue = malloc((ns + 1) * sizeof(*queue));
    if (!first || !from || !queue) {
        free(first), free(from), free(queue);
        return ST_ERR_NOMEM;
    }
    for (size_t c = 0; c < cells; c++) {
        if (r->next[c] != JS_RX_DEAD)
            first[r->next[c] + 2]++;
    }
    for (uint32_t i = 0; i < ns; i++)
        first[i + 2] += first[i + 1];
    for (size_t c = 0; c < cells; c++) {
        if (r->next[c] != JS_RX_DEAD)
            from[first[r->next[c] + 1]++] = (uint32_t)(c / nc);
    }
    uint32_t qh = 0, qt = 0;
    for (uint32_t i = 0; i < ns; i++) {
        live[i] = r->accept[i];
        if (live[i])
            queue[qt++] = i;
    }
    while (qh < qt) {   /* first[t] .. first[t + 1]: edges into t */
        uint32_t t = queue[qh++];
        for (uint32_t e = first[t]; e < first[t + 1]; e++) {
            if (!live[from[e]]) {
                live[from[e]] = 1;
                queue[qt++] = from[e];
            }
        }
    }
    free(first), free(from), free(queue);
    return ST_OK;
}

/* cmap[k]: the merged class of class k (the first with an equal column
 * over the live states, as map renumbers them); the count of merged ones. */
static enum st_status merge_classes(const struct js_regex *r, const uint8_t *live,
                                    const uint32_t *map, uint16_t *cmap, uint32_t *n_out)
{
    uint32_t ns = r->n_states, nc = r->n_classes, wc = 0;
    uint64_t *h = malloc((nc + 1) * sizeof(*h));
    if (!h)
        return ST_ERR_NOMEM;
#define MAPPED(i, k) (r->next[(size_t)(i) * nc + (k)] == JS_RX_DEAD ? JS_RX_DEAD \
                      : map[r->next[(size_t)(i) * nc + (k)]])
    for (uint32_t k = 0; k < nc; k++) {
        h[k] = 1469598103934665603ull;
        for (uint32_t i = 0; i < ns; i++) {
            if (live[i])
                h[k] = (h[k] ^ MAPPED(i, k)) * 1099511628211ull;
        }
    }
    for (uint32_t k = 0; k < nc; k++) {
        cmap[k] = (uint16_t)wc;
        for (uint32_t j = 0; j < k; j++) {
            bool same = h[j] == h[k];
            for (uint32_t i = 0; i < ns && same; i++)
                same = !live[i] || MAPPED(i, k) == MAPPED(i, j);
            if (same) {
                cmap[k] = cmap[j];
                break;
            }
        }
        if (cmap[k] == wc)
            wc++;
    }
#undef MAPPED
    free(h);
    *n_out = wc;
    return ST_OK;
}

/* finish with its scratch: map (ns + 1), live (ns + 1, zeroed), cmap
 * (nc + 1). */
static enum st_status prune_merge(struct js_regex *r, uint32_t *map, uint8_t *live,
                                  uint16_t *cmap)
{
    uint32_t ns = r->n_states, nc = r->n_classes, wc = 0;
    ST_TRY(mark_live(r, live));
    uint32_t w = 0;
    for (uint32_t i = 0; i < ns; i++)
        map[i] = live[i] && live[0] ? w++ : JS_RX_DEAD;
    ST_TRY(merge_classes(r, live, map, cmap, &wc));
    for (uint32_t i = 0; i < ns; i++) {
        if (map[i] == JS_RX_DEAD)
            continue;
        for (uint32_t k = 0; k < nc; k++) {   /* in place: map[i] <= i, cmap[k] <= k */
            uint16_t t = r->next[(size_t)i * nc + k];
            r->next[(size_t)map[i] * wc + cmap[k]] = t == JS_RX_DEAD ? JS_RX_DEAD
                                                                      : (uint16_t)map[t];
        }
        r->accept[map[i]] = r->accept[i];
    }
    uint32_t wi = 0;
    for (uint32_t i = 0; i < r->n_iv; i++) {
        uint16_t c = cmap[r->cls[i]];
        if (wi > 0 && r->cls[wi - 1] == c)
            continue;
        r->lo[wi] = r->lo[i];
        r->cls[wi++] = c;
    }
    r->n_states = w;
    r->n_classes = w ? wc : 1;
    r->n_iv = wi;
    for (uint32_t cp = 0; cp < 128; cp++)
        r->ascii[cp] = r->cls[iv_of(r->lo, r->n_iv, cp)];
    for (uint32_t i = 0; i < w; i++) {   /* JS_RX_ANY: every string goes on */
        bool all = r->accept[i] != 0;
        for (uint32_t k = 0; k < r->n_classes && all; k++)
            all = r->next[(size_t)i * r->n_classes + k] == i;
        r->accept[i] = (uint8_t)(r->accept[i] ? 1 | (all ? JS_RX_ANY : 0) : 0);
    }
    return ST_OK;
}

/* Keep the states that can reach an accepting one (renumbered in order;
 * the start, when dead, leaves an empty DFA); then merge classes whose
 * columns are equal, and intervals in a row of one class. In place. */
static enum st_status finish(struct js_regex *r)
{
    uint32_t *map = malloc((r->n_states + 1) * sizeof(*map));
    uint8_t *live = calloc(r->n_states + 1, 1);
    uint16_t *cmap = malloc((r->n_classes + 1) * sizeof(*cmap));
    enum st_status rc = map && live && cmap ? prune_merge(r, map, live, cmap) : ST_ERR_NOMEM;
    free(map), free(live), free(cmap);
    return rc;
}

/* ---- subset construction ------------------------------------------------ */

struct subset {
    const struct rx_nfa *nfa;
    uint32_t words;          /* uint64 words per set */
    uint64_t *sets;          /* n * words */
    uint32_t n, cap;
    int32_t *hash;           /* open addressing: state ids, -1 empty */
    uint32_t hcap;
    int32_t *stack;          /* closure work list */
    uint64_t work, limit;    /* closure and transition steps and the words the set
                              * table's probes compare: so far, allowed */
};

static uint64_t set_hash(const uint64_t *s, uint32_t words)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < words; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    h ^= h >> 33;   /* the table indexes by the low bits, which FNV over whole words */
    h *= 0xff51afd7ed558ccdull;   /* leaves blind to the high bits of every word */
    return h ^ h >> 33;
}

/* Add state i and what its epsilon edges reach (^ too when at_start,
 * $ too when at_end). */
static void closure(struct subset *ss, uint64_t *set, int32_t i, bool at_start, bool at_end)
{
    uint32_t sp = 0;
    if (set[i / 64] >> (i % 64) & 1)
        return;
    set[i / 64] |= UINT64_C(1) << (i % 64);
    ss->stack[sp++] = i;
    while (sp > 0) {
        const struct rx_nstate *s = &ss->nfa->st[ss->stack[--sp]];
        int32_t t[2] = { -1, -1 };
        ss->work++;
        switch (s->kind) {
        case RN_SPLIT: t[0] = s->out; t[1] = s->out1; break;
        case RN_EPS: t[0] = s->out; break;
        case RN_BOL: t[0] = at_start ? s->out : -1; break;
        case RN_EOL: t[0] = at_end ? s->out : -1; break;
        default: break;
        }
        for (int j = 0; j < 2; j++) {
            if (t[j] >= 0 && !(set[t[j] / 64] >> (t[j] % 64) & 1)) {
                set[t[j] / 64] |= UINT64_C(1) << (t[j] % 64);
                ss->stack[sp++] = t[j];
            }
        }
    }
}

/* The set accepts: the final state is in its closure with $ allowed. */
static bool set_accepts(struct subset *ss, const uint64_t *set, bool initial, uint64_t *tmp)
{
    memset(tmp, 0, ss->words * sizeof(*tmp));
    for (uint32_t i = 0; i < ss->nfa->n; i++) {
        if (set[i / 64] >> (i % 64) & 1)
            closure(ss, tmp, (int32_t)i, initial, true);
    }
    for (uint32_t i = 0; i < ss->nfa->n; i++) {
        if ((tmp[i / 64] >> (i % 64) & 1) && ss->nfa->st[i].kind == RN_FINAL)
            return true;
    }
    return false;
}

static enum st_status grow_hash(struct subset *ss)
{
    uint32_t hcap = ss->hcap ? 2 * ss->hcap : 1024;
    int32_t *h = malloc(hcap * sizeof(*h));
    if (!h)
        return ST_ERR_NOMEM;
    memset(h, 0xff, hcap * sizeof(*h));
    for (uint32_t i = 1; i < ss->n; i++) {   /* the start state is never looked up */
        uint32_t p = (uint32_t)set_hash(ss->sets + (size_t)i * ss->words, ss->words) & (hcap - 1);
        while (h[p] >= 0)
            p = (p + 1) & (hcap - 1);
        h[p] = (int32_t)i;
    }
    free(ss->hash);
    ss->hash = h;
    ss->hcap = hcap;
    return ST_OK;
}

/* The state of set (added when new; never the start state). */
static enum st_status intern(struct subset *ss, const uint64_t *set, uint32_t *id,
                             char *msg, size_t cap)
{
    if (2 * (ss->n + 1) > ss->hcap && grow_hash(ss) != ST_OK)
        return ST_ERR_NOMEM;
    uint32_t p = (uint32_t)set_hash(set, ss->words) & (ss->hcap - 1);
    for (; ss->hash[p] >= 0; p = (p + 1) & (ss->hcap - 1)) {
        ss->work += ss->words;   /* a probe compares whole sets: colliding ones cost work */
        if (!memcmp(ss->sets + (size_t)ss->hash[p] * ss->words, set, ss->words * 8)) {
            *id = (uint32_t)ss->hash[p];
            return ST_OK;
        }
    }
    if (ss->n == JS_RX_MAX_SUBSET)
        return rx_fail(msg, cap, "the pattern needs more than %d automaton states",
                       JS_RX_MAX_SUBSET);
    if (ss->n == ss->cap) {
        uint32_t c = ss->cap ? 2 * ss->cap : 64;
        uint64_t *s = realloc(ss->sets, (size_t)c * ss->words * sizeof(*s));
        if (!s)
            return ST_ERR_NOMEM;
        ss->sets = s;
        ss->cap = c;
    }
    memcpy(ss->sets + (size_t)ss->n * ss->words, set, ss->words * 8);
    ss->hash[p] = (int32_t)ss->n;
    *id = ss->n++;
    return ST_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sort and drop repeats; the new count. */
static uint32_t sort_unique(uint32_t *v, uint32_t n)
{
    qsort(v, n, sizeof(*v), cmp_u32);
    uint32_t w = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (w == 0 || v[w - 1] != v[i])
            v[w++] = v[i];
    }
    return w;
}

/* The interval holding cp: the last i with lo[i] <= cp. */
static uint32_t iv_of(const uint32_t *lo, uint32_t n, uint32_t cp)
{
    uint32_t a = 0, b = n;   /* lo[a] <= cp < lo[b] */
    while (b - a > 1) {
        uint32_t m = a + (b - a) / 2;
        if (lo[m] <= cp)
            a = m;
        else
            b = m;
    }
    return a;
}

#define MAX_IV 1024   /* class intervals of one pattern */

/* Per NFA set state, the bit set of the intervals it takes. */
static enum st_status set_classes(const struct rx_nfa *nfa, const uint32_t *lo, uint32_t n_iv,
                                  uint32_t cw, uint64_t **out)
{
    uint64_t *bits = calloc((size_t)nfa->n * cw + 1, sizeof(*bits));
    if (!bits)
        return ST_ERR_NOMEM;
    for (uint32_t s = 0; s < nfa->n; s++) {
        const struct rx_nstate *st = &nfa->st[s];
        for (uint32_t r = 0; st->kind == RN_SET && r < st->set_n; r++) {
            uint32_t a = iv_of(lo, n_iv, nfa->ranges[st->set_first + 2 * r]);
            uint32_t b = iv_of(lo, n_iv, nfa->ranges[st->set_first + 2 * r + 1]);
            for (uint32_t k = a; k <= b; k++)
                bits[(size_t)s * cw + k / 64] |= UINT64_C(1) << (k % 64);
        }
    }
    *out = bits;
    return ST_OK;
}

struct build {
    struct subset ss;
    uint32_t n_iv, cw;
    uint64_t *cbits;         /* per NFA state: its intervals */
    int32_t *members;        /* the SET states of the set being expanded */
    int32_t *fire, *prev;    /* of them, those that take the class (and the last class's) */
    uint64_t *tmp;
    uint16_t *next;          /* the table so far */
    uint8_t *accept;
};

/* Row i of the table: a transition per interval. */
static enum st_status expand(struct build *b, uint32_t i, char *msg, size_t cap)
{
    struct subset *ss = &b->ss;
    uint32_t nm = 0, nprev = UINT32_MAX, prev_to = JS_RX_DEAD;
    for (uint32_t s = 0; s < ss->nfa->n; s++) {
        if ((ss->sets[(size_t)i * ss->words + s / 64] >> (s % 64) & 1) &&
            ss->nfa->st[s].kind == RN_SET)
            b->members[nm++] = (int32_t)s;
    }
    for (uint32_t k = 0; k < b->n_iv; k++) {
        uint32_t nf = 0;
        for (uint32_t m = 0; m < nm; m++) {
            if (b->cbits[(size_t)b->members[m] * b->cw + k / 64] >> (k % 64) & 1)
                b->fire[nf++] = b->members[m];
        }
        ss->work += nm;
        uint32_t to = JS_RX_DEAD;
        if (nf == nprev && !memcmp(b->fire, b->prev, nf * sizeof(*b->fire))) {
            to = prev_to;
        } else if (nf > 0) {
            memset(b->tmp, 0, ss->words * sizeof(*b->tmp));
            for (uint32_t f = 0; f < nf; f++)
                closure(ss, b->tmp, ss->nfa->st[b->fire[f]].out, false, false);
            enum st_status rc = intern(ss, b->tmp, &to, msg, cap);
            if (rc != ST_OK)
                return rc;
        }
        memcpy(b->prev, b->fire, nf * sizeof(*b->fire));
        nprev = nf;
        prev_to = to;
        b->next[(size_t)i * b->n_iv + k] = (uint16_t)to;
        if (ss->work > ss->limit)
            return rx_fail(msg, cap, "the pattern is too complex to compile (work budget%s)",
                           ss->limit < JS_RX_MAX_WORK ? " of all the schema's patterns" : "");
    }
    return ST_OK;
}

static enum st_status subset_run(struct build *b, char *msg, size_t cap)
{
    struct subset *ss = &b->ss;
    memset(b->tmp, 0, ss->words * sizeof(*b->tmp));
    closure(ss, b->tmp, ss->nfa->start, true, false);
    ss->sets = malloc(64 * ss->words * sizeof(*ss->sets));
    if (!ss->sets || grow_hash(ss) != ST_OK)
        return ST_ERR_NOMEM;
    ss->cap = 64;
    memcpy(ss->sets, b->tmp, ss->words * 8);
    ss->n = 1;   /* the start: not in the hash */
    for (uint32_t i = 0; i < ss->n; i++) {
        if ((size_t)(i + 1) * b->n_iv > JS_RX_MAX_SUBSET * (size_t)MAX_IV)
            return rx_fail(msg, cap, "the pattern needs too many automaton states");
        ST_TRY(expand(b, i, msg, cap));
        b->accept[i] = set_accepts(ss, ss->sets + (size_t)i * ss->words, i == 0, b->tmp);
    }
    return ST_OK;
}

enum st_status st_js_regex_from_nfa(const struct rx_nfa *nfa, uint64_t *work,
                                    struct js_regex *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof(*out));
    uint64_t left = *work < JS_RX_MAX_WORK_ALL ? JS_RX_MAX_WORK_ALL - *work : 0;
    struct build b = { .ss = { .nfa = nfa, .words = (nfa->n + 63) / 64,
                               .limit = ST_MIN(left, (uint64_t)JS_RX_MAX_WORK) } };
    uint32_t *lo = malloc((nfa->n_ranges + 1) * sizeof(*lo));
    if (!lo)
        return ST_ERR_NOMEM;
    uint32_t k = 0;
    lo[k++] = 0;
    for (uint32_t i = 0; i < nfa->n_ranges; i++) {
        uint32_t v = i % 2 ? nfa->ranges[i] + 1 : nfa->ranges[i];
        if (v < JS_RX_CP_END)
            lo[k++] = v;
    }
    b.n_iv = sort_unique(lo, k);
    b.cw = (b.n_iv + 63) / 64;
    enum st_status rc = b.n_iv > MAX_IV ? rx_fail(msg, cap, "the pattern has more than %d "
                                                  "distinct character ranges", MAX_IV) : ST_OK;
    if (rc == ST_OK)
        rc = set_classes(nfa, lo, b.n_iv, b.cw, &b.cbits);
    b.ss.stack = malloc((nfa->n + 1) * sizeof(*b.ss.stack));
    b.members = malloc((nfa->n + 1) * sizeof(*b.members));
    b.fire = malloc((nfa->n + 1) * sizeof(*b.fire));
    b.prev = malloc((nfa->n + 1) * sizeof(*b.prev));
    b.tmp = malloc((b.ss.words + 1) * sizeof(*b.tmp));
    b.next = malloc((size_t)JS_RX_MAX_SUBSET * b.n_iv * sizeof(*b.next) + 2);
    b.accept = calloc(JS_RX_MAX_SUBSET + 1, 1);
    if (rc == ST_OK && !(b.ss.stack && b.members && b.fire && b.prev && b.tmp && b.next &&
                         b.accept))
        rc = ST_ERR_NOMEM;
    if (rc == ST_OK)
        rc = subset_run(&b, msg, cap);
    *work += b.ss.work;
    if (rc == ST_OK) {
        out->n_states = b.ss.n;
        out->n_classes = b.n_iv;
        out->n_iv = b.n_iv;
        out->lo = lo;
        out->cls = malloc(b.n_iv * sizeof(*out->cls));
        out->next = b.next;
        out->accept = b.accept;
        lo = NULL;
        b.next = NULL;
        b.accept = NULL;
        for (uint32_t i = 0; out->cls && i < b.n_iv; i++)
            out->cls[i] = (uint16_t)i;
        rc = out->cls ? finish(out) : ST_ERR_NOMEM;
        if (rc != ST_OK)
            st_js_regex_free(out);
    }
    free(lo), free(b.cbits), free(b.ss.stack), free(b.members), free(b.fire), free(b.prev);
    free(b.tmp), free(b.next), free(b.accept), free(b.ss.sets), free(b.ss.hash);
    return rc;
}

/* ---- intersection and lengths ------------------------------------------ */

struct pairs {
    uint64_t *key;    /* open addressing: sa * nb + sb + 1, 0 empty */
    uint32_t *id;
    uint32_t cap;
};

static enum st_status pair_id(struct pairs *p, uint64_t key, uint32_t *n, uint32_t *id,
                              uint64_t *queue)
{
    uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (p->cap - 1);
    for (; p->key[h]; h = (h + 1) & (p->cap - 1)) {
        if (p->key[h] == key) {
            *id = p->id[h];
            return ST_OK;
        }
    }
    if (*n >= JS_RX_MAX_STATES)
        return ST_ERR_INVALID;
    p->key[h] = key;
    p->id[h] = *n;
    queue[*n] = key - 1;   /* sa * nb + sb, for the walk */
    *id = (*n)++;
    return ST_OK;
}

/* The reachable pairs of states of a and b, breadth first from (0, 0),
 * as out's rows (out->next holds max_cells); class c is the pair
 * (cla[c], clb[c]). *n: the states. ST_ERR_INVALID past the limits. */
static enum st_status product_walk(const struct js_regex *a, const struct js_regex *b,
                                   const uint32_t *cla, const uint32_t *clb,
                                   struct js_regex *out, size_t max_cells, uint32_t *n)
{
    uint32_t nc = out->n_classes, first;
    uint64_t *q = malloc(((size_t)JS_RX_MAX_STATES + 1) * sizeof(*q));
    struct pairs p = { .cap = 1u << 17 };
    p.key = calloc(p.cap, sizeof(*p.key));
    p.id = malloc(p.cap * sizeof(*p.id));
    enum st_status rc = q && p.key && p.id ? pair_id(&p, 1, n, &first, q) : ST_ERR_NOMEM;
    for (uint32_t i = 0; rc == ST_OK && i < *n; i++) {
        uint32_t sa = (uint32_t)(q[i] / b->n_states), sb = (uint32_t)(q[i] % b->n_states);
        if ((size_t)(i + 1) * nc > max_cells) {
            rc = ST_ERR_INVALID;
            break;
        }
        out->accept[i] = a->accept[sa] && b->accept[sb];
        for (uint32_t c = 0; rc == ST_OK && c < nc; c++) {
            uint32_t ta = a->next[(size_t)sa * a->n_classes + cla[c]];
            uint32_t tb = b->next[(size_t)sb * b->n_classes + clb[c]];
            uint32_t to = JS_RX_DEAD;
            if (ta != JS_RX_DEAD && tb != JS_RX_DEAD)
                rc = pair_id(&p, (uint64_t)ta * b->n_states + tb + 1, n, &to, q);
            out->next[(size_t)i * nc + c] = (uint16_t)to;
        }
    }
    free(q), free(p.key), free(p.id);
    return rc;
}

/* pair_classes with its scratch: lo (a's and b's intervals) and pc (one
 * entry per pair of classes). */
static enum st_status pair_fill(const struct js_regex *a, const struct js_regex *b,
                                struct js_regex *out, uint32_t *lo, uint16_t *pc, uint32_t *cla,
                                uint32_t *clb)
{
    uint32_t n_iv = a->n_iv + b->n_iv, nc = 0;
    memcpy(lo, a->lo, a->n_iv * sizeof(*lo));
    memcpy(lo + a->n_iv, b->lo, b->n_iv * sizeof(*lo));
    n_iv = sort_unique(lo, n_iv);
    memset(pc, 0xff, (size_t)a->n_classes * b->n_classes * sizeof(*pc));
    ST_TRY(rx_alloc(out, JS_RX_MAX_STATES, 1, n_iv));
    for (uint32_t i = 0; i < n_iv; i++) {
        uint32_t ca = a->cls[iv_of(a->lo, a->n_iv, lo[i])];
        uint32_t cb = b->cls[iv_of(b->lo, b->n_iv, lo[i])];
        uint16_t *slot = &pc[(size_t)ca * b->n_classes + cb];
        if (*slot == 0xffff) {
            cla[nc] = ca;
            clb[nc] = cb;
            *slot = (uint16_t)nc++;
        }
        out->lo[i] = lo[i];
        out->cls[i] = *slot;
    }
    out->n_classes = nc;
    return ST_OK;
}

/* out's intervals: every boundary of a and of b; a class per pair of
 * classes met (cla / clb: its two, nc + 1 entries each). */
static enum st_status pair_classes(const struct js_regex *a, const struct js_regex *b,
                                   struct js_regex *out, uint32_t **cla, uint32_t **clb)
{
    uint32_t n_iv = a->n_iv + b->n_iv;
    uint32_t *lo = malloc(n_iv * sizeof(*lo));
    uint16_t *pc = malloc((size_t)a->n_classes * b->n_classes * sizeof(*pc) + 2);
    *cla = malloc((n_iv + 1) * sizeof(**cla));
    *clb = malloc((n_iv + 1) * sizeof(**clb));
    enum st_status rc = lo && pc && *cla && *clb ? pair_fill(a, b, out, lo, pc, *cla, *clb)
                                                 : ST_ERR_NOMEM;
    free(lo), free(pc);
    return rc;
}

/* The product automaton's table in out (*n states); ST_ERR_INVALID past
 * the limits. */
static enum st_status product(const struct js_regex *a, const struct js_regex *b,
                              struct js_regex *out, uint32_t **cla, uint32_t **clb, uint32_t *n)
{
    ST_TRY(pair_classes(a, b, out, cla, clb));
    free(out->next);   /* the table: as many rows as the cell cap allows */
    out->next = malloc(((size_t)JS_RX_MAX_CELLS + 1) * sizeof(*out->next));
    if (!out->next)
        return ST_ERR_NOMEM;
    if (!a->n_states || !b->n_states)
        return ST_OK;
    return product_walk(a, b, *cla, *clb, out, JS_RX_MAX_CELLS, n);
}

enum st_status st_js_regex_intersect(const struct js_regex *a, const struct js_regex *b,
                                     struct js_regex *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof(*out));
    uint32_t *cla = NULL, *clb = NULL, n = 0;
    enum st_status rc = product(a, b, out, &cla, &clb, &n);
    if (rc == ST_ERR_INVALID)
        rc = rx_fail(msg, cap, "the string's automaton needs more than %d states or %u table "
                     "cells (a 'pattern' with 'format', 'minLength' or 'maxLength')",
                     JS_RX_MAX_STATES, JS_RX_MAX_CELLS);
    if (rc == ST_OK) {
        out->n_states = n;
        rc = finish(out);
    }
    if (rc != ST_OK)
        st_js_regex_free(out);
    free(cla), free(clb);
    return rc;
}

enum st_status st_js_regex_lengths(uint32_t min, uint32_t max, struct js_regex *out, char *msg,
                                   size_t cap)
{
    memset(out, 0, sizeof(*out));
    bool bounded = max != UINT32_MAX;
    uint32_t top = bounded ? max : min;   /* states 0..top: code points so far (capped) */
    if (top >= JS_RX_MAX_STATES)
        return rx_fail(msg, cap, "'minLength' / 'maxLength' above %d with 'pattern' or "
                       "'format' is not supported", JS_RX_MAX_STATES - 1);
    enum st_status rc = rx_alloc(out, top + 1, 1, 1);
    if (rc != ST_OK)
        return rc;
    out->lo[0] = 0;
    out->cls[0] = 0;
    for (uint32_t i = 0; i <= top; i++) {
        out->next[i] = (uint16_t)(i < top ? i + 1 : bounded ? JS_RX_DEAD : top);
        out->accept[i] = i >= min;
    }
    rc = finish(out);
    if (rc != ST_OK)
        st_js_regex_free(out);
    return rc;
}

void st_js_regex_span(const struct js_regex *r, uint32_t *shortest, uint32_t *longest)
{
    uint32_t ns = r->n_states, nc = r->n_classes;
    uint32_t *d = malloc((ns + 1) * sizeof(*d)), *q = malloc((ns + 1) * sizeof(*q));
    uint32_t *indeg = calloc(ns + 1, sizeof(*indeg));
    *shortest = 0;
    *longest = UINT32_MAX;
    if (!d || !q || !indeg) {
        free(d), free(q), free(indeg);
        return;
    }
    for (uint32_t i = 0; i < ns; i++)   /* breadth first: the nearest accepting state */
        d[i] = UINT32_MAX;
    uint32_t qh = 0, qt = 0;
    d[0] = 0;
    q[qt++] = 0;
    while (qh < qt) {
        uint32_t s = q[qh++];
        if (r->accept[s]) {
            *shortest = d[s];
            break;
        }
        for (uint32_t c = 0; c < nc; c++) {
            uint16_t t = r->next[(size_t)s * nc + c];
            if (t != JS_RX_DEAD && d[t] == UINT32_MAX) {
                d[t] = d[s] + 1;
                q[qt++] = t;
            }
        }
    }
    /* longest: over a topological order (Kahn); a cycle makes it unbounded
     * (every state is reachable and live) */
    for (size_t c = 0; c < (size_t)ns * nc; c++) {
        if (r->next[c] != JS_RX_DEAD)
            indeg[r->next[c]]++;
    }
    qh = qt = 0;
    for (uint32_t i = 0; i < ns; i++) {
        d[i] = 0;
        if (!indeg[i])
            q[qt++] = i;
    }
    uint32_t best = 0;
    while (qh < qt) {
        uint32_t s = q[qh++];
        if (r->accept[s])
            best = ST_MAX(best, d[s]);
        for (uint32_t c = 0; c < nc; c++) {
            uint16_t t = r->next[(size_t)s * nc + c];
            if (t == JS_RX_DEAD)
                continue;
            d[t] = ST_MAX(d[t], d[s] + 1);
            if (--indeg[t] == 0)
                q[qt++] = t;
        }
    }
    if (qt == ns)
        *longest = best;
    free(d), free(q), free(indeg);
}

/* ---- lookups ------------------------------------------------------------ */

uint32_t st_js_regex_step(const struct js_regex *r, uint32_t s, uint32_t cp)
{
    uint32_t c = cp < 128 ? r->ascii[cp] : r->cls[iv_of(r->lo, r->n_iv, cp)];
    return r->next[(size_t)s * r->n_classes + c];
}

static bool live_part(const struct js_regex *r, uint32_t s, uint32_t lo, uint32_t hi)
{
    const uint16_t *row = r->next + (size_t)s * r->n_classes;
    for (uint32_t i = iv_of(r->lo, r->n_iv, lo); i < r->n_iv && r->lo[i] <= hi; i++) {
        if (row[r->cls[i]] != JS_RX_DEAD)
            return true;
    }
    return false;
}

bool st_js_regex_live(const struct js_regex *r, uint32_t s, uint32_t lo, uint32_t hi)
{
    hi = ST_MIN(hi, JS_RX_CP_END - 1);
    if (lo > hi)
        return false;
    if (hi < 0xd800 || lo > 0xdfff)
        return live_part(r, s, lo, hi);
    return (lo < 0xd800 && live_part(r, s, lo, 0xd7ff)) ||
           (hi > 0xdfff && live_part(r, s, 0xe000, hi));
}

bool st_js_regex_match(const struct js_regex *r, const char *s, size_t n)
{
    uint32_t st = 0;
    if (!r->n_states)
        return false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += st_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if ((cp & ST_UNI_INVALID) || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        st = st_js_regex_step(r, st, cp);
        if (st == JS_RX_DEAD)
            return false;
    }
    return r->accept[st];
}
