/* h_embeddings.c -- POST /v1/embeddings (and /embeddings): OpenAI's
 * embeddings endpoint (docs/API.md "/v1/embeddings").
 *
 * Each input item becomes one engine request with params.embed (like the
 * n choices of a completion: the same scheduler, slots, priorities and
 * prefix reuse; include/strata/engine.h). The call runs on the generation
 * machinery (gen/gen.h): struct st_gen in c->gen with one choice per item and
 * g->embed set, the steps of gen_submit.c (model, readiness, priority,
 * requests, submit), gen.c's events (the EMBED vector is kept in the
 * choice), cancel on disconnect, the log line, and its resume, which
 * answers with st_embed_gen_body (gen/embeddings_reply.c) once every item has ended.
 *
 * Thread: the MHD thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai.h"
#include "strata/log.h"

/* The item's token ids into req: the client's (checked against the
 * context and vocabulary) or its text tokenized. */
static enum st_status item_tokens(struct st_call *c, struct st_request *req,
                                  const struct st_oai_prompt *it, struct st_api_error *e)
{
    if (!it->text)
        return st_gen_use_tokens(c, req, it, "input", e);
    req->prompt = st_str_dup(st_str_c(it->text));
    if (!req->prompt)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    return st_gen_prepare(c, req, "input", e);
}

static enum st_status make_request(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                                   const struct st_oai_prompt *it, struct st_api_error *e)
{
    struct st_request *req = st_gen_request_new(c, g, ch);
    if (!req)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
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

/* The model's width and the answered width ('dimensions' in 1..n_embd). */
static enum st_status embed_widths(struct st_call *c, int32_t model,
                                   const struct st_embed_request *rq, struct st_gen_embed *m,
                                   struct st_api_error *e)
{
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_n_embd(c->srv->pool, model, &m->n_embd, &err);
    if (rc == ST_ERR_UNSUPPORTED)
        return st_api_error_set(e, ST_ERR_INVALID, "model", "model_not_supported", "The model "
                                "cannot make embeddings: %s", err.msg);
    if (rc != ST_OK)
        return st_api_error_set(e, rc, NULL, NULL, "%s", err.msg[0] ? err.msg
                                                                   : st_status_msg(rc));
    if (rq->dimensions > m->n_embd)
        return st_api_error_set(e, ST_ERR_INVALID, "dimensions", NULL, "Invalid 'dimensions': "
                                "%d; this model's embeddings have 1 to %d dimensions.",
                                (int)rq->dimensions, (int)m->n_embd);
    m->dims = rq->dimensions > 0 ? rq->dimensions : m->n_embd;
    m->base64 = rq->base64;
    m->on = true;
    return ST_OK;
}

/* Checks before any engine request exists ('e' says why not), then the
 * call's generation state with one choice per item (*out). */
static enum st_status embed_setup(struct st_call *c, const struct st_embed_request *rq,
                                  struct st_gen **out, struct st_api_error *e)
{
    int32_t model;
    struct st_gen_embed m = { 0 };
    ST_TRY(st_gen_pick_model(c, rq->model, &model, e));
    ST_TRY(st_gen_check_ready(c, e));
    ST_TRY(embed_widths(c, model, rq, &m, e));
    struct st_gen *g = st_gen_new((int32_t)rq->n_items);
    if (!g)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    g->kind = ST_OAI_COMPLETION;
    g->prompt_lp = -1;
    g->embed = m;
    g->shape = &st_oai_embed_shape;
    snprintf(g->id, sizeof(g->id), "%s%s", g->shape->id_prefix, c->request_id);
    st_gen_set_model(c, g, model, st_gen_priority(c, rq->has_priority, rq->priority, model));
    for (int32_t i = 0; i < g->n_choices; i++)
        g->choices[i].prompt = i;
    *out = g;
    return ST_OK;
}

static enum st_route_result embed_start(struct st_call *c, const struct st_embed_request *rq)
{
    struct st_api_error e;
    struct st_gen *g = NULL;
    if (embed_setup(c, rq, &g, &e) != ST_OK) {
        if (e.status == ST_ERR_NOMEM)
            return st_reply_nomem(c);
        st_gen_log_refused(c, &e);
        return st_reply_error(c, &e);
    }
    pthread_mutex_lock(&c->lock);
    c->gen = g;                         /* freed with the call */
    pthread_mutex_unlock(&c->lock);
    if (st_gen_check_room(c, g, &e) != ST_OK || build_requests(c, g, rq, &e) != ST_OK) {
        st_gen_end_rest(c, g, 0, &e);
        return st_reply_error(c, &e);
    }
    if (st_gen_submit_all(c, g, &e) != ST_OK)
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
