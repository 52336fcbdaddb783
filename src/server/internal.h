/* internal.h -- the server module's private cross-file API.
 *
 * Pieces and who uses them:
 *   errors.c       st_status -> HTTP status + OpenAI error type; error bodies
 *   json_out.c     JSON writing into an st_buf (UTF-8 sanitised strings)
 *   oai_request.c  request body (JSON) -> struct st_oai_request, validated
 *   oai_response.c engine events -> OpenAI JSON bodies and stream chunks
 *   sse.c          Server-Sent Events framing
 *   auth.c         API keys, x-request-id
 *   metrics.c      Prometheus text rendering from plain stats structs
 *   routes.c       the static route table
 *   http.c         the libmicrohttpd daemon: access handler, suspend/resume,
 *                  completion callback, one struct st_call per HTTP request
 *   watch.c        the disconnect watcher for suspended connections
 *   reply.c        queueing a finished response with the common headers
 *   cors.c         which origins get CORS headers (--cors-origins)
 *   keepalive.c    SSE keep-alive comments for idle streams (--sse-keepalive)
 *   drain.c        graceful shutdown: refuse new generations, count the rest
 *   random_id.c    random bytes and hex ids (requests, tool calls, responses)
 *   gen.c          generation: requests, the emit callback, the results
 *   gen_reply.c    chat replies parsed into reasoning, content, tool calls
 *   oai_tools.c    tool_choice, parallel_tool_calls, reasoning_format
 *   oai_sampling.c penalties, logit_bias, response_format
 *   translate.c          what /v1/responses and /v1/messages share on their
 *                        way onto chat (translate.h, with their parsers)
 *   responses_request.c  /v1/responses body -> the chat request it means
 *   responses_reply.c    chat output -> Responses objects and stream events
 *   responses_chain.c    store / previous_response_id: the stored conversation
 *                        before a body's input
 *   responses_store.c    the bounded LRU store of responses (responses_store.h)
 *   responses_get.c      GET / DELETE /v1/responses/{id}, .../input_items
 *   embeddings_request.c /v1/embeddings body -> struct st_embed_request
 *   embeddings_reply.c   vectors -> the embeddings body (dimensions, base64)
 *   messages_request.c   /v1/messages body (Anthropic) -> the chat request it means
 *   messages_reply.c     chat output -> Anthropic messages, stream events, errors
 *   h_*.c          the route handlers
 *
 * Everything here that does not touch libmicrohttpd is unit-tested without
 * a network (tests/unit/test_server.c).
 */
#ifndef STRATA_SERVER_INTERNAL_H
#define STRATA_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "strata/chat_req.h"
#include "strata/engine.h"
#include "strata/sched.h"
#include "strata/server.h"
#include "strata/str.h"

/* A string literal and its length, for st_buf_append. */
#define ST_LIT(s) (s), (sizeof(s) - 1)

/* ---- errors (errors.c) ---------------------------------------------- */

/* An error as the client will see it: {"error":{message,type,param,code}}. */
struct st_api_error {
    enum st_status status;      /* decides the HTTP status and 'type' */
    int  http;                  /* 0 = from status; else overrides it */
    char message[256];
    char param[64];             /* "" = null */
    char code[40];              /* "" = null */
    int  retry_after_s;         /* > 0: send Retry-After (429, 503) */
};

/* HTTP status for a status code. A switch without default: -Wswitch flags
 * a status added to status.h without a mapping here. */
int st_server_http_status(enum st_status s);
/* OpenAI error "type" ("invalid_request_error", ...); static storage. */
const char *st_server_error_type(enum st_status s);

/* Fill 'e' (status, message, optional param and code). Returns e->status. */
enum st_status st_api_error_set(struct st_api_error *e, enum st_status s, const char *param,
                                const char *code, const char *fmt, ...) ST_PRINTF(5, 6);
/* Seconds as a whole number for Retry-After and "retry_in_s": rounded up,
 * 0 for s <= 0 (or NaN), at most one day. */
int st_retry_seconds(double s);
/* The HTTP status 'e' will be sent with. */
int st_api_error_http(const struct st_api_error *e);
/* Append {"error":{...}} to 'out'. */
ST_MUST_CHECK enum st_status st_api_error_json(struct st_buf *out, const struct st_api_error *e);

/* ---- JSON output (json_out.c) ----------------------------------------- */

/* Append 's' (n bytes) as a JSON string literal. Invalid UTF-8 sequences
 * become U+FFFD, so the output is always valid JSON and valid UTF-8. */
ST_MUST_CHECK enum st_status st_json_str(struct st_buf *b, const char *s, size_t n);
ST_MUST_CHECK enum st_status st_json_cstr(struct st_buf *b, const char *s);   /* NULL -> null */
/* A finite double, shortest round-trip form; NaN/Inf -> null. */
ST_MUST_CHECK enum st_status st_json_num(struct st_buf *b, double v);
/* [b0,b1,...] of the raw bytes, as OpenAI's logprobs "bytes". */
ST_MUST_CHECK enum st_status st_json_bytes(struct st_buf *b, const char *s, size_t n);
/* True when s[0..n) is valid UTF-8. */
bool st_json_utf8_valid(const char *s, size_t n);

/* ---- parsed requests (oai_request.c) ---------------------------------- */

enum st_oai_kind {
    ST_OAI_CHAT,          /* /v1/chat/completions */
    ST_OAI_COMPLETION,    /* /v1/completions */
};

/* One prompt of /v1/completions: text, or token ids (then text is NULL). */
struct st_oai_prompt {
    char    *text;        /* owned, NUL-terminated, or NULL */
    int32_t *tokens;      /* owned, or NULL */
    size_t   n_tokens;
};

#define ST_OAI_MAX_N       16    /* "n" at most */
#define ST_OAI_MAX_CHOICES 64    /* prompts x n at most */
#define ST_INFILL_MAX_EXTRA 1024 /* /infill input_extra chunks at most */

/* tool_choice: "none" gives no tools to the template and parses nothing;
 * "required" and a named function constrain the reply to calls
 * (include/strata/call_grammar.h, gen_reply.c; docs/API.md). */
enum st_oai_tool_choice {
    ST_OAI_TOOLS_AUTO,
    ST_OAI_TOOLS_NONE,
    ST_OAI_TOOLS_REQUIRED,
    ST_OAI_TOOLS_FUNCTION,
};

/* reasoning_format of one request; DEFAULT = the server's --reasoning-format. */
enum st_oai_reasoning {
    ST_OAI_REASONING_DEFAULT,
    ST_OAI_REASONING_DEEPSEEK,     /* "deepseek" or "auto" */
    ST_OAI_REASONING_NONE,
};

/* Everything the server takes from a completion body. Owns every pointer;
 * release with st_oai_request_fini(). The only cJSON that survives the
 * parse is the chat request's (strata/chat_req.h), which the engine renders. */
struct st_oai_request {
    enum st_oai_kind kind;
    char   *model;                 /* owned; NULL = the default model */
    struct st_chat_request chat;   /* chat: the normalised messages (content a string or
                                    * null), tools, chat_template_kwargs; owned */
    bool    continue_final;        /* chat: continue_final_message (vLLM's): the prompt
                                    * ends inside the last message, an assistant's */
    struct st_oai_prompt *prompts; /* completions: n_prompts of them, owned */
    size_t  n_prompts;
    struct st_gen_params params;   /* stop strings owned */
    int32_t n;                     /* choices per prompt, 1..ST_OAI_MAX_N */
    bool    stream;
    bool    include_usage;         /* stream_options.include_usage */
    bool    echo;                  /* completions: the prompt leads the text (params.echo) */
    int32_t prompt_logprobs;       /* vLLM's: alternatives per prompt token; -1 = absent */
    bool    cache_prompt;          /* llama-server's; default true; false: no prefix reuse */
    /* chat: tool calls and reasoning (oai_tools.c, docs/API.md) */
    enum st_oai_tool_choice tool_choice;
    char    tool_choice_name[257];  /* FUNCTION: its name ("" when longer than 256 bytes) */
    bool    single_tool_call;      /* parallel_tool_calls: false -> keep the first call */
    enum st_oai_reasoning reasoning_format;
    /* chat: thinking_budget (thinking_token_budget, thinking_budget_tokens):
     * reasoning tokens before the think block is closed (docs/API.md
     * "Thinking budget"); -1 = none; absent: the server's --reasoning-budget */
    bool    has_thinking_budget;
    int32_t thinking_budget;
    bool    has_priority;          /* body "priority" was an integral number */
    int32_t priority;
    char   *user;                  /* owned or NULL */
    char   *suffix;                /* completions: OpenAI's legacy suffix (FIM), owned or NULL */
    bool    infill;                /* POST /infill: llama-server's /completion answer shape
                                    * (infill_json.c); prompts[0] holds the FIM token ids */
    bool    infill_truncated;      /* ... the FIM budget cut something ("truncated") */
};

/* Where a chat request's prompt ends (strata/chat.h). */
static inline enum st_chat_ending st_oai_chat_ending(const struct st_oai_request *r)
{
    return r->continue_final ? ST_CHAT_END_CONTINUE : ST_CHAT_END_GENERATE;
}

/* The fields every generation body shares (model, sampling, stop, stream,
 * n, priority, cache_prompt ...), for parsers of other bodies (/infill).
 * r->kind must be set first. */
struct cJSON;
ST_MUST_CHECK
enum st_status st_oai_parse_common(const struct cJSON *root, struct st_oai_request *r,
                                   struct st_api_error *e);

/* ---- POST /infill bodies (h_infill.c) ---- */

/* llama-server's infill fields; everything else of the body is in the
 * st_oai_request parsed beside it. All owned. */
struct st_infill_body {
    char   *input_prefix, *input_suffix, *prompt;   /* NULL: absent ("") */
    char   *repo_name, *filename;                   /* strata's: NULL = llama-server's */
    struct st_infill_chunk *extra;                  /* input_extra; texts owned */
    size_t  n_extra;
};
void st_infill_body_fini(struct st_infill_body *b);
/* Parse an /infill body: the common generation fields (st_oai_parse_common,
 * plus n_predict) into *oq, the infill fields into *b. 400s name the field.
 * On failure both are left empty (fini still safe). */
ST_MUST_CHECK
enum st_status st_infill_parse(const char *body, size_t len, struct st_oai_request *oq,
                               struct st_infill_body *b, struct st_api_error *e);

void st_oai_request_init(struct st_oai_request *r);
void st_oai_request_fini(struct st_oai_request *r);

/* Parse and validate a body. On failure 'e' names the offending parameter
 * (400) and *r is left empty (fini is still safe). Thread: any. */
ST_MUST_CHECK
enum st_status st_oai_parse(enum st_oai_kind kind, const char *body, size_t len,
                            struct st_oai_request *r, struct st_api_error *e);

/* Anthropic's error body: {"type":"error","error":{"type":..,"message":..}}
 * (errors.c; the type from the HTTP status st_api_error_http gives). */
ST_MUST_CHECK enum st_status st_anthropic_error_json(struct st_buf *out,
                                                     const struct st_api_error *e);
const char *st_anthropic_error_type(int http);
/* Does route r answer in Anthropic's shapes (errors included)? (h_messages.c) */
struct st_route;
bool st_route_anthropic(const struct st_route *r);

/* The llama-server style endpoints' bodies (h_text.c). Owned strings;
 * release with st_oai_text_request_fini(). */
struct st_oai_text_request {
    char    *model;            /* owned or NULL */
    char    *content;          /* /tokenize: owned */
    bool     add_special;      /* /tokenize: default false */
    bool     parse_special;    /* /tokenize: default true */
    bool     with_pieces;      /* /tokenize: default false */
    int32_t *tokens;           /* /detokenize: owned */
    size_t   n_tokens;
    struct st_chat_request chat;  /* /apply-template: normalised messages, tools,
                                   * kwargs; owned */
};

enum st_oai_text_kind {
    ST_OAI_TOKENIZE,
    ST_OAI_DETOKENIZE,
    ST_OAI_APPLY_TEMPLATE,
};

void st_oai_text_request_fini(struct st_oai_text_request *r);
ST_MUST_CHECK
enum st_status st_oai_parse_text(enum st_oai_text_kind kind, const char *body, size_t len,
                                 struct st_oai_text_request *r, struct st_api_error *e);

/* ---- responses (oai_response.c) -------------------------------------- */

/* What every chunk and body of one response shares. Strings borrowed. */
struct st_oai_meta {
    enum st_oai_kind kind;
    const char *id;              /* "chatcmpl-..." / "cmpl-..." */
    const char *model;
    int64_t     created;         /* unix seconds */
    bool        include_usage;   /* chunks carry "usage": null until the last */
};

struct st_oai_usage {
    int64_t prompt_tokens;
    int64_t completion_tokens;
    int64_t cached_tokens;
    int64_t reasoning_tokens;    /* of completion_tokens: the replies' reasoning (approximate:
                                  * docs/API.md "/v1/responses" usage) */
};

/* Logprobs of one token, as the engine reported it (borrowed). */
struct st_oai_logprob {
    const char *text;            /* the token's text */
    size_t      text_len;
    float       logprob;
    const struct st_top_logprob *top;
    int32_t     n_top;
    int64_t     text_offset;     /* completions: offset of the token in the text */
    /* (echoed prompt tokens, legacy shape) */
    bool        null_entry;      /* token_logprobs and top_logprobs null: the first prompt
                                  * token, which nothing comes before */
    bool        add_self;        /* top_logprobs also holds the token itself when it is not
                                  * among 'top' (OpenAI's legacy N + 1) */
    int32_t     token;           /* its id, for add_self */
};

/* Streaming chunks, rendered as one JSON object each (no framing). */
ST_MUST_CHECK enum st_status st_oai_chunk_role(struct st_buf *out, const struct st_oai_meta *m,
                                               int32_t index);
ST_MUST_CHECK enum st_status st_oai_chunk_text(struct st_buf *out, const struct st_oai_meta *m,
                                               int32_t index, const char *text, size_t len,
                                               const struct st_oai_logprob *lp);
struct st_oai_lp_acc;
/* A completions chunk whose text carries a run of tokens (the echoed
 * prompt) with their legacy logprobs (acc; NULL: "logprobs": null). */
ST_MUST_CHECK enum st_status st_oai_chunk_text_acc(struct st_buf *out,
                                                   const struct st_oai_meta *m, int32_t index,
                                                   const char *text, size_t len,
                                                   const struct st_oai_lp_acc *acc);
ST_MUST_CHECK enum st_status st_oai_chunk_finish(struct st_buf *out,
                                                 const struct st_oai_meta *m, int32_t index,
                                                 enum st_finish finish);
ST_MUST_CHECK enum st_status st_oai_chunk_usage(struct st_buf *out, const struct st_oai_meta *m,
                                                const struct st_oai_usage *u);

/* One logprobs entry appended to the accumulators of a non-stream body:
 * chat -> 'content' gets one object; completions -> the four legacy arrays. */
struct st_oai_lp_acc {
    struct st_buf content;       /* chat: comma-separated objects */
    struct st_buf tokens, token_logprobs, top_logprobs, text_offset;   /* legacy */
    int64_t n;                   /* entries so far */
};
void st_oai_lp_acc_init(struct st_oai_lp_acc *a);
void st_oai_lp_acc_fini(struct st_oai_lp_acc *a);
ST_MUST_CHECK enum st_status st_oai_lp_acc_add(struct st_oai_lp_acc *a, enum st_oai_kind kind,
                                               const struct st_oai_logprob *lp);

/* vLLM's prompt_logprobs: append one prompt token's entry to 'out' (a
 * comma first unless it is the first): null for position 0 (or a token
 * without a logprob), else {"<id>":{"logprob","rank","decoded_token"},...}
 * with the token itself first, then its best k alternatives (ranks 1..k). */
ST_MUST_CHECK enum st_status st_oai_prompt_lp_add(struct st_buf *out, bool first,
                                                  const struct st_prompt_token *t, int32_t k);

/* One choice of a finished non-stream response. Borrowed. */
struct st_oai_choice {
    int32_t     index;
    const char *text;
    size_t      text_len;
    enum st_finish finish;
    const struct st_oai_lp_acc *lp;   /* NULL: "logprobs": null */
    /* (chat replies parsed into parts, gen_reply.c) */
    bool        parsed;               /* the fields below count; text = content */
    bool        content_null;         /* "content": null (the reply is only tool calls) */
    const char *reasoning;            /* NULL: no "reasoning_content" */
    size_t      reasoning_len;
    const char *tool_calls;           /* JSON array text; NULL: no "tool_calls" */
    size_t      tool_calls_len;
    const char *finish_reason;        /* NULL: from finish ("tool_calls" overrides) */
    /* vLLM's prompt_logprobs (the entries of the array, comma-separated; NULL:
     * not asked): completions per choice; chat once, top level, from choice 0 */
    const char *prompt_logprobs;
    size_t      prompt_logprobs_len;
};

/* One parsed delta of a chat stream (gen_reply.c). Borrowed. */
enum st_oai_delta_kind {
    ST_OAI_DELTA_NONE,                /* {} (a chunk that only carries logprobs) */
    ST_OAI_DELTA_CONTENT,             /* text */
    ST_OAI_DELTA_REASONING,           /* text */
    ST_OAI_DELTA_TOOL_START,          /* tool_index, tool_id, text = name; arguments "" */
    ST_OAI_DELTA_TOOL_ARGS,           /* tool_index, text = a piece of the arguments */
};

struct st_oai_delta {
    enum st_oai_delta_kind kind;
    const char *text;
    size_t      len;
    int32_t     tool_index;
    const char *tool_id;
};

ST_MUST_CHECK enum st_status st_oai_chunk_delta(struct st_buf *out, const struct st_oai_meta *m,
                                                int32_t index, const struct st_oai_delta *d,
                                                const struct st_oai_logprob *lp);
ST_MUST_CHECK enum st_status st_oai_chunk_finish_reason(struct st_buf *out,
                                                        const struct st_oai_meta *m,
                                                        int32_t index, const char *reason);
/* {"id":..,"type":"function","function":{"name":..,"arguments":".."}} */
ST_MUST_CHECK enum st_status st_oai_tool_call_json(struct st_buf *out, const char *id,
                                                   const char *name, size_t name_len,
                                                   const char *args, size_t args_len);

ST_MUST_CHECK enum st_status st_oai_body(struct st_buf *out, const struct st_oai_meta *m,
                                         const struct st_oai_choice *choices, size_t n,
                                         const struct st_oai_usage *u);

/* OpenAI's finish_reason for 'f' (cancelled and error never reach a client
 * as a normal finish; they map to "stop"). */
const char *st_oai_finish_reason(enum st_finish f);

/* ---- SSE (sse.c) ------------------------------------------------------ */

/* "data: <json>\n\n". 'json' must not contain a newline (our JSON never
 * does: strings escape it); ST_ERR_INVALID if it does. */
ST_MUST_CHECK enum st_status st_sse_data(struct st_buf *out, const char *json, size_t len);
/* "data: [DONE]\n\n" */
ST_MUST_CHECK enum st_status st_sse_done(struct st_buf *out);
/* ": <text>\n\n" -- a comment line, ignored by clients (keep-alive). */
ST_MUST_CHECK enum st_status st_sse_comment(struct st_buf *out, const char *text);

/* ---- auth and ids (auth.c) -------------------------------------------- */

/* The key an Authorization header value ("Bearer KEY") names, or NULL.
 * Comparison is constant-time per key. 'value' may be NULL. */
const struct st_api_key *st_auth_find(const struct st_api_key *keys, size_t n_keys,
                                      const char *value);
/* The same for an x-api-key header value (the key alone). */
const struct st_api_key *st_auth_find_plain(const struct st_api_key *keys, size_t n_keys,
                                            const char *value);
/* A client's X-Request-Id is echoed when it is 1..40 bytes of
 * [A-Za-z0-9._:-]; else a fresh "req-<24 hex>" is written. 'out' >= 48 bytes. */
void st_request_id_pick(const char *client_value, char *out, size_t cap);
bool st_request_id_sane(const char *v);

/* n random bytes for a made-up id (random_id.c): unique, not secret. */
void st_random_id_bytes(unsigned char *out, size_t n);
/* prefix, then n_bytes (at most 32) random bytes as lowercase hex, cut to
 * fit cap (NUL included). */
void st_random_hex_id(char *out, size_t cap, const char *prefix, size_t n_bytes);

/* ---- CORS (cors.c) ----------------------------------------------------- */

enum st_cors_mode {
    ST_CORS_OFF,      /* "none" (or empty): no CORS headers */
    ST_CORS_ANY,      /* "*": Access-Control-Allow-Origin: * */
    ST_CORS_LIST,     /* listed origins, echoed, with Vary: Origin */
};

struct st_cors {
    enum st_cors_mode mode;
    char *list;       /* LIST: owned, "a,b,c" without blanks */
};

/* Parse --cors-origins ("*", "none", or comma-separated origins).
 * ST_ERR_BAD_CONFIG for an empty entry, a blank inside one, or "*" among
 * others; ST_ERR_NOMEM. Release with st_cors_fini (safe when zeroed). */
ST_MUST_CHECK enum st_status st_cors_init(struct st_cors *c, const char *spec,
                                          struct st_err *err);
void st_cors_fini(struct st_cors *c);
/* The Access-Control-Allow-Origin value for a request's Origin header
 * (NULL: send none; else "*" or 'origin' itself); *vary: send
 * "Vary: Origin" (the answer depends on Origin: list mode), even when NULL. */
const char *st_cors_allow(const struct st_cors *c, const char *origin, bool *vary);
/* True when an Access-Control-Request-Headers value may be echoed as is:
 * 1..512 bytes of header-name characters, commas and spaces. */
bool st_cors_request_headers_ok(const char *v);

/* What a preflight answers (reply.c). */
#define ST_CORS_ALLOW_METHODS "GET, POST, DELETE, OPTIONS"
#define ST_CORS_ALLOW_HEADERS "Authorization, Content-Type, X-LlamaSwap-Priority, X-Request-Id"
#define ST_CORS_EXPOSE_HEADERS "x-request-id, Retry-After"
#define ST_CORS_MAX_AGE "7200"   /* seconds; Chromium caps it at 2 h */

/* ---- metrics (metrics.c) ---------------------------------------------- */

#define ST_HTTP_CODES_TRACKED 11

/* The server's own counters, kept with atomics by http.c. */
struct st_http_stats {
    uint64_t responses[ST_HTTP_CODES_TRACKED];   /* by st_http_codes[] */
    bool     draining;                           /* drain.c: refusing new generations */
    /* the response store (responses_store.h; all 0 when storing is off) */
    uint64_t resp_stored;                        /* responses held */
    uint64_t resp_stored_bytes;                  /* their size against the budget */
    uint64_t resp_evicted;                       /* dropped for room since start */
};
extern const int st_http_codes[ST_HTTP_CODES_TRACKED];   /* 0 = "other" */

/* The per-model part of /metrics (docs/MODELS.md), snapshotted from the
 * pool by st_metrics_models_take so that rendering stays pure. */
struct st_metrics_swap {
    int32_t  from;                          /* -1: the engine had none (label "none") */
    int32_t  to;
    uint64_t n;                             /* strata_model_swaps_total{from,to} */
};

struct st_metrics_models {
    int32_t n_models;
    const char **names;                     /* [n_models], owned array; strings borrowed */
    struct st_model_status *status;         /* [n_models], owned */
    struct st_metrics_swap *swaps;          /* [n_swaps], owned: the pairs shown */
    size_t n_swaps;
};

/* Every (from, to) swap pair is shown up to this many models (17 x 16
 * series); above it, the from="none" row and the pairs between models
 * that have loaded at least once (the others are zero), so a server with
 * hundreds of models does not render tens of thousands of zero series. */
#define ST_METRICS_ALL_PAIRS_MAX 16
/* A label 'name="value"' at most (longer values are cut). */
#define ST_METRICS_LABEL_MAX 320

/* Snapshot every model's status and the swap counters. ST_ERR_NOMEM (out
 * left empty). Release with st_metrics_models_fini (safe on an empty one). */
ST_MUST_CHECK
enum st_status st_metrics_models_take(struct st_engine_pool *p, struct st_metrics_models *out);
void st_metrics_models_fini(struct st_metrics_models *m);

/* Prometheus text format 0.0.4: every family with HELP and TYPE, every band
 * label present, and with 'models' (NULL: none) every model's series.
 * Pure: reads only its arguments. */
ST_MUST_CHECK
enum st_status st_metrics_render(struct st_buf *out, const struct st_sched_stats *ss,
                                 const struct st_pool_stats *ps, const struct st_http_stats *hs,
                                 const struct st_metrics_models *models);

/* ---- routes (routes.c) ------------------------------------------------ */

struct st_call;

/* A handler runs once the body is complete. It queues a response
 * (st_reply_*) and returns ST_ROUTE_DONE, or arranges to be resumed
 * (generation) and returns ST_ROUTE_WAIT; ST_ROUTE_FAIL closes the
 * connection (could not even queue an error). */
enum st_route_result {
    ST_ROUTE_DONE,
    ST_ROUTE_WAIT,
    ST_ROUTE_FAIL,
};

typedef enum st_route_result st_route_fn(struct st_call *c);

struct st_route {
    const char  *path;
    const char  *method;        /* "GET" routes also answer HEAD */
    st_route_fn *fn;
    bool         prefix;        /* path is a prefix ("/v1/models/") */
    bool         auth;          /* needs an API key when keys are configured */
    bool         body;          /* reads a request body */
    bool         work;          /* starts a generation: refused while draining */
};

/* The route for (path, method). NULL with *path_known set when the path
 * exists under other methods (405; 'allow' gets "GET, HEAD" etc.). */
const struct st_route *st_route_find(const char *path, const char *method, bool *path_known,
                                     char *allow, size_t allow_cap);

/* Handlers (h_*.c). */
st_route_fn st_h_chat, st_h_completions, st_h_responses, st_h_messages,
    st_h_count_tokens, st_h_infill, st_h_models,
    st_h_model_one, st_h_health, st_h_metrics, st_h_activity, st_h_slots, st_h_tokenize,
    st_h_detokenize, st_h_apply_template, st_h_embeddings, st_h_response_get,
    st_h_response_delete;

/* ---- POST /v1/embeddings (embeddings_request.c, embeddings_reply.c) ---- */

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
/* The first 'dims' entries of v[n] (dims <= 0 or >= n: all), scaled back
 * to unit length, into out[dims]. */
void st_embed_truncate(const float *v, int32_t n, int32_t dims, float *out);
/* Standard base64 (with '=' padding) of n float32 in little-endian byte
 * order, appended to b as a JSON string. */
ST_MUST_CHECK enum st_status st_embed_base64(struct st_buf *b, const float *v, int32_t n);
/* The response body: {"object":"list","data":[{"object":"embedding",
 * "index":i,"embedding":...}],"model":..,"usage":{..}}. vecs[i]: n floats
 * each, already truncated; prompt_tokens: of all items together. */
ST_MUST_CHECK
enum st_status st_embed_body(struct st_buf *out, const char *model, const float *const *vecs,
                             size_t n_items, int32_t n, bool base64, int64_t prompt_tokens);

/* ---- the server and one HTTP exchange (http.c) ----------------------- */

struct st_gen;
struct st_resp_store;

struct st_server {
    struct st_server_config cfg;        /* keys deep-copied into 'keys' */
    struct st_api_key *keys;            /* owned copies */
    char *host;                         /* owned copy */
    struct st_cors cors;                /* parsed cfg.cors_origins (cfg's pointer unused) */
    struct st_engine_pool *pool;        /* borrowed */
    struct st_sched *sched;             /* borrowed */
    struct MHD_Daemon *mhd;
    uint16_t port;
    int64_t created;                    /* unix seconds at start (/v1/models) */
    atomic_bool stopping;
    atomic_bool draining;               /* drain.c: new generations refused */
    atomic_uint_fast64_t responses[ST_HTTP_CODES_TRACKED];
    struct st_resp_store *resp_store;   /* one reference; NULL: storing off
                                         * (responses_store.h) */

    pthread_mutex_t calls_lock;         /* guards the list of live calls */
    struct st_call *calls;              /* every call from creation to completion */
    pthread_t watcher;                  /* watch.c */
    bool watcher_running;
    bool watch_init;                    /* watch_lock and watch_cond exist */
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_cond;
};

enum st_call_phase {
    ST_CALL_BODY,         /* reading the body */
    ST_CALL_WAIT,         /* handler ran; suspended until the generation is ready */
    ST_CALL_STREAM,       /* SSE response queued; the content reader drains gen->out */
    ST_CALL_REPLIED,      /* a complete response was queued */
};

/* One HTTP request/response exchange (MHD's *con_cls). Reference counted:
 * one reference for the MHD side, dropped in the completion callback, and
 * one per engine request (dropped from that request's on_free), so the
 * emit callback can never touch freed memory, whichever ends first. */
struct st_call {
    atomic_int refs;
    struct st_server *srv;              /* borrowed; only touched on MHD threads */
    struct MHD_Connection *mhd;         /* valid until conn_done */
    const struct st_route *route;
    const char *method;                 /* borrowed from MHD for the call */
    const char *url;
    char request_id[48];
    const struct st_api_key *key;       /* matched API key (in srv->keys) or NULL */
    struct st_buf body;                 /* request body, bytes */
    bool body_too_large;
    int64_t start_ns;                   /* real clock */
    enum st_call_phase phase;
    int fd;                             /* the socket, for the watcher */

    pthread_mutex_t lock;               /* guards everything below */
    bool suspended;                     /* MHD connection suspended by us */
    uint64_t suspend_gen;               /* +1 per suspend (watcher checks it) */
    bool conn_done;                     /* completion callback ran: mhd is gone */
    bool stopping;                      /* server shutdown: answer 503 / end */
    bool client_gone;                   /* the watcher saw the peer close */
    struct st_gen *gen;                 /* generation state or NULL (gen.c) */

    struct st_call *prev, *next;        /* srv->calls; under srv->calls_lock */
};

void st_call_ref(struct st_call *c);
void st_call_unref(struct st_call *c);

/* Suspend the MHD connection unless 'ready' already holds. Must be called
 * with c->lock held, on the MHD thread, from the access handler or the
 * content reader. Returns true when suspended. */
bool st_call_suspend_locked(struct st_call *c);
/* Resume if we suspended it (any thread, c->lock held). */
void st_call_resume_locked(struct st_call *c);

/* A request header (case-insensitive) or NULL. MHD thread only. */
const char *st_call_header(struct st_call *c, const char *name);
/* A query argument or NULL. MHD thread only. */
const char *st_call_query(struct st_call *c, const char *name);
/* The owner of the stored responses a call makes and may see
 * (responses_store.h; auth.c): 0 without API keys, else 1 + its key's
 * index in srv->keys. */
uint64_t st_auth_owner(const struct st_call *c);

/* ---- replies (reply.c) -------------------------------------------------- */

/* Queue 'body' (taken: freed in every case) with status, content type,
 * x-request-id and, when given, one extra header. */
enum st_route_result st_reply(struct st_call *c, unsigned status, const char *ctype,
                              struct st_buf *body, const char *hname, const char *hvalue);
enum st_route_result st_reply_json(struct st_call *c, unsigned status, struct st_buf *body);
/* 200 with the JSON 'body' when building it went well (rc == ST_OK), else
 * the OOM reply; body is taken in both cases. */
enum st_route_result st_reply_json_built(struct st_call *c, enum st_status rc,
                                         struct st_buf *body);
enum st_route_result st_reply_error(struct st_call *c, const struct st_api_error *e);
/* An OOM while building a body: a static 500 body. */
enum st_route_result st_reply_nomem(struct st_call *c);
/* OPTIONS on a known path: 204 with Allow ('allow': the path's methods)
 * and, for an allowed Origin, the CORS preflight headers. Not counted in
 * /metrics, no API key needed. */
enum st_route_result st_reply_preflight(struct st_call *c, const char *allow);
/* The SSE response whose content reader drains c->gen (gen.c). */
enum st_route_result st_reply_stream(struct st_call *c);

/* ---- generation (gen.c) ---------------------------------------------- */

/* Start a completion from a parsed body: create, prepare and submit the
 * requests, then wait (ST_ROUTE_WAIT) or answer an error. */
enum st_route_result st_gen_start(struct st_call *c, struct st_oai_request *oq);
/* Called with c->lock held: is there something for the MHD side to do? */
bool st_gen_ready_locked(const struct st_call *c);
/* The access handler was called again after a resume. */
enum st_route_result st_gen_resume(struct st_call *c);
/* The SSE content reader (MHD's callback). */
ssize_t st_gen_read(void *cls, uint64_t pos, char *buf, size_t max);
/* The connection is gone (completion callback): cancel what still runs and
 * drop the HTTP side's request references. No-op without a generation. */
void st_gen_conn_done(struct st_call *c);
/* Free the generation state (from st_call_unref's last reference). */
void st_gen_free(struct st_gen *g);

/* ---- SSE keep-alive (keepalive.c) -------------------------------------- */

/* Called by the watcher with c->lock held on a suspended call: when it is
 * a stream that has handed nothing to MHD for cfg.sse_keepalive_s seconds
 * (now_ns, real clock), append an SSE comment and return true (the caller
 * resumes the connection: its headers go out if they had not). */
bool st_keepalive_due_locked(struct st_call *c, int64_t now_ns);

/* ---- the disconnect watcher (watch.c) -------------------------------- */

/* While a connection is suspended libmicrohttpd does not notice the client
 * leaving; the watcher polls suspended sockets for a hang-up and cancels
 * their requests (so a queued request leaves the queue at once). */
ST_MUST_CHECK enum st_status st_watch_start(struct st_server *srv, struct st_err *err);
void st_watch_stop(struct st_server *srv);

#endif /* STRATA_SERVER_INTERNAL_H */
