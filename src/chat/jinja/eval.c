/* eval.c -- expressions: names through the scope chain, attribute and
 * item access, slices, calls (methods, macros, built-in functions),
 * filters and tests, and Python's operators on the values of value.c.
 */
#include <string.h>

#include "chat/jinja/internal.h"

static struct jv loop_attr(const struct jloop *lp, struct st_str name)
{
    int64_t i = lp->index0, n = lp->length;

    if (st_str_eq_c(name, "index"))     return jv_int(i + 1);
    if (st_str_eq_c(name, "index0"))    return jv_int(i);
    if (st_str_eq_c(name, "revindex"))  return jv_int(n - i);
    if (st_str_eq_c(name, "revindex0")) return jv_int(n - i - 1);
    if (st_str_eq_c(name, "first"))     return jv_bool(i == 0);
    if (st_str_eq_c(name, "last"))      return jv_bool(i == n - 1);
    if (st_str_eq_c(name, "length"))    return jv_int(n);
    if (st_str_eq_c(name, "depth"))     return jv_int(1);
    if (st_str_eq_c(name, "depth0"))    return jv_int(0);
    if (st_str_eq_c(name, "previtem"))  return i > 0 ? lp->items->items[i - 1] : jv_undef();
    if (st_str_eq_c(name, "nextitem"))  return i + 1 < n ? lp->items->items[i + 1] : jv_undef();
    return jv_undef();
}

static struct jv get_attr(const struct jv *obj, struct st_str name)
{
    const struct jv *v;

    if (obj->kind == JV_DICT && (v = jv_dict_get(obj->u.d, name)))
        return *v;
    if (obj->kind == JV_LOOP)
        return loop_attr(obj->u.loop, name);
    return jv_undef();
}

/* Python's index rules: negative counts from the end. */
static bool norm_index(int64_t i, size_t n, size_t *out)
{
    if (i < 0)
        i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n)
        return false;
    *out = (size_t)i;
    return true;
}

static enum st_status get_item(struct jrender *r, const struct jv *obj, const struct jv *key,
                               struct jv *out)
{
    struct jlist *l;
    size_t i;

    *out = jv_undef();
    if (key->kind == JV_STR && (obj->kind == JV_DICT || obj->kind == JV_LOOP)) {
        *out = get_attr(obj, key->u.s);
    } else if (obj->kind == JV_DICT) {
        const struct jv *v = jv_dict_find(obj->u.d, key);   /* NULL for an unhashable key */
        if (v)
            *out = *v;
    } else if (obj->kind == JV_LIST && key->kind == JV_INT) {
        if (norm_index(key->u.i, obj->u.l->n, &i))
            *out = obj->u.l->items[i];
    } else if (obj->kind == JV_STR && key->kind == JV_INT) {
        TRY(jr_chars(r, obj->u.s, &l));
        if (norm_index(key->u.i, l->n, &i))
            *out = l->items[i];
    }
    return ST_OK;
}

static enum st_status opt_int(struct jrender *r, const struct jnode *n, bool *given, int64_t *v)
{
    struct jv x;

    *given = false;
    if (!n)
        return ST_OK;
    TRY(jr_eval(r, n, &x));
    if (x.kind == JV_NONE || x.kind == JV_UNDEF)
        return ST_OK;
    if (x.kind != JV_INT)
        return jr_fail(r, "slice indices must be integers");
    *given = true;
    *v = x.u.i;
    return ST_OK;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* obj[a:b:c] on a list or a string (by code point). */
static enum st_status eval_slice(struct jrender *r, const struct jnode *n, struct jv *out)
{
    struct jv obj;
    struct jlist *src, *res;
    bool has_a, has_b, has_c;
    int64_t a = 0, b = 0, c = 1, len;

    TRY(jr_eval(r, n->a, &obj));
    TRY(opt_int(r, n->b, &has_a, &a));
    TRY(opt_int(r, n->c, &has_b, &b));
    TRY(opt_int(r, n->d, &has_c, &c));
    if (c == 0)
        return jr_fail(r, "slice step cannot be zero");
    if (obj.kind != JV_LIST && obj.kind != JV_STR)
        return jr_fail(r, "cannot slice a %s", jv_type_name(obj.kind));
    if (obj.kind == JV_STR)
        TRY(jr_chars(r, obj.u.s, &src));
    else
        src = obj.u.l;
    len = (int64_t)src->n;
    a = !has_a ? (c > 0 ? 0 : len - 1) : clamp(a < 0 ? a + len : a, c > 0 ? 0 : -1, c > 0 ? len : len - 1);
    b = !has_b ? (c > 0 ? len : -1) : clamp(b < 0 ? b + len : b, c > 0 ? 0 : -1, c > 0 ? len : len - 1);
    if (!(res = jv_list_new(r->a, 0)))
        return jr_nomem(r);
    for (int64_t i = a; c > 0 ? i < b : i > b; i += c)
        if (jv_list_push(r->a, res, src->items[i]) != ST_OK)
            return jr_nomem(r);
    if (obj.kind == JV_LIST) {
        out->kind = JV_LIST;
        out->u.l = res;
        return ST_OK;
    }
    size_t total = 0, o = 0;
    for (size_t i = 0; i < res->n; i++)
        total += res->items[i].u.s.len;
    char *p = ja_alloc(r->a, total + 1);
    if (!p)
        return jr_nomem(r);
    for (size_t i = 0; i < res->n; i++) {
        if (res->items[i].u.s.len)
            memcpy(p + o, res->items[i].u.s.ptr, res->items[i].u.s.len);
        o += res->items[i].u.s.len;
    }
    *out = jv_str((struct st_str){ p, total });
    return ST_OK;
}

static enum st_status eval_args(struct jrender *r, const struct jnode *n, struct jargs *x)
{
    x->n = n->n_kids;
    x->kw = n->kw;
    x->v = NULL;
    if (!n->n_kids)
        return ST_OK;
    if (!(x->v = ja_alloc(r->a, n->n_kids * sizeof(*x->v))))
        return jr_nomem(r);
    for (size_t i = 0; i < n->n_kids; i++)
        TRY(jr_eval(r, n->kids[i], &x->v[i]));
    return ST_OK;
}

static enum st_status call_value(struct jrender *r, const struct jv *f, const struct jargs *x,
                                 struct jv *out)
{
    if (f->kind == JV_MACRO)
        return r->call_macro(r, f->u.macro, x->v, x->kw, x->n, out);
    if (f->kind == JV_FUNC)
        return jr_call_func(r, f->u.fn, x, out);
    return jr_fail(r, "'%s' is not callable", jv_type_name(f->kind));
}

static enum st_status eval_call(struct jrender *r, const struct jnode *n, struct jv *out)
{
    struct jv obj, f;
    struct jargs x;
    bool found = false;

    if (n->a->kind == JN_ATTR) {
        TRY(jr_eval(r, n->a->a, &obj));
        TRY(eval_args(r, n, &x));
        r->line = n->line;
        r->col = n->col;
        TRY(jr_method(r, &obj, n->a->name, &x, out, &found));
        if (found)
            return ST_OK;
        f = get_attr(&obj, n->a->name);
        if (f.kind == JV_UNDEF)
            return jr_fail(r, "%s has no method '%.*s'", jv_type_name(obj.kind),
                           (int)n->a->name.len, n->a->name.ptr);
        return call_value(r, &f, &x, out);
    }
    TRY(jr_eval(r, n->a, &f));
    TRY(eval_args(r, n, &x));
    r->line = n->line;
    r->col = n->col;
    if (f.kind == JV_UNDEF && n->a->kind == JN_NAME)
        return jr_fail(r, "'%.*s' is undefined", (int)n->a->name.len, n->a->name.ptr);
    return call_value(r, &f, &x, out);
}

static enum st_status eval_filter(struct jrender *r, const struct jnode *n, struct jv *out)
{
    struct jv v;
    struct jargs x;
    bool ok;

    TRY(jr_eval(r, n->a, &v));
    TRY(eval_args(r, n, &x));
    r->line = n->line;
    r->col = n->col;
    if (n->kind == JN_FILTER)
        return jr_filter(r, n->name, &v, &x, out);
    TRY(jr_test(r, n->name, &v, &x, &ok));
    *out = jv_bool(ok != n->negate);
    return ST_OK;
}

static enum st_status eval_list(struct jrender *r, const struct jnode *n, struct jv *out)
{
    struct jlist *l = jv_list_new(r->a, n->n_kids);

    if (!l)
        return jr_nomem(r);
    l->tuple = n->negate;
    for (size_t i = 0; i < n->n_kids; i++)
        TRY(jr_eval(r, n->kids[i], &l->items[l->n++]));
    out->kind = JV_LIST;
    out->u.l = l;
    return ST_OK;
}

static enum st_status eval_dict(struct jrender *r, const struct jnode *n, struct jv *out)
{
    struct jdict *d = jv_dict_new(r->a, n->n_kids / 2);
    struct jv k, v;

    if (!d)
        return jr_nomem(r);
    for (size_t i = 0; i + 1 < n->n_kids; i += 2) {
        TRY(jr_eval(r, n->kids[i], &k));
        TRY(jr_eval(r, n->kids[i + 1], &v));
        if (!jv_hashable(&k))
            return jr_fail(r, "unhashable type: '%s'", jv_type_name(k.kind));
        if (jv_dict_put(r->a, d, k, v) != ST_OK)
            return jr_nomem(r);
    }
    out->kind = JV_DICT;
    out->u.d = d;
    return ST_OK;
}

static enum st_status eval_name(struct jrender *r, const struct jnode *n, struct jv *out)
{
    struct jv *v = jr_lookup(r, n->name);
    enum jfunc fn;

    if (v) {
        *out = *v;
    } else if (jr_global_func(n->name, &fn)) {
        out->kind = JV_FUNC;
        out->u.fn = fn;
    } else {
        *out = jv_undef();
    }
    return ST_OK;
}

static enum st_status eval_node(struct jrender *r, const struct jnode *n, struct jv *out)
{
    struct jv a, b;

    switch (n->kind) {
    case JN_LIT:    *out = *n->lit; return ST_OK;
    case JN_NAME:   return eval_name(r, n, out);
    case JN_LIST:   return eval_list(r, n, out);
    case JN_DICT:   return eval_dict(r, n, out);
    case JN_ATTR:
        TRY(jr_eval(r, n->a, &a));
        *out = get_attr(&a, n->name);
        return ST_OK;
    case JN_ITEM:
        TRY(jr_eval(r, n->a, &a));
        TRY(jr_eval(r, n->b, &b));
        return get_item(r, &a, &b, out);
    case JN_SLICE:  return eval_slice(r, n, out);
    case JN_CALL:   return eval_call(r, n, out);
    case JN_FILTER:
    case JN_TEST:   return eval_filter(r, n, out);
    case JN_NOT:
        TRY(jr_eval(r, n->a, &a));
        *out = jv_bool(!jv_truthy(&a));
        return ST_OK;
    case JN_NEG:
        TRY(jr_eval(r, n->a, &a));
        return jr_binop(r, JO_SUB, &(struct jv){ .kind = JV_INT }, &a, out);
    case JN_BIN:
        TRY(jr_eval(r, n->a, &a));
        TRY(jr_eval(r, n->b, &b));
        r->line = n->line;
        r->col = n->col;
        return jr_binop(r, n->op, &a, &b, out);
    case JN_AND:
    case JN_OR:
        TRY(jr_eval(r, n->a, out));
        if (jv_truthy(out) == (n->kind == JN_OR))
            return ST_OK;
        return jr_eval(r, n->b, out);
    case JN_COND:
        TRY(jr_eval(r, n->a, &a));
        if (jv_truthy(&a))
            return jr_eval(r, n->b, out);
        if (n->c)
            return jr_eval(r, n->c, out);
        *out = jv_undef();
        return ST_OK;
    default:
        return jr_fail(r, "not an expression");
    }
}

enum st_status jr_eval(struct jrender *r, const struct jnode *n, struct jv *out)
{
    enum st_status rc;

    if (!n)   /* an empty operand the parser let through, as x[] */
        return jr_fail(r, "an expression is missing");
    rc = jr_enter(r, n);
    if (rc != ST_OK)
        return rc;
    rc = eval_node(r, n, out);
    r->depth--;
    return rc;
}
