/* lines.c -- the control lines of each engine and the give-way rule
 * (SCHEDULER.md section 4.2-4.4).
 *
 * The lines are the right to read the next prompt chunk; one holder per
 * engine. Only jobs that hold a slot and still have prompt to read compete
 * for them (ADMITTED and PARKED): a job waiting for a slot can never hold
 * the lines back, so a parked read always gets them again and frees its
 * slot eventually (the deadlock note). The epoch of an engine counts lines
 * acquisitions; a job that gave way in epoch E (W took the lines, making it
 * E+1) gets after_epoch = E+2 and ranks below every other candidate while
 * the engine's epoch is below that, i.e. until the holding period after
 * W's has passed. When it is the only candidate it takes the lines at once.
 *
 * Give-way is decided in st_sched_lines when the holder's tokens_read has
 * reached its next_boundary (a multiple of give_way_tokens).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "strata/log.h"

static bool waits_for_lines(const struct st_sched_job *j)
{
    return j->state == ST_JOB_ADMITTED || j->state == ST_JOB_PARKED;
}

/* The best slot-holder of 'e' waiting for the lines, other than 'skip',
 * among those whose after_epoch has passed ('deferred' false) or not
 * (true). One engine's slot-holders share its model, so their affinity is
 * equal and (key, seq) ranks them. O(slots). */
static struct st_sched_job *best_for_lines(const struct st_sched_engine *e,
                                           const struct st_sched_job *skip, bool deferred)
{
    struct st_sched_job *best = NULL;
    for (int32_t i = 0; i < e->n_slots; i++) {
        struct st_sched_job *j = e->slots[i];
        if (!j || j == skip || !waits_for_lines(j) || (e->epoch < j->after_epoch) != deferred)
            continue;
        if (!best || st_sched_ranks_before(j->links.key, j->seq, best->links.key, best->seq))
            best = j;
    }
    return best;
}

static void take_lines(struct st_sched *s, struct st_sched_engine *e, struct st_sched_job *j)
{
    e->holder = j;
    e->epoch++;
    st_sched_set_state(s, j, ST_JOB_READING);
}

/* Free lines: the best candidate whose after_epoch passed, else the best
 * of those letting others go first (nobody else wants the lines). */
static struct st_sched_job *grant_free_lines(struct st_sched *s, struct st_sched_engine *e)
{
    struct st_sched_job *j = best_for_lines(e, NULL, false);
    if (!j)
        j = best_for_lines(e, NULL, true);
    if (j)
        take_lines(s, e, j);
    return j;
}

/* Section 4.3: a higher priority whatever its length; the same priority
 * with a prompt under half as long; never a lower priority. */
static bool should_give_way(const struct st_sched *s, const struct st_sched_job *r,
                            const struct st_sched_job *w)
{
    if (r->yields >= s->cfg.yields_max)
        return false;
    if (w->priority != r->priority)
        return w->priority > r->priority;
    return w->prompt_tokens < r->prompt_tokens / 2 +
           (r->prompt_tokens % 2);   /* 2 * w < r without overflow */
}

static void park(struct st_sched *s, struct st_sched_job *r)
{
    st_sched_set_state(s, r, ST_JOB_PARKED);
    r->yields++;
    s->band[st_band_of(r->priority)].st.give_ways++;
    struct st_activity *a = st_sched_activity_of(s, r);
    if (a)
        a->give_ways = r->yields;
}

/* The holder R reached a read boundary. W = the best candidate: a
 * slot-holder waiting for the lines (after_epoch passed), or a waiting job
 * this engine could admit into a free slot now. If W is such a waiter and
 * would make R give way, the decision waits for the engine's next step
 * (admit runs first there, so W then holds a slot): R reads one more chunk
 * and the boundary stays due. Returns the holder after the check. */
static struct st_sched_job *boundary_check(struct st_sched *s, struct st_sched_engine *e)
{
    struct st_sched_job *r = e->holder;
    struct st_sched_job *w = best_for_lines(e, r, false);
    struct st_sched_pick pick;

    st_sched_pick_for(s, e, &pick);
    if (pick.job) {
        double wk = w ? w->links.key + st_sched_affinity(s, e, w->model) : 0;
        if (!w || st_sched_ranks_before(pick.job->links.key + pick.aff, pick.job->seq, wk, w->seq)) {
            if (should_give_way(s, r, pick.job))
                return r;
            w = NULL;   /* the best candidate does not make R give way */
        }
    }
    int64_t g = s->cfg.give_way_tokens;
    r->next_boundary = (r->tokens_read / g + 1) * g;
    if (!w || !should_give_way(s, r, w))
        return r;
    park(s, r);
    take_lines(s, e, w);
    r->after_epoch = e->epoch + 1;
    return w;
}

struct st_sched_job *st_sched_lines(struct st_sched *s, int32_t engine)
{
    struct st_sched_job *j = NULL;
    pthread_mutex_lock(&s->mu);
    if (engine >= 0 && engine < s->n_engines) {
        struct st_sched_engine *e = &s->engines[engine];
        j = e->holder;
        if (j && j->tokens_read >= j->next_boundary)
            j = boundary_check(s, e);
        else if (!j)
            j = grant_free_lines(s, e);
    }
    pthread_mutex_unlock(&s->mu);
    return j;
}

void st_sched_read_progress(struct st_sched *s, struct st_sched_job *job, int64_t n)
{
    pthread_mutex_lock(&s->mu);
    bool ok = n >= 0 && (job->state == ST_JOB_READING || waits_for_lines(job));
    if (ok) {
        if (job->state != ST_JOB_READING)
            st_log(ST_LOG_DEBUG, "sched", "read_progress: job %.*s reads without the lines",
                   (int)strnlen(job->request_id, sizeof(job->request_id)), job->request_id);
        job->tokens_read += n;
        if (job->tokens_read >= job->prompt_tokens) {
            job->tokens_read = job->prompt_tokens;
            struct st_sched_engine *e = &s->engines[job->engine];
            if (e->holder == job)
                e->holder = NULL;
            st_sched_set_state(s, job, ST_JOB_DECODING);
        }
    } else {
        st_log(ST_LOG_WARN, "sched", "read_progress(%lld): job %.*s has no prompt to read (state %s): ignored",
               (long long)n, (int)strnlen(job->request_id, sizeof(job->request_id)),
               job->request_id, st_job_state_name(job->state));
    }
    pthread_mutex_unlock(&s->mu);
}

static bool bad(char *why, size_t cap, const char *fmt, ...) ST_PRINTF(3, 4);
static bool bad(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why && cap)
        vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return false;
}

bool st_sched_engines_check(const struct st_sched *s, char *why, size_t cap)
{
    int64_t count[ST_JOB_DONE + 1] = {0}, total = 0;
    for (int32_t i = 0; i < s->n_engines; i++) {
        const struct st_sched_engine *e = &s->engines[i];
        int32_t busy = 0, reading = 0;
        for (int32_t k = 0; k < e->n_slots; k++) {
            const struct st_sched_job *j = e->slots[k];
            if (!j)
                continue;
            busy++;
            count[j->state]++;
            reading += j->state == ST_JOB_READING;
            if (j->engine != i || j->slot != k || j->state == ST_JOB_WAITING ||
                j->state == ST_JOB_DONE || j->state == ST_JOB_NEW)
                return bad(why, cap, "engine %d slot %d: wrong job", (int)i, (int)k);
            if ((j->state == ST_JOB_DECODING) != (j->tokens_read >= j->prompt_tokens))
                return bad(why, cap, "engine %d slot %d: decoding vs prompt left", (int)i, (int)k);
        }
        if (busy != e->n_busy || reading > 1 || (reading == 1) != (e->holder != NULL))
            return bad(why, cap, "engine %d: busy or lines holder count off", (int)i);
        if (e->holder && (e->holder->engine != i || e->holder->state != ST_JOB_READING))
            return bad(why, cap, "engine %d: lines holder is not reading here", (int)i);
        if (!s->cfg.batch && busy > 1)
            return bad(why, cap, "engine %d: two jobs without batch", (int)i);
        total += e->n_slots;
    }
    for (int st = ST_JOB_ADMITTED; st <= ST_JOB_DECODING; st++)
        if (count[st] != s->n_state[st])
            return bad(why, cap, "slot state %d count off", st);
    if (total != s->slots_total)
        return bad(why, cap, "slots_total off");
    return true;
}
