/* owners.c -- which API key made which request, so /api/activity and
 * /slots show a key only its own requests (docs/SECURITY.md).
 *
 * The scheduler's records carry the request id, not the key; the server
 * remembers (request id -> owner) for the newest OWNERS_CAP requests of
 * keyed calls that start work: a ring (the oldest forgotten first) with a
 * chained hash over it. Request ids may come from clients (X-Request-Id),
 * so two keys may use the same id: such an id is shown to neither (only
 * to admin keys), so nobody reads another key's request by naming it.
 */
#include <stdlib.h>
#include <string.h>

#include "server/http/http.h"

#define OWNERS_CAP 4096          /* >= the scheduler's activity ring (1000) */
#define OWNERS_BUCKETS 8192

struct owner_entry {
    char id[48];
    uint64_t owner;              /* 0: free */
    int32_t next;                /* the bucket's next entry, -1 = end */
};

struct st_owners {
    pthread_mutex_t lock;
    struct owner_entry e[OWNERS_CAP];
    int32_t head[OWNERS_BUCKETS];
    size_t next_slot;            /* the ring's oldest entry, reused next */
};

static size_t bucket_of(const char *id)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (size_t)(h % OWNERS_BUCKETS);
}

struct st_owners *st_owners_new(void)
{
    struct st_owners *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    pthread_mutex_init(&o->lock, NULL);
    for (size_t i = 0; i < OWNERS_BUCKETS; i++)
        o->head[i] = -1;
    return o;
}

void st_owners_free(struct st_owners *o)
{
    if (!o)
        return;
    pthread_mutex_destroy(&o->lock);
    free(o);
}

/* Take entry i out of its bucket's chain. */
static void unlink_entry(struct st_owners *o, int32_t i)
{
    int32_t *at = &o->head[bucket_of(o->e[i].id)];
    while (*at != -1 && *at != i)
        at = &o->e[*at].next;
    if (*at == i)
        *at = o->e[i].next;
}

void st_owners_add(struct st_owners *o, const char *request_id, uint64_t owner)
{
    if (!o || owner == 0 || owner == ST_OWNER_AMBIGUOUS)
        return;
    pthread_mutex_lock(&o->lock);
    int32_t i = (int32_t)o->next_slot;
    o->next_slot = (o->next_slot + 1) % OWNERS_CAP;
    if (o->e[i].owner)
        unlink_entry(o, i);
    struct owner_entry *e = &o->e[i];
    memset(e->id, 0, sizeof(e->id));
    strncpy(e->id, request_id, sizeof(e->id) - 1);
    e->owner = owner;
    size_t b = bucket_of(e->id);
    e->next = o->head[b];
    o->head[b] = i;
    pthread_mutex_unlock(&o->lock);
}

uint64_t st_owners_find(struct st_owners *o, const char *request_id)
{
    if (!o || !request_id || !request_id[0])
        return 0;
    uint64_t found = 0;
    pthread_mutex_lock(&o->lock);
    for (int32_t i = o->head[bucket_of(request_id)]; i != -1; i = o->e[i].next) {
        if (strncmp(o->e[i].id, request_id, sizeof(o->e[i].id) - 1) != 0)
            continue;
        if (found && found != o->e[i].owner) {
            found = ST_OWNER_AMBIGUOUS;
            break;
        }
        found = o->e[i].owner;
    }
    pthread_mutex_unlock(&o->lock);
    return found;
}
