/* tokmap.c -- the two hash maps of the tokenizer.
 *
 * st_strmap: token bytes -> id (about 150K keys for Qwen). Open addressing
 * with linear probing over a slot array of entry indices; the keys are
 * borrowed pointers into the tokenizer's own byte pool.
 * st_pairmap: (left id, right id) -> (merge rank, merged id), the BPE merge
 * table, keyed by one uint64. Both are built once and then only read, so
 * concurrent lookups from several threads are safe.
 */
#include <stdlib.h>
#include <string.h>

#include "strata/xalloc.h"

#include "tok/internal.h"

static uint64_t hash_bytes(const char *k, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a, 64 bit */
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char)k[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 30;                           /* splitmix64 finalizer */
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Smallest power of two >= 2 * expected (load factor <= 0.5). */
static size_t table_cap(size_t expected)
{
    size_t cap = 16;

    while (cap < expected * 2 && cap < ((size_t)1 << 40))
        cap <<= 1;
    return cap;
}

enum st_status st_strmap_init(struct st_strmap *m, size_t expected)
{
    memset(m, 0, sizeof(*m));
    m->cap = table_cap(expected);
    m->n_cap = expected ? expected : 1;
    m->slots = calloc(m->cap, sizeof(*m->slots));
    m->keys = malloc(m->n_cap * sizeof(*m->keys));
    m->klens = malloc(m->n_cap * sizeof(*m->klens));
    m->vals = malloc(m->n_cap * sizeof(*m->vals));
    if (!m->slots || !m->keys || !m->klens || !m->vals) {
        st_strmap_fini(m);
        return ST_ERR_NOMEM;
    }
    return ST_OK;
}

void st_strmap_fini(struct st_strmap *m)
{
    free(m->slots);
    free(m->keys);
    free(m->klens);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

/* Slot index holding 'k', or the empty slot where it would go. */
static size_t find_slot(const struct st_strmap *m, const char *k, size_t len)
{
    size_t mask = m->cap - 1, i = (size_t)hash_bytes(k, len) & mask;

    while (m->slots[i]) {
        uint32_t e = m->slots[i] - 1;
        if (m->klens[e] == len && (len == 0 || memcmp(m->keys[e], k, len) == 0))
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

enum st_status st_strmap_put(struct st_strmap *m, const char *k, size_t len,
                             int32_t val, bool replace)
{
    size_t i;

    if (len > UINT32_MAX || m->n >= UINT32_MAX - 1)
        return ST_ERR_NOMEM;
    i = find_slot(m, k, len);
    if (m->slots[i]) {
        if (replace)
            m->vals[m->slots[i] - 1] = val;
        return ST_OK;
    }
    if (m->n == m->n_cap || (m->n + 1) * 2 > m->cap)
        return ST_ERR_NOMEM;        /* sized by init: the caller over-filled */
    m->keys[m->n] = k;
    m->klens[m->n] = (uint32_t)len;
    m->vals[m->n] = val;
    m->slots[i] = (uint32_t)++m->n;
    return ST_OK;
}

int32_t st_strmap_get(const struct st_strmap *m, const char *k, size_t len)
{
    size_t i;

    if (!m->slots)
        return -1;
    i = find_slot(m, k, len);
    return m->slots[i] ? m->vals[m->slots[i] - 1] : -1;
}

enum st_status st_pairmap_init(struct st_pairmap *m, size_t expected)
{
    memset(m, 0, sizeof(*m));
    m->cap = table_cap(expected);
    m->keys = calloc(m->cap, sizeof(*m->keys));
    m->rank = malloc(m->cap * sizeof(*m->rank));
    m->result = malloc(m->cap * sizeof(*m->result));
    if (!m->keys || !m->rank || !m->result) {
        st_pairmap_fini(m);
        return ST_ERR_NOMEM;
    }
    return ST_OK;
}

void st_pairmap_fini(struct st_pairmap *m)
{
    free(m->keys);
    free(m->rank);
    free(m->result);
    memset(m, 0, sizeof(*m));
}

static uint64_t pair_key(int32_t left, int32_t right)
{
    return (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
}

void st_pairmap_put(struct st_pairmap *m, int32_t left, int32_t right,
                    int32_t rank, int32_t result)
{
    uint64_t key = pair_key(left, right);
    size_t mask = m->cap - 1, i = (size_t)hash_u64(key) & mask;

    ST_ASSERT((m->n + 1) * 2 <= m->cap);    /* sized by init */
    while (m->keys[i]) {
        if (m->keys[i] == key)
            return;                         /* keep the lower rank */
        i = (i + 1) & mask;
    }
    m->keys[i] = key;
    m->rank[i] = rank;
    m->result[i] = result;
    m->n++;
}

bool st_pairmap_get(const struct st_pairmap *m, int32_t left, int32_t right,
                    int32_t *rank, int32_t *result)
{
    uint64_t key = pair_key(left, right);
    size_t mask = m->cap - 1, i = (size_t)hash_u64(key) & mask;

    while (m->keys[i]) {
        if (m->keys[i] == key) {
            *rank = m->rank[i];
            *result = m->result[i];
            return true;
        }
        i = (i + 1) & mask;
    }
    return false;
}
