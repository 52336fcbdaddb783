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

static void header(struct st_out *o, struct st_str role)
{
    st_out_text(o, "<|start_header_id|>");
    chat_put(o, role);
    st_out_text(o, "<|end_header_id|>\n\n");
}

static void put_date(struct st_out *o, const struct st_chat_tmpl *t, const struct st_chat_req *req)
{
    char today[32];
    time_t now;
    struct tm tm;

    if (req->date_string.ptr) {
        chat_put(o, req->date_string);
        return;
    }
    now = time(NULL);
    if (!t->date_today || !localtime_r(&now, &tm) ||
        strftime(today, sizeof(today), "%d %b %Y", &tm) == 0)
        st_out_text(o, "26 Jul 2024");
    else
        st_out_text(o, today);
}

static void system_turn(struct st_out *o, const struct st_chat_tmpl *t,
                        const struct st_chat_req *req, bool tools)
{
    header(o, st_str_c("system"));
    if (tools)
        st_out_text(o, "Environment: ipython\n");
    st_out_text(o, "Cutting Knowledge Date: December 2023\nToday Date: ");
    put_date(o, t, req);
    st_out_text(o, "\n\n");
    if (chat_role_is(&req->msgs[0], "system"))
        chat_put(o, st_chat_strip(chat_content(&req->msgs[0]), 3, NULL));
    st_out_text(o, "<|eot_id|>");
}

/* The first remaining message, whatever its role, becomes the user turn
 * that carries the tool definitions. */
static void tools_turn(struct st_out *o, struct st_str tools, const struct st_chat_msg *first)
{
    struct st_str tool;
    size_t pos = 0;
    bool bad = false;

    header(o, st_str_c("user"));
    st_out_text(o, tools_intro);
    while (st_out_ok(o) && st_json_array_next(tools, &pos, &tool, &bad)) {
        st_json_out_tojson_indent(o, tool, 4);
        st_out_text(o, "\n\n");
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
    chat_put(o, st_chat_strip(chat_content(first), 3, NULL));
    st_out_text(o, "<|eot_id|>");
}

static void tool_call_turn(struct st_out *o, const struct st_chat_msg *m, size_t i,
                           struct st_err *err)
{
    struct st_str calls, call, fn, name, args;
    size_t pos = 0, n = 0;
    bool bad = false;

    if (!st_json_value(m->tool_calls, &calls) || st_json_type(calls) != ST_JSON_ARRAY) {
        st_out_check(o, st_err_set(err, ST_ERR_INVALID,
                                   "chat template: message %zu: tool_calls is not a JSON array",
                                   i));
        return;
    }
    while (st_json_array_next(calls, &pos, &fn, &bad))
        if (n++ == 0)
            call = fn;
    if (bad || n != 1) {
        st_out_check(o, st_err_set(err, ST_ERR_INVALID, "llama3.1 template: message %zu: this "
                                   "model only supports single tool-calls at once", i));
        return;
    }
    if (st_json_object_get(call, "function", &fn))
        call = fn;
    header(o, st_str_c("assistant"));
    st_out_text(o, "{\"name\": \"");
    if (st_json_object_get(call, "name", &name))
        st_json_out_text(o, name);
    st_out_text(o, "\", \"parameters\": ");
    if (st_json_object_get(call, "arguments", &args))
        st_json_out_text(o, args);
    st_out_text(o, "}<|eot_id|>");
}

/* content | tojson: the string quoted and escaped the Python way. */
static void ipython_turn(struct st_out *o, const struct st_chat_msg *m)
{
    header(o, st_str_c("ipython"));
    if (st_out_ok(o))
        st_out_check(o, st_buf_json_str(o->buf, chat_content(m).ptr, chat_content(m).len));
    st_out_text(o, "<|eot_id|>");
}

static void message_turn(struct st_out *o, const struct st_chat_msg *m, size_t i,
                         struct st_err *err)
{
    if (chat_role_is(m, "tool") || chat_role_is(m, "ipython")) {
        ipython_turn(o, m);
    } else if (m->tool_calls.ptr) {
        tool_call_turn(o, m, i, err);
    } else {
        header(o, m->role);
        chat_put(o, st_chat_strip(chat_content(m), 3, NULL));
        st_out_text(o, "<|eot_id|>");
    }
}

enum st_status st_chat_render_llama31(const struct st_chat_tmpl *t,
                                      const struct st_chat_req *req,
                                      struct st_buf *out, struct st_err *err)
{
    size_t i = chat_role_is(&req->msgs[0], "system") ? 1 : 0;
    struct st_str tools = { NULL, 0 };
    struct st_out o;

    if (req->tools.ptr && req->tools.len) {
        if (!st_json_value(req->tools, &tools) ||
            (st_json_type(tools) != ST_JSON_ARRAY && st_json_type(tools) != ST_JSON_NULL))
            return st_err_set(err, ST_ERR_INVALID, "chat template: tools is not a JSON array");
        if (!st_json_truthy(tools))
            tools.ptr = NULL;
    }
    st_out_init(&o, out);
    st_out_text(&o, t->bos);
    system_turn(&o, t, req, tools.ptr != NULL);
    if (st_out_ok(&o) && tools.ptr) {
        if (i == req->n_msgs)
            return st_err_set(err, ST_ERR_INVALID, "llama3.1 template: cannot put tools in the "
                              "first user message when there is no first user message");
        tools_turn(&o, tools, &req->msgs[i++]);
    }
    for (; i < req->n_msgs && st_out_ok(&o); i++)
        message_turn(&o, &req->msgs[i], i, err);
    if (req->add_generation_prompt)
        header(&o, st_str_c("assistant"));
    enum st_status rc = st_out_finish(&o);
    if (rc == ST_ERR_INVALID && err && err->msg[0] == '\0')
        return st_err_set(err, rc, "chat template: malformed tools or tool_calls JSON");
    return rc;
}

/* Llama 3: bos, then <|start_header_id|>{role}<|end_header_id|>\n\n
 * {content|trim}<|eot_id|> per message. */
enum st_status st_chat_render_llama3(const struct st_chat_tmpl *t,
                                     const struct st_chat_req *req, struct st_buf *out)
{
    struct st_out o;

    st_out_init(&o, out);
    st_out_text(&o, t->bos);
    for (size_t i = 0; i < req->n_msgs; i++) {
        header(&o, req->msgs[i].role);
        chat_put(&o, st_chat_strip(chat_content(&req->msgs[i]), 3, NULL));
        st_out_text(&o, "<|eot_id|>");
    }
    if (req->add_generation_prompt)
        st_out_text(&o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return st_out_finish(&o);
}

/* ---- the call grammar's hook (chat/formats/calls.h) ---- */

/* {"name": NAME, "parameters": ARGS}: the whole reply is one object (the
 * reply parser reads it so), hence one call. */
const struct st_chat_call_frame st_chat_llama31_call_frame = {
    .open = "", .pre_head = "{\"name\": \"", .pre_tail = "\", \"parameters\": ",
    .post = "}", .sep = "", .close = "", .single = true,
};
