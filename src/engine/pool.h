/* pool.h -- the engine loop's types (slots, engines, the pool and its
 * models) and what the pool side shares. Private to src/engine; the
 * engine thread's work is in step.h, the sampler in sample/, drafts in
 * draft/, the runners in src/runner.
 *
 *   pool.c       pool life cycle, threads, submit/cancel, shutdown
 *   live.c       the live-request list; ending a request, slotted or not
 *   runner_new.c a runner for a model: the one dispatch on the backend kind
 *   request.c    st_request life cycle, generation-param defaults, names
 *   models.c     several models: per-model state, back-off after a failed
 *                load, the status and swap counters (docs/MODELS.md)
 *   swap.c       an engine's model: start-up load, swap, ttl unload
 *   step.c       one engine step: admit, lines, batch, forward, sample, emit
 *   prefix.c     prefix reuse: which free slot a request takes, what its KV keeps
 *   kv_blocks.c  the slots' KV as the blocks the KV events announce (kvev/: publisher)
 *   kv_pool.c    the unified KV pool (--kv-unified, kv_pool.h): room, growth, eviction
 *   prompt.c     echo and prompt logprobs
 *   embed.c      embedding requests
 *   infill.c     fill-in-the-middle prompts
 *   text.c       the model's text side for the server, prepare
 *   stats.c      histograms, pool stats, slot views
 *   slot_op.c    POST /slots save, restore, erase: run on the engine thread
 *
 * Locking: each engine's 'mu' guards its wake flag and its slot views; the
 * pool's 'mu' guards the live-request list and the counters. Both are
 * leaf locks: nothing else is taken while either is held, so the
 * scheduler (whose notify callback takes the engines' 'mu') is always
 * called with none of them held. The pool's 'models_mu' guards the model
 * states, the back-off table and the swap counters; it may be held while
 * calling the scheduler (allow/deny a model), so the order is
 *   text_mu -> models_mu -> scheduler -> engine mu,
 * and nothing takes models_mu while holding the scheduler's or an
 * engine's mutex. The engine thread holds no lock while
 * it steps; slot state is touched only by that thread (or by the test
 * thread in st_engine_pool_step mode, or by st_engine_pool_free after the
 * threads have joined).
 */
#ifndef STRATA_ENGINE_POOL_H
#define STRATA_ENGINE_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/draft/draft.h"
#include "engine/draft/spec_cost.h"
#include "engine/kv_blocks.h"
#include "engine/prefix.h"
#include "engine/sample/sample.h"
#include "runner/runner.h"
#include "strata/detok.h"
#include "strata/engine.h"
#include "strata/stop.h"

/* ---- metrics (stats.c) ---------------------------------------------- */

void st_histogram_init(struct st_histogram *h);
void st_histogram_add(struct st_histogram *h, double seconds);
/* Buckets for model loads: 0.1 s .. 600 s. */
void st_histogram_init_load(struct st_histogram *h);

/* ---- engines and the pool ------------------------------------------- */

struct st_slot_op;   /* slot_op.c */

struct st_engine_slot {
    int32_t index;
    struct st_request *req;      /* the engine's reference; NULL = free */
    int64_t n_past;              /* tokens in the slot's KV */
    int64_t n_generated;         /* completion tokens emitted so far */
    int32_t last_token;          /* input of the next decode */
    bool    decoding;            /* has a sampled token to feed */
    int64_t last_token_ns;       /* clock time of the last token (ITL) */
    struct st_sampler sampler;
    /* The text path of one request: piece bytes -> detok (complete UTF-8)
     * -> stop (holds back a possible stop-string start) -> 'out'. */
    struct st_detok detok;
    struct st_stop  stop;            /* init per request (copies the stop strings) */
    bool            stop_live;       /* 'stop' needs st_stop_fini */
    struct st_buf   utf8;            /* scratch: detok output of one token */
    struct st_buf   out;             /* scratch: text to show for one token */
    struct st_mtp_slot mtp;          /* (drafts, both sources) reset per request */
    struct st_ngram ngram;           /* (n-gram drafts) reset per request; table kept */
    struct st_prefix_cache cache;    /* (prefix reuse) what its KV holds; kept when it frees */
    int64_t echo_next;               /* (echo, prompt logprobs) next prompt position to report */
    bool progress_begun;             /* (params.progress) the first PROGRESS went out */
    struct st_kv_slot kvb;           /* (KV events) the blocks of 'cache' announced */
    int64_t kv_held;                 /* (unified KV pool, kv_pool.c) busy: cells granted,
                                      * its prompt at admission, then one per fed token */
};

struct st_engine {
    struct st_engine_pool *pool;     /* borrowed: the owner */
    int32_t index;                   /* also the scheduler's engine index */
    int32_t device;                  /* GPU id; -1 = the CPU / a sim engine without --gpus */
    /* The loaded model (engine thread only; model_view for the others). */
    struct st_runner *runner;        /* owned; NULL while no model is loaded */
    int32_t model;                   /* index into pool->models; -1 none */
    int32_t n_active;                /* slots the loaded model uses (its parallel) */
    int64_t idle_since_ns;           /* clock time the engine last had work (ttl) */
    int32_t progress_decile;         /* last load progress logged, 0..10 */
    atomic_int model_view;           /* 'model', readable from any thread */
    atomic_int loading_view;         /* the model being loaded now; -1 none */
    atomic_bool started_up;          /* the start-up (preload) load is done */
    int64_t *retry_ns;               /* [n_models] under pool->models_mu: a failed load
                                      * denies the model here until then; 0 = allowed */
    struct st_engine_slot *slots;    /* owned; n_slots */
    int32_t n_slots;                 /* the largest parallel of the models it may serve */

    /* step scratch, sized at creation */
    struct st_runner_seq *seqs;      /* n_slots + 1 */
    struct st_runner_row *rows;      /* n_slots + 1 */
    int32_t *decode_tokens;          /* n_slots: the one input token of each decode */
    struct st_runner_draft *drafts;  /* (MTP) n_slots: one draft call's requests */
    int32_t  mtp_max;                /* (MTP) drafts per slot the loaded runner makes; 0 off */
    int32_t  ngram_max;              /* (n-gram) drafts per slot and step at most; 0 off */
    struct st_spec_engine spec;      /* (drafts) what they cost, how many pay */

    pthread_t thread;
    bool      thread_started;
    pthread_mutex_t mu;              /* wake, views */
    pthread_cond_t  cv;
    bool wake;
    atomic_bool stop;

    struct st_slot_view *views;      /* n_slots; under mu */
    struct st_slot_op *slot_ops;     /* (POST /slots actions, slot_op.c) queued; under mu */
    pthread_cond_t slot_cv;          /* ... signalled (with mu) when one is done */
    atomic_llong held_tokens;        /* tokens in the KV of busy slots (kv_usage), each busy
                                      * slot's recurrent state and each of its state
                                      * checkpoints counted as state_tokens */
    atomic_llong state_tokens;       /* the loaded runner's state_tokens (0: none loaded) */
    atomic_int   state_ckpts;        /* ... and its state checkpoints per slot at most (0:
                                      * none, or not a recurrent model) */
    atomic_int   busy;               /* slots holding a request */
    atomic_llong pool_held;          /* (unified KV pool) st_kv_pool_used at the last views */
    atomic_llong pool_busy;          /* ... and st_kv_pool_busy */
    uint64_t prefix_tick;            /* (prefix reuse) +1 per slot freed: the LRU clock */
    /* (echo, prompt logprobs: prompt.c) scratch, allocated on first use */
    struct st_runner_score *scores;  /* ST_RUNNER_SCORE_ROWS: a scored chunk's rows */
    struct st_prompt_token *ptoks;   /* ST_ENGINE_PTOK_BATCH: one PROMPT event's tokens */
    /* (embeddings: embed.c) the hidden row of the step's embedding READ (at
     * most one READ per step), embd_cap floats; grown on demand */
    float   *embd;
    int32_t  embd_cap;
};

/* One configured model. 'cfg' and 'text' are set at creation (text: on
 * first use for a backend that opens a file) and read-only after; the
 * rest is under pool->models_mu. */
struct st_pool_model {
    struct st_model_config cfg;      /* owned copies of name, path, aliases */
    uint32_t engine_mask;            /* bit i: engine i may run it (pinning) */
    struct st_runner *text;          /* owned: an unloaded runner of this model serving
                                      * the text side (tokenize, template); under text_mu
                                      * until set */
    int32_t  n_loaded;               /* engines that have it loaded */
    int32_t  n_loading;              /* engines loading it now */
    bool     failed;                 /* the last load attempt failed */
    char     reason[256];            /* ... why */
    uint64_t loads, load_failures, unloads, ttl_unloads;
    struct st_histogram load_seconds;
};

struct st_engine_pool {
    struct st_pool_config cfg;       /* copy; its model/extra_models are NOT used: see models */
    struct st_sched *sched;          /* borrowed */
    const struct st_clock *clock;    /* borrowed */
    struct st_engine *engines;       /* owned; n_engines */
    int32_t n_engines;
    bool    started;
    atomic_bool closing;             /* st_engine_pool_free began: no more submits */

    pthread_mutex_t mu;              /* live list and stats */
    struct st_request *live;         /* engine-side requests not ended yet */
    uint64_t prompt_tokens, generated_tokens, cached_tokens;
    uint64_t copied_tokens;          /* (prefix reuse) cached tokens copied across slots */
    uint64_t mtp_drafted, mtp_accepted, mtp_steps;   /* (MTP) drafts verified, accepted;
                                                      * verify steps (slot-steps with drafts) */
    uint64_t ngram_drafted, ngram_accepted, ngram_steps;   /* (n-gram) the same */
    uint64_t drawn_tokens;           /* greedy tokens the backend drew (runner row 'drawn') */
    uint64_t spec_plain_steps;       /* steps that could draft and did not: it did not pay */
    double   read_seconds, gen_seconds;   /* llama-server's time totals (st_pool_stats) */
    uint64_t gen_steps, steps, step_slots;
    int64_t  seq_max;
    struct st_mtp_test mtp_test;     /* (MTP) tests only; zero = off */
    struct st_histogram ttft[ST_BAND_COUNT];
    struct st_histogram itl[ST_BAND_COUNT];

    struct st_pool_model *models;    /* owned; n_models (model 0 = cfg.model) */
    int32_t n_models;
    pthread_mutex_t text_mu;         /* creating a model's text runner */
    pthread_mutex_t models_mu;       /* model states, retry tables, swaps */
    uint64_t *swaps;                 /* [(n_models + 1) * n_models]: row from + 1, column to */
    struct st_kv_index *kv;          /* (KV events, kv_blocks.c) owned; NULL = off */
};

/* live.c: end a request that holds slot 'sl' (END event, scheduler finish,
 * slot freed). */
void st_engine_end_slot(struct st_engine *e, struct st_engine_slot *sl, enum st_finish finish,
                        enum st_status status, const char *error, enum st_outcome outcome);

/* live.c: end a request the engine side holds but no slot does (waiting,
 * shed, shutdown): emits END, forgets it, drops the engine's reference. */
void st_pool_end_unslotted(struct st_engine_pool *p, struct st_request *req,
                           enum st_finish finish, enum st_status status, const char *error);
void st_pool_forget(struct st_engine_pool *p, struct st_request *req);

/* request.c: emit a plain END event (usage from the request and
 * 'n_generated'). */
void st_request_emit_end(struct st_request *req, enum st_finish finish, enum st_status status,
                         const char *error, int64_t n_generated);
/* request.c: does the request want PROMPT events (echo, prompt logprobs,
 * prompt.c)? The alternatives a request with prompt logprobs has scored
 * per position (its prompt_top_logprobs within 0..ST_RUNNER_SCORE_TOP). */
bool st_engine_prompt_wanted(const struct st_request *req);
int32_t st_engine_prompt_top(const struct st_request *req);

/* runner_new.c: a runner of model 'model' for 'device', not loaded: the one
 * place that dispatches on the backend kind. st_pool_backend_built: this
 * build can make runners for backend k. */
bool st_pool_backend_built(enum st_backend_kind k);
enum st_status st_pool_runner_new(const struct st_engine_pool *p, int32_t model, int32_t device,
                                  struct st_runner **out, struct st_err *err);

/* models.c */
/* Copy and check cfg's models into p->models (p->cfg's engines must be
 * set); a sim model's text runner is made here. */
enum st_status st_pool_models_init(struct st_engine_pool *p, const struct st_pool_config *cfg,
                                   struct st_err *err);
void st_pool_models_fini(struct st_engine_pool *p);
/* The model's text runner (created on first use); ST_ERR_LOADING with the
 * reason when it cannot be made (the model is then marked failed). */
enum st_status st_pool_text(struct st_engine_pool *p, int32_t model, const struct st_runner **out,
                            struct st_err *err);
/* True (and *err set, ST_ERR_LOADING) when every engine that may run the
 * model is in its back-off after a failed load. Lifts back-offs that have
 * passed on the way. */
bool st_pool_model_blocked(struct st_engine_pool *p, int32_t model, struct st_err *err);
/* A load of 'model' failed on 'engine' (-1: on every engine, e.g. its
 * file could not be opened for the text side): mark it failed with
 * 'reason', deny it there for the back-off. Returns true when the model
 * is now blocked everywhere (the caller then fails its waiting requests). */
bool st_pool_model_failed(struct st_engine_pool *p, int32_t engine, int32_t model,
                          const char *reason);
/* End every request still waiting for 'model' with ST_ERR_LOADING and 'msg'. */
void st_pool_fail_waiting(struct st_engine_pool *p, int32_t model, const char *msg);
/* Load accounting (under models_mu inside). */
void st_pool_model_loading(struct st_engine_pool *p, int32_t model);
void st_pool_model_load_done(struct st_engine_pool *p, int32_t from, int32_t model, bool ok,
                             double seconds);
void st_pool_model_unloaded(struct st_engine_pool *p, int32_t model, bool ttl);
/* Lift the engine's back-offs that have passed. */
void st_pool_engine_lift(struct st_engine *e);
/* Earliest clock time the engine must look again without being woken
 * (a back-off ending); INT64_MAX for none. */
int64_t st_pool_engine_retry_deadline(struct st_engine *e);

/* stats.c: per-token accounting under the pool mutex. */
void st_pool_count_read(struct st_engine_pool *p, int64_t n);
/* One sampled token: 'generated' counts it as a completion token (end of
 * generation does not); 'drawn' counts it as picked by the backend's draw;
 * 'first' files 'seconds' as time to first token, else a generated token
 * files it as inter-token latency. */
void st_pool_count_token(struct st_engine_pool *p, enum st_band band, bool generated, bool drawn,
                         bool first, double seconds);
/* A first token's read time (from its read's first step), and a later
 * token's time since the one before (llama-server's time totals). */
void st_pool_count_times(struct st_engine_pool *p, bool first, double seconds);
/* One forward pass of n_slots slots, the longest holding seq tokens. */
void st_pool_count_step(struct st_engine_pool *p, int32_t n_slots, int64_t seq);
/* stats.c: the engine's slot views (/slots, kv_usage) from its slots, under
 * its mu. */
void st_engine_update_views(struct st_engine *e);

#endif /* STRATA_ENGINE_POOL_H */
