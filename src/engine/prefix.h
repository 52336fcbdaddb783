/* prefix.h -- prefix reuse (prefix.c): what a slot's KV holds after its
 * request ends, the prompt scores kept with it, and how the next request
 * takes them. Private to src/engine.
 *
 * Thread: the engine's own thread.
 */
#ifndef STRATA_ENGINE_PREFIX_H
#define STRATA_ENGINE_PREFIX_H

#include <stdbool.h>
#include <stdint.h>

#include "runner/runner.h"
#include "strata/engine.h"

struct st_engine;
struct st_engine_slot;
struct st_request;
struct st_sched_job;

/* The token ids a slot's KV holds, kept after its request ends so the next
 * request that starts with them reads only the rest (docs/BATCHING.md
 * "Prefix reuse"). While a request runs, ids[0..n_ids) are its prompt and
 * the tokens it sampled so far, each at the KV position it is (or will be)
 * fed at; when the slot frees, n_kv = what of that the KV really holds
 * (min(n_ids, the slot's n_past)). */
/* The prompt scores kept with a slot's cached ids (docs/ENGINE.md "Prompt
 * logprobs"): for each position p in [1, n) the st_runner_score a scored
 * read reported for the token ids[p] under ids[0..p), with the number of
 * alternatives it was computed for. The model is causal, so such a score
 * holds for every prompt that starts with ids[0..p]: a later scored
 * request that shares the prefix takes them instead of reading it again.
 * Invariant: n <= the cache's n_ids, and whenever ids[j] changes or is
 * forgotten, n drops to at most j. One record per position, rec bytes:
 * a st_score_head, then stride top ids (int32), then stride top logprobs
 * (float): 12 + 8 * stride bytes, where stride is the most alternatives
 * asked of the scores held (grown on demand, <= ST_RUNNER_SCORE_TOP): 20
 * bytes at N = 1, 172 at N = 20. Allocated on the first scored read in the
 * slot; freed when a request without prompt logprobs takes the slot and
 * no score is left. */
struct st_score_head {
    float    logprob;
    int32_t  rank;
    uint8_t  asked;      /* alternatives the read was asked for (0..ST_RUNNER_SCORE_TOP) */
    uint8_t  n_top;      /* ... and got (min(asked, n_vocab)) */
    uint16_t pad_;
};
struct st_score_cache {
    unsigned char *rec;  /* owned (malloc); cap records of rec_bytes */
    int64_t  cap;        /* records allocated (positions 0..cap-1; record 0 unused) */
    int32_t  stride;     /* alternatives room per record */
    int64_t  n;          /* positions [1, n) hold scores; n <= 1: none */
};

struct st_prefix_cache {
    int32_t *ids;        /* owned (malloc); cap entries */
    int64_t  cap;
    int64_t  n_ids;      /* ids known, KV position order */
    int64_t  n_kv;       /* free slot: ids[0..n_kv) are in the KV; busy slot: 0 */
    uint64_t stamp;      /* the engine's prefix_tick when the slot was last freed (LRU) */
    struct st_score_cache sc;   /* prompt scores of ids[0..sc.n) */
};

/* prefix.c (engine thread): prefix reuse, docs/BATCHING.md "Prefix reuse". */
/* May the picked request start on the engine now? (the unified KV pool's
 * st_kv_pool_fits; called under the scheduler's mutex) */
typedef bool st_engine_admit_gate(const struct st_engine *e, const struct st_request *req);
/* st_sched_admit with slot 'offered' free: the job picked goes to the free
 * slot whose cache shares the longest prefix with its prompt (ties: an
 * empty slot, then the least recently freed, then 'offered'); when 'gate'
 * (may be NULL) says no, it is not granted and stays waiting (NULL). */
struct st_sched_job *st_engine_prefix_admit(struct st_engine *e, int32_t offered,
                                            st_engine_admit_gate *gate);
/* A request enters slot 'sl': keep the longest common prefix of the slot's
 * cache and its prompt (at most n_tokens - 1: the last prompt token is
 * always read, its row gives the first token; with prompt logprobs at most
 * the positions whose kept scores have enough alternatives, so that every
 * position up to and including the kept prefix's end is scored already),
 * cut the KV there, set sl->n_past and req->n_cached to it, and report
 * those tokens to the scheduler as read and to the pool's cached_tokens.
 * Kept scores past the prompt's common prefix are dropped. */
void st_engine_prefix_bind(struct st_engine *e, struct st_engine_slot *sl,
                           struct st_request *req);
/* State checkpoints (recurrent models, runner_ckpt.c) are taken at the end
 * of each prompt chunk but the last. So that a prompt that ends like the
 * last one but for its final few tokens (the same prompt again; a chat
 * template that rewrites the assistant turn's opening) finds one near its
 * end, a read on such a runner ends a chunk ST_PREFIX_CKPT_TAIL tokens
 * before the prompt's end when its last chunk would otherwise hold more
 * than ST_PREFIX_CKPT_MIN_READ tokens: one more forward, of that many rows,
 * for such a request. */
#define ST_PREFIX_CKPT_TAIL 8
#define ST_PREFIX_CKPT_MIN_READ 64
/* The rows of slot sl's next prompt chunk: 'chunk' (min(left, ubatch)),
 * cut at the tail above when that applies; 'left' = prompt tokens unread. */
int64_t st_engine_prefix_chunk(const struct st_engine *e, const struct st_engine_slot *sl,
                               int64_t chunk, int64_t left);
/* Prefix sharing across slots: a reading slot copies another slot's KV
 * only when that gives it at least this many more prompt tokens than it
 * holds (docs/BATCHING.md "Prefix reuse": a copy costs 2 x n_layer device
 * copies, worth it only over a chunk-sized saving), or, with the KV events
 * on, when it completes a KV block the slot lacks (docs/KV-EVENTS.md). */
#define ST_PREFIX_COPY_MIN 32
/* Slot sl's request still reads its prompt (bind, and before each forward
 * of the lines holder): when another slot of the engine, busy or free,
 * holds a longer prefix of the prompt in final KV (a free slot its kept
 * tokens; a busy one its written positions, drafts cut) by at least
 * ST_PREFIX_COPY_MIN tokens, copy those KV rows into sl (runner kv_copy),
 * with the kept prompt scores of those positions; sl->n_past, n_cached,
 * the scheduler's read progress and the pool's cached/copied counters move
 * on by the copied tokens. Requests with no_prompt_cache copy nothing; a
 * failed copy is logged and the tokens are read. */
void st_engine_prefix_pull(struct st_engine *e, struct st_engine_slot *sl);
/* The token just sampled for sl's request goes into the KV at sl->n_past
 * when it is fed next: remember it there. */
void st_engine_prefix_push(struct st_engine_slot *sl, int32_t token);
/* After the forward of scored READ q of sl's request: keep its rows'
 * scores (row j: position q->pos + j + 1) with the slot's ids. Positions
 * only extend the kept run [1, sc.n) when they follow it; without memory
 * nothing is kept (the request's own reply is unaffected). */
void st_engine_prefix_keep_scores(struct st_engine_slot *sl, const struct st_runner_seq *q);
/* The kept score of position pos (>= 1) with n_top alternatives (the first
 * n_top of those kept), when the slot holds one computed for at least
 * n_top; false otherwise. */
bool st_engine_prefix_score(const struct st_engine_slot *sl, int64_t pos, int32_t n_top,
                            struct st_runner_score *out);
/* The slot frees: keep what its KV holds (cut the runner's KV to it), or
 * nothing after a failure (a failed forward may have left it half-written). */
void st_engine_prefix_release(struct st_engine *e, struct st_engine_slot *sl,
                              enum st_outcome outcome);
/* Free slot sl's KV now holds ids[0, n) (POST /slots restore; n = 0:
 * erase): they replace its cache, its kept scores go, its KV blocks are
 * announced again. False (cache left empty) when memory for the ids runs
 * out. The caller has made the runner's KV match. */
bool st_engine_prefix_set(struct st_engine *e, struct st_engine_slot *sl, const int32_t *ids,
                          int64_t n);
/* The runner goes (unload, swap): every slot's cache is void. */
void st_engine_prefix_forget(struct st_engine *e);
/* (unified KV pool, kv_pool.c) Free slot sl drops its cached prefix: the
 * runner's KV is emptied (its memory given back) and the ids forgotten. */
void st_engine_prefix_evict(struct st_engine *e, struct st_engine_slot *sl);
/* Frees the slot's ids (engine teardown). */
void st_engine_prefix_fini(struct st_engine_slot *sl);

#endif /* STRATA_ENGINE_PREFIX_H */
