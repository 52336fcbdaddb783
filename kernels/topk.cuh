/* topk.cuh -- the k best (logit, id) pairs of a row in one block: radix
 * select on order keys, collection, bitonic sort (k <= TOPK_MAX = 256).
 * Shared by the sampler (sample.cu) and the scorer (score.cu); both launch
 * TOPK_THREADS threads per row and order candidates as st_draw_before
 * (include/strata/draw.h): the larger logit first, the lower id on ties,
 * NaN below every number.
 *
 *  1. radix_select: order keys (a float's bits made to sort as unsigned:
 *     the larger logit, the larger key; both zeros one key; NaN the
 *     smallest). Four passes of a 256-bin histogram over the keys that
 *     share the prefix found so far give the key T of the k-th best, and
 *     how many of the keys equal to T are in ('need'). Histogram adds are
 *     aggregated per warp (__match_any_sync): the first pass sees nearly
 *     every key in one or two bins.
 *  2. collect: the keys > T (k - need of them) into slots taken with an
 *     atomic; the keys == T the same way when exactly 'need' exist, else
 *     the 'need' lowest ids, ranked by ballots tile by tile (the rare case
 *     of ties at the boundary: flat or masked rows).
 *  3. sort_candidates: cv/ci[0..k) by (logit desc, id asc), bitonic, in
 *     shared memory.
 * Every thread of the block must call each step (they synchronize).
 */
#ifndef STRATA_KERNELS_TOPK_CUH
#define STRATA_KERNELS_TOPK_CUH

#include "common.cuh"

extern "C" {
#include "strata/draw.h"
}

#define TOPK_THREADS 1024
#define TOPK_WARPS (TOPK_THREADS / 32)
#define TOPK_MAX ST_DRAW_MAX_K

static_assert(TOPK_MAX <= TOPK_THREADS, "one thread per candidate");

/* Host and device (test_cuda_kern_host checks the order against
 * st_draw_before on the host). */
KQ_HD uint32_t order_key(float v)
{
    if (v != v)
        return 0u;
    if (v == 0.0f)
        return 0x80000000u;   /* -0 and +0 compare equal: one key */
    uint32_t b;
    memcpy(&b, &v, sizeof(b));
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

/* st_draw_before on the device. */
KQ_HD bool before(float v, int i, float bv, int bi)
{
    if (v != v)
        return bv != bv && i < bi;
    return bv != bv || v > bv || (v == bv && i < bi);
}

struct topk_smem {
    unsigned hist[256];
    float    cv[TOPK_MAX];   /* candidates: logits, */
    int      ci[TOPK_MAX];   /* ids */
    int      warp_eq[TOPK_WARPS];
    uint32_t prefix;
    int      need, n_eq, n_put, taken;
};

/* Step 1: the key of the k-th best and how many keys equal to it to take. */
static __device__ void radix_select(struct topk_smem *s, const float *lg, int64_t V, int k,
                                    uint32_t *key_out, int *need_out)
{
    const int tid = threadIdx.x, lane = tid % 32;
    uint32_t prefix = 0, mask = 0;
    int need = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        if (tid < 256)
            s->hist[tid] = 0;
        __syncthreads();
        for (int64_t base = 0; base < V; base += TOPK_THREADS) {   /* uniform trip count */
            const int64_t e = base + tid;
            unsigned bin = 256u;
            if (e < V) {
                const uint32_t key = order_key(lg[e]);
                if ((key & mask) == prefix)
                    bin = (key >> shift) & 255u;
            }
            const unsigned peers = __match_any_sync(0xffffffffu, bin);
            if (bin < 256u && lane == __ffs(peers) - 1)
                atomicAdd(&s->hist[bin], (unsigned)__popc(peers));
        }
        __syncthreads();
        if (tid == 0) {
            int b = 255, above = 0;
            while (b > 0 && above + (int)s->hist[b] < need)
                above += (int)s->hist[b--];
            s->need = need - above;
            s->prefix = prefix | ((uint32_t)b << shift);
            s->n_eq = (int)s->hist[b];
        }
        __syncthreads();
        need = s->need;
        prefix = s->prefix;
        mask |= 255u << shift;
    }
    *key_out = prefix;
    *need_out = need;
}

/* Step 2, the rare case: keys > T by atomic slots, keys == T by id order. */
static __device__ void collect_ordered(struct topk_smem *s, const float *lg, int64_t V,
                                       uint32_t T, int n_gt, int need)
{
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    for (int64_t base = 0; base < V; base += TOPK_THREADS) {
        const int64_t e = base + tid;
        float v = 0.0f;
        bool gt = false, eq = false;
        if (e < V) {
            v = lg[e];
            const uint32_t key = order_key(v);
            gt = key > T;
            eq = key == T;
        }
        if (gt) {
            const int slot = atomicAdd(&s->n_put, 1);
            s->cv[slot] = v;
            s->ci[slot] = (int)e;
        }
        const unsigned ball = __ballot_sync(0xffffffffu, eq);
        if (lane == 0)
            s->warp_eq[warp] = __popc(ball);
        __syncthreads();
        int rank = s->taken + __popc(ball & ((1u << lane) - 1u));
        for (int w = 0; w < warp; w++)
            rank += s->warp_eq[w];
        if (eq && rank < need) {
            s->cv[n_gt + rank] = v;
            s->ci[n_gt + rank] = (int)e;
        }
        __syncthreads();
        if (tid == 0)
            for (int w = 0; w < TOPK_WARPS; w++)
                s->taken += s->warp_eq[w];
        __syncthreads();
    }
}

/* Step 2: the k candidates into cv/ci, unordered. */
static __device__ void collect(struct topk_smem *s, const float *lg, int64_t V, int k,
                               uint32_t T, int need)
{
    if (threadIdx.x == 0) {
        s->n_put = 0;
        s->taken = 0;
    }
    __syncthreads();
    if (s->n_eq != need) {
        collect_ordered(s, lg, V, T, k - need, need);
        return;
    }
    for (int64_t e = threadIdx.x; e < V; e += TOPK_THREADS) {
        const float v = lg[e];
        if (order_key(v) >= T) {
            const int slot = atomicAdd(&s->n_put, 1);
            s->cv[slot] = v;
            s->ci[slot] = (int)e;
        }
    }
    __syncthreads();
}

/* Step 3: cv/ci[0..k) in the top-k order; padding sorts last. */
static __device__ void sort_candidates(struct topk_smem *s, int k)
{
    const int tid = threadIdx.x;
    int size = 1;
    while (size < k)
        size <<= 1;
    if (tid >= k && tid < size) {
        s->cv[tid] = __int_as_float(0x7fffffff);   /* NaN */
        s->ci[tid] = 0x7fffffff;
    }
    for (int len = 2; len <= size; len <<= 1) {
        for (int stride = len / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            const int j = tid ^ stride;
            if (tid < size && j > tid) {
                const bool up = (tid & len) == 0;
                const bool swap = up ? before(s->cv[j], s->ci[j], s->cv[tid], s->ci[tid])
                                     : before(s->cv[tid], s->ci[tid], s->cv[j], s->ci[j]);
                if (swap) {
                    const float tv = s->cv[tid];
                    const int ti = s->ci[tid];
                    s->cv[tid] = s->cv[j];
                    s->ci[tid] = s->ci[j];
                    s->cv[j] = tv;
                    s->ci[j] = ti;
                }
            }
        }
    }
    __syncthreads();
}

#endif /* STRATA_KERNELS_TOPK_CUH */
