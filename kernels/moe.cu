/* moe.cu -- mixture-of-experts on the GPU: routing, grouping the (row,
 * expert) pairs by expert, and the weighted sum of the expert outputs.
 * The expert matmuls themselves are mmvq.cu in grouped mode.
 *
 * moe_route: one warp per row, 4 rows per 128-thread block (decode has
 *   1-4 rows: one block, no barrier). Lane l holds experts e = l + 32j
 *   (j < NPL, NPL = 4, 8 or 32 from n_exp) in registers: their logits are
 *   loaded at once; softmax: warp max, exp, warp sum, p = e / sum (as the
 *   CPU backend); sigmoid: p = 1 / (1 + e^-logit) per expert (glm4moe).
 *   Then k rounds of a warp arg-max (butterfly) over the untaken experts
 *   of the selection key p + bias (bias NULL: p; larger first, the lower
 *   index on ties; NaN below every number, so a row of NaN logits picks
 *   experts 0..k-1 with NaN weights, as the CPU does, instead of indexing
 *   past the table); each round keeps the unbiased p of its pick (the
 *   winner is its owner lane's own best, broadcast by one shuffle), lane j
 *   keeps pick j. The chosen weights are renormalised by their sum (in
 *   choice order, clamped to >= 6.1035e-5) when norm, then times scale
 *   when scale != 1. Layout: logits f32 [n_exp, n_rows]; bias f32 [n_exp];
 *   sel i32 / wts f32 [k, n_rows].
 *
 * moe_group: one block of 32..1024 threads (enough for one thread per
 *   expert, and per pair up to 1024: 128 for a decode step of a3b). Counts
 *   pairs per expert (shared atomics), then an exclusive scan of the counts
 *   and of the live flags at once (warp shuffle scans plus the warp totals;
 *   n_exp <= 1024 = one expert per thread), the list of live experts in
 *   increasing id, then each pair takes its slot with an atomic. The order
 *   of pairs inside one expert's group may vary between runs; results do
 *   not (every output row is computed on its own). Layout of 'groups' is
 *   struct st_kern_mmv's (kernels.h).
 *
 * moe_route_group (decode steps of <= 32 rows, <= 256 experts): both in
 *   one block of up to 1024 threads, a warp per row, then the grouping of
 *   the pairs it chose: the same routing and the same groups, one launch.
 *
 * moe_combine: one thread per output element (grid-stride), summing the k
 *   expert outputs of its row in choice order j = 0..k-1 (as the CPU); the
 *   pair indices and weights of 8 choices are loaded, then their 8 rows,
 *   then summed, so the loads of a step are in flight together.
 */
#include "common.cuh"

#define ROUTE_WARPS 4
#define MOE_MAX_EXP 1024
/* moe_route_group's bound: 32 logits a lane (more experts) do not fit the
 * 64 registers of a 1024-thread block (ptxas spilled 420 bytes) */
#define MOE_RG_MAX_EXP ST_KERN_MOE_RG_MAX_EXP

/* Warp arg-max of (v, i): larger v wins, then smaller i; every lane ends
 * with the winner. */
static __device__ __forceinline__ void warp_argmax(float *v, int *i)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, *v, off);
        const int oi = __shfl_xor_sync(0xffffffffu, *i, off);
        if (ov > *v || (ov == *v && oi < *i)) {
            *v = ov;
            *i = oi;
        }
    }
}

/* Row r's routing by one whole warp (lane = its lane). */
template <int NPL>
static __device__ __forceinline__ void route_row(int32_t *sel, float *wts, const float *logits,
                                                 int64_t r, int n_exp, int k, bool sigmoid,
                                                 const float *bias, bool norm, float scale,
                                                 int lane)
{
    const float *lg = logits + r * n_exp;
    float p[NPL], key[NPL];
#pragma unroll
    for (int j = 0; j < NPL; j++) {
        const int e = lane + 32 * j;
        p[j] = e < n_exp ? lg[e] : -INFINITY;
        key[j] = bias && e < n_exp ? bias[e] : 0.0f;
    }
    if (sigmoid) {
#pragma unroll
        for (int j = 0; j < NPL; j++)
            p[j] = 1.0f / (1.0f + expf(-p[j]));
    } else {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < NPL; j++)
            mx = fmaxf(mx, p[j]);
        mx = kq_warp_max(mx);
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < NPL; j++) {
            p[j] = lane + 32 * j < n_exp ? expf(p[j] - mx) : 0.0f;
            sum += p[j];
        }
        sum = kq_warp_sum(sum);
#pragma unroll
        for (int j = 0; j < NPL; j++)
            p[j] /= sum;
    }
    /* rank keys: a NaN key (NaN logits) or one below -3e38 (a bias of
     * -inf or near it, which a file can hold) is -3e38, above the start
     * value -3.2e38, so some untaken expert always wins (k <= n_exp) and
     * the pick is a valid index; taken experts and the padding past n_exp
     * are -INFINITY, below the start value. Without a bias the keys are p. */
#pragma unroll
    for (int j = 0; j < NPL; j++) {
        const float v = bias ? p[j] + key[j] : p[j];
        key[j] = lane + 32 * j >= n_exp ? -INFINITY : v != v || v < -3.0e38f ? -3.0e38f : v;
    }
    int my_id = 0;
    float my_p = 0.0f, ws = 0.0f;
    for (int c = 0; c < k; c++) {
        float bv = -3.2e38f, bp = 0.0f;
        int bi = 0x7fffffff;
#pragma unroll
        for (int j = 0; j < NPL; j++) {  /* increasing e: strict > keeps the lower id */
            if (key[j] > bv) {
                bv = key[j];
                bi = lane + 32 * j;
                bp = p[j];
            }
        }
        warp_argmax(&bv, &bi);
        /* the winner is its owner lane's own best: that lane's bp is its p */
        bp = __shfl_sync(0xffffffffu, bp, bi % 32);
#pragma unroll
        for (int j = 0; j < NPL; j++)
            if (lane + 32 * j == bi)
                key[j] = -INFINITY;
        if (lane == c) {
            my_id = bi;
            my_p = bp;
        }
        ws += bp;                        /* choice order, as the CPU */
    }
    if (lane < k) {
        float wsn = 1.0f;
        if (norm)
            wsn = ws < 6.1035e-5f ? 6.1035e-5f : ws;
        const float wgt = norm ? my_p / wsn : my_p;
        sel[r * k + lane] = my_id;
        wts[r * k + lane] = scale != 1.0f ? wgt * scale : wgt;
    }
}

template <int NPL>
static __global__ void __launch_bounds__(32 * ROUTE_WARPS)
moe_route(int32_t *sel, float *wts, const float *logits, int64_t n_rows, int n_exp, int k,
          bool sigmoid, const float *bias, bool norm, float scale)
{
    const int64_t r = (int64_t)blockIdx.x * ROUTE_WARPS + threadIdx.x / 32;
    if (r >= n_rows)
        return;                          /* whole warps leave together */
    route_row<NPL>(sel, wts, logits, r, n_exp, k, sigmoid, bias, norm, scale, threadIdx.x % 32);
}

extern "C" cudaError_t st_kern_moe_route(int32_t *sel, float *wts, const float *logits,
                                         int64_t n_rows, int32_t n_exp, int32_t k, bool sigmoid,
                                         const float *bias, bool norm, float scale,
                                         cudaStream_t stream)
{
    if (n_rows < 1 || n_rows > 0x7fffffff || n_exp < 1 || n_exp > MOE_MAX_EXP || k < 1 ||
        k > 32 || k > n_exp)
        return cudaErrorInvalidValue;
    const unsigned nb = kq_cdiv(n_rows, ROUTE_WARPS);
    if (n_exp <= 128)
        KQ_LAUNCH(nb, 32 * ROUTE_WARPS, 0, stream, moe_route<4>)(sel, wts, logits, n_rows, n_exp,
                                                                 k, sigmoid, bias, norm, scale);
    else if (n_exp <= 256)
        KQ_LAUNCH(nb, 32 * ROUTE_WARPS, 0, stream, moe_route<8>)(sel, wts, logits, n_rows, n_exp,
                                                                 k, sigmoid, bias, norm, scale);
    else
        KQ_LAUNCH(nb, 32 * ROUTE_WARPS, 0, stream, moe_route<32>)(sel, wts, logits, n_rows,
                                                                  n_exp, k, sigmoid, bias, norm,
                                                                  scale);
    return cudaGetLastError();
}

/* Inclusive sum over the lanes of a warp (Hillis-Steele by __shfl_up). */
static __device__ __forceinline__ int warp_scan_incl(int v, int lane)
{
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const int o = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off)
            v += o;
    }
    return v;
}

/* The pairs of sel grouped by expert, by the whole block (blockDim.x >=
 * n_exp, whole warps); count, fill: MOE_MAX_EXP ints of shared memory,
 * wcount, wlive: 32. */
static __device__ __forceinline__ void group_pairs(int32_t *groups, int32_t *pair_row,
                                                   int32_t *pair_of, const int32_t *sel,
                                                   int64_t n_pairs, int k, int n_exp,
                                                   int max_groups, unsigned *err_flag,
                                                   int *count, int *fill, int *wcount,
                                                   int *wlive)
{
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    for (int e = tid; e < n_exp; e += blockDim.x)
        count[e] = 0;
    __syncthreads();
    for (int64_t p = tid; p < n_pairs; p += blockDim.x) {
        int e = sel[p];
        if (e < 0 || e >= n_exp) {
            kq_flag(err_flag, ST_KF_BAD_EXPERT);
            e = 0;
        }
        atomicAdd(&count[e], 1);
    }
    __syncthreads();
    /* thread e scans expert e (blockDim.x >= n_exp) */
    const int c = tid < n_exp ? count[tid] : 0, live = c > 0;
    const int ci = warp_scan_incl(c, lane), li = warp_scan_incl(live, lane);
    if (lane == 31) {
        wcount[warp] = ci;
        wlive[warp] = li;
    }
    __syncthreads();
    int cb = 0, lb = 0;                  /* the totals of the warps before this one */
#pragma unroll
    for (int w = 0; w < 32; w++) {
        if (w < warp) {
            cb += wcount[w];
            lb += wlive[w];
        }
    }
    const int at = cb + ci - c, rank = lb + li - live;   /* exclusive */
    if (tid < n_exp) {
        fill[tid] = at;
        if (live && rank < max_groups) {
            groups[1 + rank] = tid;
            groups[1 + max_groups + rank] = at;
        }
    }
    if (tid == n_exp - 1) {              /* its inclusive sums are the totals */
        const int ng = rank + live < max_groups ? rank + live : max_groups;
        groups[0] = ng;
        groups[1 + max_groups + ng] = at + c;
    }
    __syncthreads();
    for (int64_t p = tid; p < n_pairs; p += blockDim.x) {
        int e = sel[p];
        if (e < 0 || e >= n_exp)
            e = 0;
        const int q = atomicAdd(&fill[e], 1);
        pair_row[q] = (int32_t)(p / k);
        pair_of[p] = q;
    }
}

static __global__ void __launch_bounds__(1024)
moe_group(int32_t *groups, int32_t *pair_row, int32_t *pair_of, const int32_t *sel,
          int64_t n_pairs, int k, int n_exp, int max_groups, unsigned *err_flag)
{
    __shared__ int count[MOE_MAX_EXP], fill[MOE_MAX_EXP];
    __shared__ int wcount[32], wlive[32];
    group_pairs(groups, pair_row, pair_of, sel, n_pairs, k, n_exp, max_groups, err_flag, count,
                fill, wcount, wlive);
}

/* Routing and grouping of a decode step in one block: warp r routes row r
 * (route_row, so sel and wts are moe_route's), then the block groups the
 * pairs (group_pairs, reading the sel it just wrote: __syncthreads makes
 * the block's global writes visible to the block). */
template <int NPL>
static __global__ void __launch_bounds__(1024)
moe_route_group(int32_t *sel, float *wts, const float *logits, int64_t n_rows, int n_exp, int k,
                bool sigmoid, const float *bias, bool norm, float scale, int32_t *groups,
                int32_t *pair_row, int32_t *pair_of, int max_groups, unsigned *err_flag)
{
    __shared__ int count[MOE_MAX_EXP], fill[MOE_MAX_EXP];
    __shared__ int wcount[32], wlive[32];
    const int64_t r = threadIdx.x / 32;
    if (r < n_rows)
        route_row<NPL>(sel, wts, logits, r, n_exp, k, sigmoid, bias, norm, scale,
                       threadIdx.x % 32);
    __syncthreads();
    group_pairs(groups, pair_row, pair_of, sel, n_rows * k, k, n_exp, max_groups, err_flag,
                count, fill, wcount, wlive);
}

extern "C" cudaError_t st_kern_moe_route_group(const struct st_kern_moe_route_group *a,
                                               cudaStream_t stream)
{
    const int64_t P = a->n_rows * a->k;
    if (a->n_rows < 1 || a->n_rows > 32 || a->n_exp < 1 || a->n_exp > MOE_RG_MAX_EXP ||
        a->k < 1 || a->k > 32 || a->k > a->n_exp ||
        a->max_groups < (a->n_exp < P ? a->n_exp : P))
        return cudaErrorInvalidValue;
    /* a warp per row, a thread per expert, per pair up to 1024 */
    int64_t t = 32 * a->n_rows;
    t = t > a->n_exp ? t : a->n_exp;
    t = t > (P < 1024 ? P : 1024) ? t : (P < 1024 ? P : 1024);
    t = (t + 31) / 32 * 32;
#define MOE_RG(NPL)                                                                         \
    KQ_LAUNCH(1, (unsigned)t, 0, stream, moe_route_group<NPL>)(                             \
        a->sel, a->wts, a->logits, a->n_rows, a->n_exp, a->k, a->sigmoid, a->bias, a->norm, \
        a->scale, a->groups, a->pair_row, a->pair_of, a->max_groups, a->err_flag)
    if (a->n_exp <= 128)
        MOE_RG(4);
    else
        MOE_RG(8);
#undef MOE_RG
    return cudaGetLastError();
}

extern "C" cudaError_t st_kern_moe_group(int32_t *groups, int32_t *pair_row, int32_t *pair_of,
                                         const int32_t *sel, int64_t n_rows, int32_t k,
                                         int32_t n_exp, int32_t max_groups, unsigned *err_flag,
                                         cudaStream_t stream)
{
    if (n_rows < 1 || k < 1 || n_exp < 1 || n_exp > MOE_MAX_EXP || max_groups < 1 ||
        max_groups < (n_exp < n_rows * k ? n_exp : n_rows * k))
        return cudaErrorInvalidValue;
    /* one thread per expert at least, one per pair up to 1024, whole warps */
    const int64_t P = n_rows * k;
    int64_t t = P < 1024 ? P : 1024;
    t = t > n_exp ? t : n_exp;
    t = (t + 31) / 32 * 32;
    KQ_LAUNCH(1, (unsigned)t, 0, stream, moe_group)(groups, pair_row, pair_of, sel, P, k, n_exp,
                                                    max_groups, err_flag);
    return cudaGetLastError();
}

#define COMBINE_J 8   /* choices whose loads are issued together */

static __global__ void moe_combine(float *out, const float *yd, const float *wts,
                                   const int32_t *pair_of, int64_t n_rows, int k, int64_t n_embd)
{
    const int64_t n = n_rows * n_embd;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / n_embd, c = i % n_embd;
        float acc = 0.0f;
        for (int j0 = 0; j0 < k; j0 += COMBINE_J) {
            int q[COMBINE_J];
            float wj[COMBINE_J], y[COMBINE_J];
#pragma unroll
            for (int t = 0; t < COMBINE_J; t++) {
                q[t] = j0 + t < k ? pair_of[r * k + j0 + t] : 0;
                wj[t] = j0 + t < k ? wts[r * k + j0 + t] : 0.0f;
            }
#pragma unroll
            for (int t = 0; t < COMBINE_J; t++)
                y[t] = j0 + t < k ? yd[(int64_t)q[t] * n_embd + c] : 0.0f;
#pragma unroll
            for (int t = 0; t < COMBINE_J; t++)
                if (j0 + t < k)
                    acc += wj[t] * y[t];
        }
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
