/* cpu_sample.c -- the optional sampler of the op table on the CPU: the same
 * top-k / temperature draw as the CUDA kernel (kernels/sample.cu), so an
 * engine that samples through st_backend_sample gets the same token on
 * either backend for the same logits and uniform number.
 *
 * Per row: keep the k best (logit, id) pairs in a small sorted array while
 * scanning the row once (k <= 256, so an insertion is cheap next to the
 * scan); then weights exp((l_j - l_0) / temp) and the first candidate
 * whose cumulative weight reaches u * total.
 */
#include <math.h>

#include "cpu.h"

#define SAMPLE_MAX_K 256

/* (v, i) ranks before (bv, bi): larger logit first, then the lower id. */
static bool before(float v, int32_t i, float bv, int32_t bi)
{
    return v > bv || (v == bv && i < bi);
}

static int32_t sample_row(const float *lg, int64_t n_vocab, int k, float temp, float u)
{
    float cv[SAMPLE_MAX_K];
    int32_t ci[SAMPLE_MAX_K];
    int have = 0;

    for (int64_t e = 0; e < n_vocab; e++) {
        float v = lg[e];
        if (have == k && !before(v, (int32_t)e, cv[k - 1], ci[k - 1]))
            continue;
        int j = have < k ? have++ : k - 1;
        while (j > 0 && before(v, (int32_t)e, cv[j - 1], ci[j - 1])) {
            cv[j] = cv[j - 1];
            ci[j] = ci[j - 1];
            j--;
        }
        cv[j] = v;
        ci[j] = (int32_t)e;
    }
    if (have == 1)
        return ci[0];
    float total = 0.0f, cum = 0.0f;
    for (int j = 0; j < have; j++)
        total += expf((cv[j] - cv[0]) / temp);
    for (int j = 0; j < have; j++) {
        cum += expf((cv[j] - cv[0]) / temp);
        if (cum >= u * total)
            return ci[j];
    }
    return ci[have - 1];
}

enum st_status cpu_op_sample(struct st_backend *be, ST_T ids, ST_T logits, ST_T top_k,
                             ST_T temp, ST_T u, struct st_err *err)
{
    const int64_t n = logits->ne[1], V = logits->ne[0];
    const int32_t *kk = top_k->data;
    const float *t = temp->data, *uu = u->data;
    int32_t *out = ids->data;

    (void)be;
    (void)err;
    for (int64_t r = 0; r < n; r++) {
        int k = kk[r] <= 0 || kk[r] > SAMPLE_MAX_K ? SAMPLE_MAX_K : kk[r];
        if (k > V)
            k = (int)V;
        if (t[r] <= 0.0f)
            k = 1;
        out[r] = sample_row((const float *)logits->data + r * V, V, k, t[r], uu[r]);
    }
    return ST_OK;
}
