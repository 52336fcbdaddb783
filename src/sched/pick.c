/* pick.c -- the pick for one engine (SCHEDULER.md section 4.1 / 6): the
 * best waiting job among the tops of the models it may serve, ranked by
 * key + affinity (score.c), plus the picks without aging and without
 * affinity that the reorder counters compare it with.
 */
#include <string.h>

#include "internal.h"

bool st_sched_engine_can_admit(const struct st_sched *s, const struct st_sched_engine *e)
{
    return e->n_busy < e->n_usable && (s->cfg.batch || e->n_busy == 0);
}

static void consider(struct st_sched_job **best, double *best_rank, struct st_sched_job *j,
                     double rank)
{
    if (!j)
        return;
    if (!*best || st_sched_ranks_before(rank, j->seq, *best_rank, (*best)->seq)) {
        *best = j;
        *best_rank = rank;
    }
}

/* Which models 'e' may serve now: its loaded one, or any when all its slots
 * are free and it may swap. Returns false when none. */
static bool model_range(const struct st_sched *s, const struct st_sched_engine *e,
                        int32_t *lo, int32_t *hi)
{
    if (e->n_busy == 0 && e->allow_swap) {
        *lo = 0;
        *hi = s->n_models;
        return true;
    }
    if (e->model < 0 || e->model >= s->n_models)
        return false;
    *lo = e->model;
    *hi = e->model + 1;
    return true;
}

/* Another engine could take model m without unloading anything: it is
 * free, has no model, and may serve m. Then 'e' (which has a model) leaves
 * m's jobs to it rather than swap its own model out (docs/MODELS.md). */
static bool empty_engine_for(const struct st_sched *s, const struct st_sched_engine *e,
                             int32_t m)
{
    for (int32_t i = 0; i < s->n_engines; i++) {
        const struct st_sched_engine *o = &s->engines[i];
        if (o != e && o->model < 0 && o->n_busy == 0 && st_sched_engine_serves(o, m))
            return true;
    }
    return false;
}

void st_sched_pick_for(const struct st_sched *s, const struct st_sched_engine *e,
                       struct st_sched_pick *out)
{
    double best = 0, no_aff = 0, no_age = 0;
    int32_t lo, hi;

    memset(out, 0, sizeof(*out));
    if (!st_sched_engine_can_admit(s, e) || !model_range(s, e, &lo, &hi))
        return;
    for (int32_t m = lo; m < hi; m++) {
        const struct st_sched_model *mq = &s->models[m];
        if (!st_sched_engine_serves(e, m))
            continue;   /* pinned to other engines, or failed to load here */
        if (e->model >= 0 && m != e->model && empty_engine_for(s, e, m))
            continue;   /* an empty engine loads it: no need to swap ours out */
        struct st_sched_job *top = st_sched_job_of_score(st_sched_tree_max(mq->by_score));
        if (!top)
            continue;
        int32_t aff = st_sched_affinity(s, e, m);
        consider(&out->job, &best, top, top->links.key + aff);
        consider(&out->no_affinity, &no_aff, top, top->links.key);
        if (st_sched_aging_on(s)) {
            struct st_sched_job *p = st_sched_job_of_prio(st_sched_tree_max(mq->by_prio));
            consider(&out->no_aging, &no_age, p, (double)p->priority + aff);
        }
    }
    if (out->job)
        out->aff = st_sched_affinity(s, e, out->job->model);
}
