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
static enum st_status system_part(const struct st_chat_req *req, struct st_str tools,
                                  const char *default_system, struct st_buf *out)
{
    const struct st_chat_msg *m0 = &req->msgs[0];
    struct st_str system = chat_role_is(m0, "system") ? chat_content(m0)
                                                 : st_str_c(default_system ? default_system : "");
    bool has_system = chat_role_is(m0, "system") || default_system;
    enum st_status rc = ST_OK;
    struct st_str tool;
    size_t pos = 0;
    bool bad = false;

    if (!tools.ptr) {
        if (!has_system)
            return ST_OK;
        rc = st_chat_puts(out, "<|im_start|>system\n");
        if (rc == ST_OK)
            rc = st_chat_put(out, system);
        return rc == ST_OK ? st_chat_puts(out, "<|im_end|>\n") : rc;
    }
    rc = st_chat_puts(out, "<|im_start|>system\n");
    if (rc == ST_OK && has_system) {
        rc = st_chat_put(out, system);
        if (rc == ST_OK)
            rc = st_chat_puts(out, "\n\n");
    }
    if (rc == ST_OK)
        rc = st_chat_puts(out, tools_head);
    while (rc == ST_OK && st_json_array_next(tools, &pos, &tool, &bad)) {
        rc = st_chat_puts(out, "\n");
        if (rc == ST_OK)
            rc = st_json_tojson(tool, out);
    }
    if (rc == ST_OK && bad)
        rc = ST_ERR_INVALID;
    return rc == ST_OK ? st_chat_puts(out, tools_tail) : rc;
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
static enum st_status tool_call(struct st_str call, struct st_buf *out)
{
    struct st_str fn, name, args;
    enum st_status rc;

    if (st_json_object_get(call, "function", &fn) && st_json_truthy(fn))
        call = fn;                          /* {%- set tool_call = tool_call.function %} */
    rc = st_chat_puts(out, "<tool_call>\n{\"name\": \"");
    if (rc == ST_OK && st_json_object_get(call, "name", &name))
        rc = st_json_text_append(name, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\", \"arguments\": ");
    if (rc == ST_OK && st_json_object_get(call, "arguments", &args))
        rc = st_json_text_append(args, out);
    return rc == ST_OK ? st_chat_puts(out, "}\n</tool_call>") : rc;
}

static enum st_status tool_calls(struct st_str calls, bool has_content, struct st_buf *out)
{
    enum st_status rc = ST_OK;
    struct st_str call;
    size_t pos = 0, i = 0;
    bool bad = false;

    while (rc == ST_OK && st_json_array_next(calls, &pos, &call, &bad)) {
        if (i++ > 0 || has_content)
            rc = st_chat_puts(out, "\n");
        if (rc == ST_OK)
            rc = tool_call(call, out);
    }
    return (rc == ST_OK && bad) ? ST_ERR_INVALID : rc;
}

/* thinking = false (Qwen2.5): the content as given, no <think> block. */
static enum st_status assistant(const struct st_chat_req *req, size_t i, size_t lqi,
                                bool thinking, struct st_str calls, struct st_buf *out)
{
    const struct st_chat_msg *m = &req->msgs[i];
    struct st_str content = chat_content(m), reasoning = { "", 0 };
    enum st_status rc;
    bool last = i + 1 == req->n_msgs;

    if (thinking)
        split_reasoning(m, &content, &reasoning);
    rc = st_chat_puts(out, "<|im_start|>");
    if (rc == ST_OK)
        rc = st_chat_put(out, m->role);
    if (rc == ST_OK && thinking && i > lqi && (last || reasoning.len > 0)) {
        rc = st_chat_puts(out, "\n<think>\n");
        if (rc == ST_OK)
            rc = st_chat_put(out, st_chat_strip(reasoning, 3, "\n"));
        if (rc == ST_OK)
            rc = st_chat_puts(out, "\n</think>\n\n");
        if (rc == ST_OK)
            rc = st_chat_put(out, st_chat_strip(content, 1, "\n"));
    } else if (rc == ST_OK) {
        rc = st_chat_puts(out, "\n");
        if (rc == ST_OK)
            rc = st_chat_put(out, content);
    }
    if (rc == ST_OK && calls.ptr && st_json_truthy(calls))
        rc = tool_calls(calls, content.len > 0, out);
    return rc == ST_OK ? st_chat_puts(out, "<|im_end|>\n") : rc;
}

static enum st_status tool_msg(const struct st_chat_req *req, size_t i, struct st_buf *out)
{
    enum st_status rc = ST_OK;

    if (i == 0 || !chat_role_is(&req->msgs[i - 1], "tool"))
        rc = st_chat_puts(out, "<|im_start|>user");
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\n<tool_response>\n");
    if (rc == ST_OK)
        rc = st_chat_put(out, chat_content(&req->msgs[i]));
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\n</tool_response>");
    if (rc == ST_OK && (i + 1 == req->n_msgs || !chat_role_is(&req->msgs[i + 1], "tool")))
        rc = st_chat_puts(out, "<|im_end|>\n");
    return rc;
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
    enum st_status rc;
    size_t i, lqi;

    rc = parse_inputs(req, &tools, err);
    if (rc != ST_OK)
        return rc;
    rc = system_part(req, tools, qwen25 ? ST_CHAT_QWEN25_SYSTEM : NULL, out);
    lqi = last_query_index(req);
    for (i = 0; i < req->n_msgs && rc == ST_OK; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        if (chat_role_is(m, "user") || (chat_role_is(m, "system") && i > 0)) {
            rc = st_chat_im_turn(m, out);
        } else if (chat_role_is(m, "assistant")) {
            calls.ptr = NULL;
            if (m->tool_calls.ptr && !st_json_value(m->tool_calls, &calls))
                calls.ptr = NULL;
            rc = assistant(req, i, lqi, !qwen25, calls, out);
        } else if (chat_role_is(m, "tool")) {
            rc = tool_msg(req, i, out);
        }
    }
    if (rc == ST_OK && req->add_generation_prompt) {
        rc = st_chat_puts(out, "<|im_start|>assistant\n");
        if (rc == ST_OK && t->think_open)
            rc = st_chat_puts(out, "<think>\n");
        else if (rc == ST_OK && t->thinking_flag && req->enable_thinking == 0)
            rc = st_chat_puts(out, "<think>\n\n</think>\n\n");
    }
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
