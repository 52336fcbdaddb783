/* ssm.cuh -- what the delta rule's two kernels share (ssm.cu the
 * row-by-row recurrence, ssm_chunk.cu the chunked form for prompt reads):
 * the launch arguments, the slot clamp, the per-warp state rows and one
 * row's recurrent step.
 *
 * Layout of the state in a block: each warp owns DN_RPW rows j0.. of one
 * (head, slot) D x D matrix M (row j at mat + j*D), lane l holding the
 * columns l + 32t (t < NT, D <= 32*NT), zeros beyond D.
 */
#ifndef STRATA_KERNELS_SSM_CUH
#define STRATA_KERNELS_SSM_CUH

#include "common.cuh"

#define DN_WARPS 4   /* warps per block */
#define DN_RPW 4     /* matrix rows per warp */

static __device__ __forceinline__ float ssm_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* slot[r] clamped into [0, n_slots), flagging one outside. */
static __device__ __forceinline__ int64_t ssm_slot(const int32_t *slot, int64_t r,
                                                   int64_t n_slots, unsigned *err_flag)
{
    int64_t s = slot[r];
    if (s < 0 || s >= n_slots) {
        kq_flag(err_flag, ST_KF_BAD_SLOT);
        s = s < 0 ? 0 : n_slots - 1;
    }
    return s;
}

/* Both kernels take the launcher's arguments (struct st_kern_delta_net,
 * kernels.h) by value, and these helpers a reference to them. */

/* The q/k head v head h reads: qwen3next groups the v heads of one q/k
 * head together, qwen35* tiles them (docs/GGUF.md). */
static __device__ __forceinline__ int dn_qk_head(const struct st_kern_delta_net &p, int h)
{
    return p.v_grouped ? h / (p.n_v_heads / p.n_k_heads) : h % p.n_k_heads;
}

/* Row r, v head h: log of the decay, softplus(alpha + dt_bias) * a, as the
 * CPU's cpu_delta_prep computes it. */
static __device__ __forceinline__ float dn_log_decay(const struct st_kern_delta_net &p,
                                                    int64_t r, int h)
{
    const float x = p.alpha[r * p.n_v_heads + h] + p.dt_bias[h];
    return (x > 20.0f ? x : log1pf(expf(x))) * p.a[h];
}

/* The warp's rows j0.. of matrix 'mat' (row j at mat + j*d) to or from m. */
template <int NT, bool STORE>
static __device__ __forceinline__ void dn_rows(float (&m)[DN_RPW][NT], float *mat, int j0,
                                               int d, int lane)
{
KQ_UNROLL
    for (int jj = 0; jj < DN_RPW; jj++)
KQ_UNROLL
        for (int t = 0; t < NT; t++) {
            const int j = j0 + jj, i = lane + 32 * t;
            const bool in = j < d && i < d;
            if (STORE && in)
                mat[(int64_t)j * d + i] = m[jj][t];
            else if (!STORE)   /* zeros beyond D: they meet k = 0 in the sums */
                m[jj][t] = in ? mat[(int64_t)j * d + i] : 0.0f;
        }
}

template <int NT>
static __device__ __forceinline__ void dn_zero(float (&m)[DN_RPW][NT])
{
KQ_UNROLL
    for (int jj = 0; jj < DN_RPW; jj++)
KQ_UNROLL
        for (int t = 0; t < NT; t++)
            m[jj][t] = 0.0f;
}

/* One q or k head (src, D floats) divided by max(|src|, eps): columns lane + 32t. */
template <int NT>
static __device__ __forceinline__ void dn_unit(float (&u)[NT], const float *src, int d,
                                               int lane, float eps)
{
    float ss = 0.0f;
KQ_UNROLL
    for (int t = 0; t < NT; t++) {
        const int i = lane + 32 * t;
        u[t] = i < d ? src[i] : 0.0f;
        ss += u[t] * u[t];
    }
    const float scale = 1.0f / fmaxf(sqrtf(kq_warp_sum(ss)), eps);
KQ_UNROLL
    for (int t = 0; t < NT; t++)
        u[t] *= scale;
}

/* Row r of v head h through the recurrence on the warp's rows j0.. (m):
 * decay, the delta update, and the outputs of those rows. */
template <int NT>
static __device__ __forceinline__ void dn_step(const struct st_kern_delta_net &p,
                                               float (&m)[DN_RPW][NT], int64_t r, int h, int j0,
                                               int lane)
{
    const int g = dn_qk_head(p, h), d = p.head_dim;
    const int64_t c3 = (int64_t)(2 * p.n_k_heads + p.n_v_heads) * d;
    const float *row = p.qkv + r * c3;
    float q[NT], k[NT];
    dn_unit<NT>(q, row + (int64_t)g * d, d, lane, p.eps);
    dn_unit<NT>(k, row + (int64_t)(p.n_k_heads + g) * d, d, lane, p.eps);
    const float decay = expf(dn_log_decay(p, r, h));
    const float b = ssm_sigmoid(p.beta[r * p.n_v_heads + h]), oscale = 1.0f / sqrtf((float)d);
    const float *v = row + (int64_t)(2 * p.n_k_heads + h) * d;
    float *o = p.out + (r * p.n_v_heads + h) * d;
KQ_UNROLL
    for (int jj = 0; jj < DN_RPW; jj++) {
        const int j = j0 + jj;
        if (j >= d)   /* uniform across the warp */
            break;
        float sk = 0.0f;
KQ_UNROLL
        for (int t = 0; t < NT; t++) {
            m[jj][t] *= decay;
            sk += m[jj][t] * k[t];
        }
        const float dj = (v[j] - kq_warp_sum(sk)) * b;
        float oj = 0.0f;
KQ_UNROLL
        for (int t = 0; t < NT; t++) {
            m[jj][t] += k[t] * dj;
            oj += m[jj][t] * q[t];
        }
        oj = kq_warp_sum(oj);
        if (lane == 0)
            o[j] = oj * oscale;
    }
}

/* Rows of one chunk of the chunked form: lane t of a warp is chunk row t. */
#define DC_ROWS 32

/* ssm_chunk.cu: the chunked kernel on grid (v heads, D / (DN_WARPS*DN_RPW))
 * for D <= 128; cudaErrorInvalidValue above. */
cudaError_t dn_launch_chunked(const struct st_kern_delta_net &p, dim3 grid, cudaStream_t stream);

#endif /* STRATA_KERNELS_SSM_CUH */
