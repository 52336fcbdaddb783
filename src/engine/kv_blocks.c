/* kv_blocks.c -- the slots' KV as the fixed blocks the KV events announce
 * (kv_blocks.h; docs/KV-EVENTS.md "Blocks").
 *
 * llm-d's indexer thinks of a pod as vLLM's one pool of blocks, each
 * stored once. Strata's slots each hold their own KV, so one block (the
 * same key: the same ids from position 0) may sit in several slots, on
 * several engines. The pod-wide count per key (one open-addressing table
 * per model) turns the slots' changes into the pod's: a key's first
 * holder stores it, its last one removes it. As keys chain, the keys a
 * slot adds that are new to the pod are a suffix of its range (nobody
 * holds a block whose parent nobody holds), and so are those it drops
 * that nobody else holds: each sync is at most one event.
 *
 * Thread: engine threads; the tables and the pushes under 'mu' (taken
 * with no other lock held; the queue's own leaf mutex is taken inside).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_blocks.h"
#include "engine/kvev/publish.h"
#include "engine/pool.h"
#include "strata/log.h"

struct kv_table {
    uint64_t *key;       /* 0 = empty */
    int32_t  *count;     /* slots holding it; 0 = dead (kept until a rehash) */
    int64_t   cap, used, live;
};

struct st_kv_index {
    pthread_mutex_t mu;
    struct st_kv_queue queue;  /* what the publisher (or a test) takes */
    struct st_kv_pub *pub;     /* NULL: events stay queued (tests) */
    struct kv_table *tables;   /* n_models */
    uint64_t *seed;            /* n_models: each model's key_{-1} */
    int32_t n_models;
    int32_t block;
    uint64_t *scratch;         /* keys removed by one sync */
    int64_t scratch_cap;
};

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

/* key_i from key_{i-1} and the block's ids (little-endian bytes of both). */
static uint64_t block_key(uint64_t parent, const int32_t *ids, int32_t block)
{
    unsigned char buf[8];
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(parent >> (8 * i));
    uint64_t h = fnv_bytes(FNV_OFFSET, buf, sizeof(buf));
    for (int32_t t = 0; t < block; t++) {
        uint32_t v = (uint32_t)ids[t];
        unsigned char w[4] = { (unsigned char)v, (unsigned char)(v >> 8),
                               (unsigned char)(v >> 16), (unsigned char)(v >> 24) };
        h = fnv_bytes(h, w, sizeof(w));
    }
    return h ? h : 1;   /* 0 means "no parent" on the wire */
}

/* ---- the pod-wide counts --------------------------------------------- */

static int64_t probe(const struct kv_table *t, uint64_t key)
{
    int64_t mask = t->cap - 1, i = (int64_t)(key * UINT64_C(0x9e3779b97f4a7c15) >> 7) & mask;
    while (t->key[i] && t->key[i] != key)
        i = (i + 1) & mask;
    return i;
}

/* Room for one more key: grows (and drops dead keys) past half full. */
static bool table_room(struct kv_table *t)
{
    if (t->cap && 2 * (t->used + 1) <= t->cap)
        return true;
    int64_t cap = 1024;
    while (cap < 4 * (t->live + 1))
        cap *= 2;
    struct kv_table n = { calloc((size_t)cap, sizeof(uint64_t)),
                          calloc((size_t)cap, sizeof(int32_t)), cap, 0, 0 };
    if (!n.key || !n.count) {
        free(n.key);
        free(n.count);
        return false;
    }
    for (int64_t i = 0; i < t->cap; i++) {
        if (t->key[i] && t->count[i] > 0) {
            int64_t j = probe(&n, t->key[i]);
            n.key[j] = t->key[i];
            n.count[j] = t->count[i];
            n.used++;
            n.live++;
        }
    }
    free(t->key);
    free(t->count);
    *t = n;
    return true;
}

/* +1 holder of key; returns the new count (0: no memory, not counted). */
static int32_t incref(struct kv_table *t, uint64_t key)
{
    if (!table_room(t))
        return 0;
    int64_t i = probe(t, key);
    if (!t->key[i]) {
        t->key[i] = key;
        t->used++;
    }
    if (t->count[i]++ == 0)
        t->live++;
    return t->count[i];
}

/* -1 holder of key; returns the new count. */
static int32_t decref(struct kv_table *t, uint64_t key)
{
    if (!t->cap)
        return 0;
    int64_t i = probe(t, key);
    if (!t->key[i] || t->count[i] <= 0)
        return 0;
    if (--t->count[i] == 0)
        t->live--;
    return t->count[i];
}

/* ---- slots ------------------------------------------------------------ */

static bool slot_reserve(struct st_kv_slot *s, int64_t n)
{
    if (n <= s->cap)
        return true;
    int64_t cap = ST_MAX(n, ST_MAX(2 * s->cap, (int64_t)64));
    uint64_t *k = realloc(s->keys, (size_t)cap * sizeof(*k));
    if (!k)
        return false;
    s->keys = k;
    s->cap = cap;
    return true;
}

static bool scratch_reserve(struct st_kv_index *k, int64_t n)
{
    if (n <= k->scratch_cap)
        return true;
    uint64_t *s = realloc(k->scratch, (size_t)n * sizeof(*s));
    if (!s)
        return false;
    k->scratch = s;
    k->scratch_cap = n;
    return true;
}

/* The slot keeps its first 'want' blocks; the dropped ones nobody else
 * holds go out as one BlockRemoved. Under k->mu. */
static void cut(struct st_kv_index *k, int32_t model, struct st_kv_slot *s, int64_t want)
{
    struct kv_table *t = &k->tables[model];
    int64_t n_gone = 0;
    bool room = scratch_reserve(k, s->n - want);
    for (int64_t i = s->n - 1; i >= want; i--) {
        if (decref(t, s->keys[i]) == 0 && room)
            k->scratch[n_gone++] = s->keys[i];
    }
    s->n = want;
    if (n_gone > 0)
        st_kv_queue_removed(&k->queue, model, k->scratch, n_gone);
}

/* The slot's blocks grow to 'want' from its ids; those new to the pod
 * (a suffix) go out as one BlockStored. Under k->mu. */
static void grow(struct st_kv_index *k, int32_t model, struct st_kv_slot *s, const int32_t *ids,
                 int64_t want)
{
    struct kv_table *t = &k->tables[model];
    if (!slot_reserve(s, want)) {
        st_log(ST_LOG_WARN, "kv-events", "no memory for a slot's block keys: not announced");
        return;
    }
    int64_t first_new = -1, b = k->block;
    for (int64_t i = s->n; i < want; i++) {
        uint64_t parent = i > 0 ? s->keys[i - 1] : k->seed[model];
        s->keys[i] = block_key(parent, ids + i * b, k->block);
        int32_t c = incref(t, s->keys[i]);
        if (c == 0) {
            want = i;   /* no memory: announce what is counted */
            break;
        }
        if (c == 1 && first_new < 0)
            first_new = i;
    }
    s->n = want;
    if (first_new < 0 || first_new >= want)
        return;
    st_kv_queue_stored(&k->queue, model, s->keys + first_new, want - first_new,
                       first_new > 0 ? s->keys[first_new - 1] : 0, ids + first_new * b, k->block);
}

void st_kv_blocks_sync(struct st_engine *e, struct st_engine_slot *sl, int64_t n_tokens)
{
    struct st_kv_index *k = e->pool->kv;
    struct st_kv_slot *s = &sl->kvb;
    if (!k || e->model < 0 || e->model >= k->n_models)
        return;
    int64_t want = ST_MAX(n_tokens, (int64_t)0) / k->block;
    want = ST_MIN(want, sl->cache.n_ids / k->block);   /* ids known */
    if (want == s->n)
        return;
    pthread_mutex_lock(&k->mu);
    if (want < s->n)
        cut(k, e->model, s, want);
    else
        grow(k, e->model, s, sl->cache.ids, want);
    pthread_mutex_unlock(&k->mu);
}

void st_kv_blocks_unload(struct st_engine *e, int32_t model)
{
    struct st_kv_index *k = e->pool->kv;
    if (!k || model < 0 || model >= k->n_models)
        return;
    pthread_mutex_lock(&k->mu);
    for (int32_t i = 0; e->slots && i < e->n_slots; i++)
        cut(k, model, &e->slots[i].kvb, 0);
    if (k->tables[model].live == 0)
        st_kv_queue_cleared(&k->queue, model);
    pthread_mutex_unlock(&k->mu);
}

int32_t st_engine_pool_kv_block_size(const struct st_engine_pool *p)
{
    return p->cfg.kv_block;
}

enum st_status st_engine_pool_kv_events_open(struct st_engine_pool *p, const char *endpoint,
                                             struct st_err *err)
{
    return st_kv_blocks_open(p, endpoint, err);
}

void st_engine_pool_kv_events_pod(struct st_engine_pool *p, const char *pod)
{
    if (p->kv && p->kv->pub)
        st_kv_pub_set_pod(p->kv->pub, pod);
}

struct st_kv_event *st_kv_blocks_take(struct st_engine_pool *p)
{
    return p->kv ? st_kv_queue_take(&p->kv->queue, NULL) : NULL;
}

bool st_kv_blocks_on(const struct st_engine_pool *p)
{
    return p->kv != NULL;
}

void st_kv_slot_fini(struct st_kv_slot *s)
{
    free(s->keys);
    memset(s, 0, sizeof(*s));
}

/* ---- life cycle ------------------------------------------------------- */

void st_kv_blocks_close(struct st_engine_pool *p)
{
    struct st_kv_index *k = p->kv;
    if (!k)
        return;
    st_kv_pub_free(k->pub);
    st_kv_queue_fini(&k->queue);
    for (int32_t m = 0; k->tables && m < k->n_models; m++) {
        free(k->tables[m].key);
        free(k->tables[m].count);
    }
    free(k->tables);
    free(k->seed);
    free(k->scratch);
    pthread_mutex_destroy(&k->mu);
    free(k);
    p->kv = NULL;
}

enum st_status st_kv_blocks_open(struct st_engine_pool *p, const char *endpoint,
                                 struct st_err *err)
{
    if (p->kv)
        return st_err_set(err, ST_ERR_INTERNAL, "KV events are open already");
    struct st_kv_index *k = calloc(1, sizeof(*k));
    const char **names = calloc((size_t)p->n_models, sizeof(*names));
    if (k) {
        pthread_mutex_init(&k->mu, NULL);
        st_kv_queue_init(&k->queue);
        k->n_models = p->n_models;
        k->block = p->cfg.kv_block;
        k->tables = calloc((size_t)p->n_models, sizeof(*k->tables));
        k->seed = calloc((size_t)p->n_models, sizeof(*k->seed));
        p->kv = k;
    }
    if (!k || !names || !k->tables || !k->seed) {
        free(names);
        st_kv_blocks_close(p);
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the KV events");
    }
    for (int32_t m = 0; m < p->n_models; m++) {
        names[m] = p->models[m].cfg.name;
        uint64_t h = fnv_bytes(FNV_OFFSET, names[m], strlen(names[m]));
        k->seed[m] = h ? h : 1;
    }
    enum st_status rc = endpoint ? st_kv_pub_open(endpoint, names, p->n_models, &k->queue,
                                                  &k->pub, err)
                                 : ST_OK;
    free(names);
    if (rc != ST_OK)
        st_kv_blocks_close(p);
    return rc;
}
