/* sample.cu -- greedy and top-k sampling on the GPU, so a decode step
 * copies back one token id per row instead of a row of vocabulary logits.
 *
 * Mapping: one 1024-thread block per row. Candidates are found by k rounds
 * of a block arg-max over the row, each round restricted to entries that
 * come after the previous winner in the order (larger logit first, lower
 * id on ties) -- no scratch and no modification of the logits. Round
 * cost: one pass over n_vocab floats (600 KB for 151,936 tokens, from L2
 * after the first). Greedy (top_k == 1 or temp <= 0) is a single round.
 * Thread 0 then draws: weights w_j = exp((l_j - l_0) / temp), pick the
 * first j with w_0 + .. + w_j >= u * sum(w).
 *
 * Layout: logits f32 [n_vocab, n_rows]; top_k i32 [n_rows]; temp, u f32
 * [n_rows] (u in [0, 1), drawn by the caller's per-request RNG); ids i32
 * [n_rows].
 */
#include "common.cuh"

#define SAMPLE_THREADS 1024
#define SAMPLE_MAX_K 256

/* (v, i) comes strictly after (pv, pi) in the candidate order. */
static __device__ __forceinline__ bool after(float v, int i, float pv, int pi)
{
    return v < pv || (v == pv && i > pi);
}

static __device__ __forceinline__ bool better(float v, int i, float bv, int bi)
{
    return v > bv || (v == bv && i < bi);
}

static __device__ void block_best(float *v, int *i, float *sv, int *si)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, *v, off);
        int oi = __shfl_xor_sync(0xffffffffu, *i, off);
        if (better(ov, oi, *v, *i)) {
            *v = ov;
            *i = oi;
        }
    }
    if (lane == 0) {
        sv[warp] = *v;
        si[warp] = *i;
    }
    __syncthreads();
    if (warp == 0) {
        *v = lane < (int)blockDim.x / 32 ? sv[lane] : -INFINITY;
        *i = lane < (int)blockDim.x / 32 ? si[lane] : 0x7fffffff;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, *v, off);
            int oi = __shfl_xor_sync(0xffffffffu, *i, off);
            if (better(ov, oi, *v, *i)) {
                *v = ov;
                *i = oi;
            }
        }
        if (lane == 0) {
            sv[0] = *v;
            si[0] = *i;
        }
    }
    __syncthreads();
    *v = sv[0];
    *i = si[0];
    __syncthreads();
}

static __global__ void __launch_bounds__(SAMPLE_THREADS)
sample_rows(int32_t *ids, const float *logits, int64_t n_vocab, const int32_t *top_k,
            const float *temp, const float *u)
{
    __shared__ float cv[SAMPLE_MAX_K];
    __shared__ int ci[SAMPLE_MAX_K];
    __shared__ float sv[32];
    __shared__ int si[32];
    const int64_t r = blockIdx.x;
    const float *lg = logits + r * n_vocab;
    const float t = temp[r];
    int k = top_k[r];
    if (k <= 0 || k > SAMPLE_MAX_K)
        k = SAMPLE_MAX_K;
    if (k > n_vocab)
        k = (int)n_vocab;
    if (t <= 0.0f)
        k = 1;

    float pv = INFINITY;
    int pi = -1;
    for (int j = 0; j < k; j++) {
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int64_t e = threadIdx.x; e < n_vocab; e += SAMPLE_THREADS) {
            const float v = lg[e];
            if (after(v, (int)e, pv, pi) && better(v, (int)e, bv, bi)) {
                bv = v;
                bi = (int)e;
            }
        }
        block_best(&bv, &bi, sv, si);
        if (threadIdx.x == 0) {
            cv[j] = bv;
            ci[j] = bi;
        }
        pv = bv;
        pi = bi;
    }
    if (threadIdx.x != 0)
        return;
    /* NaN logits are never "better", so a row of NaNs leaves a round
     * without a winner (index 0x7fffffff): never hand out such an id (the
     * engine indexes the vocabulary with it); fall back to the first
     * found candidate, or id 0 as the CPU sampler does. */
    const int first = ci[0] >= 0 && ci[0] < n_vocab ? ci[0] : 0;
    if (k == 1) {
        ids[r] = first;
        return;
    }
    float total = 0.0f;
    for (int j = 0; j < k; j++)
        total += expf((cv[j] - cv[0]) / t);
    const float target = u[r] * total;
    float cum = 0.0f;
    int pick = k - 1;
    for (int j = 0; j < k; j++) {
        cum += expf((cv[j] - cv[0]) / t);
        if (cum >= target) {
            pick = j;
            break;
        }
    }
    ids[r] = ci[pick] >= 0 && ci[pick] < n_vocab ? ci[pick] : first;
}

extern "C" cudaError_t st_kern_sample(int32_t *ids, const float *logits, int64_t n_rows,
                                      int64_t n_vocab, const int32_t *top_k, const float *temp,
                                      const float *u, cudaStream_t stream)
{
    if (n_rows < 1 || n_rows > 0x7fffffff || n_vocab < 1 || n_vocab > 0x7fffffff)
        return cudaErrorInvalidValue;
    sample_rows<<<(unsigned)n_rows, SAMPLE_THREADS, 0, stream>>>(ids, logits, n_vocab, top_k,
                                                                temp, u);
    return cudaGetLastError();
}
