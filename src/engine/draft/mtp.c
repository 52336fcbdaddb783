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
 *      (exact-match acceptance, docs/design/ENGINE.md 4.3), then the bonus token; the
 *      rejected positions are cut from the caches (kv_truncate);
 *   4. st_engine_spec_learn updates the slot's estimate for that source.
 * Every emitted token is a sample of the main model at a position whose
 * inputs are the tokens actually emitted, drawn with one RNG draw in
 * order, so greedy output is token for token the output without drafts,
 * and a seeded sampler gives the same text too.
 *
 * How many to draft (per slot, per source, per step): the cost-aware plan
 * (spec_cost.c, docs/ENGINE.md "Draft length: cost-aware"). Each source
 * keeps, per slot, alpha = hits / tries, the chance that a draft is
 * accepted given the one before it was, with counts decayed by DECAY per
 * verify step (a new request starts at the prior, 2/3); the j-th draft is
 * expected to yield alpha^j tokens. The plan weighs those tokens against
 * what the engine measured its steps and draft calls to cost and picks the
 * k of every slot that gives the most tokens per second, no drafts at all
 * included; a step without drafts (and without a prompt chunk) then skips
 * the runner's MTP upkeep. Until the engine has timings (and under a clock
 * that never moves, as in the tests) the acceptance-only rule decides: k =
 * the largest j <= the source's maximum with alpha^j >= WORTH. A slot that
 * stopped drafting probes now and then (first after PROBE_MIN chances,
 * each failed probe doubling the wait up to PROBE_MAX), and the engine
 * re-prices a choice it keeps making by trying its neighbours (plan()).
 * A chance is a step for MTP, a step with a match for n-gram (a step
 * without a match is a plain one-row decode and costs nothing).
 *
 * What MTP costs where drafts fail: the rare probes and explorations, and
 * the runner's MTP upkeep (the k/v path of one more decoder layer over the
 * rows) on prompt chunks and on the steps around them; steps the plan
 * keeps plain skip it. docs/ENGINE.md has the figures. N-gram drafts cost
 * only their verify rows.
 * The context, max_tokens and a thinking budget (think_budget.c: once the
 * block is open, no drafts past the token it forces) cap k (drafts past
 * the end are wasted), and
 * an n-gram match gives at most the tokens that followed it.
 *
 * Thread: the engine's thread (counters: the pool mutex).
 */
#include <string.h>

#include "engine/pool.h"
#include "strata/log.h"

#define DECAY 0.9
#define WORTH 0.5
#define PROBE_MIN 8
#define PROBE_MAX 256
#define PRIOR_HITS 1.0
#define PRIOR_TRIES 1.5
#define EXPLORE_MIN 8     /* plain steps before one that drafts anyway, at first */
#define EXPLORE_STEPS 3   /* steps with drafts per exploration: the first after plain
                           * ones runs with cold caches (the MTP layer's weights) */
#define HYST 0.03         /* a plan within 3% of paying keeps the last choice */
#define NEAR 0.9          /* ... always, for a plan within 10% of paying */
#define EXPLORE_MAX 1024  /* ... and at most (doubling while drafts keep not paying) */
#define PLAIN_EVERY 128   /* steps with drafts before one without (prices it afresh) */

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

static double alpha_of(const struct st_spec_est *est)
{
    return est->tries > 0 ? est->hits / est->tries : 0.0;
}

/* The acceptance-only rule, used until the cost model can price steps
 * (and for an exploration it asks for): drafts that pay for estimate 'est'
 * now (0..max), before the context and max_tokens caps. Called once per
 * chance to draft. */
static int32_t policy(struct st_spec_est *est, int32_t max, bool fixed)
{
    if (fixed)
        return max;
    double alpha = alpha_of(est), gain = 1.0;
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

/* N-gram drafts for slot sl into sl->mtp.tokens + 1 (at most 'fit'): how
 * many the match gives, 0 when its history has none. The history is the
 * slot's prefix-cache ids: the prompt and every sampled token at its
 * position, the last one (sl->last_token) at n_past. */
static int32_t ngram_lookup(struct st_engine *e, struct st_engine_slot *sl, int32_t fit)
{
    const struct st_prefix_cache *c = &sl->cache;
    int64_t len = sl->n_past + 1;
    if (c->n_ids != len || c->ids[len - 1] != sl->last_token)
        return 0;   /* the record stopped growing (no memory): no history to match */
    int32_t got = st_ngram_draft(&sl->ngram, c->ids, len, sl->mtp.tokens + 1,
                                 ST_MIN(fit, e->ngram_max), NULL);
    return ST_MAX(got, 0);
}

/* Slot sl's source this step and what it may draft from it: an n-gram
 * match (free drafts, already in sl->mtp.tokens + 1) when its estimate is
 * at least WORTH or its probe is due (or MTP is off); else MTP. A slot
 * whose wait for a probe is over shows the prior estimate and one draft:
 * the plan then probes it if a fair acceptance would pay at the current
 * cost. */
static struct st_spec_want slot_want(struct st_engine *e, struct st_engine_slot *sl)
{
    struct st_spec_want w = { 0 };
    int32_t fit = room(e, sl);
    if (fit <= 0)
        return w;
    struct st_mtp_slot *m = &sl->mtp;
    int32_t got = e->ngram_max > 0 ? ngram_lookup(e, sl, fit) : 0;
    struct st_spec_est *ng = &m->est[ST_SPEC_NGRAM];
    bool ngram = got > 0 && (e->mtp_max <= 0 || alpha_of(ng) >= WORTH ||
                             ng->idle >= ng->probe_every);
    if (got > 0 && !ngram)
        ng->idle = ST_MIN(ng->idle + 1, ng->probe_every);   /* a chance towards its probe */
    if (!ngram && e->mtp_max <= 0)
        return w;
    m->src = ngram ? ST_SPEC_NGRAM : ST_SPEC_MTP;
    struct st_spec_est *est = &m->est[m->src];
    w = (struct st_spec_want){ .alpha = alpha_of(est), .mtp = !ngram,
                               .max = ngram ? got : ST_MIN(fit, e->mtp_max) };
    if (est->idle >= est->probe_every) {
        w.alpha = ST_MAX(w.alpha, PRIOR_HITS / PRIOR_TRIES);
        w.max = 1;
        w.probe = true;
    }
    return w;
}

/* The acceptance-only rule for every slot (the cost model cannot price
 * the step, or a test fixes the lengths). */
static void plan_by_acceptance(struct st_engine *e, int32_t n)
{
    struct st_spec_engine *sp = &e->spec;
    bool fixed = e->pool->mtp_test.fixed_length;
    for (int32_t i = 0; i < n; i++) {
        struct st_mtp_slot *m = &e->slots[sp->slot[i]].mtp;
        const struct st_spec_want *w = &sp->want[i];
        sp->k[i] = w->max > 0 ? ST_MIN(w->max, policy(&m->est[m->src], w->max, fixed)) : 0;
    }
}

/* sp->k for the n decoding slots: the cost-aware plan (spec_cost.c), or
 * the acceptance rule while the cost model cannot price steps (returns
 * false then). A choice the plan keeps making is priced afresh by trying
 * its neighbours: after plain_run steps without drafts (EXPLORE_MIN while
 * the best plan with drafts is within NEAR of paying, else doubling up to
 * EXPLORE_MAX) one step drafts that plan or one row more; while drafting,
 * every EXPLORE_MIN-th step one row more or less, and every PLAIN_EVERY-th
 * step none. A step without drafts is lean (no MTP upkeep). */
static bool plan(struct st_engine *e, int32_t n)
{
    struct st_spec_engine *sp = &e->spec;
    struct st_spec_plan_out out;
    bool any = false;
    for (int32_t i = 0; i < n && !any; i++)
        any = sp->want[i].max > 0;
    enum st_spec_verdict v = any ? st_spec_plan(&sp->cost, sp->want, n, sp->k, &out)
                                 : ST_SPEC_PLAIN;
    /* within HYST of paying, keep the last choice: each switch from plain to
     * drafting costs the MTP layer's catch-up (priced in the plan, spread
     * over ST_SPEC_CATCH_AMORT steps) and cold caches */
    if (v == ST_SPEC_DRAFT && !sp->paid && out.rate < (1.0 + HYST) * out.rate0) {
        v = ST_SPEC_PLAIN;
        memset(sp->k, 0, (size_t)n * sizeof(*sp->k));
    } else if (v == ST_SPEC_PLAIN && sp->paid && out.alt_k > 0 &&
               out.alt_rate > (1.0 - HYST) * out.rate0) {
        v = ST_SPEC_DRAFT;
        out.k_total = out.alt_k;
        out.rate = out.alt_rate;
        st_spec_split(sp->want, n, out.alt_k, sp->k);
    }
    if (any && (v == ST_SPEC_DRAFT) != sp->paid && (v == ST_SPEC_DRAFT || v == ST_SPEC_PLAIN)) {
        sp->paid = v == ST_SPEC_DRAFT;
        st_log(ST_LOG_DEBUG, "engine", "engine %d: %d slots: drafts %s: %.3f tokens/ms with "
               "%d draft rows, %.3f without", (int)e->index, (int)n,
               sp->paid ? "pay" : "do not pay", out.alt_rate * 1e6, (int)out.alt_k,
               out.rate0 * 1e6);
    }
    sp->explored = false;
    sp->lean = false;
    if (!any || e->pool->mtp_test.fixed_length || v == ST_SPEC_UNPRICED || v == ST_SPEC_EXPLORE) {
        if (any)
            plan_by_acceptance(e, n);
        else
            memset(sp->k, 0, (size_t)n * sizeof(*sp->k));
        return false;
    }
    if (v == ST_SPEC_DRAFT) {
        sp->plain_run = 0;
        sp->explore_every = EXPLORE_MIN;
        /* the alternative is priced by few steps at first (one of them may
         * be a cold one after a prompt read): look at it sooner then */
        bool few = n <= ST_SPEC_COST_ROWS && sp->cost.curve[ST_SPEC_LEAN].n[n] < 4;
        if (++sp->draft_run >= (few ? EXPLORE_MIN : PLAIN_EVERY)) {
            sp->draft_run = 0;
            memset(sp->k, 0, (size_t)n * sizeof(*sp->k));
            sp->lean = true;
        } else if (sp->draft_run % EXPLORE_MIN == 0) {
            /* the neighbours of the plan, one draft row more or less in
             * turn, priced afresh: a row count never measured is only
             * extrapolated, and the plan would never go there to see */
            int32_t up = (sp->draft_run / EXPLORE_MIN) % 2;
            st_spec_split(sp->want, n, ST_MAX(out.k_total + (up ? 1 : -1), 1), sp->k);
        }
        return true;
    }
    sp->lean = true;
    if (v == ST_SPEC_MEASURE)
        return true;
    sp->draft_run = 0;
    sp->plain_steps++;
    pthread_mutex_lock(&e->pool->mu);
    e->pool->spec_plain_steps++;
    pthread_mutex_unlock(&e->pool->mu);
    /* a plan close to paying is looked at every EXPLORE_MIN steps: noise
     * may have put it under; one far from it (drafts rejected) ever later */
    sp->near = out.alt_rate >= NEAR * out.rate0;
    /* explorations price rows; whether drafts are accepted is the slots'
     * probes' business: only a slot whose estimate is at least WORTH makes
     * one worth it (random MTP weights: none) */
    bool worth = false;
    for (int32_t i = 0; i < n && !worth; i++)
        worth = sp->want[i].max > 0 && !sp->want[i].probe && sp->want[i].alpha >= WORTH;
    if (++sp->plain_run >= (sp->near ? EXPLORE_MIN : sp->explore_every) && out.alt_k > 0 &&
        worth) {
        sp->explored = true;   /* settled in note_chances once it drafted */
        sp->lean = false;
        /* the best plan with drafts, or (every other time) one row more: a
         * row count never measured is only extrapolated */
        st_spec_split(sp->want, n, out.alt_k + (sp->explores++ % 2), sp->k);
    }
    return true;
}

/* After a priced plan and the drafting: a slot that drafts resets its wait
 * for a probe (or, when it was shown the probe's prior, this draft is the
 * probe); one that could have drafted and did not (planned none, or the MTP
 * layer had no state for it after a step without upkeep) waits one step
 * more. An exploration counts once it drafted something; else it stays due. */
static void note_chances(struct st_engine *e, int32_t n)
{
    struct st_spec_engine *sp = &e->spec;
    bool drafted = false;
    for (int32_t i = 0; i < n; i++)
        drafted |= e->slots[sp->slot[i]].mtp.n_draft > 0;
    if (sp->explored && drafted && ++sp->explore_steps >= EXPLORE_STEPS) {
        sp->plain_run = 0;
        sp->explore_steps = 0;
        if (!sp->near)
            sp->explore_every = ST_MIN(2 * sp->explore_every, EXPLORE_MAX);
    }
    for (int32_t i = 0; i < n; i++) {
        struct st_mtp_slot *m = &e->slots[sp->slot[i]].mtp;
        struct st_spec_est *est = &m->est[m->src];
        if (sp->want[i].max <= 0)
            continue;
        if (e->slots[sp->slot[i]].mtp.n_draft == 0) {   /* none made counts as none planned */
            est->idle = ST_MIN(est->idle + 1, est->probe_every);
            est->probing = false;
            continue;
        }
        est->probing = est->idle >= est->probe_every;
        est->idle = 0;
        if (!est->probing)
            est->probe_every = PROBE_MIN;
    }
}

/* The MTP layer's drafts for the slots in e->drafts[0..n), timed for the
 * cost model. */
static void mtp_call(struct st_engine *e, int32_t n)
{
    struct st_err err = { 0 };
    int32_t passes = 0, slot_passes = 0;
    bool catching = false;   /* the call catches a slot's MTP cache up first: not learned */
    for (int32_t j = 0; j < n; j++)
        catching |= e->slots[e->drafts[j].slot].mtp.gap > 0;
    int64_t t0 = st_clock_now(e->pool->clock);
    if (st_runner_mtp_draft(e->runner, e->drafts, n, &err) != ST_OK) {
        /* Drafts are an optimization: the step goes on without them. */
        st_log(ST_LOG_WARN, "engine", "engine %d: MTP drafting failed, decoding without "
               "drafts this step: %s", (int)e->index, err.msg);
        return;
    }
    int64_t t1 = st_clock_now(e->pool->clock);
    for (int32_t j = 0; j < n; j++) {   /* the drafts made (none without a carried state) */
        passes = ST_MAX(passes, e->drafts[j].n_draft);
        slot_passes += e->drafts[j].n_draft;
    }
    const struct st_mtp_test *hook = &e->pool->mtp_test;
    int64_t ns = hook->draft_ns ? hook->draft_ns(hook->ctx, passes, slot_passes) : t1 - t0;
    if (!catching)
        st_spec_cost_draft(&e->spec.cost, passes, slot_passes, ns);   /* passes 0: nothing */
    for (int32_t j = 0; j < n; j++)
        e->slots[e->drafts[j].slot].mtp.n_draft = e->drafts[j].n_draft;
}

void st_engine_spec_draft(struct st_engine *e)
{
    const struct st_mtp_test *hook = &e->pool->mtp_test;
    struct st_spec_engine *sp = &e->spec;
    int32_t n = 0, nm = 0;
    for (int32_t i = 0; i < e->n_slots; i++) {
        struct st_engine_slot *sl = &e->slots[i];
        sl->mtp.n_draft = 0;
        if (!sl->req || !sl->decoding)
            continue;
        sp->slot[n] = i;
        sp->want[n] = slot_want(e, sl);
        sp->want[n++].gap = sl->mtp.gap;
    }
    sp->lean = false;
    sp->explored = false;
    if (n == 0)
        return;
    if (hook->force_plain && hook->force_plain(hook->ctx)) {
        sp->lean = true;   /* k stays 0 everywhere: a plain step without the upkeep */
        return;
    }
    bool priced = plan(e, n);
    for (int32_t i = 0; i < n; i++) {
        struct st_engine_slot *sl = &e->slots[sp->slot[i]];
        int32_t k = sp->k[i];
        if (k <= 0)
            continue;
        if (!sp->want[i].mtp) {
            sl->mtp.n_draft = k;   /* n-gram: the drafts are in place */
            continue;
        }
        e->drafts[nm++] = (struct st_runner_draft){ .slot = sl->index, .token = sl->last_token,
                                                    .pos = sl->n_past, .n_draft = k,
                                                    .out = sl->mtp.tokens + 1 };
    }
    if (nm > 0)
        mtp_call(e, nm);
    if (priced)
        note_chances(e, n);
    for (int32_t i = 0; hook->corrupt && i < e->n_slots; i++) {
        struct st_engine_slot *sl = &e->slots[i];
        if (sl->mtp.n_draft > 0)
            hook->corrupt(hook->ctx, sl->index, sl->mtp.tokens + 1, sl->mtp.n_draft);
    }
}

void st_engine_spec_learn(struct st_engine *e, struct st_engine_slot *sl, int32_t drafted,
                          int32_t accepted)
{
    struct st_spec_est *est = &sl->mtp.est[sl->mtp.src];
    est->hits = DECAY * est->hits + accepted;
    est->tries = DECAY * est->tries + accepted + (accepted < drafted ? 1 : 0);
    if (est->probing && accepted == 0)
        est->probe_every = ST_MIN(2 * est->probe_every, PROBE_MAX);
    est->probing = false;
}

void st_engine_spec_count(struct st_engine *e, const struct st_engine_slot *sl,
                          int32_t drafted, int32_t accepted, bool step)
{
    struct st_engine_pool *p = e->pool;
    bool ngram = sl->mtp.src == ST_SPEC_NGRAM;
    pthread_mutex_lock(&p->mu);
    *(ngram ? &p->ngram_drafted : &p->mtp_drafted) += (uint64_t)drafted;
    *(ngram ? &p->ngram_accepted : &p->mtp_accepted) += (uint64_t)accepted;
    if (step)
        (*(ngram ? &p->ngram_steps : &p->mtp_steps))++;
    pthread_mutex_unlock(&p->mu);
}

void st_engine_mtp_loaded(struct st_engine *e)
{
    struct st_engine_pool *p = e->pool;
    e->mtp_max = p->cfg.mtp ? st_runner_mtp_max(e->runner) : 0;
    st_spec_cost_init(&e->spec.cost, e->mtp_max > 0);   /* another model, other costs */
    e->spec.plain_run = 0;
    e->spec.draft_run = 0;
    e->spec.explore_steps = 0;
    e->spec.explore_every = EXPLORE_MIN;
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
