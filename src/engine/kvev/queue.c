/* queue.c -- the KV events waiting to be sent (queue.h). A plain linked
 * list under a mutex: the engine threads copy each event's keys and
 * tokens into one allocation and append it; the publisher takes the
 * whole list at once, so neither side holds the lock for long.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/kvev/queue.h"
#include "strata/log.h"

void st_kv_queue_init(struct st_kv_queue *q)
{
    memset(q, 0, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    q->tail = &q->head;
}

void st_kv_events_free(struct st_kv_event *e)
{
    while (e) {
        struct st_kv_event *next = e->next;
        free(e);
        e = next;
    }
}

void st_kv_queue_fini(struct st_kv_queue *q)
{
    st_kv_events_free(q->head);
    pthread_mutex_destroy(&q->mu);
    memset(q, 0, sizeof(*q));
}

static double wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void push(struct st_kv_queue *q, struct st_kv_event *e)
{
    pthread_mutex_lock(&q->mu);
    if (q->queued >= ST_KV_QUEUE_MAX) {
        if (q->dropped++ == 0)
            st_log(ST_LOG_WARN, "kv-events", "the event queue is full (%d events: no "
                   "subscriber, or one too slow): dropping events; the indexer's view of "
                   "this pod is wrong until the blocks concerned are evicted", ST_KV_QUEUE_MAX);
        pthread_mutex_unlock(&q->mu);
        free(e);
        return;
    }
    *q->tail = e;
    q->tail = &e->next;
    q->queued++;
    pthread_mutex_unlock(&q->mu);
}

/* One event with room for n keys and n_tok tokens; NULL without memory
 * (the event is then lost, like a full queue's, and counted). */
static struct st_kv_event *ev_new(struct st_kv_queue *q, enum st_kv_event_kind kind,
                                  int32_t model, int64_t n, int64_t n_tok)
{
    size_t bytes = sizeof(struct st_kv_event) + (size_t)n * sizeof(uint64_t) +
                   (size_t)n_tok * sizeof(int32_t);
    struct st_kv_event *e = malloc(bytes);
    if (!e) {
        pthread_mutex_lock(&q->mu);
        q->dropped++;
        pthread_mutex_unlock(&q->mu);
        return NULL;
    }
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->model = model;
    e->n = n;
    e->ts = wall_seconds();
    e->keys = (uint64_t *)(void *)(e + 1);
    e->tokens = (int32_t *)(void *)(e->keys + n);
    return e;
}

void st_kv_queue_stored(struct st_kv_queue *q, int32_t model, const uint64_t *keys, int64_t n,
                        uint64_t parent, const int32_t *tokens, int32_t block)
{
    int64_t n_tok = n * block;
    struct st_kv_event *e = n > 0 ? ev_new(q, ST_KV_STORED, model, n, n_tok) : NULL;
    if (!e)
        return;
    e->parent = parent;
    e->block = block;
    memcpy(e->keys, keys, (size_t)n * sizeof(*keys));
    memcpy(e->tokens, tokens, (size_t)n_tok * sizeof(*tokens));
    push(q, e);
}

void st_kv_queue_removed(struct st_kv_queue *q, int32_t model, const uint64_t *keys, int64_t n)
{
    struct st_kv_event *e = n > 0 ? ev_new(q, ST_KV_REMOVED, model, n, 0) : NULL;
    if (!e)
        return;
    memcpy(e->keys, keys, (size_t)n * sizeof(*keys));
    push(q, e);
}

void st_kv_queue_cleared(struct st_kv_queue *q, int32_t model)
{
    struct st_kv_event *e = ev_new(q, ST_KV_CLEARED, model, 0, 0);
    if (e)
        push(q, e);
}

struct st_kv_event *st_kv_queue_take(struct st_kv_queue *q, uint64_t *dropped)
{
    pthread_mutex_lock(&q->mu);
    struct st_kv_event *list = q->head;
    q->head = NULL;
    q->tail = &q->head;
    q->queued = 0;
    if (dropped)
        *dropped = q->dropped;
    q->dropped = 0;
    pthread_mutex_unlock(&q->mu);
    return list;
}
