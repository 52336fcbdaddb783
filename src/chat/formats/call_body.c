/* call_body.c -- what the reply hooks of the tagged call formats
 * (qwen3coder.c st_chat_qwen3coder_call, glm45.c st_chat_glm45_call)
 * share: scanning a call body, a parameter's schema type in the request's
 * tools, and one "KEY": VALUE of the arguments.
 *
 * Both: arguments come out as Python's json.dumps writes them
 * ({"k": v, "k2": v2}, the model's JSON text kept), as vLLM's parsers
 * produce. tool_choice's grammar for these formats (grammar/call_grammar_xml.c)
 * mirrors these rules (the typing through st_chat_qwen3coder_typed_json /
 * st_chat_glm45_raw, the value's end, the newlines), so that every call it
 * lets the model write parses into arguments valid against the
 * tool's schema.
 */
#include <string.h>

#include "chat/formats/calls.h"
#include "chat/formats/internal.h"
#include "chat/json/json.h"

bool st_chat_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t st_chat_blanks(const char *s, size_t i, size_t n)
{
    while (i < n && st_chat_is_blank(s[i]))
        i++;
    return i;
}

bool st_chat_at(const char *s, size_t i, size_t n, const char *lit, size_t k)
{
    return n - i >= k && memcmp(s + i, lit, k) == 0;
}

struct st_str st_chat_trim(struct st_str v)
{
    size_t a = st_chat_blanks(v.ptr, 0, v.len), b = v.len;
    while (b > a && st_chat_is_blank(v.ptr[b - 1]))
        b--;
    return (struct st_str){ v.ptr + a, b - a };
}

/* The first occurrence of lit in s[i..n), or n. */
size_t st_chat_find(const char *s, size_t i, size_t n, const char *lit, size_t k)
{
    const char *hit = n - i >= k ? memmem(s + i, n - i, lit, k) : NULL;
    return hit ? (size_t)(hit - s) : n;
}

/* JSON string 's' equals the bytes name[0..len). */
bool st_chat_json_str_is(struct st_str s, const char *name, size_t len, struct st_buf *tmp)
{
    st_buf_reset(tmp);
    return st_json_type(s) == ST_JSON_STRING && st_json_string_append(s, tmp) == ST_OK &&
           tmp->len == len && memcmp(tmp->data ? tmp->data : "", name, len) == 0;
}

bool st_chat_param_type(struct st_str tools, struct st_str name, struct st_str key,
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
        if (!st_json_object_get(tool, "name", &v) ||
            !st_chat_json_str_is(v, name.ptr, name.len, &tmp))
            continue;
        if (!st_json_object_get(tool, "parameters", &v) ||
            !st_json_object_get(v, "properties", &props))
            break;
        for (kpos = 0; !found && st_json_object_next(props, &kpos, &k, &field);)
            if (st_chat_json_str_is(k, key.ptr, key.len, &tmp))
                found = st_json_object_get(field, "type", type);
        break;                          /* the first tool of that name decides */
    }
    st_buf_fini(&tmp);
    return found;
}

/* Append [", "] "KEY": VALUE. json: the format's typing rule reads the
 * value as JSON text when it parses, Python's True / False too (glm: the
 * value trimmed of blanks, and None as well). */
bool st_chat_put_arg(struct st_buf *out, bool first, struct st_str key, struct st_str val,
                     bool json, bool glm)
{
    struct st_str t = glm ? st_chat_trim(val) : val, j;

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
