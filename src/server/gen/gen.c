/* gen.c -- one completion request's state and its HTTP side: the state's
 * lifetime, and handing what the engine side (gen_emit.c) rendered to
 * libmicrohttpd. Engine threads fill the state, libmicrohttpd threads
 * read it; both under call->lock (the diagram is in gen_emit.c).
 *
 * Headers of a stream are sent with its first event, not at submit: a
 * request that is shed or fails before its first token is answered with a
 * proper HTTP status (429, 500) instead of a 200 stream carrying an error.
 * The first event may be an SSE keep-alive comment (keepalive.c) after
 * --sse-keepalive idle seconds; a failure after that is an in-stream
 * error event (gen_emit.c).
 *
 * Lifetime: every engine request holds a call reference (dropped in its
 * on_free), and the MHD side holds one until the completion callback; the
 * call, and this state with it, goes with the last of them.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/gen/gen_view.h"

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
    g->last_out_ns = st_gen_now_ns();
    return g;
}

void st_gen_shape_free(const struct st_gen_shape *s)
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
    free(g->verbose_prompt);
    st_gen_shape_free(g->shape);
    free(g->choices);
    st_buf_fini(&g->out);
    free(g);
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
        if (ch->produced || st_gen_finished_ok(ch))
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
        if (!st_gen_finished_ok(ch)) {
            st_gen_choice_error(ch, e);
            *is_error = true;
            return ST_ROUTE_DONE;
        }
        if (g->embed.on && !ch->embd) {   /* ended without its vector kept */
            st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "%s", st_status_msg(ST_ERR_NOMEM));
            *is_error = true;
            return ST_ROUTE_DONE;
        }
    }
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
    struct st_oai_usage u = st_gen_usage(g);
    enum st_status rc = g->shape->body(body, g, cs, &u,
                                       st_gen_reply_reasoning_tokens(&g->choices[0]));
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
            st_gen_choice_error(bad, &e);
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
        g->last_out_ns = st_gen_now_ns();   /* keepalive.c counts idle time from here */
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
