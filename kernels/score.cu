/* score.cu -- prompt rows scored on the GPU (backend.h st_backend_score),
 * so a scored read chunk (prompt logprobs, docs/API.md "Scoring prompts")
 * copies back (1 + K) floats and ints per row instead of a row of
 * vocabulary logits (600 KB at 151,936 tokens). The CPU backend's
 * st_score_row (src/backend/cpu/cpu_score.c) is the reference
 * (tests/unit/test_cuda_ops.c).
 *
 * Mapping: one 1024-thread block per row.
 *  1. max: per-thread fmaxf (which skips NaN), then a block reduction;
 *  2. the partition: per thread a float sum of expf(l - max) with the
 *     difference clamped at -87 (NaN included, as the CPU's polynomial
 *     does: a NaN or -inf logit adds ~1e-38), then the block's sum in
 *     double; logZ = log(sum) + max in double. The CPU sums floats in
 *     blocks of 1024 consecutive tokens with a Cephes polynomial instead
 *     of expf, so the two agree to ~1e-6 in logprobs, not to the bit
 *     (the test allows 1e-5); ranks and ids are exact;
 *  3. the rank: a block count of order keys (topk.cuh) above next's, which
 *     is "logits strictly above" for a number and "every non-NaN" for NaN;
 *  4. the K best: topk.cuh's radix select, collection and sort, the same
 *     order as the CPU's insertion (ties to the lower id, NaN last).
 * A 'next' outside [-1, V) scores as -1 and raises ST_KF_BAD_ID.
 */
#include "kernels.h"
#include "topk.cuh"

#define SCORE_THREADS TOPK_THREADS

struct score_smem {
    struct topk_smem t;
    float            wmax[TOPK_WARPS];
    double           wsum[TOPK_WARPS];
    int              wcnt[TOPK_WARPS];
};

/* The block's max, on every thread. */
static __device__ float block_max(struct score_smem *s, float v)
{
    v = kq_warp_max(v);
    if (threadIdx.x % 32 == 0)
        s->wmax[threadIdx.x / 32] = v;
    __syncthreads();
    float m = s->wmax[0];
    for (int w = 1; w < TOPK_WARPS; w++)
        m = fmaxf(m, s->wmax[w]);
    __syncthreads();
    return m;
}

/* The block's sum in double, on every thread (warps in order). */
static __device__ double block_sum(struct score_smem *s, double v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off, 32);
    if (threadIdx.x % 32 == 0)
        s->wsum[threadIdx.x / 32] = v;
    __syncthreads();
    double t = 0.0;
    for (int w = 0; w < TOPK_WARPS; w++)
        t += s->wsum[w];
    __syncthreads();
    return t;
}

static __device__ int block_count(struct score_smem *s, int c)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        c += __shfl_xor_sync(0xffffffffu, c, off, 32);
    if (threadIdx.x % 32 == 0)
        s->wcnt[threadIdx.x / 32] = c;
    __syncthreads();
    int t = 0;
    for (int w = 0; w < TOPK_WARPS; w++)
        t += s->wcnt[w];
    __syncthreads();
    return t;
}

/* log(sum(exp(l - max))) + max over the row. */
static __device__ double log_partition(struct score_smem *s, const float *lg, int64_t V)
{
    float m = -INFINITY;
    for (int64_t e = threadIdx.x; e < V; e += SCORE_THREADS)
        m = fmaxf(m, lg[e]);
    const float mx = block_max(s, m);
    float acc = 0.0f;
    for (int64_t e = threadIdx.x; e < V; e += SCORE_THREADS) {
        const float d = lg[e] - mx;
        acc += expf(!(d >= -87.0f) ? -87.0f : d);
    }
    return log(block_sum(s, (double)acc)) + (double)mx;
}

static __global__ void __launch_bounds__(SCORE_THREADS)
score_rows(float *vals, int32_t *ids, const float *logits, const int32_t *next, int64_t V, int k,
           unsigned *err_flag)
{
    __shared__ struct score_smem s;
    const int64_t r = blockIdx.x;
    const int tid = threadIdx.x;
    const float *lg = logits + r * V;
    float *v = vals + r * (1 + k);
    int32_t *id = ids + r * (1 + k);
    int nx = next[r];
    if (nx < -1 || nx >= V) {
        if (tid == 0)
            kq_flag(err_flag, ST_KF_BAD_ID);
        nx = -1;
    }

    const double logz = log_partition(&s, lg, V);
    if (nx >= 0) {   /* uniform across the block */
        const float x = lg[nx];
        const uint32_t kx = order_key(x);
        int c = 0;
        for (int64_t e = tid; e < V; e += SCORE_THREADS)
            c += order_key(lg[e]) > kx;
        c = block_count(&s, c);
        if (tid == 0) {
            v[0] = (float)((double)x - logz);
            id[0] = 1 + c;
        }
    } else if (tid == 0) {
        v[0] = 0.0f;
        id[0] = 0;
    }
    if (k == 0)
        return;
    uint32_t T;
    int need;
    radix_select(&s.t, lg, V, k, &T, &need);
    collect(&s.t, lg, V, k, T, need);
    sort_candidates(&s.t, k);
    if (tid < k) {
        v[1 + tid] = (float)((double)s.t.cv[tid] - logz);
        id[1 + tid] = s.t.ci[tid];
    }
}

extern "C" cudaError_t st_kern_score(float *vals, int32_t *ids, const float *logits,
                                     const int32_t *next, int64_t n_rows, int64_t n_vocab,
                                     int32_t k, unsigned *err_flag, cudaStream_t stream)
{
    if (n_rows < 1 || n_rows > 0x7fffffff || n_vocab < 1 || n_vocab > 0x7fffffff || k < 0 ||
        k > 20 || k > n_vocab)
        return cudaErrorInvalidValue;
    KQ_LAUNCH((unsigned)n_rows, SCORE_THREADS, 0, stream, score_rows)(vals, ids, logits, next,
                                                                      n_vocab, k, err_flag);
    return cudaGetLastError();
}
