/* reply_glm.c -- one GLM-4.5 tool call body -> name and JSON arguments
 * (reply_parse.c calls it for opts.glm; docs/API.md "Tool calls and
 * reasoning").
 *
 * The body is what stands between "<tool_call>" and "</tool_call>"; the
 * template (chat_glm45.c) writes it as
 *
 *   NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n...
 *
 * Read here: blanks, NAME (no blanks, '<' or '>'), blanks, then pairs
 * "<arg_key>" KEY "</arg_key>" blanks "<arg_value>" VALUE "</arg_value>"
 * with blanks between them, and nothing else. KEY is trimmed of blanks and
 * must not be empty. A value runs to the first "</arg_value>" that is
 * followed (after blanks) by "<arg_key>" or the end of the body, so it may
 * itself hold "</arg_value>".
 *
 * Typing (vLLM's glm45 parser's rule): the template writes string values
 * raw and every other value as JSON, so a value whose parameter's schema
 * type is "string" (or a type list holding it) stays a string, byte for
 * byte; any other value (another type, no type, an unknown tool or key) is
 * taken as JSON when, trimmed of blanks, it parses as one value (Python's
 * True / False / None also read as true / false / null), else it stays a
 * string. Unlike vLLM, string values are not trimmed: the template adds no
 * blanks around them, so a file's trailing newline is the file's.
 * Arguments come out as {"k": v, "k2": v2}, the model's JSON text kept.
 */
#include <string.h>

#include "internal.h"

#define LIT(s) s, (sizeof(s) - 1)

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t blanks(const char *s, size_t i, size_t n)
{
    while (i < n && is_blank(s[i]))
        i++;
    return i;
}

static bool at(const char *s, size_t i, size_t n, const char *lit, size_t k)
{
    return n - i >= k && memcmp(s + i, lit, k) == 0;
}

static struct st_str trim(struct st_str v)
{
    size_t a = blanks(v.ptr, 0, v.len), b = v.len;
    while (b > a && is_blank(v.ptr[b - 1]))
        b--;
    return (struct st_str){ v.ptr + a, b - a };
}

/* The first occurrence of lit in s[i..n), or n. */
static size_t find(const char *s, size_t i, size_t n, const char *lit, size_t k)
{
    const char *hit = n - i >= k ? memmem(s + i, n - i, lit, k) : NULL;
    return hit ? (size_t)(hit - s) : n;
}

bool st_reply_glm_raw(struct st_str type)
{
    struct st_str e;
    size_t pos = 0;
    bool bad = false;

    if (!type.ptr)
        return false;
    if (st_json_type(type) == ST_JSON_STRING)
        return st_str_eq_c(type, "\"string\"");
    while (st_json_type(type) == ST_JSON_ARRAY && st_json_array_next(type, &pos, &e, &bad))
        if (st_json_type(e) == ST_JSON_STRING && st_str_eq_c(e, "\"string\""))
            return true;
    return false;
}

/* Append one value as the typing rule reads it. */
static enum st_status put_value(struct st_str tools, struct st_str name, struct st_str key,
                                struct st_str val, struct st_buf *out)
{
    struct st_str type = { NULL, 0 }, j, t;

    if (!st_reply_param_type(tools, name, key, &type))
        type.ptr = NULL;
    if (!st_reply_glm_raw(type)) {
        t = trim(val);
        if (st_str_eq_c(t, "True") || st_str_eq_c(t, "False") || st_str_eq_c(t, "None"))
            return st_buf_append(out, t.ptr[0] == 'T' ? "true" : t.ptr[0] == 'F' ? "false"
                                                                                : "null",
                                 t.ptr[0] == 'F' ? 5 : 4);
        if (t.len && st_json_value(t, &j))
            return st_buf_append(out, j.ptr, j.len);
    }
    return st_buf_json_str(out, val.ptr, val.len);
}

/* The end of the value starting at s[i]: the first "</arg_value>" followed
 * by another "<arg_key>" or the body's end; n if none. */
static size_t value_end(const char *s, size_t i, size_t n)
{
    static const char close[] = "</arg_value>";

    for (size_t e; (e = find(s, i, n, LIT(close))) < n; i = e + 1) {
        size_t k = blanks(s, e + sizeof(close) - 1, n);
        if (k == n || at(s, k, n, LIT("<arg_key>")))
            return e;
    }
    return n;
}

/* One pair at s[*i] ("<arg_key>" matched there); appends "KEY": VALUE. */
static bool pair(struct st_str b, size_t *i, struct st_str tools, struct st_str name,
                 bool first, struct st_buf *out)
{
    const char *s = b.ptr;
    size_t n = b.len, ks = *i + sizeof("<arg_key>") - 1;
    size_t ke = find(s, ks, n, LIT("</arg_key>")), vs, ve;
    struct st_str key, val;

    if (ke == n)
        return false;
    vs = blanks(s, ke + sizeof("</arg_key>") - 1, n);
    if (!at(s, vs, n, LIT("<arg_value>")))
        return false;
    vs += sizeof("<arg_value>") - 1;
    if ((ve = value_end(s, vs, n)) == n)
        return false;
    key = trim((struct st_str){ s + ks, ke - ks });
    if (!key.len)
        return false;
    val = (struct st_str){ s + vs, ve - vs };
    *i = ve + sizeof("</arg_value>") - 1;
    return (first || st_buf_append(out, LIT(", ")) == ST_OK) &&
           st_buf_json_str(out, key.ptr, key.len) == ST_OK &&
           st_buf_append(out, LIT(": ")) == ST_OK &&
           put_value(tools, name, key, val, out) == ST_OK;
}

bool st_reply_glm_call(struct st_str body, struct st_str tools, struct st_buf *out,
                       size_t *name_len)
{
    const char *s = body.ptr;
    size_t n = body.len, i = blanks(s, 0, n), ne = i;
    struct st_str name;
    bool first = true;

    while (ne < n && !is_blank(s[ne]) && s[ne] != '<' && s[ne] != '>')
        ne++;
    if (ne == i)
        return false;
    name = (struct st_str){ s + i, ne - i };
    if (st_buf_append(out, name.ptr, name.len) != ST_OK || st_buf_append(out, LIT("{")) != ST_OK)
        return false;
    *name_len = name.len;
    for (i = blanks(s, ne, n); at(s, i, n, LIT("<arg_key>")); i = blanks(s, i, n)) {
        if (!pair(body, &i, tools, name, first, out))
            return false;
        first = false;
    }
    return i == n && st_buf_append(out, LIT("}")) == ST_OK;
}
