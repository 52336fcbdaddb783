/* mistral.c -- the tekken-era Mistral chat templates (Mistral Small 3.x,
 * Devstral, Magistral, Ministral 3), written out in C. Two families:
 *
 *  mistral-v7 (Mistral-Small-3.1-2503 / Devstral-2505 / Small 3 2501):
 *    bos [SYSTEM_PROMPT]{sys}[/SYSTEM_PROMPT]  -- sys: the first message if it
 *        is a system one, else the template's default; with tools the
 *        template's parallel_tool_prompt + "\n\n" goes in front of it
 *    before the LAST user message, with tools:
 *        [AVAILABLE_TOOLS] [{"type": "function", "function": {...}}, ...][/AVAILABLE_TOOLS]
 *        (each function's members printed by hand: a string as '"k": "v"'
 *        with v NOT re-escaped, anything else as '"k": ' + tojson; the key
 *        "return" left out)
 *    user:      [INST]{content}[/INST]
 *    assistant: {content}{eos}
 *    tool calls (the content is dropped):
 *        [TOOL_CALLS] [{function|tojson less its "}", "id": "<last 9 of id>"}, ...]{eos}
 *        (string arguments parsed into JSON first, as servers do, so that
 *        the model sees an object; ids shorter than 9 are refused)
 *    tool:      [TOOL_RESULTS] {"content": {content}, "call_id": "<last 9>"}[/TOOL_RESULTS]
 *
 *  mistral-v11 ([ARGS] calls: Small 3.2 / Devstral 2507 / Magistral /
 *  Ministral 3 / Devstral Small 2):
 *    bos, [SYSTEM_PROMPT]{sys}[/SYSTEM_PROMPT] (the default only when the
 *        template has a non-empty one)
 *    tools (when any): [AVAILABLE_TOOLS]{tools|tojson}[/AVAILABLE_TOOLS],
 *        right after the system prompt, or in front of the last user
 *        message when the template says so (t->tools_last_user)
 *    user:      [INST]{content}[/INST]
 *    assistant: {content}[TOOL_CALLS]{name}[ARGS]{arguments}...{eos}
 *        (string arguments verbatim, "" -> "{}", others tojson)
 *    tool:      [TOOL_RESULTS]{content}[/TOOL_RESULTS]
 *
 * Neither template has a generation prompt: the prompt ends after [/INST]
 * (or [/TOOL_RESULTS]). v11 raises on roles that do not alternate
 * user/assistant (tool messages and assistant tool calls excepted); v7's
 * own check builds its list with "set" inside a for loop, which Jinja scopes
 * to the loop, so it never fires: v7 accepts any order of user, assistant
 * and tool messages.
 * The default system message is the template's own string literal,
 * extracted at init (st_chat_mistral_scan), "today" = the local date as
 * %Y-%m-%d. A null content renders as "" (the Python templates would raise
 * on a null assistant content; every server hands them "" instead).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "strata/log.h"

#include "chat/formats/calls.h"
#include "chat/formats/internal.h"
#include "chat/json/json.h"

#define TODAY_MARK '\x01'   /* where the template concatenates its 'today' */

/* ---- init: string literals of the template ------------------------------ */

/* Decode one Jinja string literal at s[*i] (a quote) into out[*n..cap).
 * Escapes as Python's unicode-escape, which Jinja applies: \n \t \r \b \f
 * \v \\ \' \", backslash-newline vanishes, anything else stays as written. */
static bool scan_literal(const char *s, size_t len, size_t *i, char *out, size_t *n, size_t cap)
{
    static const char from[] = "ntrbfv\\'\"", to[] = "\n\t\r\b\f\v\\'\"";
    char q = s[(*i)++];

    while (*i < len && s[*i] != q) {
        char c = s[(*i)++];
        const char *e;
        if (c == '\\' && *i < len) {
            char d = s[(*i)++];
            if (d == '\n')
                continue;
            if ((e = strchr(from, d)) != NULL && d) {
                c = to[e - from];
            } else {
                if (*n + 1 >= cap)
                    return false;
                out[(*n)++] = '\\';
                c = d;
            }
        }
        if (*n + 1 >= cap)
            return false;
        out[(*n)++] = c;
    }
    if (*i >= len)
        return false;
    (*i)++;
    return true;
}

/* The value of "{%- set NAME = <literal or today> (+ ...)* %}" in src, into
 * out[cap] NUL-terminated ('today' as TODAY_MARK). false when the template
 * has no such statement or it is anything else. */
static bool scan_set(const char *src, size_t len, const char *name, char *out, size_t cap)
{
    char key[64];
    const char *p;
    size_t i, n = 0, kl;

    kl = (size_t)snprintf(key, sizeof(key), "set %s = ", name);
    p = src && len ? memmem(src, len, key, kl) : NULL;
    if (!p || cap == 0)
        return false;
    i = (size_t)(p - src) + kl;
    for (;;) {
        while (i < len && (src[i] == ' ' || src[i] == '\n'))
            i++;
        if (i < len && (src[i] == '"' || src[i] == '\'')) {
            if (!scan_literal(src, len, &i, out, &n, cap))
                return false;
        } else if (i + 5 <= len && memcmp(src + i, "today", 5) == 0) {
            if (n + 1 >= cap)
                return false;
            out[n++] = TODAY_MARK;
            i += 5;
        } else {
            return false;
        }
        while (i < len && (src[i] == ' ' || src[i] == '\n'))
            i++;
        if (i < len && src[i] == '+') {
            i++;
            continue;
        }
        out[n] = '\0';
        return (i + 2 <= len && memcmp(src + i, "%}", 2) == 0) ||
               (i + 3 <= len && memcmp(src + i, "-%}", 3) == 0);
    }
}

void st_chat_mistral_scan(struct st_chat_tmpl *t, const char *src, size_t len,
                          const char *model_name)
{
    t->mistral_system[0] = '\0';
    t->mistral_tools_prompt[0] = '\0';
    t->has_default_system = false;
    if (memmem(src, len, "default_system_message", 22)) {
        t->has_default_system = scan_set(src, len, "default_system_message", t->mistral_system,
                                         sizeof(t->mistral_system));
        if (!t->has_default_system) {
            t->mistral_system[0] = '\0';
            st_log(ST_LOG_WARN, "chat", "%s: could not read the template's default system "
                   "message; requests without one get none", model_name ? model_name : "model");
        }
    }
    if (t->kind == ST_CHAT_MISTRAL_V7 &&
        !scan_set(src, len, "parallel_tool_prompt", t->mistral_tools_prompt,
                  sizeof(t->mistral_tools_prompt)))
        t->mistral_tools_prompt[0] = '\0';
    t->tools_last_user = t->kind == ST_CHAT_MISTRAL_V7 ||
                         memmem(src, len, "user_messages[-1]", 17) != NULL ||
                         memmem(src, len, "last_user_index", 15) != NULL;
}

/* ---- render helpers ------------------------------------------------------ */

/* s with each TODAY_MARK replaced by the local date (%Y-%m-%d). */
static void put_with_today(struct st_out *o, const char *s)
{
    char today[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    const char *mark;

    if (!localtime_r(&now, &tm) || strftime(today, sizeof(today), "%Y-%m-%d", &tm) == 0)
        today[0] = '\0';
    while ((mark = strchr(s, TODAY_MARK)) != NULL) {
        st_out_raw(o, s, (size_t)(mark - s));
        st_out_text(o, today);
        s = mark + 1;
    }
    st_out_text(o, s);
}

/* The last 'keep' code points of s (Python's s[-keep:]); *chars: its length
 * in code points. */
static struct st_str tail_chars(struct st_str s, size_t keep, size_t *chars)
{
    size_t i = s.len, n = 0;

    while (i > 0 && n < keep) {
        i--;
        if (((unsigned char)s.ptr[i] & 0xC0) != 0x80)
            n++;
    }
    *chars = n;
    return (struct st_str){ s.ptr + i, s.len - i };
}

/* A call id (or tool_call_id) as the v7 template prints it: its last 9
 * characters; fewer than 9 is an error there. */
static enum st_status put_id9(struct st_out *o, struct st_str id, size_t msg, struct st_err *err)
{
    size_t chars = 0;
    struct st_str t = id.ptr ? tail_chars(id, 9, &chars) : id;

    if (!st_out_ok(o))
        return st_out_finish(o);
    if (!id.ptr || chars < 9)
        return st_err_set(err, ST_ERR_INVALID, "mistral template: message %zu: tool call ids "
                          "must be at least 9 characters", msg);
    chat_put(o, t);
    return st_out_finish(o);
}

static bool last_user_index(const struct st_chat_req *req, size_t first, size_t *at)
{
    size_t i;
    bool found = false;

    for (i = first; i < req->n_msgs; i++)
        if (chat_role_is(&req->msgs[i], "user")) {
            *at = i;
            found = true;
        }
    return found;
}

static bool has_tool_calls(const struct st_chat_msg *m)
{
    struct st_str v;
    size_t pos = 0;
    bool bad = false;
    struct st_str elem;

    if (!m->tool_calls.ptr || !st_json_value(m->tool_calls, &v))
        return false;
    return st_json_type(v) == ST_JSON_ARRAY && st_json_array_next(v, &pos, &elem, &bad);
}

/* v11: user / assistant alternation starting with user, counting user
 * messages and assistant messages without tool calls. */
static enum st_status check_roles(const struct st_chat_req *req, size_t first,
                                  struct st_err *err)
{
    size_t i, k = 0;

    for (i = first; i < req->n_msgs; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        bool user = chat_role_is(m, "user");
        if (!user && !(chat_role_is(m, "assistant") && !has_tool_calls(m)))
            continue;
        if (user != (k % 2 == 0))
            return st_err_set(err, ST_ERR_INVALID, "mistral template: message %zu: roles must "
                              "alternate user/assistant (tool calls and results excepted)", i);
        k++;
    }
    return ST_OK;
}

static bool tools_present(const struct st_chat_req *req, struct st_str *v)
{
    size_t pos = 0;
    bool bad = false;
    struct st_str elem;

    if (!req->tools.ptr || !st_json_value(req->tools, v))
        return false;
    return st_json_type(*v) == ST_JSON_ARRAY && st_json_array_next(*v, &pos, &elem, &bad);
}

static enum st_status bad_json(const char *what, size_t msg, struct st_err *err)
{
    return st_err_set(err, ST_ERR_INVALID, "mistral template: message %zu: malformed %s",
                      msg, what);
}

/* tools and every tool_calls must be a JSON array or null (= none). */
static enum st_status check_json(const struct st_chat_req *req, struct st_err *err)
{
    struct st_str v;
    size_t i;

    if (req->tools.ptr && req->tools.len &&
        (!st_json_value(req->tools, &v) ||
         (st_json_type(v) != ST_JSON_ARRAY && st_json_type(v) != ST_JSON_NULL)))
        return st_err_set(err, ST_ERR_INVALID, "mistral template: tools is not a JSON array");
    for (i = 0; i < req->n_msgs; i++)
        if (req->msgs[i].tool_calls.ptr &&
            (!st_json_value(req->msgs[i].tool_calls, &v) ||
             (st_json_type(v) != ST_JSON_ARRAY && st_json_type(v) != ST_JSON_NULL)))
            return bad_json("tool_calls (not a JSON array)", i, err);
    return ST_OK;
}

/* tool_calls given as an array (possibly empty): v7 prints its call block. */
static bool calls_array(const struct st_chat_msg *m)
{
    struct st_str v;

    return m->tool_calls.ptr && st_json_value(m->tool_calls, &v) &&
           st_json_type(v) == ST_JSON_ARRAY;
}

/* ---- mistral-v7 ---------------------------------------------------------- */

/* One tool as the v7 template prints it; ST_ERR_INVALID in o when it has
 * no function object. */
static void v7_tool(struct st_out *o, struct st_str tool)
{
    struct st_str fn, key, val;
    size_t pos = 0;
    bool first = true;

    if (!st_json_object_get(tool, "function", &fn) || st_json_type(fn) != ST_JSON_OBJECT) {
        st_out_check(o, ST_ERR_INVALID);
        return;
    }
    st_out_text(o, "{\"type\": \"function\", \"function\": {");
    while (st_out_ok(o) && st_json_object_next(fn, &pos, &key, &val)) {
        struct st_buf k;
        st_buf_init(&k);
        st_out_check(o, st_json_string_append(key, &k));
        if (!(k.len == 6 && memcmp(k.data, "return", 6) == 0)) {   /* the template skips it */
            if (!first)
                st_out_text(o, ", ");
            first = false;
            st_out_text(o, "\"");
            st_out_raw(o, k.data ? k.data : "", k.len);
            if (st_json_type(val) == ST_JSON_STRING) {
                st_out_text(o, "\": \"");
                st_json_out_string(o, val);
                st_out_text(o, "\"");
            } else {
                st_out_text(o, "\": ");
                st_json_out_tojson(o, val);
            }
        }
        st_buf_fini(&k);
    }
    st_out_text(o, "}}");
}

static void v7_tools(struct st_out *o, struct st_str tools)
{
    size_t pos = 0;
    bool bad = false, first = true;
    struct st_str tool;

    st_out_text(o, "[AVAILABLE_TOOLS] [");
    while (st_out_ok(o) && st_json_array_next(tools, &pos, &tool, &bad)) {
        if (!first)
            st_out_text(o, ", ");
        first = false;
        v7_tool(o, tool);
    }
    if (bad)
        st_out_check(o, ST_ERR_INVALID);
    st_out_text(o, "][/AVAILABLE_TOOLS]");
}

/* function|tojson less its closing brace; string arguments holding JSON
 * are printed as that JSON. */
static void v7_function(struct st_out *o, struct st_str fn)
{
    struct st_str key, val, inner;
    size_t pos = 0;
    bool first = true;

    st_out_text(o, "{");
    while (st_out_ok(o) && st_json_object_next(fn, &pos, &key, &val)) {
        if (!first)
            st_out_text(o, ", ");
        first = false;
        st_json_out_tojson(o, key);
        st_out_text(o, ": ");
        if (st_out_ok(o) &&
            st_str_eq_c((struct st_str){ key.ptr + 1, key.len - 2 }, "arguments") &&
            st_json_type(val) == ST_JSON_STRING) {
            struct st_buf dec;
            st_buf_init(&dec);
            st_out_check(o, st_json_string_append(val, &dec));
            if (dec.len && st_json_value((struct st_str){ dec.data, dec.len }, &inner))
                st_json_out_tojson(o, inner);
            else
                st_json_out_tojson(o, val);
            st_buf_fini(&dec);
        } else {
            st_json_out_tojson(o, val);
        }
    }
}

static enum st_status v7_calls(struct st_out *o, const struct st_chat_tmpl *t,
                               const struct st_chat_msg *m, size_t msg, struct st_err *err)
{
    struct st_str calls, call, fn, id;
    size_t pos = 0;
    bool bad = false, first = true;

    if (!st_json_value(m->tool_calls, &calls) || st_json_type(calls) != ST_JSON_ARRAY)
        return bad_json("tool_calls", msg, err);
    st_out_text(o, "[TOOL_CALLS] [");
    while (st_out_ok(o) && st_json_array_next(calls, &pos, &call, &bad)) {
        struct st_buf idb;
        if (!st_json_object_get(call, "function", &fn) || st_json_type(fn) != ST_JSON_OBJECT)
            return bad_json("tool call", msg, err);
        if (!first)
            st_out_text(o, ", ");
        first = false;
        v7_function(o, fn);
        st_out_text(o, ", \"id\": \"");
        st_buf_init(&idb);
        if (st_out_ok(o) && st_json_object_get(call, "id", &id) &&
            st_json_type(id) == ST_JSON_STRING)
            st_out_check(o, st_json_string_append(id, &idb));
        enum st_status rc = put_id9(o, idb.data ? (struct st_str){ idb.data, idb.len }
                                                : (struct st_str){ NULL, 0 }, msg, err);
        st_buf_fini(&idb);
        if (rc != ST_OK)
            return rc;
        st_out_text(o, "\"}");
    }
    if (st_out_ok(o) && bad)
        return bad_json("tool_calls", msg, err);
    if (!first) {                       /* the template closes inside its loop */
        st_out_text(o, "]");
        st_out_text(o, t->eos);
    }
    return st_out_finish(o);
}

static enum st_status v7_tool_result(struct st_out *o, const struct st_chat_msg *m, size_t msg,
                                     struct st_err *err)
{
    st_out_text(o, "[TOOL_RESULTS] {\"content\": ");
    chat_put(o, chat_content(m));
    st_out_text(o, ", \"call_id\": \"");
    ST_TRY(put_id9(o, m->tool_call_id, msg, err));
    st_out_text(o, "\"}[/TOOL_RESULTS]");
    return st_out_finish(o);
}

static void v7_system(struct st_out *o, const struct st_chat_tmpl *t,
                      const struct st_chat_req *req, bool tools)
{
    st_out_text(o, "[SYSTEM_PROMPT]");
    if (tools && t->mistral_tools_prompt[0]) {
        put_with_today(o, t->mistral_tools_prompt);
        st_out_text(o, "\n\n");
    }
    if (chat_role_is(&req->msgs[0], "system"))
        chat_put(o, chat_content(&req->msgs[0]));
    else
        put_with_today(o, t->mistral_system);
    st_out_text(o, "[/SYSTEM_PROMPT]");
}

static enum st_status bad_role(size_t i, struct st_err *err)
{
    return st_err_set(err, ST_ERR_INVALID, "mistral template: message %zu: only user, "
                      "assistant and tool roles after an optional first system message", i);
}

static enum st_status render_v7(const struct st_chat_tmpl *t, const struct st_chat_req *req,
                                struct st_buf *out, struct st_err *err)
{
    size_t first = chat_role_is(&req->msgs[0], "system") ? 1 : 0, last_user = 0, i;
    struct st_str tools = { NULL, 0 };
    bool with_tools = tools_present(req, &tools);
    bool any_user = last_user_index(req, first, &last_user);
    struct st_out o;

    ST_TRY(check_json(req, err));
    st_out_init(&o, out);
    st_out_text(&o, t->bos);
    v7_system(&o, t, req, with_tools);
    for (i = first; i < req->n_msgs && st_out_ok(&o); i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        if (chat_role_is(m, "user")) {
            if (with_tools && any_user && i == last_user) {
                v7_tools(&o, tools);
                if (st_out_finish(&o) == ST_ERR_INVALID)
                    return bad_json("tools", i, err);
            }
            st_out_text(&o, "[INST]");
            chat_put(&o, chat_content(m));
            st_out_text(&o, "[/INST]");
        } else if (calls_array(m) &&
                   (chat_role_is(m, "assistant") || chat_role_is(m, "tool_calls"))) {
            st_out_check(&o, v7_calls(&o, t, m, i, err));
        } else if (chat_role_is(m, "assistant")) {
            chat_put(&o, chat_content(m));
            st_out_text(&o, t->eos);
        } else if (chat_role_is(m, "tool") || chat_role_is(m, "tool_results")) {
            st_out_check(&o, v7_tool_result(&o, m, i, err));
        } else {
            return bad_role(i, err);
        }
    }
    return st_out_finish(&o);
}

/* ---- mistral-v11 ([ARGS]) ------------------------------------------------ */

static enum st_status v11_calls(struct st_out *o, const struct st_chat_msg *m, size_t msg,
                                struct st_err *err)
{
    struct st_str calls, call, fn, name, args;
    size_t pos = 0;
    bool bad = false;

    if (!st_json_value(m->tool_calls, &calls) || st_json_type(calls) != ST_JSON_ARRAY)
        return bad_json("tool_calls", msg, err);
    while (st_out_ok(o) && st_json_array_next(calls, &pos, &call, &bad)) {
        if (!st_json_object_get(call, "function", &fn) || !st_json_object_get(fn, "name", &name))
            return bad_json("tool call", msg, err);
        st_out_text(o, "[TOOL_CALLS]");
        st_json_out_text(o, name);
        st_out_text(o, "[ARGS]");
        if (!st_out_ok(o))
            break;
        if (!st_json_object_get(fn, "arguments", &args))
            return bad_json("tool call (no arguments)", msg, err);
        if (st_json_type(args) == ST_JSON_STRING && args.len == 2)
            st_out_text(o, "{}");
        else
            st_json_out_text(o, args);
    }
    if (st_out_ok(o) && bad)
        return bad_json("tool_calls", msg, err);
    return st_out_finish(o);
}

static void v11_tools(struct st_out *o, const struct st_chat_req *req)
{
    struct st_str v;

    st_out_text(o, "[AVAILABLE_TOOLS]");
    if (st_json_value(req->tools, &v))
        st_json_out_tojson(o, v);
    st_out_text(o, "[/AVAILABLE_TOOLS]");
}

static enum st_status render_v11(const struct st_chat_tmpl *t, const struct st_chat_req *req,
                                 struct st_buf *out, struct st_err *err)
{
    size_t first = chat_role_is(&req->msgs[0], "system") ? 1 : 0, last_user = 0, i;
    struct st_str tools;
    bool with_tools = tools_present(req, &tools);
    bool at_user = with_tools && t->tools_last_user && last_user_index(req, first, &last_user);
    struct st_out o;

    ST_TRY(check_json(req, err));
    ST_TRY(check_roles(req, first, err));
    st_out_init(&o, out);
    st_out_text(&o, t->bos);
    if (first || (t->has_default_system && t->mistral_system[0])) {
        st_out_text(&o, "[SYSTEM_PROMPT]");
        if (first)
            chat_put(&o, chat_content(&req->msgs[0]));
        else
            put_with_today(&o, t->mistral_system);
        st_out_text(&o, "[/SYSTEM_PROMPT]");
    }
    if (with_tools && !t->tools_last_user)
        v11_tools(&o, req);
    for (i = first; i < req->n_msgs && st_out_ok(&o); i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        if (chat_role_is(m, "user")) {
            if (at_user && i == last_user)
                v11_tools(&o, req);
            st_out_text(&o, "[INST]");
            chat_put(&o, chat_content(m));
            st_out_text(&o, "[/INST]");
        } else if (chat_role_is(m, "assistant")) {
            if (chat_content(m).len == 0 && !has_tool_calls(m))
                return st_err_set(err, ST_ERR_INVALID, "mistral template: message %zu: an "
                                  "assistant message needs content or tool calls", i);
            chat_put(&o, chat_content(m));
            if (st_out_ok(&o) && has_tool_calls(m))
                st_out_check(&o, v11_calls(&o, m, i, err));
            st_out_text(&o, t->eos);
        } else if (chat_role_is(m, "tool")) {
            st_out_text(&o, "[TOOL_RESULTS]");
            chat_put(&o, chat_content(m));
            st_out_text(&o, "[/TOOL_RESULTS]");
        } else {
            return bad_role(i, err);
        }
    }
    return st_out_finish(&o);
}

enum st_status st_chat_render_mistral_tekken(const struct st_chat_tmpl *t,
                                             const struct st_chat_req *req,
                                             struct st_buf *out, struct st_err *err)
{
    return t->kind == ST_CHAT_MISTRAL_V7 ? render_v7(t, req, out, err)
                                         : render_v11(t, req, out, err);
}

/* Mistral v3 ([INST] without tools): bos, "[INST] {user}[/INST]",
 * " {assistant|trim}{eos}"; the system message goes in front of the LAST
 * user message, separated by a blank line. */
enum st_status st_chat_render_mistral(const struct st_chat_tmpl *t,
                                      const struct st_chat_req *req,
                                      struct st_buf *out, struct st_err *err)
{
    size_t first = chat_role_is(&req->msgs[0], "system") ? 1 : 0;
    struct st_out o;

    ST_TRY(st_chat_check_alternating(req, first, "mistral", err));
    st_out_init(&o, out);
    st_out_text(&o, t->bos);
    for (size_t i = first; i < req->n_msgs; i++) {
        const struct st_chat_msg *m = &req->msgs[i];
        if (chat_role_is(m, "user")) {
            st_out_text(&o, "[INST] ");
            if (first && i + 1 == req->n_msgs) {
                chat_put(&o, chat_content(&req->msgs[0]));
                st_out_text(&o, "\n\n");
            }
            chat_put(&o, chat_content(m));
            st_out_text(&o, "[/INST]");
        } else {
            st_out_text(&o, " ");
            chat_put(&o, st_chat_strip(chat_content(m), 3, NULL));
            st_out_text(&o, t->eos);
        }
    }
    return st_out_finish(&o);
}

/* ---- the call grammar's hook (chat/formats/calls.h) ---- */

/* v11: [TOOL_CALLS]NAME[ARGS]{...}; the parser reads NAME up to "[ARGS]",
 * so no blanks or brackets in it. */
const struct st_chat_call_frame st_chat_mistral11_call_frame = {
    .open = "", .pre_head = "[TOOL_CALLS]", .pre_tail = "[ARGS]",
    .post = "", .sep = "", .close = "", .square_think = true, .name_refused = " []{}",
};

/* v7: [TOOL_CALLS][{"name": NAME, "arguments": ARGS}, ...]. */
const struct st_chat_call_frame st_chat_mistral7_call_frame = {
    .open = "[TOOL_CALLS][", .pre_head = "{\"name\": \"", .pre_tail = "\", \"arguments\": ",
    .post = "}", .sep = ",", .close = "]", .square_think = true,
};
