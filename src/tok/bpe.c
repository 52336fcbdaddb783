/* bpe.c -- rank-ordered byte-pair merges of one pre-tokenized piece.
 *
 * The piece starts as one symbol per byte (the token of that byte). A
 * min-heap holds every adjacent pair that has a merge, ordered by (rank,
 * position of the left symbol): the lowest rank merges first and ties go to
 * the leftmost pair, as in Hugging Face tokenizers and llama.cpp. Symbols
 * form a doubly linked list over the byte array; a merge keeps the left
 * symbol (new id) and unlinks the right one. Heap entries carry the ids they
 * were made for, so stale ones are recognised and skipped when popped.
 * O(n log n) per piece of n bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "strata/xalloc.h"

#include "tok/internal.h"

struct st_bpe_sym {
    int32_t id;         /* token id; -1 = byte without a token */
    int32_t prev;       /* index of the previous live symbol, -1 = none */
    int32_t next;       /* index of the next live symbol, -1 = none */
    bool    alive;
};

struct st_bpe_cand {
    int32_t rank;       /* merge rank (lower first) */
    int32_t left;       /* symbol index of the left side */
    int32_t right;      /* symbol index of the right side */
    int32_t lid, rid;   /* ids when queued; a mismatch means stale */
    int32_t result;     /* merged id */
};

void st_bpe_work_fini(struct st_bpe_work *w)
{
    free(w->syms);
    free(w->heap);
    memset(w, 0, sizeof(*w));
}

enum st_status st_ids_push(int32_t **ids, size_t *n, size_t *cap, int32_t id)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64, bytes;
        int32_t *p;
        if (!st_mul_ok(nc, sizeof(*p), &bytes))
            return ST_ERR_NOMEM;
        p = realloc(*ids, bytes);
        if (!p)
            return ST_ERR_NOMEM;
        *ids = p;
        *cap = nc;
    }
    (*ids)[(*n)++] = id;
    return ST_OK;
}

static bool cand_less(const struct st_bpe_cand *a, const struct st_bpe_cand *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(struct st_bpe_cand *h, size_t *n, struct st_bpe_cand c)
{
    size_t i = (*n)++;

    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!cand_less(&c, &h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = c;
}

static struct st_bpe_cand heap_pop(struct st_bpe_cand *h, size_t *n)
{
    struct st_bpe_cand top = h[0], last = h[--(*n)];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && cand_less(&h[c + 1], &h[c]))
            c++;
        if (!cand_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = last;
    return top;
}

/* Queue the pair (left, left.next) if it has a merge. The heap never holds
 * more than (pieces bytes) * 2 entries: each merge adds at most two. */
static void try_queue(struct st_bpe_work *w, size_t *nh, const struct st_pairmap *m,
                      int32_t left)
{
    struct st_bpe_cand c;
    int32_t right;

    if (left < 0 || (right = w->syms[left].next) < 0)
        return;
    c.lid = w->syms[left].id;
    c.rid = w->syms[right].id;
    if (c.lid < 0 || c.rid < 0 || !st_pairmap_get(m, c.lid, c.rid, &c.rank, &c.result))
        return;
    c.left = left;
    c.right = right;
    heap_push(w->heap, nh, c);
}

static enum st_status reserve(struct st_bpe_work *w, size_t n)
{
    size_t bytes;

    if (n > INT32_MAX / 4)
        return ST_ERR_NOMEM;
    if (n > w->cap_syms) {
        struct st_bpe_sym *s;
        if (!st_mul_ok(n, sizeof(*s), &bytes) || !(s = realloc(w->syms, bytes)))
            return ST_ERR_NOMEM;
        w->syms = s;
        w->cap_syms = n;
    }
    if (3 * n > w->cap_heap) {
        struct st_bpe_cand *h;
        if (!st_mul_ok(3 * n, sizeof(*h), &bytes) || !(h = realloc(w->heap, bytes)))
            return ST_ERR_NOMEM;
        w->heap = h;
        w->cap_heap = 3 * n;
    }
    return ST_OK;
}

static void merge_all(struct st_bpe_work *w, const struct st_pairmap *m, size_t n)
{
    size_t nh = 0, i;

    for (i = 0; i + 1 < n; i++)
        try_queue(w, &nh, m, (int32_t)i);
    while (nh > 0) {
        struct st_bpe_cand c = heap_pop(w->heap, &nh);
        struct st_bpe_sym *l = &w->syms[c.left], *r = &w->syms[c.right];
        if (!l->alive || !r->alive || l->next != c.right || l->id != c.lid || r->id != c.rid)
            continue;                           /* stale */
        l->id = c.result;
        r->alive = false;
        l->next = r->next;
        if (r->next >= 0)
            w->syms[r->next].prev = c.left;
        try_queue(w, &nh, m, l->prev);
        try_queue(w, &nh, m, c.left);
    }
}

enum st_status st_bpe_piece(struct st_bpe_work *w, const struct st_pairmap *merges,
                            const int32_t *byte_ids, const unsigned char *s,
                            size_t n, int32_t **ids, size_t *n_ids, size_t *cap)
{
    enum st_status rc;
    size_t i;

    if (n == 1)
        return byte_ids[s[0]] < 0 ? ST_OK : st_ids_push(ids, n_ids, cap, byte_ids[s[0]]);
    rc = reserve(w, n);
    if (rc != ST_OK)
        return rc;
    for (i = 0; i < n; i++) {
        w->syms[i].id = byte_ids[s[i]];
        w->syms[i].prev = (int32_t)i - 1;
        w->syms[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        w->syms[i].alive = true;
    }
    merge_all(w, merges, n);
    for (i = 0; i < n && rc == ST_OK; i = w->syms[i].next < 0 ? n : (size_t)w->syms[i].next)
        if (w->syms[i].id >= 0)
            rc = st_ids_push(ids, n_ids, cap, w->syms[i].id);
    return rc;
}
