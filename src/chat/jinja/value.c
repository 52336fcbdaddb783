/* value.c -- the interpreter's values: a tagged union over undefined,
 * none, bool, int, float, str, list, dict (a namespace is a dict with a
 * flag), macros, built-in functions and the loop object. Python's
 * truthiness, equality and order; lists and dicts grow in the render's
 * arena. A dict's keys are values, as in Python: which keys are hashable,
 * lookup by value or by string, items() as tuples, and the sorted() order
 * of the keys that dictsort and tojson(sort_keys=true) use.
 */
#include <string.h>

#include "chat/jinja/internal.h"

struct jv jv_undef(void) { return (struct jv){ .kind = JV_UNDEF }; }
struct jv jv_none(void) { return (struct jv){ .kind = JV_NONE }; }
struct jv jv_bool(bool b) { return (struct jv){ .kind = JV_BOOL, .u.b = b }; }
struct jv jv_int(int64_t i) { return (struct jv){ .kind = JV_INT, .u.i = i }; }
struct jv jv_float(double f) { return (struct jv){ .kind = JV_FLOAT, .u.f = f }; }
struct jv jv_str(struct st_str s) { return (struct jv){ .kind = JV_STR, .u.s = s }; }

const char *jv_type_name(enum jv_kind k)
{
    switch (k) {
    case JV_UNDEF: return "undefined";
    case JV_NONE:  return "none";
    case JV_BOOL:  return "bool";
    case JV_INT:   return "int";
    case JV_FLOAT: return "float";
    case JV_STR:   return "string";
    case JV_LIST:  return "list";
    case JV_DICT:  return "dict";
    case JV_MACRO: return "macro";
    case JV_FUNC:  return "function";
    case JV_LOOP:  return "loop";
    }
    return "value";
}

bool jv_truthy(const struct jv *v)
{
    switch (v->kind) {
    case JV_UNDEF:
    case JV_NONE:  return false;
    case JV_BOOL:  return v->u.b;
    case JV_INT:   return v->u.i != 0;
    case JV_FLOAT: return v->u.f != 0.0;
    case JV_STR:   return v->u.s.len > 0;
    case JV_LIST:  return v->u.l->n > 0;
    case JV_DICT:  return v->u.d->n > 0 || v->u.d->ns;
    default:       return true;
    }
}

static bool is_num(const struct jv *v)
{
    return v->kind == JV_INT || v->kind == JV_FLOAT || v->kind == JV_BOOL;
}

static double num(const struct jv *v)
{
    return v->kind == JV_FLOAT ? v->u.f : v->kind == JV_INT ? (double)v->u.i : (double)v->u.b;
}

bool jv_equal(const struct jv *a, const struct jv *b)
{
    if (is_num(a) && is_num(b)) {
        if (a->kind != JV_FLOAT && b->kind != JV_FLOAT)
            return (a->kind == JV_INT ? a->u.i : a->u.b) == (b->kind == JV_INT ? b->u.i : b->u.b);
        return num(a) == num(b);
    }
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case JV_UNDEF:
    case JV_NONE: return true;
    case JV_STR:  return st_str_eq(a->u.s, b->u.s);
    case JV_LIST:
        if (a->u.l->n != b->u.l->n)
            return false;
        for (size_t i = 0; i < a->u.l->n; i++)
            if (!jv_equal(&a->u.l->items[i], &b->u.l->items[i]))
                return false;
        return true;
    case JV_DICT:
        if (a->u.d->n != b->u.d->n)
            return false;
        for (size_t i = 0; i < a->u.d->n; i++) {
            const struct jv *o = jv_dict_find(b->u.d, &a->u.d->keys[i]);
            if (!o || !jv_equal(&a->u.d->vals[i], o))
                return false;
        }
        return true;
    case JV_MACRO: return a->u.macro == b->u.macro;
    case JV_FUNC:  return a->u.fn == b->u.fn;
    default:       return a->u.loop == b->u.loop;
    }
}

struct jlist *jv_list_new(struct jarena *a, size_t cap)
{
    struct jlist *l = ja_alloc(a, sizeof(*l));

    if (l && cap) {
        l->items = ja_alloc(a, cap * sizeof(*l->items));
        if (!l->items)
            return NULL;
        l->cap = cap;
    }
    return l;
}

enum st_status jv_list_push(struct jarena *a, struct jlist *l, struct jv v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        struct jv *items = ja_alloc(a, cap * sizeof(*items));
        if (!items)
            return ST_ERR_NOMEM;
        if (l->n)
            memcpy(items, l->items, l->n * sizeof(*items));
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = v;
    return ST_OK;
}

static int str_cmp(struct st_str a, struct st_str b)
{
    size_t m = a.len < b.len ? a.len : b.len;
    int c = m ? memcmp(a.ptr, b.ptr, m) : 0;

    return c ? c : (a.len < b.len ? -1 : a.len > b.len ? 1 : 0);
}

/* Strings by code point, which UTF-8 byte order preserves; ints exactly. */
bool jv_compare(const struct jv *a, const struct jv *b, int *c)
{
    if (is_num(a) && is_num(b)) {
        if (a->kind != JV_FLOAT && b->kind != JV_FLOAT) {
            int64_t x = a->kind == JV_INT ? a->u.i : a->u.b;
            int64_t y = b->kind == JV_INT ? b->u.i : b->u.b;
            *c = (x > y) - (x < y);
        } else {
            double x = num(a), y = num(b);
            *c = (x > y) - (x < y);
        }
        return true;
    }
    if (a->kind == JV_STR && b->kind == JV_STR) {
        *c = str_cmp(a->u.s, b->u.s);
        return true;
    }
    return false;
}

struct jdict *jv_dict_new(struct jarena *a, size_t cap)
{
    struct jdict *d = ja_alloc(a, sizeof(*d));

    if (d && cap) {
        d->keys = ja_alloc(a, cap * sizeof(*d->keys));
        d->vals = ja_alloc(a, cap * sizeof(*d->vals));
        if (!d->keys || !d->vals)
            return NULL;
        d->cap = cap;
    }
    return d;
}

static bool hashable(const struct jv *v, int depth)
{
    switch (v->kind) {
    case JV_UNDEF:
    case JV_NONE:
    case JV_BOOL:
    case JV_INT:
    case JV_FLOAT:
    case JV_STR:
        return true;
    case JV_LIST:
        if (!v->u.l->tuple || depth > 64)
            return false;
        for (size_t i = 0; i < v->u.l->n; i++)
            if (!hashable(&v->u.l->items[i], depth + 1))
                return false;
        return true;
    default:
        return false;
    }
}

bool jv_hashable(const struct jv *v)
{
    return hashable(v, 0);
}

struct jv *jv_dict_get(const struct jdict *d, struct st_str k)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->keys[i].kind == JV_STR && st_str_eq(d->keys[i].u.s, k))
            return &d->vals[i];
    return NULL;
}

struct jv *jv_dict_find(const struct jdict *d, const struct jv *k)
{
    if (k->kind == JV_STR)
        return jv_dict_get(d, k->u.s);
    if (!jv_hashable(k))
        return NULL;
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(&d->keys[i], k))
            return &d->vals[i];
    return NULL;
}

enum st_status jv_dict_set(struct jarena *a, struct jdict *d, struct st_str k, struct jv v)
{
    return jv_dict_put(a, d, jv_str(k), v);
}

/* An existing equal key keeps its form, as in Python ({1: 'a', True: 'b'}
 * is {1: 'b'}). */
enum st_status jv_dict_put(struct jarena *a, struct jdict *d, struct jv k, struct jv v)
{
    struct jv *have = jv_dict_find(d, &k);

    if (have) {
        *have = v;
        return ST_OK;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        struct jv *keys = ja_alloc(a, cap * sizeof(*keys));
        struct jv *vals = ja_alloc(a, cap * sizeof(*vals));
        if (!keys || !vals)
            return ST_ERR_NOMEM;
        if (d->n) {
            memcpy(keys, d->keys, d->n * sizeof(*keys));
            memcpy(vals, d->vals, d->n * sizeof(*vals));
        }
        d->keys = keys;
        d->vals = vals;
        d->cap = cap;
    }
    d->keys[d->n] = k;
    d->vals[d->n++] = v;
    return ST_OK;
}

struct jlist *jv_dict_items(struct jarena *a, const struct jdict *d, const size_t *order)
{
    struct jlist *l = jv_list_new(a, d->n);

    if (!l)
        return NULL;
    for (size_t i = 0; i < d->n; i++) {
        size_t k = order ? order[i] : i;
        struct jlist *pair = jv_list_new(a, 2);
        if (!pair)
            return NULL;
        pair->items[0] = d->keys[k];
        pair->items[1] = d->vals[k];
        pair->n = 2;
        pair->tuple = true;
        l->items[l->n++] = (struct jv){ .kind = JV_LIST, .u.l = pair };
    }
    return l;
}

static int fold_cmp(struct st_str a, struct st_str b)
{
    for (size_t i = 0; i < a.len && i < b.len; i++) {
        unsigned char x = (unsigned char)a.ptr[i], y = (unsigned char)b.ptr[i];
        x = x >= 'A' && x <= 'Z' ? (unsigned char)(x | 32) : x;
        y = y >= 'A' && y <= 'Z' ? (unsigned char)(y | 32) : y;
        if (x != y)
            return x < y ? -1 : 1;
    }
    return a.len < b.len ? -1 : a.len > b.len ? 1 : 0;
}

static bool key_cmp(const struct jv *a, const struct jv *b, bool fold, int *c)
{
    if (fold && a->kind == JV_STR && b->kind == JV_STR) {
        *c = fold_cmp(a->u.s, b->u.s);
        return true;
    }
    return jv_compare(a, b, c);
}

/* Bottom-up merge sort: n log n comparisons however large the dict. */
enum st_status jv_dict_sort(const struct jdict *d, const struct jv_dict_order *o, size_t *idx,
                            size_t *tmp)
{
    const struct jv *by = o->by_value ? d->vals : d->keys;
    size_t n = d->n;
    int c;

    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (!key_cmp(&by[idx[j]], &by[idx[i]], o->fold, &c))
                    return ST_ERR_INVALID;
                /* reversed, equal entries still keep their order (Python's reverse=True) */
                tmp[k++] = (o->reverse ? c > 0 : c < 0) ? idx[j++] : idx[i++];
            }
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, n * sizeof(*idx));
    }
    return ST_OK;
}
