/* internal.h -- the engine module's private types, shared by its files.
 *
 *   runner.h     the interface an engine computes with (sim now, cpu/cuda later)
 *   runner_sim.c the simulated runner (time model, docs/SIM.md)
 *   request.c    st_request life cycle, generation-param defaults, names
 *   sample.c     the sampler (greedy, temperature, top-k/p, min-p, logprobs)
 *   step.c       one engine step: admit, lines, batch, forward, sample, emit
 *   pool.c       pool life cycle, threads, submit/cancel, shutdown
 *   text.c       the model's text side for the server, prepare
 *   stats.c      histograms, pool stats, slot views
 *
 * Locking: each engine's 'mu' guards its wake flag and its slot views; the
 * pool's 'mu' guards the live-request list and the counters. Both are
 * leaf locks: nothing else is taken while either is held, so the
 * scheduler (whose notify callback takes the engines' 'mu') is always
 * called with none of ours held. The engine thread holds no lock while
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
};

struct st_engine {
    struct st_engine_pool *pool;     /* borrowed: the owner */
    int32_t index;                   /* also the scheduler's engine index */
    struct st_runner *runner;        /* owned */
    struct st_engine_slot *slots;    /* owned; n_slots */
    int32_t n_slots;

    /* step scratch, sized at creation */
    struct st_runner_seq *seqs;      /* n_slots + 1 */
    struct st_runner_row *rows;      /* n_slots + 1 */
    int32_t *decode_tokens;          /* n_slots: the one input token of each decode */

    pthread_t thread;
    bool      thread_started;
    pthread_mutex_t mu;              /* wake, views */
    pthread_cond_t  cv;
    bool wake;
    atomic_bool stop;
    atomic_bool loaded;
    atomic_bool load_failed;

    struct st_slot_view *views;      /* n_slots; under mu */
    atomic_llong held_tokens;        /* tokens in the KV of busy slots (kv_usage) */
    atomic_int   busy;               /* slots holding a request */
};

struct st_engine_pool {
    struct st_pool_config cfg;       /* copy; model.name/path owned by the pool */
    struct st_sched *sched;          /* borrowed */
    const struct st_clock *clock;    /* borrowed */
    struct st_engine *engines;       /* owned; n_engines */
    int32_t n_engines;
    bool    started;
    atomic_bool closing;             /* st_engine_pool_free began: no more submits */

    pthread_mutex_t mu;              /* live list and stats */
    struct st_request *live;         /* engine-side requests not ended yet */
    uint64_t prompt_tokens, generated_tokens, cached_tokens;
    struct st_histogram ttft[ST_BAND_COUNT];
    struct st_histogram itl[ST_BAND_COUNT];
};

/* step.c */
bool st_engine_step(struct st_engine *e);
enum st_status st_engine_load(struct st_engine *e);
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

/* stats.c: per-token accounting under the pool mutex. */
void st_pool_count_read(struct st_engine_pool *p, int64_t n);
/* One sampled token: 'generated' counts it as a completion token (end of
 * generation does not); 'first' files 'seconds' as time to first token,
 * else a generated token files it as inter-token latency. */
void st_pool_count_token(struct st_engine_pool *p, enum st_band band, bool generated, bool first,
                         double seconds);

#endif /* STRATA_ENGINE_INTERNAL_H */
