/* responses_store_mem.c -- the bounded, thread-safe in-memory store of
 * /v1/responses objects (responses_store.h; the default, without
 * --state-dir): a chained hash table on the id for lookup and a doubly
 * linked list in use order for eviction.
 *
 * An entry is one allocation: the struct, then the id, input, output and
 * response texts, each NUL-terminated. Its size against the budget is
 * that allocation plus one bucket pointer, so the budget bounds the real
 * memory within the allocator's overhead. The bucket array doubles when
 * entries outnumber buckets (load factor <= 1); it never shrinks.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/responses/responses_store_impl.h"

struct entry {
    struct entry *hnext;            /* bucket chain */
    struct entry *newer, *older;    /* use order: s->newest ... s->oldest */
    uint64_t hash;
    uint64_t owner;                 /* who may see it (responses_store.h) */
    size_t size;                    /* counted against the budget */
    size_t input_len, output_len, response_len;
    const char *input, *output, *response;   /* into this allocation */
    char id[];                      /* NUL-terminated; the texts follow */
};

struct st_resp_store_mem {
    pthread_mutex_t lock;           /* guards everything below */
    size_t budget;
    size_t bytes;
    size_t n;                       /* entries */
    uint64_t evicted;
    struct entry **buckets;         /* n_buckets, a power of two */
    size_t n_buckets;
    struct entry *newest, *oldest;
};

#define INITIAL_BUCKETS 64

/* FNV-1a, 64 bits: ids are random hex, any mixing will do. */
static uint64_t hash_id(const char *id)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * UINT64_C(1099511628211);
    return h;
}

size_t st_resp_store_entry_size(size_t id_len, size_t input_len, size_t output_len,
                                size_t response_len)
{
    return sizeof(struct entry) + id_len + input_len + output_len + response_len + 4 +
           sizeof(struct entry *);
}

void *st_resp_store_mem_new(size_t budget)
{
    struct st_resp_store_mem *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->buckets = calloc(INITIAL_BUCKETS, sizeof(*s->buckets));
    if (!s->buckets || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s->buckets);
        free(s);
        return NULL;
    }
    s->budget = budget;
    s->n_buckets = INITIAL_BUCKETS;
    return s;
}

static void mem_free(void *impl)
{
    struct st_resp_store_mem *s = impl;
    for (struct entry *e = s->newest, *next; e; e = next) {
        next = e->older;
        free(e);
    }
    free(s->buckets);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---- the table and the use list (s->lock held) ------------------------------ */

static struct entry **slot_of(struct st_resp_store_mem *s, const char *id, uint64_t h)
{
    struct entry **p = &s->buckets[h & (s->n_buckets - 1)];
    while (*p && ((*p)->hash != h || strcmp((*p)->id, id) != 0))
        p = &(*p)->hnext;
    return p;
}

static void list_unlink(struct st_resp_store_mem *s, struct entry *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        s->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        s->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void list_push_newest(struct st_resp_store_mem *s, struct entry *e)
{
    e->newer = NULL;
    e->older = s->newest;
    if (s->newest)
        s->newest->newer = e;
    s->newest = e;
    if (!s->oldest)
        s->oldest = e;
}

/* Unlink and free the entry *slot points at. */
static void drop(struct st_resp_store_mem *s, struct entry **slot)
{
    struct entry *e = *slot;
    *slot = e->hnext;
    list_unlink(s, e);
    s->bytes -= e->size;
    s->n--;
    free(e);
}

/* Double the bucket array; on failure keep the old one (longer chains). */
static void grow(struct st_resp_store_mem *s)
{
    size_t nb = s->n_buckets * 2;
    struct entry **b = calloc(nb, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < s->n_buckets; i++) {
        for (struct entry *e = s->buckets[i], *next; e; e = next) {
            next = e->hnext;
            e->hnext = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->n_buckets = nb;
}

/* ---- put, get, delete ---------------------------------------------------------- */

static char *put_text(char *at, const char **field, const char *text, size_t len)
{
    if (len)
        memcpy(at, text, len);
    at[len] = '\0';
    *field = at;
    return at + len + 1;
}

static struct entry *entry_new(uint64_t owner, const char *id, uint64_t h, const char *input,
                               size_t input_len, const char *output, size_t output_len,
                               const char *response, size_t response_len)
{
    size_t id_len = strlen(id);
    size_t size = st_resp_store_entry_size(id_len, input_len, output_len, response_len);
    struct entry *e = malloc(size - sizeof(struct entry *));
    if (!e)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->hash = h;
    e->owner = owner;
    e->size = size;
    e->input_len = input_len;
    e->output_len = output_len;
    e->response_len = response_len;
    memcpy(e->id, id, id_len + 1);
    char *at = e->id + id_len + 1;
    at = put_text(at, &e->input, input, input_len);
    at = put_text(at, &e->output, output, output_len);
    (void)put_text(at, &e->response, response, response_len);
    return e;
}

static enum st_status mem_put(void *impl, uint64_t owner, const char *id, const char *input,
                              size_t input_len, const char *output, size_t output_len,
                              const char *response, size_t response_len)
{
    struct st_resp_store_mem *s = impl;
    size_t size = st_resp_store_entry_size(strlen(id), input_len, output_len, response_len);
    if (size > s->budget)
        return ST_ERR_TOO_LONG;
    uint64_t h = hash_id(id);
    struct entry *e = entry_new(owner, id, h, input, input_len, output, output_len, response,
                                response_len);
    if (!e)
        return ST_ERR_NOMEM;
    pthread_mutex_lock(&s->lock);
    struct entry **old = slot_of(s, id, h);
    if (*old)
        drop(s, old);
    while (s->bytes + size > s->budget && s->oldest) {
        drop(s, slot_of(s, s->oldest->id, s->oldest->hash));
        s->evicted++;
    }
    if (s->n + 1 > s->n_buckets)
        grow(s);
    struct entry **slot = &s->buckets[h & (s->n_buckets - 1)];
    e->hnext = *slot;
    *slot = e;
    list_push_newest(s, e);
    s->bytes += size;
    s->n++;
    pthread_mutex_unlock(&s->lock);
    return ST_OK;
}

/* The slot of owner's entry 'id', or NULL: none, or another owner's (left
 * as it is, its place in the use order too). */
static struct entry **owned_slot(struct st_resp_store_mem *s, uint64_t owner, const char *id)
{
    struct entry **slot = slot_of(s, id, hash_id(id));
    return *slot && (*slot)->owner == owner ? slot : NULL;
}

static enum st_status mem_get(void *impl, uint64_t owner, const char *id, char **input,
                              char **output, char **response)
{
    struct st_resp_store_mem *s = impl;
    st_resp_store_clear_outs(input, output, response, false);
    pthread_mutex_lock(&s->lock);
    struct entry **slot = owned_slot(s, owner, id);
    struct entry *e = slot ? *slot : NULL;
    enum st_status rc = ST_ERR_NOT_FOUND;
    if (e) {
        list_unlink(s, e);
        list_push_newest(s, e);
        bool ok = st_resp_store_copy_out(input, e->input, e->input_len) &&
                  st_resp_store_copy_out(output, e->output, e->output_len) &&
                  st_resp_store_copy_out(response, e->response, e->response_len);
        rc = ok ? ST_OK : ST_ERR_NOMEM;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc != ST_OK)
        st_resp_store_clear_outs(input, output, response, true);
    return rc;
}

static enum st_status mem_delete(void *impl, uint64_t owner, const char *id)
{
    struct st_resp_store_mem *s = impl;
    pthread_mutex_lock(&s->lock);
    struct entry **slot = owned_slot(s, owner, id);
    bool found = slot != NULL;
    if (found)
        drop(s, slot);
    pthread_mutex_unlock(&s->lock);
    return found ? ST_OK : ST_ERR_NOT_FOUND;
}

static void mem_stats(void *impl, struct st_resp_store_stats *out)
{
    struct st_resp_store_mem *s = impl;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&s->lock);
    out->entries = s->n;
    out->bytes = s->bytes;
    out->evicted = s->evicted;
    out->budget = s->budget;
    pthread_mutex_unlock(&s->lock);
}

const struct st_resp_store_ops st_resp_store_mem_ops = {
    .put = mem_put, .get = mem_get, .del = mem_delete, .stats = mem_stats, .free = mem_free,
};
