/* ssm.cu -- the recurrent ops of hybrid models (strata/backend_ssm.h):
 * Gated DeltaNet's short conv1d and delta rule, and the sigmoid gate.
 *
 * The per-slot state ties each row to the rows before it, so both
 * recurrent kernels walk the rows of the step in order and split the work
 * only where it is independent (the CPU backend's cpu_ssm.c does the same):
 *
 * conv: one thread per channel; the slot's K-1 stored inputs of that
 * channel live in 'state' (coalesced across channels).
 *
 * delta rule: row j of a head's D x D matrix M only ever needs its own
 * values, the row's q and k, and v[j]; so each warp owns DN_RPW rows of
 * one (head, slot) matrix and keeps them in registers while consecutive
 * rows stay in the same slot (loaded at a slot change, stored back when it
 * changes again and at the end). A lane holds the columns lane + 32t (t <
 * NT, D <= 32*NT <= 256), so loads and stores are coalesced, and the two
 * dot products per row are warp sums. Every warp normalizes q and k
 * itself (two more warp sums per row) instead of sharing them through
 * shared memory: no block barriers at all. Grid: x = v head, y = groups of
 * DN_WARPS*DN_RPW matrix rows. That is the decode path; a step of >= 32
 * rows at D <= 128 takes ssm_chunk.cu's kernel, which reads prompts in
 * the chunked form (the per-warp parts of both are in ssm.cuh).
 *
 * Slots come from device memory (graph capture: nothing is read on the
 * host); one outside [0, n_slots) is clamped and flagged ST_KF_BAD_SLOT.
 * Sums are float, in a tree order where the CPU's are sequential: results
 * agree to about 1e-6 relative.
 */
#include "ssm.cuh"

#define CONV_THREADS 256

/* ---- conv1d ------------------------------------------------------------ */

static __global__ void ssm_conv_f32(float *out, float *state, const float *x, const float *w,
                                    const int32_t *slot, const int32_t *pos, int64_t C, int K,
                                    int64_t n, int64_t n_slots, unsigned *err_flag)
{
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C)
        return;
    const float *wc = w + c * K;
    for (int64_t r = 0; r < n; r++) {
        float *st = state + ssm_slot(slot, r, n_slots, c == 0 ? err_flag : NULL) * (K - 1) * C;
        if (pos[r] == 0)
            for (int t = 0; t < K - 1; t++)
                st[t * C + c] = 0.0f;
        const float xv = x[r * C + c];
        float acc = wc[K - 1] * xv;   /* the CPU's order: x first, then the window */
        for (int t = 0; t < K - 1; t++)
            acc += wc[t] * st[t * C + c];
        out[r * C + c] = acc / (1.0f + expf(-acc));
        for (int t = 0; t + 1 < K - 1; t++)
            st[t * C + c] = st[(t + 1) * C + c];
        st[(K - 2) * C + c] = xv;
    }
}

extern "C" cudaError_t st_kern_ssm_conv(float *out, float *state, const float *x,
                                        const float *w, const int32_t *slot, const int32_t *pos,
                                        int64_t C, int K, int64_t n, int64_t n_slots,
                                        unsigned *err_flag, cudaStream_t stream)
{
    if (C < 1 || K < 2 || n < 1 || n_slots < 1)
        return cudaErrorInvalidValue;
    KQ_LAUNCH(kq_cdiv(C, CONV_THREADS), CONV_THREADS, 0, stream, ssm_conv_f32)(
        out, state, x, w, slot, pos, C, K, n, n_slots, err_flag);
    return cudaGetLastError();
}

/* ---- delta rule -------------------------------------------------------- */

template <int NT>
static __global__ void __launch_bounds__(DN_WARPS * 32) delta_net_f32(struct st_kern_delta_net p)
{
    const int h = blockIdx.x, lane = threadIdx.x % 32, d = p.head_dim;
    const int j0 = ((int)blockIdx.y * DN_WARPS + (int)threadIdx.x / 32) * DN_RPW;
    if (j0 >= d)   /* the whole warp leaves together */
        return;
    const int64_t mat = (int64_t)d * d;
    float m[DN_RPW][NT];
    float *cur = NULL;   /* the matrix m was loaded from */

    for (int64_t r = 0; r < p.n; r++) {
        const int64_t s = ssm_slot(p.slot, r, p.n_slots, lane == 0 ? p.err_flag : NULL);
        float *ms = p.state + (s * p.n_v_heads + h) * mat;
        if (ms != cur) {
            if (cur)
                dn_rows<NT, true>(m, cur, j0, d, lane);
            dn_rows<NT, false>(m, ms, j0, d, lane);
            cur = ms;
        }
        if (p.pos[r] == 0)
            dn_zero<NT>(m);
        dn_step<NT>(p, m, r, h, j0, lane);
    }
    if (cur)
        dn_rows<NT, true>(m, cur, j0, d, lane);
}

extern "C" cudaError_t st_kern_delta_net(const struct st_kern_delta_net *a, cudaStream_t stream)
{
    if (a->n < 1 || a->n_slots < 1 || a->n_k_heads < 1 || a->n_v_heads < 1 ||
        a->n_v_heads % a->n_k_heads != 0 || a->head_dim < 1 || a->head_dim > 256)
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)a->n_v_heads, kq_cdiv(a->head_dim, DN_WARPS * DN_RPW));
    const int d = a->head_dim;
    /* a prompt read (a run of DC_ROWS rows of one slot) needs that many
     * rows: decode steps keep the plain recurrence without looking */
    if (a->n >= DC_ROWS && d <= 128 && !a->recurrent)
        return dn_launch_chunked(*a, grid, stream);
    if (d <= 32)
        KQ_LAUNCH(grid, DN_WARPS * 32, 0, stream, delta_net_f32<1>)(*a);
    else if (d <= 64)
        KQ_LAUNCH(grid, DN_WARPS * 32, 0, stream, delta_net_f32<2>)(*a);
    else if (d <= 128)
        KQ_LAUNCH(grid, DN_WARPS * 32, 0, stream, delta_net_f32<4>)(*a);
    else
        KQ_LAUNCH(grid, DN_WARPS * 32, 0, stream, delta_net_f32<8>)(*a);
    return cudaGetLastError();
}

/* ---- sigmoid gate ------------------------------------------------------ */

static __global__ void sigmoid_mul_f32(float *out, const float *x, const float *g, int64_t C,
                                       int64_t cg, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / C;
        out[i] = x[i] * ssm_sigmoid(g[cg == 1 ? r : i]);   /* cg == C: g has x's layout */
    }
}

extern "C" cudaError_t st_kern_sigmoid_mul(float *out, const float *x, const float *g,
                                           int64_t C, int64_t cg, int64_t n_rows,
                                           cudaStream_t stream)
{
    if (C < 1 || n_rows < 1 || (cg != 1 && cg != C))
        return cudaErrorInvalidValue;
    const int64_t n = C * n_rows;
    unsigned blocks = kq_cdiv(n, 256);
    blocks = blocks < 65535 ? blocks : 65535;
    KQ_LAUNCH(blocks, 256, 0, stream, sigmoid_mul_f32)(out, x, g, C, cg, n);
    return cudaGetLastError();
}
