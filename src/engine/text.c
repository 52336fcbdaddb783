/* text.c -- the text side of the pool's models, for the server:
 * tokenize/detokenize (/tokenize, /detokenize), the chat template, and
 * st_engine_pool_prepare (prompt text -> token ids, context check).
 * Model facts (names, aliases, states) are in models.c.
 *
 * Each model's text side is its unloaded text runner (models.c): the sim's
 * exists from the start, another backend's is made on first use, which is
 * when its file is first opened. A model whose file cannot be opened is
 * marked failed and the call answers ST_ERR_LOADING with the reason.
 * Runners keep these operations read-only, so any thread may call them
 * while the engines step (runner.h).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"

/* The text runner of 'model', or an error (NOT_FOUND, LOADING). */
static enum st_status text_of(struct st_engine_pool *p, int32_t model,
                              const struct st_runner **r, struct st_err *err)
{
    *r = NULL;
    if (model < 0 || model >= p->n_models)
        return st_err_set(err, ST_ERR_NOT_FOUND, "no model with index %d", (int)model);
    return st_pool_text(p, model, r, err);
}

enum st_status st_engine_pool_tokenize(struct st_engine_pool *p, int32_t model, const char *text,
                                       size_t len, bool add_special, bool parse_special,
                                       int32_t **ids, size_t *n_ids, struct st_err *err)
{
    const struct st_runner *r;
    enum st_status rc = text_of(p, model, &r, err);
    if (rc != ST_OK)
        return rc;
    return st_runner_tokenize(r, text, len, add_special, parse_special, ids, n_ids, err);
}

enum st_status st_engine_pool_detokenize(struct st_engine_pool *p, int32_t model,
                                         const int32_t *ids, size_t n_ids, char **text,
                                         struct st_err *err)
{
    const struct st_runner *r;
    enum st_status rc = text_of(p, model, &r, err);
    if (rc != ST_OK)
        return rc;
    return st_runner_detokenize(r, ids, n_ids, text, err);
}

enum st_status st_engine_pool_n_vocab(struct st_engine_pool *p, int32_t model, int32_t *n_vocab,
                                      struct st_err *err)
{
    const struct st_runner *r;
    *n_vocab = 0;
    enum st_status rc = text_of(p, model, &r, err);
    if (rc == ST_OK)
        *n_vocab = st_runner_n_vocab(r);
    return rc;
}

enum st_status st_engine_pool_eog_ids(struct st_engine_pool *p, int32_t model, int32_t **ids,
                                      size_t *n, struct st_err *err)
{
    const struct st_runner *r;
    const int32_t *eog = NULL;
    *ids = NULL;
    *n = 0;
    enum st_status rc = text_of(p, model, &r, err);
    if (rc != ST_OK)
        return rc;
    size_t k = st_runner_eog_ids(r, &eog);
    if (k == 0)
        return ST_OK;
    *ids = malloc(k * sizeof(**ids));
    if (*ids == NULL)
        return st_err_set(err, ST_ERR_NOMEM, "out of memory");
    memcpy(*ids, eog, k * sizeof(**ids));
    *n = k;
    return ST_OK;
}

enum st_status st_engine_pool_n_embd(struct st_engine_pool *p, int32_t model, int32_t *n_embd,
                                     struct st_err *err)
{
    const struct st_runner *r;
    *n_embd = 0;
    enum st_status rc = text_of(p, model, &r, err);
    if (rc != ST_OK)
        return rc;
    *n_embd = st_runner_n_embd(r);
    if (*n_embd <= 0)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "the model's runner (%s) cannot make "
                          "embeddings", r->ops->name);
    return ST_OK;
}

enum st_status st_engine_pool_apply_template(struct st_engine_pool *p, int32_t model,
                                             const struct st_chat_request *req,
                                             enum st_chat_ending ending, char **prompt,
                                             struct st_err *err)
{
    const struct st_runner *r;
    enum st_status rc = text_of(p, model, &r, err);
    if (rc != ST_OK)
        return rc;
    return st_runner_apply_template(r, req, ending, prompt, err);
}

/* A prompt whose bytes alone prove it cannot fit: at least ceil(len / the
 * most bytes a token stands for) tokens. Refused before the tokenizer
 * runs, so a huge prompt costs no tokenizer time (a 7 MB one took
 * seconds). req->job.prompt_tokens gets that lower bound. */
static enum st_status too_long_by_bytes(const struct st_runner *r, size_t len, int64_t ctx,
                                        struct st_request *req, struct st_err *err)
{
    size_t per = st_runner_max_token_bytes(r);
    if (per == 0)
        return ST_OK;
    uint64_t least = ((uint64_t)len + per - 1) / per;
    if (least < (uint64_t)ctx)
        return ST_OK;
    req->job.prompt_tokens = (int64_t)least;
    return st_err_set(err, ST_ERR_TOO_LONG,
                      "the prompt has at least %llu tokens (%zu bytes, at most %zu per token), "
                      "which exceeds the available context size: a slot holds %lld (prompt and "
                      "completion together); shorten it or raise --ctx-size",
                      (unsigned long long)least, len, per, (long long)ctx);
}

enum st_status st_engine_pool_prepare(struct st_engine_pool *p, struct st_request *req,
                                      struct st_err *err)
{
    const struct st_runner *r;
    enum st_status rc = text_of(p, req->model, &r, err);
    if (rc != ST_OK)
        return rc;
    if (!req->prompt)
        return st_err_set(err, ST_ERR_INVALID, "the request has no prompt");
    size_t len = strlen(req->prompt);
    int64_t ctx = p->models[req->model].cfg.ctx_size;
    rc = too_long_by_bytes(r, len, ctx, req, err);
    if (rc != ST_OK)
        return rc;
    int32_t *ids = NULL;
    size_t n = 0;
    rc = st_runner_tokenize(r, req->prompt, len, true, true, &ids, &n, err);
    if (rc != ST_OK)
        return rc;
    if (n == 0)
        return st_err_set(err, ST_ERR_INVALID, "the prompt is empty");
    if ((int64_t)n >= ctx) {
        free(ids);
        req->job.prompt_tokens = (int64_t)n;   /* the error's n_prompt_tokens */
        return st_err_set(err, ST_ERR_TOO_LONG,
                          "the prompt has %zu tokens, which exceeds the available context size: "
                          "a slot holds %lld (prompt and completion together); shorten it or "
                          "raise --ctx-size",
                          n, (long long)ctx);
    }
    free(req->tokens);
    req->tokens = ids;
    req->n_tokens = (int64_t)n;
    req->job.prompt_tokens = (int64_t)n;
    return ST_OK;
}
