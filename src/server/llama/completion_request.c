/* completion_request.c -- llama-server's POST /completion body (docs/API.md
 * "/completion"): /v1/completions' fields plus n_predict (wins over
 * max_tokens), n_probs, post_sampling_probs, return_tokens, n_cmpl and
 * id_slot, and the generation_settings object the answer carries.
 * Thread: any. Fuzzed by fuzz_oai_request.
 */
#include <stdlib.h>
#include <string.h>

#include "server/llama/llama.h"
#include "server/openai/oai_json.h"

/* The fields llama-server names that Strata has, with the values the
 * request will run with. */
void st_llama_settings_json(struct st_out *o, const struct st_gen_params *p,
                            const int32_t *eog, size_t n_eog, bool stream, int32_t n_probs,
                            bool post_sampling, bool cache_prompt)
{
    st_out_text(o, "{");
    st_out_kv_i64(o, "n_predict", p->max_tokens);
    st_out_kv_i64(o, "seed", p->has_seed ? (int64_t)p->seed : 4294967295LL);
    st_out_kv_num(o, "temperature", p->temperature);
    st_out_kv_i64(o, "top_k", p->top_k);
    st_out_kv_num(o, "top_p", p->top_p);
    st_out_kv_num(o, "min_p", p->min_p);
    st_out_kv_i64(o, "repeat_last_n", p->repeat_last_n);
    st_out_kv_num(o, "repeat_penalty", p->repeat_penalty);
    st_out_kv_num(o, "presence_penalty", p->presence_penalty);
    st_out_kv_num(o, "frequency_penalty", p->frequency_penalty);
    st_out_kv_raw(o, "stop", "[");
    for (int32_t i = 0; i < p->n_stop; i++) {
        st_out_sep(o);
        st_out_json_cstr(o, p->stop[i]);
    }
    st_out_text(o, "]");
    st_out_kv_i64(o, "max_tokens", p->max_tokens);
    st_out_kv_bool(o, "ignore_eos", p->ignore_eos);
    st_out_kv_raw(o, "logit_bias", "[");   /* the request's, by token id */
    for (int32_t i = 0; i < p->n_logit_bias; i++) {
        st_out_sep(o);
        st_out_text(o, "{");
        st_out_kv_i64(o, "token", p->logit_bias[i].token);
        st_out_kv_num(o, "bias", p->logit_bias[i].bias);
        st_out_text(o, "}");
    }
    for (size_t i = 0; i < n_eog; i++) {   /* ignore_eos: -inf, JSON's null (as llama-server) */
        st_out_sep(o);
        st_out_text(o, "{");
        st_out_kv_i64(o, "token", eog[i]);
        st_out_kv_raw(o, "bias", "null");
        st_out_text(o, "}");
    }
    st_out_text(o, "]");
    st_out_kv_bool(o, "stream", stream);
    st_out_kv_i64(o, "n_probs", n_probs);
    st_out_kv_bool(o, "post_sampling_probs", post_sampling);
    st_out_kv_bool(o, "cache_prompt", cache_prompt);
    st_out_kv_raw(o, "samplers", "[\"penalties\",\"top_k\",\"top_p\",\"min_p\",\"temperature\"]");
    st_out_text(o, "}");
}

enum st_status st_llama_settings(struct st_oai_request *oq, const int32_t *eog, size_t n_eog,
                                 struct st_api_error *e)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_llama_settings_json(&o, &oq->params, oq->params.ignore_eos ? eog : NULL,
                           oq->params.ignore_eos ? n_eog : 0, oq->stream, oq->llama.n_probs,
                           oq->llama.post_sampling, oq->cache_prompt);
    if (st_out_finish(&o) != ST_OK || st_buf_append(&b, "", 1) != ST_OK) {
        st_buf_fini(&b);
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    free(oq->llama.settings);
    oq->llama.settings = b.data;   /* NUL-terminated, owned */
    return ST_OK;
}

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
    if (rc != ST_OK) {
        st_oai_request_fini(oq);
        oq->kind = ST_OAI_COMPLETION;
    }
    return rc;
}

