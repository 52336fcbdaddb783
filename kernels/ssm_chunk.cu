/* ssm_chunk.cu -- the delta rule's chunked form for prompt reads: a run of
 * >= DC_ROWS rows of one slot is taken DC_ROWS rows at a time, the rows of
 * a chunk in parallel, the state carried from chunk to chunk; shorter runs
 * (decode rows in the same step) take the recurrent step of ssm.cuh.
 *
 * The math is the CPU's (cpu_delta_chunk.c): per chunk of L rows with
 * state M0, G_t the running decay (kept as its log, a sequential sum from
 * the chunk's start, so every ratio G_t / G_s = exp(lg_t - lg_s) <= 1 and a
 * hard decay underflows to 0 instead of dividing by it):
 *   d_t = u_t + sum_{s<t} A_ts d_s,  u_t = b_t (v_t - G_t M0 k_t),
 *   A_ts = -b_t (G_t / G_s) (k_t . k_s)       (unit lower triangular solve),
 *   o_t = (G_t M0 q_t + sum_{s<=t} (G_t / G_s) (q_t . k_s) d_s) / sqrt(D),
 *   M   = G_{L-1} M0 + sum_s (G_{L-1} / G_s) d_s k_s^T.
 *
 * Work split: the grid and the state rows are the recurrent kernel's (a
 * block per (v head, 16 rows of M); each warp holds 4 rows of M in
 * registers, lane l the columns l + 32c). Per chunk the block puts the
 * chunk's unit q and k in shared memory (rows padded to D+1 floats, so
 * lane t reading row t hits bank t) with the log decays and betas, then
 * builds A and W = (G_t/G_s)(q_t . k_s), lane t owning chunk row t. For its
 * rows j a warp gets (M0 k_t)_j and (M0 q_t)_j on lane t (M0's columns
 * broadcast by shuffles), runs the triangular solve as L shuffle+FMA
 * steps (lane t folds in d_s as soon as lane s has it), the outputs the
 * same way, and updates its rows of M. Two block barriers per chunk, no
 * atomics. A and W are computed by each of the D/16 blocks of a head: the
 * price of keeping the state split as in the recurrence.
 *
 * DC_ROWS = 32 (a warp's width): one lane per chunk row makes the solve a
 * shuffle chain; shared memory is 41 KiB at D = 128, under the 48 KiB a
 * block gets without opt-in (64 rows would need 74 KiB); and the CPU
 * chunks by 32 too, so both cut a run at the same rows (closer rounding).
 * D > 128 (the tiles would not fit) keeps the recurrence.
 */
#include "ssm.cuh"

template <int NT>
struct dc_smem {
    float q[DC_ROWS][NT * 32 + 1], k[DC_ROWS][NT * 32 + 1];   /* unit q, k; 0 past D */
    float a[DC_ROWS][DC_ROWS + 1], w[DC_ROWS][DC_ROWS + 1];   /* A, W (0 outside) */
    float lg[DC_ROWS], b[DC_ROWS];                            /* log G_t, b_t */
};

/* Rows from r on (at most DC_ROWS) that continue row r's slot s: the same
 * slot, no restart after r. The same answer in every warp. */
static __device__ __forceinline__ int dc_span(const struct st_kern_delta_net &p, int64_t r,
                                              int64_t s, int lane, bool flag)
{
    const int64_t e = r + lane;
    bool ok = e < p.n;
    if (ok && lane > 0)
        ok = ssm_slot(p.slot, e, p.n_slots, flag ? p.err_flag : NULL) == s && p.pos[e] != 0;
    const unsigned m = __ballot_sync(0xffffffffu, ok);
    return m == 0xffffffffu ? DC_ROWS : __ffs((int)~m) - 1;
}

/* Rows r0 .. r0+L-1 (one slot, L <= DC_ROWS) of v head h on the warp's
 * state rows m (rows: whether the warp has any; every warp joins the
 * barriers). */
template <int NT>
static __device__ void dc_chunk(const struct st_kern_delta_net &p, dc_smem<NT> &sm,
                                float (&m)[DN_RPW][NT], int64_t r0, int L, int h, int j0,
                                bool rows)
{
    const int g = dn_qk_head(p, h), d = p.head_dim;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t c3 = (int64_t)(2 * p.n_k_heads + p.n_v_heads) * d;

    __syncthreads();   /* the previous chunk is done reading sm */
    for (int t = warp; t < L; t += DN_WARPS) {
        const float *row = p.qkv + (r0 + t) * c3;
        float u[NT];
        dn_unit<NT>(u, row + (int64_t)g * d, d, lane, p.eps);
KQ_UNROLL
        for (int c = 0; c < NT; c++)
            sm.q[t][lane + 32 * c] = u[c];
        dn_unit<NT>(u, row + (int64_t)(p.n_k_heads + g) * d, d, lane, p.eps);
KQ_UNROLL
        for (int c = 0; c < NT; c++)
            sm.k[t][lane + 32 * c] = u[c];
    }
    if (warp == 0) {
        /* lane t: row t's log decay and beta; the running sum in row order
         * like the CPU's */
        const float ld = lane < L ? dn_log_decay(p, r0 + lane, h) : 0.0f;
        if (lane < L)
            sm.b[lane] = ssm_sigmoid(p.beta[(r0 + lane) * p.n_v_heads + h]);
        float sum = 0.0f;
        for (int t = 0; t < L; t++) {
            sum += __shfl_sync(0xffffffffu, ld, t);
            if (lane == t)
                sm.lg[t] = sum;
        }
    }
    __syncthreads();

    /* A and W, column s per warp in turn, row t = lane */
    const int t = lane;
    const bool live = t < L;
    const float lgt = live ? sm.lg[t] : 0.0f, bt = live ? sm.b[t] : 0.0f;
    for (int s = warp; s < DC_ROWS; s += DN_WARPS) {
        float kk = 0.0f, qk = 0.0f, ratio = 0.0f;
        if (live && s <= t) {
            for (int i = 0; i < d; i++) {
                const float ks = sm.k[s][i];
                kk += sm.k[t][i] * ks;
                qk += sm.q[t][i] * ks;
            }
            ratio = expf(lgt - sm.lg[s]);
        }
        sm.a[t][s] = s < t ? -bt * ratio * kk : 0.0f;
        sm.w[t][s] = ratio * qk;
    }
    /* (M0 k_t)_j and (M0 q_t)_j on lane t; M0's column i from lane i % 32 */
    float mk[DN_RPW], mq[DN_RPW];
KQ_UNROLL
    for (int jj = 0; jj < DN_RPW; jj++)
        mk[jj] = mq[jj] = 0.0f;
    if (rows) {
KQ_UNROLL
        for (int c = 0; c < NT; c++)
            for (int src = 0; src < 32; src++) {
                const float kt = sm.k[t][src + 32 * c], qt = sm.q[t][src + 32 * c];
KQ_UNROLL
                for (int jj = 0; jj < DN_RPW; jj++) {
                    const float mv = __shfl_sync(0xffffffffu, m[jj][c], src);
                    mk[jj] += mv * kt;
                    mq[jj] += mv * qt;
                }
            }
    }
    __syncthreads();   /* A and W are whole */
    if (!rows)
        return;

    const float lgl = sm.lg[L - 1], gl = expf(lgl), oscale = 1.0f / sqrtf((float)d);
    const float gt = live ? expf(lgt) : 0.0f, tail = live ? expf(lgl - lgt) : 0.0f;
KQ_UNROLL
    for (int jj = 0; jj < DN_RPW; jj++) {
        const int j = j0 + jj;
        if (j >= d)   /* uniform across the warp */
            break;
        /* the solve: at step s lane s holds d_s whole; later lanes fold it in */
        float dv = live ? bt * (p.qkv[(r0 + t) * c3 + (int64_t)(2 * p.n_k_heads + h) * d + j] -
                                gt * mk[jj]) : 0.0f;
        for (int s = 0; s + 1 < L; s++)
            dv += sm.a[t][s] * __shfl_sync(0xffffffffu, dv, s);
        float o = gt * mq[jj];
        for (int s = 0; s < L; s++)
            o += sm.w[t][s] * __shfl_sync(0xffffffffu, dv, s);
        if (live)
            p.out[((r0 + t) * p.n_v_heads + h) * d + j] = o * oscale;
        /* M_j = G_{L-1} M0_j + sum_s (G_{L-1}/G_s) d_s[j] k_s */
        const float ds = dv * tail;
KQ_UNROLL
        for (int c = 0; c < NT; c++)
            m[jj][c] *= gl;
        for (int s = 0; s < L; s++) {
            const float x = __shfl_sync(0xffffffffu, ds, s);
KQ_UNROLL
            for (int c = 0; c < NT; c++)
                m[jj][c] += x * sm.k[s][lane + 32 * c];
        }
    }
}

template <int NT>
static __global__ void __launch_bounds__(DN_WARPS * 32)
delta_net_chunk_f32(struct st_kern_delta_net p)
{
    __shared__ dc_smem<NT> sm;
    const int h = blockIdx.x, lane = threadIdx.x % 32, d = p.head_dim;
    const int j0 = ((int)blockIdx.y * DN_WARPS + (int)threadIdx.x / 32) * DN_RPW;
    const bool rows = j0 < d;   /* this warp holds state rows */
    const int64_t mat = (int64_t)d * d;
    float m[DN_RPW][NT];
    float *cur = NULL;   /* the matrix m was loaded from */
    int64_t prev = -1;   /* the slot of the row before */
    bool chunking = false;   /* that row was chunked (its run is long) */

    dn_zero<NT>(m);
    for (int64_t r = 0; r < p.n;) {
        const int64_t s = ssm_slot(p.slot, r, p.n_slots, threadIdx.x == 0 ? p.err_flag : NULL);
        float *ms = p.state + (s * p.n_v_heads + h) * mat;
        if (ms != cur) {
            if (cur && rows)
                dn_rows<NT, true>(m, cur, j0, d, lane);
            if (rows)
                dn_rows<NT, false>(m, ms, j0, d, lane);
            cur = ms;
        }
        const bool restart = p.pos[r] == 0;
        if (restart)
            dn_zero<NT>(m);
        const int span = dc_span(p, r, s, lane, threadIdx.x < 32);
        /* a run's first row decides for the whole run, as the CPU does */
        if (restart || s != prev || !chunking)
            chunking = span == DC_ROWS;
        prev = s;
        if (chunking) {
            dc_chunk<NT>(p, sm, m, r, span, h, j0, rows);
            r += span;
        } else {
            if (rows)
                dn_step<NT>(p, m, r, h, j0, lane);
            r++;
        }
    }
    if (cur && rows)
        dn_rows<NT, true>(m, cur, j0, d, lane);
}

cudaError_t dn_launch_chunked(const struct st_kern_delta_net &p, dim3 grid, cudaStream_t stream)
{
    if (p.head_dim <= 32)
        KQ_LAUNCH(grid, DN_WARPS * 32, 0, stream, delta_net_chunk_f32<1>)(p);
    else if (p.head_dim <= 64)
        KQ_LAUNCH(grid, DN_WARPS * 32, 0, stream, delta_net_chunk_f32<2>)(p);
    else if (p.head_dim <= 128)
        KQ_LAUNCH(grid, DN_WARPS * 32, 0, stream, delta_net_chunk_f32<4>)(p);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
