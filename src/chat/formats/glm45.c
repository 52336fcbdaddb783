/* glm45.c -- the GLM-4.5 / GLM-4.5-Air / GLM-4.6 chat template
 * (zai-org; transcribed in tests/e2e/tokenizer_ref/templates/glm45.jinja),
 * written out in C. The comments quote the Jinja.
 *
 *   [gMASK]<sop>                        once, at the very start
 *   <|system|>\n# Tools ... <tools>\n   with tools: each tool as tojson, one a
 *     {tool}\n...</tools>\n\n...        line, then the call-format text
 *     </tool_call>                      (tools_tail), no newline after it
 *   <|system|>\n{content}               a system message, where it stands
 *   <|user|>\n{content}[/nothink]       "/nothink" when enable_thinking is
 *                                       false and the text does not end so
 *   <|assistant|>\n<think>{r}</think>   r: reasoning_content (or the text
 *     [\n{content}]                     before "</think>" in the content),
 *     [\n<tool_call>{name}\n            kept only after the last user
 *       <arg_key>{k}</arg_key>\n        message, else "<think></think>";
 *       <arg_value>{v}</arg_value>\n    content and reasoning stripped;
 *       ...</tool_call>]...             string values raw, others tojson
 *   <|observation|>\n<tool_response>\n  a run of tool messages shares one
 *     {content}\n</tool_response>...    <|observation|>
 *   <|assistant|>[\n<think></think>]    the generation prompt; the empty
 *                                       block when enable_thinking is false
 *
 * Turns have no closing token: the next turn's opening ends them, which is
 * why <|user|> and <|observation|> end generation (tok/tokenizer.c).
 *
 * Where the template would print Python's "None" (a null content) we
 * print "" as every other renderer does; where it would fail (tool-call
 * arguments given as a JSON string, which OpenAI clients send), the string
 * is parsed into an object first, as vLLM and llama.cpp do. Unknown roles
 * render nothing, as in the template.
 */
#include <string.h>

#include "chat/formats/calls.h"
#include "chat/formats/internal.h"
#include "chat/json/json.h"

static const char tools_head[] =
    "<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user "
    "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n";
static const char tools_tail[] =
    "</tools>\n\nFor each function call, output the function name and arguments within the "
    "following XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n"
    "<arg_value>{arg-value-1}</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n"
    "<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>";

/* tools: NULL when absent, null or empty; calls of a message likewise. */
static bool nonempty_array(struct st_str text, struct st_str *v)
{
    return text.ptr && text.len && st_json_value(text, v) && st_json_type(*v) == ST_JSON_ARRAY &&
           st_json_truthy(*v);
}

/* {% for tool in tools %}\n{{ tool | tojson(ensure_ascii=False) }}\n{% endfor %} */
static void tools_part(struct st_out *o, struct st_str tools)
{
    struct st_str tool;
    size_t pos = 0;
    bool bad = false;

    st_out_text(o, tools_head);
    while (st_out_ok(o) && st_json_array_next(tools, &pos, &tool, &bad)) {
        st_json_out_tojson(o, tool);
        st_out_text(o, "\n");
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
    st_out_text(o, tools_tail);
}

/* s.endswith(lit) */
static bool ends_with(struct st_str s, const char *lit)
{
    size_t k = strlen(lit);
    return s.len >= k && memcmp(s.ptr + s.len - k, lit, k) == 0;
}

/* The last occurrence of lit in s (s.len = none). */
static size_t find_last(struct st_str s, const char *lit)
{
    size_t k = strlen(lit), at = s.len;
    for (size_t i = 0; s.len >= k && i + k <= s.len; i++)
        if (memcmp(s.ptr + i, lit, k) == 0)
            at = i;
    return at;
}

static size_t find_first(struct st_str s, const char *lit)
{
    const char *hit = s.len ? memmem(s.ptr, s.len, lit, strlen(lit)) : NULL;
    return hit ? (size_t)(hit - s.ptr) : s.len;
}

/* The assistant's reasoning and content:
 *   reasoning_content if it is a string; else, when '</think>' is in the
 *   content, content.split('</think>')[0].rstrip('\n').split('<think>')[-1]
 *   .lstrip('\n') and content.split('</think>')[-1].lstrip('\n'). */
static void split_think(const struct st_chat_msg *m, struct st_str *reasoning,
                        struct st_str *content)
{
    struct st_str c = chat_content(m), before;
    size_t first, last, open;

    *content = c;
    *reasoning = (struct st_str){ "", 0 };
    if (m->reasoning_content.ptr) {
        *reasoning = m->reasoning_content;
        return;
    }
    first = find_first(c, "</think>");
    if (first == c.len)
        return;
    last = find_last(c, "</think>");
    before = st_chat_strip((struct st_str){ c.ptr, first }, 2, "\n");
    open = find_last(before, "<think>");
    if (open < before.len) {
        before.ptr += open + 7;
        before.len -= open + 7;
    }
    *reasoning = st_chat_strip(before, 1, "\n");
    *content = st_chat_strip((struct st_str){ c.ptr + last + 8, c.len - last - 8 }, 1, "\n");
}

/* One argument: "<arg_key>{{ k }}</arg_key>\n<arg_value>{{ v | tojson(ensure_ascii=False)
 * if v is not string else v }}</arg_value>\n". */
static void call_arg(struct st_out *o, struct st_str k, struct st_str v)
{
    st_out_text(o, "<arg_key>");
    st_json_out_string(o, k);
    st_out_text(o, "</arg_key>\n<arg_value>");
    if (st_json_type(v) == ST_JSON_STRING)
        st_json_out_string(o, v);
    else
        st_json_out_tojson(o, v);
    st_out_text(o, "</arg_value>\n");
}

/* "\n<tool_call>" + tc.name + "\n" + arguments + "</tool_call>" per call. */
static void calls_part(struct st_out *o, struct st_str calls)
{
    struct st_str call, fn, v;
    size_t pos = 0;
    bool bad = false;

    while (st_out_ok(o) && st_json_array_next(calls, &pos, &call, &bad)) {
        if (st_json_object_get(call, "function", &fn) && st_json_truthy(fn))
            call = fn;                  /* {%- set tc = tc.function %} */
        st_out_text(o, "\n<tool_call>");
        if (st_json_object_get(call, "name", &v))
            st_json_out_text(o, v);
        st_out_text(o, "\n");
        if (st_json_object_get(call, "arguments", &v))
            st_chat_call_args(o, v, call_arg);
        st_out_text(o, "</tool_call>");
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
}

/* An assistant turn; keep: it comes after the last user message. */
static void assistant_turn(struct st_out *o, const struct st_chat_msg *m, bool keep)
{
    struct st_str reasoning, content, calls;

    st_out_text(o, "<|assistant|>");
    split_think(m, &reasoning, &content);
    if (keep && reasoning.len) {
        st_out_text(o, "\n<think>");
        chat_put(o, st_chat_strip(reasoning, 3, NULL));
        st_out_text(o, "</think>");
    } else {
        st_out_text(o, "\n<think></think>");
    }
    content = st_chat_strip(content, 3, NULL);
    if (content.len) {
        st_out_text(o, "\n");
        chat_put(o, content);
    }
    if (nonempty_array(m->tool_calls, &calls))
        calls_part(o, calls);
}

/* One message; last_user: index of the last user message (-1: none). */
static void message(struct st_out *o, const struct st_chat_req *req, size_t i, long last_user)
{
    const struct st_chat_msg *m = &req->msgs[i];
    struct st_str c = chat_content(m);

    if (chat_role_is(m, "user")) {
        st_out_text(o, "<|user|>\n");
        chat_put(o, c);
        if (req->enable_thinking == 0 && !ends_with(c, "/nothink"))
            st_out_text(o, "/nothink");
    } else if (chat_role_is(m, "assistant")) {
        assistant_turn(o, m, (long)i > last_user);
    } else if (chat_role_is(m, "tool")) {
        if (i == 0 || !chat_role_is(&req->msgs[i - 1], "tool"))
            st_out_text(o, "<|observation|>");
        st_out_text(o, "\n<tool_response>\n");
        chat_put(o, c);
        st_out_text(o, "\n</tool_response>");
    } else if (chat_role_is(m, "system")) {
        st_out_text(o, "<|system|>\n");
        chat_put(o, c);
    }
}

/* The request's tools and every message's tool_calls must be JSON arrays
 * (or null) before anything is rendered. */
static enum st_status check_json(const struct st_chat_req *req, struct st_err *err)
{
    struct st_str v;

    if (req->tools.ptr && req->tools.len &&
        (!st_json_value(req->tools, &v) ||
         (st_json_type(v) != ST_JSON_ARRAY && st_json_type(v) != ST_JSON_NULL)))
        return st_err_set(err, ST_ERR_INVALID, "chat template: tools is not a JSON array");
    for (size_t i = 0; i < req->n_msgs; i++)
        if (req->msgs[i].tool_calls.ptr && req->msgs[i].tool_calls.len &&
            (!st_json_value(req->msgs[i].tool_calls, &v) ||
             (st_json_type(v) != ST_JSON_ARRAY && st_json_type(v) != ST_JSON_NULL)))
            return st_err_set(err, ST_ERR_INVALID,
                              "chat template: message %zu: tool_calls is not a JSON array", i);
    return ST_OK;
}

enum st_status st_chat_render_glm45(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err)
{
    struct st_str tools;
    long last_user = -1;
    struct st_out o;

    (void)t;
    ST_TRY(check_json(req, err));
    for (size_t i = 0; i < req->n_msgs; i++)
        if (chat_role_is(&req->msgs[i], "user"))
            last_user = (long)i;
    st_out_init(&o, out);
    st_out_text(&o, "[gMASK]<sop>");
    if (nonempty_array(req->tools, &tools))
        tools_part(&o, tools);
    for (size_t i = 0; i < req->n_msgs && st_out_ok(&o); i++)
        message(&o, req, i, last_user);
    if (req->add_generation_prompt)
        st_out_text(&o, req->enable_thinking == 0 ? "<|assistant|>\n<think></think>"
                                                  : "<|assistant|>");
    enum st_status rc = st_out_finish(&o);
    if (rc == ST_ERR_INVALID)
        return st_err_set(err, rc, "chat template: malformed tools or tool_calls JSON");
    return rc;
}

/* ---- the reply hook -------------------------------------------------------- */

/*
 * GLM-4.5's tool call body, as the reply parser reads it
 * (reply/parse.c, opts.glm; docs/API.md "Tool calls and reasoning"):
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
 */

/* The GLM typing rule (chat/formats/calls.h). */
bool st_chat_glm45_raw(struct st_str type)
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

/* The end of the value starting at s[i]: the first "</arg_value>" followed
 * by another "<arg_key>" or the body's end; n if none. */
static size_t arg_value_end(const char *s, size_t i, size_t n)
{
    static const char close[] = "</arg_value>";

    for (size_t e; (e = st_chat_find(s, i, n, LIT(close))) < n; i = e + 1) {
        size_t k = st_chat_blanks(s, e + sizeof(close) - 1, n);
        if (k == n || st_chat_at(s, k, n, LIT("<arg_key>")))
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
    size_t ke = st_chat_find(s, ks, n, LIT("</arg_key>")), vs, ve;
    struct st_str key, val, type;

    if (ke == n)
        return false;
    vs = st_chat_blanks(s, ke + sizeof("</arg_key>") - 1, n);
    if (!st_chat_at(s, vs, n, LIT("<arg_value>")))
        return false;
    vs += sizeof("<arg_value>") - 1;
    if ((ve = arg_value_end(s, vs, n)) == n)
        return false;
    key = st_chat_trim((struct st_str){ s + ks, ke - ks });
    if (!key.len)
        return false;
    val = (struct st_str){ s + vs, ve - vs };
    *i = ve + sizeof("</arg_value>") - 1;
    if (!st_chat_param_type(tools, name, key, &type))
        type.ptr = NULL;
    return st_chat_put_arg(out, first, key, val, !st_chat_glm45_raw(type), true);
}

bool st_chat_glm45_call(struct st_str body, struct st_str tools, struct st_buf *out,
                        size_t *name_len)
{
    const char *s = body.ptr;
    size_t n = body.len, i = st_chat_blanks(s, 0, n), ne = i;
    struct st_str name;
    bool first = true;

    while (ne < n && !st_chat_is_blank(s[ne]) && s[ne] != '<' && s[ne] != '>')
        ne++;
    if (ne == i)
        return false;
    name = (struct st_str){ s + i, ne - i };
    if (st_buf_append(out, name.ptr, name.len) != ST_OK || st_buf_append(out, LIT("{")) != ST_OK)
        return false;
    *name_len = name.len;
    for (i = st_chat_blanks(s, ne, n); st_chat_at(s, i, n, LIT("<arg_key>"));
         i = st_chat_blanks(s, i, n)) {
        if (!pair(body, &i, tools, name, first, out))
            return false;
        first = false;
    }
    return i == n && st_buf_append(out, LIT("}")) == ST_OK;
}

/* ---- the call grammar's hook (chat/formats/calls.h) ---- */

/* <tool_call>NAME\n PAIRS </tool_call>: the body is key/value pairs and
 * ends the call itself (no POST); a name starting with '{' would read as a
 * JSON call. */
const struct st_chat_call_frame st_chat_glm45_call_frame = {
    .open = "", .pre_head = "<tool_call>", .pre_tail = "\n",
    .post = "", .sep = "", .close = "", .name_refused = "<> ", .name_no_brace = true,
};

const struct st_chat_call_tags st_chat_glm45_call_tags = {
    ST_CHAT_LIT("<arg_key>"), ST_CHAT_LIT("</tool_call>"), ST_CHAT_LIT("</arg_key>\n<arg_value>"),
    ST_CHAT_LIT("</arg_value>"), ST_CHAT_LIT("</arg_value>\n"), 0,
};
