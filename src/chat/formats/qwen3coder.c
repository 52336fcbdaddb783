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

static void py_repr(struct st_out *o, struct st_str v);

/* Python repr() of a decoded string: single quotes unless it holds a ' and
 * no ", backslash and the quote escaped, control bytes as \n \r \t \xNN. */
static void py_repr_string(struct st_out *o, struct st_str v)
{
    struct st_buf s;
    char q = '\'', esc[5];

    if (!st_out_ok(o))
        return;
    st_buf_init(&s);
    st_out_check(o, st_json_string_append(v, &s));
    if (s.len && memchr(s.data, '\'', s.len) && !memchr(s.data, '"', s.len))
        q = '"';
    st_out_raw(o, &q, 1);
    for (size_t i = 0; st_out_ok(o) && i < s.len; i++) {
        unsigned char c = (unsigned char)s.data[i];
        const char *e = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                      : c == '\\' ? "\\\\" : NULL;
        if (!e && (c < 0x20 || c == 0x7f)) {
            static const char hex[] = "0123456789abcdef";
            esc[0] = '\\'; esc[1] = 'x'; esc[2] = hex[c >> 4]; esc[3] = hex[c & 15]; esc[4] = 0;
            e = esc;
        }
        if (e) {
            st_out_text(o, e);
        } else if (c == (unsigned char)q) {
            st_out_raw(o, "\\", 1);
            st_out_raw(o, &q, 1);
        } else {
            st_out_raw(o, &s.data[i], 1);
        }
    }
    st_out_raw(o, &q, 1);
    st_buf_fini(&s);
}

/* Python repr() of a list / dict: "[a, b]", "{'k': v}". */
static void py_repr_container(struct st_out *o, struct st_str v)
{
    bool obj = st_json_type(v) == ST_JSON_OBJECT, bad = false;
    struct st_str k, e;
    size_t pos = 0;
    int i = 0;

    st_out_text(o, obj ? "{" : "[");
    while (st_out_ok(o) && (obj ? st_json_object_next(v, &pos, &k, &e)
                                : st_json_array_next(v, &pos, &e, &bad))) {
        if (i++ > 0)
            st_out_text(o, ", ");
        if (obj) {
            py_repr_string(o, k);
            st_out_text(o, ": ");
        }
        py_repr(o, e);
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
    st_out_text(o, obj ? "}" : "]");
}

/* Python str() of a JSON value: strings raw; True / False / None; numbers
 * as written; containers as repr(). */
static void py_str(struct st_out *o, struct st_str v)
{
    switch (st_json_type(v)) {
    case ST_JSON_STRING: st_json_out_string(o, v); break;
    case ST_JSON_TRUE:   st_out_text(o, "True"); break;
    case ST_JSON_FALSE:  st_out_text(o, "False"); break;
    case ST_JSON_NULL:   st_out_text(o, "None"); break;
    case ST_JSON_NUMBER: chat_put(o, v); break;
    case ST_JSON_BAD:    st_out_check(o, ST_ERR_INVALID); break;
    default:             py_repr_container(o, v); break;
    }
}

static void py_repr(struct st_out *o, struct st_str v)
{
    if (st_json_type(v) == ST_JSON_STRING)
        py_repr_string(o, v);
    else
        py_str(o, v);
}

/* "{{ x | trim }}" of a JSON value. */
static void put_trimmed(struct st_out *o, struct st_str v)
{
    struct st_buf s;
    struct st_out t;

    if (!st_out_ok(o))
        return;
    st_buf_init(&s);
    st_out_init(&t, &s);
    py_str(&t, v);
    st_out_check(o, st_out_finish(&t));
    if (s.len)
        chat_put(o, st_chat_strip((struct st_str){ s.data, s.len }, 3, NULL));
    st_buf_fini(&s);
}

/* How put_tag prints a value: render_extra_keys' rule (containers tojson,
 * the rest str()), "| trim", or "| string". */
enum { V_EXTRA, V_TRIM, V_STR };

/* A tag's name: the JSON string key, or ctag when not NULL. */
static void put_tag_name(struct st_out *o, struct st_str key, const char *ctag)
{
    if (ctag)
        st_out_text(o, ctag);
    else
        st_json_out_string(o, key);
}

/* "\n<" ~ tag ~ ">" ~ text ~ "</" ~ tag ~ ">"; tag is a JSON string
 * (key) or NULL with ctag a C string. */
static void put_tag(struct st_out *o, struct st_str key, const char *ctag, struct st_str val,
                    int how)
{
    st_out_text(o, "\n<");
    put_tag_name(o, key, ctag);
    st_out_text(o, ">");
    if (how == V_TRIM)
        put_trimmed(o, val);
    else if (how == V_EXTRA && is_container(val))
        st_json_out_tojson(o, val);
    else
        py_str(o, val);
    st_out_text(o, "</");
    put_tag_name(o, key, ctag);
    st_out_text(o, ">");
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
static void extra_keys(struct st_out *o, struct st_str dict, const char *const *handled)
{
    struct st_str k, v;
    size_t pos = 0;

    if (st_json_type(dict) != ST_JSON_OBJECT)
        return;
    while (st_out_ok(o) && st_json_object_next(dict, &pos, &k, &v))
        if (!key_in(k, handled))
            put_tag(o, k, NULL, v, V_EXTRA);
}

/* One <parameter> of a tool's parameters.properties. */
static void tool_param(struct st_out *o, struct st_str name, struct st_str fields)
{
    static const char *const handled[] = { "name", "type", "description", NULL };
    struct st_str v;

    st_out_text(o, "\n<parameter>\n<name>");
    st_json_out_string(o, name);
    st_out_text(o, "</name>");
    if (st_json_object_get(fields, "type", &v))
        put_tag(o, v, "type", v, V_STR);
    if (st_json_object_get(fields, "description", &v))
        put_tag(o, v, "description", v, V_TRIM);
    extra_keys(o, fields, handled);
    st_out_text(o, "\n</parameter>");
}

/* One entry of tools, "\n<function>..</function>". */
static void tool_entry(struct st_out *o, struct st_str tool)
{
    static const char *const h_params[] = { "type", "properties", NULL };
    static const char *const h_tool[] = { "type", "name", "description", "parameters", NULL };
    struct st_str v, params, props, k;
    size_t pos = 0;

    if (st_json_object_get(tool, "function", &v))
        tool = v;                       /* {%- set tool = tool.function %} */
    st_out_text(o, "\n<function>\n<name>");
    if (st_json_object_get(tool, "name", &v))
        py_str(o, v);
    st_out_text(o, "</name>");
    if (st_json_object_get(tool, "description", &v))
        put_tag(o, v, "description", v, V_TRIM);
    st_out_text(o, "\n<parameters>");
    if (!st_json_object_get(tool, "parameters", &params))
        params.ptr = NULL, params.len = 0;
    if (params.ptr && st_json_object_get(params, "properties", &props) &&
        st_json_type(props) == ST_JSON_OBJECT)
        while (st_out_ok(o) && st_json_object_next(props, &pos, &k, &v))
            tool_param(o, k, v);
    if (params.ptr)
        extra_keys(o, params, h_params);
    st_out_text(o, "\n</parameters>");
    extra_keys(o, tool, h_tool);
    st_out_text(o, "\n</function>");
}

/* The system turn: system message and/or the tools section. */
static void system_part(struct st_out *o, const struct st_chat_req *req, struct st_str tools)
{
    bool has_system = chat_role_is(&req->msgs[0], "system");
    struct st_str tool;
    size_t pos = 0;
    bool bad = false;

    if (!has_system && !tools.ptr)
        return;
    st_out_text(o, "<|im_start|>system\n");
    if (has_system)
        chat_put(o, chat_content(&req->msgs[0]));
    else
        st_out_text(o, default_system);
    if (tools.ptr) {
        st_out_text(o, tools_head);
        while (st_out_ok(o) && st_json_array_next(tools, &pos, &tool, &bad))
            tool_entry(o, tool);
        if (bad)
            st_out_check(o, ST_ERR_INVALID);
        st_out_text(o, tools_tail);
    }
    st_out_text(o, "<|im_end|>\n");
}

/* One argument's "<parameter=KEY>\nVALUE\n</parameter>\n" lines
 * (st_chat_call_args runs it per member). */
static void call_param(struct st_out *o, struct st_str k, struct st_str v)
{
    st_out_text(o, "<parameter=");
    st_json_out_string(o, k);
    st_out_text(o, ">\n");
    if (is_container(v))
        st_json_out_tojson(o, v);
    else
        py_str(o, v);
    st_out_text(o, "\n</parameter>\n");
}

/* An assistant message with tool calls. */
static void assistant_calls(struct st_out *o, const struct st_chat_msg *m, struct st_str calls)
{
    struct st_str content = st_chat_strip(chat_content(m), 3, NULL), call, fn, v;
    size_t pos = 0;
    bool bad = false;

    st_out_text(o, "<|im_start|>");
    chat_put(o, m->role);
    if (m->content.ptr && content.len > 0) {
        st_out_text(o, "\n");
        chat_put(o, content);
        st_out_text(o, "\n");
    }
    while (st_out_ok(o) && st_json_array_next(calls, &pos, &call, &bad)) {
        if (st_json_object_get(call, "function", &fn))
            call = fn;                  /* {%- set tool_call = tool_call.function %} */
        st_out_text(o, "\n<tool_call>\n<function=");
        if (st_json_object_get(call, "name", &v))
            py_str(o, v);
        st_out_text(o, ">\n");
        if (st_json_object_get(call, "arguments", &v))
            st_chat_call_args(o, v, call_param);
        st_out_text(o, "</function>\n</tool_call>");
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
    st_out_text(o, "<|im_end|>\n");
}

/* Tool messages: the first of a run opens a user turn (unless it is the
 * first message of the loop: loop.previtem is undefined there); the last
 * of a run closes it. */
static void tool_msg(struct st_out *o, const struct st_chat_req *req, size_t i, size_t first)
{
    if (i > first && !chat_role_is(&req->msgs[i - 1], "tool"))
        st_out_text(o, "<|im_start|>user\n");
    st_out_text(o, "<tool_response>\n");
    chat_put(o, chat_content(&req->msgs[i]));
    st_out_text(o, "\n</tool_response>\n");
    if (i + 1 == req->n_msgs || !chat_role_is(&req->msgs[i + 1], "tool"))
        st_out_text(o, "<|im_end|>\n");
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
    struct st_out o;

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
    st_out_init(&o, out);
    system_part(&o, req, tools);
    for (i = first; i < req->n_msgs && st_out_ok(&o); i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        if (chat_role_is(m, "assistant") && nonempty_array(m->tool_calls, &calls))
            assistant_calls(&o, m, calls);
        else if (chat_role_is(m, "tool"))
            tool_msg(&o, req, i, first);
        else
            st_chat_im_turn(&o, m);
    }
    if (req->add_generation_prompt)
        st_out_text(&o, "<|im_start|>assistant\n");
    enum st_status rc = st_out_finish(&o);
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
