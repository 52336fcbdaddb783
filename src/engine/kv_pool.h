/* kv_pool.h -- the unified KV pool (kv_pool.c; --kv-unified, docs/BATCHING.md
 * "The unified KV pool"). Private to src/engine; the types are pool.h's.
 *
 * Thread: the engine's own thread (st_kv_pool_fits also under the
 * scheduler's mutex, on that thread).
 */
#ifndef STRATA_ENGINE_KV_POOL_H
#define STRATA_ENGINE_KV_POOL_H

#include "engine/pool.h"

/* Each slot's region is the whole pool; the engine
 * keeps the sum of what the slots hold within it. A busy slot holds
 * max(kv_held, n_past), an idle one the prefix it caches (cache.n_kv).
 * All are no-ops (true) when the loaded model has no pool. */
/* The pool's size in tokens; 0 = per-slot regions (the default). */
int64_t st_kv_pool_size(const struct st_engine *e);
/* Tokens the first n_active slots hold together now. */
int64_t st_kv_pool_used(const struct st_engine *e);
/* ... of which busy slots hold (their grants): what admission must leave
 * room beside; the rest are idle slots' cached prefixes, evictable. */
int64_t st_kv_pool_busy(const struct st_engine *e);
/* Tokens slot sl holds in the pool (its grant, or its cached prefix). */
int64_t st_kv_pool_slot_held(const struct st_engine_slot *sl);
/* May 'req' be admitted now: its prompt fits beside what busy slots hold
 * (idle caches can be evicted)? Also true for a prompt the pool can never
 * hold (it fails on its own, never waits forever) and for another model's
 * request (a swap empties every slot). Called by the slot-choosing
 * callback under the scheduler's mutex: reads slot state only. */
bool st_kv_pool_fits(const struct st_engine *e, const struct st_request *req);
/* 'req' was granted slot 'to' (not bound yet): evict idle slots' cached
 * prefixes, least recently freed first, until its prompt fits. */
void st_kv_pool_admit(struct st_engine *e, int32_t to, const struct st_request *req);
/* Busy slot sl needs n cells (the next token is fed at n - 1): true when
 * it holds them or got them (evicting idle caches if need be); false when
 * the pool is dry (the request then ends with finish "length"). */
bool st_kv_pool_grow(struct st_engine *e, struct st_engine_slot *sl, int64_t n);
/* Idle slot sl was filled from outside (a slot file, POST /slots restore):
 * evict other idle caches until the pool holds it; false (nothing evicted
 * past what room needed) when busy slots leave too little room. */
bool st_kv_pool_settle(struct st_engine *e, const struct st_engine_slot *sl);
/* How many of k drafts slot sl may verify without passing the pool (a
 * verify writes n_past + 1 + k rows). */
int32_t st_kv_pool_drafts(const struct st_engine *e, const struct st_engine_slot *sl,
                          int32_t k);

#endif /* STRATA_ENGINE_KV_POOL_H */
