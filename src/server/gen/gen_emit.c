/* gen_emit.c -- engine events into a completion request's output.
 *
 * st_gen_emit runs on engine threads (or on whichever thread ends a
 * request that never reached an engine: a submit that sheds it, a cancel),
 * under call->lock; gen.c hands what it renders to libmicrohttpd:
 *
 *   emit (engine)                          MHD thread (gen.c)
 *   -------------                          ------------------
 *   lock                                   access handler / content reader:
 *   stream: shape's chunk -> gen->out        lock
 *   else:   shape keeps text / logprobs      data or end? -> hand it over
 *   END: shape's end (and close)             nothing?     -> suspend
 *   ready? and suspended -> resume           unlock
 *   unlock
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/log.h"
#include "server/gen/gen_view.h"

/* ---- stream rendering (under call->lock) ----------------------------- */

void st_gen_put_chunk(struct st_gen *g, const struct st_gen_choice *ch, st_gen_chunk_fn *fn,
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

void st_gen_stream_text_delta(struct st_gen *g, struct st_gen_choice *ch,
                              const struct st_gen_token *t)
{
    if (!t->len)
        return;
    struct st_oai_delta d = { ST_OAI_DELTA_CONTENT, t->text, t->len, 0, NULL };
    g->shape->stream_delta(g, ch, &d, NULL);
}

void st_gen_keep_token(struct st_gen *g, struct st_gen_choice *ch, const struct st_gen_token *t)
{
    /* the raw text: the body's, or "__verbose"'s beside a parsed reply */
    if ((!ch->reply || g->verbose_prompt) && st_buf_append(&ch->text, t->text, t->len) != ST_OK)
        g->broken = true;
    if (t->lp && st_oai_lp_acc_add(&ch->lp, g->kind, t->lp) != ST_OK)
        g->broken = true;
}

/* The shape's stream_begin, once per choice. */
static void begin(struct st_gen *g, struct st_gen_choice *ch)
{
    if (!ch->begun && g->shape->stream_begin)
        g->shape->stream_begin(g, ch);
    ch->begun = true;
}

/* A choice's end: finished, failed (a client that left sees nothing
 * anyway, and a cancelled one asked for nothing), or cut by the server
 * (back-pressure), whose end is always rendered so that a client that
 * reads on sees why its answer is short; then, after the last choice, the
 * stream's close. */
static void stream_end(struct st_gen *g, struct st_gen_choice *ch)
{
    const struct st_gen_shape *s = g->shape;
    struct st_oai_usage u = st_gen_usage(g);
    struct st_api_error e;
    if (g->cut) {
        g->broken = false;   /* the end is small: always rendered */
        s->stream_end(g, ch, &g->cut_error, &u);
    } else if (st_gen_finished_ok(ch)) {
        begin(g, ch);
        s->stream_end(g, ch, NULL, &u);
    } else if (ch->status != ST_OK && ch->status != ST_ERR_CANCELLED) {
        st_gen_choice_error(ch, &e);
        s->stream_end(g, ch, &e, &u);
    }
    if (g->n_ended == g->n_choices) {
        if (s->stream_close)
            s->stream_close(g);
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

static void on_token(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                     const struct st_event *ev)
{
    if (!ch->first_token_ns)
        ch->first_token_ns = st_gen_now_ns();
    struct st_oai_logprob lp;
    if (g->logprobs)
        logprob_of(ev, ch, &lp);
    struct st_gen_token t = { ev, ev->text ? ev->text : "", ev->text ? ev->text_len : 0,
                              g->logprobs ? &lp : NULL };
    if (g->stream && !c->conn_done) {
        begin(g, ch);
        if (ch->reply)
            st_gen_reply_token(c, g, ch, t.text, t.len, t.lp);
        else
            g->shape->stream_text(g, ch, &t);
    } else if (!g->stream) {
        if (ch->reply)
            st_gen_reply_token(c, g, ch, t.text, t.len, NULL);
        g->shape->keep_token(g, ch, &t);
    }
    ch->text_offset += (int64_t)t.len;
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
    if (g->shape->stream_prompt)
        g->shape->stream_prompt(g, ch, &ch->text, g->logprobs ? &ch->lp : NULL);
    ch->echo_sent = true;
    ch->produced = true;
    st_buf_reset(&ch->text);
    st_oai_lp_acc_fini(&ch->lp);
    st_oai_lp_acc_init(&ch->lp);
}

/* How far the prompt's read has come (return_progress; a stream only). */
static void on_progress(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                        const struct st_event *ev)
{
    if (!g->stream || c->conn_done || !g->shape->stream_progress)
        return;
    int64_t now = st_gen_now_ns();
    if (!ch->progress_ns)
        ch->progress_ns = now;
    struct st_gen_progress p = { ev->n_prompt, ev->n_cached, ev->n_read,
                                 (double)(now - ch->progress_ns) / 1e6 };
    g->shape->stream_progress(g, ch, &p);
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
    else if (ev->kind == ST_EVENT_PROGRESS)
        on_progress(c, g, ch, ev);
    bool cut_now = check_backlog_locked(c, g, &backlog);
    /* The request's log line is written before the reply can go (the MHD
     * side reads only under this lock): a client that has its answer
     * finds the line in the log. One write(2), so short to hold it for. */
    st_gen_log_take_locked(c, &log);
    st_gen_log_flush(&log);
    if (st_gen_ready_locked(c))
        st_call_resume_locked(c);
    pthread_mutex_unlock(&c->lock);
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
