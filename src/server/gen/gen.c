/* gen.c -- events in, results out, for one completion request.
 *
 * Threads: st_gen_emit runs on engine threads (or on whichever thread
 * ends a request that never reached an engine: a submit that sheds it, a
 * cancel); the rest runs on libmicrohttpd threads. All of it meets under
 * call->lock:
 *
 *   emit (engine)                          MHD thread
 *   -------------                          ----------
 *   lock                                   access handler / content reader:
 *   stream: render chunk -> gen->out         lock
 *   else:   append text / logprobs           data or end? -> hand it over
 *   END: finish chunk, usage, [DONE]         nothing?     -> suspend
 *   ready? and suspended -> resume           unlock
 *   unlock
 *
 * Headers of a stream are sent with its first event, not at submit: a
 * request that is shed or fails before its first token is answered with a
 * proper HTTP status (429, 500) instead of a 200 stream carrying an error.
 * The first event may be an SSE keep-alive comment (keepalive.c) after
 * --sse-keepalive idle seconds; a failure after that is an in-stream
 * error event (stream_end).
 *
 * Lifetime: every engine request holds a call reference (dropped in its
 * on_free), and the MHD side holds one until the completion callback; the
 * call, and this state with it, goes with the last of them.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/log.h"
#include "server/gen/llama_json.h"

static int64_t now_ns(void)
{
    return st_clock_now(st_clock_real());
}

struct st_gen *st_gen_new(int32_t n)
{
    struct st_gen *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->choices = calloc(n > 0 ? (size_t)n : 1, sizeof(*g->choices));
    if (!g->choices) {
        free(g);
        return NULL;
    }
    g->n_choices = n;
    for (int32_t i = 0; i < n; i++) {
        g->choices[i].index = i;
        st_buf_init(&g->choices[i].text);
        st_oai_lp_acc_init(&g->choices[i].lp);
        st_buf_init(&g->choices[i].plp);
    }
    st_buf_init(&g->out);
    g->last_out_ns = now_ns();
    return g;
}

void st_gen_shape_free(struct st_gen_shape *s)
{
    if (s && s->free)
        s->free(s->ctx);
}

void st_gen_free(struct st_gen *g)
{
    if (!g)
        return;
    for (int32_t i = 0; i < g->n_choices; i++) {
        st_buf_fini(&g->choices[i].text);
        st_oai_lp_acc_fini(&g->choices[i].lp);
        st_buf_fini(&g->choices[i].plp);
        st_gen_reply_free(g->choices[i].reply);
        free(g->choices[i].embd);
        free(g->choices[i].stop_seq);
        st_buf_fini(&g->choices[i].ids);
        st_buf_fini(&g->choices[i].probs);
    }
    free(g->llama.settings);
    st_gen_shape_free(g->resp);
    free(g->choices);
    st_buf_fini(&g->out);
    free(g);
}

static struct st_oai_meta meta_of(const struct st_gen *g)
{
    struct st_oai_meta m = { g->kind, g->id, g->model_name, g->created, g->include_usage };
    return m;
}

/* Prompt tokens count once per prompt, not once per choice. */
static struct st_oai_usage usage_of(const struct st_gen *g)
{
    struct st_oai_usage u = { 0, 0, 0, 0 };
    for (int32_t i = 0; i < g->n_choices; i++) {
        const struct st_gen_choice *ch = &g->choices[i];
        if (i == 0 || g->choices[i - 1].prompt != ch->prompt) {
            u.prompt_tokens += ch->n_prompt;
            u.cached_tokens += ch->n_cached;
        }
        u.completion_tokens += ch->n_generated;
        u.reasoning_tokens += st_gen_reply_reasoning_tokens(ch);
    }
    return u;
}

static bool finished_ok(const struct st_gen_choice *ch)
{
    return ch->ended && (ch->finish == ST_FINISH_STOP || ch->finish == ST_FINISH_LENGTH);
}

/* The error a choice that did not finish normally is answered with. */
static void choice_error(const struct st_gen_choice *ch, struct st_api_error *e)
{
    enum st_status s = ch->status;
    if (s == ST_OK)
        s = ch->finish == ST_FINISH_CANCELLED ? ST_ERR_CANCELLED : ST_ERR_INTERNAL;
    const char *code = s == ST_ERR_QUEUE_FULL ? "queue_full"
                     : s == ST_ERR_TOO_LONG   ? "context_length_exceeded"
                     : s == ST_ERR_LOADING    ? "model_load_failed"
                                              : NULL;
    st_api_error_set(e, s, NULL, code, "%s", ch->error[0] ? ch->error : st_status_msg(s));
    if (s == ST_ERR_QUEUE_FULL)
        e->retry_after_s = 1;
}

/* ---- stream rendering (under call->lock) ----------------------------- */

typedef enum st_status chunk_fn(struct st_buf *out, const struct st_gen *g,
                                const struct st_gen_choice *ch, const void *arg);

/* Render one chunk with 'fn' and frame it as an SSE event onto g->out. */
static void put_chunk(struct st_gen *g, const struct st_gen_choice *ch, chunk_fn *fn,
                      const void *arg)
{
    if (g->broken)
        return;
    struct st_buf json;
    st_buf_init(&json);
    enum st_status rc = fn(&json, g, ch, arg);
    if (rc == ST_OK)
        rc = st_sse_data(&g->out, json.data ? json.data : "", json.len);
    st_buf_fini(&json);
    if (rc != ST_OK)
        g->broken = true;
}

static enum st_status c_role(struct st_buf *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, const void *arg)
{
    struct st_oai_meta m = meta_of(g);
    (void)arg;
    return st_oai_chunk_role(o, &m, ch->index);
}

struct text_arg {
    const char *text;
    size_t len;
    const struct st_oai_logprob *lp;
};

static enum st_status c_text(struct st_buf *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, const void *arg)
{
    const struct text_arg *t = arg;
    struct st_oai_meta m = meta_of(g);
    return st_oai_chunk_text(o, &m, ch->index, t->text, t->len, t->lp);
}

/* /completion, /infill (llama-server's shape, llama_json.c) */
struct llama_arg {
    const char *text;
    size_t len;
    const struct st_event *ev;
};

static enum st_status c_llama_text(struct st_buf *o, const struct st_gen *g,
                                   const struct st_gen_choice *ch, const void *arg)
{
    const struct llama_arg *t = arg;
    return st_llama_chunk(o, g, ch, t->text, t->len, t->ev);
}

static enum st_status c_llama_final(struct st_buf *o, const struct st_gen *g,
                                    const struct st_gen_choice *ch, const void *arg)
{
    (void)arg;
    return st_llama_final(o, g, ch, true);
}

static enum st_status c_finish(struct st_buf *o, const struct st_gen *g,
                               const struct st_gen_choice *ch, const void *arg)
{
    struct st_oai_meta m = meta_of(g);
    (void)arg;
    return st_oai_chunk_finish_reason(o, &m, ch->index, st_gen_reply_finish_reason(ch));
}

static enum st_status c_error(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const void *arg)
{
    struct st_api_error e;
    (void)g;
    (void)arg;
    choice_error(ch, &e);
    return st_api_error_json(o, &e);
}

static enum st_status c_api_error(struct st_buf *o, const struct st_gen *g,
                                  const struct st_gen_choice *ch, const void *arg)
{
    (void)g;
    (void)ch;
    return st_api_error_json(o, arg);
}

static enum st_status c_usage(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const void *arg)
{
    struct st_oai_meta m = meta_of(g);
    struct st_oai_usage u = usage_of(g);
    (void)ch;
    (void)arg;
    return st_oai_chunk_usage(o, &m, &u);
}

/* A stream the server cut (back-pressure): each choice's end is the cut's
 * error, and the last one's [DONE] where the shape has one, so a client
 * that reads on sees why its answer is short. */
static void stream_end_cut(struct st_gen *g, struct st_gen_choice *ch)
{
    bool last = g->n_ended == g->n_choices;
    g->broken = false;   /* the end is small: always rendered */
    if (g->resp) {
        struct st_oai_usage u = usage_of(g);
        g->resp->stream_end(g, ch, &g->cut_error, &u);
    } else {
        put_chunk(g, ch, c_api_error, &g->cut_error);
        if (last && !g->llama.on && !g->broken && st_sse_done(&g->out) != ST_OK)
            g->broken = true;
    }
    g->stream_done = last;
}

static void stream_end(struct st_gen *g, struct st_gen_choice *ch)
{
    if (g->cut) {
        stream_end_cut(g, ch);
        return;
    }
    if (g->resp) {   /* /v1/responses, /v1/messages: one choice; no [DONE] */
        struct st_api_error e;
        struct st_oai_usage u = usage_of(g);
        bool failed = !finished_ok(ch) && ch->status != ST_OK && ch->status != ST_ERR_CANCELLED;
        if (failed)
            choice_error(ch, &e);
        if (finished_ok(ch) || failed)
            g->resp->stream_end(g, ch, failed ? &e : NULL, &u);
        g->stream_done = g->n_ended == g->n_choices;
        return;
    }
    if (g->llama.on) {   /* each choice's last object says stop: true; no [DONE] */
        if (finished_ok(ch))
            put_chunk(g, ch, c_llama_final, NULL);
        else if (ch->status != ST_OK && ch->status != ST_ERR_CANCELLED)
            put_chunk(g, ch, c_error, NULL);
        g->stream_done = g->n_ended == g->n_choices;
        return;
    }
    if (finished_ok(ch)) {
        if (g->kind == ST_OAI_CHAT && !ch->role_sent)
            put_chunk(g, ch, c_role, NULL);
        ch->role_sent = true;
        put_chunk(g, ch, c_finish, NULL);
    } else if (ch->status != ST_OK && ch->status != ST_ERR_CANCELLED) {
        put_chunk(g, ch, c_error, NULL);   /* a client that left sees nothing anyway */
    }
    if (g->n_ended == g->n_choices) {
        if (g->include_usage)
            put_chunk(g, ch, c_usage, NULL);
        if (!g->broken && st_sse_done(&g->out) != ST_OK)
            g->broken = true;
        g->stream_done = true;
    }
}

/* ---- events ----------------------------------------------------------- */

/* The logprobs view of a token event: the token's own raw bytes (its
 * piece, or its entry among the alternatives), never the visible text,
 * which holds back or replaces a partial UTF-8 character. */
static void logprob_of(const struct st_event *ev, const struct st_gen_choice *ch,
                       struct st_oai_logprob *lp)
{
    memset(lp, 0, sizeof(*lp));
    lp->text = ev->text ? ev->text : "";
    lp->text_len = ev->text ? ev->text_len : 0;
    if (ev->piece) {
        lp->text = ev->piece;
        lp->text_len = ev->piece_len;
    }
    for (int32_t i = 0; i < ev->n_top; i++) {
        if (ev->top[i].token == ev->token && ev->top[i].n_bytes >= 0) {
            lp->text = ev->top[i].bytes;
            lp->text_len = (size_t)ST_MIN(ev->top[i].n_bytes, (int32_t)sizeof(ev->top[i].bytes));
            break;
        }
    }
    lp->logprob = ev->logprob;
    lp->top = ev->top;
    lp->n_top = ev->n_top;
    lp->text_offset = ch->text_offset;
}

/* A token of a llama-server shaped answer: every token is a stream object
 * (its id and probabilities even when its text is held back). */
static void on_llama_token(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                           const struct st_event *ev, const char *text, size_t len)
{
    /* the text released just before END comes with the end-of-generation
     * token, which n_generated does not count and the answer leaves out */
    bool fresh = ch->n_generated > ch->n_llama_tokens;
    ch->n_llama_tokens = ch->n_generated;
    if (g->stream && !c->conn_done) {
        struct llama_arg t = { text, len, fresh ? ev : NULL };
        put_chunk(g, ch, c_llama_text, &t);
        ch->produced = true;
    } else if (!g->stream) {
        if (st_buf_append(&ch->text, text, len) != ST_OK ||
            (fresh && st_llama_keep(g, ch, ev) != ST_OK))
            g->broken = true;
    }
    ch->text_offset += (int64_t)len;
}

static void on_token(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                     const struct st_event *ev)
{
    if (!ch->first_token_ns)
        ch->first_token_ns = now_ns();
    if (g->llama.on) {
        on_llama_token(c, g, ch, ev, ev->text ? ev->text : "", ev->text ? ev->text_len : 0);
        return;
    }
    struct st_oai_logprob lp;
    if (g->logprobs)
        logprob_of(ev, ch, &lp);
    const char *text = ev->text ? ev->text : "";
    size_t len = ev->text ? ev->text_len : 0;
    if (g->stream && !c->conn_done) {
        if (g->kind == ST_OAI_CHAT && !ch->role_sent && !g->resp)
            put_chunk(g, ch, c_role, NULL);
        ch->role_sent = true;
        if (ch->reply) {
            st_gen_reply_token(c, g, ch, text, len, g->logprobs ? &lp : NULL);
        } else if (g->resp && len) {   /* nothing parsed: all of it is the message */
            struct st_oai_delta d = { ST_OAI_DELTA_CONTENT, text, len, 0, NULL };
            g->resp->stream_delta(g, ch, &d);
        } else if (len || g->logprobs) {
            struct text_arg t = { text, len, g->logprobs ? &lp : NULL };
            put_chunk(g, ch, c_text, &t);
            ch->produced = true;
        }
    } else if (!g->stream) {
        if (ch->reply)
            st_gen_reply_token(c, g, ch, text, len, NULL);
        else if (st_buf_append(&ch->text, text, len) != ST_OK)
            g->broken = true;
        if (g->logprobs && st_oai_lp_acc_add(&ch->lp, g->kind, &lp) != ST_OK)
            g->broken = true;
    }
    ch->text_offset += (int64_t)len;
}

struct echo_arg {
    const struct st_buf *text;
    const struct st_oai_lp_acc *lp;   /* NULL: "logprobs": null */
};

static enum st_status c_echo(struct st_buf *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, const void *arg)
{
    const struct echo_arg *a = arg;
    struct st_oai_meta m = meta_of(g);
    return st_oai_chunk_text_acc(o, &m, ch->index, a->text->data ? a->text->data : "",
                                 a->text->len, a->lp);
}

/* One echoed prompt token: its text, and with logprobs its legacy entry
 * (the first token's null). Non-stream: into the choice's text and
 * logprobs; stream: gathered there until the prompt's chunk goes out. */
static void echo_token(struct st_gen *g, struct st_gen_choice *ch, const struct st_prompt_token *t)
{
    size_t n = (size_t)ST_MIN(ST_MAX(t->n_text, 0), (int32_t)sizeof(t->text));
    if (st_buf_append(&ch->text, t->text, n) != ST_OK)
        g->broken = true;
    if (g->logprobs) {
        struct st_oai_logprob lp;
        memset(&lp, 0, sizeof(lp));
        lp.text = t->text;
        lp.text_len = n;
        lp.logprob = t->logprob;
        lp.top = t->top;
        lp.n_top = ST_MIN(ST_MAX(g->echo_top, 0), t->n_top);
        lp.text_offset = ch->text_offset;
        lp.null_entry = !t->has_logprob;
        lp.add_self = true;
        lp.token = t->token;
        if (st_oai_lp_acc_add(&ch->lp, g->kind, &lp) != ST_OK)
            g->broken = true;
    }
    ch->text_offset += (int64_t)n;
}

/* A run of prompt tokens (echo, prompt_logprobs). */
static void on_prompt(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                      const struct st_event *ev)
{
    bool last = false;
    for (int32_t i = 0; i < ev->n_ptok; i++) {
        const struct st_prompt_token *t = &ev->ptok[i];
        if (g->echo)
            echo_token(g, ch, t);
        if (g->prompt_lp >= 0) {
            if (st_oai_prompt_lp_add(&ch->plp, ch->n_plp == 0, t, g->prompt_lp) != ST_OK)
                g->broken = true;
            ch->n_plp++;
        }
        last |= t->pos == ev->n_prompt - 1;
    }
    if (!g->stream || !g->echo || !last || ch->echo_sent || c->conn_done)
        return;
    /* stream: the whole prompt as one chunk before the first token's */
    struct echo_arg a = { &ch->text, g->logprobs ? &ch->lp : NULL };
    put_chunk(g, ch, c_echo, &a);
    ch->echo_sent = true;
    ch->produced = true;
    st_buf_reset(&ch->text);
    st_oai_lp_acc_fini(&ch->lp);
    st_oai_lp_acc_init(&ch->lp);
}

static void on_end(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                   const struct st_event *ev)
{
    if (ch->ended)
        return;
    ch->ended = true;
    g->n_ended++;
    ch->finish = ev->finish;
    ch->status = ev->status;
    if (ch->finish == ST_FINISH_ERROR && ch->status == ST_OK)
        ch->status = ST_ERR_INTERNAL;
    snprintf(ch->error, sizeof(ch->error), "%s", ev->error ? ev->error : "");
    ch->stop_seq = ev->stop_text ? strdup(ev->stop_text) : NULL;
    if (ch->reply && !g->cut)
        st_gen_reply_end(c, g, ch);     /* what the parser held back */
    if (g->stream && !c->conn_done)
        stream_end(g, ch);
}

/* /v1/embeddings: keep the item's vector (its only event before END). */
static void on_embed(struct st_gen *g, struct st_gen_choice *ch, const struct st_event *ev)
{
    if (!g->embed.on || ev->n_embd != g->embed.n_embd || ch->embd)
        return;   /* no vector kept: the call answers an error (reply_body_locked) */
    ch->embd = malloc((size_t)ev->n_embd * sizeof(*ch->embd));
    if (ch->embd)
        memcpy(ch->embd, ev->embd, (size_t)ev->n_embd * sizeof(*ch->embd));
}

/* Back-pressure: a stream whose client stopped reading holds at most
 * --stream-buffer bytes; past that it is cut (no more chunks; its requests
 * are cancelled by the caller, freeing their slots). True when cut now. */
static bool check_backlog_locked(struct st_call *c, struct st_gen *g, size_t *backlog)
{
    size_t cap = c->srv->cfg.stream_buffer;
    *backlog = g->out.len - g->out_off;
    if (!g->stream || g->cut || g->stream_done || c->conn_done || cap == 0 || *backlog <= cap)
        return false;
    g->cut = true;
    st_api_error_set(&g->cut_error, ST_ERR_CANCELLED, NULL, "stream_buffer_full",
                     "The client did not read the stream: %zu bytes were waiting for it "
                     "(--stream-buffer %zu); the request was cancelled.", *backlog, cap);
    g->cut_error.http = 503;
    return true;
}

void st_gen_emit(void *ctx, const struct st_event *ev)
{
    struct st_gen_choice *ch = ctx;
    struct st_call *c = ch->call;
    struct st_gen_log log;
    size_t backlog;
    pthread_mutex_lock(&c->lock);
    struct st_gen *g = c->gen;
    ch->n_prompt = ev->n_prompt;
    ch->n_generated = ev->n_generated;
    ch->n_cached = ev->n_cached;
    if (ev->kind == ST_EVENT_END)
        on_end(c, g, ch, ev);
    else if (g->cut)   /* a cut stream takes nothing more but its end */
        (void)0;
    else if (ev->kind == ST_EVENT_TOKEN)
        on_token(c, g, ch, ev);
    else if (ev->kind == ST_EVENT_PROMPT)
        on_prompt(c, g, ch, ev);
    else if (ev->kind == ST_EVENT_EMBED)
        on_embed(g, ch, ev);
    bool cut_now = check_backlog_locked(c, g, &backlog);
    if (st_gen_ready_locked(c))
        st_call_resume_locked(c);
    st_gen_log_take_locked(c, &log);
    pthread_mutex_unlock(&c->lock);
    st_gen_log_flush(&log);
    if (cut_now) {
        st_log(ST_LOG_WARN, "http", "request %s: the client does not read its stream; %zu "
               "bytes waiting (--stream-buffer %zu): cancelled", c->request_id, backlog,
               c->srv->cfg.stream_buffer);
        st_gen_cancel_all(c);   /* no engine lock is held while emitting */
    }
}

void st_gen_req_on_free(struct st_request *req)
{
    struct st_gen_choice *ch = req->emit_ctx;
    if (ch)
        st_call_unref(ch->call);
}

void st_gen_end_unsubmitted_locked(struct st_call *c, struct st_gen_choice *ch,
                                   enum st_status status, const char *msg)
{
    struct st_gen *g = c->gen;
    if (ch->ended || ch->submitted)
        return;
    ch->ended = true;
    g->n_ended++;
    ch->finish = ST_FINISH_ERROR;
    ch->status = status;
    snprintf(ch->error, sizeof(ch->error), "%s", msg ? msg : "");
}

/* ---- the MHD side ------------------------------------------------------ */

/* A call holds its generation: the last reference frees both. */
void st_call_unref(struct st_call *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    st_gen_free(c->gen);
    st_buf_fini(&c->body);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

bool st_call_suspend_locked(struct st_call *c)
{
    if (c->stopping || atomic_load(&c->srv->stopping) || c->conn_done ||
        st_gen_ready_locked(c))
        return false;
    c->suspended = true;
    c->suspend_gen++;
    MHD_suspend_connection(c->mhd);
    return true;
}

bool st_gen_ready_locked(const struct st_call *c)
{
    const struct st_gen *g = c->gen;
    if (c->stopping)
        return true;
    if (!g)
        return false;
    if (g->broken || g->n_ended == g->n_choices)
        return true;
    return g->stream && g->out.len > g->out_off;
}

/* Stream: answer with an HTTP error instead when every choice ended
 * before producing anything and at least one failed. */
static const struct st_gen_choice *stream_failed_early(const struct st_gen *g)
{
    if (g->n_ended < g->n_choices)
        return NULL;
    const struct st_gen_choice *bad = NULL;
    for (int32_t i = 0; i < g->n_choices; i++) {
        const struct st_gen_choice *ch = &g->choices[i];
        if (ch->produced || finished_ok(ch))
            return NULL;
        if (!bad)
            bad = ch;
    }
    return bad;
}

/* Non-stream: the whole body, or the first failure. */
static enum st_route_result reply_body_locked(struct st_call *c, struct st_gen *g,
                                              struct st_buf *body, struct st_api_error *e,
                                              bool *is_error)
{
    *is_error = false;
    for (int32_t i = 0; i < g->n_choices; i++) {
        const struct st_gen_choice *ch = &g->choices[i];
        if (!finished_ok(ch)) {
            choice_error(ch, e);
            *is_error = true;
            return ST_ROUTE_DONE;
        }
        if (g->embed.on && !ch->embd) {   /* ended without its vector kept */
            st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "%s", st_status_msg(ST_ERR_NOMEM));
            *is_error = true;
            return ST_ROUTE_DONE;
        }
    }
    if (g->embed.on)
        return st_embed_gen_body(body, g) == ST_OK ? ST_ROUTE_DONE : ST_ROUTE_FAIL;
    if (g->llama.on)
        return st_llama_body(body, g) == ST_OK ? ST_ROUTE_DONE : ST_ROUTE_FAIL;
    size_t n = g->n_choices > 0 ? (size_t)g->n_choices : 1;
    struct st_oai_choice *cs = calloc(n, sizeof(*cs));
    if (!cs)
        return ST_ROUTE_FAIL;
    for (int32_t i = 0; i < g->n_choices; i++) {
        const struct st_gen_choice *ch = &g->choices[i];
        cs[i] = (struct st_oai_choice){ .index = ch->index,
                                        .text = ch->text.data ? ch->text.data : "",
                                        .text_len = ch->text.len, .finish = ch->finish,
                                        .lp = g->logprobs ? &ch->lp : NULL };
        if (g->prompt_lp >= 0) {
            cs[i].prompt_logprobs = ch->plp.data ? ch->plp.data : "";
            cs[i].prompt_logprobs_len = ch->plp.len;
        }
        st_gen_reply_fill(ch, &cs[i]);
    }
    struct st_oai_meta m = meta_of(g);
    struct st_oai_usage u = usage_of(g);
    enum st_status rc = g->resp ? g->resp->body(body, g, &cs[0], &u,
                                                st_gen_reply_reasoning_tokens(&g->choices[0]))
                                : st_oai_body(body, &m, cs, (size_t)g->n_choices, &u);
    free(cs);
    return rc == ST_OK ? ST_ROUTE_DONE : ST_ROUTE_FAIL;
}

void st_gen_load_failed(struct st_call *c, int32_t model, struct st_api_error *e)
{
    struct st_model_status st;
    snprintf(e->code, sizeof(e->code), "model_load_failed");
    /* FAILED: the back-off's end; else (another engine is trying it, or
     * there is no back-off) a moment */
    double wait = st_engine_pool_model_status(c->srv->pool, model, &st) &&
                          st.state == ST_MODEL_FAILED
                      ? st.retry_in_s
                      : 0.0;
    e->retry_after_s = ST_MAX(1, st_retry_seconds(wait));
}

enum st_route_result st_gen_resume(struct st_call *c)
{
    struct st_api_error e;
    struct st_buf body;
    st_buf_init(&body);
    pthread_mutex_lock(&c->lock);
    struct st_gen *g = c->gen;
    if (!st_gen_ready_locked(c)) {
        pthread_mutex_unlock(&c->lock);
        return ST_ROUTE_WAIT;
    }
    if (c->stopping && (!g || g->n_ended < g->n_choices)) {
        pthread_mutex_unlock(&c->lock);
        st_api_error_set(&e, ST_ERR_SHUTDOWN, NULL, NULL, "The server is shutting down.");
        return st_reply_error(c, &e);
    }
    if (g->broken) {
        pthread_mutex_unlock(&c->lock);
        return st_reply_nomem(c);
    }
    int32_t model = g->model;
    if (g->stream) {
        const struct st_gen_choice *bad = stream_failed_early(g);
        if (bad)
            choice_error(bad, &e);
        pthread_mutex_unlock(&c->lock);
        if (bad && e.status == ST_ERR_LOADING)
            st_gen_load_failed(c, model, &e);
        return bad ? st_reply_error(c, &e) : st_reply_stream(c, st_gen_read);
    }
    bool is_error;
    enum st_route_result r = reply_body_locked(c, g, &body, &e, &is_error);
    pthread_mutex_unlock(&c->lock);
    if (is_error && e.status == ST_ERR_LOADING)
        st_gen_load_failed(c, model, &e);   /* the pool's lock: not under c->lock */
    if (r != ST_ROUTE_DONE) {
        st_buf_fini(&body);
        return st_reply_nomem(c);
    }
    if (is_error) {
        st_buf_fini(&body);
        return st_reply_error(c, &e);
    }
    return st_reply_json(c, 200, &body);
}

ssize_t st_gen_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct st_call *c = cls;
    (void)pos;
    pthread_mutex_lock(&c->lock);
    struct st_gen *g = c->gen;
    ssize_t r;
    if (g->out.len > g->out_off) {
        size_t n = ST_MIN(max, g->out.len - g->out_off);
        memcpy(buf, g->out.data + g->out_off, n);
        g->out_off += n;
        g->last_out_ns = now_ns();   /* keepalive.c counts idle time from here */
        if (g->out_off == g->out.len) {
            st_buf_reset(&g->out);   /* keep the capacity, drop the bytes */
            g->out_off = 0;
        }
        r = (ssize_t)n;
    } else if (g->broken || c->stopping) {
        r = -2;   /* MHD_CONTENT_READER_END_WITH_ERROR */
    } else if (g->stream_done || g->n_ended == g->n_choices) {
        r = -1;   /* MHD_CONTENT_READER_END_OF_STREAM */
    } else {
        r = st_call_suspend_locked(c) ? 0 : -2;
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* Up to ST_ARRAY_LEN(batch) of the requests held for choices [*from, n)
 * into 'batch', each with a reference of ours, then *from past the last
 * one looked at: 'live' only those submitted and not ended (a reference
 * taken), else every one the HTTP side still holds (its reference taken
 * over, ch->req cleared). Batches keep the lock short and need no memory,
 * so any number of choices is handled (an embeddings call has up to
 * ST_EMBED_MAX_ITEMS). Returns how many. */
static int32_t next_batch(struct st_call *c, bool live, int32_t *from,
                          struct st_request **batch, int32_t cap)
{
    int32_t n = 0;
    pthread_mutex_lock(&c->lock);
    struct st_gen *g = c->gen;
    int32_t i = *from;
    for (; g && i < g->n_choices && n < cap; i++) {
        struct st_gen_choice *ch = &g->choices[i];
        if (!ch->req || (live && (!ch->submitted || ch->ended)))
            continue;
        batch[n++] = ch->req;
        if (live)
            st_request_ref(ch->req);
        else
            ch->req = NULL;
    }
    *from = i;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void st_gen_cancel_all(struct st_call *c)
{
    struct st_request *reqs[64];
    int32_t from = 0, n;
    while ((n = next_batch(c, true, &from, reqs, (int32_t)ST_ARRAY_LEN(reqs))) > 0) {
        /* outside the lock: a waiting request ends (emit) on this thread */
        for (int32_t i = 0; i < n; i++) {
            st_engine_pool_cancel(c->srv->pool, reqs[i]);
            st_request_unref(reqs[i]);
        }
    }
}

void st_gen_conn_done(struct st_call *c)
{
    if (!c->gen)
        return;
    st_gen_cancel_all(c);
    struct st_request *reqs[64];
    int32_t from = 0, n;
    while ((n = next_batch(c, false, &from, reqs, (int32_t)ST_ARRAY_LEN(reqs))) > 0) {
        for (int32_t i = 0; i < n; i++)
            st_request_unref(reqs[i]);   /* may free the call's last other reference */
    }
}

/* ---- the log line ------------------------------------------------------ */

static const char *outcome_of(const struct st_gen *g)
{
    bool cancelled = false, rejected = false, failed = false;
    for (int32_t i = 0; i < g->n_choices; i++) {
        const struct st_gen_choice *ch = &g->choices[i];
        if (finished_ok(ch))
            continue;
        if (ch->status == ST_ERR_QUEUE_FULL)
            rejected = true;
        else if (ch->finish == ST_FINISH_CANCELLED &&
                 (ch->status == ST_OK || ch->status == ST_ERR_CANCELLED))
            cancelled = true;
        else
            failed = true;
    }
    return failed ? "failed" : rejected ? "rejected" : cancelled ? "cancelled" : "completed";
}

void st_gen_log_take_locked(struct st_call *c, struct st_gen_log *out)
{
    struct st_gen *g = c->gen;
    out->due = false;
    if (!g || g->logged || g->n_ended < g->n_choices)
        return;
    g->logged = true;
    out->due = true;
    snprintf(out->id, sizeof(out->id), "%s", c->request_id);
    snprintf(out->model, sizeof(out->model), "%s", g->model_name);
    out->priority = g->priority;
    out->band = g->band;
    out->n = g->n_choices;
    out->stream = g->stream;
    struct st_oai_usage u = usage_of(g);
    out->prompt_tokens = u.prompt_tokens;
    out->completion_tokens = u.completion_tokens;
    int64_t first = 0;
    for (int32_t i = 0; i < g->n_choices; i++) {
        int64_t t = g->choices[i].first_token_ns;
        if (t && (!first || t < first))
            first = t;
    }
    out->ttft_ms = first ? (double)(first - c->start_ns) / 1e6 : -1.0;
    out->total_ms = (double)(now_ns() - c->start_ns) / 1e6;
    out->outcome = outcome_of(g);
}

void st_gen_log_flush(const struct st_gen_log *l)
{
    if (!l->due)
        return;
    char prio[16], n[16], pt[24], ct[24], ttft[32], total[32];
    snprintf(prio, sizeof(prio), "%d", (int)l->priority);
    snprintf(n, sizeof(n), "%d", (int)l->n);
    snprintf(pt, sizeof(pt), "%lld", (long long)l->prompt_tokens);
    snprintf(ct, sizeof(ct), "%lld", (long long)l->completion_tokens);
    snprintf(ttft, sizeof(ttft), "%.1f", l->ttft_ms);
    snprintf(total, sizeof(total), "%.1f", l->total_ms);
    const char *keys[] = { "id", "model", "priority", "band", "n", "stream", "prompt_tokens",
                           "completion_tokens", "ttft_ms", "total_ms", "outcome" };
    const char *vals[] = { l->id, l->model, prio, st_band_name(l->band), n,
                           l->stream ? "true" : "false", pt, ct, ttft, total, l->outcome };
    const bool num[] = { false, false, true, false, true, true, true, true, true, true, false };
    st_log_kv(ST_LOG_INFO, "http", "request", (int)ST_ARRAY_LEN(keys), keys, vals, num);
}

void st_gen_log_refused(struct st_call *c, const struct st_api_error *e)
{
    char status[8];
    snprintf(status, sizeof(status), "%d", st_api_error_http(e));
    const char *keys[] = { "id", "outcome", "status", "param", "error" };
    const char *vals[] = { c->request_id, "refused", status, e->param, e->message };
    const bool num[] = { false, false, true, false, false };
    st_log_kv(ST_LOG_INFO, "http", "request", (int)ST_ARRAY_LEN(keys), keys, vals, num);
}
