/* cpu_ssm.h -- private to the CPU backend's delta rule: the job both of
 * its forms read (cpu_ssm.c the recurrence, cpu_delta_chunk.c the chunked
 * form for long runs of one slot).
 */
#ifndef STRATA_BACKEND_CPU_SSM_H
#define STRATA_BACKEND_CPU_SSM_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

/* One delta_net call (strata/backend_ssm.h): the tensors' data and sizes. */
struct delta_job {
    float *out, *state;
    const float *qkv, *alpha, *beta, *dt_bias, *a;
    const int32_t *slot, *pos;
    int64_t n, hk, hv, d;
    float eps;
    bool chunked;              /* some run is long enough for the chunked form */
    bool v_grouped;            /* q/k head of v head h: h / (hv/hk), else h mod hk */
    cpu_dot_fn dot;            /* the kernels' f32 dot (whole eights: D % 8 == 0), or NULL */
};

/* Rows of one chunk (32 beat 16 and 64 at D = 128: the L^2 D part grows
 * with L, the per-chunk passes over the state shrink), and the shortest run
 * of one slot read chunked (at 16 rows the two forms cost the same). */
#define CPU_DELTA_CHUNK 32
#define CPU_DELTA_CHUNK_MIN 32

/* a . b with eight running sums, so the loop vectorizes without
 * reassociation. */
static inline float cpu_dot8(const float *a, const float *b, int64_t n)
{
    float acc[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += a[i + l] * b[i + l];
    for (; i < n; i++)
        acc[0] += a[i] * b[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

/* x / max(|x|, eps) into out. */
static inline void cpu_l2norm(const float *x, float *out, int64_t n, float eps)
{
    float ss = 0.0f;
    for (int64_t i = 0; i < n; i++)
        ss += x[i] * x[i];
    float scale = 1.0f / fmaxf(sqrtf(ss), eps);
    for (int64_t i = 0; i < n; i++)
        out[i] = x[i] * scale;
}

/* Row r, v head h: q and k l2-normalised into q, k (D floats each), the
 * log of the decay (softplus(alpha + dt_bias) * a) and sigmoid(beta).
 * Inline, as both forms use it (no call between their files). */
static inline void cpu_delta_prep(const struct delta_job *j, int64_t r, int64_t h, float *q,
                                  float *k, float *log_decay, float *beta)
{
    int64_t d = j->d, g = j->v_grouped ? h / (j->hv / j->hk) : h % j->hk;
    const float *row = j->qkv + r * (2 * j->hk + j->hv) * d;
    cpu_l2norm(row + g * d, q, d, j->eps);
    cpu_l2norm(row + (j->hk + g) * d, k, d, j->eps);
    float x = j->alpha[r * j->hv + h] + j->dt_bias[h];
    *log_decay = (x > 20.0f ? x : log1pf(expf(x))) * j->a[h];
    *beta = 1.0f / (1.0f + expf(-j->beta[r * j->hv + h]));
}

/* Floats of scratch one thread needs for cpu_delta_chunk at head width d. */
size_t cpu_delta_chunk_floats(int64_t d);

/* Rows [r0, r0 + len) (len <= CPU_DELTA_CHUNK) of one slot, v head h, on
 * its D x D matrix m (already cleared if the run starts at position 0):
 * the same outputs and final m as the recurrence, to rounding, as matrix
 * products. scratch: cpu_delta_chunk_floats(d) floats. */
void cpu_delta_chunk(const struct delta_job *j, int64_t r0, int64_t len, int64_t h, float *m,
                     float *scratch);

#endif /* STRATA_BACKEND_CPU_SSM_H */
