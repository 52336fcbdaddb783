/* sample.cu -- the sampler chain's tail on the GPU (include/strata/draw.h:
 * top-k, top-p, min-p, temperature, the draw), so a decode step copies back
 * one token id per row instead of a row of vocabulary logits. It gives
 * st_draw_row's token for the same logits and record
 * (tests/unit/test_cuda_ops.c).
 *
 * Mapping: one 1024-thread block per row. Steps 1-3 are topk.cuh's
 * (shared with score.cu).
 *  1. Top-k by radix select on order keys (a float's bits made to sort as
 *     unsigned: the larger logit, the larger key; both zeros one key; NaN
 *     the smallest). Four passes of a 256-bin histogram over the keys that
 *     share the prefix found so far give the key T of the k-th best, and
 *     how many of the keys equal to T are in ('need'). Histogram adds are
 *     aggregated per warp (__match_any_sync): the first pass sees nearly
 *     every key in one or two bins.
 *  2. Collect the keys > T (k - need of them) into slots taken with an
 *     atomic; the keys == T the same way when exactly 'need' exist, else
 *     the 'need' lowest ids, ranked by ballots tile by tile (the rare case
 *     of ties at the boundary: flat or masked rows).
 *  3. Sort the k (<= 256) by (logit desc, id asc), bitonic, in shared memory.
 *  4. top-p, min-p and the draw as draw.c does them: each candidate's
 *     exp on its own thread, the sums on one thread in candidate order.
 * A row is read five times (600 KB at 151,936 tokens; from L2 after the
 * first), about 10 us at batch 1, against a 600 KB copy back and a host
 * top-k over the whole vocabulary without it.
 */
#include "topk.cuh"

#define SAMPLE_THREADS TOPK_THREADS

struct sample_smem {
    struct topk_smem t;
    float            cp[ST_DRAW_MAX_K];   /* candidate weights */
    int              n;
};

/* Step 4: st_draw_nucleus then st_draw_pick over the sorted candidates. */
static __device__ int draw_sorted(struct sample_smem *s, int k, const struct st_draw &d)
{
    const int tid = threadIdx.x;
    const double l0 = s->t.cv[0];
    if (tid < k)
        s->cp[tid] = (float)exp((double)s->t.cv[tid] - l0);
    __syncthreads();
    if (tid == 0) {
        double sum = 0.0;
        for (int j = 0; j < k; j++)
            sum += s->cp[j];
        int n = k;
        if (d.top_p < 1.0f) {
            double cum = 0.0;
            for (int j = 0; j < n; j++) {
                cum += s->cp[j] / sum;
                if (cum >= d.top_p) {
                    n = j + 1;
                    break;
                }
            }
        }
        if (d.min_p > 0.0f) {
            int keep = 1;
            while (keep < n && s->cp[keep] >= d.min_p)
                keep++;
            n = keep;
        }
        s->n = n;
    }
    __syncthreads();
    const int n = s->n;
    if (tid < n)
        s->cp[tid] = (float)exp(((double)s->t.cv[tid] - l0) / (double)d.temp);
    __syncthreads();
    int pick = n - 1;
    if (tid == 0) {
        double sum = 0.0;
        for (int j = 0; j < n; j++)
            sum += s->cp[j];
        double left = d.u * sum;
        for (int j = 0; j < n; j++) {
            left -= s->cp[j];
            if (left < 0.0) {
                pick = j;
                break;
            }
        }
    }
    return s->t.ci[pick];   /* meaningful on thread 0 */
}

static __global__ void __launch_bounds__(SAMPLE_THREADS)
sample_rows(int32_t *ids, const float *logits, int64_t n_vocab, const struct st_draw *draws)
{
    __shared__ struct sample_smem s;
    const int64_t r = blockIdx.x;
    const float *lg = logits + r * n_vocab;
    const struct st_draw d = draws[r];
    int k = d.top_k <= 0 || d.top_k > ST_DRAW_MAX_K ? ST_DRAW_MAX_K : d.top_k;
    if (k > n_vocab)
        k = (int)n_vocab;
    if (d.temp <= 0.0f)
        k = 1;

    uint32_t T;
    int need;
    radix_select(&s.t, lg, n_vocab, k, &T, &need);
    collect(&s.t, lg, n_vocab, k, T, need);
    if (k == 1) {
        if (threadIdx.x == 0)
            ids[r] = s.t.ci[0];
        return;
    }
    sort_candidates(&s.t, k);
    const int id = draw_sorted(&s, k, d);
    if (threadIdx.x == 0)
        ids[r] = id;
}

extern "C" cudaError_t st_kern_sample(int32_t *ids, const float *logits, int64_t n_rows,
                                      int64_t n_vocab, const void *draws, cudaStream_t stream)
{
    if (n_rows < 1 || n_rows > 0x7fffffff || n_vocab < 1 || n_vocab > 0x7fffffff)
        return cudaErrorInvalidValue;
    KQ_LAUNCH((unsigned)n_rows, SAMPLE_THREADS, 0, stream, sample_rows)(
        ids, logits, n_vocab, static_cast<const struct st_draw *>(draws));
    return cudaGetLastError();
}
