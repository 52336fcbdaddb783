/* state.c -- a job's state and its slot: every transition goes through
 * here so the per-state and per-band running counters stay right.
 * Called by sched.c, lines.c and models.c under the scheduler's mutex.
 */
#include "internal.h"

static bool holds_slot(enum st_job_state st)
{
    return st == ST_JOB_ADMITTED || st == ST_JOB_READING || st == ST_JOB_PARKED ||
           st == ST_JOB_DECODING;
}

void st_sched_set_state(struct st_sched *s, struct st_sched_job *j, enum st_job_state to)
{
    struct st_sched_band *b = &s->band[st_band_of(j->priority)];
    if (holds_slot(j->state)) {
        s->n_state[j->state]--;
        b->st.running--;
    }
    if (holds_slot(to)) {
        s->n_state[to]++;
        b->st.running++;
    }
    j->state = to;
}

void st_sched_release_slot(struct st_sched *s, struct st_sched_job *j)
{
    struct st_sched_engine *e = &s->engines[j->engine];
    ST_ASSERT(j->slot >= 0 && j->slot < e->n_slots && e->slots[j->slot] == j);
    e->slots[j->slot] = NULL;
    e->n_busy--;
    if (e->holder == j)
        e->holder = NULL;
}
