/* moe.cu -- mixture-of-experts on the GPU: routing, grouping the (row,
 * expert) pairs by expert, and the weighted sum of the expert outputs.
 * The expert matmuls themselves are mmvq.cu in grouped mode.
 *
 * moe_route: one 256-thread block per row. The row's n_exp logits go to
 *   shared memory; softmax: block max, exp, block sum, p = e / sum (as the
 *   CPU backend); sigmoid: p = 1 / (1 + e^-logit) per expert (glm4moe).
 *   Then k rounds of a block arg-max over the untaken experts of the
 *   selection key p + bias (bias NULL: p; larger first, the lower index on
 *   ties; NaN below every number, so a row of NaN logits picks experts
 *   0..k-1 with NaN weights, as the CPU does, instead of indexing past the
 *   table); each round keeps the unbiased p of its pick. The chosen
 *   weights are renormalised by their sum (clamped to >= 6.1035e-5) when
 *   norm, then times scale when scale != 1. Layout: logits f32 [n_exp,
 *   n_rows]; bias f32 [n_exp]; sel i32 / wts f32 [k, n_rows].
 *
 * moe_group: one 1024-thread block. Counts pairs per expert (shared
 *   atomics), an exclusive scan by thread 0 (n_exp <= 1024), the list of
 *   live experts in increasing id, then each pair takes its slot with an
 *   atomic. The order of pairs inside one expert's group may vary between
 *   runs; results do not (every output row is computed on its own).
 *   Layout of 'groups' is struct st_kern_mmv's (kernels.h).
 *
 * moe_combine: one thread per output element (grid-stride), summing the k
 *   expert outputs of its row in choice order j = 0..k-1 (as the CPU).
 */
#include "common.cuh"

#define ROUTE_THREADS 256
#define MOE_MAX_EXP 1024

/* Block arg-max of (v, i): larger v wins, then smaller i. */
static __device__ void block_argmax(float *v, int *i, float *sv, int *si)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, *v, off);
        int oi = __shfl_xor_sync(0xffffffffu, *i, off);
        if (ov > *v || (ov == *v && oi < *i)) {
            *v = ov;
            *i = oi;
        }
    }
    if (lane == 0) {
        sv[warp] = *v;
        si[warp] = *i;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)blockDim.x / 32; w++) {
            if (sv[w] > sv[0] || (sv[w] == sv[0] && si[w] < si[0])) {
                sv[0] = sv[w];
                si[0] = si[w];
            }
        }
    }
    __syncthreads();
    *v = sv[0];
    *i = si[0];
    __syncthreads();
}

/* p[e] = softmax of the row (block max, exp, block sum), in place. */
static __device__ void route_softmax(float *p, int n_exp, float *sv, int *si)
{
    float mx = -INFINITY;
    int dummy = 0;
    for (int e = threadIdx.x; e < n_exp; e += ROUTE_THREADS)
        mx = fmaxf(mx, p[e]);
    block_argmax(&mx, &dummy, sv, si);
    float sum = 0.0f;
    for (int e = threadIdx.x; e < n_exp; e += ROUTE_THREADS) {
        p[e] = expf(p[e] - mx);
        sum += p[e];
    }
    sum = kq_warp_sum(sum);
    if (threadIdx.x % 32 == 0)
        sv[threadIdx.x / 32] = sum;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < ROUTE_THREADS / 32; w++)
        total += sv[w];
    __syncthreads();
    for (int e = threadIdx.x; e < n_exp; e += ROUTE_THREADS)
        p[e] /= total;
    __syncthreads();
}

static __global__ void __launch_bounds__(ROUTE_THREADS)
moe_route(int32_t *sel, float *wts, const float *logits, int n_exp, int k, bool sigmoid,
          const float *bias, bool norm, float scale)
{
    __shared__ float p[MOE_MAX_EXP];
    __shared__ float key[MOE_MAX_EXP];
    __shared__ float sv[ROUTE_THREADS / 32];
    __shared__ int si[ROUTE_THREADS / 32];
    __shared__ float chosen[32];
    const int64_t r = blockIdx.x;
    const float *lg = logits + r * n_exp;

    for (int e = threadIdx.x; e < n_exp; e += ROUTE_THREADS)
        p[e] = sigmoid ? 1.0f / (1.0f + expf(-lg[e])) : lg[e];
    __syncthreads();
    if (!sigmoid)
        route_softmax(p, n_exp, sv, si);
    /* rank keys: a NaN key (NaN logits) or one below -3e38 (a bias of
     * -inf or near it, which a file can hold) is -3e38, above the start
     * value -3.2e38, so some untaken expert always wins (k <= n_exp) and
     * bi is a valid index; taken experts are -INFINITY, below the start
     * value. Without a bias the keys are p. */
    for (int e = threadIdx.x; e < n_exp; e += ROUTE_THREADS) {
        const float v = bias ? p[e] + bias[e] : p[e];
        key[e] = v != v || v < -3.0e38f ? -3.0e38f : v;
    }
    __syncthreads();

    for (int j = 0; j < k; j++) {
        float bv = -3.2e38f;
        int bi = 0x7fffffff;
        for (int e = threadIdx.x; e < n_exp; e += ROUTE_THREADS) {
            const float v = key[e];
            if (v > bv || (v == bv && e < bi)) {
                bv = v;
                bi = e;
            }
        }
        block_argmax(&bv, &bi, sv, si);
        if (threadIdx.x == 0) {
            sel[r * k + j] = bi;
            chosen[j] = p[bi];
            key[bi] = -INFINITY;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float ws = 1.0f;
        if (norm) {
            ws = 0.0f;
            for (int j = 0; j < k; j++)
                ws += chosen[j];
            if (ws < 6.1035e-5f)
                ws = 6.1035e-5f;
        }
        for (int j = 0; j < k; j++) {
            float w = norm ? chosen[j] / ws : chosen[j];
            wts[r * k + j] = scale != 1.0f ? w * scale : w;
        }
    }
}

extern "C" cudaError_t st_kern_moe_route(int32_t *sel, float *wts, const float *logits,
                                         int64_t n_rows, int32_t n_exp, int32_t k, bool sigmoid,
                                         const float *bias, bool norm, float scale,
                                         cudaStream_t stream)
{
    if (n_rows < 1 || n_rows > 0x7fffffff || n_exp < 1 || n_exp > MOE_MAX_EXP || k < 1 ||
        k > 32 || k > n_exp)
        return cudaErrorInvalidValue;
    KQ_LAUNCH((unsigned)n_rows, ROUTE_THREADS, 0, stream, moe_route)(
        sel, wts, logits, n_exp, k, sigmoid, bias, norm, scale);
    return cudaGetLastError();
}

static __global__ void __launch_bounds__(1024)
moe_group(int32_t *groups, int32_t *pair_row, int32_t *pair_of, const int32_t *sel,
          int64_t n_pairs, int k, int n_exp, int max_groups, unsigned *err_flag)
{
    __shared__ int count[MOE_MAX_EXP], fill[MOE_MAX_EXP];
    for (int e = threadIdx.x; e < n_exp; e += blockDim.x)
        count[e] = 0;
    __syncthreads();
    for (int64_t p = threadIdx.x; p < n_pairs; p += blockDim.x) {
        int e = sel[p];
        if (e < 0 || e >= n_exp) {
            kq_flag(err_flag, ST_KF_BAD_EXPERT);
            e = 0;
        }
        atomicAdd(&count[e], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int at = 0, ng = 0;
        for (int e = 0; e < n_exp; e++) {
            fill[e] = at;
            if (count[e] > 0 && ng < max_groups) {
                groups[1 + ng] = e;
                groups[1 + max_groups + ng] = at;
                ng++;
            }
            at += count[e];
        }
        groups[0] = ng;
        groups[1 + max_groups + ng] = at;
    }
    __syncthreads();
    for (int64_t p = threadIdx.x; p < n_pairs; p += blockDim.x) {
        int e = sel[p];
        if (e < 0 || e >= n_exp)
            e = 0;
        const int q = atomicAdd(&fill[e], 1);
        pair_row[q] = (int32_t)(p / k);
        pair_of[p] = q;
    }
}

extern "C" cudaError_t st_kern_moe_group(int32_t *groups, int32_t *pair_row, int32_t *pair_of,
                                         const int32_t *sel, int64_t n_rows, int32_t k,
                                         int32_t n_exp, int32_t max_groups, unsigned *err_flag,
                                         cudaStream_t stream)
{
    if (n_rows < 1 || k < 1 || n_exp < 1 || n_exp > MOE_MAX_EXP || max_groups < 1 ||
        max_groups < (n_exp < n_rows * k ? n_exp : n_rows * k))
        return cudaErrorInvalidValue;
    KQ_LAUNCH(1, 1024, 0, stream, moe_group)(groups, pair_row, pair_of, sel, n_rows * k, k,
                                             n_exp, max_groups, err_flag);
    return cudaGetLastError();
}

static __global__ void moe_combine(float *out, const float *yd, const float *wts,
                                   const int32_t *pair_of, int64_t n_rows, int k, int64_t n_embd)
{
    const int64_t n = n_rows * n_embd;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / n_embd, c = i % n_embd;
        float acc = 0.0f;
        for (int j = 0; j < k; j++)
            acc += wts[r * k + j] * yd[(int64_t)pair_of[r * k + j] * n_embd + c];
        out[i] = acc;
    }
}

extern "C" cudaError_t st_kern_moe_combine(float *out, const float *yd, const float *wts,
                                           const int32_t *pair_of, int64_t n_rows, int32_t k,
                                           int64_t n_embd, cudaStream_t stream)
{
    unsigned blocks = kq_cdiv(n_rows * n_embd, 256);
    KQ_LAUNCH(blocks < 65535 ? (blocks ? blocks : 1) : 65535, 256, 0, stream, moe_combine)(
        out, yd, wts, pair_of, n_rows, k, n_embd);
    return cudaGetLastError();
}
