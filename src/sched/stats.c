/* stats.c -- what the scheduler lets the outside see: the stats snapshot
 * (/metrics), the activity ring (/api/activity) and the dispatch log line.
 *
 * Counters are kept live by the decisions themselves, so a snapshot is a
 * copy plus one subtraction per band for the oldest wait (the head of each
 * band's arrival-ordered list): O(bands), whatever the queue length. The
 * Kubernetes inference-extension picker scrapes every 50 ms.
 *
 * The activity ring holds the last activity_capacity dispatches. Record id
 * i (1, 2, ...) sits at index (i - 1) % capacity; a job keeps its id, so
 * finish finds its record in O(1), or learns it was overwritten.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "strata/log.h"

void st_sched_stats(struct st_sched *s, struct st_sched_stats *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->mu);
    int64_t now = st_clock_now(s->clock);
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        out->band[b] = s->band[b].st;
        const struct st_sched_job *head = s->band[b].head;
        double wait = head ? (double)(now - head->arrival_ns) / (double)ST_NS_PER_SEC : 0;
        out->band[b].oldest_wait_s = wait > 0 ? wait : 0;
    }
    out->slots_total = s->slots_total;
    out->slots_admitted = s->n_state[ST_JOB_ADMITTED];
    out->slots_reading = s->n_state[ST_JOB_READING];
    out->slots_parked = s->n_state[ST_JOB_PARKED];
    out->slots_decoding = s->n_state[ST_JOB_DECODING];
    out->running = out->slots_admitted + out->slots_reading + out->slots_parked +
                   out->slots_decoding;
    out->slots_idle = out->slots_total - out->running;
    out->waiting = s->waiting;
    out->shed = s->shed;
    pthread_mutex_unlock(&s->mu);
}

void st_sched_models_waiting(struct st_sched *s, int64_t *out, int32_t n)
{
    pthread_mutex_lock(&s->mu);
    for (int32_t m = 0; m < n; m++)
        out[m] = m < s->n_models ? s->models[m].n_waiting : 0;
    pthread_mutex_unlock(&s->mu);
}

enum st_status st_sched_ring_new(struct st_sched *s, int32_t capacity)
{
    s->ring_cap = (size_t)capacity;
    if (capacity == 0)
        return ST_OK;
    s->ring = calloc(s->ring_cap, sizeof(*s->ring));   /* size from the config: checked */
    return s->ring ? ST_OK : ST_ERR_NOMEM;
}

static double ns_to_ms(int64_t ns)
{
    return (double)ns / (double)ST_NS_PER_MS;
}

void st_sched_activity_dispatch(struct st_sched *s, struct st_sched_job *j)
{
    if (s->ring_cap == 0) {
        j->activity_id = 0;
        return;
    }
    uint64_t id = ++s->last_activity_id;
    struct st_activity *a = &s->ring[(id - 1) % s->ring_cap];
    memset(a, 0, sizeof(*a));
    a->id = id;
    memcpy(a->request_id, j->request_id, sizeof(a->request_id));
    a->request_id[sizeof(a->request_id) - 1] = '\0';
    a->model = j->model;
    a->engine = j->engine;
    a->slot = j->slot;
    a->priority = j->priority;
    a->band = st_band_of(j->priority);
    a->score = j->dispatch_score;
    a->queue_wait_ms = ns_to_ms(j->dispatch_ns - j->arrival_ns);
    a->prompt_tokens = j->prompt_tokens;
    a->swapped = j->swapped;
    a->ttft_ms = -1;
    a->total_ms = -1;
    a->dispatched_unix_ms = s->t0_unix_ms + (j->dispatch_ns - s->t0_ns) / ST_NS_PER_MS;
    j->activity_id = id;
}

struct st_activity *st_sched_activity_of(struct st_sched *s, const struct st_sched_job *j)
{
    if (s->ring_cap == 0 || j->activity_id == 0)
        return NULL;
    struct st_activity *a = &s->ring[(j->activity_id - 1) % s->ring_cap];
    return a->id == j->activity_id ? a : NULL;
}

void st_sched_activity_finish(struct st_sched *s, const struct st_sched_job *j,
                              enum st_outcome outcome, const struct st_job_report *report)
{
    struct st_activity *a = st_sched_activity_of(s, j);
    if (!a)
        return;
    int64_t now = st_clock_now(s->clock);
    a->finished = true;
    a->outcome = outcome;
    a->give_ways = j->yields;
    a->total_ms = ns_to_ms(now - j->arrival_ns);
    if (report) {
        if (report->first_token_ns > 0)
            a->ttft_ms = ns_to_ms(report->first_token_ns - j->arrival_ns);
        a->n_generated = report->n_generated;
        a->mtp_drafted = report->mtp_drafted;
        a->mtp_accepted = report->mtp_accepted;
    }
    if (s->activity_hook)
        s->activity_hook(s->activity_hook_ctx, a);
}

void st_sched_set_activity_hook(struct st_sched *s, st_activity_hook fn, void *ctx)
{
    pthread_mutex_lock(&s->mu);
    s->activity_hook = fn;
    s->activity_hook_ctx = ctx;
    pthread_mutex_unlock(&s->mu);
}

bool st_sched_activity_continue(struct st_sched *s, uint64_t last_id)
{
    pthread_mutex_lock(&s->mu);
    bool fresh = s->last_activity_id == 0;
    if (fresh)
        s->last_activity_id = s->activity_base = last_id;
    pthread_mutex_unlock(&s->mu);
    return fresh;
}

size_t st_sched_activity(struct st_sched *s, struct st_activity *out, size_t max)
{
    pthread_mutex_lock(&s->mu);
    uint64_t n = s->last_activity_id - s->activity_base;
    if (n > s->ring_cap)
        n = s->ring_cap;
    if (n > max)
        n = max;
    uint64_t first = s->last_activity_id - n + 1;
    for (uint64_t i = 0; i < n; i++)
        out[i] = s->ring[(first + i - 1) % s->ring_cap];
    pthread_mutex_unlock(&s->mu);
    return (size_t)n;
}

void st_sched_dispatch_line_fill(const struct st_sched_job *j, struct st_sched_dispatch_line *l)
{
    memcpy(l->request_id, j->request_id, sizeof(l->request_id));
    l->request_id[sizeof(l->request_id) - 1] = '\0';
    l->priority = j->priority;
    l->band = st_band_of(j->priority);
    l->score = j->dispatch_score;
    l->queue_wait_ms = ns_to_ms(j->dispatch_ns - j->arrival_ns);
    l->model = j->model;
    l->engine = j->engine;
    l->slot = j->slot;
    l->prompt_tokens = j->prompt_tokens;
}

void st_sched_dispatch_line_log(const struct st_sched_dispatch_line *l)
{
    static const char *const keys[] = {
        "serial_priority", "serial_band", "serial_score", "serial_queue_wait_ms",
        "request_id", "model", "engine", "slot", "prompt_tokens",
    };
    static const bool numeric[] = { true, false, true, true, false, true, true, true, true };
    char v[9][48];

    if (!st_log_enabled(ST_LOG_INFO))
        return;
    snprintf(v[0], sizeof(v[0]), "%d", (int)l->priority);
    snprintf(v[1], sizeof(v[1]), "%s", st_band_name(l->band));
    snprintf(v[2], sizeof(v[2]), "%.3f", l->score);
    snprintf(v[3], sizeof(v[3]), "%.3f", l->queue_wait_ms);
    snprintf(v[4], sizeof(v[4]), "%s", l->request_id);
    snprintf(v[5], sizeof(v[5]), "%d", (int)l->model);
    snprintf(v[6], sizeof(v[6]), "%d", (int)l->engine);
    snprintf(v[7], sizeof(v[7]), "%d", (int)l->slot);
    snprintf(v[8], sizeof(v[8]), "%lld", (long long)l->prompt_tokens);
    const char *vals[9];
    for (int i = 0; i < 9; i++)
        vals[i] = v[i];
    st_log_kv(ST_LOG_INFO, "sched", "dispatch", 9, keys, vals, numeric);
}
