/* score.c -- the score of SCHEDULER.md section 3 (the pick is in pick.c).
 *
 *   score(r, now) = P(r) + affinity(r) + aging(r, now)        (serial)
 *   score(r)      = P(r)                                      (fifo)
 *   aging    = (now - arrival) / agingDivisor, seconds per point (0 = off)
 *   affinity = swapAffinityBonus when r's model is the engine's loaded one
 *
 * The queue stores key = P - arrival_s / agingDivisor (or P), which ranks
 * one model's waiting jobs the same way at every 'now'. Across models the
 * engine compares each model's top with its bonus added: key + affinity.
 * Times are taken relative to the scheduler's creation (t0) so the key keeps
 * its precision in a double for years of uptime.
 */
#include "internal.h"

bool st_sched_aging_on(const struct st_sched *s)
{
    return s->cfg.policy == ST_SCHED_SERIAL && s->cfg.aging_divisor_s > 0;
}

static double aging_points(const struct st_sched *s, int64_t ns)
{
    return (double)ns / (double)ST_NS_PER_SEC / s->cfg.aging_divisor_s;
}

double st_sched_key(const struct st_sched *s, int32_t priority, int64_t arrival_ns)
{
    double key = (double)priority;
    if (st_sched_aging_on(s))
        key -= aging_points(s, arrival_ns - s->t0_ns);
    return key;
}

int32_t st_sched_affinity(const struct st_sched *s, const struct st_sched_engine *e,
                          int32_t model)
{
    if (s->cfg.policy != ST_SCHED_SERIAL || e->model < 0 || model != e->model)
        return 0;
    return s->cfg.swap_affinity_bonus;
}

double st_sched_score(const struct st_sched *s, const struct st_sched_job *j, int32_t aff,
                      int64_t now_ns)
{
    double score = (double)j->priority + (double)aff;
    if (st_sched_aging_on(s))
        score += aging_points(s, now_ns - j->arrival_ns);
    return score;
}

bool st_sched_ranks_before(double a_key, uint64_t a_seq, double b_key, uint64_t b_seq)
{
    if (a_key != b_key)
        return a_key > b_key;
    return a_seq < b_seq;
}
