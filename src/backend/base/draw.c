/* draw.c -- the sampler chain's tail (include/strata/draw.h), on the host.
 * kernels/sample.cu repeats these steps line for line on the device; keep
 * the two in the same arithmetic (double sums in candidate order, weights
 * rounded to float) or device and host draws part ways.
 */
#include <math.h>

#include "strata/draw.h"

size_t st_draw_nucleus(struct st_draw_cand *c, size_t n, float top_p, float min_p)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        c[i].p = (float)exp((double)c[i].logit - c[0].logit);
        sum += c[i].p;
    }
    if (top_p < 1.0f) {
        double cum = 0.0;
        for (size_t i = 0; i < n; i++) {
            cum += c[i].p / sum;
            if (cum >= top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (min_p > 0.0f) {
        size_t keep = 1;   /* c[0] has p = 1, the maximum */
        while (keep < n && c[keep].p >= min_p)
            keep++;
        n = keep;
    }
    return n;
}

int32_t st_draw_pick(struct st_draw_cand *c, size_t n, float temp, double u)
{
    double t = temp, sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        c[i].p = (float)exp(((double)c[i].logit - c[0].logit) / t);
        sum += c[i].p;
    }
    double left = u * sum;
    for (size_t i = 0; i < n; i++) {
        left -= c[i].p;
        if (left < 0.0)
            return c[i].id;
    }
    return c[n - 1].id;   /* rounding left u * sum just above zero */
}

void st_draw_top_k(const float *lg, int64_t n_vocab, struct st_draw_cand *c, int k)
{
    int have = 0;
    float worst = 0.0f;   /* c[k - 1].logit once full */
    for (int64_t e = 0; e < n_vocab; e++) {
        float v = lg[e];
        int32_t id = (int32_t)e;
        if (have == k && (v < worst || !st_draw_before(v, id, worst, c[k - 1].id)))
            continue;   /* v < worst: the common case, decided without the NaN rules */
        int j = have < k ? have++ : k - 1;
        while (j > 0 && st_draw_before(v, id, c[j - 1].logit, c[j - 1].id)) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = (struct st_draw_cand){ id, v, 0.0f };
        worst = c[have - 1].logit;
    }
}

int32_t st_draw_row(const float *lg, int64_t n_vocab, const struct st_draw *d)
{
    struct st_draw_cand c[ST_DRAW_MAX_K];
    int k = d->top_k <= 0 || d->top_k > ST_DRAW_MAX_K ? ST_DRAW_MAX_K : d->top_k;
    if (k > n_vocab)
        k = (int)n_vocab;
    if (d->temp <= 0.0f)
        k = 1;
    st_draw_top_k(lg, n_vocab, c, k);
    if (k == 1)
        return c[0].id;
    size_t n = st_draw_nucleus(c, (size_t)k, d->top_p, d->min_p);
    return st_draw_pick(c, n, d->temp, d->u);
}
