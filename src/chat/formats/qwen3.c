/* qwen3.c -- the Qwen3 chat template (hybrid thinking, tools), written
 * out in C. Mirrors the Jinja of Qwen3's tokenizer_config.json statement by
 * statement (docs/design/ENGINE.md 5.3); the comments quote the template.
 *
 *  - tools: a system turn with the "# Tools" section (each tool | tojson);
 *    a leading system message's content goes first in that turn.
 *  - last_query_index: the last user message that is not a wrapped
 *    <tool_response>; assistant turns after it keep their reasoning
 *    ("<think>\n{reasoning}\n</think>\n\n{content}"), earlier ones lose it.
 *  - reasoning: reasoning_content if given, else split out of content at
 *    </think>.
 *  - tool calls: "<tool_call>\n{"name": "...", "arguments": ...}\n</tool_call>".
 *  - tool messages: wrapped in <tool_response>, consecutive ones share one
 *    "<|im_start|>user" turn.
 *  - generation prompt: "<|im_start|>assistant\n", plus the empty think block
 *    when enable_thinking is false (or "<think>\n" for Thinking-2507).
 *
 * Qwen2.5's template is the same program less the thinking parts (assistant
 * content is rendered as given, nothing split at </think>), plus a default
 * system prompt (ST_CHAT_QWEN25_SYSTEM) when the first message is not a
 * system message -- in its own turn, or ahead of the tools section.
 */
#include <string.h>

#include "chat/formats/calls.h"
#include "chat/formats/internal.h"
#include "chat/json/json.h"

static const char tools_head[] =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
static const char tools_tail[] =
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

static bool starts_with(struct st_str s, const char *p)
{
    size_t n = strlen(p);
    return s.len >= n && memcmp(s.ptr, p, n) == 0;
}

static bool ends_with(struct st_str s, const char *p)
{
    size_t n = strlen(p);
    return s.len >= n && memcmp(s.ptr + s.len - n, p, n) == 0;
}

/* Offset of the first / last occurrence of p in s, or SIZE_MAX. */
static size_t find_first(struct st_str s, const char *p)
{
    const char *hit = s.len ? memmem(s.ptr, s.len, p, strlen(p)) : NULL;
    return hit ? (size_t)(hit - s.ptr) : SIZE_MAX;
}

static size_t find_last(struct st_str s, const char *p)
{
    size_t n = strlen(p), i;

    for (i = s.len >= n ? s.len - n + 1 : 0; i-- > 0;)
        if (memcmp(s.ptr + i, p, n) == 0)
            return i;
    return SIZE_MAX;
}

static struct st_str sub(struct st_str s, size_t from, size_t to)
{
    struct st_str r = { s.ptr + from, to - from };
    return r;
}

/* {%- if tools %} ... {%- else %} system turn {%- endif %}
 * default_system: the text used when messages[0] is not a system message
 * (Qwen2.5), or NULL (Qwen3: then there is no system text at all). */
static void system_part(struct st_out *o, const struct st_chat_req *req, struct st_str tools,
                        const char *default_system)
{
    const struct st_chat_msg *m0 = &req->msgs[0];
    struct st_str system = chat_role_is(m0, "system") ? chat_content(m0)
                                                 : st_str_c(default_system ? default_system : "");
    bool has_system = chat_role_is(m0, "system") || default_system;
    struct st_str tool;
    size_t pos = 0;
    bool bad = false;

    if (!tools.ptr) {
        if (has_system) {
            st_out_text(o, "<|im_start|>system\n");
            chat_put(o, system);
            st_out_text(o, "<|im_end|>\n");
        }
        return;
    }
    st_out_text(o, "<|im_start|>system\n");
    if (has_system) {
        chat_put(o, system);
        st_out_text(o, "\n\n");
    }
    st_out_text(o, tools_head);
    while (st_out_ok(o) && st_json_array_next(tools, &pos, &tool, &bad)) {
        st_out_text(o, "\n");
        st_json_out_tojson(o, tool);
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
    st_out_text(o, tools_tail);
}

/* ns.last_query_index: scanning backwards, the first user message whose
 * content is not "<tool_response>...</tool_response>"; else len - 1. */
static size_t last_query_index(const struct st_chat_req *req)
{
    size_t i;

    for (i = req->n_msgs; i-- > 0;) {
        struct st_str c = chat_content(&req->msgs[i]);
        if (chat_role_is(&req->msgs[i], "user") &&
            !(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>")))
            return i;
    }
    return req->n_msgs - 1;
}

/* content / reasoning_content of an assistant message, as the template
 * computes them. */
static void split_reasoning(const struct st_chat_msg *m, struct st_str *content,
                            struct st_str *reasoning)
{
    struct st_str c = chat_content(m), before;
    size_t end, start;

    *content = c;
    reasoning->ptr = "";
    reasoning->len = 0;
    if (m->reasoning_content.ptr) {
        *reasoning = m->reasoning_content;
        return;
    }
    if ((end = find_last(c, "</think>")) == SIZE_MAX)
        return;
    /* content.split('</think>')[-1].lstrip('\n') */
    *content = st_chat_strip(sub(c, end + 8, c.len), 1, "\n");
    /* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
    before = st_chat_strip(sub(c, 0, find_first(c, "</think>")), 2, "\n");
    start = find_last(before, "<think>");
    if (start != SIZE_MAX)
        before = sub(before, start + 7, before.len);
    *reasoning = st_chat_strip(before, 1, "\n");
}

/* One entry of message.tool_calls. */
static void tool_call(struct st_out *o, struct st_str call)
{
    struct st_str fn, name, args;

    if (st_json_object_get(call, "function", &fn) && st_json_truthy(fn))
        call = fn;                          /* {%- set tool_call = tool_call.function %} */
    st_out_text(o, "<tool_call>\n{\"name\": \"");
    if (st_json_object_get(call, "name", &name))
        st_json_out_text(o, name);
    st_out_text(o, "\", \"arguments\": ");
    if (st_json_object_get(call, "arguments", &args))
        st_json_out_text(o, args);
    st_out_text(o, "}\n</tool_call>");
}

static void tool_calls(struct st_out *o, struct st_str calls, bool has_content)
{
    struct st_str call;
    size_t pos = 0, i = 0;
    bool bad = false;

    while (st_out_ok(o) && st_json_array_next(calls, &pos, &call, &bad)) {
        if (i++ > 0 || has_content)
            st_out_text(o, "\n");
        tool_call(o, call);
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
}

/* thinking = false (Qwen2.5): the content as given, no <think> block. */
static void assistant(struct st_out *o, const struct st_chat_req *req, size_t i, size_t lqi,
                      bool thinking, struct st_str calls)
{
    const struct st_chat_msg *m = &req->msgs[i];
    struct st_str content = chat_content(m), reasoning = { "", 0 };
    bool last = i + 1 == req->n_msgs;

    if (thinking)
        split_reasoning(m, &content, &reasoning);
    st_out_text(o, "<|im_start|>");
    chat_put(o, m->role);
    if (thinking && i > lqi && (last || reasoning.len > 0)) {
        st_out_text(o, "\n<think>\n");
        chat_put(o, st_chat_strip(reasoning, 3, "\n"));
        st_out_text(o, "\n</think>\n\n");
        chat_put(o, st_chat_strip(content, 1, "\n"));
    } else {
        st_out_text(o, "\n");
        chat_put(o, content);
    }
    if (calls.ptr && st_json_truthy(calls))
        tool_calls(o, calls, content.len > 0);
    st_out_text(o, "<|im_end|>\n");
}

static void tool_msg(struct st_out *o, const struct st_chat_req *req, size_t i)
{
    if (i == 0 || !chat_role_is(&req->msgs[i - 1], "tool"))
        st_out_text(o, "<|im_start|>user");
    st_out_text(o, "\n<tool_response>\n");
    chat_put(o, chat_content(&req->msgs[i]));
    st_out_text(o, "\n</tool_response>");
    if (i + 1 == req->n_msgs || !chat_role_is(&req->msgs[i + 1], "tool"))
        st_out_text(o, "<|im_end|>\n");
}

/* Validate the JSON inputs up front; tools "[]"/null count as no tools. */
static enum st_status parse_inputs(const struct st_chat_req *req, struct st_str *tools,
                                   struct st_err *err)
{
    struct st_str v;
    size_t i;

    tools->ptr = NULL;
    tools->len = 0;
    if (req->tools.ptr && req->tools.len) {
        if (!st_json_value(req->tools, &v) ||
            (st_json_type(v) != ST_JSON_ARRAY && st_json_type(v) != ST_JSON_NULL))
            return st_err_set(err, ST_ERR_INVALID, "chat template: tools is not a JSON array");
        if (st_json_truthy(v))
            *tools = v;
    }
    for (i = 0; i < req->n_msgs; i++) {
        if (!req->msgs[i].tool_calls.ptr)
            continue;
        if (!st_json_value(req->msgs[i].tool_calls, &v) ||
            (st_json_type(v) != ST_JSON_ARRAY && st_json_type(v) != ST_JSON_NULL))
            return st_err_set(err, ST_ERR_INVALID,
                              "chat template: message %zu: tool_calls is not a JSON array", i);
    }
    return ST_OK;
}

enum st_status st_chat_render_qwen3(const struct st_chat_tmpl *t,
                                    const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err)
{
    bool qwen25 = t->kind == ST_CHAT_QWEN25;
    struct st_str tools, calls;
    struct st_out o;

    ST_TRY(parse_inputs(req, &tools, err));
    st_out_init(&o, out);
    system_part(&o, req, tools, qwen25 ? ST_CHAT_QWEN25_SYSTEM : NULL);
    size_t lqi = last_query_index(req);
    for (size_t i = 0; i < req->n_msgs; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        if (chat_role_is(m, "user") || (chat_role_is(m, "system") && i > 0)) {
            st_chat_im_turn(&o, m);
        } else if (chat_role_is(m, "assistant")) {
            calls.ptr = NULL;
            if (m->tool_calls.ptr && !st_json_value(m->tool_calls, &calls))
                calls.ptr = NULL;
            assistant(&o, req, i, lqi, !qwen25, calls);
        } else if (chat_role_is(m, "tool")) {
            tool_msg(&o, req, i);
        }
    }
    if (req->add_generation_prompt) {
        st_out_text(&o, "<|im_start|>assistant\n");
        if (t->think_open)
            st_out_text(&o, "<think>\n");
        else if (t->thinking_flag && req->enable_thinking == 0)
            st_out_text(&o, "<think>\n\n</think>\n\n");
    }
    enum st_status rc = st_out_finish(&o);
    if (rc == ST_ERR_INVALID)
        return st_err_set(err, rc, "chat template: malformed tools or tool_calls JSON");
    return rc;
}

/* ---- the call grammar's hook (chat/formats/calls.h) ---- */

/* Hermes: "<tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>"
 * (Qwen3, Qwen2.5). */
const struct st_chat_call_frame st_chat_qwen3_call_frame = {
    .open = "", .pre_head = "<tool_call>\n{\"name\": \"", .pre_tail = "\", \"arguments\": ",
    .post = "}\n</tool_call>", .sep = "", .close = "",
};
