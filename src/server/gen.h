/* gen.h -- the state of one completion request (chat or legacy), shared by
 * gen_submit.c (creating and submitting the engine requests) and gen.c
 * (events in, results out). Private to those two files, gen_reply.c, the
 * h_*.c handlers that start generations and the reply renderers
 * (responses_reply.c, messages_reply.c: struct st_gen_shape).
 *
 * One HTTP request becomes n_choices engine requests (prompts x n). Each
 * has a choice record; its emit callback runs on an engine thread and
 * appends to the call under call->lock, then resumes the suspended MHD
 * connection. Everything in struct st_gen is guarded by call->lock.
 */
#ifndef STRATA_SERVER_GEN_H
#define STRATA_SERVER_GEN_H

#include "internal.h"
#include "strata/think_block.h"

struct st_gen_choice {
    struct st_call *call;          /* borrowed: the request's on_free holds a call reference */
    struct st_request *req;        /* the HTTP side's reference; NULL once dropped */
    int32_t index;                 /* choices[].index in the response */
    int32_t prompt;                /* which prompt (usage counts each prompt once) */
    bool submitted;                /* handed to the pool: END will come */
    bool role_sent;                /* stream: the role chunk went out */
    bool produced;                 /* stream: a token chunk was rendered */
    bool ended;
    enum st_finish finish;
    enum st_status status;
    char error[256];               /* message of a failed END */
    char *stop_seq;                /* owned: the stop string that ended it (END); NULL:
                                    * none, or no memory to keep it */
    int64_t n_prompt, n_generated, n_cached;   /* tokens, from the last event */
    int64_t first_token_ns;        /* real clock; 0 until the first token */
    struct st_buf text;            /* non-stream: the completion so far */
    struct st_oai_lp_acc lp;       /* non-stream: logprobs so far */
    int64_t text_offset;           /* bytes of text so far (legacy text_offset) */
    struct st_gen_reply *reply;    /* chat parsed into reasoning, content, tool calls
                                    * (owned, gen_reply.c); NULL: the raw text */
    /* (echo, prompt_logprobs: PROMPT events, docs/API.md "Scoring prompts") */
    struct st_buf plp;             /* vLLM prompt_logprobs entries so far */
    int64_t n_plp;                 /* ... how many */
    bool echo_sent;                /* stream: the prompt's chunk went out */
    float *embd;                   /* /v1/embeddings: the item's unit vector from its
                                    * EMBED event (g->embed.n_embd floats; owned); NULL
                                    * until then */
};

/* /v1/embeddings (h_embeddings.c): each input item is one choice whose
 * request has params.embed; gen.c keeps its EMBED vector in ch->embd and
 * answers the finished call with the embeddings body. */
struct st_gen_embed {
    bool on;                       /* this generation is an embeddings call */
    bool base64;                   /* encoding_format "base64" */
    int32_t n_embd;                /* the model's width (every vector's) */
    int32_t dims;                  /* the width answered: 'dimensions', else n_embd */
};

struct st_gen {
    enum st_oai_kind kind;
    bool stream;
    bool include_usage;
    bool logprobs;
    bool echo;                     /* completions: the prompt leads each choice's text */
    bool infill;                   /* /infill: llama-server's /completion shape (infill_json.c) */
    bool infill_truncated;         /* ... its "truncated" */
    int32_t echo_top;              /* echo + logprobs N: alternatives per prompt token */
    int32_t prompt_lp;             /* vLLM prompt_logprobs k; -1 = not asked */
    uint8_t think_vocab;           /* think tags the model has as tokens: bit
                                    * ST_THINK_ANGLE, bit ST_THINK_SQUARE (gen_submit.c) */
    char id[64];                   /* "chatcmpl-<request id>" / "cmpl-<request id>" */
    char model_name[128];
    int64_t created;               /* unix seconds */
    int32_t model;
    int32_t priority;              /* effective P */
    enum st_band band;
    struct st_gen_choice *choices; /* owned, n_choices */
    int32_t n_choices;
    int32_t n_ended;
    struct st_buf out;             /* stream: SSE bytes not yet handed to MHD */
    size_t out_off;                /* bytes of 'out' already handed over */
    int64_t last_out_ns;           /* real clock: creation, then the last bytes handed to
                                    * MHD (SSE keep-alive, keepalive.c) */
    bool stream_done;              /* stream: [DONE] rendered */
    bool broken;                   /* out of memory while rendering: end the stream */
    bool logged;                   /* the request's log line was written */
    struct st_gen_shape *resp;     /* the reply's renderer when the request came in as
                                    * /v1/responses or /v1/messages (owned); NULL: the
                                    * chat / completions shapes (oai_response.c) */
    struct st_gen_embed embed;     /* embed.on: an embeddings call (no stream) */
};

/* ---- reply renderers for the endpoints translated onto chat ---- */
/* /v1/responses (responses_reply.c) and /v1/messages (messages_reply.c)
 * run on the chat generation path and render its output in their own
 * shapes. Where gen.c / gen_reply.c would write a chat chunk or body they
 * call these instead. One choice (n 1). All run under call->lock. */
struct st_gen_shape {
    /* Stream: one parsed chat delta (content, reasoning, tool call start /
     * arguments) as the endpoint's events onto g->out; sets ch->produced.
     * Failures mark g->broken. */
    void (*stream_delta)(struct st_gen *g, struct st_gen_choice *ch,
                         const struct st_oai_delta *d);
    /* Stream: the end of the choice: finished (err NULL, ch->finish STOP or
     * LENGTH) or failed after the stream began (err set). */
    void (*stream_end)(struct st_gen *g, struct st_gen_choice *ch,
                       const struct st_api_error *err, const struct st_oai_usage *u);
    /* Non-stream: the whole body for the finished choice 'c'. */
    enum st_status (*body)(struct st_buf *out, const struct st_gen *g,
                           const struct st_oai_choice *c, const struct st_oai_usage *u,
                           int64_t reasoning_tokens);
    void (*free)(void *ctx);       /* frees ctx (and this shape, when ctx holds it) */
    void *ctx;                     /* the renderer's state */
    const char *id_prefix;         /* g->id = id_prefix + request id: "resp_", "msg_" */
    const char *messages_param;    /* the body field a prompt error on "messages"
                                    * names ("input", "messages") */
};
/* Free a shape through its free hook; NULL is a no-op. */
void st_gen_shape_free(struct st_gen_shape *s);

/* ---- chat replies parsed into parts (gen_reply.c, docs/API.md) ---- */
struct st_gen_reply;
/* Give every choice its parser when the request is a chat whose reply is
 * to be parsed (tools given and tool_choice not "none", or reasoning_format
 * deepseek); 'prompt' is the rendered prompt (does it open <think>?).
 * ST_ERR_NOMEM. Before submit: no lock needed. */
enum st_status st_gen_reply_setup(struct st_gen *g, const struct st_oai_request *oq,
                                  enum st_reasoning_format server_default, const char *prompt);
/* tool_choice "required" or a named function: the call grammar that
 * constrains the reply (include/strata/call_grammar.h) for the format the
 * parser will read from this prompt; *out NULL when nothing is enforced
 * (another tool_choice, no tools, an unknown name, ...: as before, never
 * an error). One reference, the caller's.
 * ST_ERR_NOMEM. */
struct st_call_grammar;
enum st_status st_gen_reply_calls(const struct st_oai_request *oq,
                                  enum st_reasoning_format server_default, const char *prompt,
                                  uint8_t think_vocab, struct st_call_grammar **out);
/* response_format json_object / json_schema on a chat: the think block
 * the reply may start with before the document (p->json_think and
 * json_think_tags; docs/API.md "Reasoning before a constrained answer"),
 * by the rule tool_choice's grammar uses; none for completions, without
 * a JSON mode, or with reasoning_format "none". think_vocab: struct
 * st_gen's (an optional block only for a model that has its tags as
 * tokens: a model that never thinks must not wander into one). */
void st_gen_reply_json_think(const struct st_oai_request *oq,
                             enum st_reasoning_format server_default, const char *prompt,
                             uint8_t think_vocab, struct st_gen_params *p);
/* The thinking budget's think block (docs/API.md "Thinking budget"): how
 * the reply may open it (ST_THINK_NONE: it cannot, the budget is ignored)
 * and its spelling (*tags), by the rule above; 'constrained': the reply
 * has a response_format or enforced tool_choice, whose grammar allows a
 * block only with reasoning split out. */
enum st_think_mode st_gen_reply_budget_think(const struct st_oai_request *oq,
                                             enum st_reasoning_format server_default,
                                             const char *prompt, uint8_t think_vocab,
                                             bool constrained, enum st_think_tags *tags);
void st_gen_reply_free(struct st_gen_reply *r);
/* A token's visible text (c->lock held): stream -> chunks on g->out with
 * the token's logprobs (lp, NULL: none); else accumulated. */
void st_gen_reply_token(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                        const char *text, size_t len, const struct st_oai_logprob *lp);
/* End of generation: flush what the parser held (c->lock held). */
void st_gen_reply_end(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch);
/* "tool_calls" when the choice made calls and stopped normally, else
 * OpenAI's reason for ch->finish. */
const char *st_gen_reply_finish_reason(const struct st_gen_choice *ch);
/* The parsed parts of a finished non-stream choice into 'out'. */
void st_gen_reply_fill(const struct st_gen_choice *ch, struct st_oai_choice *out);

/* ---- /infill answers (infill_json.c, docs/API.md "/infill") ---- */
/* A stream object for one token's text: {"index":0,"content":...,"stop":false,...}. */
enum st_status st_infill_chunk(struct st_buf *o, const struct st_gen *g,
                               const struct st_gen_choice *ch, const char *text, size_t len);
/* The last object (stream: content "", stop true) or the whole body (the
 * choice's text as content). */
enum st_status st_infill_final(struct st_buf *o, const struct st_gen *g,
                               const struct st_gen_choice *ch, bool stream);

/* /v1/completions with OpenAI's legacy "suffix" (h_infill.c): every prompt
 * becomes the model's fill-in-the-middle prompt (prefix = the prompt) as
 * token ids. No suffix or an unknown model: nothing done (ST_OK). 400 when
 * the model has no FIM tokens or the prompt does not fit. MHD thread. */
enum st_status st_infill_suffix(struct st_call *c, struct st_oai_request *oq,
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
/* The shape's hooks, also callable directly (g->resp from st_resp_new). */
/* Stream: a chat delta as Responses events onto g->out (g->resp set). */
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
/* Tokens of the choice during which the reply parser produced reasoning
 * text (gen_reply.c); 0 without a parser. */
int64_t st_gen_reply_reasoning_tokens(const struct st_gen_choice *ch);
/* Start a generation rendered by 'shape' (taken, freed in every case):
 * st_gen_start with g->resp = shape and the id shape->id_prefix + request id. */
enum st_route_result st_gen_start_shaped(struct st_call *c, struct st_oai_request *oq,
                                         struct st_gen_shape *shape);

/* ---- /v1/messages answers (messages_reply.c, docs/API.md "/v1/messages") ---- */
/* The renderer of one message (id "msg_..."). NULL on OOM. */
struct st_gen_shape *st_msg_shape_new(void);
/* Anthropic's stop_reason for a finished choice: "tool_use" (calls made,
 * stopped normally), "max_tokens" (cut), "stop_sequence" (stop_seq, the
 * stop string that ended it, not NULL), else "end_turn". */
const char *st_msg_stop_reason(enum st_finish finish, bool has_calls, const char *stop_seq);

/* ---- /v1/embeddings answers (h_embeddings.c) ---- */
/* The embeddings body of a finished call whose every choice has its
 * vector (g->embed.on; c->lock held): the vectors at g->embed.dims in
 * input order. ST_ERR_NOMEM. */
ST_MUST_CHECK enum st_status st_embed_gen_body(struct st_buf *out, const struct st_gen *g);

/* ---- steps of starting a generation (gen_submit.c), shared by the
 * handlers that build their own engine requests (h_embeddings.c) ---- */
/* The model named 'name' (or alias; NULL: the first); 404 model_not_found. */
enum st_status st_gen_pick_model(struct st_call *c, const char *name, int32_t *model,
                                 struct st_api_error *e);
/* The engines have loaded; else 503 model_loading with Retry-After 1. */
enum st_status st_gen_check_ready(struct st_call *c, struct st_api_error *e);
/* The effective priority (SCHEDULER.md section 2): the body's (has_body),
 * X-LlamaSwap-Priority, the API key's default and cap, the model's own. */
int32_t st_gen_priority(struct st_call *c, bool has_body, int32_t body, int32_t model);
/* g's model (its name, g->model), priority and band, and created now. */
void st_gen_set_model(struct st_call *c, struct st_gen *g, int32_t model, int32_t prio);
/* A new engine request for choice 'ch' wired to this machinery (emit
 * st_gen_emit, on_free st_gen_req_on_free, a call reference, ids, model,
 * priority, band); ch->req holds it. NULL on OOM. */
struct st_request *st_gen_request_new(struct st_call *c, struct st_gen *g,
                                      struct st_gen_choice *ch);
/* The client's token ids as req's prompt, checked against the context and
 * the vocabulary (400s naming 'param'). */
enum st_status st_gen_use_tokens(struct st_call *c, struct st_request *req,
                                 const struct st_oai_prompt *pr, const char *param,
                                 struct st_api_error *e);
/* req->prompt tokenized and checked (st_engine_pool_prepare); errors name
 * 'param' (context_length_exceeded when too long). */
enum st_status st_gen_prepare(struct st_call *c, struct st_request *req, const char *param,
                              struct st_api_error *e);
/* Every choice from 'from' on ends unsubmitted with e's status (and the
 * log line is written once all have ended). */
void st_gen_end_rest(struct st_call *c, struct st_gen *g, int32_t from,
                     const struct st_api_error *e);
/* Submit every choice's request in order; on the first refusal (429
 * queue_full, 503 model_load_failed, ...) the rest end unsubmitted, those
 * queued are cancelled, and 'e' says why. */
enum st_status st_gen_submit_all(struct st_call *c, struct st_gen *g, struct st_api_error *e);

/* Allocate the state for 'n' choices (owned; st_gen_free). NULL on OOM. */
struct st_gen *st_gen_new(int32_t n);
/* The emit callback and on_free hook every engine request gets (gen.c). */
void st_gen_emit(void *ctx, const struct st_event *ev);
void st_gen_req_on_free(struct st_request *req);
/* Cancel every submitted request that has not ended, however many (any
 * thread but an engine's emit; takes and releases call->lock). */
void st_gen_cancel_all(struct st_call *c);
/* Mark choice 'ch' ended without reaching an engine (c->lock held). */
void st_gen_end_unsubmitted_locked(struct st_call *c, struct st_gen_choice *ch,
                                   enum st_status status, const char *msg);
/* The request's log line (one per finished completion request): taken
 * under c->lock once every choice has ended, written after unlocking. */
struct st_gen_log {
    bool due;
    char id[48];
    char model[128];
    int32_t priority;
    enum st_band band;
    int32_t n;                     /* choices */
    bool stream;
    int64_t prompt_tokens, completion_tokens;
    double ttft_ms;                /* -1: no token */
    double total_ms;
    const char *outcome;           /* completed, cancelled, rejected, failed */
};
void st_gen_log_take_locked(struct st_call *c, struct st_gen_log *out);
void st_gen_log_flush(const struct st_gen_log *l);

/* A 503 for a model that failed to load (ST_ERR_LOADING): code
 * "model_load_failed" and Retry-After from the model's back-off
 * (st_engine_pool_model_status: the seconds until a request may try the
 * load again, at least 1). MHD thread. */
void st_gen_load_failed(struct st_call *c, int32_t model, struct st_api_error *e);

/* The log line of a completion request refused before any engine request
 * existed (bad body, unknown model, loading). */
void st_gen_log_refused(struct st_call *c, const struct st_api_error *e);

#endif /* STRATA_SERVER_GEN_H */
