/* prefix.c -- prefix reuse (issue 5 item 4, docs/BATCHING.md "Prefix reuse").
 *
 * A slot's KV is not cleared when its request ends. The slot remembers the
 * token ids that KV holds (struct st_prefix_cache: the prompt, then each
 * sampled token at the position it is fed at, cut to what was really
 * written), and a new request goes to the free slot whose ids share the
 * longest prefix with its prompt. That prefix stays in the KV; the read
 * starts after it. So a conversation's next turn, or the same prompt
 * again, costs only its new tokens.
 *
 *   admit    st_engine_prefix_admit asks the scheduler for the best waiting
 *            job with a slot-choosing callback (st_sched_admit_to): the
 *            scheduler still decides WHO is served; this file only decides
 *            WHERE (and, with a copy below, FROM WHERE), among the free
 *            slots of the loaded model: the slot with the longest common
 *            prefix among those worth reusing (it covers at least half the
 *            new prompt or half the slot's cache; ties: the least recently
 *            freed); else an empty slot (the lowest); else the least
 *            recently freed slot (it still keeps whatever prefix it
 *            shares). See rank_of for why not simply the longest. The
 *            callback does no copy and no more than before: it runs under
 *            the scheduler's mutex.
 *   bind     the common prefix n is capped at n_prompt - 1 so at least one
 *            prompt token is read (its row gives the first token's logits);
 *            the KV is cut to n, the read starts at position n, and the
 *            scheduler is told n tokens were read already (so give-way
 *            boundaries count from the start of the prompt, and the first
 *            check falls on the first read chunk that ends past one).
 *   release  the slot keeps min(ids known, n_past) tokens; after a failure
 *            it keeps nothing (a failed forward may have half-written KV).
 *   copy     (st_engine_prefix_pull) the slot chosen may hold less of the
 *            prompt than another slot of the engine, busy or free (busy:
 *            never chosen; free: the half rule of rank_of kept it). Then
 *            the KV rows of that slot's longest shared prefix are copied
 *            into the chosen one (runner kv_copy: device copies per layer,
 *            K and V, and the MTP layer's) and the read starts after them:
 *            at bind, and before each forward in which the slot holds the
 *            lines (requests admitted together find the context read only
 *            then). Only when it gains ST_PREFIX_COPY_MIN (32) tokens or
 *            more over what the slot holds (a copy costs 2 x n_layer device
 *            copies whatever its length). Only final KV is copied: a free
 *            source's n_kv, a busy one's min(ids known, n_past) (drafts
 *            past n_past were cut by kv_truncate; the token sampled last is
 *            not fed yet). It all runs on the engine thread between steps,
 *            so the source cannot change meanwhile; nobody waits for a
 *            busy slot. The copied prefix obeys the same caps as a kept
 *            one (n_prompt - 1; for a scored request the scored run), and
 *            the source's kept scores come along (scores_pull). It counts
 *            as cached (n_cached, cached_tokens) and as copied_tokens; a
 *            failed copy is logged and the tokens are read.
 *   forget   a model unload voids every slot's cache (swap.c).
 *   state    a recurrent model's slot (qwen35moe) keeps its state whole, or
 *            goes back to a state checkpoint the runner took at a chunk end
 *            (runner_ckpt.c): reusable and release keep what kv_keep says a
 *            cut leaves, and st_engine_prefix_chunk ends a chunk a few
 *            tokens before a prompt's end so that one lies near it. No copy
 *            across slots.
 *   opt out  a request with no_prompt_cache ("cache_prompt": false) shares
 *            no prefix with any slot, its own or copied: it reads its whole
 *            prompt and its slot is chosen as for an unrelated prompt (an
 *            empty one, else the least recently freed). What it leaves in
 *            the KV is cached as usual for later requests (its tokens are
 *            correct KV).
 *   scores   a slot also keeps the prompt scores its scored reads computed
 *            (struct st_score_cache: per position the token's logprob, rank
 *            and top N with that N), as long as it keeps the ids they score.
 *            The logprob of the token at p needs the logits of row p - 1,
 *            which a cached prefix no longer has; but it depends only on
 *            ids[0..p] (the model is causal), so a kept score is the one a
 *            cold read would compute. A request with prompt logprobs (N
 *            alternatives) keeps k tokens of KV only when positions 1..k
 *            all have kept scores computed for at least N (the read's first
 *            row is k, which scores k + 1): k = min(common ids, that run)
 *            - 1. lm-evaluation-harness's multiple choice (one request per
 *            answer, the same context) thus reads the context once.
 *            Keeping ids and scores in step: bind drops scores past the
 *            new prompt's common prefix with the old ids (those ids are
 *            overwritten), push drops a score whose id it overwrites,
 *            release drops those past what the KV keeps, forget drops all;
 *            a copy brings the source's scores of the positions p whose
 *            ids[0..p] the two slots share (never past the destination's
 *            ids), replacing the destination's shorter run wholesale.
 *            Drafts cut by kv_truncate lie past the prompt, where no score
 *            is kept (scores stop at the prompt's last token).
 *
 * The sim runner keeps no KV; the engine tracks positions, and the sim
 * charges time only for the tokens a step reads (and 1/100 of that per
 * copied token), so reuse shows as a shorter read in time as well as in
 * n_cached.
 *
 * Thread: the engine's own thread. The choosing callback runs under the
 * scheduler's mutex, on that thread, reading slot state only that thread
 * writes; it takes no lock.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "strata/log.h"
#include "strata/xalloc.h"

/* Length of the common prefix of a[0..na) and b[0..nb). */
static int64_t common_prefix(const int32_t *a, int64_t na, const int32_t *b, int64_t nb)
{
    int64_t n = ST_MIN(na, nb), i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Bytes of one score record at 'stride' alternatives. */
static size_t rec_bytes(int32_t stride)
{
    return sizeof(struct st_score_head) + (size_t)stride * (sizeof(int32_t) + sizeof(float));
}

static struct st_score_head *rec_head(const struct st_score_cache *s, int64_t pos)
{
    return (struct st_score_head *)(void *)(s->rec + (size_t)pos * rec_bytes(s->stride));
}

static int32_t *rec_ids(const struct st_score_cache *s, int64_t pos)
{
    return (int32_t *)(void *)((unsigned char *)rec_head(s, pos) + sizeof(struct st_score_head));
}

static float *rec_lps(const struct st_score_cache *s, int64_t pos)
{
    return (float *)(void *)(rec_ids(s, pos) + s->stride);
}

/* Positions [1, p) of the kept scores computed for >= top alternatives,
 * p <= limit: the run a request asking 'top' may take from the cache. */
static int64_t scored_run(const struct st_score_cache *s, int32_t top, int64_t limit)
{
    int64_t end = ST_MIN(s->n, limit), p = 1;
    while (p < end && rec_head(s, p)->asked >= top)
        p++;
    return p;
}

/* The prefix of req's prompt that cache c, whose KV holds ids[0..n) (n
 * final positions), could give it (capped: one prompt token is always
 * read). */
static int64_t share(const struct st_prefix_cache *c, int64_t n, const struct st_request *req)
{
    if (n <= 0 || req->n_tokens < 2 || req->no_prompt_cache)
        return 0;
    if (!req->params.prompt_logprobs)
        return common_prefix(c->ids, n, req->tokens, req->n_tokens - 1);
    /* Scored: the read from k scores k + 1 onwards, so 1..k come from the
     * kept scores, each for ids up to its own position (common >= k + 1). */
    int64_t common = common_prefix(c->ids, n, req->tokens, req->n_tokens);
    int64_t run = scored_run(&c->sc, st_engine_prompt_top(req), common);
    return ST_MAX(ST_MIN(common, run) - 1, (int64_t)0);
}

/* The prefix of req's prompt free slot 'sl' could keep. The caller knows
 * the slot is free. A recurrent model's state stands for all of the slot's
 * cached ids and cannot be cut back: it is kept whole when all of them
 * start the prompt (a conversation's next turn), else the runner goes back
 * to the longest state checkpoint inside the shared prefix (kv_keep; 0
 * without one). */
static int64_t reusable(const struct st_engine *e, const struct st_engine_slot *sl,
                        const struct st_request *req)
{
    int64_t len = share(&sl->cache, sl->cache.n_kv, req);
    if (e->runner && e->runner->recurrent && len != sl->cache.n_kv)
        return len > 0 ? ST_MIN(st_runner_kv_keep(e->runner, sl->index, len), len) : 0;
    return len;
}

int64_t st_engine_prefix_chunk(const struct st_engine *e, const struct st_engine_slot *sl,
                               int64_t chunk, int64_t left)
{
    const struct st_runner *r = e->runner;
    (void)sl;
    if (!r || !r->recurrent || r->ctx_checkpoints <= 0 || left <= ST_PREFIX_CKPT_TAIL ||
        chunk <= left - ST_PREFIX_CKPT_TAIL)
        return chunk;
    /* a chunk short of the end by less than the tail ends at the tail for
     * free; one that reads the rest costs a forward more when cut, worth
     * it only when the checkpoint before it lies far from the end */
    return chunk < left || left > ST_PREFIX_CKPT_MIN_READ ? left - ST_PREFIX_CKPT_TAIL : chunk;
}

/* Positions of slot sl's KV that are final and whose ids it knows: a free
 * slot's n_kv; a busy one's written positions (n_past: rejected drafts were
 * cut, and the token sampled last is not fed yet) as far as its ids go. */
static int64_t final_len(const struct st_engine_slot *sl)
{
    return sl->req ? ST_MIN(sl->cache.n_ids, sl->n_past) : sl->cache.n_kv;
}

/* How a free slot suits a request whose prompt shares 'len' tokens with
 * its cache: 2 = worth reusing (the prefix covers at least half the new
 * prompt or half of what the slot holds), 1 = empty, 0 = neither: taking
 * it would throw away a cache for a small gain. Chat prompts all share
 * their template's first tokens; without this, every request would crowd
 * into slot 0 and evict the others' conversations while slots stood empty
 * (llama-server's --slot-prompt-similarity 0.5 plays the same part). */
static int rank_of(const struct st_engine_slot *sl, int64_t len, const struct st_request *req)
{
    if (len > 0 && (2 * len >= req->n_tokens || 2 * len >= sl->cache.n_kv))
        return 2;
    return sl->cache.n_kv == 0 ? 1 : 0;
}

/* True when slot a (sharing la tokens, rank ra) is a better home than b:
 * the better rank; among slots worth reusing the longer prefix; among
 * empty slots the first; else the least recently freed. */
static bool better(const struct st_engine_slot *a, int64_t la, int ra,
                   const struct st_engine_slot *b, int64_t lb, int rb)
{
    if (ra != rb)
        return ra > rb;
    if (ra == 2 && la != lb)
        return la > lb;
    if (ra == 1)
        return false;
    return a->cache.stamp < b->cache.stamp;
}

struct choose_ctx {
    struct st_engine *e;
    st_engine_admit_gate *gate;
};

/* st_sched_slot_fn: under the scheduler's mutex (see the file comment). */
static int32_t choose_slot(void *ctx, const struct st_sched_job *job, int32_t offered)
{
    struct st_engine *e = ((struct choose_ctx *)ctx)->e;
    st_engine_admit_gate *gate = ((struct choose_ctx *)ctx)->gate;
    const struct st_request *req = ST_CONTAINER_OF(job, const struct st_request, job);
    /* A job for another model makes the engine swap: every cache goes. */
    if (e->model < 0 || job->model != e->model || offered < 0 || offered >= e->n_slots)
        return offered;
    int32_t best = offered;
    int64_t best_len = reusable(e, &e->slots[offered], req);
    int best_rank = rank_of(&e->slots[offered], best_len, req);
    for (int32_t i = 0; i < e->n_active && i < e->n_slots; i++) {
        const struct st_engine_slot *sl = &e->slots[i];
        if (i == offered || sl->req)
            continue;
        int64_t len = reusable(e, sl, req);
        int rank = rank_of(sl, len, req);
        if (better(sl, len, rank, &e->slots[best], best_len, best_rank)) {
            best = i;
            best_len = len;
            best_rank = rank;
        }
    }
    /* the unified KV pool: no room beside the busy slots, it waits (kv_pool.c) */
    return !gate || gate(e, req) ? best : ST_SCHED_SLOT_WAIT;
}

struct st_sched_job *st_engine_prefix_admit(struct st_engine *e, int32_t offered,
                                            st_engine_admit_gate *gate)
{
    struct choose_ctx ctx = { e, gate };
    return st_sched_admit_to(e->pool->sched, e->index, offered, choose_slot, &ctx);
}

/* Room for ids[0..n); false (and the cache stops growing) without memory. */
static bool reserve(struct st_prefix_cache *c, int64_t n)
{
    if (n <= c->cap)
        return true;
    int64_t cap = ST_MAX(n, ST_MAX(c->cap * 2, (int64_t)256));
    size_t bytes;
    if (!st_mul_ok((size_t)cap, sizeof(*c->ids), &bytes))
        return false;
    int32_t *p = realloc(c->ids, bytes);
    if (!p)
        return false;
    c->ids = p;
    c->cap = cap;
    return true;
}

/* n prompt tokens not read (cached), 'copied' of them copied across slots. */
static void count_cached(struct st_engine_pool *p, int64_t n, int64_t copied)
{
    pthread_mutex_lock(&p->mu);
    p->cached_tokens += (uint64_t)n;
    p->copied_tokens += (uint64_t)copied;
    pthread_mutex_unlock(&p->mu);
}

static void scores_free(struct st_score_cache *s)
{
    free(s->rec);
    memset(s, 0, sizeof(*s));
}

/* Scores stay only for positions whose ids up to them stay: below 'n'. */
static void scores_cut(struct st_score_cache *s, int64_t n)
{
    s->n = ST_MAX(ST_MIN(s->n, n), (int64_t)0);
}

void st_engine_prefix_bind(struct st_engine *e, struct st_engine_slot *sl,
                           struct st_request *req)
{
    struct st_prefix_cache *c = &sl->cache;
    int64_t keep = reusable(e, sl, req);   /* sl->req is not set yet */
    /* ids[common..) are overwritten below: their scores go, whether or not
     * this request keeps the KV (the scores of ids it does not change hold
     * for the KV it rewrites: the same tokens) */
    int64_t common = common_prefix(c->ids, c->n_kv, req->tokens, req->n_tokens);
    scores_cut(&c->sc, common);
    c->n_kv = 0;                        /* busy: only n_ids counts now */
    if (reserve(c, req->n_tokens)) {
        memcpy(c->ids, req->tokens, (size_t)req->n_tokens * sizeof(*c->ids));
        c->n_ids = req->n_tokens;
    } else {
        /* ids[0..common) are the new prompt's (keep <= common); a scored
         * read from 'keep' needs the score at 'keep' too, which stays */
        c->n_ids = ST_MIN(c->n_ids, common);
    }
    if (c->sc.n <= 1 && !req->params.prompt_logprobs)
        scores_free(&c->sc);   /* no score left, none coming: give the memory back */
    st_runner_kv_truncate(e->runner, sl->index, keep);
    sl->n_past = keep;
    st_kv_blocks_sync(e, sl, keep);   /* blocks past the kept prefix go */
    req->n_cached = keep;
    if (keep > 0) {
        st_sched_read_progress(e->pool->sched, &req->job, keep);
        count_cached(e->pool, keep, 0);
        st_log(ST_LOG_DEBUG, "engine", "engine %d slot %d: request %s reuses %lld of %lld "
               "prompt tokens", (int)e->index, (int)sl->index, req->id, (long long)keep,
               (long long)req->n_tokens);
    }
    st_engine_prefix_pull(e, sl);   /* another slot may hold more of the prompt */
}

void st_engine_prefix_push(struct st_engine_slot *sl, int32_t token)
{
    struct st_prefix_cache *c = &sl->cache;
    int64_t pos = sl->n_past;
    if (pos > c->n_ids || pos < 0)
        return;   /* a gap (the cache stopped growing): nothing past it is known */
    scores_cut(&c->sc, pos);   /* a score at pos was for the id it held */
    if (!reserve(c, pos + 1)) {
        c->n_ids = pos;
        return;
    }
    c->ids[pos] = token;
    c->n_ids = pos + 1;
}

/* Room for records of positions [0, n) with 'stride' alternatives each
 * (cap doubles, >= 256). A larger stride re-lays nothing: the caller
 * grows it only with no record kept. False without memory (nothing
 * changed but possibly a larger block). */
static bool scores_reserve(struct st_score_cache *s, int64_t n, int32_t stride)
{
    if (n <= s->cap && stride == s->stride)
        return true;
    int64_t cap = n <= s->cap ? s->cap : ST_MAX(n, ST_MAX(s->cap * 2, (int64_t)256));
    size_t bytes;
    if (!st_mul_ok((size_t)cap, rec_bytes(stride), &bytes))
        return false;
    unsigned char *p = realloc(s->rec, bytes);
    if (!p)
        return false;
    s->rec = p;
    s->cap = cap;
    s->stride = stride;
    return true;
}

void st_engine_prefix_keep_scores(struct st_engine_slot *sl, const struct st_runner_seq *q)
{
    struct st_prefix_cache *c = &sl->cache;
    struct st_score_cache *s = &c->sc;
    /* row j scores position q->pos + j + 1; the prompt's last row none */
    int64_t first = q->pos + 1;
    int64_t last = ST_MIN(q->pos + q->n_tokens, c->n_ids - 1);
    if (!q->score || last < first || first > ST_MAX(s->n, (int64_t)1))
        return;   /* nothing, or a gap after the kept run */
    if (q->score_top > s->stride) {
        /* More alternatives than any kept record has room for. A read
         * that starts after a kept prefix asks at most what those scores
         * have (reusable), so this is a read from position 0, which
         * replaces every record: drop them rather than re-lay them. */
        if (first != 1)
            return;
        s->n = 0;
    }
    if (!scores_reserve(s, last + 1, ST_MAX(s->stride, q->score_top)))
        return;
    for (int64_t p = first; p <= last; p++) {
        const struct st_runner_score *r = &q->scores[p - first];
        struct st_score_head *h = rec_head(s, p);
        int32_t k = ST_MIN(ST_MAX(r->n_top, 0), q->score_top);
        h->logprob = r->logprob;
        h->rank = r->rank;
        h->asked = (uint8_t)q->score_top;
        h->n_top = (uint8_t)k;
        h->pad_ = 0;
        memcpy(rec_ids(s, p), r->top_id, (size_t)k * sizeof(int32_t));
        memcpy(rec_lps(s, p), r->top_lp, (size_t)k * sizeof(float));
    }
    s->n = ST_MAX(s->n, last + 1);
}

bool st_engine_prefix_score(const struct st_engine_slot *sl, int64_t pos, int32_t n_top,
                            struct st_runner_score *out)
{
    const struct st_score_cache *s = &sl->cache.sc;
    if (pos < 1 || pos >= s->n || n_top < 0 || n_top > ST_RUNNER_SCORE_TOP)
        return false;
    const struct st_score_head *h = rec_head(s, pos);
    if (h->asked < n_top)
        return false;
    out->logprob = h->logprob;
    out->rank = h->rank;
    out->n_top = ST_MIN(n_top, (int32_t)h->n_top);
    memcpy(out->top_id, rec_ids(s, pos), (size_t)out->n_top * sizeof(int32_t));
    memcpy(out->top_lp, rec_lps(s, pos), (size_t)out->n_top * sizeof(float));
    return true;
}

/* ---- sharing across slots -------------------------------------------- */

/* After dst takes a prefix of req's prompt from src: src's kept scores
 * travel with the ids, over the positions p whose ids[0..p] the two share
 * (a score depends on nothing else), when that run is longer than dst's
 * own or dst's lacks the 'top' alternatives a scored request needs over
 * [1, need). They replace dst's records wholesale (over the same ids), so
 * the stride may change. False when dst still lacks them (need <= 1:
 * nothing needed, true). */
static bool scores_pull(struct st_prefix_cache *dst, const struct st_prefix_cache *src,
                        const struct st_request *req, int64_t need, int32_t top)
{
    const struct st_score_cache *s = &src->sc;
    int64_t common = common_prefix(src->ids, src->n_ids, req->tokens, req->n_tokens);
    int64_t end = ST_MIN(ST_MIN(s->n, common), dst->n_ids);
    bool lacking = need > 1 && scored_run(&dst->sc, top, need) < need;
    if (end > 1 && (end > dst->sc.n || lacking)) {
        /* a failed reserve changes nothing: dst keeps its own run */
        if (scores_reserve(&dst->sc, end, s->stride)) {
            memcpy(dst->sc.rec, s->rec, (size_t)end * rec_bytes(s->stride));
            dst->sc.n = end;
        }
    }
    return need <= 1 || scored_run(&dst->sc, top, need) >= need;
}

/* Is a copy that takes sl from 'have' to 'len' prompt tokens worth it? At
 * least ST_PREFIX_COPY_MIN more; with the KV events on, also any gain that
 * completes a block sl lacks (docs/KV-EVENTS.md "Reuse in blocks": a
 * router sent the request here for the blocks the events announced). */
static bool worth_copying(const struct st_engine *e, int64_t have, int64_t len)
{
    if (len >= have + ST_PREFIX_COPY_MIN)
        return true;
    int64_t b = e->pool->cfg.kv_block;
    return st_kv_blocks_on(e->pool) && b > 0 && len / b > have / b;
}

/* The other slot of the engine whose final KV holds the longest prefix of
 * sl's prompt, when worth_copying; -1 otherwise (*n: its length). */
static int32_t copy_source(const struct st_engine *e, const struct st_engine_slot *sl,
                           int64_t *n)
{
    int32_t best = -1;
    int64_t best_n = sl->n_past;
    for (int32_t i = 0; i < e->n_active && i < e->n_slots; i++) {
        const struct st_engine_slot *src = &e->slots[i];
        if (i == sl->index)
            continue;
        int64_t len = share(&src->cache, final_len(src), sl->req);
        if (len > best_n && worth_copying(e, sl->n_past, len)) {
            best = i;
            best_n = len;
        }
    }
    *n = best_n;
    return best;
}

void st_engine_prefix_pull(struct st_engine *e, struct st_engine_slot *sl)
{
    struct st_request *req = sl->req;
    int64_t have = sl->n_past, n;
    /* ids known in full (bind copied the prompt), and room to gain */
    if (!req || sl->decoding || !e->runner || e->runner->recurrent || req->no_prompt_cache ||
        sl->cache.n_ids < req->n_tokens || !worth_copying(e, have, req->n_tokens - 1))
        return;
    int32_t from = copy_source(e, sl, &n);
    if (from < 0)
        return;
    struct st_engine_slot *src = &e->slots[from];
    /* a scored read from n needs the scores of 1..n (prompt.c): no copy
     * without them */
    bool scored = req->params.prompt_logprobs;
    if (!scores_pull(&sl->cache, &src->cache, req, scored ? n + 1 : 0,
                     st_engine_prompt_top(req)))
        return;
    struct st_err err = { 0 };
    if (st_runner_kv_copy(e->runner, src->index, sl->index, have, n, &err) != ST_OK) {
        st_log(ST_LOG_WARN, "engine", "engine %d: copying %lld prompt tokens from slot %d to "
               "slot %d failed (%s): reading them", (int)e->index, (long long)(n - have),
               (int)src->index, (int)sl->index, err.msg);
        st_runner_kv_truncate(e->runner, sl->index, have);
        return;
    }
    sl->n_past = n;
    st_kv_blocks_sync(e, sl, n);
    req->n_cached += n - have;
    st_sched_read_progress(e->pool->sched, &req->job, n - have);
    count_cached(e->pool, n - have, n - have);
    st_log(ST_LOG_DEBUG, "engine", "engine %d slot %d: request %s copies prompt tokens [%lld, "
           "%lld) from slot %d (%s)", (int)e->index, (int)sl->index, req->id, (long long)have,
           (long long)n, (int)src->index, src->req ? "busy" : "free");
}

void st_engine_prefix_release(struct st_engine *e, struct st_engine_slot *sl,
                              enum st_outcome outcome)
{
    struct st_prefix_cache *c = &sl->cache;
    int64_t keep = outcome == ST_OUTCOME_FAILED ? 0 : ST_MIN(c->n_ids, sl->n_past);
    keep = ST_MAX(keep, (int64_t)0);
    /* recurrent state is at n_past: short of that only a state checkpoint
     * below can be kept (after a failure nothing: keep is 0) */
    if (e->runner && e->runner->recurrent && keep != sl->n_past && keep > 0)
        keep = ST_MIN(st_runner_kv_keep(e->runner, sl->index, keep), keep);
    /* The KV may hold more than n_past (drafts of a verify the request ended
     * in): cut it to what the ids describe. */
    st_runner_kv_truncate(e->runner, sl->index, keep);
    c->n_ids = keep;
    c->n_kv = keep;
    st_kv_blocks_sync(e, sl, keep);
    scores_cut(&c->sc, keep);
    c->stamp = ++e->prefix_tick;
}

bool st_engine_prefix_set(struct st_engine *e, struct st_engine_slot *sl, const int32_t *ids,
                          int64_t n)
{
    struct st_prefix_cache *c = &sl->cache;
    st_kv_blocks_sync(e, sl, 0);   /* the ids under its announced blocks change */
    scores_free(&c->sc);
    c->n_ids = c->n_kv = 0;
    if (n > 0 && !reserve(c, n))
        return false;
    if (n > 0)
        memcpy(c->ids, ids, (size_t)n * sizeof(*ids));
    c->n_ids = c->n_kv = n;
    st_kv_blocks_sync(e, sl, n);
    c->stamp = ++e->prefix_tick;
    return true;
}

void st_engine_prefix_forget(struct st_engine *e)
{
    for (int32_t i = 0; e->slots && i < e->n_slots; i++) {
        e->slots[i].cache.n_ids = 0;
        e->slots[i].cache.n_kv = 0;
        scores_free(&e->slots[i].cache.sc);   /* another model scores otherwise */
    }
}

void st_engine_prefix_evict(struct st_engine *e, struct st_engine_slot *sl)
{
    ST_ASSERT(!sl->req);
    if (e->runner)
        st_runner_kv_truncate(e->runner, sl->index, 0);
    st_kv_blocks_sync(e, sl, 0);
    sl->cache.n_ids = 0;
    sl->cache.n_kv = 0;
    scores_free(&sl->cache.sc);
}

void st_engine_prefix_fini(struct st_engine_slot *sl)
{
    free(sl->cache.ids);
    scores_free(&sl->cache.sc);
    memset(&sl->cache, 0, sizeof(sl->cache));
}
