/* xml.c -- one tagged tool call body -> name and JSON arguments:
 * Qwen3-Coder's (opts.xml_calls) and GLM-4.5's (opts.glm); parse.c
 * calls them, docs/API.md "Tool calls and reasoning". The body is what
 * stands between "<tool_call>" and "</tool_call>".
 *
 * Qwen3-Coder (template: chat/formats/qwen3coder.c):
 *
 *   <function=NAME>
 *   <parameter=KEY>
 *   VALUE
 *   </parameter>
 *   ...
 *   </function>
 *
 * Blanks may stand between the parts. A value runs to the first
 * "</parameter>" that is followed (after blanks) by "<parameter=" or
 * "</function>", so a value may itself contain "</parameter>". The
 * template writes "\n" after the opening tag and before the closing one:
 * one leading and one trailing newline are removed, nothing else.
 * Typing: with the request's tools, the parameter's schema type decides.
 * "string" (or a type list holding it), no type, an unknown tool or key:
 * the value stays a JSON string. Any other type: the value is taken as
 * JSON when it parses as one value (booleans also as Python's True /
 * False, which the template prints in the history), else it stays a
 * string.
 *
 * GLM-4.5 (template: chat/formats/glm45.c):
 *
 *   NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n...
 *
 * Read here: blanks, NAME (no blanks, '<' or '>'), blanks, then pairs
 * "<arg_key>" KEY "</arg_key>" blanks "<arg_value>" VALUE "</arg_value>"
 * with blanks between them, and nothing else. KEY is trimmed of blanks and
 * must not be empty. A value runs to the first "</arg_value>" that is
 * followed (after blanks) by "<arg_key>" or the end of the body, so it may
 * itself hold "</arg_value>".
 * Typing (vLLM's glm45 parser's rule): the template writes string values
 * raw and every other value as JSON, so a value whose parameter's schema
 * type is "string" (or a type list holding it) stays a string, byte for
 * byte; any other value (another type, no type, an unknown tool or key) is
 * taken as JSON when, trimmed of blanks, it parses as one value (Python's
 * True / False / None also read as true / false / null), else it stays a
 * string. Unlike vLLM, string values are not trimmed: the template adds no
 * blanks around them, so a file's trailing newline is the file's.
 *
 * Both: arguments come out as Python's json.dumps writes them
 * ({"k": v, "k2": v2}, the model's JSON text kept), as vLLM's parsers
 * produce. tool_choice's grammar for these formats (grammar/call_grammar_xml.c)
 * mirrors these rules (the typing through st_reply_xml_typed_json /
 * st_reply_glm_raw, the value's end, the newlines), so that every call it
 * lets the model write parses here into arguments valid against the
 * tool's schema.
 */
#include <string.h>

#include "chat/json/json.h"
#include "reply/internal.h"

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

/* JSON string 's' equals the bytes name[0..len). */
static bool json_str_is(struct st_str s, const char *name, size_t len, struct st_buf *tmp)
{
    st_buf_reset(tmp);
    return st_json_type(s) == ST_JSON_STRING && st_json_string_append(s, tmp) == ST_OK &&
           tmp->len == len && memcmp(tmp->data ? tmp->data : "", name, len) == 0;
}

bool st_reply_param_type(struct st_str tools, struct st_str name, struct st_str key,
                         struct st_str *type)
{
    struct st_str tool, fn, v, props, k, field;
    struct st_buf tmp;
    size_t pos = 0, kpos;
    bool bad = false, found = false;

    if (!tools.ptr || !st_json_value(tools, &v) || st_json_type(v) != ST_JSON_ARRAY)
        return false;
    tools = v;
    st_buf_init(&tmp);
    while (!found && st_json_array_next(tools, &pos, &tool, &bad)) {
        if (st_json_object_get(tool, "function", &fn))
            tool = fn;
        if (!st_json_object_get(tool, "name", &v) || !json_str_is(v, name.ptr, name.len, &tmp))
            continue;
        if (!st_json_object_get(tool, "parameters", &v) ||
            !st_json_object_get(v, "properties", &props))
            break;
        for (kpos = 0; !found && st_json_object_next(props, &kpos, &k, &field);)
            if (json_str_is(k, key.ptr, key.len, &tmp))
                found = st_json_object_get(field, "type", type);
        break;                          /* the first tool of that name decides */
    }
    st_buf_fini(&tmp);
    return found;
}

/* Whether a value of JSON Schema type 'type' is written as JSON (not a
 * string): a type name other than "string", or a list without "string". */
bool st_reply_xml_typed_json(struct st_str type)
{
    static const char *const names[] = { "integer", "number", "boolean", "object", "array",
                                         "null", NULL };
    struct st_buf tmp;
    struct st_str e;
    size_t pos = 0, i;
    bool bad = false, json = false;

    st_buf_init(&tmp);
    if (st_json_type(type) == ST_JSON_STRING) {
        for (i = 0; names[i] && !json; i++)
            json = json_str_is(type, names[i], strlen(names[i]), &tmp);
    } else if (st_json_type(type) == ST_JSON_ARRAY) {
        while (st_json_array_next(type, &pos, &e, &bad)) {
            if (json_str_is(e, LIT("string"), &tmp)) {
                json = false;
                break;
            }
            json = json || st_reply_xml_typed_json(e);
        }
    }
    st_buf_fini(&tmp);
    return json;
}

/* The GLM typing rule (internal.h). */
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

/* Append [", "] "KEY": VALUE. json: the format's typing rule reads the
 * value as JSON text when it parses, Python's True / False too (glm: the
 * value trimmed of blanks, and None as well). */
static bool put_arg(struct st_buf *out, bool first, struct st_str key, struct st_str val,
                    bool json, bool glm)
{
    struct st_str t = glm ? trim(val) : val, j;

    if ((!first && st_buf_append(out, LIT(", ")) != ST_OK) ||
        st_buf_json_str(out, key.ptr, key.len) != ST_OK || st_buf_append(out, LIT(": ")) != ST_OK)
        return false;
    if (json && (st_str_eq_c(t, "True") || st_str_eq_c(t, "False") ||
                 (glm && st_str_eq_c(t, "None"))))
        return st_buf_append(out, t.ptr[0] == 'T' ? "true" : t.ptr[0] == 'F' ? "false" : "null",
                             t.ptr[0] == 'F' ? 5 : 4) == ST_OK;
    if (json && t.len && st_json_value(t, &j))
        return st_buf_append(out, j.ptr, j.len) == ST_OK;
    return st_buf_json_str(out, val.ptr, val.len) == ST_OK;
}

/* ---- Qwen3-Coder --------------------------------------------------------- */

/* A tag name from s[i] up to ">": non-empty, no blanks or "<". Returns
 * the index of ">" or 0 (no name). */
static size_t tag_name(const char *s, size_t i, size_t n)
{
    size_t j;

    for (j = i; j < n && s[j] != '>'; j++)
        if (is_blank(s[j]) || s[j] == '<')
            return 0;
    return (j < n && j > i) ? j : 0;
}

/* The end of the value starting at s[i]: the first "</parameter>" that is
 * followed by another parameter or "</function>"; 0 if none. */
static size_t value_end(const char *s, size_t i, size_t n)
{
    static const char close[] = "</parameter>";

    for (size_t e; (e = find(s, i, n, LIT(close))) < n; i = e + 1) {
        size_t k = blanks(s, e + sizeof(close) - 1, n);
        if (at(s, k, n, LIT("<parameter=")) || at(s, k, n, LIT("</function>")))
            return e;
    }
    return 0;
}

/* One "<parameter=KEY>VALUE</parameter>" at s[*i]; appends "KEY": VALUE. */
static bool parameter(struct st_str b, size_t *i, struct st_str tools, struct st_str name,
                      bool first, struct st_buf *out)
{
    size_t ks = *i + sizeof("<parameter=") - 1, ke = tag_name(b.ptr, ks, b.len), ve;
    struct st_str key, val, type;

    if (!ke || !(ve = value_end(b.ptr, ke + 1, b.len)))
        return false;
    key.ptr = b.ptr + ks;
    key.len = ke - ks;
    val.ptr = b.ptr + ke + 1;
    val.len = ve - (ke + 1);
    if (val.len && val.ptr[0] == '\n')
        val.ptr++, val.len--;
    if (val.len && val.ptr[val.len - 1] == '\n')
        val.len--;
    *i = ve + sizeof("</parameter>") - 1;
    return put_arg(out, first, key, val,
                   st_reply_param_type(tools, name, key, &type) && st_reply_xml_typed_json(type),
                   false);
}

bool st_reply_xml_call(struct st_str body, struct st_str tools, struct st_buf *out,
                       size_t *name_len)
{
    const char *s = body.ptr;
    size_t n = body.len, i = blanks(s, 0, n), ne;
    struct st_str name;
    bool first = true;

    if (!at(s, i, n, LIT("<function=")))
        return false;
    i += sizeof("<function=") - 1;
    if (!(ne = tag_name(s, i, n)))
        return false;
    name.ptr = s + i;
    name.len = ne - i;
    if (st_buf_append(out, name.ptr, name.len) != ST_OK || st_buf_append(out, LIT("{")) != ST_OK)
        return false;
    *name_len = name.len;
    for (i = blanks(s, ne + 1, n); at(s, i, n, LIT("<parameter=")); i = blanks(s, i, n)) {
        if (!parameter(body, &i, tools, name, first, out))
            return false;
        first = false;
    }
    if (!at(s, i, n, LIT("</function>")))
        return false;
    return blanks(s, i + sizeof("</function>") - 1, n) == n &&
           st_buf_append(out, LIT("}")) == ST_OK;
}

/* ---- GLM-4.5 ------------------------------------------------------------- */

/* The end of the value starting at s[i]: the first "</arg_value>" followed
 * by another "<arg_key>" or the body's end; n if none. */
static size_t arg_value_end(const char *s, size_t i, size_t n)
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
    struct st_str key, val, type;

    if (ke == n)
        return false;
    vs = blanks(s, ke + sizeof("</arg_key>") - 1, n);
    if (!at(s, vs, n, LIT("<arg_value>")))
        return false;
    vs += sizeof("<arg_value>") - 1;
    if ((ve = arg_value_end(s, vs, n)) == n)
        return false;
    key = trim((struct st_str){ s + ks, ke - ks });
    if (!key.len)
        return false;
    val = (struct st_str){ s + vs, ve - vs };
    *i = ve + sizeof("</arg_value>") - 1;
    if (!st_reply_param_type(tools, name, key, &type))
        type.ptr = NULL;
    return put_arg(out, first, key, val, !st_reply_glm_raw(type), true);
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
