/* tests.c -- Jinja's tests: x is defined / none / string / mapping /
 * iterable / sequence / number / integer / float / boolean / true / false /
 * equalto (==, eq, sameas) / ne / lt / gt / odd / even / divisibleby / in /
 * lower / upper / callable.
 */
#include <string.h>

#include "chat/jinja/internal.h"

static bool name_in(struct st_str name, const char *const *names)
{
    for (; *names; names++)
        if (st_str_eq_c(name, *names))
            return true;
    return false;
}

static bool kind_test(struct st_str t, const struct jv *v, bool *out)
{
    enum jv_kind k = v->kind;

    if (st_str_eq_c(t, "defined"))        *out = k != JV_UNDEF;
    else if (st_str_eq_c(t, "undefined")) *out = k == JV_UNDEF;
    else if (st_str_eq_c(t, "none"))      *out = k == JV_NONE;
    else if (st_str_eq_c(t, "string"))    *out = k == JV_STR;
    else if (st_str_eq_c(t, "mapping"))   *out = k == JV_DICT;
    else if (st_str_eq_c(t, "iterable"))  *out = k == JV_LIST || k == JV_DICT || k == JV_STR;
    else if (st_str_eq_c(t, "sequence"))  *out = k == JV_LIST || k == JV_DICT || k == JV_STR;
    else if (st_str_eq_c(t, "number"))    *out = k == JV_INT || k == JV_FLOAT || k == JV_BOOL;
    else if (st_str_eq_c(t, "integer"))   *out = k == JV_INT;
    else if (st_str_eq_c(t, "float"))     *out = k == JV_FLOAT;
    else if (st_str_eq_c(t, "boolean"))   *out = k == JV_BOOL;
    else if (st_str_eq_c(t, "true"))      *out = k == JV_BOOL && v->u.b;
    else if (st_str_eq_c(t, "false"))     *out = k == JV_BOOL && !v->u.b;
    else if (st_str_eq_c(t, "callable"))  *out = k == JV_MACRO || k == JV_FUNC;
    else return false;
    return true;
}

static bool case_test(const struct jv *v, bool upper)
{
    bool cased = false;

    if (v->kind != JV_STR)
        return false;
    for (size_t i = 0; i < v->u.s.len; i++) {
        char c = v->u.s.ptr[i];
        if ((upper && c >= 'a' && c <= 'z') || (!upper && c >= 'A' && c <= 'Z'))
            return false;
        cased |= (c | 32) >= 'a' && (c | 32) <= 'z';
    }
    return cased;
}

enum st_status jr_test(struct jrender *r, struct st_str name, const struct jv *v,
                       const struct jargs *x, bool *out)
{
    static const char *const eq[] = { "equalto", "eq", "==", "sameas", NULL };
    static const char *const ne[] = { "ne", "!=", NULL };
    static const char *const cmp[] = { "lt", "<", "le", "<=", "gt", ">", "ge", ">=", NULL };
    static const enum jop cmp_ops[] = { JO_LT, JO_LT, JO_LE, JO_LE, JO_GT, JO_GT, JO_GE, JO_GE };
    const struct jv *a = jargs_get(x, 0, NULL);
    struct jv res;

    if (kind_test(name, v, out))
        return ST_OK;
    if (st_str_eq_c(name, "lower") || st_str_eq_c(name, "upper")) {
        *out = case_test(v, name.ptr[0] == 'u');
        return ST_OK;
    }
    if (st_str_eq_c(name, "odd") || st_str_eq_c(name, "even")) {
        if (v->kind != JV_INT)
            return jr_fail(r, "'%.*s' needs an integer", (int)name.len, name.ptr);
        *out = (v->u.i % 2 != 0) == (name.ptr[0] == 'o');
        return ST_OK;
    }
    if (!a)
        return jr_fail(r, "unknown test '%.*s' or missing argument", (int)name.len, name.ptr);
    if (name_in(name, eq)) {
        *out = jv_equal(v, a);
        return ST_OK;
    }
    if (name_in(name, ne)) {
        *out = !jv_equal(v, a);
        return ST_OK;
    }
    for (int i = 0; cmp[i]; i++)
        if (st_str_eq_c(name, cmp[i])) {
            TRY(jr_binop(r, cmp_ops[i], v, a, &res));
            *out = res.u.b;
            return ST_OK;
        }
    if (st_str_eq_c(name, "in")) {
        TRY(jr_binop(r, JO_IN, v, a, &res));
        *out = res.u.b;
        return ST_OK;
    }
    if (st_str_eq_c(name, "divisibleby")) {
        if (v->kind != JV_INT || a->kind != JV_INT || a->u.i == 0)
            return jr_fail(r, "divisibleby needs non-zero integers");
        *out = a->u.i == -1 || v->u.i % a->u.i == 0;
        return ST_OK;
    }
    return jr_fail(r, "unknown test '%.*s'", (int)name.len, name.ptr);
}
