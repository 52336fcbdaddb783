/* responses_reply.c -- a chat generation's output as OpenAI Responses API
 * objects (docs/API.md "/v1/responses"): the response object of a
 * non-stream reply, and the typed SSE events of a stream.
 *
 * The chat path (gen.c, gen_reply.c) does the work; where it would render
 * a chat chunk or body it calls here instead, through the struct
 * st_gen_shape st_resp_new returns (gen.h), when the request came in as
 * /v1/responses. Output items, in the order
 * the model wrote them:
 *   {"type":"reasoning","id":"rs_..","summary":[],
 *    "content":[{"type":"reasoning_text","text":..}],"status":..}
 *   {"type":"message","id":"msg_..","role":"assistant","status":..,
 *    "content":[{"type":"output_text","text":..,"annotations":[],"logprobs":[]}]}
 *   {"type":"function_call","id":"fc_..","call_id":"call_..","name":..,
 *    "arguments":..,"status":..}
 * A reply with neither text nor calls (nothing, or reasoning only) gets an
 * empty message. A reply cut at
 * max_output_tokens is status "incomplete" with incomplete_details.reason
 * "max_output_tokens"; its last item is "incomplete" too.
 *
 * Stream events (each "event: <type>" + "data: {type, sequence_number, ...}"):
 *   response.created, response.in_progress       (before the first item)
 *   per item: response.output_item.added, [response.content_part.added],
 *     deltas (response.reasoning_text.delta / response.output_text.delta /
 *     response.function_call_arguments.delta), then the matching .done
 *     events, [response.content_part.done], response.output_item.done
 *   response.completed or response.incomplete (the whole response), or on a
 *   failure after the stream began: error, then response.failed.
 * No "data: [DONE]" (OpenAI's Responses streams end without one).
 *
 * A response to be stored (st_resp_new_stored) is put into the response
 * store (responses_store.h) once it is completed or incomplete, before its
 * body or last event is handed out, so a client that chains it at once
 * finds it; a failed or cancelled one is not kept. A store that has no
 * room for it (an entry over the whole budget) leaves it unstored (logged).
 *
 * Everything here runs under call->lock (gen.h); failures to allocate mark
 * the generation broken, as the chat renderers do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "strata/log.h"
#include "server/gen/llama_json.h"
#include "server/responses/responses.h"

enum item_kind { ITEM_NONE, ITEM_REASONING, ITEM_MESSAGE, ITEM_CALL };

struct st_resp {
    struct st_gen_shape shape; /* hooks; shape.ctx = this */
    char *echo;                /* owned: request fields every response object repeats */
    int64_t seq;               /* the next event's sequence_number */
    bool started;              /* response.created and .in_progress went out */
    bool answered;             /* a message or a call item was finished */
    enum item_kind open;       /* the item being streamed */
    int32_t n_items;           /* items finished (the open one's output_index) */
    char item_id[40];
    char call_id[64];
    struct st_buf name;        /* the open call's name */
    struct st_buf text;        /* the open item's text (or a call's arguments) */
    struct st_buf items;       /* finished items, comma-separated JSON */
    struct st_resp_store *store;   /* one reference; NULL: not stored */
    uint64_t owner;            /* the store entry's (responses_store.h) */
    char *input;               /* owned: the input items to store (JSON array) */
    char id_prefix[24];        /* shape.id_prefix: "resp_<16 random hex>_" */
};

static void resp_free(void *ctx)
{
    struct st_resp *r = ctx;
    if (!r)
        return;
    free(r->echo);
    free(r->input);
    st_resp_store_unref(r->store);
    st_buf_fini(&r->name);
    st_buf_fini(&r->text);
    st_buf_fini(&r->items);
    free(r);
}

static void stream_progress(struct st_gen *g, struct st_gen_choice *ch,
                            const struct st_gen_progress *p);

/* The shape's stream_delta: Responses events carry no logprobs. */
static void stream_delta(struct st_gen *g, struct st_gen_choice *ch, const struct st_oai_delta *d,
                         const struct st_oai_logprob *lp)
{
    (void)lp;
    st_resp_stream_delta(g, ch, d);
}

struct st_gen_shape *st_resp_new(char *echo)
{
    struct st_resp *r = calloc(1, sizeof(*r));
    if (!r) {
        free(echo);
        return NULL;
    }
    r->echo = echo;
    st_buf_init(&r->name);
    st_buf_init(&r->text);
    st_buf_init(&r->items);
    /* The id is the store's key and all a GET or DELETE needs: its own 64
     * random bits, before the request id (which a client may choose, and
     * which /api/activity and the logs show), so ids neither collide nor
     * follow from a request id. 5 + 17 + 40 bytes fit g->id. */
    st_random_hex_id(r->id_prefix, sizeof(r->id_prefix) - 1, "resp_", 8);
    strcat(r->id_prefix, "_");
    r->shape = (struct st_gen_shape){ .stream_text = st_gen_stream_text_delta,
                                      .stream_delta = stream_delta,
                                      .stream_progress = stream_progress,
                                      .stream_end = st_resp_stream_end,
                                      .keep_token = st_gen_keep_token,
                                      .body = st_resp_body, .free = resp_free, .ctx = r,
                                      .id_prefix = r->id_prefix, .messages_param = "input" };
    return &r->shape;
}

struct st_gen_shape *st_resp_new_stored(char *echo, struct st_resp_store *store, uint64_t owner,
                                        char *input)
{
    struct st_gen_shape *s = st_resp_new(echo);
    if (!s) {
        free(input);
        return NULL;
    }
    struct st_resp *r = s->ctx;
    if (store && input) {
        st_resp_store_ref(store);
        r->store = store;
        r->owner = owner;
        r->input = input;
    } else {
        free(input);
    }
    return s;
}

/* The Responses state of a generation this file renders. */
static struct st_resp *resp_of(const struct st_gen *g)
{
    return g->shape->ctx;
}

/* Keep a finished response (obj: its object) when it is to be stored:
 * items, its output items comma-separated. Never fails the response. */
static void keep(const struct st_gen *g, const char *items, size_t items_len, const char *obj,
                 size_t obj_len)
{
    struct st_resp *r = resp_of(g);
    if (!r->store)
        return;
    struct st_buf out;
    st_buf_init(&out);
    struct st_out o;
    st_out_init(&o, &out);
    st_out_text(&o, "[");
    st_out_raw(&o, items, items_len);
    st_out_text(&o, "]");
    enum st_status rc = st_out_finish(&o);
    if (rc == ST_OK)
        rc = st_resp_store_put(r->store, r->owner, g->id, r->input, strlen(r->input), out.data,
                               out.len, obj, obj_len);
    st_buf_fini(&out);
    /* the answer stands either way: a response the store cannot take is
     * only not kept (its 'store' already says true: docs/API.md) */
    if (rc != ST_OK)
        st_log(ST_LOG_WARN, "http", "%s: not stored: %s", g->id,
               rc == ST_ERR_TOO_LONG ? "larger than the whole --responses-store-mb budget"
                                     : st_status_msg(rc));
}

static const char *buf_s(const struct st_buf *b)
{
    return b->data ? b->data : "";
}

/* ---- items ----------------------------------------------------------------- */

/* The content part of a reasoning or message item (content_part events). */
/* "rs_" / "msg_" / "fc_" and 24 random hex digits. */
static void new_item_id(char *out, size_t cap, enum item_kind k)
{
    st_random_hex_id(out, cap, k == ITEM_REASONING ? "rs_" : k == ITEM_MESSAGE ? "msg_" : "fc_",
                     12);
}

static void part_json(struct st_out *o, enum item_kind k, const char *text, size_t len)
{
    st_out_text(o, "{");
    st_out_kv_str(o, "type", k == ITEM_REASONING ? "reasoning_text" : "output_text");
    st_out_key(o, "text");
    st_out_json_str(o, text, len);
    if (k == ITEM_MESSAGE) {
        st_out_kv_raw(o, "annotations", "[]");
        st_out_kv_raw(o, "logprobs", "[]");
    }
    st_out_text(o, "}");
}

/* One output item. 'shell': the shape output_item.added carries (no
 * content parts yet, arguments ""). */
static void item_json(struct st_out *o, enum item_kind k, const char *id, const char *call_id,
                      const char *name, size_t name_len, const char *text, size_t len,
                      const char *status, bool shell)
{
    st_out_text(o, "{");
    st_out_kv_str(o, "id", id);
    if (k == ITEM_REASONING) {
        st_out_kv_str(o, "type", "reasoning");
        st_out_kv_raw(o, "summary", "[]");
        st_out_kv_raw(o, "content", "[");
    } else if (k == ITEM_MESSAGE) {
        st_out_kv_str(o, "type", "message");
        st_out_kv_str(o, "role", "assistant");
        st_out_kv_raw(o, "content", "[");
    }
    if (k == ITEM_CALL) {
        st_out_kv_str(o, "type", "function_call");
        st_out_kv_str(o, "call_id", call_id);
        st_out_key(o, "name");
        st_out_json_str(o, name, name_len);
        st_out_key(o, "arguments");
        st_out_json_str(o, shell ? "" : text, shell ? 0 : len);
    } else {
        if (!shell)
            part_json(o, k, text, len);
        st_out_text(o, "]");
    }
    st_out_kv_str(o, "status", status);
    st_out_text(o, "}");
}

/* ---- the response object ---------------------------------------------------- */

struct obj_args {
    const char *status;               /* in_progress, completed, incomplete, failed */
    const char *items;                /* comma-separated item JSON */
    size_t items_len;
    const struct st_oai_usage *u;     /* NULL: "usage": null */
    int64_t reasoning_tokens;
    const struct st_api_error *err;   /* failed: its message */
};

static void usage_json(struct st_out *o, const struct st_oai_usage *u, int64_t reasoning)
{
    if (!u) {
        st_out_text(o, "null");
        return;
    }
    st_out_printf(o, "{\"input_tokens\":%lld,\"input_tokens_details\":{\"cached_tokens\":"
                     "%lld},\"output_tokens\":%lld,\"output_tokens_details\":"
                     "{\"reasoning_tokens\":%lld},\"total_tokens\":%lld}",
                  (long long)u->prompt_tokens, (long long)u->cached_tokens,
                  (long long)u->completion_tokens, (long long)reasoning,
                  (long long)(u->prompt_tokens + u->completion_tokens));
}

static void obj_json(struct st_out *o, const struct st_gen *g, const struct obj_args *a)
{
    st_out_text(o, "{");
    st_out_kv_str(o, "id", g->id);
    st_out_kv_str(o, "object", "response");
    st_out_kv_i64(o, "created_at", g->created);
    st_out_kv_str(o, "status", a->status);
    if (strcmp(a->status, "completed") == 0)
        st_out_kv_i64(o, "completed_at", st_unix_seconds());
    if (a->err) {
        st_out_kv_raw(o, "error", "{");
        st_out_kv_str(o, "code", "server_error");
        st_out_kv_str(o, "message", a->err->message);
        st_out_text(o, "}");
    } else {
        st_out_kv_raw(o, "error", "null");
    }
    if (strcmp(a->status, "incomplete") == 0)
        st_out_kv_raw(o, "incomplete_details", "{\"reason\":\"max_output_tokens\"}");
    else
        st_out_kv_raw(o, "incomplete_details", "null");
    st_out_kv_str(o, "model", g->model_name);
    st_out_kv_raw(o, "output", "[");
    st_out_raw(o, a->items, a->items_len);
    st_out_text(o, "]");
    st_out_key(o, "usage");
    usage_json(o, a->u, a->reasoning_tokens);
    const char *echo = g->shape && resp_of(g)->echo ? resp_of(g)->echo : "";
    if (*echo) {
        st_out_sep(o);
        st_out_text(o, echo);
    }
    st_out_text(o, "}");
}

/* ---- stream events ------------------------------------------------------------ */

/* Frame the event whose body o holds (when it was written), and free it:
 * "event: <type>\ndata: {"type":..,"sequence_number":N<body>}\n\n". */
static enum st_status body_event(struct st_gen *g, const char *type, struct st_out *o)
{
    return st_tr_body_event(&g->out, type, resp_of(g)->seq++, o);
}

/* An event whose members are ,"response":obj (the response object), then
 * llama-server's extras when 'extras' (timings_per_token: "timings"; p:
 * return_progress's "prompt_progress"; gen/llama_json.c). */
static enum st_status response_event_obj(struct st_gen *g, const char *type,
                                         const struct st_buf *obj, bool extras,
                                         const struct st_gen_progress *p)
{
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    st_out_key(&o, "response");
    st_out_raw(&o, obj->data, obj->len);
    if (extras)
        st_llama_extra_members(&o, g, &g->choices[0], p);
    return body_event(g, type, &o);
}

static enum st_status response_event(struct st_gen *g, const char *type,
                                     const struct obj_args *a, const struct st_gen_progress *p)
{
    struct st_buf obj;
    st_buf_init(&obj);
    struct st_out o;
    st_out_init(&o, &obj);
    obj_json(&o, g, a);
    enum st_status rc = st_out_finish(&o);
    if (rc == ST_OK)
        rc = response_event_obj(g, type, &obj, p != NULL, p);
    st_buf_fini(&obj);
    return rc;
}

static enum st_status ensure_started(struct st_gen *g)
{
    struct st_resp *r = resp_of(g);
    if (r->started)
        return ST_OK;
    r->started = true;
    struct obj_args a = { .status = "in_progress", .items = "", .items_len = 0 };
    enum st_status rc = response_event(g, "response.created", &a, NULL);
    return rc == ST_OK ? response_event(g, "response.in_progress", &a, NULL) : rc;
}

/* "item_id":..,"output_index":N[,"content_index":0]. */
static void item_ref(struct st_out *o, const struct st_resp *r, bool part)
{
    st_out_kv_str(o, "item_id", r->item_id);
    st_out_kv_i64(o, "output_index", r->n_items);
    if (part)
        st_out_kv_i64(o, "content_index", 0);
}

/* output_item.added / .done: ,"output_index":N,"item":{..}. */
static enum st_status item_event(struct st_gen *g, const char *type, const char *status,
                                 bool shell)
{
    struct st_resp *r = resp_of(g);
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    st_out_kv_i64(&o, "output_index", r->n_items);
    st_out_key(&o, "item");
    item_json(&o, r->open, r->item_id, r->call_id, buf_s(&r->name), r->name.len,
              buf_s(&r->text), r->text.len, status, shell);
    return body_event(g, type, &o);
}

static enum st_status part_event(struct st_gen *g, const char *type)
{
    struct st_resp *r = resp_of(g);
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    item_ref(&o, r, true);
    st_out_key(&o, "part");
    part_json(&o, r->open, buf_s(&r->text), r->text.len);
    return body_event(g, type, &o);
}

static enum st_status open_item(struct st_gen *g, enum item_kind k, const char *call_id,
                                const char *name, size_t name_len)
{
    struct st_resp *r = resp_of(g);
    r->open = k;
    new_item_id(r->item_id, sizeof(r->item_id), k);
    snprintf(r->call_id, sizeof(r->call_id), "%s", call_id ? call_id : "");
    st_buf_reset(&r->text);
    st_buf_reset(&r->name);
    enum st_status rc = name_len ? st_buf_append(&r->name, name, name_len) : ST_OK;
    if (rc == ST_OK)
        rc = item_event(g, "response.output_item.added", "in_progress", true);
    if (rc == ST_OK && k != ITEM_CALL)
        rc = part_event(g, "response.content_part.added");
    return rc;
}

/* The .done event of the open item's text: ,..,"text":.. (a call: name, arguments). */
static enum st_status text_done(struct st_gen *g)
{
    static const char *const type[] = {
        [ITEM_REASONING] = "response.reasoning_text.done",
        [ITEM_MESSAGE] = "response.output_text.done",
        [ITEM_CALL] = "response.function_call_arguments.done",
    };
    struct st_resp *r = resp_of(g);
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    item_ref(&o, r, r->open != ITEM_CALL);
    if (r->open == ITEM_CALL) {
        st_out_key(&o, "name");
        st_out_json_str(&o, buf_s(&r->name), r->name.len);
    }
    st_out_key(&o, r->open == ITEM_CALL ? "arguments" : "text");
    st_out_json_str(&o, buf_s(&r->text), r->text.len);
    if (r->open == ITEM_MESSAGE)
        st_out_kv_raw(&o, "logprobs", "[]");
    return body_event(g, type[r->open], &o);
}

static enum st_status close_item(struct st_gen *g, const char *status)
{
    struct st_resp *r = resp_of(g);
    if (r->open == ITEM_NONE)
        return ST_OK;
    enum st_status rc = text_done(g);
    if (rc == ST_OK && r->open != ITEM_CALL)
        rc = part_event(g, "response.content_part.done");
    if (rc == ST_OK)
        rc = item_event(g, "response.output_item.done", status, false);
    if (rc == ST_OK) {
        struct st_out o;
        st_out_init(&o, &r->items);
        if (r->n_items)
            st_out_text(&o, ",");
        item_json(&o, r->open, r->item_id, r->call_id, buf_s(&r->name), r->name.len,
                  buf_s(&r->text), r->text.len, status, false);
        rc = st_out_finish(&o);
    }
    r->n_items++;
    r->answered |= r->open != ITEM_REASONING;
    r->open = ITEM_NONE;
    return rc;
}

/* A piece of the open item's text, and its delta event. */
static enum st_status add_delta(struct st_gen *g, const char *text, size_t len)
{
    struct st_resp *r = resp_of(g);
    static const char *const type[] = {
        [ITEM_REASONING] = "response.reasoning_text.delta",
        [ITEM_MESSAGE] = "response.output_text.delta",
        [ITEM_CALL] = "response.function_call_arguments.delta",
    };
    if (len == 0)
        return ST_OK;
    enum st_status rc = st_buf_append(&r->text, text, len);
    if (rc != ST_OK)
        return rc;
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    item_ref(&o, r, r->open != ITEM_CALL);
    st_out_key(&o, "delta");
    st_out_json_str(&o, text, len);
    if (r->open == ITEM_MESSAGE)
        st_out_kv_raw(&o, "logprobs", "[]");
    st_llama_extra_members(&o, g, &g->choices[0], NULL);   /* timings_per_token */
    return body_event(g, type[r->open], &o);
}

static enum st_status delta(struct st_gen *g, const struct st_oai_delta *d)
{
    struct st_resp *r = resp_of(g);
    enum st_status rc = ensure_started(g);
    if (rc != ST_OK)
        return rc;
    switch (d->kind) {
    case ST_OAI_DELTA_NONE:
        return ST_OK;
    case ST_OAI_DELTA_TOOL_START:
        rc = close_item(g, "completed");
        return rc == ST_OK ? open_item(g, ITEM_CALL, d->tool_id, d->text, d->len) : rc;
    case ST_OAI_DELTA_TOOL_ARGS:
        return r->open == ITEM_CALL ? add_delta(g, d->text, d->len) : ST_OK;
    case ST_OAI_DELTA_REASONING:
    case ST_OAI_DELTA_CONTENT: {
        enum item_kind k = d->kind == ST_OAI_DELTA_CONTENT ? ITEM_MESSAGE : ITEM_REASONING;
        if (r->open != k && d->len == 0)
            return ST_OK;
        if (r->open != k && ((rc = close_item(g, "completed")) != ST_OK ||
                             (rc = open_item(g, k, NULL, NULL, 0)) != ST_OK))
            return rc;
        return add_delta(g, d->text, d->len);
    }
    }
    return ST_OK;
}

void st_resp_stream_delta(struct st_gen *g, struct st_gen_choice *ch, const struct st_oai_delta *d)
{
    if (g->broken)
        return;
    if (delta(g, d) != ST_OK)
        g->broken = true;
    ch->produced = true;
}

/* return_progress: while the prompt is read, response.in_progress events
 * that also carry "prompt_progress" (and "timings" with
 * timings_per_token), as llama-server's. */
static void stream_progress(struct st_gen *g, struct st_gen_choice *ch,
                            const struct st_gen_progress *p)
{
    (void)ch;
    if (g->broken)
        return;
    struct obj_args a = { .status = "in_progress", .items = "", .items_len = 0 };
    enum st_status rc = ensure_started(g);
    if (rc == ST_OK)
        rc = response_event(g, "response.in_progress", &a, p);
    if (rc != ST_OK)
        g->broken = true;
}

void st_resp_stream_end(struct st_gen *g, struct st_gen_choice *ch,
                        const struct st_api_error *err, const struct st_oai_usage *u)
{
    struct st_resp *r = resp_of(g);
    if (g->broken)
        return;
    bool cut = ch->finish == ST_FINISH_LENGTH;
    enum st_status rc = ensure_started(g);
    if (rc == ST_OK)
        rc = close_item(g, err || cut ? "incomplete" : "completed");
    if (rc == ST_OK && !err && !r->answered &&   /* always a message or a call to read */
        (rc = open_item(g, ITEM_MESSAGE, NULL, NULL, 0)) == ST_OK)
        rc = close_item(g, cut ? "incomplete" : "completed");
    struct obj_args a = { .status = err ? "failed" : cut ? "incomplete" : "completed",
                          .items = buf_s(&r->items), .items_len = r->items.len, .u = u,
                          .reasoning_tokens = st_gen_reply_reasoning_tokens(ch), .err = err };
    if (rc == ST_OK && err) {
        struct st_buf b;
        struct st_out o;
        st_tr_body_start(&o, &b);
        st_out_kv_str(&o, "code", err->code[0] ? err->code : "server_error");
        st_out_kv_str(&o, "message", err->message);
        st_out_kv_raw(&o, "param", "null");
        rc = body_event(g, "error", &o);
    }
    struct st_buf obj;
    st_buf_init(&obj);
    if (rc == ST_OK) {
        struct st_out o;
        st_out_init(&o, &obj);
        obj_json(&o, g, &a);
        rc = st_out_finish(&o);
    }
    if (rc == ST_OK && !err)
        keep(g, a.items, a.items_len, obj.data, obj.len);
    if (rc == ST_OK)
        rc = response_event_obj(g, err ? "response.failed" : cut ? "response.incomplete"
                                                                 : "response.completed",
                                &obj, !err, NULL);
    st_buf_fini(&obj);
    if (rc != ST_OK)
        g->broken = true;
}

/* ---- the non-stream body -------------------------------------------------------- */

static enum st_status add_item(struct st_buf *items, int32_t *n, enum item_kind k,
                               const char *call_id, const char *name, const char *text,
                               size_t len, const char *status)
{
    char id[40];
    new_item_id(id, sizeof(id), k);
    struct st_out o;
    st_out_init(&o, items);
    if ((*n)++)
        st_out_text(&o, ",");
    item_json(&o, k, id, call_id, name, name ? strlen(name) : 0, text, len, status, false);
    return st_out_finish(&o);
}

struct calls_out {
    struct st_buf *items;
    int32_t *n;
    const char *status;   /* the last call's; the others completed */
    int32_t left;         /* calls still to come */
};

static enum st_status add_call(void *ctx, const char *id, const char *name, const char *args)
{
    struct calls_out *co = ctx;
    const char *status = --co->left > 0 ? "completed" : co->status;
    return add_item(co->items, co->n, ITEM_CALL, id, name, args, strlen(args), status);
}

static enum st_status count_call(void *ctx, const char *id, const char *name, const char *args)
{
    (void)id;
    (void)name;
    (void)args;
    ++*(int32_t *)ctx;
    return ST_OK;
}

/* The chat tool_calls array (our own JSON, gen_reply.c) as function_call items. */
static enum st_status add_calls(struct st_buf *items, int32_t *n, const char *calls, size_t len,
                                const char *status)
{
    struct calls_out co = { .items = items, .n = n, .status = status };
    enum st_status rc = st_tr_each_call(calls, len, count_call, &co.left);
    return rc == ST_OK ? st_tr_each_call(calls, len, add_call, &co) : rc;
}

enum st_status st_resp_body(struct st_buf *out, const struct st_gen *g,
                            const struct st_oai_choice *c, const struct st_oai_usage *u,
                            int64_t reasoning_tokens)
{
    bool cut = c->finish == ST_FINISH_LENGTH;
    const char *status = cut ? "incomplete" : "completed";
    struct st_buf items;
    st_buf_init(&items);
    int32_t n = 0;
    enum st_status rc = ST_OK;
    /* a cut reply: only what was being written when it was cut is
     * incomplete (and the empty message after cut reasoning), as the
     * stream has it: an item is complete once the next one began */
    bool calls = c->parsed && c->tool_calls;
    bool message = c->text_len > 0 || !calls;
    if (c->parsed && c->reasoning)
        rc = add_item(&items, &n, ITEM_REASONING, NULL, NULL, c->reasoning, c->reasoning_len,
                      c->text_len > 0 || calls ? "completed" : status);
    if (rc == ST_OK && message)
        rc = add_item(&items, &n, ITEM_MESSAGE, NULL, NULL, c->text, c->text_len,
                      calls ? "completed" : status);
    if (rc == ST_OK && calls)
        rc = add_calls(&items, &n, c->tool_calls, c->tool_calls_len, status);
    struct obj_args a = { .status = status, .items = buf_s(&items), .items_len = items.len,
                          .u = u, .reasoning_tokens = reasoning_tokens };
    size_t start = out->len;
    if (rc == ST_OK) {
        struct st_out o;
        st_out_init(&o, out);
        obj_json(&o, g, &a);
        rc = st_out_finish(&o);
    }
    if (rc == ST_OK)
        keep(g, a.items, a.items_len, out->data + start, out->len - start);
    st_buf_fini(&items);
    return rc;
}
