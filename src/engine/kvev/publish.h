/* publish.h -- the KV-event publisher (docs/KV-EVENTS.md): a thread that
 * sends a queue of events (queue.h) over a ZeroMQ socket as llm-d's KV
 * indexer reads vLLM's events. Private to src/engine; the blocks the
 * events describe are kv_blocks.c's.
 *
 *   publish_zmq.c  the thread, msgpack-c encoding, libzmq
 *   publish_off.c  a build without libzmq or msgpack-c: open says so
 */
#ifndef STRATA_ENGINE_KVEV_PUBLISH_H
#define STRATA_ENGINE_KVEV_PUBLISH_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/kvev/queue.h"
#include "strata/err.h"

struct st_kv_pub;

/* Opens the socket on 'endpoint' and starts the thread, which sends what
 * 'queue' (borrowed: it outlives the publisher) holds. model_names[0..n)
 * are copied: the topic's last part, by model index. */
enum st_status st_kv_pub_open(const char *endpoint, const char *const *model_names,
                              int32_t n_models, struct st_kv_queue *queue,
                              struct st_kv_pub **out, struct st_err *err);
/* The pod's "IP:PORT" (the topic's middle); nothing is sent before. */
void st_kv_pub_set_pod(struct st_kv_pub *p, const char *pod);
/* Sends what is queued (for a subscriber there), stops the thread, closes
 * the socket. NULL is a no-op. */
void st_kv_pub_free(struct st_kv_pub *p);

#endif /* STRATA_ENGINE_KVEV_PUBLISH_H */
