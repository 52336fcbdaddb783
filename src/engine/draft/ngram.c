/* ngram.c -- the n-gram (prompt-lookup) draft index of one slot
 * (docs/ENGINE.md "N-gram drafts").
 *
 * The drafts of a slot are the tokens that followed the most recent earlier
 * occurrence of its last n tokens in its own history (prompt + generated),
 * for the longest n in [n_min, n_max] that has one (the prior art: vLLM's
 * ngram proposer with prompt_lookup_min/max, llama.cpp's ngram-simple).
 * Repetitive output (a file rewritten with a few edits, a summary quoting
 * its input, JSON echoing keys) makes such matches, and a verify step then
 * emits several tokens for the cost of one.
 *
 * The index: per n, an open-addressing table (linear probing) of int32
 * entries, n-gram -> end position + 1 of its latest occurrence (0 =
 * empty). A slot is found by the hash of the n tokens and confirmed by
 * comparing them in the history, so a hash collision costs a probe, never
 * a wrong or a lost match. The history only grows at its end, so each call
 * first adds the n-grams that end at the positions new since the last call
 * (an n-gram already there gets the newer position: the table holds the
 * most recent occurrence), then looks the last n tokens up: O(new tokens *
 * (n_max - n_min + 1)) probes plus O(n_max) per step, never a scan of the
 * history.
 *
 * Memory: a history has at most n_ctx distinct n-grams, so 2^bits >=
 * 2 * n_ctx entries per n keep the load under one half; bits is at least 8
 * and at most ST_NGRAM_MAX_BITS (a context beyond 2^19 tokens). Per slot
 * that is (n_max - n_min + 1) * 2^bits * 4 bytes: 96 KiB for n 2..4 at a
 * 4096-token context, 768 KiB at 32768 (the slot's KV cache is hundreds of
 * times more). Should a table reach 3/4 full (only at the capped size),
 * it takes no new n-grams; the ones it has still match and still move to
 * their latest occurrence.
 *
 * Drafts: after a match ending at position e, the tokens at e+1, e+2, ...
 * of the history as it would be with the drafts appended (an overlapping
 * copy, as in LZ77): when the match is the previous turn of a loop of
 * period p = len - 1 - e, the drafts go on around the loop instead of
 * stopping after p tokens.
 *
 * The history is borrowed per call (the engine passes the slot's prefix
 * cache ids, which hold the prompt and every sampled token in position
 * order).
 *
 * Thread: the engine's thread (one slot's index is only its engine's).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/draft/draft.h"

#define HASH_MUL UINT64_C(0x9E3779B97F4A7C15)

void st_ngram_fini(struct st_ngram *g)
{
    free(g->table);
    memset(g, 0, sizeof(*g));
}

static int32_t table_bits(int64_t n_ctx)
{
    int32_t bits = 8;
    while (bits < ST_NGRAM_MAX_BITS && ((int64_t)1 << bits) < 2 * n_ctx)
        bits++;
    return bits;
}

static void clear(struct st_ngram *g)
{
    size_t per = (size_t)1 << g->bits;
    memset(g->table, 0, (size_t)(g->n_max - g->n_min + 1) * per * sizeof(*g->table));
    memset(g->fill, 0, sizeof(g->fill));
    g->indexed = 0;
}

enum st_status st_ngram_reset(struct st_ngram *g, int32_t n_min, int32_t n_max, int64_t n_ctx)
{
    if (n_min < 1 || n_max < n_min || n_max > ST_NGRAM_MAX_N)
        return ST_ERR_INVALID;
    int32_t bits = table_bits(n_ctx);
    size_t want = (size_t)(n_max - n_min + 1) << bits;
    if (!g->table || g->cap < want) {
        int32_t *t = realloc(g->table, want * sizeof(*t));
        if (!t)
            return ST_ERR_NOMEM;
        g->table = t;
        g->cap = want;
    }
    g->bits = bits;
    g->n_min = n_min;
    g->n_max = n_max;
    clear(g);
    return ST_OK;
}

static uint64_t hash(const int32_t *t, int32_t n)
{
    uint64_t h = (uint64_t)n;
    for (int32_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)t[i]) * HASH_MUL;
    return h;
}

/* The entry of the n tokens t[0..n) in n's table: the one holding them, or
 * the empty one where they would go. */
static int32_t *find(const struct st_ngram *g, const int32_t *hist, const int32_t *t, int32_t n)
{
    size_t mask = ((size_t)1 << g->bits) - 1;
    int32_t *tab = g->table + ((size_t)(n - g->n_min) << g->bits);
    for (size_t i = (size_t)(hash(t, n) >> (64 - g->bits));; i = (i + 1) & mask) {
        int32_t v = tab[i];
        if (v == 0 || memcmp(hist + v - n, t, (size_t)n * sizeof(*t)) == 0)
            return &tab[i];
    }
}

/* Add the n-grams ending at positions [g->indexed, upto) for every n. */
static void index_upto(struct st_ngram *g, const int32_t *hist, int64_t upto)
{
    size_t full = ((size_t)3 << g->bits) / 4;
    for (int64_t j = g->indexed; j < upto; j++) {
        for (int32_t n = g->n_min; n <= g->n_max && n <= j + 1; n++) {
            int32_t *e = find(g, hist, hist + j - n + 1, n);
            size_t *fill = &g->fill[n - g->n_min];
            if (*e == 0 && *fill >= full)
                continue;   /* capped table: no new n-grams (the ones it has move on) */
            *fill += *e == 0;
            *e = (int32_t)(j + 1);
        }
    }
    g->indexed = ST_MAX(g->indexed, upto);
}

int32_t st_ngram_draft(struct st_ngram *g, const int32_t *hist, int64_t len, int32_t *out,
                       int32_t max, int32_t *n_used)
{
    if (n_used)
        *n_used = 0;
    if (!g->table || len < 2 || max <= 0 || len > INT32_MAX)
        return 0;
    if (g->indexed > len - 1)
        clear(g);   /* the history got shorter than what was indexed: start over */
    /* n-grams ending at len - 2 at most: each has a token after it, and the
     * key (ending at len - 1) must not find itself */
    index_upto(g, hist, len - 1);
    int32_t top = (int32_t)ST_MIN((int64_t)g->n_max, len - 1);   /* the key needs an earlier end */
    for (int32_t n = top; n >= g->n_min; n--) {
        int32_t v = *find(g, hist, hist + len - n, n);
        if (v == 0)
            continue;
        int64_t from = v;   /* = end + 1: the first token after the match */
        for (int32_t i = 0; i < max; i++, from++)
            out[i] = from < len ? hist[from] : out[from - len];
        if (n_used)
            *n_used = n;
        return max;
    }
    return 0;
}
