/* llama31.c -- the Llama 3.1 / 3.2 / 3.3 chat template, written out in
 * C (the published Jinja, without the builtin_tools branch, which needs the
 * caller to pass builtin_tools; OpenAI requests cannot).
 *
 *  - bos, then a system turn that is always there:
 *      [Environment: ipython\n   (only with tools)]
 *      Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n
 *      {system message|trim}
 *    date: the request's date_string, else "26 Jul 2024" (3.1, 3.3) or the
 *    local date as "%d %b %Y" (3.2, whose template calls strftime_now).
 *  - tools go into the first remaining message (tools_in_user_message,
 *    the template's default): a user turn with the JSON-call instructions,
 *    each tool as tojson(indent=4), then that message's content|trim.
 *  - an assistant message with tool_calls: exactly one call, rendered as
 *    {"name": "...", "parameters": <arguments>} (string arguments
 *    verbatim, as for Qwen; see docs/TOKENIZER.md).
 *  - tool messages: an "ipython" turn holding the content | tojson (Jinja
 *    counts a string as iterable, so a string arrives quoted).
 */
#include <string.h>
#include <time.h>

#include "chat/formats/calls.h"
#include "chat/formats/internal.h"
#include "chat/json/json.h"

static const char tools_intro[] =
    "Given the following functions, please respond with a JSON for a function call "
    "with its proper arguments that best answers the given prompt.\n\n"
    "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument "
    "name and its value}.Do not use variables.\n\n";

static enum st_status header(struct st_str role, struct st_buf *out)
{
    enum st_status rc = st_chat_puts(out, "<|start_header_id|>");
    if (rc == ST_OK)
        rc = st_chat_put(out, role);
    return rc == ST_OK ? st_chat_puts(out, "<|end_header_id|>\n\n") : rc;
}

static enum st_status put_date(const struct st_chat_tmpl *t, const struct st_chat_req *req,
                               struct st_buf *out)
{
    char today[32];
    time_t now;
    struct tm tm;

    if (req->date_string.ptr)
        return st_chat_put(out, req->date_string);
    if (!t->date_today)
        return st_chat_puts(out, "26 Jul 2024");
    now = time(NULL);
    if (!localtime_r(&now, &tm) || strftime(today, sizeof(today), "%d %b %Y", &tm) == 0)
        return st_chat_puts(out, "26 Jul 2024");
    return st_chat_puts(out, today);
}

static enum st_status system_turn(const struct st_chat_tmpl *t, const struct st_chat_req *req,
                                  bool tools, struct st_buf *out)
{
    enum st_status rc = header(st_str_c("system"), out);

    if (rc == ST_OK && tools)
        rc = st_chat_puts(out, "Environment: ipython\n");
    if (rc == ST_OK)
        rc = st_chat_puts(out, "Cutting Knowledge Date: December 2023\nToday Date: ");
    if (rc == ST_OK)
        rc = put_date(t, req, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\n\n");
    if (rc == ST_OK && chat_role_is(&req->msgs[0], "system"))
        rc = st_chat_put(out, st_chat_strip(chat_content(&req->msgs[0]), 3, NULL));
    return rc == ST_OK ? st_chat_puts(out, "<|eot_id|>") : rc;
}

/* The first remaining message, whatever its role, becomes the user turn
 * that carries the tool definitions. */
static enum st_status tools_turn(struct st_str tools, const struct st_chat_msg *first,
                                 struct st_buf *out)
{
    enum st_status rc = header(st_str_c("user"), out);
    struct st_str tool;
    size_t pos = 0;
    bool bad = false;

    if (rc == ST_OK)
        rc = st_chat_puts(out, tools_intro);
    while (rc == ST_OK && st_json_array_next(tools, &pos, &tool, &bad)) {
        rc = st_json_tojson_indent(tool, 4, out);
        if (rc == ST_OK)
            rc = st_chat_puts(out, "\n\n");
    }
    if (rc == ST_OK && bad)
        rc = ST_ERR_INVALID;
    if (rc == ST_OK)
        rc = st_chat_put(out, st_chat_strip(chat_content(first), 3, NULL));
    return rc == ST_OK ? st_chat_puts(out, "<|eot_id|>") : rc;
}

static enum st_status tool_call_turn(const struct st_chat_msg *m, size_t i, struct st_buf *out,
                                     struct st_err *err)
{
    struct st_str calls, call, fn, name, args;
    size_t pos = 0, n = 0;
    bool bad = false;
    enum st_status rc;

    if (!st_json_value(m->tool_calls, &calls) || st_json_type(calls) != ST_JSON_ARRAY)
        return st_err_set(err, ST_ERR_INVALID,
                          "chat template: message %zu: tool_calls is not a JSON array", i);
    while (st_json_array_next(calls, &pos, &fn, &bad))
        if (n++ == 0)
            call = fn;
    if (bad || n != 1)
        return st_err_set(err, ST_ERR_INVALID, "llama3.1 template: message %zu: this model "
                          "only supports single tool-calls at once", i);
    if (st_json_object_get(call, "function", &fn))
        call = fn;
    rc = header(st_str_c("assistant"), out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "{\"name\": \"");
    if (rc == ST_OK && st_json_object_get(call, "name", &name))
        rc = st_json_text_append(name, out);
    if (rc == ST_OK)
        rc = st_chat_puts(out, "\", \"parameters\": ");
    if (rc == ST_OK && st_json_object_get(call, "arguments", &args))
        rc = st_json_text_append(args, out);
    return rc == ST_OK ? st_chat_puts(out, "}<|eot_id|>") : rc;
}

/* content | tojson: the string quoted and escaped the Python way. */
static enum st_status ipython_turn(const struct st_chat_msg *m, struct st_buf *out)
{
    enum st_status rc = header(st_str_c("ipython"), out);
    if (rc == ST_OK)
        rc = st_buf_json_str(out, chat_content(m).ptr, chat_content(m).len);
    return rc == ST_OK ? st_chat_puts(out, "<|eot_id|>") : rc;
}

static enum st_status message_turn(const struct st_chat_msg *m, size_t i, struct st_buf *out,
                                   struct st_err *err)
{
    enum st_status rc;

    if (chat_role_is(m, "tool") || chat_role_is(m, "ipython"))
        return ipython_turn(m, out);
    if (m->tool_calls.ptr)
        return tool_call_turn(m, i, out, err);
    rc = header(m->role, out);
    if (rc == ST_OK)
        rc = st_chat_put(out, st_chat_strip(chat_content(m), 3, NULL));
    return rc == ST_OK ? st_chat_puts(out, "<|eot_id|>") : rc;
}

enum st_status st_chat_render_llama31(const struct st_chat_tmpl *t,
                                      const struct st_chat_req *req,
                                      struct st_buf *out, struct st_err *err)
{
    size_t i = chat_role_is(&req->msgs[0], "system") ? 1 : 0;
    struct st_str tools = { NULL, 0 };
    enum st_status rc;

    if (req->tools.ptr && req->tools.len) {
        if (!st_json_value(req->tools, &tools) ||
            (st_json_type(tools) != ST_JSON_ARRAY && st_json_type(tools) != ST_JSON_NULL))
            return st_err_set(err, ST_ERR_INVALID, "chat template: tools is not a JSON array");
        if (!st_json_truthy(tools))
            tools.ptr = NULL;
    }
    rc = st_chat_puts(out, t->bos);
    if (rc == ST_OK)
        rc = system_turn(t, req, tools.ptr != NULL, out);
    if (rc == ST_OK && tools.ptr) {
        if (i == req->n_msgs)
            return st_err_set(err, ST_ERR_INVALID, "llama3.1 template: cannot put tools in the "
                              "first user message when there is no first user message");
        rc = tools_turn(tools, &req->msgs[i++], out);
    }
    for (; i < req->n_msgs && rc == ST_OK; i++)
        rc = message_turn(&req->msgs[i], i, out, err);
    if (rc == ST_OK && req->add_generation_prompt)
        rc = header(st_str_c("assistant"), out);
    if (rc == ST_ERR_INVALID && err && err->msg[0] == '\0')
        return st_err_set(err, rc, "chat template: malformed tools or tool_calls JSON");
    return rc;
}

/* Llama 3: bos, then <|start_header_id|>{role}<|end_header_id|>\n\n
 * {content|trim}<|eot_id|> per message. */
enum st_status st_chat_render_llama3(const struct st_chat_tmpl *t,
                                     const struct st_chat_req *req, struct st_buf *out)
{
    enum st_status rc = st_chat_puts(out, t->bos);
    size_t i;

    for (i = 0; i < req->n_msgs && rc == ST_OK; i++) {
        rc = st_chat_puts(out, "<|start_header_id|>");
        if (rc == ST_OK)
            rc = st_chat_put(out, req->msgs[i].role);
        if (rc == ST_OK)
            rc = st_chat_puts(out, "<|end_header_id|>\n\n");
        if (rc == ST_OK)
            rc = st_chat_put(out, st_chat_strip(chat_content(&req->msgs[i]), 3, NULL));
        if (rc == ST_OK)
            rc = st_chat_puts(out, "<|eot_id|>");
    }
    if (rc == ST_OK && req->add_generation_prompt)
        rc = st_chat_puts(out, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return rc;
}

/* ---- the call grammar's hook (chat/formats/calls.h) ---- */

/* {"name": NAME, "parameters": ARGS}: the whole reply is one object (the
 * reply parser reads it so), hence one call. */
const struct st_chat_call_frame st_chat_llama31_call_frame = {
    .open = "", .pre_head = "{\"name\": \"", .pre_tail = "\", \"parameters\": ",
    .post = "}", .sep = "", .close = "", .single = true,
};
