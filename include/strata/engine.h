/* engine.h -- engines, their slots, and the requests they serve.
 *
 * An engine is one model instance on one device with N slots; one thread
 * per engine runs steps (read chunk of the lines holder + one token per
 * decoding slot). A pool holds every engine of the server and the link to
 * the scheduler (one shared waiting queue).
 *
 * Requests cross threads: the HTTP side creates one, the scheduler queues
 * it, an engine thread serves it and emits events back. So a request is
 * reference counted: st_request_new() returns it with one reference (the
 * creator's); st_engine_pool_submit() takes another for the engine side,
 * dropped after the final event was emitted. The request is freed when the
 * last reference goes. Cancellation is an atomic flag read at step
 * boundaries.
 *
 * The engine emits plain events (struct st_event); only the server knows
 * the OpenAI wire format.
 */
#ifndef STRATA_ENGINE_H
#define STRATA_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/clock.h"
#include "strata/compiler.h"
#include "strata/err.h"
#include "strata/sched.h"

#define ST_MAX_STOP 4
#define ST_MAX_TOP_LOGPROBS 20

/* ---- what a request asks for ---------------------------------------- */

struct st_gen_params {
    int32_t  max_tokens;          /* completion tokens at most; -1 = until stop/context */
    char    *stop[ST_MAX_STOP];   /* owned (free()), NUL-terminated; NULL-padded */
    int32_t  n_stop;
    bool     has_seed;
    uint64_t seed;
    float    temperature;         /* 0 = greedy; default 0.8 */
    float    top_p;               /* default 0.95 */
    int32_t  top_k;               /* 0 = off; default 40 */
    float    min_p;               /* default 0.05 */
    bool     logprobs;
    int32_t  top_logprobs;        /* 0..ST_MAX_TOP_LOGPROBS */
    bool     ignore_eos;
};

/* llama-server's defaults, as above. */
void st_gen_params_defaults(struct st_gen_params *p);

/* ---- what comes back ------------------------------------------------- */

enum st_event_kind {
    ST_EVENT_TOKEN,   /* one sampled token (text may be empty: held back) */
    ST_EVENT_END,     /* last event of a request; nothing follows; carries no text */
};

enum st_finish {
    ST_FINISH_STOP,       /* eos or a stop string */
    ST_FINISH_LENGTH,     /* max_tokens or the context is full */
    ST_FINISH_CANCELLED,  /* client gone */
    ST_FINISH_ERROR,      /* see status/error */
};

const char *st_finish_name(enum st_finish f);   /* "stop", "length", ... */

struct st_top_logprob {
    int32_t token;
    float   logprob;
    char    bytes[64];     /* the token's bytes (raw, may be partial UTF-8) */
    int32_t n_bytes;
};

struct st_event {
    enum st_event_kind kind;
    /* TOKEN: new visible text, UTF-8 complete, stop strings held back.
     * Text held back for a stop string that never completed is released
     * with the last token (at max_tokens), or in a TOKEN event carrying the
     * end-of-generation token (not counted in n_generated) just before END. */
    const char *text;              /* borrowed for the call; NUL-terminated */
    size_t      text_len;
    int32_t     token;             /* the sampled token id */
    float       logprob;           /* when params.logprobs */
    const struct st_top_logprob *top;   /* n_top entries, borrowed */
    int32_t     n_top;
    /* END */
    enum st_finish finish;
    enum st_status status;         /* ST_OK unless finish == ERROR */
    const char    *error;          /* message when finish == ERROR */
    /* usage, valid on END (and on every TOKEN as a running count) */
    int64_t n_prompt;
    int64_t n_generated;
    int64_t n_cached;              /* prompt tokens reused from a slot's cache */
};

/* Called on an engine thread (or on the submitting thread for a request
 * that ends before it reaches an engine, e.g. shed). Must not block long
 * and must not call back into the pool. */
typedef void st_emit_fn(void *ctx, const struct st_event *ev);

/* ---- requests -------------------------------------------------------- */

struct st_request {
    atomic_int  refs;
    atomic_bool cancelled;        /* set by the HTTP side when the client left */
    char        id[48];           /* x-request-id; also job.request_id */
    int32_t     model;            /* index into the pool's models */
    int32_t     choice;           /* 0..n-1 for n > 1 */

    char    *prompt;              /* owned: rendered prompt text (NUL-terminated) */
    int32_t *tokens;              /* owned: prompt token ids (st_engine_pool_prepare) */
    int64_t  n_tokens;
    struct st_gen_params params;
    enum st_band band;            /* of the effective priority */

    st_emit_fn *emit;             /* set by the creator before submit */
    void       *emit_ctx;

    struct st_sched_job job;      /* the scheduler's view (priority, prompt length ...) */
    int64_t n_cached;             /* prompt tokens found in its slot's KV at admit (prefix
                                   * reuse): not read again; set by the engine thread */
    int64_t submit_ns;            /* clock time of submit */
    int64_t first_token_ns;       /* 0 until the first token */
    int64_t end_ns;

    /* Called when the last reference goes, before the request is freed:
     * lets the owner release what it hung on emit_ctx. May be NULL. */
    void (*on_free)(struct st_request *req);

    /* The pool's list of requests it submitted and has not ended yet
     * (under the pool's mutex): lets shutdown end every one of them. */
    struct st_request *pool_prev, *pool_next;
};

/* Returns owned with refs = 1, params at their defaults; NULL on OOM. */
struct st_request *st_request_new(void);
void st_request_ref(struct st_request *req);
/* Frees params.stop[], prompt, tokens and the request at the last ref. */
void st_request_unref(struct st_request *req);

/* ---- the pool -------------------------------------------------------- */

enum st_backend_kind {
    ST_BACKEND_SIM,
    ST_BACKEND_CPU,
    ST_BACKEND_CUDA,
};

/* The simulated engine's time model (docs/SIM.md). */
struct st_sim_config {
    double  prompt_tps;     /* prompt tokens read per second, per engine (one read at a time) */
    double  decode_tps;     /* tokens per second per decoding slot */
    double  load_seconds;   /* time to "load" the model */
    int32_t tokens;         /* default completion length; then end of generation ("stop") */
};

struct st_model_config {
    char   *name;           /* the id /v1/models shows and requests name; NULL: "strata-sim" */
    char   *path;           /* GGUF path (NULL for sim). Sim only: "fail:REASON" makes every
                             * load of this model fail with REASON (tests, docs/MODELS.md) */
    enum st_backend_kind backend;
    int32_t priority;       /* added to every request's priority */
    int32_t parallel;       /* slots per engine */
    int64_t ctx_size;       /* tokens per slot */
    /* (added, several models) */
    char  **aliases;        /* other ids that reach this model; n_aliases of them */
    int32_t n_aliases;
    int32_t gpus[16];       /* devices it may run on (values of st_pool_config.gpus); */
    int32_t n_gpus;         /* 0 = every engine of the pool */
    double  ttl_s;          /* unload after this long idle on an engine, s; 0 = never */
    bool    preload;        /* load at start (a pool of one model always does) */
};

struct st_pool_config {
    struct st_model_config model;     /* model 0 */
    /* (added) models 1..n_extra_models: borrowed, copied by st_engine_pool_new */
    const struct st_model_config *extra_models;
    int32_t n_extra_models;           /* 0..ST_POOL_MAX_MODELS-1 */
    int32_t n_engines;                /* one per device (sim: per --gpus entry); >= 1 */
    int32_t gpus[16];                 /* the device of each engine, n_engines of them; -1 = the
                                       * CPU (or the sim without --gpus) */
    int32_t ubatch;                   /* read chunk, tokens (default 512) */
    int32_t threads;                  /* CPU worker threads (0 = cores) */
    bool    mtp;                      /* --batch-mtp */
    int32_t mtp_draft;                /* draft tokens per step (1..4) */
    double  load_backoff_s;           /* (added) after a failed load, requests for the model
                                       * get 503 with the reason for this long; then the
                                       * next request tries again. Default 30 */
    struct st_sim_config sim;
};

#define ST_POOL_MAX_MODELS 256

void st_pool_config_defaults(struct st_pool_config *c);

struct st_engine_pool;

/* Creates the engines (not started). 'sched' and 'clock' are borrowed and
 * outlive the pool. Returns owned; free with st_engine_pool_free().
 * 'cfg' is copied (every model's strings too). Each engine registers with
 * 'sched' (st_sched_add_engine: the largest parallel of the models it may
 * serve, no model loaded), so the scheduler must have no engines yet; the
 * pool installs the scheduler's notify callback (st_sched_set_notify) to
 * wake its threads and denies each engine the models pinned elsewhere.
 * No model file is opened here: a model loads on first use, or at start
 * with preload. Without --batch the scheduler fills one slot per engine at
 * a time, so passing the same 'parallel' either way is fine.
 * ST_ERR_UNSUPPORTED for a backend that is not built (today: anything but
 * sim); ST_ERR_BAD_CONFIG for a model pinned to a device no engine has,
 * duplicate names or aliases, or values out of range. */
ST_MUST_CHECK
enum st_status st_engine_pool_new(const struct st_pool_config *cfg, struct st_sched *sched,
                                  const struct st_clock *clock, struct st_engine_pool **out,
                                  struct st_err *err);

/* Start one thread per engine; each loads its start-up model (the first
 * preload model it may serve, in config order), then serves. */
ST_MUST_CHECK
enum st_status st_engine_pool_start(struct st_engine_pool *p, struct st_err *err);

/* Stop the threads; every request still queued or running ends with
 * ST_ERR_SHUTDOWN. Then free. NULL is a no-op. */
void st_engine_pool_free(struct st_engine_pool *p);

/* True once every engine has finished its start-up load, whatever came of
 * it (/health; a model that failed shows in st_engine_pool_model_status).
 * A pool with nothing to preload is ready at once. */
bool st_engine_pool_ready(struct st_engine_pool *p);

/* Run one step of 'engine' on the calling thread, without threads: for
 * tests on a manual clock. Returns false when the engine had nothing to
 * do. The pool must not have been started. */
bool st_engine_pool_step(struct st_engine_pool *p, int32_t engine);

/* Model facts the server needs. Models are 0..n_models-1 in config order.
 * Strings are owned by the pool (valid until st_engine_pool_free); NULL
 * for an index out of range. Thread: any. */
const char *st_engine_pool_model_name(const struct st_engine_pool *p, int32_t model);
int32_t st_engine_pool_n_models(const struct st_engine_pool *p);
/* The model 'name' names: its name or one of its aliases (exact, case
 * sensitive). -1 if unknown (the server answers 404). */
int32_t st_engine_pool_find_model(const struct st_engine_pool *p, const char *name);
int64_t st_engine_pool_ctx_size(const struct st_engine_pool *p, int32_t model);
const char *st_engine_pool_backend_name(const struct st_engine_pool *p, int32_t model);
/* Aliases of a model (n via *n; borrowed like the name). */
const char *const *st_engine_pool_model_aliases(const struct st_engine_pool *p, int32_t model,
                                                int32_t *n);


/* Text side of a model (sim: words; real models: the GGUF tokenizer). */
ST_MUST_CHECK
enum st_status st_engine_pool_tokenize(struct st_engine_pool *p, int32_t model, const char *text,
                                       size_t len, bool add_special, bool parse_special,
                                       int32_t **ids, size_t *n_ids, struct st_err *err);
/* Owned NUL-terminated bytes of the tokens (free()). */
ST_MUST_CHECK
enum st_status st_engine_pool_detokenize(struct st_engine_pool *p, int32_t model,
                                         const int32_t *ids, size_t n_ids, char **text,
                                         struct st_err *err);

/* Render a chat into prompt text with the model's template. 'messages_json'
 * is the OpenAI messages array as JSON text; 'kwargs_json' the
 * chat_template_kwargs object or NULL; 'tools_json' or NULL. Owned result. */
ST_MUST_CHECK
enum st_status st_engine_pool_apply_template(struct st_engine_pool *p, int32_t model,
                                             const char *messages_json, const char *tools_json,
                                             const char *kwargs_json, bool add_generation_prompt,
                                             char **prompt, struct st_err *err);

/* Tokenize req->prompt into req->tokens and fill req->job.prompt_tokens.
 * ST_ERR_TOO_LONG when it cannot fit the context. */
ST_MUST_CHECK
enum st_status st_engine_pool_prepare(struct st_engine_pool *p, struct st_request *req,
                                      struct st_err *err);

/* Hand the request to the scheduler (takes a reference for the engine
 * side). The caller sets id, model, job.priority (the effective P),
 * params, emit/emit_ctx and prompt (or tokens via prepare; prepare runs
 * here when tokens is NULL); submit fills job.model, job.prompt_tokens,
 * job.request_id (from id), band and submit_ns. Events may arrive on an
 * engine thread before this returns. ST_ERR_QUEUE_FULL: not queued (the caller answers 429). A request
 * shed to make room ends with an END event (status ST_ERR_QUEUE_FULL) on
 * this thread. ST_ERR_LOADING: not queued, the model failed to load and
 * its back-off has not passed (err says why and when it retries; 503).
 * A queued request whose model then fails to load on every engine it may
 * run on ends with END, finish ERROR, status ST_ERR_LOADING and the
 * reason. ST_ERR_NOT_FOUND: no such model index. Thread: any. */
ST_MUST_CHECK
enum st_status st_engine_pool_submit(struct st_engine_pool *p, struct st_request *req,
                                     struct st_err *err);

/* Client gone: sets req->cancelled; a waiting request ends at once (END,
 * ST_FINISH_CANCELLED, on this thread), a running one at its engine's next
 * step. Thread: any. */
void st_engine_pool_cancel(struct st_engine_pool *p, struct st_request *req);

/* ---- observability --------------------------------------------------- */

enum st_slot_state {
    ST_SLOT_IDLE,
    ST_SLOT_READING,
    ST_SLOT_PARKED,
    ST_SLOT_DECODING,
    ST_SLOT_ADMITTED,     /* holds a request, waits for the lines to start reading */
};

struct st_slot_view {
    int32_t engine;
    int32_t slot;
    enum st_slot_state state;
    char    request_id[48];
    int32_t priority;
    enum st_band band;
    int64_t n_prompt;
    int64_t n_read;
    int64_t n_generated;
    int32_t give_ways;
    int64_t n_cached;          /* tokens of KV kept from the previous request */
    int32_t model;             /* (added) the engine's loaded model; -1 none */
    int64_t n_ctx;             /* (added) tokens per slot of that model; 0 none */
};

/* Fill up to 'max' slot views; returns the number of slots in the pool. */
size_t st_engine_pool_slots(struct st_engine_pool *p, struct st_slot_view *out, size_t max);

#define ST_HIST_BUCKETS 16

struct st_histogram {
    double   bounds[ST_HIST_BUCKETS];   /* upper bounds, seconds; +Inf implied */
    int32_t  n_bounds;
    uint64_t counts[ST_HIST_BUCKETS + 1];   /* per bucket, not cumulative; last = +Inf */
    double   sum;
    uint64_t count;
};

struct st_pool_stats {
    uint64_t prompt_tokens;        /* read, all engines */
    uint64_t generated_tokens;
    uint64_t cached_tokens;        /* prompt tokens reused through prefix reuse */
    uint64_t mtp_drafted;
    uint64_t mtp_accepted;
    uint64_t mtp_steps;
    struct st_histogram ttft[ST_BAND_COUNT];   /* time to first token, by band */
    struct st_histogram itl[ST_BAND_COUNT];    /* inter-token latency, by band */
    double   kv_usage;             /* 0..1: context in use over context allocated */
    int64_t  running;              /* requests holding a slot */
};

void st_engine_pool_stats(struct st_engine_pool *p, struct st_pool_stats *out);

/* ---- several models (../docs/MODELS.md) ------------------------------ */

enum st_model_state {
    ST_MODEL_UNLOADED,   /* on no engine: never used yet, ttl, or swapped out */
    ST_MODEL_LOADING,    /* an engine is loading it and none has it loaded */
    ST_MODEL_LOADED,     /* loaded on at least one engine */
    ST_MODEL_FAILED,     /* its last load failed and it is loaded nowhere: see reason */
};

/* "unloaded", "loading", "loaded", "failed"; static storage. */
const char *st_model_state_name(enum st_model_state s);

struct st_model_status {
    enum st_model_state state;
    char     reason[256];          /* why the last load failed; "" when it did not */
    double   retry_in_s;           /* FAILED: seconds until a request may try the load
                                    * again; 0 = the next request does */
    int32_t  n_loaded;             /* engines that have it loaded: strata_model_loaded{model} */
    int32_t  n_engines;            /* engines that have it loaded or are loading it ... */
    int32_t  engines[16];          /* ... their indices (first 16) */
    uint64_t loads;                /* successful loads */
    uint64_t load_failures;        /* failed loads */
    uint64_t unloads;              /* swapped out or ttl (not counted: shutdown) */
    uint64_t ttl_unloads;          /* ... of which for its ttl */
    struct st_histogram load_seconds;   /* every load attempt, seconds:
                                         * strata_model_load_seconds{model} */
};

/* A consistent snapshot of one model's state and counters. False (out
 * zeroed) for an index out of range. Thread: any. */
bool st_engine_pool_model_status(struct st_engine_pool *p, int32_t model,
                                 struct st_model_status *out);

/* strata_model_swaps_total{from,to}: how many times an engine changed its
 * model from 'from' (-1: it had none, a first load or one after a ttl
 * unload) to 'to'. 0 for indices out of range. Thread: any. */
uint64_t st_engine_pool_swaps(struct st_engine_pool *p, int32_t from, int32_t to);

/* Engines of the pool, and the model engine 'engine' has loaded now (-1:
 * none, or it is still loading one). Thread: any. */
int32_t st_engine_pool_n_engines(const struct st_engine_pool *p);
int32_t st_engine_pool_engine_model(struct st_engine_pool *p, int32_t engine);

#endif /* STRATA_ENGINE_H */
