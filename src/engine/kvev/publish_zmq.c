/* publish_zmq.c -- the KV-event publisher over ZeroMQ with msgpack-c
 * (docs/KV-EVENTS.md "Wire format").
 *
 * The engine threads append events to the queue (queue.h: a copy of the
 * keys and tokens each; they never wait for the network). The publisher
 * thread takes the whole queue, groups consecutive events of one model
 * into batches and sends each as three frames:
 *
 *   kv@<pod>@<model>    the topic (llm-d's indexer reads pod and model)
 *   seq                 8 bytes, big-endian, +1 per message from 0
 *   [ts, [event...]]    msgpack, vLLM's positional (array_like) shape
 *
 * The socket is an XPUB, so the thread sees subscriptions: events wait
 * in the queue until the first subscriber has subscribed (and the pod is
 * named), so that subscriber gets every event from the first one. PUB's
 * own rule (drop while nobody listens) would lose the start to ZeroMQ's
 * slow joiner. After that it is plain PUB: a subscriber that joins later
 * gets what follows. The queue is bounded (ST_KV_QUEUE_MAX): past that
 * an event is dropped and counted, which leaves the indexer's view wrong
 * until the blocks concerned go; a warning says so.
 *
 * Thread: the socket only on the publisher thread; 'mu' (a leaf) guards
 * the pod and the stop flag.
 */
#include <msgpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "engine/kvev/publish.h"
#include "strata/compiler.h"
#include "strata/log.h"

struct st_kv_pub {
    void *ctx, *sock;
    char **models;
    int32_t n_models;
    struct st_kv_queue *queue;    /* borrowed */
    pthread_t thread;
    bool started;                 /* 'thread' runs */
    pthread_mutex_t mu;           /* pod, stop */
    char pod[128];
    bool stop;
    uint64_t seq;                 /* publisher thread only */
    bool subscribed;              /* publisher thread only */
};

void st_kv_pub_set_pod(struct st_kv_pub *p, const char *pod)
{
    pthread_mutex_lock(&p->mu);
    snprintf(p->pod, sizeof(p->pod), "%s", pod);
    pthread_mutex_unlock(&p->mu);
}

/* ---- encoding and sending (publisher thread) ------------------------- */

static void pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_keys(msgpack_packer *pk, const struct st_kv_event *e)
{
    msgpack_pack_array(pk, (size_t)e->n);
    for (int64_t i = 0; i < e->n; i++)
        msgpack_pack_uint64(pk, e->keys[i]);
}

/* vLLM's positional events: BlockStored [tag, block_hashes, parent_block_hash,
 * token_ids, block_size, lora_id, medium], BlockRemoved [tag, block_hashes,
 * medium], AllBlocksCleared [tag]. */
static void pack_event(msgpack_packer *pk, const struct st_kv_event *e)
{
    int32_t block = e->block;
    switch (e->kind) {
    case ST_KV_STORED:
        msgpack_pack_array(pk, 7);
        pack_str(pk, "BlockStored");
        pack_keys(pk, e);
        if (e->parent)
            msgpack_pack_uint64(pk, e->parent);
        else
            msgpack_pack_nil(pk);
        msgpack_pack_array(pk, (size_t)(e->n * block));
        for (int64_t i = 0; i < e->n * block; i++)
            msgpack_pack_uint32(pk, (uint32_t)e->tokens[i]);
        msgpack_pack_int32(pk, block);
        msgpack_pack_nil(pk);          /* lora_id */
        pack_str(pk, "GPU");           /* medium: the engine's own KV */
        break;
    case ST_KV_REMOVED:
        msgpack_pack_array(pk, 3);
        pack_str(pk, "BlockRemoved");
        pack_keys(pk, e);
        pack_str(pk, "GPU");
        break;
    case ST_KV_CLEARED:
        msgpack_pack_array(pk, 1);
        pack_str(pk, "AllBlocksCleared");
        break;
    }
}

/* Events per message at most (vLLM sends one batch per engine step). */
#define BATCH_MAX 256

/* Sends events [e, ...) of e's model, up to BATCH_MAX; returns the first
 * not sent. */
static struct st_kv_event *send_batch(struct st_kv_pub *p, const char *pod,
                                      struct st_kv_event *e)
{
    int32_t model = e->model;
    int32_t n = 0;
    for (struct st_kv_event *x = e; x && x->model == model && n < BATCH_MAX; x = x->next)
        n++;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_double(&pk, e->ts);
    msgpack_pack_array(&pk, (size_t)n);
    for (int32_t i = 0; i < n; i++, e = e->next)
        pack_event(&pk, e);

    char topic[512];
    const char *name = model >= 0 && model < p->n_models ? p->models[model] : "";
    int tn = snprintf(topic, sizeof(topic), "kv@%s@%s", pod, name);
    unsigned char seq[8];
    for (int i = 0; i < 8; i++)
        seq[i] = (unsigned char)(p->seq >> (56 - 8 * i));
    p->seq++;
    /* XPUB never blocks: a subscriber past its high-water mark loses this */
    if (zmq_send(p->sock, topic, (size_t)ST_MIN(tn, (int)sizeof(topic) - 1), ZMQ_SNDMORE) < 0 ||
        zmq_send(p->sock, seq, sizeof(seq), ZMQ_SNDMORE) < 0 ||
        zmq_send(p->sock, sb.data, sb.size, 0) < 0)
        st_log(ST_LOG_WARN, "kv-events", "sending an event batch failed: %s",
               zmq_strerror(zmq_errno()));
    msgpack_sbuffer_destroy(&sb);
    return e;
}

/* Reads the subscription messages waiting (XPUB: first byte 1 = a
 * subscribe), waiting up to 'ms' for the first. */
static void read_subscriptions(struct st_kv_pub *p, long ms)
{
    zmq_pollitem_t it = { .socket = p->sock, .events = ZMQ_POLLIN };
    while (zmq_poll(&it, 1, ms) > 0 && (it.revents & ZMQ_POLLIN)) {
        unsigned char buf[256];
        int n = zmq_recv(p->sock, buf, sizeof(buf), ZMQ_DONTWAIT);
        if (n > 0 && buf[0] == 1 && !p->subscribed) {
            p->subscribed = true;
            st_log(ST_LOG_INFO, "kv-events", "a subscriber joined: publishing");
        }
        ms = 0;
    }
}

/* Takes the queue when it may be sent (a pod named, a subscriber there);
 * NULL otherwise. *stop: the pool is closing. */
static struct st_kv_event *take(struct st_kv_pub *p, char *pod, size_t cap, bool *stop)
{
    pthread_mutex_lock(&p->mu);
    *stop = p->stop;
    bool ready = p->pod[0] && p->subscribed;
    snprintf(pod, cap, "%s", p->pod);
    pthread_mutex_unlock(&p->mu);
    if (!ready)
        return NULL;
    uint64_t dropped = 0;
    struct st_kv_event *list = st_kv_queue_take(p->queue, &dropped);
    if (dropped > 0)
        st_log(ST_LOG_WARN, "kv-events", "%llu events were dropped", (unsigned long long)dropped);
    return list;
}

static void *publisher_main(void *arg)
{
    struct st_kv_pub *p = arg;
    char pod[128];
    for (;;) {
        bool stop;
        read_subscriptions(p, 20);   /* also the loop's pace: 20 ms at most behind */
        struct st_kv_event *list = take(p, pod, sizeof(pod), &stop);
        for (struct st_kv_event *e = list; e;)
            e = send_batch(p, pod, e);
        st_kv_events_free(list);
        if (stop)
            break;
    }
    return NULL;
}

/* ---- life cycle ------------------------------------------------------- */

/* Host "*", 0.0.0.0 or [::] (tcp://HOST:PORT), and ipc://, bind (the
 * pod-discovery mode: the EPP dials every pod); any other host connects
 * (the centralized mode: pods dial one SUB the EPP binds). */
static bool binds(const char *endpoint)
{
    if (strncmp(endpoint, "ipc://", 6) == 0 || strncmp(endpoint, "inproc://", 9) == 0)
        return true;
    const char *h = strstr(endpoint, "://");
    h = h ? h + 3 : endpoint;
    return strncmp(h, "*:", 2) == 0 || strncmp(h, "0.0.0.0:", 8) == 0 ||
           strncmp(h, "[::]:", 5) == 0;
}

void st_kv_pub_free(struct st_kv_pub *p)
{
    if (!p)
        return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    if (p->sock) {
        int linger = 1000;   /* ms for what is still in ZeroMQ's queues */
        zmq_setsockopt(p->sock, ZMQ_LINGER, &linger, sizeof(linger));
        zmq_close(p->sock);
    }
    if (p->ctx)
        zmq_ctx_term(p->ctx);
    for (int32_t i = 0; p->models && i < p->n_models; i++)
        free(p->models[i]);
    free(p->models);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

enum st_status st_kv_pub_open(const char *endpoint, const char *const *model_names,
                              int32_t n_models, struct st_kv_queue *queue,
                              struct st_kv_pub **out, struct st_err *err)
{
    *out = NULL;
    struct st_kv_pub *p = calloc(1, sizeof(*p));
    if (!p)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the KV-event publisher");
    pthread_mutex_init(&p->mu, NULL);
    p->queue = queue;
    p->models = calloc((size_t)ST_MAX(n_models, 1), sizeof(*p->models));
    p->n_models = p->models ? n_models : 0;
    for (int32_t i = 0; i < p->n_models; i++)
        p->models[i] = strdup(model_names[i] ? model_names[i] : "");
    for (int32_t i = 0; i < p->n_models; i++)
        if (!p->models[i])
            p->n_models = 0;
    if (!p->models || (n_models > 0 && p->n_models == 0)) {
        st_kv_pub_free(p);
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the KV-event publisher");
    }
    p->ctx = zmq_ctx_new();
    p->sock = p->ctx ? zmq_socket(p->ctx, ZMQ_XPUB) : NULL;
    if (!p->sock) {
        st_kv_pub_free(p);
        return st_err_set(err, ST_ERR_INTERNAL, "--kv-events: cannot make a ZeroMQ socket: %s",
                          zmq_strerror(zmq_errno()));
    }
    int hwm = 100000;   /* messages per subscriber before ZeroMQ drops (never blocks) */
    zmq_setsockopt(p->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
    bool bind = binds(endpoint);
    if ((bind ? zmq_bind(p->sock, endpoint) : zmq_connect(p->sock, endpoint)) != 0) {
        int e = zmq_errno();
        st_kv_pub_free(p);
        return st_err_set(err, ST_ERR_BAD_CONFIG, "--kv-events %s: cannot %s: %s", endpoint,
                          bind ? "bind" : "connect", zmq_strerror(e));
    }
    if (pthread_create(&p->thread, NULL, publisher_main, p) != 0) {
        st_kv_pub_free(p);
        return st_err_set(err, ST_ERR_INTERNAL, "--kv-events: cannot start the publisher thread");
    }
    p->started = true;
    st_log(ST_LOG_INFO, "kv-events", "KV events: %s %s", bind ? "bound to" : "connecting to",
           endpoint);
    *out = p;
    return ST_OK;
}

