/* gen_emit.c -- engine events into a completion request's output.
 *
 * st_gen_emit runs on engine threads (or on whichever thread ends a
 * request that never reached an engine: a submit that sheds it, a cancel),
 * under call->lock; gen.c hands what it renders to libmicrohttpd:
 *
 *   emit (engine)                          MHD thread (gen.c)
 *   -------------                          ------------------
 *   lock                                   access handler / content reader:
 *   stream: render chunk -> gen->out         lock
 *   else:   append text / logprobs           data or end? -> hand it over
 *   END: finish chunk, usage, [DONE]         nothing?     -> suspend
 *   ready? and suspended -> resume           unlock
 *   unlock
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/log.h"
#include "server/gen/gen_view.h"
#include "server/gen/llama_json.h"

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
    struct st_oai_meta m = st_gen_meta(g);
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
    struct st_oai_meta m = st_gen_meta(g);
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
    struct st_oai_meta m = st_gen_meta(g);
    (void)arg;
    return st_oai_chunk_finish_reason(o, &m, ch->index, st_gen_reply_finish_reason(ch));
}

static enum st_status c_error(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const void *arg)
{
    struct st_api_error e;
    (void)g;
    (void)arg;
    st_gen_choice_error(ch, &e);
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
    struct st_oai_meta m = st_gen_meta(g);
    struct st_oai_usage u = st_gen_usage(g);
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
        struct st_oai_usage u = st_gen_usage(g);
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
        struct st_oai_usage u = st_gen_usage(g);
        bool failed = !st_gen_finished_ok(ch) && ch->status != ST_OK && ch->status != ST_ERR_CANCELLED;
        if (failed)
            st_gen_choice_error(ch, &e);
        if (st_gen_finished_ok(ch) || failed)
            g->resp->stream_end(g, ch, failed ? &e : NULL, &u);
        g->stream_done = g->n_ended == g->n_choices;
        return;
    }
    if (g->llama.on) {   /* each choice's last object says stop: true; no [DONE] */
        if (st_gen_finished_ok(ch))
            put_chunk(g, ch, c_llama_final, NULL);
        else if (ch->status != ST_OK && ch->status != ST_ERR_CANCELLED)
            put_chunk(g, ch, c_error, NULL);
        g->stream_done = g->n_ended == g->n_choices;
        return;
    }
    if (st_gen_finished_ok(ch)) {
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
        ch->first_token_ns = st_gen_now_ns();
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
        /* the raw text: the body's, or "__verbose"'s beside a parsed reply */
        if ((!ch->reply || g->verbose_prompt) && st_buf_append(&ch->text, text, len) != ST_OK)
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
    struct st_oai_meta m = st_gen_meta(g);
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
