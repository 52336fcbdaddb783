/* openai/translate.h -- the endpoints translated onto chat (/v1/responses,
 * /v1/messages): the pieces they share (translate.c). Their body parsers
 * are in responses/responses.h and anthropic/anthropic.h.
 */
#ifndef STRATA_SERVER_TRANSLATE_H
#define STRATA_SERVER_TRANSLATE_H

#include "strata/out.h"

#include "server/openai/oai.h"

/* ---- endpoints translated onto chat: shared pieces (translate.c) ---- */
/* Used by responses_*.c and messages_*.c. cJSON trees are the caller's;
 * bool results are false on OOM only. Thread: any. */
/* A 500-class "out of memory" error / a 400 naming 'param' with 'msg'. */
enum st_status st_tr_nomem(struct st_api_error *e);
enum st_status st_tr_bad(struct st_api_error *e, const char *param, const char *msg);
/* Append {role, content} to the chat messages array (content NULL: no
 * content member); *out (when given) the new message. */
bool st_tr_add_msg(struct cJSON *msgs, const char *role, const char *content,
                   struct cJSON **out);
/* Append a chat tool call {id, type:function, function:{name, arguments}}. */
bool st_tr_add_call(struct cJSON *calls, const char *id, const char *name, const char *args);
/* Append a chat tool {type:function, function:{}}; returns its (empty)
 * function object, NULL on OOM. */
struct cJSON *st_tr_add_tool(struct cJSON *tools);
/* Copy from's member 'key' (when present and not null) into 'to'. */
bool st_tr_copy_member(const struct cJSON *from, const char *key, struct cJSON *to);
/* One member of an array (its index i) into 'out'. */
typedef enum st_status (*st_tr_item_fn)(const struct cJSON *item, size_t i, struct cJSON *out,
                                        struct st_api_error *e);
/* fn on every member of arr, stopping at the first failure. */
enum st_status st_tr_each(const struct cJSON *arr, st_tr_item_fn fn, struct cJSON *out,
                          struct st_api_error *e);
/* chat.tools = fn(tool) for each of 'tools' (NULL: nothing); not an array:
 * a 400 on "tools" saying 'not_array'. */
enum st_status st_tr_tools(const struct cJSON *tools, st_tr_item_fn fn, const char *not_array,
                           struct cJSON *chat, struct st_api_error *e);
/* chat.tool_choice = {type:function, function:{name}}. */
enum st_status st_tr_named_choice(struct cJSON *chat, const char *name, struct st_api_error *e);
/* One step of a translation: what the body 'root' means, added to 'chat'. */
typedef enum st_status (*st_tr_step_fn)(const struct cJSON *root, struct cJSON *chat,
                                        struct st_api_error *e);
/* Run steps[0..n) in order on 'chat' (taken: *out on success, freed on
 * failure, *out then NULL), stopping at the first failure. */
enum st_status st_tr_build(const struct cJSON *root, struct cJSON *chat,
                           const st_tr_step_fn *steps, size_t n, struct cJSON **out,
                           struct st_api_error *e);
/* One API translated onto chat: its body tree -> a chat body tree (*chat,
 * owned); 'names' what the chat parser's 400s call the chat fields whose
 * name differs in that API (oai_json.h); 'after' (optional) runs on a
 * parsed request with the body's tree still there. ctx: the caller's. */
struct st_oai_names;
struct st_tr_api {
    enum st_status (*translate)(const struct cJSON *root, void *ctx, struct cJSON **chat,
                                struct st_api_error *e);
    const struct st_oai_names *names;
    enum st_status (*after)(const struct cJSON *root, const struct st_oai_request *oq,
                            void *ctx, struct st_api_error *e);
};
/* JSON -> api->translate -> st_oai_parse_tree (the tree, not its text;
 * 400s in api->names) -> api->after: *oq a chat request (kind CHAT), left
 * empty on failure. */
enum st_status st_tr_parse(const char *body, size_t len, const struct st_tr_api *api,
                           void *ctx, struct st_oai_request *oq, struct st_api_error *e);
/* fn(ctx, id, name, arguments) for each call of a chat tool_calls array
 * (our own JSON text, gen_reply.c); members not all strings are skipped.
 * Stops at fn's first failure; ST_ERR_NOMEM when the text cannot be parsed. */
typedef enum st_status (*st_tr_call_fn)(void *ctx, const char *id, const char *name,
                                        const char *args);
enum st_status st_tr_each_call(const char *calls, size_t len, st_tr_call_fn fn, void *ctx);
/* One SSE event onto out: "event: <type>\ndata: {"type":"<type>"
 * [,"sequence_number":seq]<body>}\n\n" (seq < 0: none; body's members each
 * led by a comma; NULL: none). */
enum st_status st_tr_sse_event(struct st_buf *out, const char *type, int64_t seq,
                               const struct st_buf *body);
/* An event body written through o into b: start opens it with its comma
 * (every member is led by one, the first too, so each key after follows
 * st_out's rule); event frames it onto out as st_tr_sse_event does (when
 * it was written) and frees b. */
void st_tr_body_start(struct st_out *o, struct st_buf *b);
enum st_status st_tr_body_event(struct st_buf *out, const char *type, int64_t seq,
                                struct st_out *o);

#endif /* STRATA_SERVER_TRANSLATE_H */
