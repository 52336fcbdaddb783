/* mtp.c -- the engine side of drafting (docs/ENGINE.md "MTP" and "N-gram
 * drafts"): where each decoding slot's drafts come from, how many it
 * drafts, the MTP drafting call, and the counters.
 *
 * Two sources, one verify path:
 *   - MTP (--batch-mtp): the runner's MTP layer chains greedy drafts from
 *     the slot's last sampled token (one runner call for every slot that
 *     drafts this way);
 *   - n-gram (--spec ngram): the tokens that followed the most recent
 *     earlier occurrence of the slot's last n tokens in its own history
 *     (ngram.c); no runner call, and nothing of the runner's MTP layer is
 *     touched for them.
 * Rule when both are on: a slot whose history has a match (and whose
 * n-gram estimate says drafting pays) takes the n-gram drafts; otherwise
 * it asks the MTP layer. N-gram drafts are free to make and, where they
 * match, usually long and right (text being copied); MTP covers the rest.
 *
 * A step with drafts (step.c):
 *   1. st_engine_spec_draft: every decoding slot that should draft gets k
 *      drafts from one source;
 *   2. the slot's DECODE sequence becomes [last token, d_1 .. d_k] with
 *      logits at every row, next to the other slots and the read chunk;
 *   3. after the forward, step.c samples row 0 with the request's own
 *      sampler and keeps going while the sample equals the next draft
 *      (exact-match acceptance, ENGINE.md 4.3), then the bonus token; the
 *      rejected positions are cut from the caches (kv_truncate);
 *   4. st_engine_spec_learn updates the slot's estimate for that source.
 * Every emitted token is a sample of the main model at a position whose
 * inputs are the tokens actually emitted, drawn with one RNG draw in
 * order, so greedy output is token for token the output without drafts,
 * and a seeded sampler gives the same text too.
 *
 * How many to draft (per slot, per source, per step). Verifying k drafts
 * costs k more rows, and on MoE each extra row reads more experts
 * (ENGINE.md 4.3), so a slot drafts only while its drafts pay. alpha =
 * hits / tries estimates the chance that a draft is accepted given the one
 * before it was, with counts decayed by DECAY per verify step (recent
 * steps count most); the j-th draft is expected to yield alpha^j tokens,
 * so k = the largest j <= the source's maximum with alpha^j >= WORTH. A new
 * request starts at the prior (alpha 2/3: one draft). When alpha falls
 * below WORTH the slot stops drafting from that source and only probes
 * with one draft now and then, so a slot whose text becomes predictable
 * again picks drafting back up: first after PROBE_MIN chances, and each
 * probe that fails doubles the wait (up to PROBE_MAX), because on MoE even
 * one probe's second row reads up to twice the experts of a one-row step.
 * A chance is a step for MTP, a step with a match for n-gram (a step
 * without a match is a plain one-row decode and costs nothing).
 *
 * What MTP costs where drafts fail: the runner's MTP upkeep (one more
 * decoder layer plus eh_proj over every row, which keeps the MTP cache
 * right for when drafts pay again) and the rare probes; docs/ENGINE.md
 * has the figures. N-gram drafts cost only their verify rows.
 * The context, max_tokens and a thinking budget (think_budget.c: once the
 * block is open, no drafts past the token it forces) cap k (drafts past
 * the end are wasted), and
 * an n-gram match gives at most the tokens that followed it.
 *
 * Thread: the engine's thread (counters: the pool mutex).
 */
#include <string.h>

#include "internal.h"
#include "strata/log.h"

#define DECAY 0.9
#define WORTH 0.5
#define PROBE_MIN 8
#define PROBE_MAX 256
#define PRIOR_HITS 1.0
#define PRIOR_TRIES 1.5

void st_engine_spec_reset(struct st_engine *e, struct st_engine_slot *sl)
{
    memset(&sl->mtp, 0, sizeof(sl->mtp));
    for (int32_t i = 0; i < ST_SPEC_SOURCES; i++) {
        sl->mtp.est[i].hits = PRIOR_HITS;
        sl->mtp.est[i].tries = PRIOR_TRIES;
        sl->mtp.est[i].probe_every = PROBE_MIN;
    }
    if (e->ngram_max <= 0)
        return;
    const struct st_pool_config *c = &e->pool->cfg;
    if (st_ngram_reset(&sl->ngram, c->ngram_min, c->ngram_max, e->runner->n_ctx) != ST_OK) {
        /* drafts are an optimization: the slot serves without them */
        st_ngram_fini(&sl->ngram);
        st_log(ST_LOG_WARN, "engine", "engine %d slot %d: no n-gram index (n %d..%d): "
               "decoding without n-gram drafts", (int)e->index, (int)sl->index,
               (int)c->ngram_min, (int)c->ngram_max);
    }
}

/* Drafts that pay for estimate 'est' now (0..max), before the context and
 * max_tokens caps. Called once per chance to draft. */
static int32_t policy(struct st_spec_est *est, int32_t max, bool fixed)
{
    if (fixed)
        return max;
    double alpha = est->tries > 0 ? est->hits / est->tries : 0.0, gain = 1.0;
    int32_t k = 0;
    while (k < max) {
        gain *= alpha;
        if (gain < WORTH)
            break;
        k++;
    }
    est->probing = false;
    if (k > 0) {
        est->idle = 0;
        est->probe_every = PROBE_MIN;
        return k;
    }
    if (++est->idle < est->probe_every)
        return 0;
    est->idle = 0;
    est->probing = true;
    return 1;
}

/* Draft positions that fit: verify rows at n_past .. n_past + k must fit
 * the context, and drafts past max_tokens are wasted. */
static int32_t room(const struct st_engine *e, const struct st_engine_slot *sl)
{
    const struct st_gen_params *gp = &sl->req->params;
    int64_t r = e->runner->n_ctx - 1 - sl->n_past;
    if (gp->max_tokens > 0)
        r = ST_MIN(r, (int64_t)gp->max_tokens - sl->n_generated - 1);
    /* a thinking budget forces the closing tokens: no drafts against them */
    r = ST_MIN(r, (int64_t)st_sampler_draft_room(&sl->sampler));
    return (int32_t)ST_MAX(ST_MIN(r, (int64_t)ST_SPEC_MAX_DRAFT), (int64_t)0);
}

/* N-gram drafts for slot sl into sl->mtp.tokens + 1 (at most 'fit'): the
 * count, 0 when its history has no match or its estimate says wait. The
 * history is the slot's prefix-cache ids: the prompt and every sampled
 * token at its position, the last one (sl->last_token) at n_past. */
static int32_t ngram_draft(struct st_engine *e, struct st_engine_slot *sl, int32_t fit)
{
    const struct st_prefix_cache *c = &sl->cache;
    int64_t len = sl->n_past + 1;
    if (c->n_ids != len || c->ids[len - 1] != sl->last_token)
        return 0;   /* the record stopped growing (no memory): no history to match */
    int32_t max = ST_MIN(fit, e->ngram_max);
    int32_t got = st_ngram_draft(&sl->ngram, c->ids, len, sl->mtp.tokens + 1, max, NULL);
    if (got <= 0)
        return 0;
    const struct st_mtp_test *hook = &e->pool->mtp_test;
    return ST_MIN(got, policy(&sl->mtp.est[ST_SPEC_NGRAM], max, hook->fixed_length));
}

/* The MTP layer's drafts for the slots in e->drafts[0..n). */
static void mtp_call(struct st_engine *e, int32_t n)
{
    struct st_err err = { 0 };
    if (st_runner_mtp_draft(e->runner, e->drafts, n, &err) != ST_OK) {
        /* Drafts are an optimization: the step goes on without them. */
        st_log(ST_LOG_WARN, "engine", "engine %d: MTP drafting failed, decoding without "
               "drafts this step: %s", (int)e->index, err.msg);
        return;
    }
    for (int32_t j = 0; j < n; j++)
        e->slots[e->drafts[j].slot].mtp.n_draft = e->drafts[j].n_draft;
}

void st_engine_spec_draft(struct st_engine *e)
{
    const struct st_mtp_test *hook = &e->pool->mtp_test;
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_slots; i++) {
        struct st_engine_slot *sl = &e->slots[i];
        sl->mtp.n_draft = 0;
        if (!sl->req || !sl->decoding)
            continue;
        int32_t fit = room(e, sl);
        if (fit <= 0)
            continue;
        int32_t k = e->ngram_max > 0 ? ngram_draft(e, sl, fit) : 0;
        if (k > 0) {
            sl->mtp.n_draft = k;
            sl->mtp.src = ST_SPEC_NGRAM;
            continue;
        }
        if (e->mtp_max <= 0)
            continue;
        k = ST_MIN(fit, policy(&sl->mtp.est[ST_SPEC_MTP], e->mtp_max, hook->fixed_length));
        if (k <= 0)
            continue;
        sl->mtp.src = ST_SPEC_MTP;
        e->drafts[n++] = (struct st_runner_draft){ .slot = i, .token = sl->last_token,
                                                   .pos = sl->n_past, .n_draft = k,
                                                   .out = sl->mtp.tokens + 1 };
    }
    if (n > 0)
        mtp_call(e, n);
    for (int32_t i = 0; hook->corrupt && i < e->n_slots; i++) {
        struct st_engine_slot *sl = &e->slots[i];
        if (sl->mtp.n_draft > 0)
            hook->corrupt(hook->ctx, sl->index, sl->mtp.tokens + 1, sl->mtp.n_draft);
    }
}

void st_engine_spec_learn(struct st_engine *e, struct st_engine_slot *sl, int32_t drafted,
                          int32_t accepted)
{
    struct st_engine_pool *p = e->pool;
    struct st_spec_est *est = &sl->mtp.est[sl->mtp.src];
    est->hits = DECAY * est->hits + accepted;
    est->tries = DECAY * est->tries + accepted + (accepted < drafted ? 1 : 0);
    if (est->probing && accepted == 0)
        est->probe_every = ST_MIN(2 * est->probe_every, PROBE_MAX);
    est->probing = false;
    bool ngram = sl->mtp.src == ST_SPEC_NGRAM;
    pthread_mutex_lock(&p->mu);
    *(ngram ? &p->ngram_drafted : &p->mtp_drafted) += (uint64_t)drafted;
    *(ngram ? &p->ngram_accepted : &p->mtp_accepted) += (uint64_t)accepted;
    (*(ngram ? &p->ngram_steps : &p->mtp_steps))++;
    pthread_mutex_unlock(&p->mu);
}

void st_engine_mtp_loaded(struct st_engine *e)
{
    struct st_engine_pool *p = e->pool;
    e->mtp_max = p->cfg.mtp ? st_runner_mtp_max(e->runner) : 0;
    e->ngram_max = p->cfg.ngram ? ST_MIN(ST_MAX(p->cfg.spec_draft, 0), ST_SPEC_MAX_DRAFT) : 0;
    const char *name = e->model >= 0 ? p->models[e->model].cfg.name : "?";
    if (e->ngram_max > 0 && (p->cfg.ngram_min < 1 || p->cfg.ngram_max < p->cfg.ngram_min ||
                             p->cfg.ngram_max > ST_NGRAM_MAX_N)) {
        st_log(ST_LOG_WARN, "engine", "engine %d: n-gram lengths %d..%d are not within "
               "1..%d: no n-gram drafts", (int)e->index, (int)p->cfg.ngram_min,
               (int)p->cfg.ngram_max, ST_NGRAM_MAX_N);
        e->ngram_max = 0;
    }
    if (e->ngram_max > 0)
        st_log(ST_LOG_INFO, "engine", "engine %d: model '%s': n-gram drafting on (n %d..%d), "
               "up to %d tokens per slot and step%s", (int)e->index, name,
               (int)p->cfg.ngram_min, (int)p->cfg.ngram_max, (int)e->ngram_max,
               e->mtp_max > 0 ? "; MTP drafts where the history has no match" : "");
    if (!p->cfg.mtp)
        return;
    if (e->mtp_max == 0)
        st_log(ST_LOG_WARN, "engine", "engine %d: model '%s' has no MTP layer (no "
               "nextn_predict_layers / blk.N.nextn.* tensors): --batch-mtp drafts nothing for "
               "it; it serves normally", (int)e->index, name);
    else
        st_log(ST_LOG_INFO, "engine", "engine %d: model '%s': MTP drafting on, up to %d "
               "tokens per slot and step", (int)e->index, name, (int)e->mtp_max);
}

void st_engine_pool_mtp_test(struct st_engine_pool *p, const struct st_mtp_test *hook)
{
    p->mtp_test = hook ? *hook : (struct st_mtp_test){ 0 };
}
