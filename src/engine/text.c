/* text.c -- the text side of the pool's model, for the server: model facts,
 * tokenize/detokenize (/tokenize, /detokenize), the chat template, and
 * st_engine_pool_prepare (prompt text -> token ids, context check).
 *
 * Every engine of a pool serves the same model, so engine 0's runner
 * answers; runners keep these operations read-only, so any thread may call
 * them while the engines step (runner.h).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static enum st_status check_model(const struct st_engine_pool *p, int32_t model,
                                  struct st_err *err)
{
    if (model < 0 || model >= st_engine_pool_n_models(p))
        return st_err_set(err, ST_ERR_NOT_FOUND, "no model with index %d", (int)model);
    return ST_OK;
}

const char *st_engine_pool_model_name(const struct st_engine_pool *p, int32_t model)
{
    return model == 0 ? p->cfg.model.name : NULL;
}

int32_t st_engine_pool_n_models(const struct st_engine_pool *p)
{
    (void)p;
    return 1;
}

int32_t st_engine_pool_find_model(const struct st_engine_pool *p, const char *name)
{
    return name && strcmp(name, p->cfg.model.name) == 0 ? 0 : -1;
}

int64_t st_engine_pool_ctx_size(const struct st_engine_pool *p, int32_t model)
{
    return model == 0 ? p->cfg.model.ctx_size : 0;
}

const char *st_engine_pool_backend_name(const struct st_engine_pool *p, int32_t model)
{
    return model == 0 ? p->engines[0].runner->ops->name : NULL;
}

enum st_status st_engine_pool_tokenize(struct st_engine_pool *p, int32_t model, const char *text,
                                       size_t len, bool add_special, bool parse_special,
                                       int32_t **ids, size_t *n_ids, struct st_err *err)
{
    enum st_status rc = check_model(p, model, err);
    if (rc != ST_OK)
        return rc;
    return st_runner_tokenize(p->engines[0].runner, text, len, add_special, parse_special, ids,
                              n_ids, err);
}

enum st_status st_engine_pool_detokenize(struct st_engine_pool *p, int32_t model,
                                         const int32_t *ids, size_t n_ids, char **text,
                                         struct st_err *err)
{
    enum st_status rc = check_model(p, model, err);
    if (rc != ST_OK)
        return rc;
    return st_runner_detokenize(p->engines[0].runner, ids, n_ids, text, err);
}

enum st_status st_engine_pool_apply_template(struct st_engine_pool *p, int32_t model,
                                             const char *messages_json, const char *tools_json,
                                             const char *kwargs_json, bool add_generation_prompt,
                                             char **prompt, struct st_err *err)
{
    enum st_status rc = check_model(p, model, err);
    if (rc != ST_OK)
        return rc;
    return st_runner_apply_template(p->engines[0].runner, messages_json, tools_json,
                                    kwargs_json, add_generation_prompt, prompt, err);
}

enum st_status st_engine_pool_prepare(struct st_engine_pool *p, struct st_request *req,
                                      struct st_err *err)
{
    enum st_status rc = check_model(p, req->model, err);
    if (rc != ST_OK)
        return rc;
    if (!req->prompt)
        return st_err_set(err, ST_ERR_INVALID, "the request has no prompt");
    int32_t *ids = NULL;
    size_t n = 0;
    rc = st_runner_tokenize(p->engines[0].runner, req->prompt, strlen(req->prompt), true, true,
                            &ids, &n, err);
    if (rc != ST_OK)
        return rc;
    if (n == 0)
        return st_err_set(err, ST_ERR_INVALID, "the prompt is empty");
    int64_t ctx = p->cfg.model.ctx_size;
    if ((int64_t)n >= ctx) {
        free(ids);
        return st_err_set(err, ST_ERR_TOO_LONG,
                          "the prompt has %zu tokens; a slot holds %lld (prompt and completion "
                          "together): shorten it or raise --ctx-size",
                          n, (long long)ctx);
    }
    free(req->tokens);
    req->tokens = ids;
    req->n_tokens = (int64_t)n;
    req->job.prompt_tokens = (int64_t)n;
    return ST_OK;
}
