/* embeddings_request.c -- a POST /v1/embeddings body -> struct
 * st_embed_request, validated (docs/API.md "/v1/embeddings").
 *
 *   input            a string, an array of strings, an array of token ids
 *                    (ONE item), or an array of token-id arrays; each item
 *                    is embedded on its own. 1..ST_EMBED_MAX_ITEMS items;
 *                    an empty string or token array is a 400 (as OpenAI);
 *                    token ids together at most ST_EMBED_MAX_TOKENS (text
 *                    items are counted once tokenized, h_embeddings.c)
 *   model            a string; absent = the default model
 *   encoding_format  "float" (default) or "base64"
 *   dimensions       an integer >= 1 (its upper bound, the model's width,
 *                    is checked once the model is known)
 *   user             a string, kept for nothing but the log
 *   priority         as chat: a number; junk counts as absent
 *
 * Every 400 names the field in 'param'. Thread: any.
 */
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"

static enum st_status nomem(struct st_api_error *e)
{
    return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
}

void st_embed_request_fini(struct st_embed_request *r)
{
    for (size_t i = 0; r->items && i < r->n_items; i++) {
        free(r->items[i].text);
        free(r->items[i].tokens);
    }
    free(r->items);
    free(r->model);
    free(r->user);
    memset(r, 0, sizeof(*r));
}

static enum st_status bad_input(struct st_api_error *e, const char *what)
{
    return st_api_error_set(e, ST_ERR_INVALID, "input", NULL, "Invalid 'input': %s", what);
}

/* One item: a non-empty string or a non-empty token array. */
static enum st_status input_item(const cJSON *v, struct st_oai_prompt *out, size_t *n_tokens,
                                 struct st_api_error *e)
{
    if (cJSON_IsString(v)) {
        if (v->valuestring[0] == '\0')
            return bad_input(e, "an input string must not be empty.");
        out->text = st_str_dup(st_str_c(v->valuestring));
        return out->text ? ST_OK : nomem(e);
    }
    if (!cJSON_IsArray(v))
        return bad_input(e, "expected a string, an array of strings, an array of tokens or "
                            "an array of token arrays.");
    enum st_status rc = st_oai_tokens(v, "input", &out->tokens, &out->n_tokens, e);
    if (rc != ST_OK)
        return rc;
    if (out->n_tokens == 0)
        return bad_input(e, "a token array must not be empty.");
    *n_tokens += out->n_tokens;
    if (*n_tokens > ST_EMBED_MAX_TOKENS)
        return st_api_error_set(e, ST_ERR_INVALID, "input", NULL, "Invalid 'input': at most "
                                "%d tokens per request, all items together.",
                                ST_EMBED_MAX_TOKENS);
    return ST_OK;
}

static enum st_status parse_input(const cJSON *root, struct st_embed_request *r,
                                  struct st_api_error *e)
{
    const cJSON *v = st_oai_field(root, "input");
    if (!v)
        return st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                "Missing required parameter: 'input'.");
    /* a flat array of numbers is ONE token item; otherwise each entry is one */
    bool many = cJSON_IsArray(v) && !(v->child && cJSON_IsNumber(v->child));
    size_t n = many ? (size_t)cJSON_GetArraySize(v) : 1;
    if (n == 0)
        return bad_input(e, "an empty array.");
    if (n > ST_EMBED_MAX_ITEMS)
        return st_api_error_set(e, ST_ERR_INVALID, "input", NULL, "Invalid 'input': at most "
                                "%d items per request.", ST_EMBED_MAX_ITEMS);
    r->items = calloc(n, sizeof(*r->items));
    if (!r->items)
        return nomem(e);
    r->n_items = n;
    size_t tokens = 0;
    if (!many)
        return input_item(v, &r->items[0], &tokens, e);
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        if (cJSON_IsArray(it) && it->child && !cJSON_IsNumber(it->child))
            return bad_input(e, "nested arrays must hold token ids.");
        enum st_status rc = input_item(it, &r->items[i++], &tokens, e);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

static enum st_status parse_format(const cJSON *root, struct st_embed_request *r,
                                   struct st_api_error *e)
{
    char *f = NULL;
    enum st_status rc = st_oai_get_str(root, "encoding_format", &f, e);
    if (rc != ST_OK || !f)
        return rc;
    if (strcmp(f, "base64") == 0)
        r->base64 = true;
    else if (strcmp(f, "float") != 0)
        rc = st_api_error_set(e, ST_ERR_INVALID, "encoding_format", NULL,
                              "Invalid 'encoding_format': expected \"float\" or \"base64\".");
    free(f);
    return rc;
}

static enum st_status parse_fields(const cJSON *root, struct st_embed_request *r,
                                   struct st_api_error *e)
{
    int64_t dims = 0;
    ST_TRY(st_oai_get_str(root, "model", &r->model, e));
    ST_TRY(parse_input(root, r, e));
    ST_TRY(parse_format(root, r, e));
    ST_TRY(st_oai_get_int(root, "dimensions", 1, INT32_MAX, &dims, NULL, e));
    r->dimensions = (int32_t)dims;
    ST_TRY(st_oai_get_str(root, "user", &r->user, e));
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(root, "priority");
    if (pr)
        r->has_priority = st_priority_from_json(cJSON_IsNumber(pr),
                                                cJSON_IsNumber(pr) ? pr->valuedouble : 0.0,
                                                &r->priority);
    return ST_OK;
}

enum st_status st_embed_parse(const char *body, size_t len, struct st_embed_request *r,
                              struct st_api_error *e)
{
    memset(r, 0, sizeof(*r));
    cJSON *root = NULL;
    enum st_status rc = st_oai_json_root(body, len, &root, e);
    if (rc != ST_OK)
        return rc;
    rc = parse_fields(root, r, e);
    cJSON_Delete(root);
    if (rc != ST_OK)
        st_embed_request_fini(r);
    return rc;
}
