/* mtp.c -- the engine side of --batch-mtp (docs/ENGINE.md "MTP"): how many
 * tokens each decoding slot drafts, the drafting call, and the counters.
 *
 * A step with MTP (step.c):
 *   1. st_engine_mtp_draft: every decoding slot that should draft asks the
 *      runner, in one call for all of them, for k draft tokens from its
 *      last sampled token (the runner's MTP layer, chained greedily);
 *   2. the slot's DECODE sequence becomes [last token, d_1 .. d_k] with
 *      logits at every row, next to the other slots and the read chunk;
 *   3. after the forward, step.c samples row 0 with the request's own
 *      sampler and keeps going while the sample equals the next draft
 *      (exact-match acceptance, ENGINE.md 4.3), then the bonus token; the
 *      rejected positions are cut from both caches (kv_truncate);
 *   4. st_engine_mtp_learn updates the slot's acceptance estimate.
 * Every emitted token is a sample of the main model at a position whose
 * inputs are the tokens actually emitted, drawn with one RNG draw in
 * order, so greedy output is token for token the output without MTP, and
 * a seeded sampler gives the same text too.
 *
 * How many to draft (per slot, per step). Verifying k drafts costs k more
 * rows, and on MoE each extra row reads more experts (ENGINE.md 4.3), so
 * a slot drafts only while its drafts pay. alpha = hits / tries estimates
 * the chance that a draft is accepted given the one before it was, with
 * counts decayed by DECAY per verify step (recent steps count most); the
 * j-th draft is expected to yield alpha^j tokens, so k = the largest
 * j <= --mtp-draft with alpha^j >= WORTH. A new request starts at the
 * prior (alpha 2/3: one draft). When alpha falls below WORTH the slot
 * stops drafting and only probes with one draft now and then, so a slot
 * whose text becomes predictable again picks drafting back up: first
 * after PROBE_MIN steps, and each probe that fails doubles the wait (up to
 * PROBE_MAX), because on MoE even one probe's second row reads up to twice
 * the experts of a one-row step.
 *
 * What MTP costs where drafts fail: the runner's MTP upkeep (one more
 * decoder layer plus eh_proj over every row, which keeps the MTP cache
 * right for when drafts pay again) and the rare probes; docs/ENGINE.md
 * has the figures.
 * The context and max_tokens cap k (drafts past the end are wasted).
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

void st_engine_mtp_reset(struct st_engine_slot *sl)
{
    memset(&sl->mtp, 0, sizeof(sl->mtp));
    sl->mtp.hits = PRIOR_HITS;
    sl->mtp.tries = PRIOR_TRIES;
    sl->mtp.probe_every = PROBE_MIN;
}

/* Drafts that pay for slot sl now (0..max), before the context and
 * max_tokens caps. */
static int32_t policy(struct st_engine_slot *sl, int32_t max, bool fixed)
{
    if (fixed)
        return max;
    double alpha = sl->mtp.tries > 0 ? sl->mtp.hits / sl->mtp.tries : 0.0, gain = 1.0;
    int32_t k = 0;
    while (k < max) {
        gain *= alpha;
        if (gain < WORTH)
            break;
        k++;
    }
    sl->mtp.probing = false;
    if (k > 0) {
        sl->mtp.idle = 0;
        sl->mtp.probe_every = PROBE_MIN;
        return k;
    }
    if (++sl->mtp.idle < sl->mtp.probe_every)
        return 0;
    sl->mtp.idle = 0;
    sl->mtp.probing = true;
    return 1;
}

static int32_t want(const struct st_engine *e, struct st_engine_slot *sl)
{
    const struct st_gen_params *gp = &sl->req->params;
    int64_t room = e->runner->n_ctx - 1 - sl->n_past;   /* verify rows at n_past .. n_past+k */
    if (gp->max_tokens > 0)
        room = ST_MIN(room, (int64_t)gp->max_tokens - sl->n_generated - 1);
    if (room <= 0)
        return 0;
    const struct st_mtp_test *hook = &e->pool->mtp_test;
    return (int32_t)ST_MIN((int64_t)policy(sl, e->mtp_max, hook->fixed_length), room);
}

void st_engine_mtp_draft(struct st_engine *e)
{
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_slots; i++) {
        struct st_engine_slot *sl = &e->slots[i];
        sl->mtp.n_draft = 0;
        if (!sl->req || !sl->decoding || e->mtp_max <= 0)
            continue;
        int32_t k = want(e, sl);
        if (k <= 0)
            continue;
        e->drafts[n++] = (struct st_runner_draft){ .slot = i, .token = sl->last_token,
                                                   .pos = sl->n_past, .n_draft = k,
                                                   .out = sl->mtp.tokens + 1 };
    }
    if (n == 0)
        return;
    struct st_err err = { 0 };
    if (st_runner_mtp_draft(e->runner, e->drafts, n, &err) != ST_OK) {
        /* Drafts are an optimization: the step goes on without them. */
        st_log(ST_LOG_WARN, "engine", "engine %d: MTP drafting failed, decoding without "
               "drafts this step: %s", (int)e->index, err.msg);
        return;
    }
    const struct st_mtp_test *hook = &e->pool->mtp_test;
    for (int32_t j = 0; j < n; j++) {
        struct st_engine_slot *sl = &e->slots[e->drafts[j].slot];
        sl->mtp.n_draft = e->drafts[j].n_draft;
        if (hook->corrupt && sl->mtp.n_draft > 0)
            hook->corrupt(hook->ctx, sl->index, sl->mtp.tokens + 1, sl->mtp.n_draft);
    }
}

void st_engine_mtp_learn(struct st_engine *e, struct st_engine_slot *sl, int32_t drafted,
                         int32_t accepted)
{
    struct st_engine_pool *p = e->pool;
    sl->mtp.hits = DECAY * sl->mtp.hits + accepted;
    sl->mtp.tries = DECAY * sl->mtp.tries + accepted + (accepted < drafted ? 1 : 0);
    if (sl->mtp.probing && accepted == 0)
        sl->mtp.probe_every = ST_MIN(2 * sl->mtp.probe_every, PROBE_MAX);
    sl->mtp.probing = false;
    pthread_mutex_lock(&p->mu);
    p->mtp_drafted += (uint64_t)drafted;
    p->mtp_accepted += (uint64_t)accepted;
    p->mtp_steps++;
    pthread_mutex_unlock(&p->mu);
}

void st_engine_mtp_loaded(struct st_engine *e)
{
    struct st_engine_pool *p = e->pool;
    e->mtp_max = p->cfg.mtp ? st_runner_mtp_max(e->runner) : 0;
    if (!p->cfg.mtp)
        return;
    const char *name = e->model >= 0 ? p->models[e->model].cfg.name : "?";
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
