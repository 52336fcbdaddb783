/* oai_request.c -- an OpenAI completion body (JSON) -> struct st_oai_request.
 *
 * Accepted (everything else is ignored, as OpenAI-compatible servers do):
 *   model            string (absent: the default model)
 *   messages         chat: non-empty array of {role, content}; content a string,
 *                    an array of text parts, or null
 *   prompt           completions: a string, an array of strings, an array of
 *                    token ids, or an array of token-id arrays; llama-server's
 *                    ids and strings mixed in one array (one prompt; also as
 *                    an item) and {"prompt_string": ...} items
 *   max_tokens, max_completion_tokens   integer >= 0 (the latter wins)
 *   stop             string or array of up to 4 strings
 *   n                integer 1..16      seed        integer (-1 = random)
 *   temperature      number >= 0        top_p       number in (0, 1]
 *   top_k            integer >= -1      min_p       number in [0, 1]
 *   logprobs         chat: boolean; completions: integer 0..20 (top count)
 *   top_logprobs     chat: integer 0..20, needs logprobs: true
 *   stream           boolean            stream_options.include_usage  boolean
 *   user             string             ignore_eos  boolean (llama-server)
 *   priority         a number; junk counts as absent (docs/design/SCHEDULER.md section 2)
 *   chat_template_kwargs  object        tools       array
 *   echo             boolean (completions: the prompt, and with logprobs its tokens'
 *                    logprobs, lead the text; chat: true is 400)
 *   prompt_logprobs  integer 0..20 (vLLM): each prompt token's logprob, rank and this
 *                    many alternatives; not with stream
 *   presence_penalty, frequency_penalty, repeat_penalty, repeat_last_n,
 *   logit_bias, response_format, grammar: see oai_sampling.c
 *   cache_prompt     boolean, default true (llama-server; false: no prefix reuse)
 *   timings_per_token, return_progress  booleans (llama-server): stream extras
 *   verbose          boolean (llama-server): "__verbose" in the answer (gen.c)
 *   suffix           completions: string, the text after the completion (OpenAI's
 *                    legacy insert mode): the prompt becomes a fill-in-the-middle
 *                    prompt (gen/gen_fim.c); not with echo
 *   tool_choice, parallel_tool_calls, reasoning_format  chat: see oai_tools.c
 * JSON null counts as absent for every optional field.
 *
 * The tree is deleted before st_oai_parse() returns; see oai_json.h. A body
 * another API was translated into (translate.h) comes as a tree
 * (st_oai_parse_tree), its 400s named by that API's names.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"
#include "strata/gbnf.h"
#include "strata/json_schema.h"

void st_oai_request_init(struct st_oai_request *r)
{
    memset(r, 0, sizeof(*r));
    st_gen_params_defaults(&r->params);
    r->n = 1;
    r->cache_prompt = true;
    r->prompt_logprobs = -1;
    r->verbose = -1;
    r->add_gen_prompt = -1;
}

void st_oai_request_fini(struct st_oai_request *r)
{
    free(r->model);
    st_chat_request_fini(&r->chat);
    for (size_t i = 0; i < r->n_prompts; i++) {
        free(r->prompts[i].text);
        free(r->prompts[i].tokens);
        cJSON_Delete(r->prompts[i].mixed);
    }
    free(r->prompts);
    for (int32_t i = 0; i < r->params.n_stop; i++)
        free(r->params.stop[i]);
    free(r->params.logit_bias);
    cJSON_Delete(r->bias_text);
    st_json_schema_unref(r->params.json_schema);   /* response_format json_schema */
    st_gbnf_unref(r->params.grammar);              /* grammar (GBNF) */
    free(r->user);
    free(r->suffix);
    free(r->llama.settings);
    memset(r, 0, sizeof(*r));
}

static enum st_status nomem(struct st_api_error *e)
{
    return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
}

static enum st_status add_stop(struct st_gen_params *p, const char *s, struct st_api_error *e)
{
    if (!*s)
        return ST_OK;   /* an empty stop string would stop at once: ignore it */
    char *d = st_str_dup(st_str_c(s));
    if (!d)
        return nomem(e);
    p->stop[p->n_stop++] = d;
    return ST_OK;
}

/* "stop"; 'name' what the client calls it (Messages: stop_sequences). */
static enum st_status parse_stop(const cJSON *root, const char *name, struct st_gen_params *p,
                                 struct st_api_error *e)
{
    const cJSON *v = st_oai_field(root, "stop");
    if (!v)
        return ST_OK;
    if (cJSON_IsString(v))
        return add_stop(p, v->valuestring, e);
    if (!cJSON_IsArray(v))
        return st_api_error_set(e, ST_ERR_INVALID, name, NULL,
                                "Invalid type for '%s': expected a string or an array of "
                                "strings.", name);
    if (cJSON_GetArraySize(v) > ST_MAX_STOP)
        return st_api_error_set(e, ST_ERR_INVALID, name, NULL,
                                "Invalid '%s': array too long. Expected at most %d strings.",
                                name, ST_MAX_STOP);
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (!cJSON_IsString(it))
            return st_api_error_set(e, ST_ERR_INVALID, name, NULL,
                                    "Invalid type for '%s': every item must be a string.",
                                    name);
        enum st_status rc = add_stop(p, it->valuestring, e);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

/* Sampling parameters shared by chat and completions. */
static enum st_status parse_sampling(const cJSON *root, struct st_gen_params *p,
                                     bool *temp_sent, bool *seed_sent, struct st_api_error *e)
{
    double d;
    int64_t i;
    bool has;
    enum st_status rc;

    d = p->temperature;
    if ((rc = st_oai_get_num(root, "temperature", 0, false, 1e6, &d, temp_sent, e)) != ST_OK)
        return rc;
    p->temperature = (float)d;
    d = p->top_p;
    if ((rc = st_oai_get_num(root, "top_p", 0, true, 1, &d, NULL, e)) != ST_OK)
        return rc;
    p->top_p = (float)d;
    d = p->min_p;
    if ((rc = st_oai_get_num(root, "min_p", 0, false, 1, &d, NULL, e)) != ST_OK)
        return rc;
    p->min_p = (float)d;
    i = p->top_k;
    if ((rc = st_oai_get_int(root, "top_k", -1, INT32_MAX, &i, NULL, e)) != ST_OK)
        return rc;
    p->top_k = i < 0 ? 0 : (int32_t)i;   /* -1 = off, as vLLM */
    i = -1;
    if ((rc = st_oai_get_int(root, "seed", INT64_MIN / 2, INT64_MAX / 2, &i, &has, e)) != ST_OK)
        return rc;
    p->has_seed = has && i != -1;         /* -1 = random, as llama-server */
    *seed_sent = has;
    p->seed = (uint64_t)i;
    return st_oai_get_bool(root, "ignore_eos", &p->ignore_eos, NULL, e);
}

static enum st_status parse_max_tokens(const cJSON *root, struct st_gen_params *p,
                                       struct st_api_error *e)
{
    int64_t v = p->max_tokens;
    enum st_status rc = st_oai_get_int(root, "max_tokens", 0, INT32_MAX, &v, NULL, e);
    if (rc == ST_OK)
        rc = st_oai_get_int(root, "max_completion_tokens", 0, INT32_MAX, &v, NULL, e);
    p->max_tokens = (int32_t)v;
    return rc;
}

/* logprobs: chat takes a boolean plus top_logprobs; completions the
 * legacy integer (how many alternatives per token). */
static enum st_status parse_logprobs(const cJSON *root, enum st_oai_kind kind,
                                     struct st_gen_params *p, struct st_api_error *e)
{
    int64_t top = 0;
    bool has_top = false;
    enum st_status rc;
    if (kind == ST_OAI_COMPLETION) {
        rc = st_oai_get_int(root, "logprobs", 0, ST_MAX_TOP_LOGPROBS, &top, &has_top, e);
        p->logprobs = has_top;
        p->top_logprobs = (int32_t)top;
        return rc;
    }
    rc = st_oai_get_bool(root, "logprobs", &p->logprobs, NULL, e);
    if (rc == ST_OK)
        rc = st_oai_get_int(root, "top_logprobs", 0, ST_MAX_TOP_LOGPROBS, &top, &has_top, e);
    if (rc == ST_OK && has_top && top > 0 && !p->logprobs)
        return st_api_error_set(e, ST_ERR_INVALID, "top_logprobs", NULL,
                                "Invalid 'top_logprobs': it needs 'logprobs' set to true.");
    p->top_logprobs = (int32_t)top;
    return rc;
}

static enum st_status parse_stream(const cJSON *root, struct st_oai_request *r,
                                   struct st_api_error *e)
{
    enum st_status rc = st_oai_get_bool(root, "stream", &r->stream, NULL, e);
    const cJSON *so = st_oai_field(root, "stream_options");
    if (rc != ST_OK || !so)
        return rc;
    if (!cJSON_IsObject(so))
        return st_api_error_set(e, ST_ERR_INVALID, "stream_options", NULL,
                                "Invalid type for 'stream_options': expected an object.");
    rc = st_oai_get_bool(so, "include_usage", &r->include_usage, NULL, e);
    if (rc != ST_OK)
        snprintf(e->param, sizeof(e->param), "stream_options.include_usage");
    return rc;
}

/* llama-server's stream extras: timings_per_token ("timings" on every
 * chunk) and return_progress (prompt_progress chunks while the prompt is
 * read: the engine's PROGRESS events); both only change a stream. */
static enum st_status parse_stream_extras(const cJSON *root, struct st_oai_request *r,
                                          struct st_api_error *e)
{
    enum st_status rc = st_oai_get_bool(root, "timings_per_token",
                                        &r->llama.timings_per_token, NULL, e);
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "return_progress", &r->params.progress, NULL, e);
    return rc;
}

/* Whether an item of arr passes is (cJSON_IsString, cJSON_IsNumber). */
static bool has_item(const cJSON *arr, cJSON_bool (*is)(const cJSON *const item))
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (is(it))
            return true;
    }
    return false;
}

/* llama-server's mixed prompt [12, 34, "text", 56]: token ids and texts in
 * one sequence, kept for the model's tokenizer (st_gen_mixed_prompts). */
static enum st_status mixed_item(const cJSON *v, struct st_oai_prompt *out,
                                 struct st_api_error *e)
{
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        double d = cJSON_IsNumber(it) ? it->valuedouble : 0.0;
        if (!cJSON_IsString(it) && (!cJSON_IsNumber(it) || floor(d) != d || d < 0 ||
                                    d > INT32_MAX))
            return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                                    "Invalid value for 'prompt': item %zu of a mixed prompt "
                                    "is neither a string nor a token id.", i);
        i++;
    }
    out->mixed = cJSON_Duplicate(v, true);
    return out->mixed ? ST_OK : nomem(e);
}

/* One prompt from a string, a token array, or llama-server's object
 * {"prompt_string": "..."} (its "multimodal_data" is refused: text models
 * only). */
static enum st_status prompt_item(const cJSON *v, struct st_oai_prompt *out,
                                  struct st_api_error *e)
{
    if (cJSON_IsObject(v)) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, "prompt_string");
        if (cJSON_GetObjectItemCaseSensitive(v, "multimodal_data"))
            return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                                    "Multimodal data provided, but model does not support "
                                    "multimodal requests.");
        if (!cJSON_IsString(s))
            return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                                    "Invalid 'prompt': an object needs 'prompt_string', a "
                                    "string.");
        v = s;
    }
    if (cJSON_IsString(v)) {
        out->text = st_str_dup(st_str_c(v->valuestring));
        return out->text ? ST_OK : nomem(e);
    }
    if (cJSON_IsArray(v) && has_item(v, cJSON_IsString))
        return mixed_item(v, out, e);
    if (cJSON_IsArray(v)) {
        enum st_status rc = st_oai_tokens(v, "prompt", &out->tokens, &out->n_tokens, e);
        if (rc == ST_OK && out->n_tokens == 0)
            return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                                    "Invalid 'prompt': empty token array.");
        return rc;
    }
    return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                            "Invalid type for 'prompt': expected a string, an array of "
                            "strings, an array of tokens or an array of token arrays.");
}

static enum st_status parse_prompts(const cJSON *root, struct st_oai_request *r,
                                    struct st_api_error *e)
{
    const cJSON *v = st_oai_field(root, "prompt");
    if (!v)
        return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                                "Missing required parameter: 'prompt'.");
    /* an array with a number in it is ONE prompt (token ids, or ids and texts
     * mixed, as llama-server's); otherwise each item is one */
    bool many = cJSON_IsArray(v) && !has_item(v, cJSON_IsNumber);
    size_t n = many ? (size_t)cJSON_GetArraySize(v) : 1;
    if (n == 0)
        return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                                "Invalid 'prompt': empty array.");
    if (n > ST_OAI_MAX_CHOICES)
        return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                                "Invalid 'prompt': at most %d prompts per request.",
                                ST_OAI_MAX_CHOICES);
    r->prompts = calloc(n, sizeof(*r->prompts));
    if (!r->prompts)
        return nomem(e);
    r->n_prompts = n;
    if (!many)
        return prompt_item(v, &r->prompts[0], e);
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (cJSON_IsArray(it) && it->child && !has_item(it, cJSON_IsNumber))
            return st_api_error_set(e, ST_ERR_INVALID, "prompt", NULL,
                                    "Invalid 'prompt': nested arrays must hold token ids.");
        enum st_status rc = prompt_item(it, &r->prompts[i++], e);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

/* OpenAI's legacy "suffix" (completions): a string; "" counts as absent. */
static enum st_status parse_suffix(const cJSON *root, struct st_oai_request *r,
                                   struct st_api_error *e)
{
    enum st_status rc = st_oai_get_str(root, "suffix", &r->suffix, e);
    if (rc != ST_OK)
        return rc;
    if (r->suffix && !*r->suffix) {
        free(r->suffix);
        r->suffix = NULL;
    }
    if (r->suffix && r->echo)
        return st_api_error_set(e, ST_ERR_INVALID, "suffix", NULL,
                                "Invalid 'suffix': not available with 'echo': true.");
    return ST_OK;
}

/* continue_final_message and llama-server's add_generation_prompt: both
 * true is a 400, as llama-server's and vLLM's (the prompt cannot both end
 * inside the last message and open a new turn). */
static enum st_status parse_ending(const cJSON *root, struct st_oai_request *r,
                                   struct st_api_error *e)
{
    bool agp = true, has_agp = false;
    enum st_status rc = st_oai_get_bool(root, "continue_final_message", &r->continue_final,
                                        &r->continue_given, e);
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "add_generation_prompt", &agp, &has_agp, e);
    if (rc != ST_OK)
        return rc;
    r->add_gen_prompt = has_agp ? (int8_t)agp : -1;
    if (r->continue_final && has_agp && agp)
        return st_api_error_set(e, ST_ERR_INVALID, "add_generation_prompt", NULL,
                                "Invalid 'add_generation_prompt': not available with "
                                "'continue_final_message': true (the prompt ends inside the "
                                "last message); send one of them.");
    return ST_OK;
}

static enum st_status parse_chat(const cJSON *root, struct st_oai_request *r,
                                 struct st_api_error *e)
{
    enum st_status rc = st_oai_messages(root, &r->chat.messages, e);
    if (rc == ST_OK)
        rc = st_oai_get_raw(root, "tools", cJSON_Array, &r->chat.tools, e);
    if (rc == ST_OK)
        rc = st_oai_get_tree(root, "chat_template_kwargs", cJSON_Object, &r->chat.kwargs, e);
    if (rc == ST_OK)
        rc = parse_ending(root, r, e);
    if (rc == ST_OK)
        rc = st_oai_parse_tool_fields(root, r, e);
    return rc;
}

/* echo (completions) and vLLM's prompt_logprobs (both kinds), after
 * logprobs and stream: what the engine reports of the prompt
 * (docs/API.md "Scoring prompts"). */
static enum st_status parse_scoring(const cJSON *root, struct st_oai_request *r,
                                    struct st_api_error *e)
{
    int64_t k = 0;
    bool has_k = false;
    enum st_status rc = st_oai_get_bool(root, "echo", &r->echo, NULL, e);
    if (rc == ST_OK && r->echo && r->kind == ST_OAI_CHAT)
        return st_api_error_set(e, ST_ERR_INVALID, "echo", NULL,
                                "Invalid 'echo': /v1/chat/completions has no 'echo'; it is a "
                                "/v1/completions parameter.");
    if (rc == ST_OK)
        rc = st_oai_get_int(root, "prompt_logprobs", 0, ST_MAX_TOP_LOGPROBS, &k, &has_k, e);
    if (rc != ST_OK)
        return rc;
    if (has_k && r->stream)
        return st_api_error_set(e, ST_ERR_INVALID, "prompt_logprobs", NULL,
                                "Invalid 'prompt_logprobs': not available with 'stream': true.");
    r->prompt_logprobs = has_k ? (int32_t)k : -1;
    struct st_gen_params *p = &r->params;
    bool legacy = r->echo && p->logprobs;   /* echo + logprobs N: the prompt's too */
    p->echo = r->echo;
    p->prompt_logprobs = legacy || has_k;
    p->prompt_top_logprobs = (int32_t)ST_MAX(legacy ? p->top_logprobs : 0, has_k ? k : 0);
    return ST_OK;
}

const struct st_oai_names st_oai_chat_names = {
    .stop = "stop",
    .format = "response_format",
    .schema = "response_format.json_schema",
    .json_format = "a JSON 'response_format' or 'json_schema'",
    .forced_calls = "'tool_choice' \"required\" or a named function",
};

static enum st_status parse_common(const cJSON *root, const struct st_oai_names *names,
                                   struct st_oai_request *r, struct st_api_error *e)
{
    int64_t n = 1;
    enum st_status rc = st_oai_get_str(root, "model", &r->model, e);
    if (rc == ST_OK)
        rc = parse_max_tokens(root, &r->params, e);
    if (rc == ST_OK)
        rc = parse_stop(root, names->stop, &r->params, e);
    if (rc == ST_OK)
        rc = parse_sampling(root, &r->params, &r->temp_sent, &r->seed_sent, e);
    if (rc == ST_OK)
        rc = st_oai_parse_penalties(root, names, &r->params, &r->bias_text, e);   /* oai_sampling.c */
    if (rc == ST_OK)
        rc = parse_logprobs(root, r->kind, &r->params, e);
    if (rc == ST_OK)
        rc = parse_stream(root, r, e);
    if (rc == ST_OK)
        rc = parse_stream_extras(root, r, e);
    if (rc == ST_OK)
        rc = st_oai_get_int(root, "n", 1, ST_OAI_MAX_N, &n, NULL, e);
    r->n = (int32_t)n;
    if (rc == ST_OK)
        rc = st_oai_get_str(root, "user", &r->user, e);
    if (rc == ST_OK)
        rc = parse_scoring(root, r, e);
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "cache_prompt", &r->cache_prompt, NULL, e);
    bool verbose = false, has_verbose = false;
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "verbose", &verbose, &has_verbose, e);
    if (has_verbose)
        r->verbose = verbose;
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(root, "priority");
    if (pr)
        r->has_priority = st_priority_from_json(cJSON_IsNumber(pr),
                                                cJSON_IsNumber(pr) ? pr->valuedouble : 0.0,
                                                &r->priority);
    return rc;
}

enum st_status st_oai_parse_common(const cJSON *root, struct st_oai_request *r,
                                   struct st_api_error *e)
{
    return parse_common(root, &st_oai_chat_names, r, e);
}

enum st_status st_oai_parse(enum st_oai_kind kind, const char *body, size_t len,
                            struct st_oai_request *r, struct st_api_error *e)
{
    st_oai_request_init(r);
    r->kind = kind;
    cJSON *root = NULL;
    enum st_status rc = st_oai_json_root(body, len, &root, e);
    if (rc != ST_OK)
        return rc;
    rc = st_oai_parse_tree(kind, root, &st_oai_chat_names, r, e);
    cJSON_Delete(root);
    return rc;
}

enum st_status st_oai_parse_tree(enum st_oai_kind kind, const cJSON *root,
                                 const struct st_oai_names *names, struct st_oai_request *r,
                                 struct st_api_error *e)
{
    st_oai_request_init(r);
    r->kind = kind;
    enum st_status rc = parse_common(root, names, r, e);
    if (rc == ST_OK)
        rc = kind == ST_OAI_CHAT ? parse_chat(root, r, e) : parse_prompts(root, r, e);
    if (rc == ST_OK && kind == ST_OAI_COMPLETION)
        rc = parse_suffix(root, r, e);
    if (rc == ST_OK && (int64_t)r->n * (int64_t)(r->n_prompts ? r->n_prompts : 1) >
                           ST_OAI_MAX_CHOICES)
        rc = st_api_error_set(e, ST_ERR_INVALID, "n", NULL,
                              "Invalid 'n': prompts x n must be at most %d.",
                              ST_OAI_MAX_CHOICES);
    if (rc != ST_OK) {
        st_oai_request_fini(r);
        r->kind = kind;
    }
    return rc;
}
