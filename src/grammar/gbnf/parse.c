/* parse.c -- GBNF text -> rules of symbols (internal.h's
 * struct gb_ir), the syntax of include/strata/gbnf.h.
 *
 * Groups become rules of their own; repetitions are rewritten into rules
 * as llama.cpp does: x* = R ::= x R | (empty), x+ = x x*, x? = R ::= x |
 * (empty), x{m,n} = m copies of x then a chain of n - m optional rules.
 * A repeated item of more than one symbol (a literal, a sequence) is made
 * a rule first, so a copy is one symbol. Single characters below 128 share
 * one set each.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/gbnf/internal.h"

struct gp {
    struct gb_ir *ir;
    const char *t;
    size_t n, i;
    uint32_t nest;
    uint32_t ascii_set[128];   /* single-character set of c + 1; 0: none yet */
    struct st_err *err;
};

enum st_status st_gb_fail(const struct gb_ir *ir, size_t at, struct st_err *err,
                          const char *fmt, ...)
{
    unsigned line = 1, col = 1;
    for (size_t k = 0; k < at && k < ir->len; k++) {
        unsigned char c = (unsigned char)ir->text[k];
        if (c == '\n') {
            line++;
            col = 1;
        } else if ((c & 0xC0) != 0x80) {
            col++;
        }
    }
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return st_err_set(err, ST_ERR_INVALID, "line %u, column %u: %s", line, col, msg);
}

#define FAIL(p, at, ...) st_gb_fail((p)->ir, (at), (p)->err, __VA_ARGS__)

static enum st_status nomem(struct gp *p)
{
    return st_err_set(p->err, ST_ERR_NOMEM, "out of memory");
}

void st_gb_ir_fini(struct gb_ir *ir)
{
    for (uint32_t r = 0; r < ir->n_rules; r++)
        free(ir->rules[r].body);
    free(ir->rules);
    free(ir->sets);
    free(ir->ranges);
    memset(ir, 0, sizeof(*ir));
}

static bool grow(void **a, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return true;
    uint32_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*a, (size_t)c * size);
    if (!q)
        return false;
    *a = q;
    *cap = c;
    return true;
}

static enum st_status new_rule(struct gp *p, uint8_t kind, size_t at, uint32_t *out)
{
    struct gb_ir *ir = p->ir;
    if (ir->n_rules >= ST_GBNF_MAX_RULES)
        return FAIL(p, at, "too many rules (at most %d, repetitions included)",
                    ST_GBNF_MAX_RULES);
    if (!grow((void **)&ir->rules, &ir->cap_rules, ir->n_rules + 1, sizeof(*ir->rules)))
        return nomem(p);
    struct gb_rule_ir *r = &ir->rules[ir->n_rules];
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->at = (uint32_t)at;
    r->defined = kind != GB_RULE_NAMED;
    *out = ir->n_rules++;
    return ST_OK;
}

static enum st_status emit(struct gp *p, uint32_t rule, uint32_t sym)
{
    struct gb_rule_ir *r = &p->ir->rules[rule];
    if (p->ir->n_syms >= ST_GBNF_MAX_ELEMENTS)
        return FAIL(p, p->i, "the grammar is too large (more than %d elements once "
                    "repetitions are expanded)", ST_GBNF_MAX_ELEMENTS);
    if (!grow((void **)&r->body, &r->cap, r->n + 1, sizeof(*r->body)))
        return nomem(p);
    r->body[r->n++] = sym;
    p->ir->n_syms++;
    return ST_OK;
}

/* ---- character sets ------------------------------------------------- */

static int cmp_range(const void *a, const void *b)
{
    const struct gb_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* A set from ranges r[0..n) (sorted and merged here; complemented over
 * [0, 0x10FFFF] when 'neg') as symbol *sym. */
static enum st_status add_set(struct gp *p, struct gb_range *r, uint32_t n, bool neg,
                              uint32_t *sym)
{
    struct gb_ir *ir = p->ir;
    if (n > 1)
        qsort(r, n, sizeof(*r), cmp_range);
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (m > 0 && r[k].lo <= r[m - 1].hi + 1)
            r[m - 1].hi = r[k].hi > r[m - 1].hi ? r[k].hi : r[m - 1].hi;
        else
            r[m++] = r[k];
    }
    struct gb_range *c = NULL;
    if (neg) {
        c = malloc(((size_t)m + 1) * sizeof(*c));
        if (!c)
            return nomem(p);
        uint32_t k2 = 0, next = 0;
        for (uint32_t k = 0; k < m; k++) {
            if (r[k].lo > next)
                c[k2++] = (struct gb_range){ next, r[k].lo - 1 };
            next = r[k].hi + 1;
        }
        if (next <= 0x10FFFF)
            c[k2++] = (struct gb_range){ next, 0x10FFFF };
        r = c;
        m = k2;
    }
    struct gb_set s = { { 0, 0 }, ir->n_ranges, 0, 0, 0 };
    enum st_status rc = ST_OK;
    for (uint32_t k = 0; k < m && rc == ST_OK; k++) {
        uint32_t lo = r[k].lo, hi = r[k].hi;
        for (uint32_t cp = lo; cp <= hi && cp < 128; cp++)
            s.ascii[cp >> 6] |= UINT64_C(1) << (cp & 63);
        if (hi < 128)
            continue;
        if (!grow((void **)&ir->ranges, &ir->cap_ranges, ir->n_ranges + 1, sizeof(*ir->ranges)))
            rc = nomem(p);
        else
            ir->ranges[ir->n_ranges++] = (struct gb_range){ lo < 128 ? 128 : lo, hi };
        s.n++;
    }
    free(c);
    if (rc != ST_OK)
        return rc;
    s.any_high = s.n > 0;
    s.all_high = s.n == 1 && ir->ranges[s.first].lo == 128 && ir->ranges[s.first].hi == 0x10FFFF;
    if (ir->n_sets >= (1u << 16))
        return FAIL(p, p->i, "too many character sets (at most 65536)");
    if (!grow((void **)&ir->sets, &ir->cap_sets, ir->n_sets + 1, sizeof(*ir->sets)))
        return nomem(p);
    ir->sets[ir->n_sets] = s;
    *sym = GB_SYM_CHAR | ir->n_sets++;
    return ST_OK;
}

static enum st_status char_sym(struct gp *p, uint32_t cp, uint32_t *sym)
{
    if (cp < 128 && p->ascii_set[cp]) {
        *sym = GB_SYM_CHAR | (p->ascii_set[cp] - 1);
        return ST_OK;
    }
    struct gb_range r = { cp, cp };
    ST_TRY(add_set(p, &r, 1, false, sym));
    if (cp < 128)
        p->ascii_set[cp] = GB_SYM_ARG(*sym) + 1;
    return ST_OK;
}

/* ---- lexing ---------------------------------------------------------- */

static int peek(const struct gp *p)
{
    return p->i < p->n ? (unsigned char)p->t[p->i] : -1;
}

/* Blanks and comments; newlines too when 'nl'. */
static void space(struct gp *p, bool nl)
{
    while (p->i < p->n) {
        char c = p->t[p->i];
        if (c == ' ' || c == '\t') {
            p->i++;
        } else if (c == '#') {
            while (p->i < p->n && p->t[p->i] != '\n' && p->t[p->i] != '\r')
                p->i++;
        } else if ((c == '\n' || c == '\r') && nl) {
            p->i++;
        } else {
            break;
        }
    }
}

static bool name_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One UTF-8 character of the grammar's text at p->i (strict). */
static enum st_status utf8_char(struct gp *p, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)p->t + p->i;
    size_t left = p->n - p->i;
    uint32_t c = s[0], len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2
                         : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || len > left)
        return FAIL(p, p->i, "invalid UTF-8 in the grammar");
    c = len == 1 ? c : c & (0x7Fu >> len);
    for (uint32_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return FAIL(p, p->i, "invalid UTF-8 in the grammar");
        c = (c << 6) | (s[k] & 0x3Fu);
    }
    static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return FAIL(p, p->i, "invalid UTF-8 in the grammar");
    p->i += len;
    *cp = c;
    return ST_OK;
}

/* One character of a literal or a class: an escape or a UTF-8 character. */
static enum st_status one_char(struct gp *p, bool in_class, uint32_t *cp)
{
    size_t at = p->i;
    if (p->t[p->i] != '\\')
        return utf8_char(p, cp);
    if (p->i + 1 >= p->n)
        return FAIL(p, at, "unterminated escape");
    char e = p->t[p->i + 1];
    p->i += 2;
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; k++) {
            int h = p->i < p->n ? hexval((unsigned char)p->t[p->i]) : -1;
            if (h < 0)
                return FAIL(p, at, "'\\%c' needs %d hex digits", e, digits);
            v = v * 16 + (uint32_t)h;
            p->i++;
        }
        if (v > 0x10FFFF)
            return FAIL(p, at, "U+%X is past the last code point U+10FFFF", (unsigned)v);
        if (!in_class && v >= 0xD800 && v <= 0xDFFF)
            return FAIL(p, at, "U+%X is a surrogate: no UTF-8 text holds it", (unsigned)v);
        *cp = v;
        return ST_OK;
    }
    switch (e) {
    case 'n': *cp = '\n'; return ST_OK;
    case 't': *cp = '\t'; return ST_OK;
    case 'r': *cp = '\r'; return ST_OK;
    case '\\': case '"': case '[': case ']': case '-': case '^':
        *cp = (uint32_t)(unsigned char)e;
        return ST_OK;
    default:
        return FAIL(p, at, "unknown escape '\\%c'", e);
    }
}

/* ---- items ----------------------------------------------------------- */

static enum st_status literal(struct gp *p, uint32_t rule)
{
    size_t at = p->i++;
    while (p->i < p->n && p->t[p->i] != '"') {
        uint32_t cp, sym;
        ST_TRY(one_char(p, false, &cp));
        ST_TRY(char_sym(p, cp, &sym));
        ST_TRY(emit(p, rule, sym));
    }
    if (p->i >= p->n)
        return FAIL(p, at, "unterminated literal (no closing '\"')");
    p->i++;
    return ST_OK;
}

/* The ranges of a class up to its ']' (class opened at 'at') into *r[*n]
 * (*cap allocated; the caller frees *r), and the ']' consumed. */
static enum st_status class_ranges(struct gp *p, size_t at, struct gb_range **r, uint32_t *n,
                                   uint32_t *cap)
{
    while (p->i < p->n && p->t[p->i] != ']') {
        size_t c_at = p->i;
        uint32_t lo, hi;
        ST_TRY(one_char(p, true, &lo));
        hi = lo;
        if (p->i + 1 < p->n && p->t[p->i] == '-' && p->t[p->i + 1] != ']') {
            p->i++;
            ST_TRY(one_char(p, true, &hi));
            if (hi < lo)
                return FAIL(p, c_at, "reversed range U+%X-U+%X in a character class",
                            (unsigned)lo, (unsigned)hi);
        }
        if (!grow((void **)r, cap, *n + 1, sizeof(**r)))
            return nomem(p);
        (*r)[(*n)++] = (struct gb_range){ lo, hi };
    }
    if (p->i >= p->n)
        return FAIL(p, at, "unterminated character class (no closing ']')");
    p->i++;
    return ST_OK;
}

static enum st_status char_class(struct gp *p, uint32_t rule)
{
    size_t at = p->i++;
    bool neg = peek(p) == '^';
    p->i += neg;
    struct gb_range *r = NULL;
    uint32_t n = 0, cap = 0, sym = 0;
    enum st_status rc = class_ranges(p, at, &r, &n, &cap);
    if (rc == ST_OK)
        rc = n == 1 && !neg && r[0].lo == r[0].hi ? char_sym(p, r[0].lo, &sym)
                                                  : add_set(p, r, n, neg, &sym);
    free(r);
    return rc == ST_OK ? emit(p, rule, sym) : rc;
}

/* The rule named by text[at, +len): found, or made (not yet defined). */
static enum st_status named(struct gp *p, size_t at, size_t len, uint32_t *out)
{
    struct gb_ir *ir = p->ir;
    for (uint32_t r = 0; r < ir->n_rules; r++) {
        const struct gb_rule_ir *x = &ir->rules[r];
        if (x->kind == GB_RULE_NAMED && x->name_len == len &&
            !memcmp(p->t + x->name, p->t + at, len)) {
            *out = r;
            return ST_OK;
        }
    }
    enum st_status rc = new_rule(p, GB_RULE_NAMED, at, out);
    if (rc != ST_OK)
        return rc;
    ir->rules[*out].name = (uint32_t)at;
    ir->rules[*out].name_len = (uint32_t)len;
    ir->rules[*out].ref_at = (uint32_t)at;
    if (len == 4 && !memcmp(p->t + at, "root", 4))
        ir->root = (int32_t)*out;
    return ST_OK;
}

static size_t name_len(const struct gp *p)
{
    size_t k = p->i;
    while (k < p->n && name_char((unsigned char)p->t[k]))
        k++;
    return k - p->i;
}

static enum st_status alternates(struct gp *p, uint32_t rule, bool nested);

static enum st_status group(struct gp *p, uint32_t rule)
{
    size_t at = p->i++;
    if (p->nest >= ST_GBNF_MAX_NEST)
        return FAIL(p, at, "groups nested more than %d deep", ST_GBNF_MAX_NEST);
    uint32_t g;
    enum st_status rc = new_rule(p, GB_RULE_GROUP, at, &g);
    if (rc != ST_OK)
        return rc;
    p->nest++;
    space(p, true);
    rc = alternates(p, g, true);
    p->nest--;
    if (rc != ST_OK)
        return rc;
    if (peek(p) != ')')
        return p->i < p->n ? FAIL(p, p->i, "expected ')' to close the group, found '%c'",
                                  p->t[p->i])
                           : FAIL(p, at, "unclosed '(' (no ')' before the end)");
    p->i++;
    return emit(p, rule, GB_SYM_REF | g);
}

static enum st_status reference(struct gp *p, uint32_t rule)
{
    size_t at = p->i, len = name_len(p);
    p->i += len;
    size_t save = p->i;
    space(p, false);
    if (p->n - p->i >= 3 && !memcmp(p->t + p->i, "::=", 3))
        return FAIL(p, at, "a new rule '%.*s' must start on a new line", (int)ST_MIN(len, 64),
                    p->t + at);
    p->i = save;
    uint32_t r;
    ST_TRY(named(p, at, len, &r));
    return emit(p, rule, GB_SYM_REF | r);
}

/* ---- repetitions ----------------------------------------------------- */

/* A rule 'R ::= x R | x' style body for repetitions: x [REF next] ALT
 * (empty). next < 0: no reference. */
static enum st_status opt_rule(struct gp *p, size_t at, uint32_t x, int64_t next,
                               uint32_t *out)
{
    ST_TRY(new_rule(p, GB_RULE_REPEAT, at, out));
    ST_TRY(emit(p, *out, x));
    if (next >= 0)
        ST_TRY(emit(p, *out, GB_SYM_REF | (uint32_t)(next == INT64_MAX ? *out : next)));
    return emit(p, *out, GB_SYM_ALT);
}

/* Rewrite rule's symbols [start, n) (the last item) as it repeated min to
 * max times (max UINT32_MAX: no bound). */
static enum st_status repeat(struct gp *p, uint32_t rule, uint32_t start, uint32_t min,
                             uint32_t max, size_t at)
{
    struct gb_rule_ir *r = &p->ir->rules[rule];
    uint32_t len = r->n - start, x;
    enum st_status rc = ST_OK;
    if (len == 0)
        return ST_OK;   /* "" repeated is still "" */
    if (len == 1) {
        x = r->body[start];
    } else {   /* the item becomes a rule of its own */
        uint32_t w;
        rc = new_rule(p, GB_RULE_GROUP, at, &w);
        for (uint32_t k = 0; k < len && rc == ST_OK; k++)
            rc = emit(p, w, p->ir->rules[rule].body[start + k]);
        x = GB_SYM_REF | w;
    }
    p->ir->rules[rule].n = start;
    p->ir->n_syms -= len;
    for (uint32_t k = 0; k < min && rc == ST_OK; k++)
        rc = emit(p, rule, x);
    if (rc != ST_OK || max == min)
        return rc;
    uint32_t o;
    if (max == UINT32_MAX) {
        rc = opt_rule(p, at, x, INT64_MAX, &o);   /* R ::= x R | */
        return rc == ST_OK ? emit(p, rule, GB_SYM_REF | o) : rc;
    }
    int64_t next = -1;   /* the chain, built from its end: O_k ::= x O_k+1 | */
    for (uint32_t k = 0; k < max - min && rc == ST_OK; k++) {
        rc = opt_rule(p, at, x, next, &o);
        next = o;
    }
    return rc == ST_OK ? emit(p, rule, GB_SYM_REF | o) : rc;
}

static enum st_status number(struct gp *p, uint32_t *v)
{
    size_t at = p->i;
    uint64_t x = 0;
    if (p->i >= p->n || p->t[p->i] < '0' || p->t[p->i] > '9')
        return FAIL(p, at, "expected a number in '{...}'");
    while (p->i < p->n && p->t[p->i] >= '0' && p->t[p->i] <= '9') {
        x = x * 10 + (uint64_t)(p->t[p->i++] - '0');
        if (x > ST_GBNF_MAX_REPEAT)
            return FAIL(p, at, "repetition count above %d", ST_GBNF_MAX_REPEAT);
    }
    *v = (uint32_t)x;
    return ST_OK;
}

/* {m}, {m,}, {m,n} at p->i. */
static enum st_status braces(struct gp *p, uint32_t *min, uint32_t *max)
{
    size_t at = p->i++;
    space(p, false);
    enum st_status rc = number(p, min);
    if (rc != ST_OK)
        return rc;
    space(p, false);
    *max = *min;
    if (peek(p) == ',') {
        p->i++;
        space(p, false);
        *max = UINT32_MAX;
        if (peek(p) != '}' && (rc = number(p, max)) != ST_OK)
            return rc;
        space(p, false);
    }
    if (peek(p) != '}')
        return FAIL(p, at, "expected '}' to close the repetition");
    p->i++;
    if (*max < *min)
        return FAIL(p, at, "repetition {%u,%u}: the maximum is below the minimum",
                    (unsigned)*min, (unsigned)*max);
    return ST_OK;
}

static enum st_status postfix(struct gp *p, uint32_t rule, int64_t last)
{
    size_t at = p->i;
    int c = peek(p);
    if (last < 0)
        return FAIL(p, at, "'%c' must follow an item to repeat", c);
    uint32_t min = 0, max = UINT32_MAX;
    enum st_status rc = ST_OK;
    if (c == '{') {
        rc = braces(p, &min, &max);
    } else {
        p->i++;
        min = c == '+';
        max = c == '?' ? 1 : UINT32_MAX;
    }
    return rc == ST_OK ? repeat(p, rule, (uint32_t)last, min, max, at) : rc;
}

/* ---- sequences, alternatives, rules ---------------------------------- */

static enum st_status sequence(struct gp *p, uint32_t rule, bool nested)
{
    int64_t last = -1;   /* where the last item's symbols start */
    for (;;) {
        int c = peek(p);
        uint32_t here = p->ir->rules[rule].n;
        enum st_status rc;
        if (c == '"') {
            rc = literal(p, rule);
        } else if (c == '[') {
            rc = char_class(p, rule);
        } else if (c == '.') {
            p->i++;
            uint32_t sym = 0;
            rc = add_set(p, NULL, 0, true, &sym);
            if (rc == ST_OK)
                rc = emit(p, rule, sym);
        } else if (c == '(') {
            rc = group(p, rule);
        } else if (c >= 0 && name_char(c)) {
            rc = reference(p, rule);
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            rc = postfix(p, rule, last);
            here = (uint32_t)last;
        } else if (c == '<' || (c == '!' && p->i + 1 < p->n && p->t[p->i + 1] == '<')) {
            /* llama.cpp's <[id]>, <text>, !<...>: a whole token by id, which
             * a recognizer of text cannot match (docs/API.md) */
            return FAIL(p, p->i, "token references ('<[id]>', '<text>', '!<...>') are not "
                        "supported: grammars here match text, not token ids");
        } else {
            return ST_OK;   /* '|', ')', a newline, the end: the caller decides */
        }
        if (rc != ST_OK)
            return rc;
        last = here;
        space(p, nested);
    }
}

static enum st_status alternates(struct gp *p, uint32_t rule, bool nested)
{
    enum st_status rc = sequence(p, rule, nested);
    while (rc == ST_OK && peek(p) == '|') {
        p->i++;
        rc = emit(p, rule, GB_SYM_ALT);
        space(p, true);
        if (rc == ST_OK)
            rc = sequence(p, rule, nested);
    }
    return rc;
}

static enum st_status rule_def(struct gp *p)
{
    size_t at = p->i, len = name_len(p);
    if (len == 0)
        return FAIL(p, at, "expected a rule name, found '%c'", p->t[p->i]);
    p->i += len;
    space(p, false);
    if (p->n - p->i < 3 || memcmp(p->t + p->i, "::=", 3))
        return FAIL(p, p->i, "expected '::=' after the rule name '%.*s'",
                    (int)ST_MIN(len, 64), p->t + at);
    p->i += 3;
    uint32_t r;
    enum st_status rc = named(p, at, len, &r);
    if (rc != ST_OK)
        return rc;
    struct gb_rule_ir *x = &p->ir->rules[r];
    if (x->defined)
        return FAIL(p, at, "rule '%.*s' is defined twice", (int)ST_MIN(len, 64), p->t + at);
    x->defined = 1;
    x->at = (uint32_t)at;
    space(p, true);
    rc = alternates(p, r, false);
    if (rc != ST_OK)
        return rc;
    int c = peek(p);
    if (c == ')')
        return FAIL(p, p->i, "unmatched ')'");
    if (c >= 0 && c != '\n' && c != '\r')
        return FAIL(p, p->i, "unexpected '%c' in rule '%.*s'", c, (int)ST_MIN(len, 64),
                    p->t + at);
    return ST_OK;
}

enum st_status st_gb_parse(struct gb_ir *ir, const char *text, size_t n, struct st_err *err)
{
    struct gp p = { .ir = ir, .t = text, .n = n, .err = err };
    ir->text = text;
    ir->len = n;
    ir->root = -1;
    if (n > ST_GBNF_MAX_TEXT)
        return st_err_set(err, ST_ERR_INVALID, "the grammar is %zu bytes; at most %d are "
                          "allowed", n, ST_GBNF_MAX_TEXT);
    if (memchr(text, 0, n))
        return FAIL(&p, (size_t)((const char *)memchr(text, 0, n) - text),
                    "a NUL byte in the grammar");
    space(&p, true);
    while (p.i < p.n) {
        enum st_status rc = rule_def(&p);
        if (rc != ST_OK)
            return rc;
        space(&p, true);
    }
    return ST_OK;
}

/* ---- left factoring -------------------------------------------------- */

/* Alternatives of one rule that start with the same symbol are merged
 * (R ::= x A | x B | C becomes R ::= x R' | C, R' ::= A | B), again in
 * R', so that a choice among many literals ("word0" | "word1" | ...) is
 * one stack per distinct next character instead of one per word. The
 * language is the same; no left recursion is made (R' starts where the
 * merged alternatives went on). */
static enum st_status factor_rule(struct gb_ir *ir, uint32_t r, struct st_err *err)
{
    uint32_t n = ir->rules[r].n, na = 1;
    for (uint32_t k = 0; k < n; k++)
        na += ir->rules[r].body[k] == GB_SYM_ALT;
    if (na < 2)
        return ST_OK;
    uint32_t *start = malloc(na * sizeof(*start)), *len = malloc(na * sizeof(*len));
    uint32_t *body = malloc(((size_t)n + 2 * na) * sizeof(*body));
    uint8_t *done = calloc(na, 1);
    enum st_status rc = start && len && body && done ? ST_OK
                      : st_err_set(err, ST_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0, a = 0, s = 0; rc == ST_OK && k <= n; k++) {
        if (k == n || ir->rules[r].body[k] == GB_SYM_ALT) {
            start[a] = s;
            len[a++] = k - s;
            s = k + 1;
        }
    }
    uint32_t m = 0, out = 0;   /* symbols, alternatives written */
    bool changed = false;
    for (uint32_t a = 0; rc == ST_OK && a < na; a++) {
        if (done[a])
            continue;
        const uint32_t *b = ir->rules[r].body;
        uint32_t same = 0;
        for (uint32_t c = a + 1; c < na && len[a] > 0; c++)
            same += !done[c] && len[c] > 0 && b[start[c]] == b[start[a]];
        if (out++ > 0)
            body[m++] = GB_SYM_ALT;
        if (same == 0) {
            memcpy(body + m, b + start[a], len[a] * sizeof(*body));
            m += len[a];
            continue;
        }
        changed = true;
        if (ir->n_rules >= ST_GBNF_MAX_RULES) {
            rc = st_gb_fail(ir, ir->rules[r].at, err, "too many rules (at most %d, "
                            "repetitions included)", ST_GBNF_MAX_RULES);
            break;
        }
        if (!grow((void **)&ir->rules, &ir->cap_rules, ir->n_rules + 1, sizeof(*ir->rules))) {
            rc = st_err_set(err, ST_ERR_NOMEM, "out of memory");
            break;
        }
        b = ir->rules[r].body;
        uint32_t t = ir->n_rules++, tn = 0, tout = 0;
        struct gb_rule_ir *x = &ir->rules[t];
        memset(x, 0, sizeof(*x));
        x->kind = GB_RULE_GROUP;
        x->defined = 1;
        x->at = ir->rules[r].at;
        x->cap = n;
        x->body = malloc((size_t)n * sizeof(*x->body));
        if (!x->body) {
            rc = st_err_set(err, ST_ERR_NOMEM, "out of memory");
            break;
        }
        uint32_t first = b[start[a]];
        for (uint32_t c = a; c < na; c++) {
            if (done[c] || len[c] == 0 || b[start[c]] != first)
                continue;
            done[c] = 1;
            if (tout++ > 0)
                x->body[tn++] = GB_SYM_ALT;
            memcpy(x->body + tn, b + start[c] + 1, (len[c] - 1) * sizeof(*body));
            tn += len[c] - 1;
        }
        x->n = tn;
        body[m++] = first;
        body[m++] = GB_SYM_REF | t;
    }
    if (rc == ST_OK && changed) {
        free(ir->rules[r].body);
        ir->rules[r].body = body;
        ir->rules[r].n = m;
        ir->rules[r].cap = (uint32_t)n + 2 * na;
        body = NULL;
    }
    free(start);
    free(len);
    free(body);
    free(done);
    return rc;
}

enum st_status st_gb_factor(struct gb_ir *ir, struct st_err *err)
{
    enum st_status rc = ST_OK;
    for (uint32_t r = 0; r < ir->n_rules && rc == ST_OK; r++)   /* new rules come too */
        rc = factor_rule(ir, r, err);
    return rc;
}
