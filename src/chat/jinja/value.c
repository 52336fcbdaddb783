/* value.c -- the interpreter's values: a tagged union over undefined,
 * none, bool, int, float, str, list, dict (a namespace is a dict with a
 * flag), macros, built-in functions and the loop object. Python's
 * truthiness, equality, str() and repr(); lists and dicts grow in the
 * render's arena.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja/internal.h"
#include "strata/out.h"

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
enum st_status jv_dict_sort(const struct jdict *d, bool fold, size_t *idx, size_t *tmp)
{
    size_t n = d->n;
    int c;

    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (!key_cmp(&d->keys[idx[j]], &d->keys[idx[i]], fold, &c))
                    return ST_ERR_INVALID;
                tmp[k++] = c < 0 ? idx[j++] : idx[i++];
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

/* Python's repr(float): the shortest text that reads back the same. */
static void write_float(struct st_out *o, double f)
{
    char tmp[40];

    if (isnan(f)) {
        st_out_text(o, "nan");
        return;
    }
    if (isinf(f)) {
        st_out_text(o, f > 0 ? "inf" : "-inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    if (!strpbrk(tmp, ".eni"))
        strcat(tmp, ".0");
    st_out_text(o, tmp);
}

static void write_py_str(struct st_out *o, struct st_str s)
{
    char q = memchr(s.ptr, '\'', s.len) && !memchr(s.ptr, '"', s.len) ? '"' : '\'';

    st_out_raw(o, &q, 1);
    for (size_t i = 0; i < s.len && st_out_ok(o); i++) {
        char c = s.ptr[i];
        if (c == q || c == '\\')
            st_out_printf(o, "\\%c", c);
        else if (c == '\n')
            st_out_text(o, "\\n");
        else if (c == '\t')
            st_out_text(o, "\\t");
        else if (c == '\r')
            st_out_text(o, "\\r");
        else if ((unsigned char)c < 0x20 || c == 0x7F)
            st_out_printf(o, "\\x%02x", (unsigned char)c);
        else
            st_out_raw(o, &c, 1);
    }
    st_out_raw(o, &q, 1);
}

static void write_value(struct st_out *o, const struct jv *v, bool repr, int depth)
{
    if (depth > 64) {
        st_out_text(o, "...");
        return;
    }
    switch (v->kind) {
    case JV_UNDEF: break;
    case JV_NONE:  st_out_text(o, "None"); break;
    case JV_BOOL:  st_out_text(o, v->u.b ? "True" : "False"); break;
    case JV_INT:   st_out_printf(o, "%lld", (long long)v->u.i); break;
    case JV_FLOAT: write_float(o, v->u.f); break;
    case JV_STR:
        if (repr)
            write_py_str(o, v->u.s);
        else
            st_out_raw(o, v->u.s.ptr, v->u.s.len);
        break;
    case JV_LIST:
        st_out_text(o, v->u.l->tuple ? "(" : "[");
        for (size_t i = 0; i < v->u.l->n && st_out_ok(o); i++) {
            if (i)
                st_out_text(o, ", ");
            write_value(o, &v->u.l->items[i], true, depth + 1);
        }
        if (v->u.l->tuple && v->u.l->n == 1)
            st_out_text(o, ",");
        st_out_text(o, v->u.l->tuple ? ")" : "]");
        break;
    case JV_DICT:
        st_out_text(o, v->u.d->ns ? "<Namespace {" : "{");
        for (size_t i = 0; i < v->u.d->n && st_out_ok(o); i++) {
            if (i)
                st_out_text(o, ", ");
            write_value(o, &v->u.d->keys[i], true, depth + 1);
            st_out_text(o, ": ");
            write_value(o, &v->u.d->vals[i], true, depth + 1);
        }
        st_out_text(o, v->u.d->ns ? "}>" : "}");
        break;
    default:
        st_out_printf(o, "<%s>", jv_type_name(v->kind));
        break;
    }
}

static enum st_status write_top(struct st_buf *b, const struct jv *v, bool repr)
{
    struct st_out o;

    st_out_init(&o, b);
    write_value(&o, v, repr, 0);
    return st_out_finish(&o);
}

enum st_status jv_write_str(struct st_buf *b, const struct jv *v)
{
    return write_top(b, v, false);
}

enum st_status jv_write_repr(struct st_buf *b, const struct jv *v)
{
    return write_top(b, v, true);
}

static void newline(struct st_out *o, int indent, int level)
{
    st_out_printf(o, "\n%*s", indent * level, "");
}

static void write_json(struct st_out *o, const struct jv *v, int indent, bool sort_keys,
                       int depth);

/* A member name as json.dumps writes a key: a string as itself, a number,
 * bool or none as its JSON text in quotes ("512", "true"); other keys are
 * not serializable. */
static void json_key(struct st_out *o, const struct jv *k)
{
    switch (k->kind) {
    case JV_STR:
        if (st_out_ok(o))
            st_out_check(o, st_buf_json_str(o->buf, k->u.s.ptr, k->u.s.len));
        return;
    case JV_INT:
    case JV_BOOL:
    case JV_NONE:
    case JV_FLOAT:
        st_out_text(o, "\"");
        write_json(o, k, -1, false, 0);
        st_out_text(o, "\"");
        return;
    default:
        st_out_check(o, ST_ERR_INVALID);
        return;
    }
}

static void json_container(struct st_out *o, const struct jv *v, int indent, bool sort_keys,
                           int depth)
{
    bool list = v->kind == JV_LIST;
    size_t n = list ? v->u.l->n : v->u.d->n, *idx = NULL;

    st_out_text(o, list ? "[" : "{");
    if (n == 0) {
        st_out_text(o, list ? "]" : "}");
        return;
    }
    if (!list && sort_keys) {
        if (!(idx = malloc(2 * n * sizeof(*idx)))) {
            st_out_check(o, ST_ERR_NOMEM);
            return;
        }
        if (jv_dict_sort(v->u.d, false, idx, idx + n) != ST_OK) {
            free(idx);
            st_out_check(o, ST_ERR_INVALID);   /* Python: TypeError */
            return;
        }
    }
    for (size_t i = 0; i < n && st_out_ok(o); i++) {
        size_t k = idx ? idx[i] : i;
        if (i)
            st_out_text(o, indent >= 0 ? "," : ", ");
        if (indent >= 0)
            newline(o, indent, depth + 1);
        if (!list) {
            json_key(o, &v->u.d->keys[k]);
            st_out_text(o, ": ");
        }
        write_json(o, list ? &v->u.l->items[k] : &v->u.d->vals[k], indent, sort_keys, depth + 1);
    }
    free(idx);
    if (indent >= 0)
        newline(o, indent, depth);
    st_out_text(o, list ? "]" : "}");
}

static void write_json(struct st_out *o, const struct jv *v, int indent, bool sort_keys,
                       int depth)
{
    if (depth > 64) {
        st_out_check(o, ST_ERR_INVALID);
        return;
    }
    switch (v->kind) {
    case JV_NONE:
    case JV_UNDEF: st_out_text(o, "null"); break;
    case JV_BOOL:  st_out_text(o, v->u.b ? "true" : "false"); break;
    case JV_INT:   st_out_printf(o, "%lld", (long long)v->u.i); break;
    case JV_FLOAT:
        if (isnan(v->u.f))
            st_out_text(o, "NaN");
        else if (isinf(v->u.f))
            st_out_text(o, v->u.f > 0 ? "Infinity" : "-Infinity");
        else
            write_float(o, v->u.f);
        break;
    case JV_STR:
        if (st_out_ok(o))
            st_out_check(o, st_buf_json_str(o->buf, v->u.s.ptr, v->u.s.len));
        break;
    case JV_LIST:
    case JV_DICT:  json_container(o, v, indent, sort_keys, depth); break;
    default:       st_out_check(o, ST_ERR_INVALID); break;
    }
}

enum st_status jv_write_json(struct st_buf *b, const struct jv *v, int indent, bool sort_keys,
                             int depth)
{
    struct st_out o;

    st_out_init(&o, b);
    write_json(&o, v, indent, sort_keys, depth);
    return st_out_finish(&o);
}
