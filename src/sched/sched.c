/* sched.c -- the scheduler's life cycle and its queue-facing calls:
 * submit, cancel, admit (a free slot to the best waiting job), finish.
 *
 * One mutex guards all state; every public call takes it for the decision
 * only and calls the notify callback and the logger after releasing it.
 * The lines and give-way live in lines.c, counters and the activity ring in
 * stats.c. See internal.h for the ordering and SCHEDULER.md for the rules.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "strata/defaults.h"
#include "strata/log.h"
#include "strata/xalloc.h"

void st_sched_config_defaults(struct st_sched_config *c)
{
    memset(c, 0, sizeof(*c));
    c->policy = ST_SCHED_SERIAL;
    c->aging_divisor_s = ST_DEFAULT_AGING_DIVISOR_S;
    c->swap_affinity_bonus = ST_DEFAULT_AFFINITY_BONUS;
    c->give_way_tokens = ST_DEFAULT_GIVE_WAY_TOKENS;
    c->yields_max = ST_DEFAULT_YIELDS_MAX;
    c->max_queue = 0;
    c->batch = false;
    c->activity_capacity = 1000;
    c->log_dispatch = true;
}

static enum st_status check_config(const struct st_sched_config *c, struct st_err *err)
{
    if (c->policy != ST_SCHED_SERIAL && c->policy != ST_SCHED_FIFO)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "scheduler: unknown policy %d (use serial or fifo)",
                          (int)c->policy);
    if (!isfinite(c->aging_divisor_s) || c->aging_divisor_s < 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "scheduler: agingDivisor must be >= 0 seconds per point (0 turns aging off), got %g",
                          c->aging_divisor_s);
    if (c->swap_affinity_bonus < 0 || c->swap_affinity_bonus > 99)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "scheduler: swapAffinityBonus must be 0..99 so it stays below the band spacing of 100, got %d",
                          (int)c->swap_affinity_bonus);
    if (c->give_way_tokens < 1)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "scheduler: giveWayTokens must be >= 1, got %lld",
                          (long long)c->give_way_tokens);
    if (c->yields_max < 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "scheduler: yields-max must be >= 0, got %d",
                          (int)c->yields_max);
    if (c->max_queue < 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "scheduler: max-queue must be >= 0 (0 = unlimited), got %d",
                          (int)c->max_queue);
    if (c->activity_capacity < 0 || c->activity_capacity > 10000000)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "scheduler: activity capacity must be 0..10000000 records, got %d",
                          (int)c->activity_capacity);
    return ST_OK;
}

enum st_status st_sched_new(const struct st_sched_config *cfg, const struct st_clock *clock,
                            struct st_sched **out, struct st_err *err)
{
    struct timespec wall;
    enum st_status rc;

    *out = NULL;
    rc = check_config(cfg, err);
    if (rc != ST_OK)
        return rc;
    struct st_sched *s = calloc(1, sizeof(*s));
    if (!s)
        return st_err_set(err, ST_ERR_NOMEM, "scheduler: out of memory");
    s->cfg = *cfg;
    s->clock = clock;
    rc = st_sched_ring_new(s, cfg->activity_capacity);
    if (rc != ST_OK) {
        free(s);
        return st_err_set(err, rc, "scheduler: no memory for %d activity records",
                          (int)cfg->activity_capacity);
    }
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s->ring);
        free(s);
        return st_err_set(err, ST_ERR_INTERNAL, "scheduler: pthread_mutex_init failed");
    }
    s->t0_ns = st_clock_now(clock);
    clock_gettime(CLOCK_REALTIME, &wall);
    s->t0_unix_ms = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
    *out = s;
    return ST_OK;
}

void st_sched_free(struct st_sched *s)
{
    if (!s)
        return;
    for (int32_t i = 0; i < s->n_engines; i++)
        free(s->engines[i].slots);
    free(s->engines);
    free(s->models);
    free(s->ring);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void st_sched_set_notify(struct st_sched *s, st_sched_notify_fn *fn, void *ctx)
{
    pthread_mutex_lock(&s->mu);
    s->notify = fn;
    s->notify_ctx = ctx;
    pthread_mutex_unlock(&s->mu);
}

/* Unlock, then wake the engines (never call out while holding the mutex). */
static void unlock_and_notify(struct st_sched *s, bool notify)
{
    st_sched_notify_fn *fn = s->notify;
    void *ctx = s->notify_ctx;
    pthread_mutex_unlock(&s->mu);
    if (notify && fn)
        fn(ctx);
}

int32_t st_sched_add_engine(struct st_sched *s, int32_t n_slots, int32_t model)
{
    if (n_slots < 1 || n_slots > ST_SCHED_MAX_SLOTS || model < -1 || model >= ST_SCHED_MAX_MODELS)
        return -1;
    pthread_mutex_lock(&s->mu);
    int32_t idx = s->n_engines;
    /* A handful of engines, sized by the command line: bookkeeping, xalloc. */
    s->engines = st_xrealloc(s->engines, (size_t)(idx + 1) * sizeof(*s->engines));
    struct st_sched_engine *e = &s->engines[idx];
    memset(e, 0, sizeof(*e));
    e->n_slots = n_slots;
    e->n_usable = n_slots;
    e->model = model;
    e->allow_swap = true;
    e->slots = st_xcalloc((size_t)n_slots, sizeof(*e->slots));
    if (model >= 0)
        st_sched_models_reserve(s, model);
    s->n_engines++;
    s->slots_total += n_slots;
    pthread_mutex_unlock(&s->mu);
    return idx;
}

static struct st_sched_engine *engine_at(struct st_sched *s, int32_t engine)
{
    if (engine < 0 || engine >= s->n_engines) {
        st_log(ST_LOG_WARN, "sched", "engine %d is not registered (there are %d): ignored",
               (int)engine, (int)s->n_engines);
        return NULL;
    }
    return &s->engines[engine];
}

void st_sched_engine_set_swap(struct st_sched *s, int32_t engine, bool allow)
{
    pthread_mutex_lock(&s->mu);
    struct st_sched_engine *e = engine_at(s, engine);
    if (e)
        e->allow_swap = allow;
    pthread_mutex_unlock(&s->mu);
}

void st_sched_engine_set_model(struct st_sched *s, int32_t engine, int32_t model)
{
    if (model < -1 || model >= ST_SCHED_MAX_MODELS)
        return;
    pthread_mutex_lock(&s->mu);
    struct st_sched_engine *e = engine_at(s, engine);
    if (e) {
        e->model = model;
        if (model >= 0)
            st_sched_models_reserve(s, model);
    }
    pthread_mutex_unlock(&s->mu);
}

/* A job leaves without ever holding a slot (rejected, shed, cancelled or
 * failed while waiting). It must already be out of the queue. */
static void leave_unserved(struct st_sched *s, struct st_sched_job *j, enum st_outcome o)
{
    struct st_sched_band *b = &s->band[st_band_of(j->priority)];
    st_sched_set_state(s, j, ST_JOB_DONE);
    b->st.outcomes[o]++;
    b->st.undispatched[o]++;
}

static void init_job(struct st_sched *s, struct st_sched_job *j, int64_t now)
{
    j->state = ST_JOB_NEW;
    j->seq = ++s->next_seq;
    j->arrival_ns = now;
    j->dispatch_ns = 0;
    j->dispatch_score = 0;
    j->engine = -1;
    j->slot = -1;
    j->yields = 0;
    j->after_epoch = 0;
    j->tokens_read = 0;
    j->next_boundary = 0;
    j->heap_index = 0;
    j->activity_id = 0;
    j->swapped = false;
    memset(&j->links, 0, sizeof(j->links));
    j->links.key = st_sched_key(s, j->priority, now);
}

/* Queue full: shed the lowest-ranked waiting job if 'j' outranks it (and the
 * caller can take it), else reject 'j'. Returns the shed job or NULL. */
static struct st_sched_job *make_room(struct st_sched *s, struct st_sched_job *j, bool can_shed,
                                      enum st_status *rc)
{
    struct st_sched_job *victim = can_shed ? st_sched_queue_worst(s) : NULL;
    s->shed++;
    if (victim && st_sched_ranks_before(j->links.key, j->seq, victim->links.key, victim->seq)) {
        st_sched_queue_remove(s, victim);
        leave_unserved(s, victim, ST_OUTCOME_REJECTED);
        *rc = ST_OK;
        return victim;
    }
    leave_unserved(s, j, ST_OUTCOME_REJECTED);
    *rc = ST_ERR_QUEUE_FULL;
    return NULL;
}

enum st_status st_sched_submit(struct st_sched *s, struct st_sched_job *job,
                               struct st_sched_job **shed)
{
    enum st_status rc = ST_OK;
    struct st_sched_job *victim = NULL;

    if (shed)
        *shed = NULL;
    if (job->model < 0 || job->model >= ST_SCHED_MAX_MODELS || job->prompt_tokens < 1) {
        job->state = ST_JOB_DONE;
        return ST_ERR_INVALID;
    }
    pthread_mutex_lock(&s->mu);
    st_sched_models_reserve(s, job->model);
    init_job(s, job, st_clock_now(s->clock));
    s->band[st_band_of(job->priority)].st.submitted++;
    if (s->cfg.max_queue > 0 && s->waiting >= s->cfg.max_queue)
        victim = make_room(s, job, shed != NULL, &rc);
    if (rc == ST_OK) {
        st_sched_queue_insert(s, job);
        st_sched_set_state(s, job, ST_JOB_WAITING);
    }
    unlock_and_notify(s, rc == ST_OK);
    if (shed)
        *shed = victim;
    return rc;
}

bool st_sched_refuse_if_full(struct st_sched *s, int32_t priority)
{
    bool refuse = false;
    pthread_mutex_lock(&s->mu);
    if (s->cfg.max_queue > 0 && s->waiting >= s->cfg.max_queue) {
        /* make_room's test, for a job that would arrive now */
        const struct st_sched_job *worst = st_sched_queue_worst(s);
        double key = st_sched_key(s, priority, st_clock_now(s->clock));
        refuse = !worst || !st_sched_ranks_before(key, s->next_seq + 1, worst->links.key,
                                                  worst->seq);
    }
    if (refuse) {
        struct st_sched_band *b = &s->band[st_band_of(priority)];
        b->st.submitted++;
        b->st.outcomes[ST_OUTCOME_REJECTED]++;
        b->st.undispatched[ST_OUTCOME_REJECTED]++;
        s->shed++;
    }
    pthread_mutex_unlock(&s->mu);
    return refuse;
}

bool st_sched_cancel(struct st_sched *s, struct st_sched_job *job)
{
    bool removed = false;
    pthread_mutex_lock(&s->mu);
    if (job->state == ST_JOB_WAITING) {
        st_sched_queue_remove(s, job);
        leave_unserved(s, job, ST_OUTCOME_CANCELLED);
        removed = true;
    }
    /* A running job's engine sees the cancel flag at its next step; wake it
     * anyway in case it sleeps between steps. */
    unlock_and_notify(s, true);
    return removed;
}

/* Give 'slot' of engine 'idx' to the pick: count reorders, swap the model
 * if needed, record the dispatch. */
static void grant(struct st_sched *s, int32_t idx, int32_t slot, const struct st_sched_pick *p,
                  int64_t now)
{
    struct st_sched_engine *e = &s->engines[idx];
    struct st_sched_job *j = p->job;
    struct st_sched_band *b = &s->band[st_band_of(j->priority)];

    st_sched_queue_remove(s, j);
    if (p->no_aging && p->no_aging != j)
        b->st.reorders_aging++;
    if (p->no_affinity != j)
        b->st.reorders_affinity++;
    int32_t from = e->model;
    j->swapped = j->model != e->model;
    if (j->swapped)
        e->model = j->model;
    j->engine = idx;
    j->slot = slot;
    j->dispatch_ns = now;
    j->dispatch_score = st_sched_score(s, j, p->aff, now);
    j->tokens_read = 0;
    j->next_boundary = s->cfg.give_way_tokens;
    e->slots[slot] = j;
    e->n_busy++;
    st_sched_set_state(s, j, ST_JOB_ADMITTED);
    b->st.dispatched++;
    st_sched_activity_dispatch(s, j);
    struct st_activity *a = st_sched_activity_of(s, j);
    if (a)
        a->swap_from = j->swapped ? from : j->model;
}

static bool slot_free(const struct st_sched_engine *e, int32_t slot)
{
    return slot >= 0 && slot < e->n_slots && !e->slots[slot];
}

/* The slot 'choose' names for j, or 'offered' when it names none that is free. */
static int32_t chosen_slot(const struct st_sched_engine *e, const struct st_sched_job *j,
                           int32_t engine, int32_t offered, st_sched_slot_fn *choose, void *ctx)
{
    if (!choose)
        return offered;
    int32_t slot = choose(ctx, j, offered);
    if (slot == offered || slot == ST_SCHED_SLOT_WAIT || slot_free(e, slot))
        return slot;
    st_log(ST_LOG_WARN, "sched", "admit: chosen slot %d of engine %d is not a free slot: "
           "slot %d instead", (int)slot, (int)engine, (int)offered);
    return offered;
}

struct st_sched_job *st_sched_admit(struct st_sched *s, int32_t engine, int32_t slot)
{
    return st_sched_admit_to(s, engine, slot, NULL, NULL);
}

struct st_sched_job *st_sched_admit_to(struct st_sched *s, int32_t engine, int32_t offered,
                                       st_sched_slot_fn *choose, void *ctx)
{
    struct st_sched_dispatch_line line;
    struct st_sched_job *j = NULL;
    bool log = false;

    pthread_mutex_lock(&s->mu);
    struct st_sched_engine *e = engine_at(s, engine);
    if (e && !slot_free(e, offered)) {
        st_log(ST_LOG_WARN, "sched", "admit: slot %d of engine %d is not a free slot: ignored",
               (int)offered, (int)engine);
        e = NULL;
    }
    if (e) {
        struct st_sched_pick pick;
        st_sched_pick_for(s, e, &pick);
        j = pick.job;
        int32_t slot = j ? chosen_slot(e, j, engine, offered, choose, ctx) : offered;
        if (slot == ST_SCHED_SLOT_WAIT)
            j = NULL;   /* no room on this engine now: it stays first in line */
        if (j) {
            grant(s, engine, slot, &pick, st_clock_now(s->clock));
            log = s->cfg.log_dispatch;
            if (log)
                st_sched_dispatch_line_fill(j, &line);
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (log)
        st_sched_dispatch_line_log(&line);
    return j;
}

void st_sched_finish(struct st_sched *s, struct st_sched_job *job, enum st_outcome outcome,
                     const struct st_job_report *report)
{
    bool changed = true;
    if ((int)outcome < 0 || outcome >= ST_OUTCOME_COUNT)
        outcome = ST_OUTCOME_FAILED;
    pthread_mutex_lock(&s->mu);
    struct st_sched_band *b = &s->band[st_band_of(job->priority)];
    switch (job->state) {
    case ST_JOB_WAITING:
        st_sched_queue_remove(s, job);
        leave_unserved(s, job, outcome);
        break;
    case ST_JOB_ADMITTED:
    case ST_JOB_READING:
    case ST_JOB_PARKED:
    case ST_JOB_DECODING:
        st_sched_release_slot(s, job);
        st_sched_activity_finish(s, job, outcome, report);
        st_sched_set_state(s, job, ST_JOB_DONE);
        b->st.outcomes[outcome]++;
        break;
    case ST_JOB_NEW:
    case ST_JOB_DONE:
        st_log(ST_LOG_WARN, "sched", "finish: job %.*s is not in the scheduler (state %s): ignored",
               (int)strnlen(job->request_id, sizeof(job->request_id)), job->request_id,
               st_job_state_name(job->state));
        changed = false;
        break;
    }
    unlock_and_notify(s, changed);
}
