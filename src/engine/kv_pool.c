/* kv_pool.c -- the unified KV pool (--kv-unified, docs/BATCHING.md "The
 * unified KV pool"): the slots of an engine share kv_pool tokens of KV,
 * any slot up to all of them, instead of kv_pool / parallel each.
 *
 * The runner gives every slot a region of the whole pool (the layout
 * [slot][pos] per layer stays, so attention, prefix reuse, copies and
 * slot files work unchanged); on the CPU that memory is committed only as
 * rows are written and given back when a slot is cut (runner_model.c,
 * src/model/kv_trim.c). This file keeps the sum of what the slots hold
 * within the pool:
 *
 *   held     a busy slot holds max(kv_held, n_past): its whole prompt from
 *            admission (so two long reads never race for the same room),
 *            then one more per token fed; an idle slot holds the prefix it
 *            caches for the next request (cache.n_kv).
 *   admit    a request is granted a slot only when its prompt fits beside
 *            what the busy slots hold (st_kv_pool_fits, from the slot-
 *            choosing callback under the scheduler's mutex); otherwise it
 *            stays first in line (ST_SCHED_SLOT_WAIT) until slots free.
 *            Idle caches never block it: once granted, the least recently
 *            freed ones are evicted until it fits. No preemption, no
 *            deadlock: busy requests always end (below), and a prompt
 *            longer than the pool was refused at submit (400).
 *   grow     a decoding slot needs one more cell per token; when busy slots
 *            hold the whole pool (after evicting idle caches) its request
 *            ends with finish "length", as at the end of a context.
 *   drafts   a verify of k drafts writes k rows past n_past for a moment:
 *            k is cut to the free cells, so even those stay in the pool.
 *
 * Sums are taken over the slots each time (n_active of them, at most a
 * few hundred): nothing to keep in step.
 *
 * Thread: the engine's own thread (st_kv_pool_fits also under the
 * scheduler's mutex, on that thread).
 */
#include "engine/kv_pool.h"
#include "strata/log.h"

int64_t st_kv_pool_size(const struct st_engine *e)
{
    if (e->model < 0 || e->model >= e->pool->n_models)
        return 0;
    return e->pool->models[e->model].cfg.kv_pool;
}

static int64_t held(const struct st_engine_slot *sl)
{
    return sl->req ? ST_MAX(sl->kv_held, sl->n_past) : sl->cache.n_kv;
}

static int32_t n_used_slots(const struct st_engine *e)
{
    return ST_MIN(e->n_active, e->n_slots);
}

int64_t st_kv_pool_used(const struct st_engine *e)
{
    int64_t n = 0;
    for (int32_t i = 0; i < n_used_slots(e); i++)
        n += held(&e->slots[i]);
    return n;
}

int64_t st_kv_pool_slot_held(const struct st_engine_slot *sl)
{
    return held(sl);
}

int64_t st_kv_pool_busy(const struct st_engine *e)
{
    int64_t n = 0;
    for (int32_t i = 0; i < n_used_slots(e); i++)
        n += e->slots[i].req ? held(&e->slots[i]) : 0;
    return n;
}

bool st_kv_pool_fits(const struct st_engine *e, const struct st_request *req)
{
    int64_t pool = st_kv_pool_size(e);
    if (pool <= 0 || req->job.model != e->model || req->n_tokens > pool)
        return true;
    return st_kv_pool_busy(e) + req->n_tokens <= pool;
}

/* The idle slot (not 'keep') caching a prefix that was freed longest ago;
 * -1 none. */
static int32_t lru_idle(const struct st_engine *e, int32_t keep)
{
    int32_t best = -1;
    for (int32_t i = 0; i < n_used_slots(e); i++) {
        const struct st_engine_slot *sl = &e->slots[i];
        if (i == keep || sl->req || sl->cache.n_kv <= 0)
            continue;
        if (best < 0 || sl->cache.stamp < e->slots[best].cache.stamp)
            best = i;
    }
    return best;
}

/* Evict idle caches (never 'keep') until 'used' + 'extra' fits the pool
 * or none is left; 'used' counts 'keep' as 'keep_held'. */
static int64_t evict_until(struct st_engine *e, int32_t keep, int64_t keep_held, int64_t extra)
{
    int64_t pool = st_kv_pool_size(e);
    int64_t used = st_kv_pool_used(e);
    if (keep >= 0)
        used += keep_held - held(&e->slots[keep]);
    while (used + extra > pool) {
        int32_t v = lru_idle(e, keep);
        if (v < 0)
            break;
        struct st_engine_slot *sl = &e->slots[v];
        used -= sl->cache.n_kv;
        st_log(ST_LOG_DEBUG, "engine", "engine %d: the KV pool evicts slot %d's cached "
               "prefix of %lld tokens", (int)e->index, (int)v, (long long)sl->cache.n_kv);
        st_engine_prefix_evict(e, sl);
    }
    return used;
}

void st_kv_pool_admit(struct st_engine *e, int32_t to, const struct st_request *req)
{
    if (st_kv_pool_size(e) <= 0 || to < 0 || to >= n_used_slots(e))
        return;
    /* slot 'to' will hold the prompt, whatever of it its cache keeps */
    (void)evict_until(e, to, req->n_tokens, 0);
}

bool st_kv_pool_grow(struct st_engine *e, struct st_engine_slot *sl, int64_t n)
{
    int64_t pool = st_kv_pool_size(e);
    if (pool <= 0 || n <= held(sl))
        return true;
    int64_t extra = n - held(sl);
    if (evict_until(e, -1, 0, extra) + extra > pool)
        return false;   /* dry: busy slots hold it all */
    sl->kv_held = n;
    return true;
}

bool st_kv_pool_settle(struct st_engine *e, const struct st_engine_slot *sl)
{
    int64_t pool = st_kv_pool_size(e);
    if (pool <= 0)
        return true;
    if (st_kv_pool_busy(e) + sl->cache.n_kv > pool)
        return false;
    return evict_until(e, sl->index, sl->cache.n_kv, 0) <= pool;
}

int32_t st_kv_pool_drafts(const struct st_engine *e, const struct st_engine_slot *sl, int32_t k)
{
    int64_t pool = st_kv_pool_size(e);
    if (pool <= 0 || k <= 0)
        return k;
    /* rows past what the slot holds: n_past + 1 + k against held + free */
    int64_t room = pool - st_kv_pool_used(e) + held(sl) - (sl->n_past + 1);
    return (int32_t)ST_MAX((int64_t)0, ST_MIN((int64_t)k, room));
}
