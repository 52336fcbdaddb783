/* internal.h -- st_sched's private state and cross-file API.
 *
 * Layout of the module:
 *   sched.c   life cycle, submit/cancel/admit/finish, the mutex
 *   tree.c    an intrusive AVL tree (no allocation; O(log n) insert/remove/min/max)
 *   queue.c   the waiting queue: per-model trees, per-band arrival lists
 *   score.c   keys and scores
 *   pick.c    the pick for one engine (with the reorder picks)
 *   state.c   job state transitions and slot release, with their counters
 *   lines.c   the control lines, give-way, read progress
 *   stats.c   counters, the stats snapshot, the activity ring, the dispatch log line
 *   intake.c  priority intake (header, body, resolve), bands and names
 *   models.c  several models: per-engine denied models and usable slots,
 *             draining a model that failed to load, load times in activity
 *   check.c   the invariants every part keeps (tests)
 *
 * Calls point one way: intake, tree, score, state and stats call no other
 * file of the module; queue calls score; models calls queue and state;
 * pick calls queue, score and models; lines and sched sit on top; check
 * reads them all.
 *
 * Ordering. A waiting job's rank is its key, then its arrival number: a
 * larger key ranks better, and for equal keys the smaller seq does. Under
 * serial with aging the key is P - arrival_s / agingDivisor, and
 *   score(now) = key + now_s / agingDivisor + affinity,
 * so the key orders waiting jobs of one model the same way at every 'now';
 * only the affinity (per engine, per model) differs, hence one tree per
 * model and a comparison of tree tops plus the engine's bonus.
 *
 * Every function here expects the caller to hold s->mu (unless it says
 * otherwise).
 */
#ifndef STRATA_SCHED_INTERNAL_H
#define STRATA_SCHED_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/sched.h"

/* ---- tree.c: intrusive AVL tree -------------------------------------- */

/* <0 when a ranks worse than b, >0 better, 0 only for the same node. */
typedef int st_sched_node_cmp_fn(const struct st_sched_node *a, const struct st_sched_node *b);

void st_sched_tree_insert(struct st_sched_node **root, struct st_sched_node *n,
                          st_sched_node_cmp_fn *cmp);
/* 'n' must be in the tree. */
void st_sched_tree_remove(struct st_sched_node **root, struct st_sched_node *n,
                          st_sched_node_cmp_fn *cmp);
struct st_sched_node *st_sched_tree_max(struct st_sched_node *root);   /* best; NULL if empty */
struct st_sched_node *st_sched_tree_min(struct st_sched_node *root);   /* worst */
/* Checks order, heights and balance; returns the node count or -1. */
int64_t st_sched_tree_check(const struct st_sched_node *root, st_sched_node_cmp_fn *cmp);

/* ---- the scheduler's state ------------------------------------------- */

struct st_sched_engine {
    int32_t n_slots;
    int32_t n_busy;                  /* slots holding a job */
    int32_t model;                   /* loaded model; -1 none */
    bool    allow_swap;              /* may take another model's job when all slots free */
    uint64_t epoch;                  /* +1 each time a job takes the lines */
    struct st_sched_job *holder;     /* the lines; NULL when free */
    struct st_sched_job **slots;     /* [n_slots], owned array; entries borrowed */
    /* (added, multi-model: models.c) */
    int32_t n_usable;                /* slots the loaded model may fill, 1..n_slots */
    uint64_t deny[ST_SCHED_MAX_MODELS / 64];   /* bit m: never give this engine model m's
                                                * jobs (pinned elsewhere, failed to load) */
};

struct st_sched_model {
    struct st_sched_node *by_score;  /* root, ordered by (key, seq) */
    struct st_sched_node *by_prio;   /* root, ordered by (priority, seq); only kept when
                                      * aging is on (serial with agingDivisor > 0) */
    int64_t n_waiting;
};

struct st_sched_band {
    struct st_sched_job *head;       /* oldest waiting job of the band (smallest seq) */
    struct st_sched_job *tail;
    struct st_sched_band_stats st;   /* counters; queue_depth and running kept live,
                                      * oldest_wait_s filled in by st_sched_stats */
};

struct st_sched {
    pthread_mutex_t mu;              /* guards everything below */
    struct st_sched_config cfg;
    const struct st_clock *clock;    /* borrowed */
    int64_t t0_ns;                   /* clock time at st_sched_new */
    int64_t t0_unix_ms;              /* wall clock at st_sched_new, ms since 1970 */

    st_sched_notify_fn *notify;
    void *notify_ctx;

    struct st_sched_engine *engines; /* [n_engines], owned */
    int32_t n_engines;
    struct st_sched_model *models;   /* [n_models], owned; grown on demand */
    int32_t n_models;

    struct st_sched_band band[ST_BAND_COUNT];
    uint64_t next_seq;               /* last arrival number handed out */
    int64_t  waiting;                /* all bands */
    uint64_t shed;                   /* answered 429 */
    int64_t  slots_total;
    int64_t  n_state[ST_JOB_DONE + 1];   /* slot-holders per job state */

    struct st_activity *ring;        /* [ring_cap], owned */
    size_t   ring_cap;
    uint64_t last_activity_id;       /* ids are 1, 2, ...; id i sits at (i-1) % ring_cap */
    uint64_t activity_base;          /* ids up to it were a previous run's (continue) */
    st_activity_hook activity_hook;  /* told of each finished record; NULL = none */
    void    *activity_hook_ctx;
};

/* ---- score.c --------------------------------------------------------- */

bool st_sched_aging_on(const struct st_sched *s);
double st_sched_key(const struct st_sched *s, int32_t priority, int64_t arrival_ns);
/* The engine's bonus for 'model' (0 under fifo or for another model). */
int32_t st_sched_affinity(const struct st_sched *s, const struct st_sched_engine *e,
                          int32_t model);
/* Full score of a job at 'now' on an engine whose affinity for it is 'aff'. */
double st_sched_score(const struct st_sched *s, const struct st_sched_job *j, int32_t aff,
                      int64_t now_ns);
/* a ranks before b by (key + bonus, then smaller seq). */
bool st_sched_ranks_before(double a_key, uint64_t a_seq, double b_key, uint64_t b_seq);

/* ---- pick.c ---------------------------------------------------------- */

struct st_sched_pick {
    struct st_sched_job *job;          /* the pick; NULL when nobody can be served */
    struct st_sched_job *no_aging;     /* the pick without the aging term (NULL: aging off) */
    struct st_sched_job *no_affinity;  /* the pick without the affinity term */
    int32_t aff;                       /* the pick's affinity on this engine */
};

/* True when 'e' can take a waiting job now: a free slot, and with batch off
 * no busy slot at all. */
bool st_sched_engine_can_admit(const struct st_sched *s, const struct st_sched_engine *e);
/* The best waiting job 'e' can serve (section 4.1 / 6), plus the picks
 * without aging and without affinity. Does not change anything. */
void st_sched_pick_for(const struct st_sched *s, const struct st_sched_engine *e,
                       struct st_sched_pick *out);

/* ---- queue.c --------------------------------------------------------- */

/* Grow s->models to cover 'model' (0 <= model < ST_SCHED_MAX_MODELS). */
void st_sched_models_reserve(struct st_sched *s, int32_t model);
void st_sched_queue_insert(struct st_sched *s, struct st_sched_job *j);
void st_sched_queue_remove(struct st_sched *s, struct st_sched_job *j);
/* The lowest-ranked waiting job over all models (no affinity); NULL if none. */
struct st_sched_job *st_sched_queue_worst(const struct st_sched *s);
struct st_sched_job *st_sched_job_of_score(struct st_sched_node *n);
struct st_sched_job *st_sched_job_of_prio(struct st_sched_node *n);
/* The queue part of st_sched_check_invariants. */
bool st_sched_queue_check(const struct st_sched *s, char *why, size_t cap);

/* ---- state.c --------------------------------------------------------- */

/* Move a job to 'to', keeping the per-state slot counters right. */
void st_sched_set_state(struct st_sched *s, struct st_sched_job *j, enum st_job_state to);
/* The job leaves its slot: free the slot and, if it holds them, the lines. */
void st_sched_release_slot(struct st_sched *s, struct st_sched_job *j);

/* ---- lines.c --------------------------------------------------------- */

/* The engine part of st_sched_check_invariants. */
bool st_sched_engines_check(const struct st_sched *s, char *why, size_t cap);

/* ---- stats.c --------------------------------------------------------- */

/* What one dispatch log line says; filled under the mutex, logged after. */
struct st_sched_dispatch_line {
    char    request_id[48];
    int32_t priority;
    enum st_band band;
    double  score;
    double  queue_wait_ms;
    int32_t model, engine, slot;
    int64_t prompt_tokens;
};

enum st_status st_sched_ring_new(struct st_sched *s, int32_t capacity);
/* Append a record for a job that just got its slot; sets j->activity_id. */
void st_sched_activity_dispatch(struct st_sched *s, struct st_sched_job *j);
/* The job's record, or NULL when it was overwritten (or none). */
struct st_activity *st_sched_activity_of(struct st_sched *s, const struct st_sched_job *j);
/* Fill in the end of a job's record. */
void st_sched_activity_finish(struct st_sched *s, const struct st_sched_job *j,
                              enum st_outcome outcome, const struct st_job_report *report);
void st_sched_dispatch_line_fill(const struct st_sched_job *j, struct st_sched_dispatch_line *l);
/* Log it (no lock needed: call after unlocking). */
void st_sched_dispatch_line_log(const struct st_sched_dispatch_line *l);

/* ---- models.c -------------------------------------------------------- */

/* May 'e' serve jobs of 'model' (not denied)? */
bool st_sched_engine_serves(const struct st_sched_engine *e, int32_t model);

/* ---- check.c (tests) ------------------------------------------------ */

/* Check every structural invariant: trees (order, balance, sizes), band
 * lists, slot tables, lines holders, counters. Takes the mutex itself.
 * Returns true when all hold; otherwise writes the first failure to 'why'. */
bool st_sched_check_invariants(struct st_sched *s, char *why, size_t cap);

#endif /* STRATA_SCHED_INTERNAL_H */
