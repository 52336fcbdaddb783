/* methods.c -- x.name(args) on strings (strip, split, startswith, replace,
 * upper, ...), dicts (items, keys, values, get), lists (append, pop,
 * index, count) and the loop object (cycle).
 */
#include <string.h>

#include "chat/jinja/strings.h"

static const struct jv *arg_str(struct jrender *r, const struct jargs *x, size_t pos,
                                const char *name, bool *bad)
{
    const struct jv *v = jargs_get(x, pos, name);

    *bad = v && v->kind != JV_STR;
    (void)r;
    return v;
}

static int64_t arg_int(const struct jargs *x, size_t pos, const char *name, int64_t dflt)
{
    const struct jv *v = jargs_get(x, pos, name);
    return v && v->kind == JV_INT ? v->u.i : dflt;
}

/* startswith / endswith: a string or a list (tuple) of them. */
static enum st_status affix(struct jrender *r, struct st_str s, const struct jargs *x, bool end,
                            struct jv *out)
{
    const struct jv *p = jargs_get(x, 0, NULL);
    bool hit = false;

    if (p && p->kind == JV_STR) {
        hit = end ? js_ends(s, p->u.s) : js_starts(s, p->u.s);
    } else if (p && p->kind == JV_LIST) {
        for (size_t i = 0; i < p->u.l->n && !hit; i++)
            if (p->u.l->items[i].kind == JV_STR)
                hit = end ? js_ends(s, p->u.l->items[i].u.s) : js_starts(s, p->u.l->items[i].u.s);
    } else {
        return jr_fail(r, "%s needs a string argument", end ? "endswith" : "startswith");
    }
    *out = jv_bool(hit);
    return ST_OK;
}

static enum st_status str_join(struct jrender *r, struct st_str sep, const struct jv *seq,
                               struct jv *out)
{
    struct jlist *l;
    struct st_str acc = { "", 0 }, s;

    if (!seq)
        return jr_fail(r, "join needs an iterable");
    TRY(jr_iter(r, seq, &l));
    for (size_t i = 0; i < l->n; i++) {
        TRY(jr_str(r, &l->items[i], &s));
        if (i)
            TRY(jr_concat(r, acc, sep, &acc));
        TRY(jr_concat(r, acc, s, &acc));
    }
    *out = jv_str(acc);
    return ST_OK;
}

/* str.format with '{}' placeholders only, each taking the next positional
 * argument as str() prints it (Hunyuan's template builds its tokens so;
 * llama.cpp's interpreter has the same subset). */
static enum st_status js_format(struct jrender *r, struct st_str s, const struct jargs *x,
                                struct jv *out)
{
    struct st_str acc = { "", 0 }, piece;
    size_t from = 0, arg = 0;

    for (size_t i = 0; i < s.len; i++) {
        if (s.ptr[i] != '{')
            continue;
        if (i + 1 >= s.len || s.ptr[i + 1] != '}')
            return jr_fail(r, "format supports only '{}' placeholders");
        const struct jv *a = jargs_get(x, arg++, NULL);
        if (!a)
            return jr_fail(r, "format: too few arguments");
        TRY(jr_concat(r, acc, (struct st_str){ s.ptr + from, i - from }, &acc));
        TRY(jr_str(r, a, &piece));
        TRY(jr_concat(r, acc, piece, &acc));
        from = ++i + 1;
    }
    TRY(jr_concat(r, acc, (struct st_str){ s.ptr + from, s.len - from }, &acc));
    *out = jv_str(acc);
    return ST_OK;
}

static enum st_status str_method(struct jrender *r, struct st_str s, struct st_str m,
                                 const struct jargs *x, struct jv *out, bool *found)
{
    const struct jv *a0 = jargs_get(x, 0, NULL), *a1 = jargs_get(x, 1, NULL);
    struct st_str res;
    bool bad = false;
    static const char *const strips[] = { "lstrip", "rstrip", "strip" };

    for (int k = 0; k < 3; k++)
        if (st_str_eq_c(m, strips[k])) {
            TRY(js_strip(r, s, k + 1, a0, &res));
            *out = jv_str(res);
            return ST_OK;
        }
    if (st_str_eq_c(m, "format"))
        return js_format(r, s, x, out);
    if (st_str_eq_c(m, "split"))
        return js_split(r, s, jargs_get(x, 0, "sep"), arg_int(x, 1, "maxsplit", -1), out);
    if (st_str_eq_c(m, "startswith") || st_str_eq_c(m, "endswith"))
        return affix(r, s, x, m.ptr[0] == 'e', out);
    if (st_str_eq_c(m, "upper") || st_str_eq_c(m, "lower") || st_str_eq_c(m, "title") ||
        st_str_eq_c(m, "capitalize")) {
        TRY(js_case(r, s, m.ptr[0] == 'u' ? 'u' : m.ptr[0] == 'l' ? 'l' : m.ptr[0], &res));
        *out = jv_str(res);
        return ST_OK;
    }
    if (st_str_eq_c(m, "replace")) {
        a0 = arg_str(r, x, 0, NULL, &bad);
        if (!a0 || bad || !a1 || a1->kind != JV_STR)
            return jr_fail(r, "replace needs two strings");
        TRY(js_replace(r, s, a0->u.s, a1->u.s, arg_int(x, 2, "count", -1), &res));
        *out = jv_str(res);
        return ST_OK;
    }
    if (st_str_eq_c(m, "find") || st_str_eq_c(m, "count") || st_str_eq_c(m, "index")) {
        if (!a0 || a0->kind != JV_STR)
            return jr_fail(r, "%.*s needs a string", (int)m.len, m.ptr);
        if (m.ptr[0] == 'c') {
            int64_t n = 0;
            for (struct st_str t = s; a0->u.s.len && js_find(t, a0->u.s) >= 0; n++) {
                int64_t at = js_find(t, a0->u.s);
                t.ptr += at + (int64_t)a0->u.s.len;
                t.len -= (size_t)at + a0->u.s.len;
            }
            *out = jv_int(n);
        } else {
            *out = jv_int(js_find(s, a0->u.s));
        }
        return ST_OK;
    }
    if (st_str_eq_c(m, "join"))
        return str_join(r, s, a0, out);
    if (st_str_eq_c(m, "splitlines")) {
        struct jv nl = jv_str((struct st_str){ "\n", 1 });
        TRY(js_split(r, s, &nl, -1, out));
        if (out->u.l->n && out->u.l->items[out->u.l->n - 1].u.s.len == 0)
            out->u.l->n--;
        return ST_OK;
    }
    if (st_str_eq_c(m, "isdigit") || st_str_eq_c(m, "isspace") || st_str_eq_c(m, "isalpha")) {
        bool ok = s.len > 0;
        for (size_t i = 0; i < s.len && ok; i++) {
            char c = s.ptr[i];
            ok = m.ptr[2] == 'd' ? (c >= '0' && c <= '9')
               : m.ptr[2] == 's' ? (c == ' ' || (c >= '\t' && c <= '\r'))
                                 : ((c | 32) >= 'a' && (c | 32) <= 'z');
        }
        *out = jv_bool(ok);
        return ST_OK;
    }
    *found = false;
    return ST_OK;
}

static enum st_status dict_method(struct jrender *r, struct jdict *d, struct st_str m,
                                  const struct jargs *x, struct jv *out, bool *found)
{
    const struct jv *k = jargs_get(x, 0, NULL), *dflt = jargs_get(x, 1, "default");
    struct jlist *l;

    if (st_str_eq_c(m, "get")) {
        const struct jv *v = k ? jv_dict_find(d, k) : NULL;
        *out = v ? *v : dflt ? *dflt : jv_none();
        return ST_OK;
    }
    if (!st_str_eq_c(m, "items") && !st_str_eq_c(m, "keys") && !st_str_eq_c(m, "values")) {
        *found = false;
        return ST_OK;
    }
    if (m.ptr[0] == 'i') {
        l = jv_dict_items(r->a, d, NULL);
    } else if ((l = jv_list_new(r->a, d->n)) != NULL) {
        if (d->n)
            memcpy(l->items, m.ptr[0] == 'k' ? d->keys : d->vals, d->n * sizeof(*l->items));
        l->n = d->n;
    }
    if (!l)
        return jr_nomem(r);
    out->kind = JV_LIST;
    out->u.l = l;
    return ST_OK;
}

static enum st_status list_method(struct jrender *r, struct jlist *l, struct st_str m,
                                  const struct jargs *x, struct jv *out, bool *found)
{
    const struct jv *a0 = jargs_get(x, 0, NULL);

    *out = jv_none();
    if (st_str_eq_c(m, "append") && a0)
        return jv_list_push(r->a, l, *a0) == ST_OK ? ST_OK : jr_nomem(r);
    if (st_str_eq_c(m, "pop")) {
        int64_t i = a0 && a0->kind == JV_INT ? a0->u.i : -1;
        if (i < 0)
            i += (int64_t)l->n;
        if (i < 0 || i >= (int64_t)l->n)
            return jr_fail(r, "pop index out of range");
        *out = l->items[i];
        memmove(&l->items[i], &l->items[i + 1], (l->n - (size_t)i - 1) * sizeof(*l->items));
        l->n--;
        return ST_OK;
    }
    if ((st_str_eq_c(m, "index") || st_str_eq_c(m, "count")) && a0) {
        int64_t n = 0, first = -1;
        for (size_t i = 0; i < l->n; i++)
            if (jv_equal(&l->items[i], a0)) {
                n++;
                if (first < 0)
                    first = (int64_t)i;
            }
        if (m.ptr[0] == 'i' && first < 0)
            return jr_fail(r, "list.index: value not in list");
        *out = jv_int(m.ptr[0] == 'i' ? first : n);
        return ST_OK;
    }
    *found = false;
    return ST_OK;
}

enum st_status jr_method(struct jrender *r, const struct jv *obj, struct st_str name,
                         const struct jargs *x, struct jv *out, bool *found)
{
    *found = true;
    switch (obj->kind) {
    case JV_STR:  return str_method(r, obj->u.s, name, x, out, found);
    case JV_DICT:
        if (jv_dict_get(obj->u.d, name))
            break;                       /* a macro stored under that key */
        return dict_method(r, obj->u.d, name, x, out, found);
    case JV_LIST: return list_method(r, obj->u.l, name, x, out, found);
    case JV_LOOP:
        if (st_str_eq_c(name, "cycle") && x->n) {
            *out = x->v[obj->u.loop->index0 % (int64_t)x->n];
            return ST_OK;
        }
        break;
    default:
        break;
    }
    *found = false;
    return ST_OK;
}
