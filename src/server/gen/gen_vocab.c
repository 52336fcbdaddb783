/* gen_vocab.c -- what a request asks of its model's vocabulary and chat
 * template before it is submitted: logit_bias ids checked against the
 * vocabulary and text keys tokenized (llama-server's), the think tags the
 * model has as tokens, and whether its template ever writes a think
 * block. MHD thread, no lock held (the pool's tokenizer and renderer are
 * thread-safe).
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server/gen/gen.h"
#include "server/gen/gen_vocab.h"
#include "strata/think_block.h"

/* logit_bias ids must be tokens of the model (400 otherwise, as OpenAI). */
enum st_status st_gen_check_bias(struct st_call *c, const struct st_oai_request *oq,
                                 int32_t model, struct st_api_error *e)
{
    const struct st_gen_params *p = &oq->params;
    if (p->n_logit_bias == 0)
        return ST_OK;
    struct st_err err = { 0 };
    int32_t n_vocab = 0;
    enum st_status rc = st_engine_pool_n_vocab(c->srv->pool, model, &n_vocab, &err);
    if (rc != ST_OK)
        return st_api_error_set(e, rc, NULL, NULL, "%s", err.msg[0] ? err.msg
                                                                   : st_status_msg(rc));
    for (int32_t i = 0; i < p->n_logit_bias; i++) {
        if (p->logit_bias[i].token >= n_vocab)
            return st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                    "Invalid key in 'logit_bias': %d is not a token of this "
                                    "model (ids 0 to %d).", (int)p->logit_bias[i].token,
                                    (int)n_vocab - 1);
    }
    return ST_OK;
}

/* logit_bias keyed by text (llama-server's): every token of the text, as
 * plain text (no special tokens), gets its bias; a token named again
 * takes the last value. Into oq->params.logit_bias, before it is copied. */
enum st_status st_gen_bias_text(struct st_call *c, struct st_oai_request *oq, int32_t model,
                                struct st_api_error *e)
{
    struct st_gen_params *p = &oq->params;
    const cJSON *pair;
    cJSON_ArrayForEach(pair, oq->bias_text) {
        const char *text = cJSON_GetArrayItem(pair, 0)->valuestring;
        float bias = (float)cJSON_GetArrayItem(pair, 1)->valuedouble;
        int32_t *ids = NULL;
        size_t n = 0;
        struct st_err err = { 0 };
        enum st_status rc = st_engine_pool_tokenize(c->srv->pool, model, text, strlen(text),
                                                    false, false, &ids, &n, &err);
        if (rc != ST_OK)
            return st_api_error_set(e, rc, rc == ST_ERR_NOMEM ? NULL : "logit_bias", NULL,
                                    "%s", err.msg[0] ? err.msg : st_status_msg(rc));
        for (size_t k = 0; k < n && rc == ST_OK; k++) {
            int32_t j = 0;
            while (j < p->n_logit_bias && p->logit_bias[j].token != ids[k])
                j++;
            if (j == p->n_logit_bias) {
                struct st_logit_bias *b = NULL;
                if (j >= ST_MAX_LOGIT_BIAS)
                    rc = st_api_error_set(e, ST_ERR_INVALID, "logit_bias", NULL,
                                          "Invalid 'logit_bias': its texts make more than %d "
                                          "tokens.", ST_MAX_LOGIT_BIAS);
                else if (!(b = realloc(p->logit_bias, (size_t)(j + 1) * sizeof(*b))))
                    rc = st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
                if (rc != ST_OK)
                    break;
                p->logit_bias = b;
                p->n_logit_bias++;
            }
            p->logit_bias[j] = (struct st_logit_bias){ .token = ids[k], .bias = bias };
        }
        free(ids);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

/* Is 'text' one token of the model (a special token such as <think>)? */
static bool one_token(struct st_call *c, int32_t model, const char *text)
{
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_err err = { 0 };
    bool one = st_engine_pool_tokenize(c->srv->pool, model, text, strlen(text), false, true,
                                       &ids, &n, &err) == ST_OK && n == 1;
    free(ids);
    return one;
}

static enum st_status mixed_one(struct st_call *c, struct st_oai_prompt *pr, int32_t model,
                                struct st_api_error *e)
{
    struct st_err err = { 0 };
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    enum st_status rc = ST_OK;
    bool first = true;
    const cJSON *it;
    cJSON_ArrayForEach(it, pr->mixed) {
        int32_t *piece = NULL, one = 0;
        size_t k = 1;
        if (cJSON_IsString(it)) {
            rc = st_engine_pool_tokenize(c->srv->pool, model, it->valuestring,
                                         strlen(it->valuestring), first, true, &piece, &k, &err);
            if (rc != ST_OK)
                break;
        } else {
            one = (int32_t)it->valuedouble;   /* an id: checked by the parser */
        }
        first = false;
        if (k == 0)   /* an empty string */
            continue;
        if (n + k > cap) {
            size_t want = (n + k) * 2;
            int32_t *grown = realloc(ids, want * sizeof(*ids));
            if (!grown) {
                free(piece);
                rc = ST_ERR_NOMEM;
                break;
            }
            ids = grown;
            cap = want;
        }
        memcpy(ids + n, piece ? piece : &one, k * sizeof(*ids));
        n += k;
        free(piece);
    }
    if (rc == ST_OK && n == 0)
        rc = st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL, "Invalid 'prompt': empty.");
    else if (rc != ST_OK)
        st_api_error_set(e, rc, rc == ST_ERR_NOMEM ? NULL : "prompt", NULL, "%s",
                         err.msg[0] ? err.msg : st_status_msg(rc));
    if (rc != ST_OK) {
        free(ids);
        return rc;
    }
    free(pr->tokens);
    pr->tokens = ids;
    pr->n_tokens = n;
    cJSON_Delete(pr->mixed);
    pr->mixed = NULL;
    return ST_OK;
}

enum st_status st_gen_mixed_prompts(struct st_call *c, struct st_oai_request *oq, int32_t model,
                                    struct st_api_error *e)
{
    for (size_t i = 0; i < oq->n_prompts; i++) {
        if (oq->prompts[i].mixed) {
            enum st_status rc = mixed_one(c, &oq->prompts[i], model, e);
            if (rc != ST_OK)
                return rc;
        }
    }
    return ST_OK;
}

/* The think tags the model has as tokens (struct st_gen think_vocab). */
uint8_t st_gen_think_vocab(struct st_call *c, int32_t model)
{
    uint8_t v = 0;
    for (int t = ST_THINK_ANGLE; t <= ST_THINK_SQUARE; t++) {
        if (one_token(c, model, st_think_open_tag((enum st_think_tags)t)) &&
            one_token(c, model, st_think_close_tag((enum st_think_tags)t)))
            v |= (uint8_t)(1u << t);
    }
    return v;
}

/* Does the model's template ever write a think block? A probe chat with
 * a reasoning turn and enable_thinking false: Qwen3 and QwQ render a
 * (possibly empty) block, Qwen3-Thinking opens one; a plain ChatML
 * template (Qwen2.5, make-model's tiny preset) renders none, and a model
 * so templated is not given an optional block before its JSON (nor by
 * llama-server: its grammar is the document's alone). Only ChatML is
 * judged so (other families, the sim's plain text, a probe that fails to
 * render: as before, the vocabulary decides). */
bool st_gen_template_thinks(struct st_call *c, int32_t model)
{
    struct st_chat_request probe;
    struct st_err err = { 0 };
    st_chat_request_init(&probe);
    if (st_chat_request_parse(&probe,
                              "[{\"role\":\"user\",\"content\":\"a\"},"
                              "{\"role\":\"assistant\",\"content\":\"b\","
                              "\"reasoning_content\":\"c\"},"
                              "{\"role\":\"user\",\"content\":\"d\"}]",
                              NULL, "{\"enable_thinking\":false}", &err) != ST_OK)
        return true;
    char *text = NULL;
    bool thinks = st_engine_pool_apply_template(c->srv->pool, model, &probe,
                                                ST_CHAT_END_GENERATE, &text, &err) != ST_OK ||
                  !strstr(text, "<|im_start|>") || strstr(text, "<think>") ||
                  strstr(text, "</think>");
    free(text);
    st_chat_request_fini(&probe);
    return thinks;
}
