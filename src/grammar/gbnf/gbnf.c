/* gbnf.c -- compile a GBNF grammar (include/strata/gbnf.h): parse
 * (parse.c), check the rules, lay the program out, and compute what
 * the recognizer needs to keep every stack completable.
 *
 * Checks: every referenced rule is defined; no left recursion in any rule
 * (nullable rules first, then a depth-first walk over "R may start with
 * S" edges); every named rule reachable from root can produce a finite
 * text within ST_GBNF_MAX_DEPTH stack entries. The last comes from
 * need(element): the fewest stack entries above its own that the rest of
 * its alternative needs (END 0; a terminal: the next element's; a
 * reference to R as the last element: need(R), the entry is replaced; any
 * other reference: max(1 + need(R), the next element's)), need(R) the
 * least over R's alternatives. These are least fixpoints of "superior"
 * functions (each at least its arguments), computed by Knuth's
 * generalization of Dijkstra's algorithm with one bucket per depth.
 * Last, the bound on the recognizer's work per character (bound.c).
 */
#include <stdlib.h>
#include <string.h>

#include "grammar/gbnf/internal.h"

void st_gbnf_ref(struct st_gbnf *g)
{
    atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}

static void gbnf_free(struct st_gbnf *g)
{
    free(g->el);
    free(g->alt);
    free(g->rule_alt);
    free(g->sets);
    free(g->ranges);
    free(g);
}

void st_gbnf_unref(struct st_gbnf *g)
{
    if (g && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
        gbnf_free(g);
}

size_t st_gbnf_n_rules(const struct st_gbnf *g)
{
    return g->n_rules;
}

size_t st_gbnf_n_elements(const struct st_gbnf *g)
{
    return g->n_el;
}

size_t st_gbnf_max_work(const struct st_gbnf *g)
{
    return g->work;
}

/* What the analysis keeps besides the program. */
struct an {
    const struct gb_ir *ir;
    struct st_gbnf *g;
    uint32_t n_alts;
    uint32_t *lhs;          /* n_alts: the alternative's rule */
    uint32_t *occ_first;    /* n_rules + 1: CSR of the alternatives referring to a rule */
    uint32_t *occ;          /* one entry per reference (with repeats) */
    uint8_t  *reach;        /* n_rules */
    uint8_t  *nullable;     /* n_rules */
    uint8_t  *nr;           /* n_rules: need(R) */
    struct st_err *err;
};

/* ---- layout ---------------------------------------------------------- */

static enum st_status layout(struct an *a)
{
    const struct gb_ir *ir = a->ir;
    struct st_gbnf *g = a->g;
    uint32_t n_alts = 0, n_el = 2;
    for (uint32_t r = 0; r < ir->n_rules; r++) {
        n_alts++;
        for (uint32_t k = 0; k < ir->rules[r].n; k++) {
            bool alt = ir->rules[r].body[k] == GB_SYM_ALT;
            n_alts += alt;
            n_el += 1;   /* a symbol, or the END an ALT stands for */
        }
        n_el++;   /* the last END */
    }
    if (n_el > ST_GBNF_MAX_ELEMENTS)
        return st_err_set(a->err, ST_ERR_INVALID, "the grammar is too large (%u elements; at "
                          "most %d)", (unsigned)n_el, ST_GBNF_MAX_ELEMENTS);
    g->el = calloc(n_el, sizeof(*g->el));
    g->alt = calloc((size_t)n_alts + 1, sizeof(*g->alt));   /* + the end: n_el */
    g->rule_alt = calloc((size_t)ir->n_rules + 1, sizeof(*g->rule_alt));
    a->lhs = calloc(n_alts, sizeof(*a->lhs));
    if (!g->el || !g->alt || !g->rule_alt || !a->lhs)
        return st_err_set(a->err, ST_ERR_NOMEM, "out of memory");
    g->el[0] = (struct gb_el){ GB_REF, 0, (uint16_t)ir->root };
    g->el[1] = (struct gb_el){ GB_END, 0, 0 };
    uint32_t e = 2, na = 0;
    for (uint32_t r = 0; r < ir->n_rules; r++) {
        const struct gb_rule_ir *x = &ir->rules[r];
        g->rule_alt[r] = na;
        a->lhs[na] = r;
        g->alt[na++] = e;
        for (uint32_t k = 0; k < x->n; k++) {
            uint32_t s = x->body[k];
            if (s == GB_SYM_ALT) {
                g->el[e++] = (struct gb_el){ GB_END, 0, 0 };
                a->lhs[na] = r;
                g->alt[na++] = e;
            } else {
                uint8_t t = GB_SYM_KIND(s) == GB_SYM_CHAR ? GB_CHAR : GB_REF;
                g->el[e++] = (struct gb_el){ t, 0, (uint16_t)GB_SYM_ARG(s) };
            }
        }
        g->el[e++] = (struct gb_el){ GB_END, 0, 0 };
    }
    g->rule_alt[ir->n_rules] = na;
    g->alt[na] = e;
    g->n_el = e;
    g->n_rules = ir->n_rules;
    a->n_alts = na;
    return ST_OK;
}

/* Rules reachable from root, and the CSR of references per rule. */
static enum st_status reach_and_occ(struct an *a)
{
    const struct st_gbnf *g = a->g;
    uint32_t nr = g->n_rules;
    a->reach = calloc(nr, 1);
    a->occ_first = calloc((size_t)nr + 1, sizeof(*a->occ_first));
    uint32_t *queue = malloc((size_t)nr * sizeof(*queue)), qn = 0;
    if (!a->reach || !a->occ_first || !queue) {
        free(queue);
        return st_err_set(a->err, ST_ERR_NOMEM, "out of memory");
    }
    a->reach[a->ir->root] = 1;
    queue[qn++] = (uint32_t)a->ir->root;
    for (uint32_t q = 0; q < qn; q++) {
        uint32_t r = queue[q];
        for (uint32_t e = g->alt[g->rule_alt[r]]; e < g->alt[g->rule_alt[r + 1]]; e++) {
            if (g->el[e].type == GB_REF && !a->reach[g->el[e].arg]) {
                a->reach[g->el[e].arg] = 1;
                queue[qn++] = g->el[e].arg;
            }
        }
    }
    free(queue);
    for (uint32_t e = 2; e < g->n_el; e++) {
        if (g->el[e].type == GB_REF)
            a->occ_first[g->el[e].arg + 1]++;
    }
    for (uint32_t r = 0; r < nr; r++)
        a->occ_first[r + 1] += a->occ_first[r];
    a->occ = malloc(((size_t)a->occ_first[nr] + 1) * sizeof(*a->occ));
    uint32_t *fill = calloc(nr, sizeof(*fill));
    if (!a->occ || !fill) {
        free(fill);
        return st_err_set(a->err, ST_ERR_NOMEM, "out of memory");
    }
    for (uint32_t al = 0; al < a->n_alts; al++) {
        for (uint32_t e = g->alt[al]; g->el[e].type != GB_END; e++) {
            if (g->el[e].type == GB_REF) {
                uint32_t s = g->el[e].arg;
                a->occ[a->occ_first[s] + fill[s]++] = al;
            }
        }
    }
    free(fill);
    return ST_OK;
}

/* ---- nullable rules, left recursion ---------------------------------- */

static enum st_status find_nullable(struct an *a)
{
    const struct st_gbnf *g = a->g;
    uint32_t nr = g->n_rules;
    uint32_t *cnt = malloc((size_t)a->n_alts * sizeof(*cnt));
    uint32_t *queue = malloc((size_t)nr * sizeof(*queue)), qn = 0;
    a->nullable = calloc(nr, 1);
    if (!cnt || !queue || !a->nullable) {
        free(cnt);
        free(queue);
        return st_err_set(a->err, ST_ERR_NOMEM, "out of memory");
    }
    for (uint32_t al = 0; al < a->n_alts; al++) {
        cnt[al] = 0;   /* references; an alternative with a terminal is never nullable */
        for (uint32_t e = g->alt[al]; g->el[e].type != GB_END && cnt[al] != UINT32_MAX; e++)
            cnt[al] = g->el[e].type == GB_CHAR ? UINT32_MAX : cnt[al] + 1;
        if (cnt[al] == 0 && !a->nullable[a->lhs[al]]) {
            a->nullable[a->lhs[al]] = 1;
            queue[qn++] = a->lhs[al];
        }
    }
    for (uint32_t q = 0; q < qn; q++) {
        uint32_t r = queue[q];
        for (uint32_t o = a->occ_first[r]; o < a->occ_first[r + 1]; o++) {
            uint32_t al = a->occ[o];
            if (--cnt[al] == 0 && !a->nullable[a->lhs[al]]) {
                a->nullable[a->lhs[al]] = 1;
                queue[qn++] = a->lhs[al];
            }
        }
    }
    free(cnt);
    free(queue);
    return ST_OK;
}

/* The error for a left-recursive cycle through rules path[0..n) (path[0]
 * reaches itself): a named rule of it, else the repetition. */
static enum st_status left_rec_error(struct an *a, const uint32_t *path, uint32_t n)
{
    const struct gb_ir *ir = a->ir;
    for (uint32_t k = 0; k < n; k++) {
        const struct gb_rule_ir *x = &ir->rules[path[k]];
        if (x->kind == GB_RULE_NAMED)
            return st_gb_fail(ir, x->at, a->err, "rule '%.*s' is left-recursive (it can "
                              "reach itself before any character)", (int)ST_MIN(x->name_len, 64),
                              ir->text + x->name);
    }
    return st_gb_fail(ir, ir->rules[path[0]].at, a->err, "this repeats something that may "
                      "be empty (left recursion)");
}

/* left[e]: element e may be the first to read a character of its
 * alternative (all before it are references to nullable rules). */
static uint8_t *leftmost(const struct an *a)
{
    const struct st_gbnf *g = a->g;
    uint8_t *left = calloc(g->n_el, 1);
    if (!left)
        return NULL;
    for (uint32_t al = 0; al < a->n_alts; al++) {
        bool lm = true;
        for (uint32_t e = g->alt[al]; g->el[e].type != GB_END; e++) {
            left[e] = lm;
            lm = lm && g->el[e].type == GB_REF && a->nullable[g->el[e].arg];
        }
    }
    return left;
}

/* Depth-first over the edges R -> S (S may start R), iterative. */
static enum st_status left_recursion(struct an *a)
{
    const struct st_gbnf *g = a->g;
    uint32_t nr = g->n_rules;
    uint8_t *color = calloc(nr, 1);   /* 0 new, 1 on the path, 2 done */
    uint32_t *path = malloc((size_t)nr * sizeof(*path));
    uint32_t *pos = malloc((size_t)nr * sizeof(*pos));   /* next element to look at */
    uint8_t *left = leftmost(a);
    enum st_status rc = ST_OK;
    if (!color || !path || !pos || !left)
        rc = st_err_set(a->err, ST_ERR_NOMEM, "out of memory");
    for (uint32_t r0 = 0; r0 < nr && rc == ST_OK; r0++) {
        if (color[r0])   /* every rule, reachable or not, as llama.cpp */
            continue;
        uint32_t d = 0;
        path[d] = r0;
        pos[d++] = g->alt[g->rule_alt[r0]];
        color[r0] = 1;
        while (d > 0 && rc == ST_OK) {
            uint32_t r = path[d - 1], e = pos[d - 1];
            if (e >= g->alt[g->rule_alt[r + 1]]) {
                color[r] = 2;
                d--;
                continue;
            }
            pos[d - 1] = e + 1;
            if (g->el[e].type != GB_REF || !left[e])
                continue;
            uint32_t s = g->el[e].arg;
            if (color[s] == 1) {
                uint32_t k = 0;
                while (path[k] != s)
                    k++;
                rc = left_rec_error(a, path + k, d - k);
            } else if (color[s] == 0) {
                color[s] = 1;
                path[d] = s;
                pos[d++] = g->alt[g->rule_alt[s]];
            }
        }
    }
    free(color);
    free(path);
    free(pos);
    free(left);
    return rc;
}

/* ---- need ------------------------------------------------------------ */

/* need of alternative al's first element from the rules' need (all of its
 * references final); writes each element's need when 'store'. */
static uint32_t alt_need(struct an *a, uint32_t al, bool store)
{
    struct st_gbnf *g = a->g;
    uint32_t first = g->alt[al], e = first;
    while (g->el[e].type != GB_END)
        e++;
    uint32_t v = 0;
    bool dead = false;
    while (e-- > first) {
        struct gb_el *x = &g->el[e];
        if (x->type == GB_CHAR) {
            const struct gb_set *s = &g->sets[x->arg];
            dead = dead || (!s->ascii[0] && !s->ascii[1] && !s->any_high);
        } else {
            uint32_t r = a->nr[x->arg];
            bool tail = g->el[e + 1].type == GB_END;
            dead = dead || r == GB_INF;
            v = tail ? r : ST_MAX(1 + r, v);
        }
        v = dead || v >= ST_GBNF_MAX_DEPTH ? GB_INF : v;
        if (store)
            x->need = (uint8_t)v;
    }
    return v;
}

struct bucket {
    uint32_t *rule, *next, n, cap;
    uint32_t head[ST_GBNF_MAX_DEPTH];
};

static bool bucket_push(struct bucket *b, uint32_t d, uint32_t r)
{
    if (b->n == b->cap) {
        uint32_t c = b->cap ? b->cap * 2 : 64;
        uint32_t *x = realloc(b->rule, c * sizeof(*x)), *y = x ? realloc(b->next, c * sizeof(*y))
                                                              : NULL;
        if (x)
            b->rule = x;
        if (!y)
            return false;
        b->next = y;
        b->cap = c;
    }
    b->rule[b->n] = r;
    b->next[b->n] = b->head[d];
    b->head[d] = b->n++;
    return true;
}

static enum st_status compute_need(struct an *a)
{
    struct st_gbnf *g = a->g;
    uint32_t nr = g->n_rules;
    struct bucket b = { 0 };
    memset(b.head, 0xff, sizeof(b.head));
    uint32_t *cnt = malloc((size_t)a->n_alts * sizeof(*cnt));
    uint8_t *cand = malloc(nr), *fin = calloc(nr, 1);
    a->nr = malloc(nr);
    bool ok = cnt && cand && fin && a->nr;
    if (ok) {
        memset(cand, GB_INF, nr);
        memset(a->nr, GB_INF, nr);
    }
    for (uint32_t al = 0; ok && al < a->n_alts; al++) {
        cnt[al] = 0;
        for (uint32_t e = g->alt[al]; g->el[e].type != GB_END; e++)
            cnt[al] += g->el[e].type == GB_REF;
        uint32_t v = cnt[al] == 0 ? alt_need(a, al, false) : GB_INF;
        if (v < cand[a->lhs[al]]) {
            cand[a->lhs[al]] = (uint8_t)v;
            ok = bucket_push(&b, v, a->lhs[al]);
        }
    }
    for (uint32_t d = 0; ok && d < ST_GBNF_MAX_DEPTH; d++) {
        while (ok && b.head[d] != UINT32_MAX) {
            uint32_t r = b.rule[b.head[d]];
            b.head[d] = b.next[b.head[d]];
            if (fin[r] || cand[r] != d)
                continue;
            fin[r] = 1;
            a->nr[r] = (uint8_t)d;
            for (uint32_t o = a->occ_first[r]; ok && o < a->occ_first[r + 1]; o++) {
                uint32_t al = a->occ[o];
                if (--cnt[al] != 0)
                    continue;
                uint32_t v = alt_need(a, al, false);
                if (v < cand[a->lhs[al]]) {
                    cand[a->lhs[al]] = (uint8_t)v;
                    ok = bucket_push(&b, v, a->lhs[al]);
                }
            }
        }
    }
    for (uint32_t al = 0; ok && al < a->n_alts; al++)
        (void)alt_need(a, al, true);
    if (ok)
        g->el[0].need = a->nr[a->ir->root];
    free(cnt);
    free(cand);
    free(fin);
    free(b.rule);
    free(b.next);
    return ok ? ST_OK : st_err_set(a->err, ST_ERR_NOMEM, "out of memory");
}

/* ---- compile --------------------------------------------------------- */

static enum st_status check_defined(const struct gb_ir *ir, struct st_err *err)
{
    for (uint32_t r = 0; r < ir->n_rules; r++) {
        const struct gb_rule_ir *x = &ir->rules[r];
        if (!x->defined)
            return st_gb_fail(ir, x->ref_at, err, "undefined rule '%.*s'",
                              (int)ST_MIN(x->name_len, 64), ir->text + x->name);
    }
    if (ir->root < 0)
        return st_err_set(err, ST_ERR_INVALID, "the grammar has no 'root' rule (where the "
                          "text starts)");
    return ST_OK;
}

/* Rule r refers to another rule that cannot produce any text. */
static bool stuck_on_other(const struct an *a, uint32_t r)
{
    const struct st_gbnf *g = a->g;
    for (uint32_t e = g->alt[g->rule_alt[r]]; e < g->alt[g->rule_alt[r + 1]]; e++) {
        if (g->el[e].type == GB_REF && g->el[e].arg != r && a->nr[g->el[e].arg] == GB_INF)
            return true;
    }
    return false;
}

/* Every reachable named rule can produce a finite text in the depth. */
static enum st_status check_need(const struct an *a)
{
    const struct gb_ir *ir = a->ir;
    int64_t pick = -1;   /* prefer a rule stuck on itself only, not on another stuck rule */
    for (uint32_t r = 0; r < ir->n_rules; r++) {
        if (!a->reach[r] || a->nr[r] != GB_INF || ir->rules[r].kind != GB_RULE_NAMED)
            continue;
        if (pick < 0 || !stuck_on_other(a, r))
            pick = r;
        if (!stuck_on_other(a, r))
            break;
    }
    if (pick >= 0) {
        const struct gb_rule_ir *x = &ir->rules[pick];
        return st_gb_fail(ir, x->at, a->err, "rule '%.*s' cannot produce any text (each "
                          "alternative needs itself again, an empty class, or more than %d "
                          "levels of nesting)", (int)ST_MIN(x->name_len, 64), ir->text + x->name,
                          ST_GBNF_MAX_DEPTH);
    }
    if (a->nr[ir->root] == GB_INF || a->nr[ir->root] + 1 > ST_GBNF_MAX_DEPTH)
        return st_err_set(a->err, ST_ERR_INVALID, "the grammar's root cannot produce any text");
    return ST_OK;
}

/* The analyses in order; build frees what they leave in a. */
static enum st_status analyze(struct an *a)
{
    ST_TRY(layout(a));
    ST_TRY(reach_and_occ(a));
    ST_TRY(find_nullable(a));
    ST_TRY(left_recursion(a));
    ST_TRY(compute_need(a));
    ST_TRY(check_need(a));
    struct gb_bound_in in = { a->ir, a->g, a->lhs, a->n_alts, a->reach };
    return st_gb_check_work(&in, &a->g->work, a->err);
}

static enum st_status build(const struct gb_ir *ir, struct st_gbnf *g, struct st_err *err)
{
    struct an a = { .ir = ir, .g = g, .err = err };
    enum st_status rc = analyze(&a);
    free(a.lhs);
    free(a.occ_first);
    free(a.occ);
    free(a.reach);
    free(a.nullable);
    free(a.nr);
    return rc;
}

/* text parsed and checked into ir, then the program *g (which takes ir's
 * sets); the caller frees ir, and *g on failure. */
static enum st_status compile_text(const char *text, size_t n, struct gb_ir *ir,
                                   struct st_gbnf **g, struct st_err *err)
{
    ST_TRY(st_gb_parse(ir, text ? text : "", text ? n : 0, err));
    ST_TRY(check_defined(ir, err));
    ST_TRY(st_gb_factor(ir, err));
    if ((*g = calloc(1, sizeof(**g))) == NULL)
        return st_err_set(err, ST_ERR_NOMEM, "out of memory");
    atomic_init(&(*g)->refs, 1);
    (*g)->sets = ir->sets;   /* the sets move into the program */
    (*g)->n_sets = ir->n_sets;
    (*g)->ranges = ir->ranges;
    (*g)->n_ranges = ir->n_ranges;
    ir->sets = NULL;
    ir->ranges = NULL;
    ir->n_sets = ir->n_ranges = 0;
    return build(ir, *g, err);
}

enum st_status st_gbnf_compile(const char *text, size_t n, struct st_gbnf **out,
                               struct st_err *err)
{
    struct gb_ir ir;
    struct st_gbnf *g = NULL;

    *out = NULL;
    memset(&ir, 0, sizeof(ir));
    enum st_status rc = compile_text(text, n, &ir, &g, err);
    st_gb_ir_fini(&ir);
    if (rc != ST_OK) {
        if (g)
            gbnf_free(g);
        return rc;
    }
    *out = g;
    return ST_OK;
}
