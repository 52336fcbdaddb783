/* h_completion.c -- POST /completion and /completions: llama-server's
 * native completion endpoint (docs/API.md "/completion").
 *
 * The body is /v1/completions' (prompt as a string, token ids or a list of
 * either; the sampling fields, stop, grammar, json_schema, cache_prompt,
 * priority) plus llama-server's own: n_predict (wins over max_tokens),
 * n_probs, return_tokens, post_sampling_probs, n_cmpl, id_slot. Only the
 * answer differs (gen/llama_json.c): content, tokens, stop_type,
 * generation_settings, timings, completion_probabilities.
 */
#include <string.h>

#include "server/llama/llama.h"
#include "server/openai/oai_json.h"

static enum st_status parse_probs(const cJSON *root, struct st_oai_request *oq,
                                  struct st_api_error *e)
{
    int64_t k = 0;
    bool has = false;
    enum st_status rc = st_oai_get_int(root, "n_probs", 0, ST_MAX_TOP_LOGPROBS, &k, &has, e);
    if (rc != ST_OK || !has || k == 0)
        return rc;
    oq->llama.n_probs = (int32_t)k;
    oq->params.logprobs = true;
    oq->params.top_logprobs = (int32_t)k;
    return st_oai_get_bool(root, "post_sampling_probs", &oq->llama.post_sampling, NULL, e);
}

/* id_slot: llama-server's slot pinning. Strata's scheduler places every
 * request (docs/PRIORITY.md); -1 (any slot) is the only value it honours. */
static enum st_status parse_slot(const cJSON *root, struct st_api_error *e)
{
    int64_t id = -1;
    bool has = false;
    enum st_status rc = st_oai_get_int(root, "id_slot", -1, INT32_MAX, &id, &has, e);
    if (rc == ST_OK && has && id != -1)
        rc = st_api_error_set(e, ST_ERR_INVALID, "id_slot", NULL,
                              "Invalid 'id_slot': the scheduler places requests; only -1 "
                              "(any slot) is accepted.");
    return rc;
}

static enum st_status parse_native(const cJSON *root, struct st_oai_request *oq,
                                   struct st_api_error *e)
{
    int64_t v = 0;
    bool has = false;
    enum st_status rc = st_oai_get_int(root, "n_predict", -1, INT32_MAX, &v, &has, e);
    if (rc == ST_OK && has)
        oq->params.max_tokens = (int32_t)v;
    if (rc == ST_OK)
        rc = st_oai_get_int(root, "n_cmpl", 1, ST_OAI_MAX_N, &v, &has, e);
    if (rc == ST_OK && has)
        oq->n = (int32_t)v;
    if (rc == ST_OK)
        rc = parse_probs(root, oq, e);
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "return_tokens", &oq->llama.return_tokens, NULL, e);
    if (rc == ST_OK)
        rc = parse_slot(root, e);
    if (rc == ST_OK && (int64_t)oq->n * (int64_t)oq->n_prompts > ST_OAI_MAX_CHOICES)
        rc = st_api_error_set(e, ST_ERR_INVALID, "n_cmpl", NULL,
                              "Invalid 'n_cmpl': prompts x n_cmpl must be at most %d.",
                              ST_OAI_MAX_CHOICES);
    return rc;
}

enum st_status st_llama_completion_parse(const char *body, size_t len,
                                         struct st_oai_request *oq, struct st_api_error *e)
{
    st_oai_request_init(oq);
    oq->kind = ST_OAI_COMPLETION;
    cJSON *root = NULL;
    enum st_status rc = st_oai_json_root(body, len, &root, e);
    if (rc == ST_OK)
        rc = st_oai_parse_tree(ST_OAI_COMPLETION, root, &st_oai_chat_names, oq, e);
    if (rc == ST_OK && (oq->echo || oq->suffix || oq->prompt_logprobs >= 0))
        rc = st_api_error_set(e, ST_ERR_INVALID, oq->echo ? "echo" : oq->suffix ? "suffix"
                                                                           : "prompt_logprobs",
                              NULL, "/completion has no OpenAI echo, suffix or "
                                    "prompt_logprobs; use /v1/completions.");
    if (rc == ST_OK)
        rc = parse_native(root, oq, e);
    cJSON_Delete(root);
    oq->llama.on = true;
    if (rc == ST_OK)
        rc = st_llama_settings(oq, e);
    if (rc != ST_OK) {
        st_oai_request_fini(oq);
        oq->kind = ST_OAI_COMPLETION;
    }
    return rc;
}

enum st_route_result st_h_completion(struct st_call *c)
{
    struct st_oai_request oq;
    struct st_api_error e;
    if (st_llama_completion_parse(c->body.data, c->body.len, &oq, &e) != ST_OK) {
        st_gen_log_refused(c, &e);
        return st_reply_error(c, &e);
    }
    enum st_route_result r = st_gen_start(c, &oq);
    st_oai_request_fini(&oq);
    return r;
}
