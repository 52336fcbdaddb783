/* draw.h -- the tail of the sampler chain: from a row's best logits to one
 * token. The host sampler (src/engine/sample/sample.c) and every backend's sample
 * op (st_backend_sample: cpu_sample.c, kernels/sample.cu) run these same
 * steps in the same arithmetic, so a token drawn on a device is the token
 * the host would have drawn from the same logits and the same uniform
 * number (tests/unit/test_backend_sample.c, test_cuda_ops.c).
 *
 * The chain, llama.cpp's default order without the logit changes (bias,
 * penalties, masks), which need the logits on the host:
 *   1. top-k: the k largest logits, larger first, the lower id on ties
 *      (st_draw_before: NaN ranks below every number, -inf included);
 *   2. st_draw_nucleus: top-p then min-p on p_j = exp(l_j - l_0), computed
 *      in double and kept as float, summed in double in order;
 *   3. st_draw_pick: weights exp((l_j - l_0) / temp) kept as float, summed
 *      in double; the first j where u * sum minus the weights so far drops
 *      below zero (the last one when rounding leaves it just above).
 * temp <= 0 is greedy: the first candidate of step 1 with k = 1.
 */
#ifndef STRATA_DRAW_H
#define STRATA_DRAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most candidates a backend's sample op keeps (a larger or
 * non-positive top_k means this many). */
#define ST_DRAW_MAX_K 256

/* How to draw one row's token on a backend. */
struct st_draw {
    int32_t top_k;   /* 1..ST_DRAW_MAX_K (else ST_DRAW_MAX_K) */
    float   top_p;   /* (0, 1]; >= 1 = off */
    float   min_p;   /* [0, 1]; <= 0 = off */
    float   temp;    /* <= 0: greedy */
    double  u;       /* uniform in [0, 1), from the request's RNG */
};

/* st_draw records travel to a backend as an i32 tensor [ST_DRAW_WORDS, n]. */
#define ST_DRAW_WORDS ((int64_t)(sizeof(struct st_draw) / sizeof(int32_t)))

/* One candidate token: its id, its logit, and scratch for its weight. */
struct st_draw_cand {
    int32_t id;
    float   logit;
    float   p;
};

/* (v, i) ranks strictly before (bv, bi) in the top-k order. */
static inline bool st_draw_before(float v, int32_t i, float bv, int32_t bi)
{
    if (v != v)
        return bv != bv && i < bi;    /* NaN: only before a NaN of higher id */
    return bv != bv || v > bv || (v == bv && i < bi);
}

/* How many of the sorted candidates c[0..n) (n >= 1) survive top-p and
 * min-p (at least one); fills c[j].p. */
size_t st_draw_nucleus(struct st_draw_cand *c, size_t n, float top_p, float min_p);

/* The drawn token among c[0..n) (n >= 1) at temperature temp > 0 with the
 * uniform u; overwrites c[j].p. */
int32_t st_draw_pick(struct st_draw_cand *c, size_t n, float temp, double u);

/* The k best of lg[0..n_vocab) into c[0..k) in order (k <= n_vocab): one
 * scan with a sorted insertion, for small k. */
void st_draw_top_k(const float *lg, int64_t n_vocab, struct st_draw_cand *c, int k);

/* The whole chain for one row on the host: the backends' reference. */
int32_t st_draw_row(const float *lg, int64_t n_vocab, const struct st_draw *d);

#endif /* STRATA_DRAW_H */
