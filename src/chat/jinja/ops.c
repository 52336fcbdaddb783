/* ops.c -- Python's binary operators on the interpreter's values: numbers
 * (int stays int except for /), string and list + and *, ~ (str of each
 * side), comparisons, and `in`.
 */
#include <math.h>
#include <string.h>

#include "chat/jinja/internal.h"

enum st_status jr_concat(struct jrender *r, struct st_str a, struct st_str b, struct st_str *out)
{
    char *p;

    if (a.len + b.len > r->lim->max_output_bytes)
        return jr_fail(r, "a string grew past %zu bytes", r->lim->max_output_bytes);
    if (!(p = ja_alloc(r->a, a.len + b.len + 1)))
        return jr_nomem(r);
    if (a.len)
        memcpy(p, a.ptr, a.len);
    if (b.len)
        memcpy(p + a.len, b.ptr, b.len);
    out->ptr = p;
    out->len = a.len + b.len;
    return ST_OK;
}

static bool is_num(const struct jv *v)
{
    return v->kind == JV_INT || v->kind == JV_FLOAT || v->kind == JV_BOOL;
}

static double fnum(const struct jv *v)
{
    return v->kind == JV_FLOAT ? v->u.f : v->kind == JV_INT ? (double)v->u.i : (double)v->u.b;
}

static int64_t inum(const struct jv *v)
{
    return v->kind == JV_INT ? v->u.i : (int64_t)v->u.b;
}

static enum st_status repeat(struct jrender *r, const struct jv *seq, int64_t times,
                             struct jv *out)
{
    size_t unit = seq->kind == JV_STR ? seq->u.s.len : seq->u.l->n * sizeof(struct jv);

    if (times < 0)
        times = 0;
    if (unit && (uint64_t)times > r->lim->max_output_bytes / unit)
        return jr_fail(r, "a repetition grew past %zu bytes", r->lim->max_output_bytes);
    if (seq->kind == JV_STR) {
        char *p = ja_alloc(r->a, unit * (size_t)times + 1);
        if (!p)
            return jr_nomem(r);
        for (int64_t i = 0; i < times; i++)
            memcpy(p + (size_t)i * unit, seq->u.s.ptr, unit);
        *out = jv_str((struct st_str){ p, unit * (size_t)times });
        return ST_OK;
    }
    struct jlist *l = jv_list_new(r->a, seq->u.l->n * (size_t)times);
    if (!l)
        return jr_nomem(r);
    for (int64_t i = 0; i < times; i++)
        for (size_t k = 0; k < seq->u.l->n; k++)
            l->items[l->n++] = seq->u.l->items[k];
    out->kind = JV_LIST;
    out->u.l = l;
    return ST_OK;
}

static enum st_status arith(struct jrender *r, enum jop op, const struct jv *a,
                            const struct jv *b, struct jv *out)
{
    bool ints = a->kind != JV_FLOAT && b->kind != JV_FLOAT;
    int64_t x = ints ? inum(a) : 0, y = ints ? inum(b) : 0, q;
    double fx = fnum(a), fy = fnum(b);

    if ((op == JO_DIV || op == JO_FDIV || op == JO_MOD) && fy == 0.0)
        return jr_fail(r, "division by zero");
    switch (op) {
    case JO_ADD:
        *out = ints ? jv_int((int64_t)((uint64_t)x + (uint64_t)y)) : jv_float(fx + fy);
        return ST_OK;
    case JO_SUB:
        *out = ints ? jv_int((int64_t)((uint64_t)x - (uint64_t)y)) : jv_float(fx - fy);
        return ST_OK;
    case JO_MUL:
        *out = ints ? jv_int((int64_t)((uint64_t)x * (uint64_t)y)) : jv_float(fx * fy);
        return ST_OK;
    case JO_DIV:
        *out = jv_float(fx / fy);
        return ST_OK;
    case JO_FDIV:
        if (!ints) {
            *out = jv_float(floor(fx / fy));
            return ST_OK;
        }
        if (x == INT64_MIN && y == -1)
            return jr_fail(r, "integer overflow");
        q = x / y;
        *out = jv_int((x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q);
        return ST_OK;
    case JO_MOD:
        if (!ints) {
            double m = fmod(fx, fy);
            *out = jv_float((m != 0.0 && ((m < 0) != (fy < 0))) ? m + fy : m);
            return ST_OK;
        }
        if (y == -1) {
            *out = jv_int(0);
            return ST_OK;
        }
        q = x % y;
        *out = jv_int((q != 0 && ((q < 0) != (y < 0))) ? q + y : q);
        return ST_OK;
    default:
        *out = jv_float(pow(fx, fy));
        if (ints && y >= 0 && fabs(out->u.f) < 9.0e18)
            *out = jv_int((int64_t)out->u.f);
        return ST_OK;
    }
}

static enum st_status compare(struct jrender *r, enum jop op, const struct jv *a,
                              const struct jv *b, struct jv *out)
{
    int c;

    if (!jv_compare(a, b, &c))
        return jr_fail(r, "cannot compare %s with %s", jv_type_name(a->kind),
                       jv_type_name(b->kind));
    *out = jv_bool(op == JO_LT ? c < 0 : op == JO_LE ? c <= 0 : op == JO_GT ? c > 0 : c >= 0);
    return ST_OK;
}

static enum st_status contains(struct jrender *r, const struct jv *item, const struct jv *seq,
                               bool *out)
{
    *out = false;
    if (seq->kind == JV_STR) {
        if (item->kind != JV_STR)
            return jr_fail(r, "'in <string>' needs a string on the left");
        *out = item->u.s.len == 0 ||
               (seq->u.s.len && memmem(seq->u.s.ptr, seq->u.s.len, item->u.s.ptr, item->u.s.len));
    } else if (seq->kind == JV_LIST) {
        for (size_t i = 0; i < seq->u.l->n && !*out; i++)
            *out = jv_equal(item, &seq->u.l->items[i]);
    } else if (seq->kind == JV_DICT) {
        if (!jv_hashable(item))
            return jr_fail(r, "unhashable type: '%s'", jv_type_name(item->kind));
        *out = jv_dict_find(seq->u.d, item) != NULL;
    } else if (seq->kind != JV_UNDEF) {
        return jr_fail(r, "'in' needs a string, list or dict, not %s", jv_type_name(seq->kind));
    }
    return ST_OK;
}

enum st_status jr_binop(struct jrender *r, enum jop op, const struct jv *a, const struct jv *b,
                        struct jv *out)
{
    struct st_str sa, sb;
    bool in;

    switch (op) {
    case JO_EQ: *out = jv_bool(jv_equal(a, b)); return ST_OK;
    case JO_NE: *out = jv_bool(!jv_equal(a, b)); return ST_OK;
    case JO_LT: case JO_LE: case JO_GT: case JO_GE:
        return compare(r, op, a, b, out);
    case JO_IN: case JO_NOTIN:
        TRY(contains(r, a, b, &in));
        *out = jv_bool(in == (op == JO_IN));
        return ST_OK;
    case JO_CAT:
        TRY(jr_str(r, a, &sa));
        TRY(jr_str(r, b, &sb));
        TRY(jr_concat(r, sa, sb, &sa));
        *out = jv_str(sa);
        return ST_OK;
    default:
        break;
    }
    if (is_num(a) && is_num(b))
        return arith(r, op, a, b, out);
    if (op == JO_ADD && a->kind == JV_STR && b->kind == JV_STR) {
        TRY(jr_concat(r, a->u.s, b->u.s, &sa));
        *out = jv_str(sa);
        return ST_OK;
    }
    /* a string + none or undefined is the string, as in llama.cpp's
     * interpreter (Python's jinja2 fails): firefunction-v2 adds its
     * undefined 'functions' when a request has no tools */
    if (op == JO_ADD && ((a->kind == JV_STR && (b->kind == JV_NONE || b->kind == JV_UNDEF)) ||
                         (b->kind == JV_STR && (a->kind == JV_NONE || a->kind == JV_UNDEF)))) {
        *out = a->kind == JV_STR ? *a : *b;
        return ST_OK;
    }
    if (op == JO_ADD && a->kind == JV_LIST && b->kind == JV_LIST) {
        struct jlist *l = jv_list_new(r->a, a->u.l->n + b->u.l->n);
        if (!l)
            return jr_nomem(r);
        for (size_t i = 0; i < a->u.l->n; i++)
            l->items[l->n++] = a->u.l->items[i];
        for (size_t i = 0; i < b->u.l->n; i++)
            l->items[l->n++] = b->u.l->items[i];
        out->kind = JV_LIST;
        out->u.l = l;
        return ST_OK;
    }
    if (op == JO_MUL && (a->kind == JV_STR || a->kind == JV_LIST) && b->kind == JV_INT)
        return repeat(r, a, b->u.i, out);
    if (op == JO_MUL && (b->kind == JV_STR || b->kind == JV_LIST) && a->kind == JV_INT)
        return repeat(r, b, a->u.i, out);
    return jr_fail(r, "unsupported operand types: %s and %s", jv_type_name(a->kind),
                   jv_type_name(b->kind));
}
