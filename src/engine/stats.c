/* stats.c -- what the pool tells /metrics and /slots.
 *
 * Counters and the latency histograms live in the pool behind its mutex
 * (one short lock per token or per read chunk); kv_usage and running come
 * from per-engine atomics the step updates; slot views are copied from
 * each engine's table under that engine's mutex. Every read here is
 * O(engines + slots): cheap enough to scrape every 50 ms. The engine
 * thread refreshes its views (st_engine_update_views) after each step, and
 * as a request ends, before its END (live.c): a client that has its
 * answer sees its slot free.
 *
 * Histogram buckets (seconds, Prometheus style, upper bounds; +Inf implied):
 * 0.005 .. 60, the same for time to first token and inter-token latency;
 * 0.1 .. 600 for model loads (models.c keeps one per model).
 */
#include <stdio.h>
#include <string.h>

#include "engine/pool.h"
#include "engine/kv_pool.h"

static const double bucket_bounds[ST_HIST_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5,   5.0,  10.0,  15.0, 20.0, 30.0, 45.0, 60.0,
};

void st_histogram_init(struct st_histogram *h)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->bounds, bucket_bounds, sizeof(bucket_bounds));
    h->n_bounds = ST_HIST_BUCKETS;
}

/* Model loads take from a blink (sim) to minutes (a large GGUF from disk). */
static const double load_bounds[] = {
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
};

void st_histogram_init_load(struct st_histogram *h)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->bounds, load_bounds, sizeof(load_bounds));
    h->n_bounds = (int32_t)ST_ARRAY_LEN(load_bounds);
}

void st_histogram_add(struct st_histogram *h, double seconds)
{
    int32_t i = 0;
    while (i < h->n_bounds && seconds > h->bounds[i])
        i++;
    h->counts[i]++;   /* i == n_bounds: the +Inf bucket */
    h->sum += seconds;
    h->count++;
}

void st_pool_count_read(struct st_engine_pool *p, int64_t n)
{
    pthread_mutex_lock(&p->mu);
    p->prompt_tokens += (uint64_t)n;
    pthread_mutex_unlock(&p->mu);
}

void st_pool_count_token(struct st_engine_pool *p, enum st_band band, bool generated, bool drawn,
                         bool first, double seconds)
{
    if ((int)band < 0 || band >= ST_BAND_COUNT)
        band = ST_BAND_NORMAL;
    pthread_mutex_lock(&p->mu);
    if (generated)
        p->generated_tokens++;
    if (drawn)
        p->drawn_tokens++;
    if (first)
        st_histogram_add(&p->ttft[band], seconds);
    else if (generated)
        st_histogram_add(&p->itl[band], seconds);
    pthread_mutex_unlock(&p->mu);
}

void st_pool_count_times(struct st_engine_pool *p, bool first, double seconds)
{
    pthread_mutex_lock(&p->mu);
    if (first) {
        p->read_seconds += seconds;
    } else {
        p->gen_seconds += seconds;
        p->gen_steps++;
    }
    pthread_mutex_unlock(&p->mu);
}

void st_pool_count_step(struct st_engine_pool *p, int32_t n_slots, int64_t seq)
{
    pthread_mutex_lock(&p->mu);
    p->steps++;
    p->step_slots += (uint64_t)n_slots;
    p->seq_max = ST_MAX(p->seq_max, seq);
    pthread_mutex_unlock(&p->mu);
}

/* Tokens of KV model m's slots hold on one engine. */
static int64_t slots_kv_tokens(const struct st_engine_pool *p, int32_t m)
{
    if (p->models[m].cfg.kv_pool > 0)   /* --kv-unified: the pool, shared */
        return p->models[m].cfg.kv_pool;
    return (int64_t)p->models[m].cfg.parallel * (int64_t)p->models[m].cfg.ctx_size;
}

void st_engine_pool_stats(struct st_engine_pool *p, struct st_pool_stats *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&p->mu);
    out->prompt_tokens = p->prompt_tokens;
    out->generated_tokens = p->generated_tokens;
    out->cached_tokens = p->cached_tokens;
    out->copied_tokens = p->copied_tokens;
    out->mtp_drafted = p->mtp_drafted;
    out->mtp_accepted = p->mtp_accepted;
    out->mtp_steps = p->mtp_steps;
    out->ngram_drafted = p->ngram_drafted;
    out->ngram_accepted = p->ngram_accepted;
    out->ngram_steps = p->ngram_steps;
    out->drawn_tokens = p->drawn_tokens;
    out->spec_plain_steps = p->spec_plain_steps;
    out->read_seconds = p->read_seconds;
    out->gen_seconds = p->gen_seconds;
    out->gen_steps = p->gen_steps;
    out->steps = p->steps;
    out->step_slots = p->step_slots;
    out->seq_max = p->seq_max;
    memcpy(out->ttft, p->ttft, sizeof(out->ttft));
    memcpy(out->itl, p->itl, sizeof(out->itl));
    pthread_mutex_unlock(&p->mu);

    int64_t largest = 0;   /* what an engine without a model would hold */
    for (int32_t m = 0; m < p->n_models; m++)
        largest = ST_MAX(largest, slots_kv_tokens(p, m));
    double held = 0.0, capacity = 0.0;
    for (int32_t i = 0; i < p->n_engines; i++) {
        const struct st_engine *e = &p->engines[i];
        int32_t m = atomic_load(&e->model_view);
        held += (double)atomic_load(&e->held_tokens);
        /* a slot's KV plus its recurrent state and the most state checkpoints it may
         * keep (allocated as they are taken, but the bound is what it may grow to) */
        int64_t states = 1 + atomic_load(&e->state_ckpts);
        if (m >= 0)
            capacity += (double)slots_kv_tokens(p, m) +
                        (double)p->models[m].cfg.parallel *
                        (double)(atomic_load(&e->state_tokens) * states);
        out->kv_tokens += m >= 0 ? slots_kv_tokens(p, m) : largest;
        out->running += atomic_load(&e->busy);
        out->kv_pool_held += atomic_load(&e->pool_held);
        out->kv_pool_busy += atomic_load(&e->pool_busy);
        if (m >= 0 && p->models[m].cfg.kv_pool > 0)
            out->kv_pool_tokens += p->models[m].cfg.kv_pool;
    }
    out->kv_usage = capacity > 0.0 ? held / capacity : 0.0;
    if (out->kv_usage > 1.0)
        out->kv_usage = 1.0;
}

size_t st_engine_pool_slots(struct st_engine_pool *p, struct st_slot_view *out, size_t max)
{
    size_t total = 0;
    for (int32_t i = 0; i < p->n_engines; i++) {
        struct st_engine *e = &p->engines[i];
        pthread_mutex_lock(&e->mu);
        for (int32_t s = 0; s < e->n_slots; s++, total++) {
            if (total < max)
                out[total] = e->views[s];
        }
        pthread_mutex_unlock(&e->mu);
    }
    return total;
}

/* ---- slot views ------------------------------------------------------ */

static enum st_slot_state view_state(const struct st_engine_slot *sl)
{
    if (!sl->req)
        return ST_SLOT_IDLE;
    switch (sl->req->job.state) {
    case ST_JOB_ADMITTED:
        return ST_SLOT_ADMITTED;
    case ST_JOB_READING:
        return ST_SLOT_READING;
    case ST_JOB_PARKED:
        return ST_SLOT_PARKED;
    case ST_JOB_DECODING:
        return ST_SLOT_DECODING;
    case ST_JOB_NEW:
    case ST_JOB_WAITING:
    case ST_JOB_DONE:
        break;
    }
    return sl->decoding ? ST_SLOT_DECODING : ST_SLOT_ADMITTED;
}

void st_engine_update_views(struct st_engine *e)
{
    int64_t held = 0;
    bool unified = st_kv_pool_size(e) > 0;
    pthread_mutex_lock(&e->mu);
    for (int32_t i = 0; i < e->n_slots; i++) {
        const struct st_engine_slot *sl = &e->slots[i];
        struct st_slot_view *v = &e->views[i];
        memset(v, 0, sizeof(*v));
        v->engine = e->index;
        v->slot = i;
        v->model = e->model;
        v->n_ctx = e->runner ? e->runner->n_ctx : 0;
        v->state = view_state(sl);
        v->band = ST_BAND_NORMAL;
        /* idle: the tokens its KV keeps for the next request; busy: those
         * its request found there (prefix.c) */
        v->n_cached = sl->req ? sl->req->n_cached : sl->cache.n_kv;
        v->kv_blocks = sl->kvb.n;
        v->kv_last_block = sl->kvb.n > 0 ? sl->kvb.keys[sl->kvb.n - 1] : 0;
        v->n_checkpoints = e->runner ? st_runner_n_checkpoints(e->runner, i) : 0;
        /* unified pool: what the slot holds against it (a busy one its whole
         * prompt from admission, kv_pool.c); per-slot regions: its rows */
        v->n_kv = unified ? st_kv_pool_slot_held(sl) : sl->req ? sl->n_past : sl->cache.n_kv;
        if (!sl->req)
            continue;
        snprintf(v->request_id, sizeof(v->request_id), "%s", sl->req->id);
        v->priority = sl->req->job.priority;
        v->band = sl->req->band;
        v->n_prompt = sl->req->n_tokens;
        v->n_read = ST_MIN(sl->n_past, sl->req->n_tokens);
        v->n_generated = sl->n_generated;
        v->give_ways = sl->req->job.yields;
        v->n_draft = sl->decoding ? sl->mtp.n_draft : 0;
        /* kv_usage counts busy slots only: an idle slot's cached prefix is
         * given up for new work (evicted, or overwritten) as vLLM's free
         * cached blocks are */
        held += v->n_kv + atomic_load(&e->state_tokens) * (1 + v->n_checkpoints);
    }
    pthread_mutex_unlock(&e->mu);
    atomic_store(&e->held_tokens, held);
    atomic_store(&e->pool_held, unified ? st_kv_pool_used(e) : 0);
    atomic_store(&e->pool_busy, unified ? st_kv_pool_busy(e) : 0);
}
