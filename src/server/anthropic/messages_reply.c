/* messages_reply.c -- a chat generation's output in Anthropic's Messages
 * API shapes (docs/API.md "/v1/messages"): the message object of a
 * non-stream reply and the SSE events of a stream (Anthropic's error body:
 * errors.c).
 *
 * The chat path (gen.c, gen_reply.c) does the work and calls the hooks of
 * the struct st_gen_shape st_msg_shape_new returns. Content blocks, in the
 * order the model wrote them:
 *   {"type":"thinking","thinking":..,"signature":""}   (the reasoning split off)
 *   {"type":"text","text":..}
 *   {"type":"tool_use","id":"toolu_..","name":..,"input":{..}}
 * A reply with none of them gets one empty text block (clients read
 * content[0]). stop_reason: "tool_use" (calls made), "max_tokens" (cut),
 * "stop_sequence" (one of stop_sequences ended it: stop_sequence names it,
 * from the engine's END), else "end_turn" (stop_sequence null).
 *
 * Stream (each "event: <type>" + "data: {"type":<type>,...}"):
 *   message_start {message: the object with content [] and usage}
 *   per block: content_block_start {index, content_block}, content_block_delta
 *     {index, delta: text_delta / thinking_delta / input_json_delta}...,
 *     content_block_stop {index}
 *   message_delta {delta:{stop_reason, stop_sequence}, usage}, message_stop;
 *   or on a failure after the stream began: error {error:{type, message}}.
 * SSE keep-alive comments (keepalive.c) are valid here: Anthropic's SDKs
 * skip comment lines as the SSE format says.
 *
 * The SSE framing and the walk over chat tool_calls are translate.c's.
 *
 * Everything runs under call->lock (gen.h); allocation failures mark the
 * generation broken, as the chat renderers do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server/anthropic/anthropic.h"

enum block_kind { BLOCK_NONE, BLOCK_TEXT, BLOCK_THINKING, BLOCK_TOOL };

struct st_msg {
    struct st_gen_shape shape;   /* hooks; shape.ctx = this */
    bool started;                /* message_start went out */
    bool calls;                  /* a tool_use block was opened */
    enum block_kind open;        /* the block being streamed */
    int32_t n_blocks;            /* blocks opened (the open one's index + 1) */
};

static struct st_msg *msg_of(const struct st_gen *g)
{
    return g->shape->ctx;
}

/* ---- pieces ----------------------------------------------------------------------- */

const char *st_msg_stop_reason(enum st_finish finish, bool has_calls, const char *stop_seq)
{
    if (finish == ST_FINISH_LENGTH)
        return "max_tokens";
    if (has_calls)
        return "tool_use";
    return finish == ST_FINISH_STOP && stop_seq ? "stop_sequence" : "end_turn";
}

/* "stop_reason":..,"stop_sequence":.. (the string only with "stop_sequence") */
static void stop_json(struct st_out *o, const char *stop_reason, const char *stop_seq)
{
    bool named = stop_reason && strcmp(stop_reason, "stop_sequence") == 0 && stop_seq;
    st_out_kv_str(o, "stop_reason", stop_reason);
    st_out_kv_str(o, "stop_sequence", named ? stop_seq : NULL);
}

/* Our tool call ids are "call_<hex>" (gen_reply.c); Anthropic's "toolu_<..>". */
static void tool_id_json(struct st_out *o, const char *id)
{
    char buf[96];
    snprintf(buf, sizeof(buf), "toolu_%s", strncmp(id, "call_", 5) == 0 ? id + 5 : id);
    st_out_json_cstr(o, buf);
}

/* in: the prompt's tokens, cached: those of them read from the prefix
 * cache. Anthropic's input_tokens excludes cache reads (a request's input
 * is input_tokens + cache_creation_input_tokens + cache_read_input_tokens),
 * so it is in - cached. */
static void usage_json(struct st_out *o, int64_t in, int64_t cached, int64_t out)
{
    int64_t fresh = in > cached ? in - cached : 0;
    st_out_printf(o, "{\"input_tokens\":%lld,\"cache_creation_input_tokens\":0,"
                     "\"cache_read_input_tokens\":%lld,\"output_tokens\":%lld}",
                  (long long)fresh, (long long)cached, (long long)out);
}

/* {"id":..,"type":"message","role":"assistant","model":..,"content":[ -- the
 * caller writes the blocks and calls msg_tail. */
static void msg_head(struct st_out *o, const struct st_gen *g)
{
    st_out_text(o, "{");
    st_out_kv_str(o, "id", g->id);
    st_out_kv_str(o, "type", "message");
    st_out_kv_str(o, "role", "assistant");
    st_out_kv_str(o, "model", g->model_name);
    st_out_kv_raw(o, "content", "[");
}

/* ],"stop_reason":..,"stop_sequence":..,"usage":{..}} */
static void msg_tail(struct st_out *o, const char *stop_reason, const char *stop_seq,
                     int64_t in, int64_t cached, int64_t out)
{
    st_out_text(o, "]");
    stop_json(o, stop_reason, stop_seq);
    st_out_key(o, "usage");
    usage_json(o, in, cached, out);
    st_out_text(o, "}");
}

/* A content block, after a comma unless it is the first; 'input'
 * (tool_use) is JSON text, NULL: {}. */
static void block_json(struct st_out *o, enum block_kind k, const char *text, size_t len,
                       const char *id, const char *input)
{
    st_out_sep(o);
    st_out_text(o, "{");
    switch (k) {
    case BLOCK_THINKING:
        st_out_kv_str(o, "type", "thinking");
        st_out_key(o, "thinking");
        st_out_json_str(o, text, len);
        st_out_kv_raw(o, "signature", "\"\"");
        break;
    case BLOCK_TOOL:
        st_out_kv_str(o, "type", "tool_use");
        st_out_key(o, "id");
        tool_id_json(o, id);
        st_out_key(o, "name");
        st_out_json_str(o, text, len);
        st_out_kv_raw(o, "input", input ? input : "{}");
        break;
    case BLOCK_TEXT:
    case BLOCK_NONE:
        st_out_kv_str(o, "type", "text");
        st_out_key(o, "text");
        st_out_json_str(o, text, len);
        break;
    }
    st_out_text(o, "}");
}

/* ---- stream events ---------------------------------------------------------------- */

/* "event: <type>\ndata: {"type":"<type>"<body>}\n\n"; body's members each
 * start with a comma. */
static enum st_status event(struct st_gen *g, const char *type, const struct st_buf *body)
{
    return st_tr_sse_event(&g->out, type, -1, body);
}

/* Frame the event whose body o holds (when it was written), and free it. */
static enum st_status body_event(struct st_gen *g, const char *type, struct st_out *o)
{
    return st_tr_body_event(&g->out, type, -1, o);
}

static enum st_status ensure_started(struct st_gen *g, const struct st_gen_choice *ch)
{
    struct st_msg *m = msg_of(g);
    if (m->started)
        return ST_OK;
    m->started = true;
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    st_out_key(&o, "message");
    msg_head(&o, g);
    msg_tail(&o, NULL, NULL, ch->n_prompt, ch->n_cached, 0);
    return body_event(g, "message_start", &o);
}

static enum st_status close_block(struct st_gen *g)
{
    struct st_msg *m = msg_of(g);
    if (m->open == BLOCK_NONE)
        return ST_OK;
    m->open = BLOCK_NONE;
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    st_out_kv_i64(&o, "index", m->n_blocks - 1);
    return body_event(g, "content_block_stop", &o);
}

/* content_block_start for a new block (the open one closed first). */
static enum st_status open_block(struct st_gen *g, enum block_kind k, const char *name,
                                 size_t name_len, const char *id)
{
    struct st_msg *m = msg_of(g);
    enum st_status rc = close_block(g);
    if (rc != ST_OK)
        return rc;
    m->open = k;
    m->calls |= k == BLOCK_TOOL;
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    st_out_kv_i64(&o, "index", m->n_blocks++);
    st_out_key(&o, "content_block");
    block_json(&o, k, k == BLOCK_TOOL ? name : "", k == BLOCK_TOOL ? name_len : 0, id ? id : "",
               NULL);
    return body_event(g, "content_block_start", &o);
}

static enum st_status block_delta(struct st_gen *g, const char *text, size_t len)
{
    static const char *const type[] = {
        [BLOCK_TEXT] = "text_delta",
        [BLOCK_THINKING] = "thinking_delta",
        [BLOCK_TOOL] = "input_json_delta",
    };
    static const char *const field[] = {
        [BLOCK_TEXT] = "text",
        [BLOCK_THINKING] = "thinking",
        [BLOCK_TOOL] = "partial_json",
    };
    struct st_msg *m = msg_of(g);
    if (len == 0 || m->open == BLOCK_NONE)
        return ST_OK;
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    st_out_kv_i64(&o, "index", m->n_blocks - 1);
    st_out_kv_raw(&o, "delta", "{");
    st_out_kv_str(&o, "type", type[m->open]);
    st_out_key(&o, field[m->open]);
    st_out_json_str(&o, text, len);
    st_out_text(&o, "}");
    return body_event(g, "content_block_delta", &o);
}

static enum st_status delta(struct st_gen *g, const struct st_gen_choice *ch,
                            const struct st_oai_delta *d)
{
    struct st_msg *m = msg_of(g);
    enum st_status rc = ensure_started(g, ch);
    if (rc != ST_OK)
        return rc;
    switch (d->kind) {
    case ST_OAI_DELTA_NONE:
        return ST_OK;
    case ST_OAI_DELTA_TOOL_START:
        return open_block(g, BLOCK_TOOL, d->text, d->len, d->tool_id);
    case ST_OAI_DELTA_TOOL_ARGS:
        return m->open == BLOCK_TOOL ? block_delta(g, d->text, d->len) : ST_OK;
    case ST_OAI_DELTA_REASONING:
    case ST_OAI_DELTA_CONTENT: {
        enum block_kind k = d->kind == ST_OAI_DELTA_CONTENT ? BLOCK_TEXT : BLOCK_THINKING;
        if (d->len == 0)
            return ST_OK;
        if (m->open != k && (rc = open_block(g, k, NULL, 0, NULL)) != ST_OK)
            return rc;
        return block_delta(g, d->text, d->len);
    }
    }
    return ST_OK;
}

static void msg_stream_delta(struct st_gen *g, struct st_gen_choice *ch,
                             const struct st_oai_delta *d, const struct st_oai_logprob *lp)
{
    (void)lp;   /* Anthropic's events carry no logprobs */
    if (g->broken)
        return;
    if (delta(g, ch, d) != ST_OK)
        g->broken = true;
    ch->produced = true;
}

static enum st_status error_event(struct st_gen *g, const struct st_api_error *err)
{
    struct st_buf j;
    st_buf_init(&j);
    enum st_status rc = st_anthropic_error_json(&j, err);
    if (rc == ST_OK)
        rc = st_buf_append(&g->out, ST_LIT("event: error\n"));
    if (rc == ST_OK)
        rc = st_sse_data(&g->out, j.data, j.len);
    st_buf_fini(&j);
    return rc;
}

static void msg_stream_end(struct st_gen *g, struct st_gen_choice *ch,
                           const struct st_api_error *err, const struct st_oai_usage *u)
{
    struct st_msg *m = msg_of(g);
    if (g->broken)
        return;
    if (err) {   /* Anthropic ends a failed stream with the error event alone */
        if (error_event(g, err) != ST_OK)
            g->broken = true;
        return;
    }
    enum st_status rc = ensure_started(g, ch);
    if (rc == ST_OK && m->n_blocks == 0)   /* always a block to read */
        rc = open_block(g, BLOCK_TEXT, NULL, 0, NULL);
    if (rc == ST_OK)
        rc = close_block(g);
    if (rc != ST_OK) {
        g->broken = true;
        return;
    }
    struct st_buf b;
    struct st_out o;
    st_tr_body_start(&o, &b);
    st_out_kv_raw(&o, "delta", "{");
    stop_json(&o, st_msg_stop_reason(ch->finish, m->calls, ch->stop_seq), ch->stop_seq);
    st_out_text(&o, "}");
    st_out_key(&o, "usage");
    if (u)
        usage_json(&o, u->prompt_tokens, u->cached_tokens, u->completion_tokens);
    else
        usage_json(&o, ch->n_prompt, ch->n_cached, ch->n_generated);
    rc = body_event(g, "message_delta", &o);
    if (rc == ST_OK)
        rc = event(g, "message_stop", NULL);
    if (rc != ST_OK)
        g->broken = true;
}

/* ---- the non-stream body ------------------------------------------------------------ */

/* The chat tool_calls array (our own JSON, gen_reply.c) as tool_use blocks;
 * arguments that are not a JSON object become input {} (the model wrote
 * something else: the text is lost, as no Anthropic field can carry it). */
static enum st_status add_call(void *ctx, const char *id, const char *name, const char *args)
{
    struct st_out *o = ctx;
    cJSON *in = cJSON_Parse(args);
    char *input = cJSON_IsObject(in) ? cJSON_PrintUnformatted(in) : NULL;
    block_json(o, BLOCK_TOOL, name, strlen(name), id, input);
    cJSON_free(input);
    cJSON_Delete(in);
    return st_out_finish(o);
}

static enum st_status msg_body(struct st_buf *out, const struct st_gen *g,
                               const struct st_oai_choice *c, const struct st_oai_usage *u,
                               int64_t reasoning_tokens)
{
    (void)reasoning_tokens;   /* Anthropic's usage has no such count */
    bool calls = c->parsed && c->tool_calls;
    bool thinking = c->parsed && c->reasoning;
    struct st_out o;
    st_out_init(&o, out);
    msg_head(&o, g);
    if (thinking)
        block_json(&o, BLOCK_THINKING, c->reasoning, c->reasoning_len, NULL, NULL);
    if (c->text_len > 0 || (!calls && !thinking))
        block_json(&o, BLOCK_TEXT, c->text, c->text_len, NULL, NULL);
    if (calls && st_out_ok(&o))
        st_out_check(&o, st_tr_each_call(c->tool_calls, c->tool_calls_len, add_call, &o));
    const char *seq = c->index >= 0 && c->index < g->n_choices ? g->choices[c->index].stop_seq
                                                                : NULL;
    msg_tail(&o, st_msg_stop_reason(c->finish, calls, seq), seq, u->prompt_tokens,
             u->cached_tokens, u->completion_tokens);
    return st_out_finish(&o);
}

/* ---- the shape ------------------------------------------------------------------------ */

static void msg_free(void *ctx)
{
    free(ctx);
}

struct st_gen_shape *st_msg_shape_new(void)
{
    struct st_msg *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->shape = (struct st_gen_shape){ .stream_text = st_gen_stream_text_delta,
                                      .stream_delta = msg_stream_delta,
                                      .stream_end = msg_stream_end,
                                      .keep_token = st_gen_keep_token, .body = msg_body,
                                      .free = msg_free, .ctx = m, .id_prefix = "msg_",
                                      .messages_param = "messages" };
    return &m->shape;
}
