/* h_embeddings.c -- POST /v1/embeddings (and /embeddings): OpenAI's
 * embeddings endpoint (docs/API.md "/v1/embeddings").
 *
 * Each input item becomes one engine request with params.embed (like the
 * n choices of a completion: the same scheduler, slots, priorities and
 * prefix reuse; include/strata/engine.h). The call's lifecycle is the
 * generation machinery's (struct st_gen in c->gen: one choice per item,
 * its emit callback, cancel on disconnect, the log line, readiness), with
 * two additions of this file:
 *   - the emit callback is wrapped: the EMBED event each request sends
 *     before its END is kept here (struct embed_state, c->ext), the rest
 *     goes to st_gen_emit;
 *   - the finished call is answered by embed_resume (c->resume), which
 *     renders the embeddings body (embeddings_reply.c) in input order;
 *   - a call gone is wound up by embed_conn_done (c->conn_done_fn): gen.c's
 *     st_gen_conn_done handles ST_OAI_MAX_CHOICES requests, an embeddings
 *     call up to ST_EMBED_MAX_ITEMS. (The disconnect watcher's
 *     st_gen_cancel_all still cancels the first ST_OAI_MAX_CHOICES at once;
 *     the rest are cancelled when the connection completes.)
 *
 * Thread: the MHD thread, except embed_emit (an engine thread).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "strata/log.h"

/* What the answer needs beyond c->gen; guarded by c->lock once submitted. */
struct embed_state {
    float  **vecs;        /* [n_items]: owned; NULL until the item's EMBED */
    size_t   n_items;
    int32_t  n_embd;      /* the model's width */
    int32_t  dims;        /* the width answered (dimensions, else n_embd) */
    bool     base64;
};

static void embed_state_free(void *p)
{
    struct embed_state *s = p;
    if (!s)
        return;
    for (size_t i = 0; s->vecs && i < s->n_items; i++)
        free(s->vecs[i]);
    free(s->vecs);
    free(s);
}

/* st_gen_emit, but the EMBED event's vector is kept for the answer. */
static void embed_emit(void *ctx, const struct st_event *ev)
{
    struct st_gen_choice *ch = ctx;
    if (ev->kind != ST_EVENT_EMBED) {
        st_gen_emit(ctx, ev);
        return;
    }
    struct st_call *c = ch->call;
    struct embed_state *s = c->ext;
    float *v = malloc((size_t)ev->n_embd * sizeof(*v));
    if (v)
        memcpy(v, ev->embd, (size_t)ev->n_embd * sizeof(*v));
    pthread_mutex_lock(&c->lock);
    bool fits = ev->n_embd == s->n_embd && (size_t)ch->index < s->n_items &&
                !s->vecs[ch->index];
    if (fits) {
        s->vecs[ch->index] = v;   /* NULL on OOM: answered 500 */
        v = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    free(v);
}

static enum st_status pick_model(struct st_call *c, const char *name, int32_t *model,
                                 struct st_api_error *e)
{
    struct st_engine_pool *pool = c->srv->pool;
    *model = name ? st_engine_pool_find_model(pool, name) : 0;
    if (!name && st_engine_pool_n_models(pool) <= 0)
        *model = -1;
    if (*model >= 0)
        return ST_OK;
    return st_api_error_set(e, ST_ERR_NOT_FOUND, "model", "model_not_found",
                            "The model `%.120s` does not exist. GET /v1/models lists the models "
                            "this server has.", name ? name : "(default)");
}

/* The effective priority, by the rule every generation uses (gen_submit.c):
 * the body's, the X-LlamaSwap-Priority header, the key's bounds, the
 * model's own. */
static int32_t embed_priority(struct st_call *c, const struct st_embed_request *rq,
                              int32_t model)
{
    struct st_priority_inputs in;
    memset(&in, 0, sizeof(in));
    in.has_body = rq->has_priority;
    in.body = rq->priority;
    const char *h = st_call_header(c, "X-LlamaSwap-Priority");
    if (h)
        in.has_header = st_priority_parse_header_ex(st_str_c(h), &in.header, &in.has_alias);
    if (c->key) {
        in.has_key_default = c->key->has_default_priority;
        in.key_default = c->key->default_priority;
        in.has_key_max = c->key->has_max_priority;
        in.key_max = c->key->max_priority;
    }
    const struct st_server_config *cfg = &c->srv->cfg;
    if (cfg->model_priority && model >= 0 && (size_t)model < cfg->n_model_priority)
        in.model_priority = cfg->model_priority[model];
    in.order = cfg->priority_order;
    return st_priority_resolve(&in);
}

/* The item's token ids into req: the client's (checked against the
 * context and vocabulary) or its text tokenized. */
static enum st_status item_tokens(struct st_call *c, struct st_request *req,
                                  const struct st_oai_prompt *it, struct st_api_error *e)
{
    struct st_engine_pool *pool = c->srv->pool;
    struct st_err err = { 0 };
    enum st_status rc;
    if (it->text) {
        req->prompt = st_str_dup(st_str_c(it->text));
        rc = req->prompt ? st_engine_pool_prepare(pool, req, &err) : ST_ERR_NOMEM;
        if (rc != ST_OK)
            st_api_error_set(e, rc, "input", rc == ST_ERR_TOO_LONG ? "context_length_exceeded"
                             : NULL, "%s", err.msg[0] ? err.msg : st_status_msg(rc));
        return rc;
    }
    int64_t ctx = st_engine_pool_ctx_size(pool, req->model);
    if ((int64_t)it->n_tokens >= ctx)
        return st_api_error_set(e, ST_ERR_TOO_LONG, "input", "context_length_exceeded",
                                "an input has %zu tokens; a slot holds %lld", it->n_tokens,
                                (long long)ctx);
    int32_t n_vocab = 0;
    rc = st_engine_pool_n_vocab(pool, req->model, &n_vocab, &err);
    if (rc != ST_OK)
        return st_api_error_set(e, rc, NULL, NULL, "%s", err.msg[0] ? err.msg
                                                                   : st_status_msg(rc));
    for (size_t i = 0; i < it->n_tokens; i++)
        if (it->tokens[i] >= n_vocab)
            return st_api_error_set(e, ST_ERR_INVALID, "input", NULL, "input token %zu is %d, "
                                    "not a token of this model (ids 0 to %d)", i,
                                    (int)it->tokens[i], (int)n_vocab - 1);
    req->tokens = malloc(it->n_tokens * sizeof(*req->tokens));
    if (!req->tokens)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    memcpy(req->tokens, it->tokens, it->n_tokens * sizeof(*req->tokens));
    req->n_tokens = (int64_t)it->n_tokens;
    req->job.prompt_tokens = req->n_tokens;
    return ST_OK;
}

static enum st_status make_request(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                                   const struct st_oai_prompt *it, struct st_api_error *e)
{
    struct st_request *req = st_request_new();
    if (!req)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    st_call_ref(c);                     /* dropped by on_free */
    req->emit = embed_emit;
    req->emit_ctx = ch;
    req->on_free = st_gen_req_on_free;
    ch->call = c;
    ch->req = req;
    snprintf(req->id, sizeof(req->id), "%s", c->request_id);
    snprintf(req->job.request_id, sizeof(req->job.request_id), "%s", c->request_id);
    req->model = g->model;
    req->choice = ch->index;
    req->job.priority = g->priority;
    req->job.model = g->model;
    req->band = g->band;
    req->params.embed = true;
    req->params.max_tokens = 0;
    return item_tokens(c, req, it, e);
}

static enum st_status build_requests(struct st_call *c, struct st_gen *g,
                                     const struct st_embed_request *rq, struct st_api_error *e)
{
    int64_t total = 0;
    for (int32_t i = 0; i < g->n_choices; i++) {
        enum st_status rc = make_request(c, g, &g->choices[i], &rq->items[i], e);
        if (rc != ST_OK)
            return rc;
        total += g->choices[i].req->n_tokens;
        if (total > ST_EMBED_MAX_TOKENS)
            return st_api_error_set(e, ST_ERR_INVALID, "input", NULL, "Invalid 'input': at "
                                    "most %d tokens per request, all items together.",
                                    ST_EMBED_MAX_TOKENS);
    }
    return ST_OK;
}

/* The requests of every item (submitted, not ended: 'live'; else all that
 * the HTTP side still holds), each with a reference of ours, taking the
 * HTTP side's own when 'take' (then ch->req is cleared). gen.c's helpers
 * stop at ST_OAI_MAX_CHOICES requests; a request here has up to
 * ST_EMBED_MAX_ITEMS. NULL (n 0) on OOM or when there are none. */
static struct st_request **collect(struct st_call *c, bool live, bool take, int32_t *n)
{
    *n = 0;
    pthread_mutex_lock(&c->lock);
    struct st_gen *g = c->gen;
    struct st_request **reqs = g ? malloc((size_t)(g->n_choices + 1) * sizeof(*reqs)) : NULL;
    for (int32_t i = 0; reqs && i < g->n_choices; i++) {
        struct st_gen_choice *ch = &g->choices[i];
        if (!ch->req || (live && (!ch->submitted || ch->ended)))
            continue;
        reqs[(*n)++] = ch->req;
        if (take)
            ch->req = NULL;
        else
            st_request_ref(ch->req);
    }
    pthread_mutex_unlock(&c->lock);
    return reqs;
}

/* Cancel every submitted item that has not ended (not on an engine's emit). */
static void cancel_all(struct st_call *c)
{
    int32_t n;
    struct st_request **reqs = collect(c, true, false, &n);
    for (int32_t i = 0; i < n; i++) {   /* outside the lock: a waiting one ends here */
        st_engine_pool_cancel(c->srv->pool, reqs[i]);
        st_request_unref(reqs[i]);
    }
    free(reqs);
}

/* The connection is gone (c->conn_done hook, http.c): st_gen_conn_done for
 * any number of items. */
static void embed_conn_done(struct st_call *c)
{
    cancel_all(c);
    int32_t n;
    struct st_request **reqs = collect(c, false, true, &n);
    for (int32_t i = 0; i < n; i++)
        st_request_unref(reqs[i]);   /* may free the call's last other reference */
    free(reqs);
}

/* Every item from 'from' on ends unsubmitted with e's status. */
static void end_rest(struct st_call *c, struct st_gen *g, int32_t from,
                     const struct st_api_error *e)
{
    struct st_gen_log log;
    pthread_mutex_lock(&c->lock);
    for (int32_t i = from; i < g->n_choices; i++)
        st_gen_end_unsubmitted_locked(c, &g->choices[i], e->status, e->message);
    st_gen_log_take_locked(c, &log);
    pthread_mutex_unlock(&c->lock);
    st_gen_log_flush(&log);
}

static enum st_status submit_all(struct st_call *c, struct st_gen *g, struct st_api_error *e)
{
    for (int32_t i = 0; i < g->n_choices; i++) {
        struct st_gen_choice *ch = &g->choices[i];
        pthread_mutex_lock(&c->lock);
        ch->submitted = true;           /* before: an engine may END it at once */
        pthread_mutex_unlock(&c->lock);
        struct st_err err = { 0 };
        enum st_status rc = st_engine_pool_submit(c->srv->pool, ch->req, &err);
        if (rc == ST_OK)
            continue;
        pthread_mutex_lock(&c->lock);
        ch->submitted = false;
        pthread_mutex_unlock(&c->lock);
        st_api_error_set(e, rc, NULL, rc == ST_ERR_QUEUE_FULL ? "queue_full" : NULL, "%s",
                         err.msg[0] ? err.msg : st_status_msg(rc));
        if (rc == ST_ERR_QUEUE_FULL)
            e->retry_after_s = 1;
        else if (rc == ST_ERR_LOADING)
            st_gen_load_failed(c, g->model, e);
        end_rest(c, g, i, e);
        cancel_all(c);                  /* the items already queued */
        return rc;
    }
    return ST_OK;
}

/* The first item that did not end with its vector, as the client's error
 * (c->lock held). False when every one did. */
static bool failed_item(const struct st_gen *g, const struct embed_state *s,
                        struct st_api_error *e)
{
    for (int32_t i = 0; i < g->n_choices; i++) {
        const struct st_gen_choice *ch = &g->choices[i];
        if (ch->finish == ST_FINISH_STOP && ch->status == ST_OK && s->vecs[i])
            continue;
        enum st_status st = ch->status != ST_OK ? ch->status
                            : ch->finish == ST_FINISH_STOP ? ST_ERR_NOMEM   /* no vector kept */
                            : ch->finish == ST_FINISH_CANCELLED ? ST_ERR_CANCELLED
                                                                : ST_ERR_INTERNAL;
        st_api_error_set(e, st, NULL, NULL, "%s", ch->error[0] ? ch->error
                                                                : st_status_msg(st));
        return true;
    }
    return false;
}

/* The body (c->lock held, every item ended well): vectors truncated to
 * s->dims in input order. */
static enum st_status render_locked(const struct st_gen *g, const struct embed_state *s,
                                    struct st_buf *body)
{
    float *flat = malloc((size_t)g->n_choices * (size_t)s->dims * sizeof(*flat));
    const float **rows = malloc((size_t)g->n_choices * sizeof(*rows));
    enum st_status rc = flat && rows ? ST_OK : ST_ERR_NOMEM;
    int64_t tokens = 0;
    for (int32_t i = 0; rc == ST_OK && i < g->n_choices; i++) {
        float *out = flat + (size_t)i * (size_t)s->dims;
        st_embed_truncate(s->vecs[i], s->n_embd, s->dims, out);
        rows[i] = out;
        tokens += g->choices[i].n_prompt;
    }
    if (rc == ST_OK)
        rc = st_embed_body(body, g->model_name, rows, (size_t)g->n_choices, s->dims, s->base64,
                           tokens);
    free(flat);
    free(rows);
    return rc;
}

static enum st_route_result embed_resume(struct st_call *c)
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
    bool failed = failed_item(g, c->ext, &e);
    enum st_status rc = failed ? ST_OK : render_locked(g, c->ext, &body);
    int32_t model = g->model;
    pthread_mutex_unlock(&c->lock);
    if (failed) {
        if (e.status == ST_ERR_LOADING)
            st_gen_load_failed(c, model, &e);   /* the pool's lock: not under c->lock */
        return st_reply_error(c, &e);
    }
    return st_reply_json_built(c, rc, &body);
}

/* The model's width and the answered width ('dimensions' in 1..n_embd). */
static enum st_status embed_widths(struct st_call *c, int32_t model,
                                   const struct st_embed_request *rq, struct embed_state *s,
                                   struct st_api_error *e)
{
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_n_embd(c->srv->pool, model, &s->n_embd, &err);
    if (rc == ST_ERR_UNSUPPORTED)
        return st_api_error_set(e, ST_ERR_INVALID, "model", "model_not_supported", "The model "
                                "cannot make embeddings: %s", err.msg);
    if (rc != ST_OK)
        return st_api_error_set(e, rc, NULL, NULL, "%s", err.msg[0] ? err.msg
                                                                   : st_status_msg(rc));
    if (rq->dimensions > s->n_embd)
        return st_api_error_set(e, ST_ERR_INVALID, "dimensions", NULL, "Invalid 'dimensions': "
                                "%d; this model's embeddings have 1 to %d dimensions.",
                                (int)rq->dimensions, (int)s->n_embd);
    s->dims = rq->dimensions > 0 ? rq->dimensions : s->n_embd;
    s->base64 = rq->base64;
    return ST_OK;
}

/* The call's generation state with one choice per item, and ours. */
static enum st_status embed_setup(struct st_call *c, const struct st_embed_request *rq,
                                  int32_t model, struct embed_state *s, struct st_gen **out)
{
    struct st_gen *g = st_gen_new((int32_t)rq->n_items);
    s->n_items = rq->n_items;
    s->vecs = calloc(rq->n_items, sizeof(*s->vecs));
    if (!g || !s->vecs) {
        st_gen_free(g);
        return ST_ERR_NOMEM;
    }
    g->kind = ST_OAI_COMPLETION;
    g->prompt_lp = -1;
    snprintf(g->id, sizeof(g->id), "embd-%s", c->request_id);
    const char *name = st_engine_pool_model_name(c->srv->pool, model);
    snprintf(g->model_name, sizeof(g->model_name), "%s", name ? name : "");
    g->created = st_unix_seconds();
    g->model = model;
    g->priority = embed_priority(c, rq, model);
    g->band = st_band_of(g->priority);
    for (int32_t i = 0; i < g->n_choices; i++)
        g->choices[i].prompt = i;
    *out = g;
    return ST_OK;
}

/* Checks before any engine request exists; 'e' says why not. */
static enum st_status embed_precheck(struct st_call *c, const struct st_embed_request *rq,
                                     int32_t *model, struct embed_state *s,
                                     struct st_api_error *e)
{
    enum st_status rc = pick_model(c, rq->model, model, e);
    if (rc == ST_OK && !st_engine_pool_ready(c->srv->pool)) {
        rc = st_api_error_set(e, ST_ERR_LOADING, NULL, "model_loading",
                              "The model is loading; retry in a moment.");
        e->retry_after_s = 1;
    }
    return rc == ST_OK ? embed_widths(c, *model, rq, s, e) : rc;
}

static enum st_route_result embed_start(struct st_call *c, const struct st_embed_request *rq)
{
    struct st_api_error e;
    int32_t model;
    struct embed_state *s = calloc(1, sizeof(*s));
    if (!s)
        return st_reply_nomem(c);
    if (embed_precheck(c, rq, &model, s, &e) != ST_OK) {
        embed_state_free(s);
        st_gen_log_refused(c, &e);
        return st_reply_error(c, &e);
    }
    struct st_gen *g = NULL;
    if (embed_setup(c, rq, model, s, &g) != ST_OK) {
        embed_state_free(s);
        return st_reply_nomem(c);
    }
    pthread_mutex_lock(&c->lock);
    c->ext = s;                         /* both freed with the call */
    c->ext_free = embed_state_free;
    c->resume = embed_resume;
    c->conn_done_fn = embed_conn_done;
    c->gen = g;
    pthread_mutex_unlock(&c->lock);
    if (build_requests(c, g, rq, &e) != ST_OK) {
        end_rest(c, g, 0, &e);
        return st_reply_error(c, &e);
    }
    if (submit_all(c, g, &e) != ST_OK)
        return st_reply_error(c, &e);
    return ST_ROUTE_WAIT;
}

enum st_route_result st_h_embeddings(struct st_call *c)
{
    struct st_embed_request rq;
    struct st_api_error e;
    if (st_embed_parse(c->body.data, c->body.len, &rq, &e) != ST_OK) {
        st_gen_log_refused(c, &e);
        return st_reply_error(c, &e);
    }
    enum st_route_result r = embed_start(c, &rq);
    st_embed_request_fini(&rq);
    return r;
}
