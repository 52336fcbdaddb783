/* queue.h -- the KV events waiting to be sent (queue.c): the engine
 * threads append, the publisher (publish_zmq.c) or a test takes them.
 * Private to src/engine (docs/KV-EVENTS.md).
 *
 * Thread: any; one leaf mutex inside. Appending never waits on anything
 * else: a full queue drops the event and counts it.
 */
#ifndef STRATA_ENGINE_KVEV_QUEUE_H
#define STRATA_ENGINE_KVEV_QUEUE_H

#include <pthread.h>
#include <stdint.h>

/* Events waiting at most; past that new ones are dropped (and counted). */
#define ST_KV_QUEUE_MAX 65536

enum st_kv_event_kind { ST_KV_STORED, ST_KV_REMOVED, ST_KV_CLEARED };

/* One event; keys and tokens live in the same allocation. */
struct st_kv_event {
    struct st_kv_event *next;
    enum st_kv_event_kind kind;
    int32_t  model;      /* index into the pool's models: the topic */
    int64_t  n;          /* keys */
    uint64_t parent;     /* (stored) the key before keys[0]; 0 = none */
    double   ts;         /* wall-clock seconds when queued */
    uint64_t *keys;      /* n, first to last */
    int32_t  *tokens;    /* (stored) n * block ids, in order */
    int32_t  block;      /* (stored) tokens per block */
};

struct st_kv_queue {
    pthread_mutex_t mu;
    struct st_kv_event *head, **tail;
    int64_t  queued;
    uint64_t dropped;    /* since the last st_kv_queue_take_dropped */
};

void st_kv_queue_init(struct st_kv_queue *q);
void st_kv_queue_fini(struct st_kv_queue *q);   /* frees what is left */
/* BlockStored of keys[0..n) (n >= 1) with n * block tokens. */
void st_kv_queue_stored(struct st_kv_queue *q, int32_t model, const uint64_t *keys, int64_t n,
                        uint64_t parent, const int32_t *tokens, int32_t block);
void st_kv_queue_removed(struct st_kv_queue *q, int32_t model, const uint64_t *keys, int64_t n);
void st_kv_queue_cleared(struct st_kv_queue *q, int32_t model);
/* Takes every event queued, oldest first (NULL: none); the caller frees
 * the list with st_kv_events_free. *dropped: events lost since the last
 * take (may be NULL). */
struct st_kv_event *st_kv_queue_take(struct st_kv_queue *q, uint64_t *dropped);
void st_kv_events_free(struct st_kv_event *e);

#endif /* STRATA_ENGINE_KVEV_QUEUE_H */
