/* sched.h -- the scheduler: who gets a free slot, who holds the lines,
 * when a read gives way (../docs/PRIORITY.md, ../docs/BATCHING.md).
 *
 * Pure logic over a clock it is handed: no sleeps, no threads of its own.
 * All state sits behind one mutex inside struct st_sched; every function
 * here takes it for the decision only. Engines call it between steps,
 * never while a forward pass runs; the HTTP side calls submit and cancel.
 *
 * A job is the scheduler's view of one request. It is embedded in the
 * owner's request (intrusive), so the scheduler never allocates per job and
 * never owns one: the owner keeps it alive from st_sched_submit() until
 * the job leaves the scheduler (st_sched_finish(), a successful
 * st_sched_cancel(), or being shed/rejected by st_sched_submit()).
 */
#ifndef STRATA_SCHED_H
#define STRATA_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/clock.h"
#include "strata/compiler.h"
#include "strata/err.h"
#include "strata/str.h"

/* ---- priority intake (docs/design/SCHEDULER.md section 2) ------------------------ */

enum st_band {
    ST_BAND_INTERACTIVE,   /* P >= 50 */
    ST_BAND_NORMAL,
    ST_BAND_BATCH,         /* P <= -50 */
    ST_BAND_COUNT
};

enum st_priority_order {
    ST_PRIORITY_HIGH_FIRST,   /* llama-swap / SGLang: a higher number goes first */
    ST_PRIORITY_LOW_FIRST,    /* vLLM / LiteLLM: a lower number goes first */
};

/* "interactive", "normal", "batch"; static storage. */
const char *st_band_name(enum st_band b);
enum st_band st_band_of(int64_t effective_priority);

/* X-LlamaSwap-Priority: a signed integer or an alias (case-insensitive,
 * blanks trimmed). False (counts as absent) for anything unparseable or
 * outside int32. */
bool st_priority_parse_header(struct st_str value, int32_t *out);

/* The same, also telling whether the value was an alias ('is_alias' may be
 * NULL): st_priority_inputs.has_alias needs it, as low-first order never
 * negates an alias. */
bool st_priority_parse_header_ex(struct st_str value, int32_t *out, bool *is_alias);

/* "high-first" / "low-first" (case-insensitive); false for anything else. */
bool st_priority_order_parse(const char *name, enum st_priority_order *out);
const char *st_priority_order_name(enum st_priority_order o);   /* static storage */

/* Body "priority": 'is_number' says the JSON value was a number. True only
 * for an integral value inside int32 (5, -100, 5.0). */
bool st_priority_from_json(bool is_number, double value, int32_t *out);

/* Everything that decides one request's effective priority. */
struct st_priority_inputs {
    bool    has_body;       int32_t body;          /* body "priority" */
    bool    has_header;     int32_t header;        /* X-LlamaSwap-Priority */
    bool    has_alias;                             /* header was an alias (never negated) */
    bool    has_key_default; int32_t key_default;  /* API key's default_priority */
    bool    has_key_max;    int32_t key_max;       /* API key's max_priority */
    int32_t model_priority;                        /* the model's configured priority */
    enum st_priority_order order;
};

/* The effective priority P (section 2: body, else header, else key default,
 * else 0; low-first negates numeric values; capped by key_max; plus the
 * model's priority). Saturates at the int32 range.
 * Low-first negates only what the client sent as a number (body, numeric
 * header); aliases, the key's default_priority and max_priority and the
 * model's priority are operator values in Strata's own high-first terms
 * and are never negated. Thread: any (pure). */
int32_t st_priority_resolve(const struct st_priority_inputs *in);

/* ---- configuration -------------------------------------------------- */

enum st_sched_policy {
    ST_SCHED_SERIAL,   /* score = P + affinity + aging (default) */
    ST_SCHED_FIFO,     /* score = P; then arrival */
};

struct st_sched_config {
    enum st_sched_policy policy;
    double  aging_divisor_s;      /* seconds of waiting per point; 0 = no aging (default 60) */
    int32_t swap_affinity_bonus;  /* 0..99 (default 10); outside is ST_ERR_BAD_CONFIG */
    int64_t give_way_tokens;      /* read boundary for give-way checks (default 16384) */
    int32_t yields_max;           /* give-ways per request at most (default 4) */
    int32_t max_queue;            /* waiting requests at most; 0 = unlimited */
    bool    batch;                /* --batch: slots + lines; else one request per engine */
    int32_t activity_capacity;    /* records kept for /api/activity (default 1000; 0 = none) */
    bool    log_dispatch;         /* one INFO log line per dispatch (default true) */
};

/* Defaults above. */
void st_sched_config_defaults(struct st_sched_config *c);

/* "serial" / "fifo" (case-insensitive); false for anything else. */
bool st_sched_policy_parse(const char *name, enum st_sched_policy *out);
const char *st_sched_policy_name(enum st_sched_policy p);   /* static storage */

/* ---- jobs ------------------------------------------------------------ */

enum st_job_state {
    ST_JOB_NEW,        /* not submitted yet */
    ST_JOB_WAITING,    /* in the queue, waiting for a slot */
    ST_JOB_ADMITTED,   /* holds a slot, prompt left to read, not holding the lines */
    ST_JOB_READING,    /* holds a slot and the lines */
    ST_JOB_PARKED,     /* gave way: holds a slot and its KV, waits for the lines */
    ST_JOB_DECODING,   /* prompt read; generating (never paused) */
    ST_JOB_DONE,       /* left the scheduler */
};

enum st_outcome {
    ST_OUTCOME_COMPLETED,
    ST_OUTCOME_CANCELLED,   /* client gone */
    ST_OUTCOME_REJECTED,    /* 429: queue full or shed */
    ST_OUTCOME_FAILED,
    ST_OUTCOME_COUNT
};

const char *st_outcome_name(enum st_outcome o);   /* "completed" ... */
const char *st_job_state_name(enum st_job_state s); /* "waiting", "reading" ... */

/* Scheduler-private links of a job while it waits for a slot (intrusive:
 * the scheduler never allocates per job). Nobody else touches them. */
struct st_sched_node {
    struct st_sched_node *left;    /* AVL tree child, worse-ranked side */
    struct st_sched_node *right;   /* better-ranked side */
    int32_t height;                /* AVL height, 1 for a leaf */
};

struct st_sched_links {
    struct st_sched_node by_score;    /* its model's tree, ordered by (key, seq) */
    struct st_sched_node by_prio;     /* its model's tree, ordered by (priority, seq): the
                                       * pick without aging, for the reorder counters */
    struct st_sched_job *band_prev;   /* its band's arrival-ordered list (oldest wait) */
    struct st_sched_job *band_next;
    double key;                       /* serial: P - arrival_s / agingDivisor; fifo: P */
};

struct st_sched_job {
    /* Set by the submitter before st_sched_submit(); not changed after. */
    int32_t priority;            /* effective P (st_priority_resolve) */
    int32_t model;               /* index of the model it needs */
    int64_t prompt_tokens;       /* length of its read, tokens (>= 1) */
    char    request_id[48];      /* the response's x-request-id */

    /* Owned by the scheduler: read them only under its rules (the engine
     * that holds the job's slot may read engine/slot/state). */
    enum st_job_state state;
    uint64_t seq;                /* arrival number: breaks equal scores */
    int64_t  arrival_ns;         /* clock time of submit */
    int64_t  dispatch_ns;        /* clock time a slot was granted */
    double   dispatch_score;     /* the score it won its slot with */
    int32_t  engine;             /* -1 until admitted */
    int32_t  slot;               /* -1 until admitted */
    int32_t  yields;             /* give-ways so far */
    uint64_t after_epoch;        /* does not outrank anyone for the lines before this epoch */
    int64_t  tokens_read;        /* prompt tokens read so far (engine reports) */
    int64_t  next_boundary;      /* tokens_read at which give-way is next checked */
    size_t   heap_index;         /* unused (the queue links live in 'links') */
    uint64_t activity_id;        /* its record in the activity ring; 0 = none */
    bool     swapped;            /* its dispatch made the engine swap models (or load
                                  * its first): the engine loads job->model first */
    struct st_sched_links links; /* private to the scheduler */
};

/* ---- life cycle ------------------------------------------------------ */

struct st_sched;

/* Returns owned; free with st_sched_free(). 'clock' is borrowed and must
 * outlive the scheduler. ST_ERR_BAD_CONFIG for values out of range. */
ST_MUST_CHECK
enum st_status st_sched_new(const struct st_sched_config *cfg, const struct st_clock *clock,
                            struct st_sched **out, struct st_err *err);
void st_sched_free(struct st_sched *s);   /* NULL is a no-op */

/* Called (outside the scheduler's mutex) after anything that may give an
 * engine work: a submit, a cancel, a finish. Engines use it to wake up. */
typedef void st_sched_notify_fn(void *ctx);
void st_sched_set_notify(struct st_sched *s, st_sched_notify_fn *fn, void *ctx);

/* Register an engine with 'n_slots' slots that currently has 'model'
 * loaded (-1: none). Returns its index (0, 1, ...). Call before traffic.
 * Returns -1 when n_slots is outside 1..ST_SCHED_MAX_SLOTS or model is
 * outside -1..ST_SCHED_MAX_MODELS-1. Thread: any. */
int32_t st_sched_add_engine(struct st_sched *s, int32_t n_slots, int32_t model);
#define ST_SCHED_MAX_SLOTS  4096
#define ST_SCHED_MAX_MODELS 1024   /* job->model and engine models are 0..this-1 */

/* Whether 'engine' may swap models (take a job for another model when all
 * its slots are free). Default true; an engine that cannot load another
 * model sets false and is then only given jobs for its loaded model. */
void st_sched_engine_set_swap(struct st_sched *s, int32_t engine, bool allow);

/* ---- the HTTP side --------------------------------------------------- */

/* Queue 'job'. ST_ERR_QUEUE_FULL (job not queued, state DONE, outcome
 * rejected) when max_queue is reached and the job does not outrank the
 * lowest-scored waiting job. When it does, that job is removed instead and
 * returned in *shed (the caller answers it 429); otherwise *shed = NULL.
 * 'shed' may be NULL: then nothing is shed and a full queue rejects.
 * ST_ERR_INVALID (not queued, not counted) for model outside
 * 0..ST_SCHED_MAX_MODELS-1 or prompt_tokens < 1. Thread: any. */
ST_MUST_CHECK
enum st_status st_sched_submit(struct st_sched *s, struct st_sched_job *job,
                               struct st_sched_job **shed);

/* Would a job of 'priority' submitted now be rejected (max_queue reached
 * and it outranks no waiting job)? When so it is counted as submitted
 * and rejected (and shed), exactly as st_sched_submit would, and true is
 * returned: the caller answers 429 before it spends anything on the
 * request (tokenizing its prompt). A later submit may still be rejected:
 * the queue can fill between the two. Thread: any. */
bool st_sched_refuse_if_full(struct st_sched *s, int32_t priority);

/* Client gone. If the job is still waiting for a slot it leaves the queue
 * (outcome cancelled) and true is returned: the caller ends it. Otherwise
 * false: its engine sees the cancel flag at the next step and calls
 * st_sched_finish(). Thread: any. */
bool st_sched_cancel(struct st_sched *s, struct st_sched_job *job);

/* ---- the engine side (Thread: that engine's thread) ------------------ */

/* A free slot of 'engine' goes to the best waiting job it can serve: the
 * job comes back with engine/slot set and state ADMITTED; NULL when no slot
 * is free or nobody waits. Call repeatedly until NULL at each step start.
 * 'slot' must be a slot index the engine knows is free. */
struct st_sched_job *st_sched_admit(struct st_sched *s, int32_t engine, int32_t slot);

/* (added, prefix reuse) Which free slot of the engine a job should take:
 * returns a slot index, or 'offered' for no preference. Called with the
 * scheduler's mutex held, on the engine's thread, once the job is picked
 * and before it is granted: it must be quick, must not call into the
 * scheduler and must take no lock the scheduler's notify callback takes. */
typedef int32_t st_sched_slot_fn(void *ctx, const struct st_sched_job *job, int32_t offered);
/* (added, the unified KV pool) What a st_sched_slot_fn returns when the
 * job cannot start on this engine now (no room for its prompt beside the
 * busy slots): it is not granted and stays waiting, first in line as it
 * was, and st_sched_admit_to returns NULL. The engine asks again at its
 * next step; a slot that frees makes room, so the wait ends. */
#define ST_SCHED_SLOT_WAIT (-2)

/* st_sched_admit, except that 'choose' (may be NULL) names the slot the
 * picked job gets: the engine puts a request where its prompt's prefix is
 * cached. 'offered' must be free; a choice that is not a free slot of the
 * engine is ignored (warning) and 'offered' is used. The job comes back
 * with job->slot = the slot it was granted (the activity record and the
 * dispatch log line show that one). */
struct st_sched_job *st_sched_admit_to(struct st_sched *s, int32_t engine, int32_t offered,
                                       st_sched_slot_fn *choose, void *ctx);

/* Who reads the next chunk on 'engine': the current holder of the lines,
 * or, if none, the best slot-holder with prompt left (after_epoch rules).
 * At a give-way boundary of the holder this decides give-way (section 4.3)
 * and may return another job (the old holder is then PARKED). NULL: no
 * prompt to read on this engine. If the best candidate is a waiting job
 * that could take a free slot now (it arrived after this step's admits),
 * the holder keeps the lines for one more chunk and the check stays due
 * until the next step's admit has put that job in a slot. */
struct st_sched_job *st_sched_lines(struct st_sched *s, int32_t engine);

/* The holder read 'n' more prompt tokens. When its prompt is fully read,
 * it becomes DECODING and the lines are free. Progress of a slot-holder
 * that does not hold the lines is accepted too (logged at debug level);
 * for a job without prompt to read it is ignored with a warning. */
void st_sched_read_progress(struct st_sched *s, struct st_sched_job *job, int64_t n);

/* Timing for the activity record, reported when the job ends. */
struct st_job_report {
    int64_t first_token_ns;   /* clock time of its first token; 0 = none */
    int64_t n_generated;      /* completion tokens */
    int64_t mtp_drafted;      /* MTP draft tokens proposed (0 without MTP) */
    int64_t mtp_accepted;     /* ... and accepted */
};

/* The job left its slot (finished, cancelled or failed); the slot is free.
 * 'report' may be NULL. */
void st_sched_finish(struct st_sched *s, struct st_sched_job *job, enum st_outcome outcome,
                     const struct st_job_report *report);

/* Model swapping (multi-model): the engine now has 'model' loaded. */
void st_sched_engine_set_model(struct st_sched *s, int32_t engine, int32_t model);

/* ---- several models (added; ../docs/MODELS.md) ----------------------- */

/* Whether 'engine' may be given jobs of 'model' (default: every model).
 * The pool denies a model pinned to other devices, and for its back-off a
 * model that failed to load on this engine. A denied model's jobs wait for
 * another engine; the engine keeps the slots it already gave. Thread: any. */
void st_sched_engine_allow_model(struct st_sched *s, int32_t engine, int32_t model, bool allow);

/* How many of the engine's slots (registered with st_sched_add_engine) the
 * loaded model may fill: 1..n_slots (clamped). A model with parallel 2 on
 * an engine sized for 4 uses 2; admit then offers no more than that. The
 * engine calls it right after a swap, before it asks for more jobs.
 * Thread: any. */
void st_sched_engine_set_slots(struct st_sched *s, int32_t engine, int32_t n_usable);

/* Take up to 'max' jobs still waiting for 'model' out of the queue, best
 * first, into out[] (their state DONE, counted under 'outcome'); returns
 * how many. The caller ends each (it owns them again). Used when a model
 * failed to load everywhere it may run: its waiting requests get the
 * reason instead of waiting. Call until it returns 0. Thread: any. */
size_t st_sched_drain_model(struct st_sched *s, int32_t model, enum st_outcome outcome,
                            struct st_sched_job **out, size_t max);

/* The engine finished loading the model for 'job' (job->swapped): record
 * how long it took, ms, in the job's activity record. Thread: any. */
void st_sched_job_loaded(struct st_sched *s, const struct st_sched_job *job, double load_ms);

/* ---- observability --------------------------------------------------- */

struct st_sched_band_stats {
    int64_t  queue_depth;          /* waiting for a slot */
    double   oldest_wait_s;        /* longest current wait */
    uint64_t dispatched;           /* given a slot */
    uint64_t reorders_aging;       /* dispatches the aging term changed */
    uint64_t reorders_affinity;    /* dispatches the affinity term changed */
    uint64_t give_ways;            /* reads of this band that gave way */
    uint64_t outcomes[ST_OUTCOME_COUNT];   /* every job that left, dispatched or not */
    /* (added) so the counters add up:
     *   submitted  = sum(outcomes) + queue_depth + running
     *   dispatched = sum(outcomes) - sum(undispatched) + running */
    uint64_t submitted;            /* st_sched_submit calls (queued or rejected) */
    int64_t  running;              /* holding a slot now */
    uint64_t undispatched[ST_OUTCOME_COUNT];   /* left without a slot: rejected, shed,
                                                * cancelled or failed while waiting */
};

struct st_sched_stats {
    struct st_sched_band_stats band[ST_BAND_COUNT];
    int64_t slots_total;
    int64_t slots_idle, slots_reading, slots_parked, slots_decoding, slots_admitted;
    int64_t waiting;               /* all bands */
    int64_t running;               /* jobs holding a slot */
    uint64_t shed;                 /* jobs answered 429 */
};

/* A consistent snapshot, O(bands + engines): cheap enough to scrape every 50 ms. */
void st_sched_stats(struct st_sched *s, struct st_sched_stats *out);

/* Requests waiting for each model 0..n-1 into out[] (0 for a model nobody
 * has queued for yet), in one lock: O(n), whatever the queue length. The
 * router's model-residency gauge lists the models with waiting requests. */
void st_sched_models_waiting(struct st_sched *s, int64_t *out, int32_t n);

/* One record per dispatch (docs/design/SCHEDULER.md section 8). */
struct st_activity {
    uint64_t id;
    char     request_id[48];
    int32_t  model;
    int32_t  engine;
    int32_t  slot;
    int32_t  priority;             /* serial_priority */
    enum st_band band;             /* serial_band */
    double   score;                /* serial_score */
    double   queue_wait_ms;        /* serial_queue_wait_ms */
    int64_t  prompt_tokens;
    int32_t  give_ways;
    bool     swapped;              /* this dispatch made the engine change (or load) its model */
    int32_t  swap_from;            /* the engine's model before the dispatch (-1: none) */
    double   load_ms;              /* how long the load took, ms; 0 without a swap, or while
                                    * the engine is still loading */
    bool     finished;
    enum st_outcome outcome;       /* valid when finished */
    double   ttft_ms;              /* -1 until known */
    double   total_ms;             /* -1 until finished */
    int64_t  n_generated;
    int64_t  mtp_drafted, mtp_accepted;
    int64_t  dispatched_unix_ms;   /* wall clock, for humans */
};

/* Copy up to 'max' most recent records, oldest first, newest last; returns
 * how many. */
size_t st_sched_activity(struct st_sched *s, struct st_activity *out, size_t max);

/* Called with each dispatch's record once it is finished, for a caller
 * that keeps them beyond the ring (the server's --state-dir). It runs under
 * the scheduler's lock: copy the record and return, taking no lock but a
 * leaf one. NULL fn: none. Thread: any. */
typedef void (*st_activity_hook)(void *ctx, const struct st_activity *a);
void st_sched_set_activity_hook(struct st_sched *s, st_activity_hook fn, void *ctx);
/* Number the records after 'last_id' (the last of a kept history), so ids
 * stay unique across restarts. Only before the first dispatch (the ring's
 * places follow the ids); later it is ignored and returns false. */
bool st_sched_activity_continue(struct st_sched *s, uint64_t last_id);

#endif /* STRATA_SCHED_H */
