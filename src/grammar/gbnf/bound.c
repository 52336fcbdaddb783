/* bound.c -- the compile-time bound on the recognizer's work per
 * character (state.c), so that a byte the mask allowed can never run
 * the recognizer out of its budget and leave it without a way on.
 *
 * The recognizer expands each stack after a character until every top is
 * a terminal (or the stack is empty), without memoization: each element
 * visit costs one unit of a per-character budget (GB_BUDGET). Rules that
 * match the empty text multiply the ways to get past them (a tree of them
 * that doubles 18 times is 2^18 visits, however few stacks come out), and
 * a stack whose entries may all end without a character is popped through
 * to its bottom. So the worst work of one stack's expansion is computed
 * here and a grammar whose worst exceeds GB_WORK_MAX (a quarter of the
 * budget: four matching stacks always expand in full) is refused, naming
 * the rule. The first matching stack then always expands in full, and its
 * expansion always ends in at least one stack (every alternative taken
 * fits, gbnf.c), so an allowed byte always leaves a way on; later stacks
 * may still be cut by the budget (the text stays in the language, fewer
 * texts can be written, as past ST_GBNF_MAX_STACKS).
 *
 * Counting as expand() does (pruning by depth only lowers the real work):
 * for element e, v(e) = visits from e to the end of its alternative and
 * n(e) = the ways of reaching that end (each pops into what is below):
 *   END: v 1, n 1;  terminal: v 1, n 0;
 *   reference to R, last before END (a tail call): v 1 + V(R), n N(R);
 *   other reference:  v 1 + V(R) + N(R) v(e+1),  n N(R) n(e+1);
 * V(R), N(R): the sums over R's alternatives' first elements. These depend
 * only on rules that may start R (no left recursion: a DAG), in the order
 * of a depth-first walk. The stack below: ctx_k(R), the worst work of
 * popping out of a frame of R at stack index k: root at index 0 has the
 * empty stack below (1 visit); a tail reference from P keeps the index
 * (ctx_k(R) >= ctx_k(P)); any other reference e from P puts R one above
 * its continuation (ctx_k+1(R) >= v(e+1) + n(e+1) ctx_k(P)). Per index,
 * for ST_GBNF_MAX_DEPTH indices (or until nothing changes), the work after
 * a terminal p of rule P is v(p+1) + n(p+1) ctx_k(P). Counts saturate.
 */
#include <stdlib.h>
#include <string.h>

#include "grammar/gbnf/internal.h"

#define WB_CAP (UINT64_C(1) << 40)   /* saturation: "more than anything allowed" */

struct wb {
    const struct gb_bound_in *in;
    uint64_t *ev, *en;        /* n_el: v(e), n(e) */
    uint64_t *rv, *rn;        /* n_rules: V(R), N(R) */
    uint32_t *tail_first;     /* n_rules + 1: CSR of tail references P -> R */
    uint32_t *tail;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b >= WB_CAP ? WB_CAP : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    if (a == 0 || b == 0)
        return 0;
    return a >= WB_CAP / b ? WB_CAP : a * b;
}

/* v and n of every element of alternative al, from the rules' V and N. */
static void alt_values(struct wb *w, uint32_t al)
{
    const struct st_gbnf *g = w->in->g;
    uint32_t first = g->alt[al], e = first;
    while (g->el[e].type != GB_END)
        e++;
    w->ev[e] = 1;
    w->en[e] = 1;
    while (e-- > first) {
        const struct gb_el *x = &g->el[e];
        if (x->type == GB_CHAR) {
            w->ev[e] = 1;
            w->en[e] = 0;
        } else if (g->el[e + 1].type == GB_END) {
            w->ev[e] = sat_add(1, w->rv[x->arg]);
            w->en[e] = w->rn[x->arg];
        } else {
            uint64_t r = w->rv[x->arg], n = w->rn[x->arg];
            w->ev[e] = sat_add(sat_add(1, r), sat_mul(n, w->ev[e + 1]));
            w->en[e] = sat_mul(n, w->en[e + 1]);
        }
    }
}

static void rule_values(struct wb *w, uint32_t r)
{
    const struct st_gbnf *g = w->in->g;
    uint64_t v = 0, n = 0;
    for (uint32_t al = g->rule_alt[r]; al < g->rule_alt[r + 1]; al++) {
        alt_values(w, al);
        v = sat_add(v, w->ev[g->alt[al]]);
        n = sat_add(n, w->en[g->alt[al]]);
    }
    w->rv[r] = v;
    w->rn[r] = n;
}

/* The next rule rule r's values wait for, from element *pos on (the
 * elements that may read the first character of an alternative), or
 * UINT32_MAX when every one is done. */
static uint32_t pending(const struct wb *w, const uint8_t *done, uint32_t r, uint32_t *pos)
{
    const struct st_gbnf *g = w->in->g;
    uint32_t end = g->alt[g->rule_alt[r + 1]];
    while (*pos < end) {
        const struct gb_el *x = &g->el[*pos];
        if (x->type == GB_REF && !done[x->arg])
            return x->arg;
        if (x->type == GB_REF && w->rn[x->arg] > 0) {
            (*pos)++;   /* it may be empty: the next element may read first too */
            continue;
        }
        while (g->el[*pos].type != GB_END)   /* this alternative is decided */
            (*pos)++;
        (*pos)++;
    }
    return UINT32_MAX;
}

/* V and N of every rule, each after the rules that may start it. */
static enum st_status all_rule_values(struct wb *w, struct st_err *err)
{
    const struct st_gbnf *g = w->in->g;
    uint32_t nr = g->n_rules;
    uint8_t *done = calloc(nr, 1), *on = calloc(nr, 1);
    uint32_t *path = malloc((size_t)nr * sizeof(*path)), *pos = malloc((size_t)nr * sizeof(*pos));
    enum st_status rc = done && on && path && pos ? ST_OK
                      : st_err_set(err, ST_ERR_NOMEM, "out of memory");
    for (uint32_t r0 = 0; r0 < nr && rc == ST_OK; r0++) {
        if (done[r0])
            continue;
        uint32_t d = 0;
        path[d] = r0;
        pos[d++] = g->alt[g->rule_alt[r0]];
        on[r0] = 1;
        while (d > 0) {
            uint32_t r = path[d - 1], s = pending(w, done, r, &pos[d - 1]);
            if (s == UINT32_MAX) {
                rule_values(w, r);
                done[r] = 1;
                on[r] = 0;
                d--;
            } else if (on[s]) {   /* left recursion: refused before this runs */
                rc = st_err_set(err, ST_ERR_INVALID, "left recursion in the grammar");
                break;
            } else {
                on[s] = 1;
                path[d] = s;
                pos[d++] = g->alt[g->rule_alt[s]];
            }
        }
    }
    for (uint32_t al = 0; rc == ST_OK && al < w->in->n_alts; al++)
        alt_values(w, al);   /* every element from the final values */
    free(done);
    free(on);
    free(path);
    free(pos);
    return rc;
}

/* The CSR of tail references: P -> R where P's alternative ends with R. */
static enum st_status tail_edges(struct wb *w, struct st_err *err)
{
    const struct gb_bound_in *in = w->in;
    const struct st_gbnf *g = in->g;
    uint32_t nr = g->n_rules;
    w->tail_first = calloc((size_t)nr + 2, sizeof(*w->tail_first));
    if (!w->tail_first)
        return st_err_set(err, ST_ERR_NOMEM, "out of memory");
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t al = 0; al < in->n_alts; al++) {
            uint32_t p = in->lhs[al];
            for (uint32_t e = g->alt[al]; g->el[e].type != GB_END; e++) {
                if (g->el[e].type != GB_REF || g->el[e + 1].type != GB_END)
                    continue;
                if (pass == 0)
                    w->tail_first[p + 2]++;
                else
                    w->tail[w->tail_first[p + 1]++] = g->el[e].arg;
            }
        }
        if (pass > 0)
            break;
        for (uint32_t r = 0; r < nr; r++)
            w->tail_first[r + 2] += w->tail_first[r + 1];
        w->tail = malloc(((size_t)w->tail_first[nr + 1] + 1) * sizeof(*w->tail));
        if (!w->tail)
            return st_err_set(err, ST_ERR_NOMEM, "out of memory");
    }
    return ST_OK;   /* tail_first[r .. r+1) now bounds r's edges */
}

/* ---- the stack below: one index at a time -------------------------------- */

struct ctx_rule {
    uint64_t v;
    uint32_t r;
};

struct level {
    uint64_t *ctx, *next;     /* n_rules */
    struct ctx_rule *order;   /* n_rules */
    uint32_t *stack;          /* n_rules */
    uint8_t *seen;            /* n_rules */
};

static int by_ctx_desc(const void *a, const void *b)
{
    uint64_t x = ((const struct ctx_rule *)a)->v, y = ((const struct ctx_rule *)b)->v;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* ctx(R) = the largest base ctx of the rules that reach R by tail
 * references (R included): from the largest down, each rule is given the
 * value of the first that reaches it. */
static void tail_closure(const struct wb *w, struct level *lv)
{
    uint32_t nr = w->in->g->n_rules, m = 0;
    for (uint32_t r = 0; r < nr; r++) {
        lv->seen[r] = 0;
        if (lv->ctx[r] > 0)
            lv->order[m++] = (struct ctx_rule){ lv->ctx[r], r };
    }
    qsort(lv->order, m, sizeof(*lv->order), by_ctx_desc);
    for (uint32_t i = 0; i < m; i++) {
        uint32_t s0 = lv->order[i].r, d = 0;
        if (lv->seen[s0])
            continue;
        uint64_t v = lv->order[i].v;
        lv->seen[s0] = 1;
        lv->stack[d++] = s0;
        while (d > 0) {
            uint32_t p = lv->stack[--d];
            lv->ctx[p] = v;
            for (uint32_t k = w->tail_first[p]; k < w->tail_first[p + 1]; k++) {
                uint32_t r = w->tail[k];
                if (!lv->seen[r]) {
                    lv->seen[r] = 1;
                    lv->stack[d++] = r;
                }
            }
        }
    }
}

/* The worst work after a terminal at this index (*worst, its rule *at). */
static void level_work(const struct wb *w, const struct level *lv, uint64_t *worst,
                       uint32_t *at)
{
    const struct gb_bound_in *in = w->in;
    const struct st_gbnf *g = in->g;
    for (uint32_t al = 0; al < in->n_alts; al++) {
        uint64_t c = lv->ctx[in->lhs[al]];
        if (c == 0)
            continue;
        for (uint32_t e = g->alt[al]; g->el[e].type != GB_END; e++) {
            if (g->el[e].type != GB_CHAR)
                continue;
            uint64_t v = sat_add(w->ev[e + 1], sat_mul(w->en[e + 1], c));
            if (v > *worst) {
                *worst = v;
                *at = in->lhs[al];
            }
        }
    }
}

/* ctx one index up: R below the continuation of every other reference. */
static void level_up(const struct wb *w, struct level *lv)
{
    const struct gb_bound_in *in = w->in;
    const struct st_gbnf *g = in->g;
    memset(lv->next, 0, g->n_rules * sizeof(*lv->next));
    for (uint32_t al = 0; al < in->n_alts; al++) {
        uint64_t c = lv->ctx[in->lhs[al]];
        if (c == 0)
            continue;
        for (uint32_t e = g->alt[al]; g->el[e].type != GB_END; e++) {
            if (g->el[e].type != GB_REF || g->el[e + 1].type == GB_END)
                continue;
            uint64_t v = sat_add(w->ev[e + 1], sat_mul(w->en[e + 1], c));
            uint32_t r = g->el[e].arg;
            lv->next[r] = ST_MAX(lv->next[r], v);
        }
    }
    uint64_t *t = lv->ctx;
    lv->ctx = lv->next;
    lv->next = t;
}

/* The worst work of one stack's expansion after any character (or before
 * the first), and the rule where it happens. */
static enum st_status worst_work(struct wb *w, uint64_t *worst, uint32_t *at,
                                 struct st_err *err)
{
    const struct st_gbnf *g = w->in->g;
    uint32_t nr = g->n_rules, root = g->el[0].arg;
    struct level lv = { 0 };
    uint64_t *prev = calloc(nr, sizeof(*prev));
    lv.ctx = calloc(nr, sizeof(*lv.ctx));
    lv.next = calloc(nr, sizeof(*lv.next));
    lv.order = malloc((size_t)nr * sizeof(*lv.order));
    lv.stack = malloc((size_t)nr * sizeof(*lv.stack));
    lv.seen = malloc(nr);
    enum st_status rc = prev && lv.ctx && lv.next && lv.order && lv.stack && lv.seen
                      ? ST_OK : st_err_set(err, ST_ERR_NOMEM, "out of memory");
    *worst = sat_add(w->ev[0], w->en[0]);   /* the start: root over the empty stack */
    *at = root;
    if (rc == ST_OK)
        lv.ctx[root] = 1;
    for (uint32_t k = 0; rc == ST_OK && k < ST_GBNF_MAX_DEPTH; k++) {
        tail_closure(w, &lv);
        if (k > 0 && !memcmp(prev, lv.ctx, nr * sizeof(*prev)))
            break;   /* the same as one index down: so are all above */
        level_work(w, &lv, worst, at);
        memcpy(prev, lv.ctx, nr * sizeof(*prev));
        level_up(w, &lv);
    }
    free(prev);
    free(lv.ctx);
    free(lv.next);
    free(lv.order);
    free(lv.stack);
    free(lv.seen);
    return rc;
}

/* ---- the check -------------------------------------------------------------- */

/* The named rule rule r is (or is part of: the named rule defined last
 * before its construct). */
static uint32_t named_of(const struct gb_ir *ir, uint32_t r)
{
    if (ir->rules[r].kind == GB_RULE_NAMED)
        return r;
    uint32_t best = UINT32_MAX, at = ir->rules[r].at;
    for (uint32_t q = 0; q < ir->n_rules; q++) {
        const struct gb_rule_ir *x = &ir->rules[q];
        if (x->kind == GB_RULE_NAMED && x->at <= at &&
            (best == UINT32_MAX || x->at >= ir->rules[best].at))
            best = q;
    }
    return best != UINT32_MAX ? best : (uint32_t)ir->root;
}

/* The culprit: a reachable rule whose own expansion is over the bound
 * (the one of least cost: the deepest such), else the rule of the worst
 * character. */
static uint32_t culprit(const struct wb *w, uint32_t at)
{
    const struct gb_bound_in *in = w->in;
    uint32_t pick = UINT32_MAX;
    for (uint32_t r = 0; r < in->g->n_rules; r++) {
        if (in->reach[r] && w->rv[r] > GB_WORK_MAX &&
            (pick == UINT32_MAX || w->rv[r] < w->rv[pick]))
            pick = r;
    }
    return pick != UINT32_MAX ? pick : at;
}

/* The worst work of any step (*worst, reached at element *at), with w's
 * tables allocated. */
static enum st_status measure(struct wb *w, uint64_t *worst, uint32_t *at, struct st_err *err)
{
    const struct st_gbnf *g = w->in->g;
    ST_TRY(all_rule_values(w, err));
    /* el[0]: the start, a tail reference to root */
    w->ev[0] = sat_add(1, w->rv[g->el[0].arg]);
    w->en[0] = w->rn[g->el[0].arg];
    w->ev[1] = w->en[1] = 1;
    ST_TRY(tail_edges(w, err));
    return worst_work(w, worst, at, err);
}

enum st_status st_gb_check_work(const struct gb_bound_in *in, uint32_t *work, struct st_err *err)
{
    const struct st_gbnf *g = in->g;
    struct wb w = { .in = in };
    uint64_t worst = 0;
    uint32_t at = 0;
    w.ev = malloc((size_t)g->n_el * sizeof(*w.ev));
    w.en = malloc((size_t)g->n_el * sizeof(*w.en));
    w.rv = calloc(g->n_rules, sizeof(*w.rv));
    w.rn = calloc(g->n_rules, sizeof(*w.rn));
    enum st_status rc = w.ev && w.en && w.rv && w.rn
                      ? measure(&w, &worst, &at, err)
                      : st_err_set(err, ST_ERR_NOMEM, "out of memory");
    *work = (uint32_t)ST_MIN(worst, UINT32_MAX);
    if (rc == ST_OK && worst > GB_WORK_MAX) {
        const struct gb_ir *ir = in->ir;
        uint32_t r = culprit(&w, at), nm = named_of(ir, r);
        const struct gb_rule_ir *x = &ir->rules[nm];
        rc = st_gb_fail(ir, ir->rules[r].at, err, "rule '%.*s' is too costly to follow: one "
                        "character could take more than %d steps (rules that may match the "
                        "empty text, nested or in a row, multiply the ways)",
                        (int)ST_MIN(x->name_len, 48), ir->text + x->name, GB_WORK_MAX);
    }
    free(w.ev);
    free(w.en);
    free(w.rv);
    free(w.rn);
    free(w.tail_first);
    free(w.tail);
    return rc;
}
