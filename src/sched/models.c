/* models.c -- what the scheduler needs for several models on shared engines
 * (SCHEDULER.md section 6, ../docs/MODELS.md).
 *
 * The pick itself lives in pick.c: a free engine may take the best job of
 * any model it serves (a swap), a busy one only jobs of its loaded model,
 * and the loaded model's jobs get swapAffinityBonus. This file adds the
 * knobs the engine pool turns:
 *   - a per-engine set of denied models: a model pinned to other devices,
 *     or one that failed to load on this engine (for its back-off);
 *   - the number of slots the loaded model may fill (models differ in
 *     parallel; the engine is registered with the largest);
 *   - draining a model's waiting jobs when it cannot load anywhere, so they
 *     are answered with the reason instead of waiting forever;
 *   - the load time of a swap, in the dispatch's activity record.
 * Every call takes the scheduler's mutex for its decision only.
 */
#include <string.h>

#include "internal.h"
#include "strata/log.h"

bool st_sched_engine_serves(const struct st_sched_engine *e, int32_t model)
{
    if (model < 0 || model >= ST_SCHED_MAX_MODELS)
        return false;
    return !((e->deny[model / 64] >> (model % 64)) & 1u);
}

static struct st_sched_engine *engine_of(struct st_sched *s, int32_t engine)
{
    return engine >= 0 && engine < s->n_engines ? &s->engines[engine] : NULL;
}

void st_sched_engine_allow_model(struct st_sched *s, int32_t engine, int32_t model, bool allow)
{
    if (model < 0 || model >= ST_SCHED_MAX_MODELS)
        return;
    pthread_mutex_lock(&s->mu);
    struct st_sched_engine *e = engine_of(s, engine);
    bool changed = false;
    if (e) {
        uint64_t bit = UINT64_C(1) << (model % 64);
        uint64_t before = e->deny[model / 64];
        if (allow)
            e->deny[model / 64] &= ~bit;
        else
            e->deny[model / 64] |= bit;
        changed = before != e->deny[model / 64];
    }
    st_sched_notify_fn *fn = s->notify;
    void *ctx = s->notify_ctx;
    pthread_mutex_unlock(&s->mu);
    /* A model allowed again may have jobs this engine can now take. */
    if (changed && allow && fn)
        fn(ctx);
}

void st_sched_engine_set_slots(struct st_sched *s, int32_t engine, int32_t n_usable)
{
    pthread_mutex_lock(&s->mu);
    struct st_sched_engine *e = engine_of(s, engine);
    if (e)
        e->n_usable = ST_MAX(1, ST_MIN(n_usable, e->n_slots));
    pthread_mutex_unlock(&s->mu);
}

/* As sched.c's leave_unserved: a job leaves without having held a slot. */
static void leave(struct st_sched *s, struct st_sched_job *j, enum st_outcome o)
{
    struct st_sched_band *b = &s->band[st_band_of(j->priority)];
    st_sched_set_state(s, j, ST_JOB_DONE);
    b->st.outcomes[o]++;
    b->st.undispatched[o]++;
}

size_t st_sched_drain_model(struct st_sched *s, int32_t model, enum st_outcome outcome,
                            struct st_sched_job **out, size_t max)
{
    size_t n = 0;
    if ((int)outcome < 0 || outcome >= ST_OUTCOME_COUNT)
        outcome = ST_OUTCOME_FAILED;
    pthread_mutex_lock(&s->mu);
    if (model >= 0 && model < s->n_models) {
        struct st_sched_model *mq = &s->models[model];
        while (n < max) {
            struct st_sched_job *j = st_sched_job_of_score(st_sched_tree_max(mq->by_score));
            if (!j)
                break;
            st_sched_queue_remove(s, j);
            leave(s, j, outcome);
            out[n++] = j;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

void st_sched_job_loaded(struct st_sched *s, const struct st_sched_job *job, double load_ms)
{
    pthread_mutex_lock(&s->mu);
    struct st_activity *a = st_sched_activity_of(s, job);
    if (a)
        a->load_ms = load_ms > 0 ? load_ms : 0;
    pthread_mutex_unlock(&s->mu);
}
