/* kv_blocks.h -- the slots' KV as fixed blocks for the KV events
 * (kv_blocks.c, docs/KV-EVENTS.md "Blocks"). Private to src/engine.
 *
 * Block i of a slot is its cached ids [i B, (i + 1) B), B the pool's
 * kv_block; only full blocks of final KV count. Its engine key chains
 * the one before it: key_i = FNV-1a 64 over (key_{i-1}, the block's ids),
 * key_{-1} = the FNV-1a of the model's name, never 0. A slot's announced
 * blocks are always the first n of its KV, so a key present anywhere in
 * the pod brings its whole parent chain with it.
 *
 * Thread: sync and unload on the slot's engine thread; the pool-wide
 * counts under the index's own leaf mutex.
 */
#ifndef STRATA_ENGINE_KV_BLOCKS_H
#define STRATA_ENGINE_KV_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/err.h"

struct st_engine;
struct st_engine_pool;
struct st_engine_slot;

/* The blocks of one slot the events announced: keys[0..n), first to last. */
struct st_kv_slot {
    uint64_t *keys;      /* owned (malloc); cap */
    int64_t   n, cap;
};

struct st_kv_event;

/* Opens the pool-wide block counts (p->kv), the event queue and the
 * publisher on 'endpoint'; endpoint NULL (tests): no publisher, the
 * events stay queued for st_kv_blocks_take. */
enum st_status st_kv_blocks_open(struct st_engine_pool *p, const char *endpoint,
                                 struct st_err *err);
/* (tests) Every event queued, oldest first; free with st_kv_events_free
 * (kvev/queue.h). */
struct st_kv_event *st_kv_blocks_take(struct st_engine_pool *p);
/* After the engines are gone: sends what is left, frees p->kv. */
void st_kv_blocks_close(struct st_engine_pool *p);
/* Slot sl's final KV now holds its cache ids [0, n_tokens): its announced
 * blocks become the first n_tokens / B. Callers cut (a smaller n_tokens)
 * before ids under the announced blocks change. Blocks no slot of the pod
 * holds any more go out as BlockRemoved, blocks new to the pod as one
 * BlockStored. A no-op with the events off. */
void st_kv_blocks_sync(struct st_engine *e, struct st_engine_slot *sl, int64_t n_tokens);
/* Model 'model' leaves engine e (unload, swap): every slot's blocks go;
 * AllBlocksCleared when no engine of the pod holds one of the model's. */
void st_kv_blocks_unload(struct st_engine *e, int32_t model);
/* True when the events are on (prefix.c then copies a block a slot lacks
 * even under ST_PREFIX_COPY_MIN tokens). */
bool st_kv_blocks_on(const struct st_engine_pool *p);
void st_kv_slot_fini(struct st_kv_slot *s);

#endif /* STRATA_ENGINE_KV_BLOCKS_H */
