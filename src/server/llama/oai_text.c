/* oai_text.c -- bodies of the llama-server style text endpoints:
 *
 *   POST /tokenize        {"content": "...", "add_special": false,
 *                          "parse_special": true, "with_pieces": false, "model": "..."}
 *   POST /detokenize      {"tokens": [1, 2, 3], "model": "..."}
 *   POST /apply-template  {"messages": [...], "chat_template_kwargs": {...},
 *                          "tools": [...], "model": "..."}
 *
 * Same rules as the completion bodies (oai_json.h): strict types, null is
 * absent, unknown fields ignored, no cJSON after return but the chat
 * request's (strata/chat_req.h).
 */
#include <stdlib.h>
#include <string.h>

#include "server/llama/llama.h"
#include "server/openai/oai_json.h"

void st_oai_text_request_fini(struct st_oai_text_request *r)
{
    free(r->model);
    free(r->content);
    free(r->tokens);
    st_chat_request_fini(&r->chat);
    memset(r, 0, sizeof(*r));
}

static enum st_status parse_tokenize(const cJSON *root, struct st_oai_text_request *r,
                                     struct st_api_error *e)
{
    enum st_status rc = st_oai_get_str(root, "content", &r->content, e);
    if (rc == ST_OK && !r->content)
        return st_api_error_set(e, ST_ERR_INVALID, "content", NULL,
                                "Missing required parameter: 'content'.");
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "add_special", &r->add_special, NULL, e);
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "parse_special", &r->parse_special, NULL, e);
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "with_pieces", &r->with_pieces, NULL, e);
    return rc;
}

static enum st_status parse_detokenize(const cJSON *root, struct st_oai_text_request *r,
                                       struct st_api_error *e)
{
    const cJSON *t = st_oai_field(root, "tokens");
    if (!t)
        return st_api_error_set(e, ST_ERR_INVALID, "tokens", NULL,
                                "Missing required parameter: 'tokens'.");
    return st_oai_tokens(t, "tokens", &r->tokens, &r->n_tokens, e);
}

static enum st_status parse_template(const cJSON *root, struct st_oai_text_request *r,
                                     struct st_api_error *e)
{
    enum st_status rc = st_oai_messages(root, &r->chat.messages, e);
    if (rc == ST_OK)
        rc = st_oai_get_tree(root, "chat_template_kwargs", cJSON_Object, &r->chat.kwargs, e);
    if (rc == ST_OK)
        rc = st_oai_get_raw(root, "tools", cJSON_Array, &r->chat.tools, e);
    r->add_generation_prompt = true;
    if (rc == ST_OK)
        rc = st_oai_get_bool(root, "add_generation_prompt", &r->add_generation_prompt, NULL, e);
    return rc;
}

enum st_status st_oai_parse_text(enum st_oai_text_kind kind, const char *body, size_t len,
                                 struct st_oai_text_request *r, struct st_api_error *e)
{
    memset(r, 0, sizeof(*r));
    r->parse_special = true;
    cJSON *root = NULL;
    enum st_status rc = st_oai_json_root(body, len, &root, e);
    if (rc != ST_OK)
        return rc;
    rc = st_oai_get_str(root, "model", &r->model, e);
    if (rc == ST_OK) {
        switch (kind) {
        case ST_OAI_TOKENIZE:       rc = parse_tokenize(root, r, e); break;
        case ST_OAI_DETOKENIZE:     rc = parse_detokenize(root, r, e); break;
        case ST_OAI_APPLY_TEMPLATE: rc = parse_template(root, r, e); break;
        }
    }
    cJSON_Delete(root);
    if (rc != ST_OK)
        st_oai_text_request_fini(r);
    return rc;
}
