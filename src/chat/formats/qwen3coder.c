/* qwen3coder.c -- the Qwen3-Coder chat template (Qwen3-Coder-30B-A3B /
 * 480B-A35B Instruct), written out in C. Mirrors the published Jinja
 * statement by statement (transcribed in tests/e2e/tokenizer_ref/templates/
 * qwen3coder.jinja); the comments quote it.
 *
 *  - system turn: the first message's content if it is a system message,
 *    else (only when tools are given) "You are Qwen, a helpful AI assistant
 *    that can interact with a computer to solve tasks."; then the tools
 *    section: each tool as <function><name>..</name><description>..
 *    <parameters><parameter><name>..<type>..</parameter>..</parameters>
 *    </function>, schema keys the template does not name printed as
 *    "<key>value</key>" (render_extra_keys), then the call-format
 *    instructions.
 *  - assistant tool calls: "\n<tool_call>\n<function=NAME>\n" then per
 *    argument "<parameter=KEY>\nVALUE\n</parameter>\n", then
 *    "</function>\n</tool_call>". Arguments given as a JSON string (as
 *    OpenAI clients send them) are parsed into an object first, as vLLM and
 *    llama.cpp do; values: strings raw, objects/arrays tojson, the rest
 *    Python str() (True, False, None; numbers as written).
 *  - tool messages: "<tool_response>\n..\n</tool_response>\n", consecutive
 *    ones share one user turn.
 *  - no thinking, no reasoning_content.
 *
 * Where Python's Jinja and @huggingface/jinja differ (str() of booleans,
 * None and lists), we follow Python: that is what transformers and vLLM
 * render, hence what the model was trained on.
 */
#include <string.h>

#include "chat/formats/calls.h"
#include "chat/formats/internal.h"
#include "chat/json/json.h"

static const char default_system[] =
    "You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks.";
static const char tools_head[] =
    "\n\n# Tools\n\nYou have access to the following functions:\n\n<tools>";
static const char tools_tail[] =
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with "
    "NO suffix:\n\n<tool_call>\n<function=example_function_name>\n"
    "<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\n"
    "This is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n"
    "</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the "
    "specified format: an inner <function=...></function> block must be nested within "
    "<tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may "
    "provide optional reasoning for your function call in natural language BEFORE the function "
    "call, but NOT after\n- If there is no function call available, answer the question like "
    "normal with your current knowledge and do not tell the user about function calls\n"
    "</IMPORTANT>";

static bool is_container(struct st_str v)
{
    enum st_json_type ty = st_json_type(v);
    return ty == ST_JSON_OBJECT || ty == ST_JSON_ARRAY;
}

static enum st_status py_repr(struct st_str v, struct st_buf *out);

/* Python repr() of a decoded string: single quotes unless it holds a ' and
 * no ", backslash and the quote escaped, control bytes as \n \r \t \xNN. */
static enum st_status py_repr_string(struct st_str v, struct st_buf *out)
{
    struct st_buf s;
    enum st_status rc;
    char q = '\'', esc[5];

    st_buf_init(&s);
    rc = st_json_string_append(v, &s);
    if (rc == ST_OK && s.len && memchr(s.data, '\'', s.len) && !memchr(s.data, '"', s.len))
        q = '"';
    if (rc == ST_OK)
        rc = st_buf_append(out, &q, 1);
    for (size_t i = 0; rc == ST_OK && i < s.len; i++) {
        unsigned char c = (unsigned char)s.data[i];
        const char *e = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                      : c == '\\' ? "\\\\" : NULL;
        if (!e && (c < 0x20 || c == 0x7f)) {
            static const char hex[] = "0123456789abcdef";
            esc[0] = '\\'; esc[1] = 'x'; esc[2] = hex[c >> 4]; esc[3] = hex[c & 15]; esc[4] = 0;
            e = esc;
        }
        if (e)
            rc = st_chat_puts(out, e);
        else if (c == (unsigned char)q)
            rc = st_buf_append(out, "\\", 1) == ST_OK ? st_buf_append(out, &q, 1) : ST_ERR_NOMEM;
        else
            rc = st_buf_append(out, (const char *)&s.data[i], 1);
    }
    if (rc == ST_OK)
        rc = st_buf_append(out, &q, 1);
    st_buf_fini(&s);
    return rc;
}

/* Python repr() of a list / dict: "[a, b]", "{'k': v}". */
static enum st_status py_repr_container(struct st_str v, struct st_buf *out)
{
    bool obj = st_json_type(v) == ST_JSON_OBJECT, bad = false;
    struct st_str k, e;
    size_t pos = 0;
    int i = 0;
    enum st_status rc = st_buf_append(out, obj ? "{" : "[", 1);

    while (rc == ST_OK && (obj ? st_json_object_next(v, &pos, &k, &e)
                               : st_json_array_next(v, &pos, &e, &bad))) {
        if (i++ > 0)
            rc = st_chat_puts(out, ", ");
        if (rc == ST_OK && obj) {
            rc = py_repr_string(k, out);
            if (rc == ST_OK)
                rc = st_chat_puts(out, ": ");
        }
        if (rc == ST_OK)
            rc = py_repr(e, out);
    }
    if (rc == ST_OK && bad)
        rc = ST_ERR_INVALID;
    return rc == ST_OK ? st_buf_append(out, obj ? "}" : "]", 1) : rc;
}

/* Python str() of a JSON value: strings raw; True / False / None; numbers
 * as written; containers as repr(). */
static enum st_status py_str(struct st_str v, struct st_buf *out)
{
    switch (st_json_type(v)) {
    case ST_JSON_STRING: return st_json_string_append(v, out);
    case ST_JSON_TRUE:   return st_chat_puts(out, "True");
    case ST_JSON_FALSE:  return st_chat_puts(out, "False");
    case ST_JSON_NULL:   return st_chat_puts(out, "None");
    case ST_JSON_NUMBER: return st_buf_append(out, v.ptr, v.len);
    case ST_JSON_BAD:    return ST_ERR_INVALID;
    default:             return py_repr_container(v, out);
    }
}

static enum st_status py_repr(struct st_str v, struct st_buf *out)
{
    return st_json_type(v) == ST_JSON_STRING ? py_repr_string(v, out) : py_str(v, out);
}

/* "{{ x | trim }}" of a JSON value. */
static enum st_status put_trimmed(struct st_str v, struct st_buf *out)
{
    struct st_buf s;
    enum st_status rc;

    st_buf_init(&s);
    rc = py_str(v, &s);
    if (rc == ST_OK && s.len)
        rc = st_chat_put(out, st_chat_strip((struct st_str){ s.data, s.len }, 3, NULL));
    st_buf_fini(&s);
    return rc;
}

/* How put_tag prints a value: render_extra_keys' rule (containers tojson,
 * the rest str()), "| trim", or "| string". */
enum { V_EXTRA, V_TRIM, V_STR };

/* "\n<" ~ tag ~ ">" ~ text ~ "</" ~ tag ~ ">"; tag is a JSON string
 * (key) or NULL with ctag a C string. */
static enum st_status put_tag(struct st_str key, const char *ctag, struct st_str val,
                              int how, struct st_buf *out)
{
    enum st_status rc = st_chat_puts(out, "\n<");
    if (rc == ST_OK)
        rc = ctag ? st_chat_puts(out, ctag) : st_json_string_append(key, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, ">");
    if (rc == ST_OK)
        rc = how == V_TRIM ? put_trimmed(val, out)
           : how == V_EXTRA && is_container(val) ? st_json_tojson(val, out) : py_str(val, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "</");
    if (rc == ST_OK)
        rc = ctag ? st_chat_puts(out, ctag) : st_json_string_append(key, out);
    return rc == ST_OK ? st_chat_puts(out, ">") : rc;
}

/* Whether JSON string key is one of the NULL-terminated 'names'. */
static bool key_in(struct st_str key, const char *const *names)
{
    struct st_buf b;
    bool hit = false;

    st_buf_init(&b);
    if (st_json_string_append(key, &b) == ST_OK)
        for (; *names && !hit; names++)
            hit = b.len == strlen(*names) && memcmp(b.data ? b.data : "", *names, b.len) == 0;
    st_buf_fini(&b);
    return hit;
}

/* {{- render_extra_keys(json_dict, handled_keys) }} */
static enum st_status extra_keys(struct st_str dict, const char *const *handled,
                                 struct st_buf *out)
{
    enum st_status rc = ST_OK;
    struct st_str k, v;
    size_t pos = 0;

    if (st_json_type(dict) != ST_JSON_OBJECT)
        return ST_OK;
    while (rc == ST_OK && st_json_object_next(dict, &pos, &k, &v))
        if (!key_in(k, handled))
            rc = put_tag(k, NULL, v, V_EXTRA, out);
    return rc;
}

/* One <parameter> of a tool's parameters.properties. */
static enum st_status tool_param(struct st_str name, struct st_str fields, struct st_buf *out)
{
    static const char *const handled[] = { "name", "type", "description", NULL };
    struct st_str v;
    enum st_status rc = st_chat_puts(out, "\n<parameter>\n<name>");

    if (rc == ST_OK)
        rc = st_json_string_append(name, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "</name>");
    if (rc == ST_OK && st_json_object_get(fields, "type", &v))
        rc = put_tag(v, "type", v, V_STR, out);
    if (rc == ST_OK && st_json_object_get(fields, "description", &v))
        rc = put_tag(v, "description", v, V_TRIM, out);
    if (rc == ST_OK)
        rc = extra_keys(fields, handled, out);
    return rc == ST_OK ? st_chat_puts(out, "\n</parameter>") : rc;
}

/* One entry of tools, "\n<function>..</function>". */
static enum st_status tool_entry(struct st_str tool, struct st_buf *out)
{
    static const char *const h_params[] = { "type", "properties", NULL };
    static const char *const h_tool[] = { "type", "name", "description", "parameters", NULL };
    struct st_str v, params, props, k;
    size_t pos = 0;
    enum st_status rc;

    if (st_json_object_get(tool, "function", &v))
        tool = v;                       /* {%- set tool = tool.function %} */
    rc = st_chat_puts(out, "\n<function>\n<name>");
    if (rc == ST_OK && st_json_object_get(tool, "name", &v))
        rc = py_str(v, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "</name>");
    if (rc == ST_OK && st_json_object_get(tool, "description", &v))
        rc = put_tag(v, "description", v, V_TRIM, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\n<parameters>");
    if (!st_json_object_get(tool, "parameters", &params))
        params.ptr = NULL, params.len = 0;
    if (rc == ST_OK && params.ptr && st_json_object_get(params, "properties", &props) &&
        st_json_type(props) == ST_JSON_OBJECT)
        while (rc == ST_OK && st_json_object_next(props, &pos, &k, &v))
            rc = tool_param(k, v, out);
    if (rc == ST_OK && params.ptr)
        rc = extra_keys(params, h_params, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\n</parameters>");
    if (rc == ST_OK)
        rc = extra_keys(tool, h_tool, out);
    return rc == ST_OK ? st_chat_puts(out, "\n</function>") : rc;
}

/* The system turn: system message and/or the tools section. */
static enum st_status system_part(const struct st_chat_req *req, struct st_str tools,
                                  struct st_buf *out)
{
    bool has_system = chat_role_is(&req->msgs[0], "system");
    enum st_status rc = ST_OK;
    struct st_str tool;
    size_t pos = 0;
    bool bad = false;

    if (!has_system && !tools.ptr)
        return ST_OK;
    rc = st_chat_puts(out, "<|im_start|>system\n");
    if (rc == ST_OK)
        rc = has_system ? st_chat_put(out, chat_content(&req->msgs[0]))
                        : st_chat_puts(out, default_system);
    if (rc == ST_OK && tools.ptr) {
        rc = st_chat_puts(out, tools_head);
        while (rc == ST_OK && st_json_array_next(tools, &pos, &tool, &bad))
            rc = tool_entry(tool, out);
        if (rc == ST_OK && bad)
            rc = ST_ERR_INVALID;
        if (rc == ST_OK)
            rc = st_chat_puts(out, tools_tail);
    }
    return rc == ST_OK ? st_chat_puts(out, "<|im_end|>\n") : rc;
}

/* One argument's "<parameter=KEY>\nVALUE\n</parameter>\n" lines
 * (st_chat_call_args runs it per member). */
static enum st_status call_param(struct st_str k, struct st_str v, struct st_buf *out)
{
    enum st_status rc = st_chat_puts(out, "<parameter=");
    if (rc == ST_OK)
        rc = st_json_string_append(k, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, ">\n");
    if (rc == ST_OK)
        rc = is_container(v) ? st_json_tojson(v, out) : py_str(v, out);
    return rc == ST_OK ? st_chat_puts(out, "\n</parameter>\n") : rc;
}

/* An assistant message with tool calls. */
static enum st_status assistant_calls(const struct st_chat_msg *m, struct st_str calls,
                                      struct st_buf *out)
{
    struct st_str content = st_chat_strip(chat_content(m), 3, NULL), call, fn, v;
    enum st_status rc = st_chat_puts(out, "<|im_start|>");
    size_t pos = 0;
    bool bad = false;

    if (rc == ST_OK)
        rc = st_chat_put(out, m->role);
    if (rc == ST_OK && m->content.ptr && content.len > 0) {
        rc = st_chat_puts(out, "\n");
        if (rc == ST_OK)
            rc = st_chat_put(out, content);
        if (rc == ST_OK)
            rc = st_chat_puts(out, "\n");
    }
    while (rc == ST_OK && st_json_array_next(calls, &pos, &call, &bad)) {
        if (st_json_object_get(call, "function", &fn))
            call = fn;                  /* {%- set tool_call = tool_call.function %} */
        rc = st_chat_puts(out, "\n<tool_call>\n<function=");
        if (rc == ST_OK && st_json_object_get(call, "name", &v))
            rc = py_str(v, out);
        if (rc == ST_OK)
            rc = st_chat_puts(out, ">\n");
        if (rc == ST_OK && st_json_object_get(call, "arguments", &v))
            rc = st_chat_call_args(v, call_param, out);
        if (rc == ST_OK)
            rc = st_chat_puts(out, "</function>\n</tool_call>");
    }
    if (rc == ST_OK && bad)
        rc = ST_ERR_INVALID;
    return rc == ST_OK ? st_chat_puts(out, "<|im_end|>\n") : rc;
}

/* Tool messages: the first of a run opens a user turn (unless it is the
 * first message of the loop: loop.previtem is undefined there); the last
 * of a run closes it. */
static enum st_status tool_msg(const struct st_chat_req *req, size_t i, size_t first,
                               struct st_buf *out)
{
    enum st_status rc = ST_OK;

    if (i > first && !chat_role_is(&req->msgs[i - 1], "tool"))
        rc = st_chat_puts(out, "<|im_start|>user\n");
    if (rc == ST_OK)
        rc = st_chat_puts(out, "<tool_response>\n");
    if (rc == ST_OK)
        rc = st_chat_put(out, chat_content(&req->msgs[i]));
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\n</tool_response>\n");
    if (rc == ST_OK && (i + 1 == req->n_msgs || !chat_role_is(&req->msgs[i + 1], "tool")))
        rc = st_chat_puts(out, "<|im_end|>\n");
    return rc;
}

/* tools: NULL when absent, null or empty; calls of message i likewise. */
static bool nonempty_array(struct st_str text, struct st_str *v)
{
    return text.ptr && text.len && st_json_value(text, v) && st_json_type(*v) == ST_JSON_ARRAY &&
           st_json_truthy(*v);
}

enum st_status st_chat_render_qwen3coder(const struct st_chat_tmpl *t,
                                         const struct st_chat_req *req,
                                         struct st_buf *out, struct st_err *err)
{
    struct st_str tools = { NULL, 0 }, calls, v;
    size_t first = chat_role_is(&req->msgs[0], "system") ? 1 : 0, i;
    enum st_status rc;

    (void)t;
    if (req->tools.ptr && req->tools.len &&
        (!st_json_value(req->tools, &v) ||
         (st_json_type(v) != ST_JSON_ARRAY && st_json_type(v) != ST_JSON_NULL)))
        return st_err_set(err, ST_ERR_INVALID, "chat template: tools is not a JSON array");
    if (!nonempty_array(req->tools, &tools))
        tools.ptr = NULL;
    for (i = 0; i < req->n_msgs; i++)
        if (req->msgs[i].tool_calls.ptr &&
            (!st_json_value(req->msgs[i].tool_calls, &v) ||
             (st_json_type(v) != ST_JSON_ARRAY && st_json_type(v) != ST_JSON_NULL)))
            return st_err_set(err, ST_ERR_INVALID,
                              "chat template: message %zu: tool_calls is not a JSON array", i);
    rc = system_part(req, tools, out);
    for (i = first; i < req->n_msgs && rc == ST_OK; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        if (chat_role_is(m, "assistant") && nonempty_array(m->tool_calls, &calls))
            rc = assistant_calls(m, calls, out);
        else if (chat_role_is(m, "tool"))
            rc = tool_msg(req, i, first, out);
        else
            rc = st_chat_im_turn(m, out);
    }
    if (rc == ST_OK && req->add_generation_prompt)
        rc = st_chat_puts(out, "<|im_start|>assistant\n");
    if (rc == ST_ERR_INVALID)
        return st_err_set(err, rc, "chat template: malformed tools or tool_calls JSON");
    return rc;
}

/* ---- the reply hook -------------------------------------------------------- */

/*
 * Qwen3-Coder's tool call body, as the reply parser reads it
 * (reply/parse.c, opts.xml_calls; docs/API.md "Tool calls and reasoning"):
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
 */

/* Whether a value of JSON Schema type 'type' is written as JSON (not a
 * string): a type name other than "string", or a list without "string". */
bool st_chat_qwen3coder_typed_json(struct st_str type)
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
            json = st_chat_json_str_is(type, names[i], strlen(names[i]), &tmp);
    } else if (st_json_type(type) == ST_JSON_ARRAY) {
        while (st_json_array_next(type, &pos, &e, &bad)) {
            if (st_chat_json_str_is(e, LIT("string"), &tmp)) {
                json = false;
                break;
            }
            json = json || st_chat_qwen3coder_typed_json(e);
        }
    }
    st_buf_fini(&tmp);
    return json;
}

/* A tag name from s[i] up to ">": non-empty, no blanks or "<". Returns
 * the index of ">" or 0 (no name). */
static size_t tag_name(const char *s, size_t i, size_t n)
{
    size_t j;

    for (j = i; j < n && s[j] != '>'; j++)
        if (st_chat_is_blank(s[j]) || s[j] == '<')
            return 0;
    return (j < n && j > i) ? j : 0;
}

/* The end of the value starting at s[i]: the first "</parameter>" that is
 * followed by another parameter or "</function>"; 0 if none. */
static size_t value_end(const char *s, size_t i, size_t n)
{
    static const char close[] = "</parameter>";

    for (size_t e; (e = st_chat_find(s, i, n, LIT(close))) < n; i = e + 1) {
        size_t k = st_chat_blanks(s, e + sizeof(close) - 1, n);
        if (st_chat_at(s, k, n, LIT("<parameter=")) || st_chat_at(s, k, n, LIT("</function>")))
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
    return st_chat_put_arg(out, first, key, val,
                           st_chat_param_type(tools, name, key, &type) &&
                               st_chat_qwen3coder_typed_json(type),
                           false);
}

bool st_chat_qwen3coder_call(struct st_str body, struct st_str tools, struct st_buf *out,
                             size_t *name_len)
{
    const char *s = body.ptr;
    size_t n = body.len, i = st_chat_blanks(s, 0, n), ne;
    struct st_str name;
    bool first = true;

    if (!st_chat_at(s, i, n, LIT("<function=")))
        return false;
    i += sizeof("<function=") - 1;
    if (!(ne = tag_name(s, i, n)))
        return false;
    name.ptr = s + i;
    name.len = ne - i;
    if (st_buf_append(out, name.ptr, name.len) != ST_OK || st_buf_append(out, LIT("{")) != ST_OK)
        return false;
    *name_len = name.len;
    for (i = st_chat_blanks(s, ne + 1, n); st_chat_at(s, i, n, LIT("<parameter="));
         i = st_chat_blanks(s, i, n)) {
        if (!parameter(body, &i, tools, name, first, out))
            return false;
        first = false;
    }
    if (!st_chat_at(s, i, n, LIT("</function>")))
        return false;
    return st_chat_blanks(s, i + sizeof("</function>") - 1, n) == n &&
           st_buf_append(out, LIT("}")) == ST_OK;
}

/* ---- the call grammar's hook (chat/formats/calls.h) ---- */

/* <tool_call>\n<function=NAME>\n PARAMETERS </function>\n</tool_call>: the
 * body is tagged parameter blocks (grammar/call_grammar_xml.c). */
const struct st_chat_call_frame st_chat_qwen3coder_call_frame = {
    .open = "", .pre_head = "<tool_call>\n<function=", .pre_tail = ">\n",
    .post = "\n</tool_call>", .sep = "", .close = "", .name_refused = "<> ",
};

const struct st_chat_call_tags st_chat_qwen3coder_call_tags = {
    ST_CHAT_LIT("<parameter="), ST_CHAT_LIT("</function>"), ST_CHAT_LIT(">\n"),
    ST_CHAT_LIT("</parameter>"), ST_CHAT_LIT("\n</parameter>\n"), '\n',
};
