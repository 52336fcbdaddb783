/* parse_expr.c -- expressions, by Jinja's precedence: x if c else y, or,
 * and, not, comparisons (in, not in), + -, ~, * / // %, **, unary - +,
 * then primaries with their postfixes (.attr, [item], [a:b:c], (call)),
 * filters (x | f(args)) and tests (x is [not] t args).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "chat/jinja/internal.h"

#define JP_MAX_DEPTH 100

struct jnode *jp_node(struct jparser *p, enum jn_kind kind)
{
    struct jnode *n = ja_alloc(p->a, sizeof(*n));

    if (n) {
        n->kind = kind;
        n->line = p->t[p->i].line;
        n->col = p->t[p->i].col;
    }
    return n;
}

enum st_status jp_fail(struct jparser *p, const char *fmt, ...)
{
    char msg[160];
    const struct jtok *t = &p->t[p->i];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return st_err_set(p->err, ST_ERR_INVALID, "chat template: line %d, column %d: %s", t->line,
                      t->col, msg);
}

bool jp_is_op(struct jparser *p, const char *op)
{
    const struct jtok *t = &p->t[p->i];
    return t->kind == JT_OP && st_str_eq_c(t->text, op);
}

bool jp_is_name(struct jparser *p, const char *name)
{
    const struct jtok *t = &p->t[p->i];
    return t->kind == JT_NAME && st_str_eq_c(t->text, name);
}

enum st_status jp_expect_op(struct jparser *p, const char *op)
{
    if (!jp_is_op(p, op))
        return jp_fail(p, "expected '%s'", op);
    p->i++;
    return ST_OK;
}

enum st_status jp_push(struct jparser *p, struct jnode ***arr, size_t *n, struct jnode *x)
{
    /* grows by powers of two: a new array at 1, 2, 4, ... */
    if ((*n & (*n - 1)) == 0) {
        struct jnode **na = ja_alloc(p->a, (*n ? *n * 2 : 1) * sizeof(*na));
        if (!na)
            return ST_ERR_NOMEM;
        if (*n)
            memcpy(na, *arr, *n * sizeof(*na));
        *arr = na;
    }
    (*arr)[(*n)++] = x;
    return ST_OK;
}

static enum st_status push_kw(struct jparser *p, struct jnode *call, struct st_str kw,
                              struct jnode *arg)
{
    size_t n = call->n_kids;
    enum st_status rc = jp_push(p, &call->kids, &call->n_kids, arg);

    if (rc == ST_OK && (n & (n - 1)) == 0) {
        struct st_str *nk = ja_alloc(p->a, (n ? n * 2 : 1) * sizeof(*nk));
        if (!nk)
            return ST_ERR_NOMEM;
        if (n)
            memcpy(nk, call->kw, n * sizeof(*nk));
        call->kw = nk;
    }
    if (rc == ST_OK)
        call->kw[n] = kw;
    return rc;
}

#define NODE(var, kind) do { if (!((var) = jp_node(p, (kind)))) return ST_ERR_NOMEM; } while (0)

static enum st_status parse_unary(struct jparser *p, bool with_filter, struct jnode **out);
static enum st_status parse_or(struct jparser *p, struct jnode **out);

/* (args) of a call, a filter or a test; the '(' is next. */
enum st_status jp_args(struct jparser *p, struct jnode *call)
{
    struct st_str kw;
    struct jnode *arg;

    TRY(jp_expect_op(p, "("));
    while (!jp_is_op(p, ")")) {
        kw.ptr = "";
        kw.len = 0;
        if (p->t[p->i].kind == JT_NAME && p->t[p->i + 1].kind == JT_OP &&
            st_str_eq_c(p->t[p->i + 1].text, "=")) {
            kw = p->t[p->i].text;
            p->i += 2;
        }
        TRY(jp_expr(p, &arg));
        TRY(push_kw(p, call, kw, arg));
        if (!jp_is_op(p, ","))
            break;
        p->i++;
    }
    return jp_expect_op(p, ")");
}

static enum st_status lit(struct jparser *p, struct jv v, struct jnode **out)
{
    struct jnode *n;

    NODE(n, JN_LIT);
    if (!(n->lit = ja_alloc(p->a, sizeof(*n->lit))))
        return ST_ERR_NOMEM;
    *n->lit = v;
    p->i++;
    *out = n;
    return ST_OK;
}

/* Adjacent string literals join, as in Python. */
static enum st_status parse_string(struct jparser *p, struct jnode **out)
{
    size_t k = p->i, total = 0;
    char *buf;

    for (; p->t[k].kind == JT_STRING; k++)
        total += p->t[k].text.len;
    if (!(buf = ja_alloc(p->a, total + 1)))
        return ST_ERR_NOMEM;
    total = 0;
    for (; p->i + 1 < k; p->i++) {
        memcpy(buf + total, p->t[p->i].text.ptr, p->t[p->i].text.len);
        total += p->t[p->i].text.len;
    }
    memcpy(buf + total, p->t[p->i].text.ptr, p->t[p->i].text.len);
    total += p->t[p->i].text.len;
    return lit(p, jv_str((struct st_str){ buf, total }), out);
}

/* [a, b], (a, b) and (a): close is "]" or ")". */
static enum st_status parse_seq(struct jparser *p, const char *close, struct jnode **out)
{
    struct jnode *n, *x;
    bool comma = false;

    NODE(n, JN_LIST);
    p->i++;
    while (!jp_is_op(p, close)) {
        TRY(jp_expr(p, &x));
        TRY(jp_push(p, &n->kids, &n->n_kids, x));
        if (!jp_is_op(p, ","))
            break;
        comma = true;
        p->i++;
    }
    TRY(jp_expect_op(p, close));
    n->negate = close[0] == ')';      /* a tuple */
    *out = (close[0] == ')' && n->n_kids == 1 && !comma) ? n->kids[0] : n;
    return ST_OK;
}

static enum st_status parse_dict(struct jparser *p, struct jnode **out)
{
    struct jnode *n, *k, *v;

    NODE(n, JN_DICT);
    p->i++;
    while (!jp_is_op(p, "}")) {
        TRY(jp_expr(p, &k));
        TRY(jp_expect_op(p, ":"));
        TRY(jp_expr(p, &v));
        TRY(jp_push(p, &n->kids, &n->n_kids, k));
        TRY(jp_push(p, &n->kids, &n->n_kids, v));
        if (!jp_is_op(p, ","))
            break;
        p->i++;
    }
    TRY(jp_expect_op(p, "}"));
    *out = n;
    return ST_OK;
}

static enum st_status parse_primary(struct jparser *p, struct jnode **out)
{
    const struct jtok *t = &p->t[p->i];
    struct jnode *n;

    switch (t->kind) {
    case JT_STRING: return parse_string(p, out);
    case JT_INT:    return lit(p, jv_int(t->ival), out);
    case JT_FLOAT:  return lit(p, jv_float(t->fval), out);
    case JT_NAME:
        if (st_str_eq_c(t->text, "true") || st_str_eq_c(t->text, "True"))
            return lit(p, jv_bool(true), out);
        if (st_str_eq_c(t->text, "false") || st_str_eq_c(t->text, "False"))
            return lit(p, jv_bool(false), out);
        if (st_str_eq_c(t->text, "none") || st_str_eq_c(t->text, "None"))
            return lit(p, jv_none(), out);
        NODE(n, JN_NAME);
        n->name = t->text;
        p->i++;
        *out = n;
        return ST_OK;
    case JT_OP:
        if (jp_is_op(p, "("))
            return parse_seq(p, ")", out);
        if (jp_is_op(p, "["))
            return parse_seq(p, "]", out);
        if (jp_is_op(p, "{"))
            return parse_dict(p, out);
        break;
    default:
        break;
    }
    if (t->kind == JT_EOF)
        return jp_fail(p, "unexpected end of template");
    return jp_fail(p, "unexpected '%.*s'", (int)(t->text.len > 20 ? 20 : t->text.len),
                   t->text.ptr);
}

/* [i], [a:b], [a:b:c], [::-1]: kids a, b, c (NULL = omitted). */
static enum st_status parse_subscript(struct jparser *p, struct jnode *obj, struct jnode **out)
{
    struct jnode *n, *part[3] = { NULL, NULL, NULL };
    int k = 0;

    NODE(n, JN_ITEM);
    p->i++;
    for (;;) {
        if (!jp_is_op(p, ":") && !jp_is_op(p, "]"))
            TRY(jp_expr(p, &part[k]));
        if (!jp_is_op(p, ":") || k == 2)
            break;
        n->kind = JN_SLICE;
        k++;
        p->i++;
    }
    TRY(jp_expect_op(p, "]"));
    n->a = obj;
    n->b = part[0];
    n->c = part[1];
    n->d = part[2];
    *out = n;
    return ST_OK;
}

static enum st_status parse_postfix(struct jparser *p, struct jnode **node)
{
    struct jnode *n;

    for (;;) {
        if (jp_is_op(p, ".")) {
            NODE(n, JN_ATTR);
            p->i++;
            if (p->t[p->i].kind != JT_NAME && p->t[p->i].kind != JT_INT)
                return jp_fail(p, "expected an attribute name after '.'");
            n->name = p->t[p->i++].text;
            n->a = *node;
            *node = n;
        } else if (jp_is_op(p, "[")) {
            TRY(parse_subscript(p, *node, node));
        } else if (jp_is_op(p, "(")) {
            NODE(n, JN_CALL);
            n->a = *node;
            TRY(jp_args(p, n));
            *node = n;
        } else {
            return ST_OK;
        }
    }
}

/* A test's one bare argument: "is divisibleby 3", "is equalto 'x'". */
static bool starts_bare_arg(struct jparser *p)
{
    const struct jtok *t = &p->t[p->i];

    if (t->kind == JT_STRING || t->kind == JT_INT || t->kind == JT_FLOAT)
        return true;
    if (t->kind == JT_NAME)
        return !jp_is_name(p, "else") && !jp_is_name(p, "or") && !jp_is_name(p, "and") &&
               !jp_is_name(p, "if") && !jp_is_name(p, "in") && !jp_is_name(p, "not") &&
               !jp_is_name(p, "is");
    return jp_is_op(p, "[") || jp_is_op(p, "{");
}

static enum st_status parse_filter_or_test(struct jparser *p, struct jnode **node)
{
    struct jnode *n, *arg;

    for (;;) {
        bool filter = jp_is_op(p, "|");
        if (!filter && !jp_is_name(p, "is"))
            return ST_OK;
        NODE(n, filter ? JN_FILTER : JN_TEST);
        p->i++;
        if (!filter && jp_is_name(p, "not")) {
            n->negate = true;
            p->i++;
        }
        if (p->t[p->i].kind != JT_NAME)
            return jp_fail(p, "expected a %s name", filter ? "filter" : "test");
        n->name = p->t[p->i++].text;
        n->a = *node;
        if (jp_is_op(p, "(")) {
            TRY(jp_args(p, n));
        } else if (!filter && starts_bare_arg(p)) {
            TRY(parse_unary(p, false, &arg));
            TRY(push_kw(p, n, (struct st_str){ "", 0 }, arg));
        }
        *node = n;
    }
}

static enum st_status parse_unary(struct jparser *p, bool with_filter, struct jnode **out)
{
    struct jnode *n;

    if (++p->depth > JP_MAX_DEPTH)
        return jp_fail(p, "expression nested too deeply");
    if (jp_is_op(p, "-") || jp_is_op(p, "+")) {
        bool neg = jp_is_op(p, "-");
        NODE(n, JN_NEG);
        p->i++;
        TRY(parse_unary(p, false, &n->a));
        *out = neg ? n : n->a;
    } else {
        TRY(parse_primary(p, out));
    }
    TRY(parse_postfix(p, out));
    if (with_filter)
        TRY(parse_filter_or_test(p, out));
    p->depth--;
    return ST_OK;
}

static enum st_status binary(struct jparser *p, enum jop op, struct jnode *l, struct jnode **out)
{
    struct jnode *n;

    NODE(n, JN_BIN);
    n->op = op;
    n->a = l;
    *out = n;
    return ST_OK;
}

static enum st_status parse_pow(struct jparser *p, struct jnode **out)
{
    TRY(parse_unary(p, true, out));
    while (jp_is_op(p, "**")) {
        TRY(binary(p, JO_POW, *out, out));
        p->i++;
        TRY(parse_unary(p, true, &(*out)->b));
    }
    return ST_OK;
}

static enum st_status parse_mul(struct jparser *p, struct jnode **out)
{
    static const char *const ops[] = { "*", "/", "//", "%" };
    static const enum jop codes[] = { JO_MUL, JO_DIV, JO_FDIV, JO_MOD };

    TRY(parse_pow(p, out));
    for (;;) {
        int k = -1;
        for (int i = 0; i < 4; i++)
            if (jp_is_op(p, ops[i]))
                k = i;
        if (k < 0)
            return ST_OK;
        TRY(binary(p, codes[k], *out, out));
        p->i++;
        TRY(parse_pow(p, &(*out)->b));
    }
}

static enum st_status parse_concat(struct jparser *p, struct jnode **out)
{
    TRY(parse_mul(p, out));
    while (jp_is_op(p, "~")) {
        TRY(binary(p, JO_CAT, *out, out));
        p->i++;
        TRY(parse_mul(p, &(*out)->b));
    }
    return ST_OK;
}

static enum st_status parse_add(struct jparser *p, struct jnode **out)
{
    TRY(parse_concat(p, out));
    while (jp_is_op(p, "+") || jp_is_op(p, "-")) {
        TRY(binary(p, jp_is_op(p, "+") ? JO_ADD : JO_SUB, *out, out));
        p->i++;
        TRY(parse_concat(p, &(*out)->b));
    }
    return ST_OK;
}

static bool compare_op(struct jparser *p, enum jop *op, int *len)
{
    static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=" };
    static const enum jop codes[] = { JO_EQ, JO_NE, JO_LT, JO_LE, JO_GT, JO_GE };

    *len = 1;
    for (int i = 0; i < 6; i++)
        if (jp_is_op(p, ops[i])) {
            *op = codes[i];
            return true;
        }
    if (jp_is_name(p, "in")) {
        *op = JO_IN;
        return true;
    }
    if (jp_is_name(p, "not") && p->t[p->i + 1].kind == JT_NAME &&
        st_str_eq_c(p->t[p->i + 1].text, "in")) {
        *op = JO_NOTIN;
        *len = 2;
        return true;
    }
    return false;
}

static enum st_status parse_compare(struct jparser *p, struct jnode **out)
{
    enum jop op;
    int len;

    TRY(parse_add(p, out));
    while (compare_op(p, &op, &len)) {
        TRY(binary(p, op, *out, out));
        p->i += (size_t)len;
        TRY(parse_add(p, &(*out)->b));
    }
    return ST_OK;
}

static enum st_status parse_not(struct jparser *p, struct jnode **out)
{
    struct jnode *n;

    if (!jp_is_name(p, "not"))
        return parse_compare(p, out);
    if (++p->depth > JP_MAX_DEPTH)
        return jp_fail(p, "expression nested too deeply");
    NODE(n, JN_NOT);
    p->i++;
    TRY(parse_not(p, &n->a));
    p->depth--;
    *out = n;
    return ST_OK;
}

static enum st_status parse_and(struct jparser *p, struct jnode **out)
{
    struct jnode *n;

    TRY(parse_not(p, out));
    while (jp_is_name(p, "and")) {
        NODE(n, JN_AND);
        p->i++;
        n->a = *out;
        TRY(parse_not(p, &n->b));
        *out = n;
    }
    return ST_OK;
}

static enum st_status parse_or(struct jparser *p, struct jnode **out)
{
    struct jnode *n;

    TRY(parse_and(p, out));
    while (jp_is_name(p, "or")) {
        NODE(n, JN_OR);
        p->i++;
        n->a = *out;
        TRY(parse_and(p, &n->b));
        *out = n;
    }
    return ST_OK;
}

/* An expression without a trailing "if": a for loop's iterable, before
 * its filter ("for x in xs if x.ok"). */
enum st_status jp_expr_nocond(struct jparser *p, struct jnode **out)
{
    return parse_or(p, out);
}

/* x if c else y (else optional: undefined). */
enum st_status jp_expr(struct jparser *p, struct jnode **out)
{
    struct jnode *n;

    if (++p->depth > JP_MAX_DEPTH)
        return jp_fail(p, "expression nested too deeply");
    TRY(parse_or(p, out));
    while (jp_is_name(p, "if")) {
        NODE(n, JN_COND);
        p->i++;
        n->b = *out;
        TRY(parse_or(p, &n->a));
        if (jp_is_name(p, "else")) {
            p->i++;
            TRY(jp_expr(p, &n->c));
        }
        *out = n;
    }
    p->depth--;
    return ST_OK;
}
