/* chat_req.h -- a chat request as parsed values: what the OpenAI chat
 * parser, the Responses translator and the Messages translator produce and
 * what a runner's apply_template renders (struct st_chat_request). No JSON
 * text between them: the messages and the template kwargs stay the trees
 * the parser built, so nothing is printed and parsed again on the way.
 *
 * The tools stay JSON text: the reply parser and the tool-call grammar
 * (reply_parse.h, call_grammar.h) and the chat renderers (chat.h) take them
 * as text, and the renderers re-serialize them the way Jinja's tojson does.
 *
 * Threads: none of its own; a request is owned by one thread at a time and
 * read-only while rendered.
 */
#ifndef STRATA_CHAT_REQ_H
#define STRATA_CHAT_REQ_H

#include "strata/compiler.h"
#include "strata/err.h"
#include "strata/status.h"

struct cJSON;

struct st_chat_request {
    struct cJSON *messages;  /* owned: the OpenAI messages array, each {role, content
                              * (a string, an array of {text} parts, or null),
                              * reasoning_content (or reasoning), tool_calls,
                              * tool_call_id, name}; NULL = none (an error to render) */
    char         *tools;     /* owned: the tools array as JSON text (OpenAI shape), or NULL */
    struct cJSON *kwargs;    /* owned: the chat_template_kwargs object, or NULL; the
                              * renderers read enable_thinking and date_string */
};

/* An empty request (every member NULL). */
void st_chat_request_init(struct st_chat_request *r);
/* Free what r owns and empty it; r may be empty. */
void st_chat_request_fini(struct st_chat_request *r);

/* Fill an empty r from JSON text (the CLI and tests): messages_json must be
 * an array (else ST_ERR_INVALID "'messages' must be a JSON array");
 * tools_json is copied as given (NULL: none); kwargs_json that is NULL or
 * not an object counts as none. r is left empty on failure. */
ST_MUST_CHECK
enum st_status st_chat_request_parse(struct st_chat_request *r, const char *messages_json,
                                     const char *tools_json, const char *kwargs_json,
                                     struct st_err *err);

/* The kwargs member 'key' (NULL when there are no kwargs or no such member). */
const struct cJSON *st_chat_request_kwarg(const struct st_chat_request *r, const char *key);

/* The kwargs with enable_thinking false added (what a thinking budget of 0
 * asks of the template), unless they say enable_thinking themselves: an
 * owned object, or NULL to keep r's own (also when out of memory). Chat and
 * /apply-template both use it, so they render the same prompt. */
struct cJSON *st_chat_request_kwargs_no_think(const struct st_chat_request *r);

#endif /* STRATA_CHAT_REQ_H */
