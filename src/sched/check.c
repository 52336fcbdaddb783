/* check.c -- st_sched_check_invariants (tests): the queue's, the engines'
 * and the counters' invariants, checked under the mutex. The top of the
 * module: it reads every part and nothing calls it but the tests.
 */
#include <stdio.h>

#include "internal.h"

/* Per band: submitted = left + waiting + running, and
 * dispatched = left after a slot + running. */
static bool counters_add_up(const struct st_sched *s, char *why, size_t cap)
{
    int64_t running = 0;
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        const struct st_sched_band_stats *st = &s->band[b].st;
        uint64_t left = 0, unserved = 0;
        for (int o = 0; o < ST_OUTCOME_COUNT; o++) {
            left += st->outcomes[o];
            unserved += st->undispatched[o];
        }
        if (st->submitted != left + (uint64_t)st->queue_depth + (uint64_t)st->running ||
            st->dispatched != left - unserved + (uint64_t)st->running) {
            snprintf(why, cap, "band %s: counters do not add up", st_band_name((enum st_band)b));
            return false;
        }
        running += st->running;
    }
    int64_t held = 0;
    for (int st = ST_JOB_ADMITTED; st <= ST_JOB_DECODING; st++)
        held += s->n_state[st];
    if (running != held) {
        snprintf(why, cap, "running by band differs from slot states");
        return false;
    }
    return true;
}

bool st_sched_check_invariants(struct st_sched *s, char *why, size_t cap)
{
    char scratch[8];
    if (!why || cap == 0) {
        why = scratch;
        cap = sizeof(scratch);
    }
    why[0] = '\0';
    pthread_mutex_lock(&s->mu);
    bool ok = st_sched_queue_check(s, why, cap) && st_sched_engines_check(s, why, cap) &&
              counters_add_up(s, why, cap);
    pthread_mutex_unlock(&s->mu);
    return ok;
}
