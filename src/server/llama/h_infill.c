/* h_infill.c -- POST /infill (llama-server's code infill endpoint, used by
 * llama.vscode, llama.vim, Continue, Tabby ...) and the legacy "suffix" of
 * POST /v1/completions (docs/API.md "/infill").
 *
 * The body is llama-server's: input_prefix, input_suffix, input_extra
 * ([{filename, text}]), prompt (after <MID>), plus the generation fields of
 * /v1/completions and n_predict. The model's FIM prompt is built as token
 * ids by the engine (st_engine_pool_infill_prompt) and handed to the common
 * generation path as a token prompt (gen_submit.c), so priority, auth,
 * cancellation, metrics and drain work as for every completion; only the
 * answer is shaped differently (llama_shape.c, gen/llama_json.c).
 */
#include <stdlib.h>
#include <string.h>

#include "server/llama/llama.h"
#include "server/openai/oai_json.h"
#include "strata/fim.h"

void st_infill_body_fini(struct st_infill_body *b)
{
    free(b->input_prefix);
    free(b->input_suffix);
    free(b->prompt);
    free(b->repo_name);
    free(b->filename);
    for (size_t i = 0; i < b->n_extra; i++) {
        free((char *)b->extra[i].filename);
        free((char *)b->extra[i].text);
    }
    free(b->extra);
    memset(b, 0, sizeof(*b));
}

static enum st_status extra_error(struct st_api_error *e)
{
    return st_api_error_set(e, ST_ERR_INVALID, "input_extra", NULL,
                            "Invalid 'input_extra': expected an array of {\"filename\": "
                            "string, \"text\": string} objects.");
}

static enum st_status parse_extra(const cJSON *root, struct st_infill_body *b,
                                  struct st_api_error *e)
{
    const cJSON *v = st_oai_field(root, "input_extra");
    if (!v)
        return ST_OK;
    if (!cJSON_IsArray(v))
        return extra_error(e);
    size_t n = (size_t)cJSON_GetArraySize(v);
    if (n > ST_INFILL_MAX_EXTRA)   /* each is tokenized before the budget drops it */
        return st_api_error_set(e, ST_ERR_INVALID, "input_extra", NULL,
                                "'input_extra' has %zu chunks; at most %d", n,
                                ST_INFILL_MAX_EXTRA);
    b->extra = calloc(n ? n : 1, sizeof(*b->extra));
    if (!b->extra)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (!cJSON_IsObject(it))
            return extra_error(e);
        struct st_infill_chunk *c = &b->extra[b->n_extra++];
        char *name = NULL, *text = NULL;
        enum st_status rc = st_oai_get_str(it, "filename", &name, e);
        c->filename = name;
        if (rc == ST_OK)
            rc = st_oai_get_str(it, "text", &text, e);
        c->text = text;
        if (rc != ST_OK || !text)   /* a chunk is its text: none is an error, not a skip */
            return extra_error(e);
    }
    return ST_OK;
}

/* n_predict (llama-server; -1 = no limit) wins over max_tokens. */
static enum st_status parse_n_predict(const cJSON *root, struct st_oai_request *oq,
                                      struct st_api_error *e)
{
    int64_t v = -1;
    bool has = false;
    enum st_status rc = st_oai_get_int(root, "n_predict", -1, INT32_MAX, &v, &has, e);
    if (rc == ST_OK && has)
        oq->params.max_tokens = (int32_t)v;
    return rc;
}

static enum st_status parse_fields(const cJSON *root, struct st_oai_request *oq,
                                   struct st_infill_body *b, struct st_api_error *e)
{
    enum st_status rc = st_oai_parse_common(root, oq, e);
    if (rc == ST_OK)
        rc = parse_n_predict(root, oq, e);
    if (rc == ST_OK)
        rc = st_oai_get_str(root, "input_prefix", &b->input_prefix, e);
    if (rc == ST_OK)
        rc = st_oai_get_str(root, "input_suffix", &b->input_suffix, e);
    if (rc == ST_OK)
        rc = st_oai_get_str(root, "prompt", &b->prompt, e);
    if (rc == ST_OK)
        rc = st_oai_get_str(root, "repo_name", &b->repo_name, e);
    if (rc == ST_OK)
        rc = st_oai_get_str(root, "filename", &b->filename, e);
    if (rc == ST_OK)
        rc = parse_extra(root, b, e);
    if (rc == ST_OK && oq->n != 1)
        rc = st_api_error_set(e, ST_ERR_INVALID, "n", NULL,
                              "Invalid 'n': /infill makes one completion.");
    return rc;
}

enum st_status st_infill_parse(const char *body, size_t len, struct st_oai_request *oq,
                               struct st_infill_body *b, struct st_api_error *e)
{
    st_oai_request_init(oq);
    memset(b, 0, sizeof(*b));
    oq->kind = ST_OAI_COMPLETION;
    cJSON *root = NULL;
    enum st_status rc = st_oai_json_root(body, len, &root, e);
    if (rc == ST_OK)
        rc = parse_fields(root, oq, b, e);
    cJSON_Delete(root);
    /* llama-server's /infill has no OpenAI logprobs, echo or prompt scoring */
    oq->params.logprobs = false;
    oq->params.top_logprobs = 0;
    oq->echo = oq->params.echo = false;
    oq->params.prompt_logprobs = false;
    oq->prompt_logprobs = -1;
    oq->llama.on = true;
    if (rc != ST_OK) {
        st_oai_request_fini(oq);
        st_infill_body_fini(b);
        oq->kind = ST_OAI_COMPLETION;
    }
    return rc;
}

static enum st_status infill_prompt(struct st_call *c, struct st_oai_request *oq,
                                    const struct st_infill_body *b, struct st_api_error *e)
{
    int32_t model = st_gen_fim_model(c, oq);
    if (model < 0)
        return ST_OK;
    oq->prompts = calloc(1, sizeof(*oq->prompts));
    if (!oq->prompts)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    oq->n_prompts = 1;
    struct st_infill_input in = { .prefix = b->input_prefix, .suffix = b->input_suffix,
                                  .prompt = b->prompt, .extra = b->extra,
                                  .n_extra = b->n_extra, .repo_name = b->repo_name,
                                  .filename = b->filename };
    /* what cannot be trimmed away is bos, the FIM tokens and 'prompt' */
    return st_gen_fim_prompt(c, model, oq, &oq->prompts[0], &in, "prompt", e);
}

enum st_route_result st_h_infill(struct st_call *c)
{
    struct st_oai_request oq;
    struct st_infill_body b;
    struct st_api_error e;
    enum st_status rc = st_infill_parse(c->body.data, c->body.len, &oq, &b, &e);
    if (rc == ST_OK)
        rc = infill_prompt(c, &oq, &b, &e);
    st_infill_body_fini(&b);
    if (rc != ST_OK) {
        st_gen_log_refused(c, &e);
        st_oai_request_fini(&oq);
        return st_reply_error(c, &e);
    }
    enum st_route_result r = st_gen_start(c, &oq, &st_llama_native_shape);
    st_oai_request_fini(&oq);
    return r;
}
