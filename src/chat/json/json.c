/* json.c -- just enough JSON for the chat templates, without a DOM.
 *
 * Tools and tool calls reach the renderer as JSON text. The templates need
 * three things from it: walk arrays, pick object members, and print values
 * back the way Jinja's tojson filter does. Values are spans of the input;
 * skip() validates as it goes (RFC 8259 grammar, nesting depth <= 64 so a
 * hostile body cannot exhaust the stack).
 */
#include <string.h>

#include "chat/json/json.h"
#include "tok/unicode/unicode.h"

#define MAX_DEPTH 64

static size_t blanks(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

static size_t skip_value(const char *p, size_t i, size_t n, int depth);

/* Past the closing quote of the string starting at p[i] == '"'; 0 = bad. */
static size_t skip_string(const char *p, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            if (++i >= n)
                return 0;
            if (p[i] == 'u') {
                size_t k;
                for (k = 1; k <= 4; k++)
                    if (i + k >= n || !strchr("0123456789abcdefABCDEF", p[i + k]) || !p[i + k])
                        return 0;
                i += 4;
            } else if (!strchr("\"\\/bfnrt", p[i]) || !p[i]) {
                return 0;
            }
        }
    }
    return 0;
}

static size_t skip_number(const char *p, size_t i, size_t n)
{
    size_t start = i, digits;

    if (i < n && p[i] == '-')
        i++;
    for (digits = i; i < n && p[i] >= '0' && p[i] <= '9'; i++)
        ;
    if (i == digits)
        return 0;
    if (i < n && p[i] == '.') {
        for (digits = ++i; i < n && p[i] >= '0' && p[i] <= '9'; i++)
            ;
        if (i == digits)
            return 0;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        for (digits = i; i < n && p[i] >= '0' && p[i] <= '9'; i++)
            ;
        if (i == digits)
            return 0;
    }
    return i > start ? i : 0;
}

/* Array or object starting at p[i]; returns the index past the closer. */
static size_t skip_container(const char *p, size_t i, size_t n, int depth)
{
    char close = p[i] == '[' ? ']' : '}';
    bool obj = close == '}', first = true;

    if (depth >= MAX_DEPTH)
        return 0;
    for (i = blanks(p, i + 1, n); i < n; first = false) {
        if (p[i] == close)
            return i + 1;
        if (!first) {
            if (p[i] != ',')
                return 0;
            i = blanks(p, i + 1, n);
        }
        if (obj) {
            if (i >= n || p[i] != '"' || !(i = skip_string(p, i, n)))
                return 0;
            i = blanks(p, i, n);
            if (i >= n || p[i] != ':')
                return 0;
            i = blanks(p, i + 1, n);
        }
        if (!(i = skip_value(p, i, n, depth + 1)))
            return 0;
        i = blanks(p, i, n);
    }
    return 0;
}

static size_t skip_value(const char *p, size_t i, size_t n, int depth)
{
    if (i >= n)
        return 0;
    switch (p[i]) {
    case '"':
        return skip_string(p, i, n);
    case '[':
    case '{':
        return skip_container(p, i, n, depth);
    case 't':
        return (n - i >= 4 && !memcmp(p + i, "true", 4)) ? i + 4 : 0;
    case 'f':
        return (n - i >= 5 && !memcmp(p + i, "false", 5)) ? i + 5 : 0;
    case 'n':
        return (n - i >= 4 && !memcmp(p + i, "null", 4)) ? i + 4 : 0;
    default:
        return skip_number(p, i, n);
    }
}

enum st_json_type st_json_type(struct st_str v)
{
    if (!v.ptr || v.len == 0)
        return ST_JSON_BAD;
    switch (v.ptr[0]) {
    case '"': return ST_JSON_STRING;
    case '[': return ST_JSON_ARRAY;
    case '{': return ST_JSON_OBJECT;
    case 't': return ST_JSON_TRUE;
    case 'f': return ST_JSON_FALSE;
    case 'n': return ST_JSON_NULL;
    default:  return ST_JSON_NUMBER;
    }
}

bool st_json_value(struct st_str text, struct st_str *v)
{
    size_t i, end;

    if (!text.ptr)
        return false;
    i = blanks(text.ptr, 0, text.len);
    end = skip_value(text.ptr, i, text.len, 0);
    if (!end || blanks(text.ptr, end, text.len) != text.len)
        return false;
    v->ptr = text.ptr + i;
    v->len = end - i;
    return true;
}

bool st_json_array_next(struct st_str arr, size_t *pos, struct st_str *elem, bool *bad)
{
    size_t i = *pos ? *pos : 1, end;

    *bad = false;
    i = blanks(arr.ptr, i, arr.len);
    if (i < arr.len && arr.ptr[i] == ',')
        i = blanks(arr.ptr, i + 1, arr.len);
    if (i >= arr.len || arr.ptr[i] == ']')
        return false;
    end = skip_value(arr.ptr, i, arr.len, 1);
    if (!end) {
        *bad = true;
        return false;
    }
    elem->ptr = arr.ptr + i;
    elem->len = end - i;
    *pos = end;
    return true;
}

/* Walk the members of a validated object: key span (with quotes) and value. */
static bool object_next(struct st_str obj, size_t *pos, struct st_str *key, struct st_str *val)
{
    size_t i = blanks(obj.ptr, *pos ? *pos : 1, obj.len), end;

    if (i < obj.len && obj.ptr[i] == ',')
        i = blanks(obj.ptr, i + 1, obj.len);
    if (i >= obj.len || obj.ptr[i] != '"')
        return false;
    end = skip_string(obj.ptr, i, obj.len);
    key->ptr = obj.ptr + i;
    key->len = end - i;
    i = blanks(obj.ptr, blanks(obj.ptr, end, obj.len) + 1, obj.len);
    end = skip_value(obj.ptr, i, obj.len, 1);
    if (!end)
        return false;
    val->ptr = obj.ptr + i;
    val->len = end - i;
    *pos = end;
    return true;
}

bool st_json_object_next(struct st_str obj, size_t *pos, struct st_str *key, struct st_str *val)
{
    return st_json_type(obj) == ST_JSON_OBJECT && object_next(obj, pos, key, val);
}

bool st_json_object_get(struct st_str obj, const char *key, struct st_str *val)
{
    struct st_str k, v;
    struct st_buf b;
    size_t pos = 0;
    bool found = false;

    if (st_json_type(obj) != ST_JSON_OBJECT)
        return false;
    st_buf_init(&b);
    while (!found && object_next(obj, &pos, &k, &v)) {
        st_buf_reset(&b);
        if (st_json_string_append(k, &b) == ST_OK && b.len == strlen(key) &&
            memcmp(b.data, key, b.len) == 0) {
            *val = v;
            found = true;
        }
    }
    st_buf_fini(&b);
    return found;
}

static unsigned hex4(const char *p)
{
    unsigned v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        char c = p[i];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

/* One escape at s[i] == '\\'; appends its bytes; returns chars consumed. */
static size_t unescape(const char *s, size_t i, size_t end, struct st_buf *out,
                       enum st_status *rc)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char enc[4];
    unsigned cp;

    if (s[i + 1] != 'u') {
        *rc = st_buf_append(out, &to[strchr(from, s[i + 1]) - from], 1);
        return 2;
    }
    cp = hex4(s + i + 2);
    if (cp >= 0xD800 && cp <= 0xDBFF && i + 11 < end && s[i + 6] == '\\' &&
        s[i + 7] == 'u') {
        unsigned lo = hex4(s + i + 8);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            *rc = st_buf_append(out, enc, st_utf8_encode(cp, enc));
            return 12;
        }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        cp = ST_UNI_REPLACEMENT;            /* lone surrogate */
    *rc = st_buf_append(out, enc, st_utf8_encode(cp, enc));
    return 6;
}

enum st_status st_json_string_append(struct st_str v, struct st_buf *out)
{
    enum st_status rc = ST_OK;
    size_t i = 1, run = 1, end = v.len - 1;   /* inside the quotes */

    if (st_json_type(v) != ST_JSON_STRING)
        return ST_ERR_INVALID;
    while (i < end) {
        if (v.ptr[i] != '\\') {
            i++;
            continue;
        }
        ST_TRY(st_buf_append(out, v.ptr + run, i - run));
        i += unescape(v.ptr, i, end, out, &rc);
        if (rc != ST_OK)
            return rc;
        run = i;
    }
    return st_buf_append(out, v.ptr + run, end - run);
}

/* String v decoded into tmp, then escaped again into out the Python way. */
static enum st_status reescape(struct st_str v, struct st_buf *tmp, struct st_buf *out)
{
    ST_TRY(st_buf_append(tmp, "", 0));   /* tmp->data set, for "" too */
    ST_TRY(st_json_string_append(v, tmp));
    return st_buf_json_str(out, tmp->data, tmp->len);
}

static void tojson_string(struct st_out *o, struct st_str v)
{
    struct st_buf tmp;

    if (!st_out_ok(o))
        return;
    st_buf_init(&tmp);
    st_out_check(o, reescape(v, &tmp, o->buf));
    st_buf_fini(&tmp);
}

/* Python's separators: ", " inline; with indent, "," then a new line and
 * (depth * indent) spaces. */
static void tojson_break(struct st_out *o, int indent, int depth)
{
    st_out_printf(o, "\n%*s", indent * depth, "");
}

static void tojson_at(struct st_out *o, struct st_str v, int indent, int depth);

static void tojson_container(struct st_out *o, struct st_str v, int indent, int depth)
{
    bool obj = v.ptr[0] == '{', bad = false;
    struct st_str k, e;
    size_t pos = 0;
    int i = 0;

    st_out_text(o, obj ? "{" : "[");
    while (st_out_ok(o) &&
           (obj ? object_next(v, &pos, &k, &e) : st_json_array_next(v, &pos, &e, &bad))) {
        if (i++ > 0)
            st_out_text(o, indent < 0 ? ", " : ",");
        if (indent >= 0)
            tojson_break(o, indent, depth + 1);
        if (obj) {
            tojson_string(o, k);
            st_out_text(o, ": ");
        }
        tojson_at(o, e, indent, depth + 1);
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
    if (indent >= 0 && i > 0)
        tojson_break(o, indent, depth);     /* an empty one stays "[]" / "{}" */
    st_out_text(o, obj ? "}" : "]");
}

static void tojson_at(struct st_out *o, struct st_str v, int indent, int depth)
{
    switch (st_json_type(v)) {
    case ST_JSON_STRING:
        tojson_string(o, v);
        break;
    case ST_JSON_ARRAY:
    case ST_JSON_OBJECT:
        tojson_container(o, v, indent, depth);
        break;
    case ST_JSON_BAD:
        st_out_check(o, ST_ERR_INVALID);
        break;
    default:
        st_out_raw(o, v.ptr, v.len);   /* number, true, false, null */
        break;
    }
}

/* indent < 0: inline. */
static enum st_status tojson(struct st_str v, int indent, struct st_buf *out)
{
    struct st_out o;

    st_out_init(&o, out);
    tojson_at(&o, v, indent, 0);
    return st_out_finish(&o);
}

enum st_status st_json_tojson(struct st_str v, struct st_buf *out)
{
    return tojson(v, -1, out);
}

enum st_status st_json_tojson_indent(struct st_str v, int indent, struct st_buf *out)
{
    return tojson(v, indent < 0 ? 0 : indent, out);
}

enum st_status st_json_text_append(struct st_str v, struct st_buf *out)
{
    return st_json_type(v) == ST_JSON_STRING ? st_json_string_append(v, out)
                                             : st_json_tojson(v, out);
}

bool st_json_truthy(struct st_str v)
{
    size_t i;

    switch (st_json_type(v)) {
    case ST_JSON_STRING:
        return v.len > 2;
    case ST_JSON_ARRAY:
    case ST_JSON_OBJECT:
        i = blanks(v.ptr, 1, v.len);
        return i < v.len && v.ptr[i] != ']' && v.ptr[i] != '}';
    case ST_JSON_NUMBER:
        for (i = 0; i < v.len; i++)
            if (v.ptr[i] >= '1' && v.ptr[i] <= '9')
                return true;        /* nonzero digit before any exponent */
            else if (v.ptr[i] == 'e' || v.ptr[i] == 'E')
                break;
        return false;
    case ST_JSON_TRUE:
        return true;
    default:
        return false;
    }
}

void st_json_out_string(struct st_out *o, struct st_str v)
{
    if (st_out_ok(o))
        st_out_check(o, st_json_string_append(v, o->buf));
}

void st_json_out_tojson(struct st_out *o, struct st_str v)
{
    tojson_at(o, v, -1, 0);
}

void st_json_out_tojson_indent(struct st_out *o, struct st_str v, int indent)
{
    tojson_at(o, v, indent < 0 ? 0 : indent, 0);
}

void st_json_out_text(struct st_out *o, struct st_str v)
{
    if (st_json_type(v) == ST_JSON_STRING)
        st_json_out_string(o, v);
    else
        st_json_out_tojson(o, v);
}
