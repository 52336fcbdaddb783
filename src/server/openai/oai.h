/* openai/oai.h -- OpenAI's generation endpoints: POST /v1/chat/completions
 * and /v1/completions (h_completions.c, their /render twins h_render.c;
 * bodies parsed by oai_request.c with oai_fields.c, oai_sampling.c,
 * oai_tools.c behind oai_json.h) and POST
 * /v1/embeddings (h_embeddings.c, embeddings_request.c). The endpoints
 * translated onto chat (responses/, anthropic/) parse through translate.h.
 */
#ifndef STRATA_SERVER_OPENAI_OAI_H
#define STRATA_SERVER_OPENAI_OAI_H

#include "server/gen/gen.h"

/* ---- their answers (oai_shape.c, gen/gen_shape.h) ---- */
extern const struct st_gen_shape st_oai_chat_shape, st_oai_text_shape, st_oai_embed_shape;

/* ---- chat and completions bodies (oai_request.c) ---- */

/* The fields every generation body shares (model, sampling, stop, stream,
 * n, priority, cache_prompt ...), for parsers of other bodies (/infill).
 * r->kind must be set first. */
struct cJSON;
ST_MUST_CHECK
enum st_status st_oai_parse_common(const struct cJSON *root, struct st_oai_request *r,
                                   struct st_api_error *e);

void st_oai_request_init(struct st_oai_request *r);
void st_oai_request_fini(struct st_oai_request *r);

/* Parse and validate a body. On failure 'e' names the offending parameter
 * (400) and *r is left empty (fini is still safe). Thread: any. */
ST_MUST_CHECK
enum st_status st_oai_parse(enum st_oai_kind kind, const char *body, size_t len,
                            struct st_oai_request *r, struct st_api_error *e);

/* A chat body's last assistant message becomes a prefill (continue_final)
 * unless the body or --no-prefill-assistant says otherwise
 * (oai_prefill.c); 400 for two assistant messages at the end then. */
ST_MUST_CHECK
enum st_status st_oai_prefill(struct st_call *c, struct st_oai_request *r,
                              struct st_api_error *e);

/* ---- POST /v1/embeddings bodies (embeddings_request.c) ---- */

#define ST_EMBED_MAX_ITEMS  2048     /* input items per request, at most (OpenAI's) */
#define ST_EMBED_MAX_TOKENS 300000   /* tokens of all items together, at most (OpenAI's) */

/* A parsed embeddings body. Owns every pointer; st_embed_request_fini. */
struct st_embed_request {
    char   *model;                 /* owned; NULL = the default model */
    struct st_oai_prompt *items;   /* n_items (1..ST_EMBED_MAX_ITEMS): text or token ids */
    size_t  n_items;
    bool    base64;                /* encoding_format "base64" (default "float") */
    int32_t dimensions;            /* Matryoshka width asked; 0 = the model's */
    char   *user;                  /* owned or NULL */
    bool    has_priority;          /* "priority": an integral number */
    int32_t priority;
};
void st_embed_request_fini(struct st_embed_request *r);
/* Parse and validate an embeddings body (every input form, the caps, the
 * field types; an empty item is a 400 naming input). On failure 'e' names
 * the field and *r is left empty (fini still safe). Thread: any. */
ST_MUST_CHECK
enum st_status st_embed_parse(const char *body, size_t len, struct st_embed_request *r,
                              struct st_api_error *e);

/* Handlers (h_completions.c, h_embeddings.c; h_render.c: the token ids of
 * a chat or completions body, for routers). */
st_route_fn st_h_chat, st_h_completions, st_h_embeddings;
st_route_fn st_h_chat_render, st_h_completions_render, st_h_chat_input_tokens;

#endif /* STRATA_SERVER_OPENAI_OAI_H */
