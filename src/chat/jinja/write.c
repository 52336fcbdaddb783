/* write.c -- values as text: Python's str() and repr() (what {{ }} and ~
 * print) and json.dumps (the tojson filter), into an st_buf.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja/internal.h"
#include "strata/out.h"

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
        if (jv_dict_sort(v->u.d, &(struct jv_dict_order){ 0 }, idx, idx + n) != ST_OK) {
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
