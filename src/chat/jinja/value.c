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
            const struct jv *o = jv_dict_get(b->u.d, a->u.d->keys[i]);
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

struct jv *jv_dict_get(const struct jdict *d, struct st_str k)
{
    for (size_t i = 0; i < d->n; i++)
        if (st_str_eq(d->keys[i], k))
            return &d->vals[i];
    return NULL;
}

enum st_status jv_dict_set(struct jarena *a, struct jdict *d, struct st_str k, struct jv v)
{
    struct jv *have = jv_dict_get(d, k);

    if (have) {
        *have = v;
        return ST_OK;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        struct st_str *keys = ja_alloc(a, cap * sizeof(*keys));
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

/* Python's repr(float): the shortest text that reads back the same. */
static enum st_status write_float(struct st_buf *b, double f)
{
    char tmp[40];

    if (isnan(f))
        return st_buf_append(b, "nan", 3);
    if (isinf(f))
        return f > 0 ? st_buf_append(b, "inf", 3) : st_buf_append(b, "-inf", 4);
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    if (!strpbrk(tmp, ".eni"))
        strcat(tmp, ".0");
    return st_buf_append(b, tmp, strlen(tmp));
}

static enum st_status write_py_str(struct st_buf *b, struct st_str s)
{
    char q = memchr(s.ptr, '\'', s.len) && !memchr(s.ptr, '"', s.len) ? '"' : '\'';
    enum st_status rc = st_buf_append(b, &q, 1);

    for (size_t i = 0; i < s.len && rc == ST_OK; i++) {
        char c = s.ptr[i];
        if (c == q || c == '\\')
            rc = st_buf_printf(b, "\\%c", c);
        else if (c == '\n')
            rc = st_buf_append(b, "\\n", 2);
        else if (c == '\t')
            rc = st_buf_append(b, "\\t", 2);
        else if (c == '\r')
            rc = st_buf_append(b, "\\r", 2);
        else if ((unsigned char)c < 0x20 || c == 0x7F)
            rc = st_buf_printf(b, "\\x%02x", (unsigned char)c);
        else
            rc = st_buf_append(b, &c, 1);
    }
    return rc == ST_OK ? st_buf_append(b, &q, 1) : rc;
}

static enum st_status write_value(struct st_buf *b, const struct jv *v, bool repr, int depth)
{
    enum st_status rc = ST_OK;

    if (depth > 64)
        return st_buf_append(b, "...", 3);
    switch (v->kind) {
    case JV_UNDEF: return ST_OK;
    case JV_NONE:  return st_buf_append(b, "None", 4);
    case JV_BOOL:  return v->u.b ? st_buf_append(b, "True", 4) : st_buf_append(b, "False", 5);
    case JV_INT:   return st_buf_printf(b, "%lld", (long long)v->u.i);
    case JV_FLOAT: return write_float(b, v->u.f);
    case JV_STR:   return repr ? write_py_str(b, v->u.s) : st_buf_append(b, v->u.s.ptr, v->u.s.len);
    case JV_LIST:
        rc = st_buf_append(b, v->u.l->tuple ? "(" : "[", 1);
        for (size_t i = 0; i < v->u.l->n && rc == ST_OK; i++) {
            if (i)
                rc = st_buf_append(b, ", ", 2);
            if (rc == ST_OK)
                rc = write_value(b, &v->u.l->items[i], true, depth + 1);
        }
        if (rc == ST_OK && v->u.l->tuple && v->u.l->n == 1)
            rc = st_buf_append(b, ",", 1);
        return rc == ST_OK ? st_buf_append(b, v->u.l->tuple ? ")" : "]", 1) : rc;
    case JV_DICT:
        rc = st_buf_append(b, v->u.d->ns ? "<Namespace {" : "{", v->u.d->ns ? 12 : 1);
        for (size_t i = 0; i < v->u.d->n && rc == ST_OK; i++) {
            if (i)
                rc = st_buf_append(b, ", ", 2);
            if (rc == ST_OK)
                rc = write_py_str(b, v->u.d->keys[i]);
            if (rc == ST_OK)
                rc = st_buf_append(b, ": ", 2);
            if (rc == ST_OK)
                rc = write_value(b, &v->u.d->vals[i], true, depth + 1);
        }
        return rc == ST_OK ? st_buf_append(b, v->u.d->ns ? "}>" : "}", v->u.d->ns ? 2 : 1) : rc;
    default:
        return st_buf_printf(b, "<%s>", jv_type_name(v->kind));
    }
}

enum st_status jv_write_str(struct st_buf *b, const struct jv *v)
{
    return write_value(b, v, false, 0);
}

enum st_status jv_write_repr(struct st_buf *b, const struct jv *v)
{
    return write_value(b, v, true, 0);
}

static enum st_status newline(struct st_buf *b, int indent, int level)
{
    enum st_status rc = st_buf_append(b, "\n", 1);

    for (int i = 0; i < indent * level && rc == ST_OK; i++)
        rc = st_buf_append(b, " ", 1);
    return rc;
}

/* Key order for sort_keys: indices of d's keys, bytewise (Python sorts by
 * code point, which UTF-8 byte order preserves). */
static void sorted_keys(const struct jdict *d, size_t *idx)
{
    for (size_t i = 0; i < d->n; i++) {
        size_t j = i;
        for (; j > 0; j--) {
            struct st_str x = d->keys[idx[j - 1]], y = d->keys[i];
            size_t m = x.len < y.len ? x.len : y.len;
            int c = memcmp(x.ptr, y.ptr, m);
            if (c < 0 || (c == 0 && x.len <= y.len))
                break;
            idx[j] = idx[j - 1];
        }
        idx[j] = i;
    }
}

static enum st_status json_container(struct st_buf *b, const struct jv *v, int indent,
                                     bool sort_keys, int depth)
{
    bool list = v->kind == JV_LIST;
    size_t n = list ? v->u.l->n : v->u.d->n, *idx = NULL;
    enum st_status rc = st_buf_append(b, list ? "[" : "{", 1);

    if (n == 0)
        return rc == ST_OK ? st_buf_append(b, list ? "]" : "}", 1) : rc;
    if (!list && sort_keys) {
        if (!(idx = malloc(n * sizeof(*idx))))
            return ST_ERR_NOMEM;
        sorted_keys(v->u.d, idx);
    }
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        size_t k = idx ? idx[i] : i;
        if (i)
            rc = st_buf_append(b, indent >= 0 ? "," : ", ", indent >= 0 ? 1 : 2);
        if (rc == ST_OK && indent >= 0)
            rc = newline(b, indent, depth + 1);
        if (rc == ST_OK && !list)
            rc = st_buf_json_str(b, v->u.d->keys[k].ptr, v->u.d->keys[k].len);
        if (rc == ST_OK && !list)
            rc = st_buf_append(b, ": ", 2);
        if (rc == ST_OK)
            rc = jv_write_json(b, list ? &v->u.l->items[k] : &v->u.d->vals[k], indent, sort_keys,
                               depth + 1);
    }
    free(idx);
    if (rc == ST_OK && indent >= 0)
        rc = newline(b, indent, depth);
    return rc == ST_OK ? st_buf_append(b, list ? "]" : "}", 1) : rc;
}

enum st_status jv_write_json(struct st_buf *b, const struct jv *v, int indent, bool sort_keys,
                             int depth)
{
    if (depth > 64)
        return ST_ERR_INVALID;
    switch (v->kind) {
    case JV_NONE:
    case JV_UNDEF: return st_buf_append(b, "null", 4);
    case JV_BOOL:  return v->u.b ? st_buf_append(b, "true", 4) : st_buf_append(b, "false", 5);
    case JV_INT:   return st_buf_printf(b, "%lld", (long long)v->u.i);
    case JV_FLOAT:
        if (isnan(v->u.f))
            return st_buf_append(b, "NaN", 3);
        if (isinf(v->u.f))
            return v->u.f > 0 ? st_buf_append(b, "Infinity", 8) : st_buf_append(b, "-Infinity", 9);
        return write_float(b, v->u.f);
    case JV_STR:   return st_buf_json_str(b, v->u.s.ptr, v->u.s.len);
    case JV_LIST:
    case JV_DICT:  return json_container(b, v, indent, sort_keys, depth);
    default:       return ST_ERR_INVALID;
    }
}
