/* internal.h -- the engine module's private types, shared by its files.
 *
 *   runner.h     the interface an engine computes with (sim now, cpu/cuda later)
 *   runner_sim.c the simulated runner (time model, docs/SIM.md)
 *   request.c    st_request life cycle, generation-param defaults, names
 *   models.c     several models: per-model state, back-off after a failed
 *                load, the status and swap counters (docs/MODELS.md)
 *   swap.c       an engine's model: start-up load, swap, ttl unload
 *   sample.c     the sampler (greedy, temperature, top-k/p, min-p, logprobs)
 *   step.c       one engine step: admit, lines, batch, forward, sample, emit
 *   mtp.c        --batch-mtp: draft lengths per slot, the draft call, MTP counters
 *   prefix.c     prefix reuse: which free slot a request takes, what its KV keeps
 *   pool.c       pool life cycle, threads, submit/cancel, shutdown
 *   text.c       the model's text side for the server, prepare
 *   stats.c      histograms, pool stats, slot views
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
#ifndef STRATA_ENGINE_INTERNAL_H
#define STRATA_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner.h"
#include "strata/detok.h"
#include "strata/engine.h"
#include "strata/stop.h"

/* ---- sampling (sample.c) -------------------------------------------- */

struct st_sample_cand {
    int32_t id;
    float   logit;
    float   p;
};

/* Per-slot sampler. The candidate buffer (n_vocab entries) is allocated on
 * first use and kept across requests. */
struct st_sampler {
    float    temperature, top_p, min_p;
    int32_t  top_k;
    bool     logprobs;
    int32_t  top_logprobs;
    uint64_t rng;                    /* splitmix64 state */
    struct st_sample_cand *cands;    /* owned; cap entries */
    size_t   cap;
};

struct st_sample_result {
    int32_t token;
    float   logprob;                 /* log-softmax of the raw logits (before sampling filters) */
    int32_t n_top;
    struct st_top_logprob top[ST_MAX_TOP_LOGPROBS];   /* bytes left empty: the engine fills them */
};

void st_sampler_init(struct st_sampler *s);
void st_sampler_fini(struct st_sampler *s);
/* Set the parameters of a new request and seed its RNG (params->seed when
 * has_seed, else a fresh random seed). */
void st_sampler_reset(struct st_sampler *s, const struct st_gen_params *params);
/* Pick a token from logits[n_vocab]; 'ban' (n_ban ids) are never picked
 * (ignore_eos masks end of generation this way). ST_ERR_NOMEM when the
 * candidate buffer cannot be allocated; ST_ERR_INVALID when every token is
 * banned or n_vocab < 1. */
enum st_status st_sampler_sample(struct st_sampler *s, const float *logits, int32_t n_vocab,
                                 const int32_t *ban, size_t n_ban,
                                 struct st_sample_result *res);
/* A uniform double in [0, 1) from the sampler's RNG (tests). */
double st_sampler_uniform(struct st_sampler *s);

/* ---- metrics (stats.c) ---------------------------------------------- */

void st_histogram_init(struct st_histogram *h);
void st_histogram_add(struct st_histogram *h, double seconds);
/* Buckets for model loads: 0.1 s .. 600 s. */
void st_histogram_init_load(struct st_histogram *h);

/* ---- MTP (mtp.c) ----------------------------------------------------- */

/* A decoding slot's drafts and its recent acceptance. */
struct st_mtp_slot {
    int32_t tokens[1 + ST_RUNNER_MAX_DRAFT];   /* [last token, d_1 .. d_k]: the verify input */
    int32_t n_draft;             /* k for this step (0: a plain one-token decode) */
    double  hits, tries;         /* decayed accepted / verified draft positions */
    int32_t idle;                /* steps without drafting since the last probe */
    int32_t probe_every;         /* steps between probes while drafts do not pay */
    bool    probing;             /* this step's one draft is a probe */
    int64_t drafted, accepted;   /* the request's totals (activity record) */
};

/* Test hook of a pool (tests only, set before the first step): draft the
 * full --mtp-draft every step, and/or rewrite the drafts after the runner
 * made them (force rejections). */
struct st_mtp_test {
    bool  fixed_length;
    void (*corrupt)(void *ctx, int32_t slot, int32_t *drafts, int32_t n);
    void *ctx;
};

/* ---- prefix reuse (prefix.c) ----------------------------------------- */

/* The token ids a slot's KV holds, kept after its request ends so the next
 * request that starts with them reads only the rest (docs/BATCHING.md
 * "Prefix reuse"). While a request runs, ids[0..n_ids) are its prompt and
 * the tokens it sampled so far, each at the KV position it is (or will be)
 * fed at; when the slot frees, n_kv = what of that the KV really holds
 * (min(n_ids, the slot's n_past)). */
struct st_prefix_cache {
    int32_t *ids;        /* owned (malloc); cap entries */
    int64_t  cap;
    int64_t  n_ids;      /* ids known, KV position order */
    int64_t  n_kv;       /* free slot: ids[0..n_kv) are in the KV; busy slot: 0 */
    uint64_t stamp;      /* the engine's prefix_tick when the slot was last freed (LRU) */
};

/* ---- engines and the pool ------------------------------------------- */

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
    struct st_mtp_slot mtp;          /* (MTP) reset per request */
    struct st_prefix_cache cache;    /* (prefix reuse) what its KV holds; kept when it frees */
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

    pthread_t thread;
    bool      thread_started;
    pthread_mutex_t mu;              /* wake, views */
    pthread_cond_t  cv;
    bool wake;
    atomic_bool stop;

    struct st_slot_view *views;      /* n_slots; under mu */
    atomic_llong held_tokens;        /* tokens in the KV of busy slots (kv_usage) */
    atomic_int   busy;               /* slots holding a request */
    uint64_t prefix_tick;            /* (prefix reuse) +1 per slot freed: the LRU clock */
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
    uint64_t mtp_drafted, mtp_accepted, mtp_steps;   /* (MTP) drafts verified, accepted;
                                                      * verify steps (slot-steps with drafts) */
    struct st_mtp_test mtp_test;     /* (MTP) tests only; zero = off */
    struct st_histogram ttft[ST_BAND_COUNT];
    struct st_histogram itl[ST_BAND_COUNT];

    struct st_pool_model *models;    /* owned; n_models (model 0 = cfg.model) */
    int32_t n_models;
    pthread_mutex_t text_mu;         /* creating a model's text runner */
    pthread_mutex_t models_mu;       /* model states, retry tables, swaps */
    uint64_t *swaps;                 /* [(n_models + 1) * n_models]: row from + 1, column to */
};

/* step.c */
bool st_engine_step(struct st_engine *e);
/* End a request that holds slot 'sl' (END event, scheduler finish, slot freed). */
void st_engine_end_slot(struct st_engine *e, struct st_engine_slot *sl, enum st_finish finish,
                        enum st_status status, const char *error, enum st_outcome outcome);
void st_engine_update_views(struct st_engine *e);

/* pool.c: end a request the engine side holds but no slot does (waiting,
 * shed, shutdown): emits END, forgets it, drops the engine's reference. */
void st_pool_end_unslotted(struct st_engine_pool *p, struct st_request *req,
                           enum st_finish finish, enum st_status status, const char *error);
void st_pool_forget(struct st_engine_pool *p, struct st_request *req);
/* Emit a plain END event (usage from the request and 'n_generated'). */
void st_request_emit_end(struct st_request *req, enum st_finish finish, enum st_status status,
                         const char *error, int64_t n_generated);

/* pool.c: a runner of model 'model' for 'device', not loaded: the one
 * place that dispatches on the backend kind. */
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

/* mtp.c (engine thread) */
/* A new request in the slot: no drafts, the prior acceptance estimate. */
void st_engine_mtp_reset(struct st_engine_slot *sl);
/* Before the batch is built: every decoding slot that should draft gets
 * sl->mtp.n_draft drafts in sl->mtp.tokens[1..] (0 when it should not, or
 * when drafting failed: a warning, the step goes on without drafts). */
void st_engine_mtp_draft(struct st_engine *e);
/* After a verify: 'drafted' drafts were checked, 'accepted' kept: the
 * slot's estimate and the pool's counters (the slot's own totals, which go
 * to the activity record, are counted by step.c as it goes). */
void st_engine_mtp_learn(struct st_engine *e, struct st_engine_slot *sl, int32_t drafted,
                         int32_t accepted);
/* After a model load: sets e->mtp_max; with --batch-mtp says (WARN) when the
 * model has no MTP layer. */
void st_engine_mtp_loaded(struct st_engine *e);
/* Install (a copy of) 'hook' on the pool; NULL removes it. Tests only. */
void st_engine_pool_mtp_test(struct st_engine_pool *p, const struct st_mtp_test *hook);
/* cli_bench_mtp.c: `strata bench --mtp` (argv as st_cli_bench gets it). */
int st_cli_bench_mtp(int argc, char **argv);
/* cli_bench.c, shared by both bench commands: s as a whole decimal number
 * in [lo, hi] into *out (false otherwise, *out untouched); the mean and
 * sample standard deviation (0 for one value) of v[0, n), n >= 1. */
bool st_cli_int_arg(const char *s, long lo, long hi, int32_t *out);
/* strata bench --backend: "cpu" or "cuda" (static strings); false otherwise. */
bool st_cli_backend_arg(const char *s, const char **out);
/* A bench that could not open its backend (no GPU, not built in): 2, else 1. */
int st_cli_bench_fail_status(enum st_status rc);
void st_cli_mean_sd(const double *v, int n, double *avg, double *sd);

/* prefix.c (engine thread): prefix reuse, docs/BATCHING.md "Prefix reuse". */
/* st_sched_admit with slot 'offered' free: the job picked goes to the free
 * slot whose cache shares the longest prefix with its prompt (ties: an
 * empty slot, then the least recently freed, then 'offered'). */
struct st_sched_job *st_engine_prefix_admit(struct st_engine *e, int32_t offered);
/* A request enters slot 'sl': keep the longest common prefix of the slot's
 * cache and its prompt (at most n_tokens - 1: the last prompt token is
 * always read, its row gives the first token), cut the KV there, set
 * sl->n_past and req->n_cached to it, and report those tokens to the
 * scheduler as read and to the pool's cached_tokens. */
void st_engine_prefix_bind(struct st_engine *e, struct st_engine_slot *sl,
                           struct st_request *req);
/* The token just sampled for sl's request goes into the KV at sl->n_past
 * when it is fed next: remember it there. */
void st_engine_prefix_push(struct st_engine_slot *sl, int32_t token);
/* The slot frees: keep what its KV holds (cut the runner's KV to it), or
 * nothing after a failure (a failed forward may have left it half-written). */
void st_engine_prefix_release(struct st_engine *e, struct st_engine_slot *sl,
                              enum st_outcome outcome);
/* The runner goes (unload, swap): every slot's cache is void. */
void st_engine_prefix_forget(struct st_engine *e);
/* Frees the slot's ids (engine teardown). */
void st_engine_prefix_fini(struct st_engine_slot *sl);

/* swap.c (engine thread) */
/* Load the start-up model (first preload model it may serve); sets
 * started_up. Returns true when it loaded something (or tried). */
bool st_engine_start_up(struct st_engine *e);
/* The scheduler gave 'req' (job->swapped) to this engine: unload, load
 * req's model. False when the load failed: 'req' has been ended. */
bool st_engine_swap(struct st_engine *e, struct st_request *req);
/* Unload the model when the engine has been idle for the model's ttl.
 * Returns true when it unloaded. */
bool st_engine_ttl_check(struct st_engine *e);
/* Next clock time a ttl or back-off needs the engine; INT64_MAX none. */
int64_t st_engine_next_deadline(struct st_engine *e);
/* Unload whatever is loaded (shutdown; not counted). */
void st_engine_unload_quiet(struct st_engine *e);

/* stats.c: per-token accounting under the pool mutex. */
void st_pool_count_read(struct st_engine_pool *p, int64_t n);
/* One sampled token: 'generated' counts it as a completion token (end of
 * generation does not); 'first' files 'seconds' as time to first token,
 * else a generated token files it as inter-token latency. */
void st_pool_count_token(struct st_engine_pool *p, enum st_band band, bool generated, bool first,
                         double seconds);

#endif /* STRATA_ENGINE_INTERNAL_H */
