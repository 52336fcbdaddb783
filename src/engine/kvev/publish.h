/* publish.h -- the KV-event publisher (docs/KV-EVENTS.md): a bounded queue
 * the engine threads append to, and a thread that sends it over a ZeroMQ
 * PUB socket as llm-d's KV indexer reads vLLM's events. Private to
 * src/engine; the blocks the events describe are kv_blocks.c's.
 *
 *   publish_zmq.c  the queue, the thread, msgpack-c encoding, libzmq
 *   publish_off.c  a build without libzmq or msgpack-c: open says so
 *
 * Thread: the push functions from any thread (the engines'); they never
 * block on the network: a full queue drops the event and counts it.
 */
#ifndef STRATA_ENGINE_KVEV_PUBLISH_H
#define STRATA_ENGINE_KVEV_PUBLISH_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/err.h"

struct st_kv_pub;

/* Events waiting at most; past that new ones are dropped (and counted). */
#define ST_KV_PUB_QUEUE_MAX 65536

/* Opens the socket on 'endpoint' and starts the thread. model_names[0..n)
 * are copied (the topic's last part, by model index); block_size goes in
 * every BlockStored. */
enum st_status st_kv_pub_open(const char *endpoint, const char *const *model_names,
                              int32_t n_models, int32_t block_size, struct st_kv_pub **out,
                              struct st_err *err);
/* The pod's "IP:PORT" (the topic's middle); nothing is sent before. */
void st_kv_pub_set_pod(struct st_kv_pub *p, const char *pod);
/* BlockStored: the engine keys hashes[0..n) (a parent chain, first to
 * last), the key of the block before them (0: none, they start the
 * sequence) and their tokens, n * block_size ids in order. */
void st_kv_pub_stored(struct st_kv_pub *p, int32_t model, const uint64_t *hashes, int64_t n,
                      uint64_t parent, const int32_t *tokens);
/* BlockRemoved: keys announced earlier that no slot holds any more. */
void st_kv_pub_removed(struct st_kv_pub *p, int32_t model, const uint64_t *hashes, int64_t n);
/* AllBlocksCleared: the model left every engine (unload, swap). */
void st_kv_pub_cleared(struct st_kv_pub *p, int32_t model);
/* Sends what is queued (for a subscriber there), stops the thread, closes
 * the socket. NULL is a no-op. */
void st_kv_pub_free(struct st_kv_pub *p);
/* True when this build can publish (libzmq and msgpack-c were found). */
bool st_kv_pub_built(void);

#endif /* STRATA_ENGINE_KVEV_PUBLISH_H */
