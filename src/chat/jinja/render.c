/* render.c -- what every part of a render shares: errors naming the
 * line, the scope chain (lookup, set), str() of a value into the arena,
 * iteration (a list's items, a dict's keys, a string's characters), call
 * arguments and the step and depth guard every node passes. It calls
 * nothing above it, so the evaluator, the statements, filters, tests and
 * methods all build on it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "chat/jinja/internal.h"

enum st_status jr_fail(struct jrender *r, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return st_err_set(r->err, ST_ERR_INVALID, "chat template: line %d, column %d: %s", r->line,
                      r->col, msg);
}

enum st_status jr_nomem(struct jrender *r)
{
    if (r->a->used + 4096 >= r->a->cap)
        return jr_fail(r, "the template used more than %zu bytes of memory", r->a->cap);
    return st_err_set(r->err, ST_ERR_NOMEM, "chat template: out of memory");
}

enum st_status jr_enter(struct jrender *r, const struct jnode *n)
{
    r->line = n->line;
    r->col = n->col;
    if (++r->steps > r->lim->max_steps)
        return jr_fail(r, "the template ran more than %llu steps",
                       (unsigned long long)r->lim->max_steps);
    if (++r->depth > r->lim->max_depth)
        return jr_fail(r, "the template nests deeper than %d", r->lim->max_depth);
    return ST_OK;
}

struct jv *jr_lookup(struct jrender *r, struct st_str name)
{
    for (struct jscope *s = r->scope; s; s = s->parent) {
        struct jv *v = jv_dict_get(s->vars, name);
        if (v)
            return v;
    }
    return NULL;
}

enum st_status jr_set(struct jrender *r, struct st_str name, struct jv v)
{
    return jv_dict_set(r->a, r->scope->vars, name, v) == ST_OK ? ST_OK : jr_nomem(r);
}

enum st_status jr_str(struct jrender *r, const struct jv *v, struct st_str *out)
{
    struct st_buf b;
    char *p;

    if (v->kind == JV_STR) {
        *out = v->u.s;
        return ST_OK;
    }
    st_buf_init(&b);
    if (jv_write_str(&b, v) != ST_OK) {
        st_buf_fini(&b);
        return jr_nomem(r);
    }
    p = ja_strdup(r->a, b.data ? b.data : "", b.len);
    out->ptr = p;
    out->len = b.len;
    st_buf_fini(&b);
    return p ? ST_OK : jr_nomem(r);
}

/* The code points of s as one-character strings. */
enum st_status jr_chars(struct jrender *r, struct st_str s, struct jlist **out)
{
    struct jlist *l = jv_list_new(r->a, s.len);

    if (!l)
        return jr_nomem(r);
    for (size_t i = 0; i < s.len;) {
        size_t k = 1;
        while (i + k < s.len && ((unsigned char)s.ptr[i + k] & 0xC0) == 0x80)
            k++;
        if (jv_list_push(r->a, l, jv_str((struct st_str){ s.ptr + i, k })) != ST_OK)
            return jr_nomem(r);
        i += k;
    }
    *out = l;
    return ST_OK;
}

enum st_status jr_iter(struct jrender *r, const struct jv *v, struct jlist **out)
{
    struct jlist *l;

    switch (v->kind) {
    case JV_LIST:
        *out = v->u.l;
        return ST_OK;
    case JV_UNDEF:
        *out = jv_list_new(r->a, 0);
        return *out ? ST_OK : jr_nomem(r);
    case JV_STR:
        return jr_chars(r, v->u.s, out);
    case JV_DICT:
        if (!(l = jv_list_new(r->a, v->u.d->n)))
            return jr_nomem(r);
        for (size_t i = 0; i < v->u.d->n; i++)
            l->items[l->n++] = v->u.d->keys[i];
        *out = l;
        return ST_OK;
    default:
        return jr_fail(r, "'%s' is not iterable", jv_type_name(v->kind));
    }
}

const struct jv *jargs_get(const struct jargs *x, size_t pos, const char *name)
{
    size_t k = 0;

    for (size_t i = 0; i < x->n; i++) {
        if (x->kw && x->kw[i].len) {
            if (name && st_str_eq_c(x->kw[i], name))
                return &x->v[i];
        } else if (k++ == pos) {
            return &x->v[i];
        }
    }
    return NULL;
}
