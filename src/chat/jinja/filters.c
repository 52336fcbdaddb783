/* filters.c -- Jinja's filters as chat templates use them: length, trim,
 * tojson, string, join, default, first, last, upper, lower, capitalize,
 * title, replace, selectattr / rejectattr, select / reject, map, list,
 * items, dictsort, safe, indent, int, float, abs, reverse, unique, sort,
 * round, escape.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja/strings.h"

static enum st_status out_list(struct jlist *l, struct jv *out)
{
    out->kind = JV_LIST;
    out->u.l = l;
    return ST_OK;
}

/* item.a.b (dotted), for selectattr, map and sort. */
static struct jv attr_path(const struct jv *item, struct st_str path)
{
    struct jv cur = *item;

    while (path.len) {
        const char *dot = memchr(path.ptr, '.', path.len);
        struct st_str key = { path.ptr, dot ? (size_t)(dot - path.ptr) : path.len };
        const struct jv *v = cur.kind == JV_DICT ? jv_dict_get(cur.u.d, key) : NULL;
        if (!v)
            return jv_undef();
        cur = *v;
        path.ptr += key.len + (dot ? 1 : 0);
        path.len -= key.len + (dot ? 1 : 0);
    }
    return cur;
}

/* The arguments after the first 'skip' positionals, for a test or filter
 * named by an argument. */
static struct jargs rest(const struct jargs *x, size_t skip)
{
    struct jargs y = { x->v, x->kw, x->n };
    size_t k = 0;

    while (k < skip && y.n > 0 && !(y.kw && y.kw[0].len)) {
        y.v++;
        if (y.kw)
            y.kw++;
        y.n--;
        k++;
    }
    return y;
}

/* The items of v, none giving none: llama.cpp's interpreter filters none
 * (select, selectattr, reject, rejectattr, map, unique) into an empty
 * list where Python's jinja2 fails; functionary v3.1 runs
 * "tools | selectattr(...)" with tools set to none. */
static enum st_status iter_none_empty(struct jrender *r, const struct jv *v, struct jlist **out)
{
    if (v->kind != JV_NONE)
        return jr_iter(r, v, out);
    *out = jv_list_new(r->a, 0);
    return *out ? ST_OK : jr_nomem(r);
}

/* min / max of a sequence (numbers or strings; undefined when empty):
 * MiniCPM5 takes [a, b] | min. */
static enum st_status min_max(struct jrender *r, const struct jv *v, bool max, struct jv *out)
{
    struct jlist *l;
    struct jv better;

    TRY(iter_none_empty(r, v, &l));
    *out = jv_undef();
    for (size_t i = 0; i < l->n; i++) {
        if (i > 0)
            TRY(jr_binop(r, max ? JO_GT : JO_LT, &l->items[i], out, &better));
        if (i == 0 || jv_truthy(&better))
            *out = l->items[i];
    }
    return ST_OK;
}

/* selectattr / rejectattr (by_attr) and select / reject. */
static enum st_status select_items(struct jrender *r, const struct jv *v, const struct jargs *x,
                                   bool by_attr, bool keep, struct jv *out)
{
    const struct jv *attr = by_attr ? jargs_get(x, 0, NULL) : NULL;
    const struct jv *test = jargs_get(x, by_attr ? 1 : 0, NULL);
    struct jargs targs = rest(x, by_attr ? 2 : 1);
    struct jlist *src, *l;
    bool ok;

    if ((by_attr && (!attr || attr->kind != JV_STR)) || (test && test->kind != JV_STR))
        return jr_fail(r, "%s needs string arguments", by_attr ? "selectattr" : "select");
    TRY(iter_none_empty(r, v, &src));
    if (!(l = jv_list_new(r->a, src->n)))
        return jr_nomem(r);
    for (size_t i = 0; i < src->n; i++) {
        struct jv item = attr ? attr_path(&src->items[i], attr->u.s) : src->items[i];
        if (test)
            TRY(jr_test(r, test->u.s, &item, &targs, &ok));
        else
            ok = jv_truthy(&item);
        if (ok == keep)
            l->items[l->n++] = src->items[i];
    }
    return out_list(l, out);
}

static enum st_status map_items(struct jrender *r, const struct jv *v, const struct jargs *x,
                                struct jv *out)
{
    const struct jv *attr = jargs_get(x, SIZE_MAX, "attribute");
    const struct jv *dflt = jargs_get(x, SIZE_MAX, "default");
    const struct jv *filter = jargs_get(x, 0, NULL);
    struct jargs fargs = rest(x, 1);
    struct jlist *src, *l;

    TRY(iter_none_empty(r, v, &src));
    if (!(l = jv_list_new(r->a, src->n)))
        return jr_nomem(r);
    for (size_t i = 0; i < src->n; i++) {
        struct jv *dst = &l->items[l->n++];
        if (attr && attr->kind == JV_STR) {
            *dst = attr_path(&src->items[i], attr->u.s);
            if (dst->kind == JV_UNDEF && dflt)
                *dst = *dflt;
        } else if (filter && filter->kind == JV_STR) {
            TRY(jr_filter(r, filter->u.s, &src->items[i], &fargs, dst));
        } else {
            return jr_fail(r, "map needs a filter name or attribute=");
        }
    }
    return out_list(l, out);
}

static enum st_status join(struct jrender *r, const struct jv *v, const struct jargs *x,
                           struct jv *out)
{
    const struct jv *sep = jargs_get(x, 0, "d"), *attr = jargs_get(x, 1, "attribute");
    struct jlist *l;
    struct st_str acc = { "", 0 }, s;

    TRY(jr_iter(r, v, &l));
    for (size_t i = 0; i < l->n; i++) {
        struct jv item = attr && attr->kind == JV_STR ? attr_path(&l->items[i], attr->u.s)
                                                      : l->items[i];
        TRY(jr_str(r, &item, &s));
        if (i && sep) {
            struct st_str ss;
            TRY(jr_str(r, sep, &ss));
            TRY(jr_concat(r, acc, ss, &acc));
        }
        TRY(jr_concat(r, acc, s, &acc));
    }
    *out = jv_str(acc);
    return ST_OK;
}

static enum st_status tojson(struct jrender *r, const struct jv *v, const struct jargs *x,
                             struct jv *out)
{
    const struct jv *ind = jargs_get(x, 0, "indent"), *sk = jargs_get(x, SIZE_MAX, "sort_keys");
    struct st_buf b;
    enum st_status rc;
    int indent = ind && ind->kind == JV_INT ? (int)(ind->u.i > 32 ? 32 : ind->u.i) : -1;

    st_buf_init(&b);
    rc = jv_write_json(&b, v, indent < 0 && ind && ind->kind == JV_INT ? 0 : indent,
                       sk && jv_truthy(sk), 0);
    if (rc == ST_OK) {
        char *p = ja_strdup(r->a, b.data ? b.data : "", b.len);
        *out = jv_str((struct st_str){ p, b.len });
        rc = p ? ST_OK : ST_ERR_NOMEM;
    }
    st_buf_fini(&b);
    if (rc == ST_ERR_INVALID)
        return jr_fail(r, "tojson: %s is not JSON serializable or too deep", jv_type_name(v->kind));
    return rc == ST_OK ? ST_OK : jr_nomem(r);
}

/* indent(width=4, first=False, blank=False): every line but the first
 * (and blank lines) gets the prefix. */
static enum st_status indent(struct jrender *r, const struct jv *v, const struct jargs *x,
                             struct jv *out)
{
    const struct jv *w = jargs_get(x, 0, "width"), *first = jargs_get(x, 1, "first");
    const struct jv *blank = jargs_get(x, 2, "blank");
    struct st_str s, pad = { "    ", 4 }, acc = { "", 0 };
    char *sp;

    TRY(jr_str(r, v, &s));
    if (w && w->kind == JV_STR) {
        pad = w->u.s;
    } else if (w && w->kind == JV_INT) {
        size_t n = w->u.i < 0 ? 0 : w->u.i > 256 ? 256 : (size_t)w->u.i;
        if (!(sp = ja_alloc(r->a, n + 1)))
            return jr_nomem(r);
        memset(sp, ' ', n);
        pad = (struct st_str){ sp, n };
    }
    for (size_t i = 0, line = 0; i <= s.len; line++) {
        const char *nl = i < s.len ? memchr(s.ptr + i, '\n', s.len - i) : NULL;
        size_t end = nl ? (size_t)(nl - s.ptr) : s.len;
        bool empty = end == i;
        if ((line > 0 || (first && jv_truthy(first))) && (!empty || (blank && jv_truthy(blank))))
            TRY(jr_concat(r, acc, pad, &acc));
        TRY(jr_concat(r, acc, (struct st_str){ s.ptr + i, end - i + (nl ? 1 : 0) }, &acc));
        if (!nl)
            break;
        i = end + 1;
    }
    *out = jv_str(acc);
    return ST_OK;
}

static enum st_status to_number(struct jrender *r, const struct jv *v, const struct jargs *x,
                                bool integer, struct jv *out)
{
    const struct jv *dflt = jargs_get(x, 0, "default");
    char tmp[64], *end;

    *out = dflt ? *dflt : integer ? jv_int(0) : jv_float(0.0);
    if (v->kind == JV_INT || v->kind == JV_BOOL) {
        int64_t i = v->kind == JV_INT ? v->u.i : v->u.b;
        *out = integer ? jv_int(i) : jv_float((double)i);
    } else if (v->kind == JV_FLOAT) {
        *out = integer ? jv_int((int64_t)v->u.f) : jv_float(v->u.f);
    } else if (v->kind == JV_STR && v->u.s.len && v->u.s.len < sizeof(tmp)) {
        memcpy(tmp, v->u.s.ptr, v->u.s.len);
        tmp[v->u.s.len] = '\0';
        double d = strtod(tmp, &end);
        if (*end == '\0')
            *out = integer ? jv_int((int64_t)d) : jv_float(d);
    }
    (void)r;
    return ST_OK;
}

static enum st_status first_last(struct jrender *r, const struct jv *v, bool last,
                                 struct jv *out)
{
    struct jlist *l;

    TRY(jr_iter(r, v, &l));
    *out = l->n ? l->items[last ? l->n - 1 : 0] : jv_undef();
    return ST_OK;
}

/* dictsort's arguments: case_sensitive, by ('key' or 'value'), reverse. */
static enum st_status dict_order(struct jrender *r, const struct jargs *x,
                                 struct jv_dict_order *o)
{
    const struct jv *cs = jargs_get(x, 0, "case_sensitive"), *by = jargs_get(x, 1, "by"),
                    *rev = jargs_get(x, 2, "reverse");
    o->fold = !(cs && jv_truthy(cs));
    o->reverse = rev && jv_truthy(rev);
    o->by_value = false;
    if (!by)
        return ST_OK;
    if (by->kind == JV_STR && st_str_eq_c(by->u.s, "value"))
        o->by_value = true;
    else if (by->kind != JV_STR || !st_str_eq_c(by->u.s, "key"))
        return jr_fail(r, "dictsort: you can only sort by either 'key' or 'value'");
    return ST_OK;
}

/* items / dictsort: (key, value) tuples; dictsort orders them by key (or
 * by='value') as Python's jinja2 does (numbers by value: 0 < 512 < 1024;
 * strings lowercased unless case_sensitive=true, then by code point;
 * reverse=true descending), and fails on what it cannot order (an int and
 * a string), as Python does. items of none is empty, as in llama.cpp's
 * interpreter (jinja2 raises). */
static enum st_status items(struct jrender *r, const struct jv *v, const struct jargs *x,
                            bool sorted, struct jv *out)
{
    const struct jdict *d;
    struct jlist *l;
    size_t *idx = NULL;

    if (v->kind == JV_UNDEF || (v->kind == JV_NONE && !sorted)) {
        if (!(l = jv_list_new(r->a, 0)))
            return jr_nomem(r);
        return out_list(l, out);
    }
    if (v->kind != JV_DICT)
        return jr_fail(r, "items needs a mapping");
    d = v->u.d;
    struct jv_dict_order o;
    if (sorted)
        TRY(dict_order(r, x, &o));
    if (sorted && d->n) {
        if (!(idx = ja_alloc(r->a, 2 * d->n * sizeof(*idx))))
            return jr_nomem(r);
        if (jv_dict_sort(d, &o, idx, idx + d->n) != ST_OK)
            return jr_fail(r, "dictsort: %s of different types cannot be ordered",
                           o.by_value ? "values" : "keys");
    }
    if (!(l = jv_dict_items(r->a, d, idx)))
        return jr_nomem(r);
    return out_list(l, out);
}

static enum st_status reverse_unique(struct jrender *r, const struct jv *v, bool unique,
                                     struct jv *out)
{
    struct jlist *src, *l;
    struct jv joined;

    TRY(unique ? iter_none_empty(r, v, &src) : jr_iter(r, v, &src));
    if (!(l = jv_list_new(r->a, src->n)))
        return jr_nomem(r);
    for (size_t i = 0; i < src->n; i++) {
        const struct jv *it = &src->items[unique ? i : src->n - 1 - i];
        bool dup = false;
        for (size_t k = 0; unique && k < l->n && !dup; k++)
            dup = jv_equal(&l->items[k], it);
        if (!dup)
            l->items[l->n++] = *it;
    }
    if (unique || v->kind != JV_STR)
        return out_list(l, out);
    struct jargs none = { NULL, NULL, 0 };
    joined.kind = JV_LIST;
    joined.u.l = l;
    return jr_filter(r, (struct st_str){ "join", 4 }, &joined, &none, out);
}

static enum st_status str_filter(struct jrender *r, struct st_str name, const struct jv *v,
                                 const struct jargs *x, struct jv *out, bool *done)
{
    struct st_str s, res;
    const struct jv *a0 = jargs_get(x, 0, NULL), *a1 = jargs_get(x, 1, NULL);

    *done = true;
    TRY(jr_str(r, v, &s));
    if (st_str_eq_c(name, "trim")) {
        TRY(js_strip(r, s, 3, jargs_get(x, 0, "chars"), &res));
    } else if (st_str_eq_c(name, "upper") || st_str_eq_c(name, "lower") ||
               st_str_eq_c(name, "capitalize") || st_str_eq_c(name, "title")) {
        TRY(js_case(r, s, name.ptr[0] == 'u' ? 'u' : name.ptr[0] == 'l' ? 'l' : name.ptr[0],
                    &res));
    } else if (st_str_eq_c(name, "replace")) {
        const struct jv *cnt = jargs_get(x, 2, "count");
        struct st_str o, n;
        if (!a0 || !a1)
            return jr_fail(r, "replace needs two arguments");
        TRY(jr_str(r, a0, &o));
        TRY(jr_str(r, a1, &n));
        TRY(js_replace(r, s, o, n, cnt && cnt->kind == JV_INT ? cnt->u.i : -1, &res));
    } else if (st_str_eq_c(name, "string") || st_str_eq_c(name, "safe")) {
        res = s;
    } else {
        *done = false;
        return ST_OK;
    }
    *out = jv_str(res);
    return ST_OK;
}

enum st_status jr_filter(struct jrender *r, struct st_str name, const struct jv *v,
                         const struct jargs *x, struct jv *out)
{
    bool done;

    if (st_str_eq_c(name, "length") || st_str_eq_c(name, "count")) {
        *out = jv_int(v->kind == JV_STR ? (int64_t)js_cp_len(v->u.s)
                      : v->kind == JV_LIST ? (int64_t)v->u.l->n
                      : v->kind == JV_DICT ? (int64_t)v->u.d->n : 0);
        if (v->kind != JV_STR && v->kind != JV_LIST && v->kind != JV_DICT && v->kind != JV_UNDEF)
            return jr_fail(r, "object of type '%s' has no length", jv_type_name(v->kind));
        return ST_OK;
    }
    if (st_str_eq_c(name, "default") || st_str_eq_c(name, "d")) {
        const struct jv *dv = jargs_get(x, 0, "default_value"), *b = jargs_get(x, 1, "boolean");
        bool use = v->kind == JV_UNDEF || (b && jv_truthy(b) && !jv_truthy(v));
        *out = use ? (dv ? *dv : jv_str((struct st_str){ "", 0 })) : *v;
        return ST_OK;
    }
    if (st_str_eq_c(name, "tojson"))
        return tojson(r, v, x, out);
    if (st_str_eq_c(name, "safe") && v->kind != JV_STR) {
        *out = *v;
        return ST_OK;
    }
    if (st_str_eq_c(name, "join"))
        return join(r, v, x, out);
    if (st_str_eq_c(name, "first") || st_str_eq_c(name, "last"))
        return first_last(r, v, name.ptr[0] == 'l', out);
    if (st_str_eq_c(name, "selectattr") || st_str_eq_c(name, "rejectattr"))
        return select_items(r, v, x, true, name.ptr[0] == 's', out);
    if (st_str_eq_c(name, "select") || st_str_eq_c(name, "reject"))
        return select_items(r, v, x, false, name.ptr[2] == 'l', out);
    if (st_str_eq_c(name, "map"))
        return map_items(r, v, x, out);
    if (st_str_eq_c(name, "list")) {
        struct jlist *l, *c;
        TRY(jr_iter(r, v, &l));
        if (!(c = jv_list_new(r->a, l->n)))
            return jr_nomem(r);
        if (l->n)
            memcpy(c->items, l->items, l->n * sizeof(*l->items));
        c->n = l->n;
        return out_list(c, out);
    }
    if (st_str_eq_c(name, "items") || st_str_eq_c(name, "dictsort"))
        return items(r, v, x, name.ptr[0] == 'd', out);
    if (st_str_eq_c(name, "indent"))
        return indent(r, v, x, out);
    if (st_str_eq_c(name, "int") || st_str_eq_c(name, "float"))
        return to_number(r, v, x, name.ptr[0] == 'i', out);
    if (st_str_eq_c(name, "abs")) {
        *out = v->kind == JV_INT ? jv_int(v->u.i < 0 ? -v->u.i : v->u.i)
             : v->kind == JV_FLOAT ? jv_float(fabs(v->u.f)) : *v;
        return ST_OK;
    }
    if (st_str_eq_c(name, "round")) {
        *out = v->kind == JV_FLOAT ? jv_float(round(v->u.f)) : *v;
        return ST_OK;
    }
    if (st_str_eq_c(name, "min") || st_str_eq_c(name, "max"))
        return min_max(r, v, name.ptr[1] == 'a', out);
    if (st_str_eq_c(name, "reverse") || st_str_eq_c(name, "unique"))
        return reverse_unique(r, v, name.ptr[0] == 'u', out);
    TRY(str_filter(r, name, v, x, out, &done));
    if (done)
        return ST_OK;
    return jr_fail(r, "unknown filter '%.*s'", (int)name.len, name.ptr);
}
