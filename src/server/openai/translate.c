/* translate.c -- the pieces every endpoint translated onto the chat path
 * shares (responses_request.c / responses_reply.c for OpenAI's Responses
 * API, messages_request.c / messages_reply.c for Anthropic's Messages
 * API): building the chat body another API's body means (messages, tool
 * calls, tools, a named tool_choice), the one parse path (JSON -> the
 * API's translation, a chat body tree -> the chat parser on that tree, its
 * 400s in the API's names: no JSON text in between), and on the way out
 * the chat tool_calls array walked call by call, and one SSE event framed.
 *
 * Everything here is pure (no locks, no I/O); allocation failures are
 * ST_ERR_NOMEM ("out of memory" in the error).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"
#include "server/openai/translate.h"

enum st_status st_tr_nomem(struct st_api_error *e)
{
    return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
}

enum st_status st_tr_bad(struct st_api_error *e, const char *param, const char *msg)
{
    return st_api_error_set(e, ST_ERR_INVALID, param, NULL, "%s", msg);
}

/* ---- chat body pieces -------------------------------------------------------- */

bool st_tr_add_msg(cJSON *msgs, const char *role, const char *content, cJSON **out)
{
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddItemToArray(msgs, m)) {
        cJSON_Delete(m);
        return false;
    }
    if (out)
        *out = m;
    return cJSON_AddStringToObject(m, "role", role) &&
           (!content || cJSON_AddStringToObject(m, "content", content));
}

bool st_tr_add_call(cJSON *calls, const char *id, const char *name, const char *args)
{
    cJSON *c = cJSON_CreateObject(), *fn = NULL;
    if (!c || !cJSON_AddItemToArray(calls, c)) {
        cJSON_Delete(c);
        return false;
    }
    return cJSON_AddStringToObject(c, "id", id) &&
           cJSON_AddStringToObject(c, "type", "function") &&
           (fn = cJSON_AddObjectToObject(c, "function")) &&
           cJSON_AddStringToObject(fn, "name", name) &&
           cJSON_AddStringToObject(fn, "arguments", args);
}

cJSON *st_tr_add_tool(cJSON *tools)
{
    cJSON *t = cJSON_CreateObject();
    if (!t || !cJSON_AddItemToArray(tools, t)) {
        cJSON_Delete(t);
        return NULL;
    }
    return cJSON_AddStringToObject(t, "type", "function") ? cJSON_AddObjectToObject(t, "function")
                                                         : NULL;
}

bool st_tr_copy_member(const cJSON *from, const char *key, cJSON *to)
{
    const cJSON *v = st_oai_field(from, key);
    if (!v)
        return true;
    cJSON *d = cJSON_Duplicate(v, true);
    if (!d || !cJSON_AddItemToObject(to, key, d)) {
        cJSON_Delete(d);
        return false;
    }
    return true;
}

enum st_status st_tr_each(const cJSON *arr, st_tr_item_fn fn, cJSON *out,
                          struct st_api_error *e)
{
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        enum st_status rc = fn(it, i++, out, e);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

enum st_status st_tr_tools(const cJSON *tools, st_tr_item_fn fn, const char *not_array,
                           cJSON *chat, struct st_api_error *e)
{
    if (!tools)
        return ST_OK;
    if (!cJSON_IsArray(tools))
        return st_tr_bad(e, "tools", not_array);
    cJSON *out = cJSON_AddArrayToObject(chat, "tools");
    return out ? st_tr_each(tools, fn, out, e) : st_tr_nomem(e);
}

enum st_status st_tr_named_choice(cJSON *chat, const char *name, struct st_api_error *e)
{
    cJSON *o = cJSON_AddObjectToObject(chat, "tool_choice");
    cJSON *fn = o ? cJSON_AddObjectToObject(o, "function") : NULL;
    if (!fn || !cJSON_AddStringToObject(o, "type", "function") ||
        !cJSON_AddStringToObject(fn, "name", name))
        return st_tr_nomem(e);
    return ST_OK;
}

enum st_status st_tr_build(const cJSON *root, cJSON *chat, const st_tr_step_fn *steps,
                           size_t n, cJSON **out, struct st_api_error *e)
{
    enum st_status rc = ST_OK;
    for (size_t i = 0; i < n && rc == ST_OK; i++)
        rc = steps[i](root, chat, e);
    if (rc != ST_OK) {
        cJSON_Delete(chat);
        chat = NULL;
    }
    *out = chat;
    return rc;
}

/* ---- the one parse path -------------------------------------------------------- */

/* The body parsed (*root), translated (*chat) and read into oq; the
 * caller deletes both trees. */
static enum st_status tr_steps(const char *body, size_t len, const struct st_tr_api *api,
                               void *ctx, struct st_oai_request *oq, cJSON **root, cJSON **chat,
                               struct st_api_error *e)
{
    ST_TRY(st_oai_json_root(body, len, root, e));
    ST_TRY(api->translate(*root, ctx, chat, e));
    ST_TRY(st_oai_parse_tree(ST_OAI_CHAT, *chat, api->names, oq, e));
    return api->after ? api->after(*root, oq, ctx, e) : ST_OK;
}

enum st_status st_tr_parse(const char *body, size_t len, const struct st_tr_api *api,
                           void *ctx, struct st_oai_request *oq, struct st_api_error *e)
{
    st_oai_request_init(oq);
    oq->kind = ST_OAI_CHAT;
    cJSON *root = NULL, *chat = NULL;
    enum st_status rc = tr_steps(body, len, api, ctx, oq, &root, &chat, e);
    cJSON_Delete(chat);
    cJSON_Delete(root);
    if (rc != ST_OK) {
        st_oai_request_fini(oq);
        oq->kind = ST_OAI_CHAT;
    }
    return rc;
}

/* ---- on the way out: the chat tool_calls, call by call --------------------------- */

enum st_status st_tr_each_call(const char *calls, size_t len, st_tr_call_fn fn, void *ctx)
{
    cJSON *arr = cJSON_ParseWithLength(calls, len);
    if (!arr)
        return ST_ERR_NOMEM;   /* we wrote it (gen_reply.c): only an allocation can fail */
    enum st_status rc = ST_OK;
    const cJSON *c;
    cJSON_ArrayForEach(c, arr) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "function");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(f, "arguments");
        if (!cJSON_IsString(id) || !cJSON_IsString(name) || !cJSON_IsString(args))
            continue;
        if ((rc = fn(ctx, id->valuestring, name->valuestring, args->valuestring)) != ST_OK)
            break;
    }
    cJSON_Delete(arr);
    return rc;
}

enum st_status st_tr_sse_event(struct st_buf *out, const char *type, int64_t seq,
                               const struct st_buf *body)
{
    struct st_buf j;
    st_buf_init(&j);
    struct st_out o;
    st_out_init(&o, &j);
    st_out_text(&o, "{");
    st_out_kv_str(&o, "type", type);
    if (seq >= 0)
        st_out_kv_i64(&o, "sequence_number", seq);
    if (body && body->len)
        st_out_raw(&o, body->data, body->len);
    st_out_text(&o, "}");
    st_out_to(&o, out);
    st_out_printf(&o, "event: %s\n", type);
    if (st_out_ok(&o))
        st_out_check(&o, st_sse_data(out, j.data, j.len));
    st_buf_fini(&j);
    return st_out_finish(&o);
}

void st_tr_body_start(struct st_out *o, struct st_buf *b)
{
    st_buf_init(b);
    st_out_init(o, b);
    st_out_text(o, ",");
}

enum st_status st_tr_body_event(struct st_buf *out, const char *type, int64_t seq,
                                struct st_out *o)
{
    enum st_status rc = st_out_finish(o);
    if (rc == ST_OK)
        rc = st_tr_sse_event(out, type, seq, o->buf);
    st_buf_fini(o->buf);
    return rc;
}
