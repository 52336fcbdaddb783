/* penalty.c -- repetition penalties for the sampler (docs/API.md
 * "Penalties and logit_bias").
 *
 * Two histories per request, both counted incrementally:
 *   gen  the tokens this choice generated so far (OpenAI presence_penalty
 *        and frequency_penalty);
 *   win  the last repeat_last_n tokens of prompt + generated (llama-server
 *        repeat_penalty); -1, or a window as long as the context, never
 *        slides.
 * Applying them touches only the tokens seen (the 'seen' list of distinct
 * tokens with a nonzero count), never the whole vocabulary; accepting a
 * token is O(1). The formulas are llama.cpp's (llama_sampler_penalties):
 *   repeat:   logit <= 0 ? logit * repeat : logit / repeat   (token in win)
 *   presence/frequency: logit -= count_gen * frequency + (count_gen > 0) * presence
 *
 * Memory: counts[n_vocab] (12 bytes a token) allocated the first time a
 * request with a penalty samples in the slot and kept across requests,
 * like the candidate buffer; a request clears only the entries it touched.
 * The ring holds the window (at most n_ctx ids). Tables are made at the
 * first sample (st_penalty_prepare), not when the request starts: a runner
 * that forces its tokens (the sim, whose id space is 2^25) never samples
 * and so never pays for them.
 *
 * Thread: the owning slot's engine thread.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/sample/sample.h"

void st_penalty_init(struct st_penalty *pn)
{
    memset(pn, 0, sizeof(*pn));
    pn->repeat = 1.0f;
}

void st_penalty_fini(struct st_penalty *pn)
{
    free(pn->counts);
    free(pn->seen);
    free(pn->ring);
    st_penalty_init(pn);
}

/* Forget the previous request's history: O(tokens it touched). */
static void clear_history(struct st_penalty *pn)
{
    for (int32_t i = 0; i < pn->n_seen; i++)
        memset(&pn->counts[pn->seen[i]], 0, sizeof(pn->counts[0]));
    pn->n_seen = 0;
    pn->ring_n = 0;
    pn->ring_head = 0;
}

void st_penalty_reset(struct st_penalty *pn, const struct st_gen_params *p)
{
    clear_history(pn);
    pn->presence = p->presence_penalty;
    pn->frequency = p->frequency_penalty;
    pn->repeat = p->repeat_penalty > 0.0f ? p->repeat_penalty : 1.0f;
    pn->last_n = p->repeat_last_n;
    pn->on_gen = p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f;
    pn->on_win = pn->repeat != 1.0f && p->repeat_last_n != 0;
    pn->n_vocab = 0;
    pn->window = 0;
    pn->n_ctx = 0;
    pn->prompt = NULL;
    pn->n_prompt = 0;
}

bool st_penalty_active(const struct st_penalty *pn)
{
    return pn->on_gen || pn->on_win;
}

/* counts[] for n_vocab tokens, zeroed; seen[] as long as the vocabulary. */
static enum st_status ensure_tables(struct st_penalty *pn, int32_t n_vocab)
{
    if (pn->cap_vocab >= n_vocab)
        return ST_OK;
    clear_history(pn);
    free(pn->counts);
    free(pn->seen);
    pn->counts = calloc((size_t)n_vocab, sizeof(*pn->counts));
    pn->seen = malloc((size_t)n_vocab * sizeof(*pn->seen));
    if (!pn->counts || !pn->seen) {
        free(pn->counts);
        free(pn->seen);
        pn->counts = NULL;
        pn->seen = NULL;
        pn->cap_vocab = 0;
        return ST_ERR_NOMEM;
    }
    pn->cap_vocab = n_vocab;
    return ST_OK;
}

/* Count changes of token t: a token enters 'seen' with its first count and
 * leaves it when both counts are back to zero (swap with the last). */
static void touch(struct st_penalty *pn, int32_t t, int32_t d_gen, int32_t d_win)
{
    struct st_pen_count *c = &pn->counts[t];
    bool was = c->gen > 0 || c->win > 0;
    c->gen += d_gen;
    c->win += d_win;
    bool is = c->gen > 0 || c->win > 0;
    if (is && !was) {
        pn->seen[pn->n_seen] = t;
        c->where = ++pn->n_seen;
    } else if (was && !is) {
        int32_t i = c->where - 1, last = pn->seen[--pn->n_seen];
        pn->seen[i] = last;
        pn->counts[last].where = i + 1;
        c->where = 0;
    }
}

/* Token t enters the repeat window; the oldest leaves a full ring. */
static void window_push(struct st_penalty *pn, int32_t t)
{
    if (!pn->ring) {   /* the window never slides */
        touch(pn, t, 0, 1);
        return;
    }
    if (pn->ring_n == pn->window) {
        int32_t old = pn->ring[pn->ring_head];
        touch(pn, old, 0, -1);
        pn->ring_n--;
    }
    pn->ring[pn->ring_head] = t;
    pn->ring_head = (pn->ring_head + 1) % pn->window;
    pn->ring_n++;
    touch(pn, t, 0, 1);
}

void st_penalty_start(struct st_penalty *pn, int64_t n_ctx, const int32_t *prompt,
                      int64_t n_prompt)
{
    pn->n_ctx = n_ctx;
    pn->prompt = prompt;
    pn->n_prompt = prompt ? n_prompt : 0;
}

enum st_status st_penalty_prepare(struct st_penalty *pn, int32_t n_vocab)
{
    if (!st_penalty_active(pn) || pn->n_vocab == n_vocab)
        return ST_OK;
    if (n_vocab < 1 || pn->n_vocab != 0)
        return ST_ERR_INVALID;   /* one vocabulary per request */
    enum st_status rc = ensure_tables(pn, n_vocab);
    if (rc != ST_OK)
        return rc;
    /* a window as long as the context holds everything: no ring */
    pn->window = (pn->last_n < 0 || (pn->n_ctx > 0 && pn->last_n >= pn->n_ctx)) ? 0
                                                                               : pn->last_n;
    free(pn->ring);
    pn->ring = NULL;
    if (pn->on_win && pn->window > 0) {
        pn->ring = malloc((size_t)pn->window * sizeof(*pn->ring));
        if (!pn->ring)
            return ST_ERR_NOMEM;
    }
    pn->n_vocab = n_vocab;
    if (pn->on_win) {
        int64_t from = pn->window > 0 ? ST_MAX(pn->n_prompt - pn->window, (int64_t)0) : 0;
        for (int64_t i = from; i < pn->n_prompt; i++) {
            if (pn->prompt[i] >= 0 && pn->prompt[i] < n_vocab)
                window_push(pn, pn->prompt[i]);
        }
    }
    pn->prompt = NULL;   /* borrowed until here */
    pn->n_prompt = 0;
    return ST_OK;
}

void st_penalty_accept(struct st_penalty *pn, int32_t token)
{
    if (!st_penalty_active(pn) || !pn->counts || token < 0 || token >= pn->n_vocab)
        return;
    if (pn->on_gen)
        touch(pn, token, 1, 0);
    if (pn->on_win)
        window_push(pn, token);
}

void st_penalty_apply(const struct st_penalty *pn, struct st_draw_cand *c, int32_t n_vocab)
{
    if (!st_penalty_active(pn) || !pn->counts || n_vocab != pn->n_vocab)
        return;
    for (int32_t i = 0; i < pn->n_seen; i++) {
        int32_t t = pn->seen[i];
        const struct st_pen_count *k = &pn->counts[t];
        float l = c[t].logit;
        if (k->win > 0 && pn->on_win)
            l = l <= 0.0f ? l * pn->repeat : l / pn->repeat;
        if (k->gen > 0)
            l -= (float)k->gen * pn->frequency + pn->presence;
        c[t].logit = l;
    }
}
