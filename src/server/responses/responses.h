/* responses/responses.h -- POST /v1/responses (h_responses.c) and the
 * stored responses (GET / DELETE /v1/responses/{id}, .../input_items:
 * responses_get.c): bodies onto chat (responses_request.c, with
 * previous_response_id and store: responses_chain.c), chat output as
 * Responses objects and events (responses_reply.c), the store
 * (responses_store.c, responses_store.h). docs/API.md "/v1/responses".
 */
#ifndef STRATA_SERVER_RESPONSES_RESPONSES_H
#define STRATA_SERVER_RESPONSES_RESPONSES_H

#include "server/openai/translate.h"
#include "server/responses/responses_store.h"

/* ---- POST /v1/responses bodies (responses_request.c) ---- */

/* Parse a Responses body into the chat request it means (*oq, kind CHAT,
 * n 1) and the JSON members every response object echoes (*echo, owned:
 * instructions, tools, tool_choice, text, temperature, ...). On failure 'e'
 * names the Responses field (the chat parser's 400s too: it names
 * response_format text.format), *oq is left empty and *echo NULL.
 * Thread: any. */
ST_MUST_CHECK
enum st_status st_resp_parse(const char *body, size_t len, struct st_oai_request *oq,
                             char **echo, struct st_api_error *e);
/* The same against the response store (responses_store.h; NULL: storing
 * off, every previous_response_id unknown) as 'owner' (the caller's,
 * st_auth_owner): 'store' and 'previous_response_id' (404 on
 * previous_response_id when the store has no such response of owner's)
 * as responses_chain.c says. *out is owned by the
 * caller (st_resp_parsed_fini), empty on failure. Thread: any. */
struct st_resp_store;
struct st_resp_parsed {
    char *echo;     /* owned: as st_resp_parse's */
    char *input;    /* owned JSON array: the input items to store with the
                     * response (the previous conversation's, then this
                     * request's, each with an id); NULL unless 'store' */
    bool store;     /* the response is to be stored once it completes */
};
ST_MUST_CHECK
enum st_status st_resp_parse_stored(const char *body, size_t len, struct st_resp_store *store,
                                    uint64_t owner, struct st_oai_request *oq,
                                    struct st_resp_parsed *out, struct st_api_error *e);
void st_resp_parsed_fini(struct st_resp_parsed *p);
/* (responses_chain.c) 'store' (bool, default true; *do_store: true and a
 * store) and 'previous_response_id' (owner's) of a body: *expanded (owned, NULL: use
 * root) the body with the previous conversation before its input;
 * *items (owned; when *do_store) the input items to store. 404 unknown
 * previous response, 400 bad field types. */
ST_MUST_CHECK
enum st_status st_resp_chain(const struct cJSON *root, struct st_resp_store *store,
                             uint64_t owner, bool *do_store, struct cJSON **expanded,
                             char **items, struct st_api_error *e);
/* The translation alone: a parsed Responses body -> a chat body (*chat,
 * an owned tree; NULL on failure). 400s name the Responses field. */
ST_MUST_CHECK
enum st_status st_resp_translate_tree(const struct cJSON *root, struct cJSON **chat,
                                      struct st_api_error *e);

/* ---- /v1/responses answers (responses_reply.c, docs/API.md "/v1/responses") ---- */
/* The renderer of one response (its shape: id "resp_..."); takes 'echo'
 * (the request fields every response object repeats, JSON members without
 * braces; owned). NULL on OOM (echo freed). Freed by st_gen_shape_free. */
struct st_gen_shape *st_resp_new(char *echo);
/* The same, for a response to be stored (docs/API.md "Stored responses"):
 * once completed or incomplete it goes into 'store' (a reference is held;
 * NULL: not stored) under its id and 'owner' (the caller's, st_auth_owner),
 * with 'input' (taken: the input items, a JSON array; NULL: not stored),
 * its output items and its object. */
struct st_resp_store;
struct st_gen_shape *st_resp_new_stored(char *echo, struct st_resp_store *store, uint64_t owner,
                                        char *input);
/* The shape's hooks, also callable directly (g->shape from st_resp_new). */
/* Stream: a chat delta as Responses events onto g->out (g->shape set). */
void st_resp_stream_delta(struct st_gen *g, struct st_gen_choice *ch,
                          const struct st_oai_delta *d);
/* Stream: the end of the (only) choice: the open item closed, then
 * response.completed / .incomplete; err (failed): an error event and
 * response.failed. */
void st_resp_stream_end(struct st_gen *g, struct st_gen_choice *ch,
                        const struct st_api_error *err, const struct st_oai_usage *u);
/* Non-stream: the whole response object for choice 'c'. */
ST_MUST_CHECK enum st_status st_resp_body(struct st_buf *out, const struct st_gen *g,
                                          const struct st_oai_choice *c,
                                          const struct st_oai_usage *u,
                                          int64_t reasoning_tokens);

/* Handlers (h_responses.c, responses_get.c). */
st_route_fn st_h_responses, st_h_response_get, st_h_response_delete;

#endif /* STRATA_SERVER_RESPONSES_RESPONSES_H */
