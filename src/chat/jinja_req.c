/* jinja_req.c -- a chat request as a Jinja template's variables, and its
 * render: messages (role, content or null, reasoning_content, tool_calls,
 * tool_call_id, name), tools, add_generation_prompt, bos_token, eos_token,
 * enable_thinking (true unless the request turns thinking off), date_string
 * ("%d %b %Y") and datetime ("%b %d %Y": firefunction) of today's local date
 * unless given, then the rest of chat_template_kwargs: the variables
 * llama-server gives every template. A tool call's arguments arrive as a JSON string;
 * for a template that prints them right only as an object (| tojson,
 * .items(): st_chat_jinja_probe_args finds out at load, as llama.cpp's
 * minja does) the string is parsed into that object.
 * With thinking off, a prompt that ends by opening a think block
 * ("<think>\n", QwQ and DeepSeek-R1 style) gets "</think>" so the model
 * answers at once, as llama-server does.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "chat/internal.h"
#include "chat/jinja/jinja.h"

static cJSON *str_or_null(struct st_str s)
{
    if (!s.ptr)
        return cJSON_CreateNull();
    char *tmp = st_str_dup(s);
    cJSON *j = tmp ? cJSON_CreateString(tmp) : NULL;
    free(tmp);
    return j;
}

static bool add(cJSON *obj, const char *key, cJSON *v)
{
    return v && cJSON_AddItemToObject(obj, key, v);
}

/* tool_calls JSON text -> array; parse: each function.arguments string
 * that holds an object parsed into it. */
static cJSON *tool_calls(struct st_str text, bool parse)
{
    char *tmp = st_str_dup(text);
    cJSON *arr = tmp ? cJSON_Parse(tmp) : NULL, *tc;

    free(tmp);
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return NULL;
    }
    cJSON_ArrayForEach(tc, arr) {
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        cJSON *obj = parse && cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;
        if (cJSON_IsObject(obj))
            cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", obj);
        else
            cJSON_Delete(obj);
    }
    return arr;
}

/* sys: a system message's text to put ahead of this message's content,
 * joined by "\n" (a template without a system role). */
static bool add_message(cJSON *arr, const struct st_chat_msg *m, bool object_args,
                        const struct st_chat_msg *sys)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *content;

    if (!o || !cJSON_AddItemToArray(arr, o))
        return cJSON_Delete(o), false;
    if (sys) {
        struct st_buf b;
        st_buf_init(&b);
        bool ok = st_buf_append(&b, sys->content.ptr ? sys->content.ptr : "", sys->content.len) ==
                      ST_OK && st_buf_append(&b, "\n", 1) == ST_OK &&
                  st_buf_append(&b, m->content.ptr ? m->content.ptr : "", m->content.len) == ST_OK;
        content = ok ? str_or_null((struct st_str){ b.data, b.len }) : NULL;
        st_buf_fini(&b);
    } else {
        content = str_or_null(m->content);
    }
    if (!add(o, "role", str_or_null(m->role)) || !add(o, "content", content))
        return false;
    if (m->reasoning_content.ptr && !add(o, "reasoning_content", str_or_null(m->reasoning_content)))
        return false;
    if (m->tool_calls.ptr && m->tool_calls.len) {
        cJSON *tc = tool_calls(m->tool_calls, object_args);
        if (tc && cJSON_GetArraySize(tc) > 0 && !add(o, "tool_calls", tc))
            return false;
        if (tc && cJSON_GetArraySize(tc) == 0)
            cJSON_Delete(tc);
    }
    if (m->tool_call_id.ptr && !add(o, "tool_call_id", str_or_null(m->tool_call_id)))
        return false;
    return !m->name.ptr || add(o, "name", str_or_null(m->name));
}

/* date_string ("%d %b %Y") and datetime ("%b %d %Y") of today's local
 * date, each unless obj has it already (chat_template_kwargs). */
static bool add_today(cJSON *obj)
{
    char date[64] = "", datetime[64] = "";
    time_t now = time(NULL);
    struct tm tm;

    if (localtime_r(&now, &tm)) {
        if (!strftime(date, sizeof(date), "%d %b %Y", &tm))
            date[0] = '\0';
        if (!strftime(datetime, sizeof(datetime), "%b %d %Y", &tm))
            datetime[0] = '\0';
    }
    if (!cJSON_GetObjectItemCaseSensitive(obj, "date_string") &&
        !cJSON_AddStringToObject(obj, "date_string", date))
        return false;
    return cJSON_GetObjectItemCaseSensitive(obj, "datetime") ||
           cJSON_AddStringToObject(obj, "datetime", datetime);
}

/* The template's variables; NULL when out of memory. */
static cJSON *context(const struct st_chat_tmpl *t, const struct st_chat_req *req)
{
    cJSON *ctx = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(ctx, "messages"), *kw;
    bool ok = ctx && msgs;

    /* no system role: the first system message goes ahead of the next
     * message's text, or away when it is alone (llama.cpp's workaround) */
    const struct st_chat_msg *sys = NULL;
    size_t first = 0;
    if (t->jinja_no_system && req->n_msgs > 0 && st_str_eq_c(req->msgs[0].role, "system")) {
        sys = req->n_msgs > 1 ? &req->msgs[0] : NULL;
        first = 1;
    }
    for (size_t i = first; ok && i < req->n_msgs; i++)
        ok = add_message(msgs, &req->msgs[i], t->jinja_object_args, i == first ? sys : NULL);
    if (ok && req->tools.ptr && req->tools.len) {
        char *tmp = st_str_dup(req->tools);
        cJSON *tools = tmp ? cJSON_Parse(tmp) : NULL;
        free(tmp);
        if (cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0)
            ok = add(ctx, "tools", tools);
        else
            cJSON_Delete(tools);
    }
    ok = ok && cJSON_AddBoolToObject(ctx, "add_generation_prompt", req->add_generation_prompt) &&
         cJSON_AddStringToObject(ctx, "bos_token", t->bos) &&
         cJSON_AddStringToObject(ctx, "eos_token", t->eos);
    /* always defined, as llama-server's: true unless turned off, so a
     * template that closes the think block "if not enable_thinking"
     * (DeepSeek-R1, Command-R7B) leaves it open by default */
    if (ok)
        ok = cJSON_AddBoolToObject(ctx, "enable_thinking", req->enable_thinking != 0) != NULL;
    if (ok && req->date_string.ptr)
        ok = add(ctx, "date_string", str_or_null(req->date_string));
    cJSON_ArrayForEach(kw, req->kwargs) {
        if (ok && kw->string && !cJSON_GetObjectItemCaseSensitive(ctx, kw->string))
            ok = add(ctx, kw->string, cJSON_Duplicate(kw, true));
    }
    ok = ok && add_today(ctx);
    if (!ok) {
        cJSON_Delete(ctx);
        return NULL;
    }
    return ctx;
}

static bool ends_with(const struct st_buf *b, size_t from, const char *s)
{
    size_t n = strlen(s);
    return b->len - from >= n && memcmp(b->data + b->len - n, s, n) == 0;
}

enum st_status st_chat_render_jinja(const struct st_chat_tmpl *t, const struct st_chat_req *req,
                                    struct st_buf *out, struct st_err *err)
{
    cJSON *ctx = context(t, req);
    size_t start = out->len;
    enum st_status rc;

    if (!ctx)
        return st_err_set(err, ST_ERR_NOMEM, "chat template: out of memory");
    rc = st_jinja_render(t->jinja, ctx, NULL, out, err);
    cJSON_Delete(ctx);
    if (rc == ST_OK && req->add_generation_prompt && req->enable_thinking == 0 &&
        (ends_with(out, start, "<think>\n") || ends_with(out, start, "<think>")))
        rc = st_buf_append(out, "</think>", 8);
    return rc;
}

/* Render a two-message probe chat (m[0], m[1]) into 'out' (initialized
 * here; the caller finis it): its text, or NULL when the template fails. */
static const char *render_probe(struct st_chat_tmpl *t, struct st_chat_msg m[2],
                                bool add_generation_prompt, struct st_buf *out)
{
    struct st_chat_req req;
    struct st_err err = { 0 };

    memset(&req, 0, sizeof(req));
    req.msgs = m;
    req.n_msgs = 2;
    req.add_generation_prompt = add_generation_prompt;
    req.enable_thinking = -1;
    st_buf_init(out);
    return st_chat_render_jinja(t, &req, out, &err) == ST_OK ? out->data : NULL;
}

/* Render a call with these arguments. *member: the needle shows as a JSON
 * member (or a <parameter=...>); *seen: it shows at all (GLM's
 * <arg_key>..., any layout of a template that walks an object). */
static void probe(struct st_chat_tmpl *t, const char *calls, bool *member, bool *seen)
{
    struct st_chat_msg m[2];
    struct st_buf out;

    memset(m, 0, sizeof(m));
    m[0].role = st_str_c("user");
    m[0].content = st_str_c("Hey");
    m[1].role = st_str_c("assistant");
    m[1].content = st_str_c("");
    m[1].tool_calls = st_str_c(calls);
    const char *text = render_probe(t, m, false, &out);
    *member = text && (strstr(text, "\"argument_needle\":") ||
                       strstr(text, "'argument_needle':") ||
                       strstr(text, "<parameter=argument_needle>"));
    *seen = text && strstr(text, "argument_needle");
    st_buf_fini(&out);
}

/* Whether the template shows a system message's text (Gemma 2 raises). */
static bool shows_system(struct st_chat_tmpl *t)
{
    struct st_chat_msg m[2];
    struct st_buf out;

    memset(m, 0, sizeof(m));
    m[0].role = st_str_c("system");
    m[0].content = st_str_c("system_needle");
    m[1].role = st_str_c("user");
    m[1].content = st_str_c("Hey");
    const char *text = render_probe(t, m, true, &out);
    bool ok = text && strstr(text, "system_needle");
    st_buf_fini(&out);
    return ok;
}

void st_chat_jinja_probe_args(struct st_chat_tmpl *t)
{
    static const char str_call[] =
        "[{\"id\":\"call_1___\",\"type\":\"function\",\"function\":{\"name\":\"ipython\","
        "\"arguments\":\"{\\\"argument_needle\\\":\\\"print('Hello, World!')\\\"}\"}}]";
    static const char obj_call[] =
        "[{\"id\":\"call_1___\",\"type\":\"function\",\"function\":{\"name\":\"ipython\","
        "\"arguments\":{\"argument_needle\":\"print('Hello, World!')\"}}}]";

    bool str_member, str_seen, obj_member, obj_seen;

    t->jinja_no_system = false;
    t->jinja_no_system = !shows_system(t);
    t->jinja_object_args = false;
    probe(t, str_call, &str_member, &str_seen);
    if (str_member)
        return;
    /* the string is not printed as an object (or fails: .items() of a
     * string) and the object's member reaches the prompt: objects */
    probe(t, obj_call, &obj_member, &obj_seen);
    t->jinja_object_args = obj_seen;
}
