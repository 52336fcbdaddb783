/* gen/gen.h -- the state of one completion request (chat or legacy), shared by
 * gen_submit.c (creating and submitting the engine requests), gen_emit.c
 * (engine events in), gen.c (results out to HTTP) and gen_log.c (its log
 * line). Private to this folder, the handlers that start generations and
 * the reply renderers of the endpoints translated onto chat (responses/,
 * anthropic/: struct st_gen_shape).
 *
 * One HTTP request becomes n_choices engine requests (prompts x n). Each
 * has a choice record; its emit callback runs on an engine thread and
 * appends to the call under call->lock, then resumes the suspended MHD
 * connection. Everything in struct st_gen is guarded by call->lock.
 */
#ifndef STRATA_SERVER_GEN_GEN_H
#define STRATA_SERVER_GEN_GEN_H

#include "server/gen/gen_reply.h"
#include "server/gen/oai_response.h"
#include "server/http/http.h"

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
    /* (llama-server's shape, non-stream: llama_json.c) */
    struct st_buf ids;             /* generated token ids, comma-separated */
    struct st_buf probs;           /* completion_probabilities entries, comma-separated */
    int64_t n_llama_tokens;        /* tokens shown so far (an END's release adds none) */
};

/* /v1/embeddings (h_embeddings.c): each input item is one choice whose
 * request has params.embed; gen_emit.c keeps its EMBED vector in ch->embd and
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
    struct st_llama_shape llama;   /* llama.on: llama-server's /completion shape
                                    * (llama_json.c); settings owned */
    int32_t echo_top;              /* echo + logprobs N: alternatives per prompt token */
    int32_t prompt_lp;             /* vLLM prompt_logprobs k; -1 = not asked */
    uint8_t think_vocab;           /* think tags the model has as tokens: bit
                                    * ST_THINK_ANGLE, bit ST_THINK_SQUARE (gen_submit.c) */
    char   *verbose_prompt;        /* owned: the rendered prompt of choice 0 when
                                    * "__verbose" is asked (non-stream chat and
                                    * completions); NULL = not asked */
    uint8_t json_think_vocab;      /* think_vocab for response_format's optional block:
                                    * 0 when the template never thinks (gen_submit.c) */
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
    bool cut;                      /* cut at --stream-buffer: its end is cut_error, [DONE] */
    struct st_api_error cut_error;
    bool logged;                   /* the request's log line was written */
    struct st_gen_shape *resp;     /* the reply's renderer when the request came in as
                                    * /v1/responses or /v1/messages (owned); NULL: the
                                    * chat / completions shapes (oai_response.c) */
    struct st_gen_embed embed;     /* embed.on: an embeddings call (no stream) */
};

/* ---- reply renderers for the endpoints translated onto chat ---- */
/* /v1/responses (responses_reply.c) and /v1/messages (messages_reply.c)
 * run on the chat generation path and render its output in their own
 * shapes. Where gen_emit.c / gen.c / gen_reply.c would write a chat chunk
 * or body they call these instead. One choice (n 1). All run under call->lock. */
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

/* ---- fill-in-the-middle prompts (gen_fim.c) ---- */
/* /v1/completions with OpenAI's legacy "suffix": every prompt
 * becomes the model's fill-in-the-middle prompt (prefix = the prompt) as
 * token ids. No suffix or an unknown model: nothing done (ST_OK). 400 when
 * the model has no FIM tokens or the prompt does not fit. MHD thread. */
enum st_status st_infill_suffix(struct st_call *c, struct st_oai_request *oq,
                                struct st_api_error *e);
/* The steps /infill (llama/h_infill.c) shares: the model the request
 * names (-1: none; st_gen_start answers 404 then), and prompt 'pr' of oq
 * made the FIM prompt of 'in' (its prefix filled in from pr): ST_OK, or e
 * set (a 400 naming 'param', or the model's load failure). */
int32_t st_gen_fim_model(struct st_call *c, const struct st_oai_request *oq);
struct st_infill_input;
enum st_status st_gen_fim_prompt(struct st_call *c, int32_t model, struct st_oai_request *oq,
                                 struct st_oai_prompt *pr, struct st_infill_input *in,
                                 const char *param, struct st_api_error *e);

/* ---- for the endpoints translated onto chat (responses/, anthropic/) ---- */
/* Tokens of the choice during which the reply parser produced reasoning
 * text (gen_reply.c); 0 without a parser. */
int64_t st_gen_reply_reasoning_tokens(const struct st_gen_choice *ch);
/* Start a generation rendered by 'shape' (taken, freed in every case):
 * st_gen_start with g->resp = shape and the id shape->id_prefix + request id. */
enum st_route_result st_gen_start_shaped(struct st_call *c, struct st_oai_request *oq,
                                         struct st_gen_shape *shape);

/* ---- /v1/embeddings answers (embeddings_reply.c) ---- */
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
/* The embeddings body of a finished call whose every choice has its
 * vector (g->embed.on; c->lock held): the vectors at g->embed.dims in
 * input order. ST_ERR_NOMEM. */
ST_MUST_CHECK enum st_status st_embed_gen_body(struct st_buf *out, const struct st_gen *g);

/* ---- one call's generation, the MHD side (gen.c) --------------------- */

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
/* Drop a call reference (http/http.h: st_call_ref); the last one frees the
 * call and its generation. */
void st_call_unref(struct st_call *c);
/* Suspend the MHD connection unless st_gen_ready_locked already holds.
 * Must be called with c->lock held, on the MHD thread, from the access
 * handler or the content reader. Returns true when suspended. */
bool st_call_suspend_locked(struct st_call *c);

/* ---- SSE keep-alive (keepalive.c) -------------------------------------- */

/* Called by the watcher with c->lock held on a suspended call: when it is
 * a stream that has handed nothing to MHD for cfg.sse_keepalive_s seconds
 * (now_ns, real clock), append an SSE comment and return true (the caller
 * resumes the connection: its headers go out if they had not). */
bool st_keepalive_due_locked(struct st_call *c, int64_t now_ns);
/* The same now, whatever the interval (probing a half-closed client). */
bool st_keepalive_probe_locked(struct st_call *c, int64_t now_ns);

/* ---- steps of starting a generation (gen_submit.c), shared by the
 * handlers that build their own engine requests (h_embeddings.c) ---- */
/* The model named 'name' (or alias; NULL: the first); 404 model_not_found. */
enum st_status st_gen_pick_model(struct st_call *c, const char *name, int32_t *model,
                                 struct st_api_error *e);
/* The engines have loaded; else 503 model_loading with Retry-After 1. */
enum st_status st_gen_check_ready(struct st_call *c, struct st_api_error *e);
/* The effective priority (docs/design/SCHEDULER.md section 2): the body's (has_body),
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
/* Prompt p of 'oq' as a generation would give it to req (req->model set):
 * the template with tools and kwargs (and the thinking budget's) or the
 * prompt text, in req->prompt; its tokens, or the client's ids, in
 * req->tokens. Nothing is submitted (the /render endpoints). */
enum st_status st_gen_prompt_tokens(struct st_call *c, const struct st_oai_request *oq,
                                    size_t p, struct st_request *req, struct st_api_error *e);
/* Every choice from 'from' on ends unsubmitted with e's status (and the
 * log line is written once all have ended: outcome=refused with e's status
 * when from is 0 and e is a 4xx but 429). */
void st_gen_end_rest(struct st_call *c, struct st_gen *g, int32_t from,
                     const struct st_api_error *e);
/* Before any prompt is tokenized: 429 queue_full (as st_gen_submit_all
 * answers it) when the queue is full and this call's priority would
 * outrank nobody in it, so a flood of huge prompts against a full queue
 * costs no tokenizer time. */
enum st_status st_gen_check_room(struct st_call *c, const struct st_gen *g,
                                 struct st_api_error *e);
/* Submit every choice's request in order; on the first refusal (429
 * queue_full, 503 model_load_failed, ...) the rest end unsubmitted, those
 * queued are cancelled, and 'e' says why. */
enum st_status st_gen_submit_all(struct st_call *c, struct st_gen *g, struct st_api_error *e);

/* Allocate the state for 'n' choices (owned; st_gen_free). NULL on OOM. */
struct st_gen *st_gen_new(int32_t n);
/* The emit callback and on_free hook every engine request gets (gen_emit.c). */
void st_gen_emit(void *ctx, const struct st_event *ev);
void st_gen_req_on_free(struct st_request *req);
/* Cancel every submitted request that has not ended, however many (any
 * thread but an engine's emit; takes and releases call->lock). */
void st_gen_cancel_all(struct st_call *c);
/* Mark choice 'ch' ended without reaching an engine (c->lock held). */
void st_gen_end_unsubmitted_locked(struct st_call *c, struct st_gen_choice *ch,
                                   enum st_status status, const char *msg);
/* The request's log line (gen_log.c; one per finished completion request): taken
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

#endif /* STRATA_SERVER_GEN_GEN_H */
