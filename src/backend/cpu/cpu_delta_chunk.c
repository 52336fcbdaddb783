/* cpu_delta_chunk.c -- the chunked form of the gated delta rule for a run
 * of rows of one slot (a prompt read): the same result as the row-by-row
 * recurrence in cpu_ssm.c, as dot products and row updates over a chunk
 * instead of two passes over the D x D state per row.
 *
 * The math (per v head, chunk rows t = 0..L-1, state M0 at its start,
 * g_t the row's decay, G_t = g_0 ... g_t, b_t = sigmoid(beta)). The
 * recurrence M_t = g_t M_{t-1} + d_t k_t^T with
 * d_t = b_t (v_t - g_t M_{t-1} k_t) unrolls to
 *   M_t = G_t M0 + sum_{s<=t} (G_t / G_s) d_s k_s^T,
 * so the d_t solve a unit lower triangular system (the UT transform):
 *   d_t = b_t (v_t - G_t M0 k_t) - sum_{s<t} b_t (G_t / G_s) (k_t . k_s) d_s,
 * and then
 *   o_t = (G_t M0 q_t + sum_{s<=t} (G_t / G_s) (q_t . k_s) d_s) / sqrt(D),
 *   M_L = G_{L-1} M0 + sum_s (G_{L-1} / G_s) d_s k_s^T.
 * G is kept as a log (a sum of softplus * a), and every ratio taken as
 * exp(log G_t - log G_s) <= 1, so a strong decay underflows to zero
 * instead of dividing by it. Cost per chunk: about 3 L D^2 + L^2 D
 * multiply-adds in dots and axpys the compiler vectorizes, against the
 * recurrence's 4 L D^2 in passes over the whole state per row.
 */
#include <math.h>

#include "cpu_ssm.h"

/* y += c x */
static void axpy(float *y, float c, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += c * x[i];
}

size_t cpu_delta_chunk_floats(int64_t d)
{
    return (size_t)(4 * CPU_DELTA_CHUNK * d + 2 * CPU_DELTA_CHUNK);
}

void cpu_delta_chunk(const struct delta_job *j, int64_t r0, int64_t len, int64_t h, float *m,
                     float *scratch)
{
    int64_t d = j->d, c3 = (2 * j->hk + j->hv) * d;
    /* per chunk row t: q, k (normalised), u (then d_t), o; log G_t, b_t */
    float *q = scratch, *k = q + CPU_DELTA_CHUNK * d, *u = k + CPU_DELTA_CHUNK * d;
    float *o = u + CPU_DELTA_CHUNK * d, *lg = o + CPU_DELTA_CHUNK * d, *b = lg + CPU_DELTA_CHUNK;
    float sum = 0.0f;
    for (int64_t t = 0; t < len; t++) {
        float ld;
        cpu_delta_prep(j, r0 + t, h, q + t * d, k + t * d, &ld, &b[t]);
        sum += ld;
        lg[t] = sum;
    }
    /* u_t = b_t (v_t - G_t M0 k_t), o_t = G_t M0 q_t: one pass over M0 */
    for (int64_t t = 0; t < len; t++) {
        const float *v = j->qkv + (r0 + t) * c3 + 2 * j->hk * d + h * d;
        float gt = expf(lg[t]);
        for (int64_t row = 0; row < d; row++) {
            const float *mr = m + row * d;
            u[t * d + row] = b[t] * (v[row] - gt * cpu_dot8(mr, k + t * d, d));
            o[t * d + row] = gt * cpu_dot8(mr, q + t * d, d);
        }
    }
    /* forward substitution: u_t becomes d_t once every d_s, s < t, is known */
    for (int64_t t = 1; t < len; t++)
        for (int64_t s = 0; s < t; s++) {
            float c = b[t] * expf(lg[t] - lg[s]) * cpu_dot8(k + t * d, k + s * d, d);
            axpy(u + t * d, -c, u + s * d, d);
        }
    float scale = 1.0f / sqrtf((float)d);
    for (int64_t t = 0; t < len; t++) {
        float *ot = o + t * d, *dst = j->out + (r0 + t) * j->hv * d + h * d;
        for (int64_t s = 0; s <= t; s++)
            axpy(ot, expf(lg[t] - lg[s]) * cpu_dot8(q + t * d, k + s * d, d), u + s * d, d);
        for (int64_t i = 0; i < d; i++)
            dst[i] = ot[i] * scale;
    }
    /* M = G_{L-1} M0 + sum_s (G_{L-1} / G_s) d_s k_s^T; o is free for the weights */
    float gl = expf(lg[len - 1]);
    for (int64_t s = 0; s < len; s++)
        o[s] = expf(lg[len - 1] - lg[s]);
    for (int64_t row = 0; row < d; row++) {
        float *mr = m + row * d;
        for (int64_t i = 0; i < d; i++)
            mr[i] *= gl;
        for (int64_t s = 0; s < len; s++)
            axpy(mr, o[s] * u[s * d + row], k + s * d, d);
    }
}
