/* sample.c -- turn one row of logits into a token.
 *
 * The chain follows llama.cpp's default order: logit_bias, penalties
 * (penalty.c), top-k, top-p, min-p, then temperature, then a draw from the
 * remaining distribution. Temperature <= 0 is greedy (argmax of the biased
 * and penalised logits). Logprobs are the log-softmax of the raw logits
 * (before bias, penalties, any filter or temperature), as llama-server
 * reports them by default; top_logprobs are the N most likely tokens of
 * that distribution.
 *
 * Shapes: logits float[n_vocab]; the candidate buffer holds n_vocab
 * (id, logit, p) entries, allocated once per slot on first use.
 * RNG: mt19937 seeded per request (the 'seed' param as 32 bits, else a
 * random seed) and one uniform double per sampled token, llama-server's
 * generator and draw (mt19937.h): the same seed gives llama-server's text.
 *
 * JSON mode (response_format json_object), structured outputs
 * (json_schema) and enforced tool calls (tool_choice "required" / a named
 * function) and GBNF grammars (`grammar`) mask, after bias and penalties,
 * every token json_mask.c refuses (the JSON modes and grammars after an
 * optional think block: think_block.h).
 * A spent thinking budget forces its closing tokens instead (think_budget.c;
 * step.c takes them, st_sampler_score gives their logprobs).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/sample/json_mask.h"

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* A seed nobody asked for: wall time, a process-wide counter and an address
 * (splitmix64 mixes them). */
static uint64_t random_seed(void)
{
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
    s ^= atomic_fetch_add(&counter, 1) * UINT64_C(0xD1B54A32D192ED03);
    s ^= (uint64_t)(uintptr_t)&ts;
    return splitmix64(&s);
}

void st_sampler_init(struct st_sampler *s)
{
    memset(s, 0, sizeof(*s));
    st_penalty_init(&s->pen);
}

void st_sampler_fini(struct st_sampler *s)
{
    free(s->cands);
    st_json_vocab_free(&s->jv);
    st_penalty_fini(&s->pen);
    st_sampler_init(s);
}

void st_sampler_reset(struct st_sampler *s, const struct st_gen_params *p)
{
    s->temperature = p->temperature;
    s->top_p = p->top_p;
    s->top_k = p->top_k;
    s->min_p = p->min_p;
    s->logprobs = p->logprobs;
    s->top_logprobs = p->top_logprobs < 0 ? 0
                    : p->top_logprobs > ST_MAX_TOP_LOGPROBS ? ST_MAX_TOP_LOGPROBS
                    : p->top_logprobs;
    st_mt_seed(&s->rng, (uint32_t)(p->has_seed ? p->seed : random_seed()));
    s->u_held = false;
    s->bias = p->n_logit_bias > 0 ? p->logit_bias : NULL;
    s->n_bias = s->bias ? p->n_logit_bias : 0;
    st_penalty_reset(&s->pen, p);
    s->calls = p->tool_calls;   /* tool calls take the place of the JSON modes */
    s->gram = s->calls ? NULL : p->grammar;   /* a grammar takes the JSON modes' place */
    s->json = p->json_object && !s->calls && !s->gram;
    st_json_prefix_init(&s->js);
    s->schema = s->calls || s->gram ? NULL : p->json_schema;
    if (s->schema)
        st_json_schema_state_init(&s->jss, s->schema);
    if (s->gram)
        st_gbnf_state_init(&s->gs, s->gram);
    bool think = (s->json || s->schema || s->gram) && p->json_think <= ST_THINK_OPTIONAL_LEAD;
    st_think_init(&s->th, think ? (enum st_think_mode)p->json_think : ST_THINK_NONE,
                  p->json_think_tags <= ST_THINK_EITHER ? (enum st_think_tags)p->json_think_tags
                                                        : ST_THINK_ANGLE);
    s->think_left = p->json_think_max > 0 ? p->json_think_max : -1;
    if (s->calls)
        st_call_state_init(&s->cs, s->calls);
    st_sampler_budget_reset(s, p);
}

void st_sampler_start(struct st_sampler *s, int64_t n_ctx, const int32_t *prompt,
                      int64_t n_prompt)
{
    st_penalty_start(&s->pen, n_ctx, prompt, n_prompt);
}

void st_sampler_accept(struct st_sampler *s, int32_t token)
{
    st_penalty_accept(&s->pen, token);
    st_json_mask_accept(s, token);
}

double st_sampler_uniform(struct st_sampler *s)
{
    if (s->u_held) {
        s->u_held = false;
        return s->u_next;
    }
    return st_mt_uniform(&s->rng);
}

static bool banned(int32_t id, const int32_t *ban, size_t n_ban)
{
    for (size_t i = 0; i < n_ban; i++) {
        if (ban[i] == id)
            return true;
    }
    return false;
}

/* The top-k order of strata/draw.h (ids break ties: stable across libc
 * qsorts, and the backends' order). */
static int cmp_desc(const void *a, const void *b)
{
    const struct st_draw_cand *x = a, *y = b;
    if (st_draw_before(x->logit, x->id, y->logit, y->id))
        return -1;
    return st_draw_before(y->logit, y->id, x->logit, x->id);
}

static void swap_cand(struct st_draw_cand *a, struct st_draw_cand *b)
{
    struct st_draw_cand t = *a;
    *a = *b;
    *b = t;
}

/* Move the k best candidates (cmp_desc order) to c[0..k), unordered:
 * quickselect with a middle pivot, O(n) expected. Requires 0 < k <= n. */
static void select_top(struct st_draw_cand *c, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;   /* inclusive range still to partition */
    while (lo < hi) {
        swap_cand(&c[lo + (hi - lo) / 2], &c[hi]);
        size_t p = lo;
        for (size_t i = lo; i < hi; i++) {
            if (cmp_desc(&c[i], &c[hi]) < 0)
                swap_cand(&c[i], &c[p++]);
        }
        swap_cand(&c[p], &c[hi]);   /* c[lo..p) beat the pivot, now at p */
        if (p == k - 1)
            return;
        if (p > k - 1)
            hi = p - 1;
        else
            lo = p + 1;
    }
}

/* log(sum(exp(logits - max))) + max over every token: the log-partition. */
static double log_partition(const float *logits, int32_t n_vocab)
{
    float mx = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum += exp((double)logits[i] - mx);
    return log(sum) + mx;
}

static void fill_logprobs(struct st_sampler *s, const float *logits, int32_t n_vocab,
                          struct st_sample_result *res)
{
    double logz = log_partition(logits, n_vocab);
    res->logprob = (float)((double)logits[res->token] - logz);
    res->n_top = 0;
    size_t k = (size_t)s->top_logprobs;
    if (k == 0)
        return;
    if (k > (size_t)n_vocab)
        k = (size_t)n_vocab;
    for (int32_t i = 0; i < n_vocab; i++)
        s->cands[i] = (struct st_draw_cand){ i, logits[i], 0.0f };
    select_top(s->cands, (size_t)n_vocab, k);
    qsort(s->cands, k, sizeof(*s->cands), cmp_desc);
    for (size_t i = 0; i < k; i++) {
        memset(&res->top[i], 0, sizeof(res->top[i]));
        res->top[i].token = s->cands[i].id;
        res->top[i].logprob = (float)((double)s->cands[i].logit - logz);
    }
    res->n_top = (int32_t)k;
}

/* Drop from c[0..n) the banned ids and, when 'mask', the tokens the JSON
 * mask refuses; returns how many are left (order kept). */
static size_t filter(struct st_sampler *s, size_t n, const int32_t *ban, size_t n_ban,
                     bool mask)
{
    struct st_json_step st;
    if (mask)
        st_json_mask_step(s, n_ban > 0, &st);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = s->cands[i].id;
        if (n_ban > 0 && banned(id, ban, n_ban))
            continue;
        if (mask && !st_json_mask_allows(s, &st, id))
            continue;
        s->cands[k++] = s->cands[i];
    }
    return k;
}

/* Candidates = the logits, biased and penalised, less the banned ids and
 * (json mode, when 'mask') the tokens that would break the JSON. */
static size_t candidates(struct st_sampler *s, const float *logits, int32_t n_vocab,
                         const int32_t *ban, size_t n_ban, bool mask)
{
    bool adjust = s->n_bias > 0 || st_penalty_active(&s->pen) || mask;
    size_t n = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (adjust || n_ban == 0 || !banned(i, ban, n_ban))
            s->cands[n++] = (struct st_draw_cand){ i, logits[i], 0.0f };
    }
    if (!adjust)
        return n;
    /* c[i].id == i here: bias and penalties index by token id */
    for (int32_t b = 0; b < s->n_bias; b++) {
        int32_t t = s->bias[b].token;
        if (t >= 0 && t < n_vocab)
            s->cands[t].logit += s->bias[b].bias;
    }
    st_penalty_apply(&s->pen, s->cands, n_vocab);
    if (n_ban == 0 && !mask)
        return n;
    return filter(s, n, ban, n_ban, mask);
}

static size_t argmax(const struct st_draw_cand *c, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        best = cmp_desc(&c[i], &c[best]) < 0 ? i : best;
    return best;
}

/* Greedy. In json mode the argmax of the unmasked candidates is the answer
 * whenever the mask allows it (the masked argmax cannot beat it): one
 * check instead of a walk over the vocabulary; only a refused argmax
 * makes the whole mask run. */
static enum st_status pick_greedy(struct st_sampler *s, size_t n, const int32_t *ban,
                                  size_t n_ban, int32_t *out)
{
    size_t best = argmax(s->cands, n);
    if (st_sampler_masked(s)) {
        struct st_json_step st;
        st_json_mask_step(s, n_ban > 0, &st);
        if (!st_json_mask_allows(s, &st, s->cands[best].id)) {
            n = filter(s, n, ban, n_ban, true);   /* n_ban: the whitespace rule */
            if (n == 0)
                return ST_ERR_INVALID;
            best = argmax(s->cands, n);
        }
    }
    *out = s->cands[best].id;
    return ST_OK;
}

static enum st_status pick(struct st_sampler *s, const float *logits, int32_t n_vocab,
                           const int32_t *ban, size_t n_ban, int32_t *out)
{
    bool greedy = s->temperature <= 0.0f;
    size_t n = candidates(s, logits, n_vocab, ban, n_ban, st_sampler_masked(s) && !greedy);
    if (n == 0)
        return ST_ERR_INVALID;
    if (greedy)
        return pick_greedy(s, n, ban, n_ban, out);
    if (s->top_k > 0 && (size_t)s->top_k < n) {
        select_top(s->cands, n, (size_t)s->top_k);
        n = (size_t)s->top_k;
    }
    qsort(s->cands, n, sizeof(*s->cands), cmp_desc);
    n = st_draw_nucleus(s->cands, n, s->top_p, s->min_p);
    *out = st_draw_pick(s->cands, n, s->temperature, st_sampler_uniform(s));
    return ST_OK;
}

void st_sampler_score(struct st_sampler *s, const float *logits, int32_t n_vocab,
                      struct st_sample_result *res)
{
    res->logprob = 0.0f;
    res->n_top = 0;
    if (logits && n_vocab > 0 && (s->logprobs || s->top_logprobs > 0)) {
        if (s->cap < (size_t)n_vocab) {   /* fill_logprobs' candidates */
            struct st_draw_cand *c = realloc(s->cands, (size_t)n_vocab * sizeof(*c));
            if (c) {
                s->cands = c;
                s->cap = (size_t)n_vocab;
            }
        }
        if (s->cap >= (size_t)n_vocab) {
            fill_logprobs(s, logits, n_vocab, res);
            return;
        }
    }
    res->n_top = s->top_logprobs > 0 ? 1 : 0;   /* certain, as a token the runner forced */
    if (res->n_top)
        res->top[0] = (struct st_top_logprob){ .token = res->token, .logprob = 0.0f };
}

bool st_sampler_backend_draw(struct st_sampler *s, struct st_draw *d)
{
    bool greedy = s->temperature <= 0.0f;
    int32_t forced;
    if (st_sampler_forced(s, &forced))
        return false;   /* the host takes it (and scores it from the logits) */
    if (s->logprobs || s->top_logprobs > 0 || s->n_bias > 0 || st_penalty_active(&s->pen) ||
        st_sampler_masked(s) || (!greedy && (s->top_k < 1 || s->top_k > ST_DRAW_MAX_K)))
        return false;
    *d = (struct st_draw){ .top_k = greedy ? 1 : s->top_k, .top_p = s->top_p,
                           .min_p = s->min_p, .temp = s->temperature, .u = 0.0 };
    if (!greedy) {
        d->u = st_sampler_uniform(s);   /* a number still held from before is reused */
        s->u_next = d->u;
        s->u_held = true;
    }
    return true;
}

void st_sampler_drawn(struct st_sampler *s)
{
    s->u_held = false;
}

enum st_status st_sampler_sample(struct st_sampler *s, const float *logits, int32_t n_vocab,
                                 const int32_t *ban, size_t n_ban,
                                 struct st_sample_result *res)
{
    if (n_vocab < 1 || (st_sampler_masked(s) && s->jv.n_vocab != n_vocab))
        return ST_ERR_INVALID;
    if (s->cap < (size_t)n_vocab) {
        struct st_draw_cand *c = realloc(s->cands, (size_t)n_vocab * sizeof(*c));
        if (!c)
            return ST_ERR_NOMEM;
        s->cands = c;
        s->cap = (size_t)n_vocab;
    }
    res->n_top = 0;
    res->logprob = 0.0f;
    enum st_status rc = st_penalty_prepare(&s->pen, n_vocab);
    if (rc != ST_OK)
        return rc;
    /* a grammar's text that is complete and cannot go on: end of
     * generation is the only way left, banned (ignore_eos) or not */
    if (s->gram && !s->calls && st_think_in_doc(&s->th) && !st_gbnf_may_continue(&s->gs))
        n_ban = 0;
    rc = pick(s, logits, n_vocab, ban, n_ban, &res->token);
    if (rc != ST_OK)
        return rc;
    if (s->logprobs || s->top_logprobs > 0)
        fill_logprobs(s, logits, n_vocab, res);
    return ST_OK;
}
