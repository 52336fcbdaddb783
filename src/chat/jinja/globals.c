/* globals.c -- the functions a template can call by name: range,
 * namespace, dict, raise_exception and strftime_now (Hugging Face's
 * additions, which llama.cpp also provides).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "chat/jinja/internal.h"

static const struct { const char *name; enum jfunc fn; } funcs[] = {
    { "range", JF_RANGE },         { "namespace", JF_NAMESPACE },
    { "raise_exception", JF_RAISE }, { "strftime_now", JF_STRFTIME },
    { "dict", JF_DICT },
};

bool jr_global_func(struct st_str name, enum jfunc *fn)
{
    for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
        if (st_str_eq_c(name, funcs[i].name)) {
            *fn = funcs[i].fn;
            return true;
        }
    return false;
}

static enum st_status range(struct jrender *r, const struct jargs *x, struct jv *out)
{
    int64_t v[3] = { 0, 0, 1 }, n = 0;
    struct jlist *l;

    for (size_t i = 0; i < x->n && i < 3; i++) {
        if (x->v[i].kind != JV_INT)
            return jr_fail(r, "range needs integers");
        v[i] = x->v[i].u.i;
    }
    if (x->n == 1) {
        v[1] = v[0];
        v[0] = 0;
    }
    if (x->n == 0 || x->n > 3 || v[2] == 0)
        return jr_fail(r, "range needs 1 to 3 integers and a non-zero step");
    if (v[2] > 0 && v[1] > v[0])
        n = (v[1] - v[0] + v[2] - 1) / v[2];
    else if (v[2] < 0 && v[1] < v[0])
        n = (v[0] - v[1] - v[2] - 1) / -v[2];
    if ((uint64_t)n > r->lim->max_steps)
        return jr_fail(r, "range of %lld items is too long", (long long)n);
    if (!(l = jv_list_new(r->a, (size_t)n)))
        return jr_nomem(r);
    for (int64_t i = 0; i < n; i++)
        l->items[l->n++] = jv_int(v[0] + i * v[2]);
    out->kind = JV_LIST;
    out->u.l = l;
    return ST_OK;
}

/* namespace(...) / dict(...): a positional dict's items, then keywords. */
static enum st_status make_dict(struct jrender *r, const struct jargs *x, bool ns,
                                struct jv *out)
{
    struct jdict *d = jv_dict_new(r->a, x->n);

    if (!d)
        return jr_nomem(r);
    d->ns = ns;
    for (size_t i = 0; i < x->n; i++) {
        const struct jv *v = &x->v[i];
        if (x->kw && x->kw[i].len) {
            if (jv_dict_set(r->a, d, x->kw[i], *v) != ST_OK)
                return jr_nomem(r);
        } else if (v->kind == JV_DICT) {
            for (size_t k = 0; k < v->u.d->n; k++)
                if (jv_dict_put(r->a, d, v->u.d->keys[k], v->u.d->vals[k]) != ST_OK)
                    return jr_nomem(r);
        } else {
            return jr_fail(r, "%s takes keyword arguments", ns ? "namespace" : "dict");
        }
    }
    out->kind = JV_DICT;
    out->u.d = d;
    return ST_OK;
}

static enum st_status strftime_now(struct jrender *r, const struct jargs *x, struct jv *out)
{
    const struct jv *f = jargs_get(x, 0, NULL);
    char fmt[128], buf[256];
    time_t now = r->lim->now_s ? (time_t)r->lim->now_s : time(NULL);
    struct tm tm;
    size_t n;

    if (!f || f->kind != JV_STR || f->u.s.len >= sizeof(fmt))
        return jr_fail(r, "strftime_now needs a format string");
    memcpy(fmt, f->u.s.ptr, f->u.s.len);
    fmt[f->u.s.len] = '\0';
    if (r->lim->now_s)
        gmtime_r(&now, &tm);
    else
        localtime_r(&now, &tm);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    n = strftime(buf, sizeof(buf), fmt, &tm);   /* the template's own format */
#pragma GCC diagnostic pop
    char *p = ja_strdup(r->a, buf, n);
    if (!p)
        return jr_nomem(r);
    *out = jv_str((struct st_str){ p, n });
    return ST_OK;
}

enum st_status jr_call_func(struct jrender *r, enum jfunc fn, const struct jargs *x,
                            struct jv *out)
{
    struct st_str msg = { "", 0 };

    switch (fn) {
    case JF_RANGE:     return range(r, x, out);
    case JF_NAMESPACE: return make_dict(r, x, true, out);
    case JF_DICT:      return make_dict(r, x, false, out);
    case JF_STRFTIME:  return strftime_now(r, x, out);
    case JF_RAISE:
        if (x->n)
            TRY(jr_str(r, &x->v[0], &msg));
        return st_err_set(r->err, ST_ERR_INVALID, "chat template: line %d: %.*s", r->line,
                          (int)(msg.len > 200 ? 200 : msg.len), msg.ptr);
    }
    return jr_fail(r, "unknown function");
}
