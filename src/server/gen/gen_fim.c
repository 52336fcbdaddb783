/* gen_fim.c -- a prompt made the model's fill-in-the-middle prompt, as
 * token ids built by the engine (st_engine_pool_infill_prompt), for the
 * legacy "suffix" of POST /v1/completions and for POST /infill
 * (llama/h_infill.c; docs/API.md "/infill"). MHD thread.
 */
#include <stdlib.h>

#include "server/gen/gen.h"
#include "server/gen/gen_vocab.h"
#include "strata/fim.h"

/* The engine's error for a FIM prompt, as the client sees it. */
static void fim_error(struct st_call *c, int32_t model, enum st_status rc,
                      const struct st_err *err, const char *param, struct st_api_error *e)
{
    const char *code = rc == ST_ERR_UNSUPPORTED ? "fim_not_supported"
                     : rc == ST_ERR_TOO_LONG    ? "context_length_exceeded"
                                                : NULL;
    const char *at = rc == ST_ERR_UNSUPPORTED                         ? "model"
                   : rc == ST_ERR_TOO_LONG || rc == ST_ERR_INVALID ? param
                                                                   : NULL;
    st_api_error_set(e, rc, at, code, "%s", err->msg[0] ? err->msg : st_status_msg(rc));
    if (rc == ST_ERR_LOADING)
        st_gen_load_failed(c, model, e);
}

static bool trimmed(const struct st_fim_trim *t)
{
    return t->prefix_dropped || t->suffix_dropped || t->chunks_dropped || t->headers_dropped;
}

/* Prompt p of oq becomes the FIM prompt of 'in' (the prefix filled in from
 * it). ST_OK, or e set. */
enum st_status st_gen_fim_prompt(struct st_call *c, int32_t model, struct st_oai_request *oq,
                                 struct st_oai_prompt *pr, struct st_infill_input *in,
                                 const char *param, struct st_api_error *e)
{
    if (!in->prefix_ids && pr->tokens) {
        in->prefix_ids = pr->tokens;
        in->n_prefix_ids = pr->n_tokens;
    }
    in->n_predict = oq->params.max_tokens;
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_fim_trim trim = { 0 };
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_infill_prompt(c->srv->pool, model, in, &ids, &n, &trim,
                                                     &err);
    if (rc != ST_OK) {
        fim_error(c, model, rc, &err, param, e);
        return rc;
    }
    free(pr->text);
    free(pr->tokens);
    pr->text = NULL;
    pr->tokens = ids;
    pr->n_tokens = n;
    oq->llama.truncated = oq->llama.truncated || trimmed(&trim);
    return ST_OK;
}

/* The model the request names, or -1 (st_gen_start answers 404 then). */
int32_t st_gen_fim_model(struct st_call *c, const struct st_oai_request *oq)
{
    return st_engine_pool_pick_model(c->srv->pool, oq->model);
}

enum st_status st_infill_suffix(struct st_call *c, struct st_oai_request *oq,
                                struct st_api_error *e)
{
    int32_t model = st_gen_fim_model(c, oq);
    if (!oq->suffix || model < 0)
        return ST_OK;
    enum st_status mixed = st_gen_mixed_prompts(c, oq, model, e);   /* ids first: the prefix */
    if (mixed != ST_OK)
        return mixed;
    for (size_t p = 0; p < oq->n_prompts; p++) {
        struct st_oai_prompt *pr = &oq->prompts[p];
        struct st_infill_input in = { .prefix = pr->text, .suffix = oq->suffix };
        enum st_status rc = st_gen_fim_prompt(c, model, oq, pr, &in, "prompt", e);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}
