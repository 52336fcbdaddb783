/* anthropic/anthropic.h -- POST /v1/messages and /v1/messages/count_tokens
 * (Anthropic's Messages API, h_messages.c): bodies onto chat
 * (messages_request.c), chat output as Anthropic messages and stream
 * events (messages_reply.c). Their errors use Anthropic's body
 * (http/errors.c; routes.c marks the routes). docs/API.md "/v1/messages".
 */
#ifndef STRATA_SERVER_ANTHROPIC_ANTHROPIC_H
#define STRATA_SERVER_ANTHROPIC_ANTHROPIC_H

#include "server/openai/translate.h"

/* ---- POST /v1/messages bodies (messages_request.c) ---- */

/* Parse an Anthropic Messages body into the chat request it means (*oq,
 * kind CHAT, n 1). On failure 'e' names the Messages field (the chat
 * parser's 400s too: it names stop stop_sequences) and *oq is left empty.
 * Thread: any. */
ST_MUST_CHECK
enum st_status st_msg_parse(const char *body, size_t len, struct st_oai_request *oq,
                            struct st_api_error *e);
/* The same for POST /v1/messages/count_tokens: max_tokens not required. */
ST_MUST_CHECK
enum st_status st_msg_parse_count(const char *body, size_t len, struct st_oai_request *oq,
                                  struct st_api_error *e);
/* The translation alone: a parsed Messages body -> a chat body (*chat, an
 * owned tree; NULL on failure). */
ST_MUST_CHECK
enum st_status st_msg_translate_tree(const struct cJSON *root, struct cJSON **chat,
                                     struct st_api_error *e);

/* ---- /v1/messages answers (messages_reply.c, docs/API.md "/v1/messages") ---- */
/* The renderer of one message (id "msg_..."). NULL on OOM. */
struct st_gen_shape *st_msg_shape_new(void);
/* Anthropic's stop_reason for a finished choice: "tool_use" (calls made,
 * stopped normally), "max_tokens" (cut), "stop_sequence" (stop_seq, the
 * stop string that ended it, not NULL), else "end_turn". */
const char *st_msg_stop_reason(enum st_finish finish, bool has_calls, const char *stop_seq);

/* Handlers (h_messages.c). */
st_route_fn st_h_messages, st_h_count_tokens;

#endif /* STRATA_SERVER_ANTHROPIC_ANTHROPIC_H */
