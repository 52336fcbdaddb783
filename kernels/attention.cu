/* attention.cu -- causal GQA attention over the per-slot KV cache (F16,
 * or Q8_0 blocks: kv_q8.cuh; K and V each, as kq8 / vq8 say), batched
 * across slots (each row has its own slot and position): the KV
 * write and the split-context (flash-decoding) kernel with its merge. The
 * tiled prompt kernel is attention_tc.cu.
 *
 * Three launches, in stream order (a tiled launch replaces 2 and 3):
 *
 * 1. kv_write: one thread per element of the step's k and v rows (grid.x
 *    over n_kv*D, grid.y = row) converts to fp16 and stores at (slot[r],
 *    pos[r]); for a Q8_0 cache a warp quantizes one 32-block. All rows are
 *    written before any row attends, so the rows of one slot's prompt
 *    chunk see each other causally.
 *
 * 2. attn_split: one block of 4 warps per (row, KV head g, chunk s):
 *    blockIdx.x = row * n_kv + g, blockIdx.y = s. The row's own range
 *    0..pos is cut into n_split equal chunks, on the device
 *    (att_row_range): L = max(split_min, ceil((pos+1) / n_split) rounded
 *    up to 32), chunk s = [s*L, min((s+1)*L, pos+1)); n_used chunks hold
 *    positions and the blocks past them return at once. So every slot, at
 *    any depth, spreads over up to n_split blocks, and the grid never
 *    depends on pos. The gq query heads that share g (GQA) sit scaled in
 *    shared memory, and every K/V row is read once for all of them. Warps
 *    take rounds of cw positions (32; ATT_MIN_ROUND..32 in a chunk under
 *    128; warp w: t0 + cw*w, then + 4cw, ...): lane j scores
 *    position tb + j against every head (the whole K row, 16-byte loads, a
 *    batch of 8 issued before use; q read as a broadcast), the warp's max
 *    updates the online softmax (running max m, sum l, unnormalised
 *    accumulator) once per round and head, the weights go through shared
 *    memory, and the warp adds the V rows, 8 (4 at DPL 8) loaded before
 *    any is added, lane l holding elements [l*DPL, l*DPL + DPL) (DPL = 1,
 *    2, 4 or 8 halves: the warp reads the whole row). The 4 warps merge
 *    through shared memory. A row of one chunk (n_used 1) writes its
 *    normalised output here (and its q8_1 rows with a.q8); otherwise the
 *    block writes one partial (m, l, acc[D]) per (row, head, chunk) to
 *    'part'. A short row (n_pos <= a.short_max, decided here) is instead
 *    split by query head over the same blocks (attn_short_heads) and
 *    finished by them.
 *
 * 3. attn_merge: one block per (row, query head) merges the row's n_used
 *    partials (none for a one-chunk row: it returns):
 *    out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s, the max and
 *    the weights over threads, the columns with 4 independent sums; with
 *    a.q8 it also writes out's q8_1 rows (the wo matmul's input).
 *
 * The grid is sized from n_rows and n_split (not from positions, which
 * live on the device), so a captured CUDA graph stays valid at any
 * position.
 *
 * Memory layout: kc/vc f16 [n_kv*D, n_ctx, n_slots]: the row of (slot s,
 * position t, KV head g) starts at element ((s*n_ctx + t)*n_kv + g)*D; a
 * Q8_0 cache at uint16 unit ((s*n_ctx + t)*n_kv + g)*17*D/32 (kv_q8.cuh).
 * The kernels are templates on the two cache types (KQ, VQ: Q8_0), so the
 * F16 code is what it was.
 * q/out f32 [n_head*D, n_rows]; k/v f32 [n_kv*D, n_rows]. part: float
 * [n_rows][n_head][n_split][D + 2] = (m, l, acc...).
 */
#include <float.h>

#include "common.cuh"
#include "kv_q8.cuh"

#define ATT_WARPS 4
#define ATT_NEG (-1e30f)      /* "no score yet": finite so that e^(a - b) never sees inf - inf */
/* Smallest round of positions a warp takes (a multiple of 8, <= 32). 8
 * spreads a chunk under 128 positions over all 4 warps (at depth 32: four
 * warps of 8, not one of 32); it is 32 for now because that moves which
 * warp sums which positions, i.e. the rounding, and tests/unit/
 * test_cuda_model's small q4_k run sits at its near-tie limit (11 of 79 on
 * main, 12 with rounds of 8): to be enabled with a GPU measurement. */
#define ATT_MIN_ROUND 32
#define ATT_MERGE_THREADS 128
#define ATT_SPLIT_MAX 1024     /* n_split bound: attn_merge keeps a weight per chunk in smem */

/* KQ / VQ: that cache holds Q8_0 blocks (w % 32 == 0: a warp is one
 * block of the row, and it leaves or stays as a whole). */
template <bool KQ, bool VQ>
static __global__ void kv_write(uint16_t *kc, uint16_t *vc, const float *k, const float *v,
                                const int32_t *slot, const int32_t *pos, int64_t w,
                                int64_t n_ctx, int64_t n_slots, unsigned *err_flag)
{
    const int64_t r = blockIdx.y;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= w)
        return;
    /* all four loads before the check: one memory round trip, not two */
    const int64_t s = slot[r], p = pos[r];
    const float kx = k[r * w + i], vx = v[r * w + i];
    if (s < 0 || s >= n_slots || p < 0 || p >= n_ctx) {
        if (i == 0)
            kq_flag(err_flag, (s < 0 || s >= n_slots) ? ST_KF_BAD_SLOT : ST_KF_BAD_POS);
        return;
    }
    const size_t at = ((size_t)s * (size_t)n_ctx + (size_t)p) * (size_t)w + (size_t)i;
    /* the block of element i in a Q8_0 row: (row, i / 32) */
    const size_t bq = (at / 32) * KVQ8_UNITS;
    if (KQ)
        kvq8_store(kc + bq, kx, (int)(i % 32));
    else
        kc[at] = __half_as_ushort(__float2half_rn(kx));
    if (VQ)
        kvq8_store(vc + bq, vx, (int)(i % 32));
    else
        vc[at] = __half_as_ushort(__float2half_rn(vx));
}

/* DPL consecutive halves at p (aligned to DPL*2 bytes) as floats. */
template <int DPL>
static __device__ __forceinline__ void load_h(const uint16_t *p, float *f)
{
    if (DPL == 8) {
        uint4 u = *(const uint4 *)p;
        const uint32_t w[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
        for (int k = 0; k < 4; k++) {
            f[2 * k] = kq_h2f((uint16_t)(w[k] & 0xffff));
            f[2 * k + 1] = kq_h2f((uint16_t)(w[k] >> 16));
        }
    } else if (DPL == 4) {
        uint2 u = *(const uint2 *)p;
        f[0] = kq_h2f((uint16_t)(u.x & 0xffff));
        f[1] = kq_h2f((uint16_t)(u.x >> 16));
        f[2] = kq_h2f((uint16_t)(u.y & 0xffff));
        f[3] = kq_h2f((uint16_t)(u.y >> 16));
    } else if (DPL == 2) {
        uint32_t u = *(const uint32_t *)p;
        f[0] = kq_h2f((uint16_t)(u & 0xffff));
        f[1] = kq_h2f((uint16_t)(u >> 16));
    } else {
        f[0] = kq_h2f(p[0]);
    }
}

/* The split rule of a row, on the device (attn_split and attn_merge both
 * use it, so they agree): n_pos = pos + 1 positions for a valid row (0 for
 * a bad slot or position), chunk length len = max(split_min, ceil(n_pos /
 * n_split) rounded up to 32), and n_used = the chunks that hold positions
 * (at least 1: block 0 of an invalid row writes its zero output). */
struct att_range {
    int64_t n_pos, len;
    int n_used;
    bool is_short;      /* n_pos <= a.short_max: the short path (attn_short_heads) */
};

static __device__ __forceinline__ att_range att_row_range(const st_kern_attn &a, int64_t r)
{
    const int64_t s = a.slot[r], p = a.pos[r];
    const bool ok = s >= 0 && s < a.n_slots && p >= 0 && p < a.n_ctx;
    att_range x;
    x.n_pos = ok ? p + 1 : 0;
    x.len = ((x.n_pos + a.n_split - 1) / a.n_split + 31) / 32 * 32;
    x.len = max(x.len, (int64_t)a.split_min);
    x.n_used = x.n_pos > 0 ? (int)((x.n_pos + x.len - 1) / x.len) : 1;
    x.is_short = a.short_max > 0 && x.n_pos <= a.short_max;
    if (x.is_short)
        x.n_used = 1;   /* finished by attn_split's blocks: the merge skips the row */
    return x;
}

/* The q8_1 epilogue: element i of row r's output is v. Every lane of the
 * warp calls it with the 32 elements of one aligned 32-block (D % 32 == 0),
 * lane l element 32b + l, as quantize.cu does: the bytes
 * st_kern_quantize_q8_1 would write from the stored floats. */
static __device__ __forceinline__ void att_q8_store(const st_kern_attn &a, int64_t r, int64_t i,
                                                    float v)
{
    const int64_t W = (int64_t)a.n_head * a.head_dim;
    uint8_t *row = (uint8_t *)a.q8 + (size_t)r * a.q8_stride;
    const float amax = kq_warp_max(fabsf(v));
    const float sum = kq_warp_sum(v);
    const float dq = amax / 127.0f;
    ((int8_t *)row)[i] = (int8_t)(amax == 0.0f ? 0 : (int)roundf(v / dq));
    if (threadIdx.x % 32 == 0)
        ((float2 *)(row + W))[i / 32] = make_float2(dq, sum);
}

/* 8 halves (one uint4) times the 8 matching scaled query elements of every
 * head (shared memory, read as a broadcast; 16-byte aligned: attn_split
 * declares it as float4), added to sc. */
template <int GQM>
static __device__ __forceinline__ void att_dot8(float (&sc)[GQM], uint4 u, const float *sq, int D,
                                                int gq, int d)
{
    const uint32_t w[4] = { u.x, u.y, u.z, u.w };
    float kf[8];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        kf[2 * k] = kq_h2f((uint16_t)(w[k] & 0xffff));
        kf[2 * k + 1] = kq_h2f((uint16_t)(w[k] >> 16));
    }
#pragma unroll
    for (int h = 0; h < GQM; h++) {
        if (h < gq) {
            /* 16-byte broadcasts: h*D + d is a multiple of 8 (D % 8 == 0) */
            const float4 qa = *(const float4 *)(sq + h * D + d);
            const float4 qb = *(const float4 *)(sq + h * D + d + 4);
            const float qe[8] = { qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w };
#pragma unroll
            for (int e = 0; e < 8; e++)
                sc[h] += qe[e] * kf[e];
        }
    }
}

/* K row kr (D <= 32*DPL halves) dotted with the gq scaled query heads in sq
 * (f32 [gq][D]). D % 8 == 0: the row in 16-byte loads, a batch of up to 8
 * (128 bytes) issued before the first is used (the trip count is a
 * compile-time bound, so the loops unroll; the D guard is uniform). */
template <int DPL, int GQM>
static __device__ __forceinline__ void att_scores(float (&sc)[GQM],
                                                  const uint16_t *__restrict__ kr,
                                                  const float *sq, int D, int gq)
{
    constexpr int NU = (32 * DPL + 7) / 8;      /* uint4s in the longest row */
    constexpr int NB = NU < 8 ? NU : 8;         /* uint4s a batch */
#pragma unroll
    for (int h = 0; h < GQM; h++)
        sc[h] = 0.0f;
    if (D % 8 == 0) {
#pragma unroll
        for (int b = 0; b < NU; b += NB) {
            uint4 u[NB];
#pragma unroll
            for (int c = 0; c < NB; c++)
                if ((b + c) * 8 < D)
                    u[c] = *(const uint4 *)(kr + (b + c) * 8);
#pragma unroll
            for (int c = 0; c < NB; c++)
                if ((b + c) * 8 < D)
                    att_dot8<GQM>(sc, u[c], sq, D, gq, (b + c) * 8);
        }
    } else {
        for (int d = 0; d < D; d++) {
            const float kf = kq_h2f(kr[d]);
#pragma unroll
            for (int h = 0; h < GQM; h++)
                if (h < gq)
                    sc[h] += sq[h * D + d] * kf;
        }
    }
}

/* The same for a Q8_0 K row (D = 32*DPL: DPL blocks, kr at the head's
 * first unit): groups of G blocks loaded whole (17 aligned words, issued
 * before any is used), then per block the gq dot products of the 32 int8
 * with q, times the block's scale. */
template <int DPL, int GQM>
static __device__ __forceinline__ void att_scores_q8(float (&sc)[GQM],
                                                     const uint16_t *__restrict__ kr,
                                                     const float *sq, int gq)
{
    constexpr int G = DPL < 4 ? DPL : 4, NW = G == 1 ? 17 : 17 * G / 2, D = 32 * DPL;
#pragma unroll
    for (int h = 0; h < GQM; h++)
        sc[h] = 0.0f;
#pragma unroll
    for (int b0 = 0; b0 < DPL; b0 += G) {
        uint32_t u[NW];
        kvq8_load<G>(kr + b0 * KVQ8_UNITS, u);
#pragma unroll
        for (int b = 0; b < G; b++) {
            float part[GQM];
#pragma unroll
            for (int h = 0; h < GQM; h++)
                part[h] = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                float kf[4];
                kvq8_i8x4(kvq8_word<G>(u, KVQ8_UNITS * b + 1 + 2 * j), kf);
#pragma unroll
                for (int h = 0; h < GQM; h++) {
                    if (h < gq) {
                        const float4 qv = *(const float4 *)(sq + h * D + 32 * (b0 + b) + 4 * j);
                        part[h] += qv.x * kf[0] + qv.y * kf[1] + qv.z * kf[2] + qv.w * kf[3];
                    }
                }
            }
            const float d = kq_h2f((uint16_t)kvq8_unit<G>(u, KVQ8_UNITS * b));
#pragma unroll
            for (int h = 0; h < GQM; h++)
                sc[h] += d * part[h];
        }
    }
}

/* V rows a batch of the accumulation: all loaded, then all added. */
#define ATT_VB(DPL) ((DPL) >= 8 ? 4 : 8)

/* Positions a warp of the short path takes at once: their K and V rows are
 * all loaded before the first is used (4 at DPL 8, for registers). */
#define ATT_SHORT_NB(DPL) ((DPL) >= 8 ? 4 : 8)

/* The short path: row r has n_pos <= a.short_max positions. The row's
 * n_split blocks of KV head g each take query heads blockIdx.y, + n_split,
 * ... of the group (one head a block while n_split >= gq), so a short row
 * spreads over min(n_split, gq) * n_kv blocks, not n_kv single warps.
 * Per head the 4 warps deal the positions in runs of NB (warp w: NB*w,
 * then + 4*NB, ...); lane l holds q, K and V elements [l*DPL, l*DPL +
 * DPL), so each K and V row is one coalesced warp read and a score is a
 * warp sum that every lane ends with. All NB K and V rows of a run are
 * loaded before any is used (they come from L2: the row was just written
 * or is a few KB of a young slot). Each warp keeps its own online softmax
 * (m, l, acc) in registers; the 4 merge through shared memory as in
 * attn_split. No merge launch: the output (and its q8_1 rows) is written
 * here. sm_acc: ATT_WARPS * D floats. */
template <int DPL>
static __device__ __forceinline__ void attn_short_heads(const st_kern_attn &a, int64_t r, int g,
                                                        const att_range &rg, float *sm_acc,
                                                        float *sm_m, float *sm_l)
{
    constexpr int NB = ATT_SHORT_NB(DPL);
    const int D = a.head_dim, gq = a.n_head / a.n_kv;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool lane_on = lane * DPL < D;
    const size_t w = (size_t)a.n_kv * D;
    const size_t base = ((size_t)(rg.n_pos > 0 ? a.slot[r] : 0) * (size_t)a.n_ctx) * w +
                        (size_t)g * D + (size_t)(lane_on ? lane * DPL : 0);
    const uint16_t *__restrict__ kb = a.kc + base;
    const uint16_t *__restrict__ vb = a.vc + base;
    const int64_t n_pos = rg.n_pos;

    for (int hh = blockIdx.y; hh < gq; hh += a.n_split) {
        const int64_t head = r * a.n_head + (int64_t)g * gq + hh;   /* (row, query head) */
        float qr[DPL], acc[DPL], m = ATT_NEG, l = 0.0f;
#pragma unroll
        for (int d = 0; d < DPL; d++) {
            qr[d] = lane_on ? a.q[head * D + lane * DPL + d] * a.scale : 0.0f;
            acc[d] = 0.0f;
        }
        for (int64_t t0 = (int64_t)NB * warp; t0 < n_pos; t0 += (int64_t)NB * ATT_WARPS) {
            float kf[NB][DPL], vf[NB][DPL];
#pragma unroll
            for (int u = 0; u < NB; u++) {
                const size_t at = (size_t)min(t0 + u, n_pos - 1) * w;
                if (lane_on) {
                    load_h<DPL>(kb + at, kf[u]);
                    load_h<DPL>(vb + at, vf[u]);
                } else {
#pragma unroll
                    for (int d = 0; d < DPL; d++)
                        kf[u][d] = vf[u][d] = 0.0f;
                }
            }
            float sc[NB], mx = m;
#pragma unroll
            for (int u = 0; u < NB; u++) {
                float x = 0.0f;
#pragma unroll
                for (int d = 0; d < DPL; d++)
                    x += qr[d] * kf[u][d];
                sc[u] = kq_warp_sum(x);         /* the same value in every lane */
                if (t0 + u >= n_pos)
                    sc[u] = ATT_NEG;
                mx = fmaxf(mx, sc[u]);
            }
            const float corr = expf(m - mx);
            l *= corr;
#pragma unroll
            for (int d = 0; d < DPL; d++)
                acc[d] *= corr;
#pragma unroll
            for (int u = 0; u < NB; u++) {
                const float pw = t0 + u < n_pos ? expf(sc[u] - mx) : 0.0f;
                l += pw;
#pragma unroll
                for (int d = 0; d < DPL; d++)
                    acc[d] += pw * vf[u][d];
            }
            m = mx;
        }
        /* merge the warps (l is already the warp's whole sum) */
        if (lane == 0) {
            sm_m[warp] = m;
            sm_l[warp] = l;
        }
        if (lane_on) {
#pragma unroll
            for (int d = 0; d < DPL; d++)
                sm_acc[warp * D + lane * DPL + d] = acc[d];
        }
        __syncthreads();
        /* D % 32 == 0 with a.q8: the warps stay whole in this loop */
        for (int i = threadIdx.x; i < D; i += blockDim.x) {
            float mt = ATT_NEG;
#pragma unroll
            for (int k = 0; k < ATT_WARPS; k++)
                mt = fmaxf(mt, sm_m[k]);
            float v = 0.0f, ls = 0.0f;
#pragma unroll
            for (int k = 0; k < ATT_WARPS; k++) {
                const float e = expf(sm_m[k] - mt);
                ls += e * sm_l[k];
                v += e * sm_acc[k * D + i];
            }
            v = ls > 0.0f ? v / ls : 0.0f;
            a.out[head * D + i] = v;
            if (a.q8)
                att_q8_store(a, r, (head - r * a.n_head) * D + i, v);
        }
        __syncthreads();                        /* before the next head reuses sm_* */
    }
}

template <int DPL, int GQM, bool KQ, bool VQ>
static __global__ void __launch_bounds__(32 * ATT_WARPS) attn_split(const st_kern_attn a)
{
    __shared__ float sm_m[ATT_WARPS][GQM], sm_l[ATT_WARPS][GQM];
    __shared__ float sm_p[ATT_WARPS][GQM][32];  /* a warp's softmax weights, by lane */
    KQ_DYN_SMEM(float4, sm_dyn4);                /* (float4: 16-byte aligned) */
    float *sm_dyn = (float *)sm_dyn4;           /* q [gq][D]; later [ATT_WARPS][gq][D] */
    const int D = a.head_dim, gq = a.n_head / a.n_kv;
    const int64_t r = blockIdx.x / a.n_kv;
    const int g = (int)(blockIdx.x % a.n_kv);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool lane_on = lane * DPL < D;
    const att_range rg = att_row_range(a, r);
    if constexpr (!KQ && !VQ) {                 /* q8_0 caches: short_max is 0 */
        if (rg.is_short) {
            attn_short_heads<DPL>(a, r, g, rg, sm_dyn, &sm_m[0][0], &sm_l[0][0]);
            return;
        }
    }
    if ((int)blockIdx.y >= rg.n_used)
        return;                                 /* past the row's depth: nothing to do */
    const int64_t t0 = min((int64_t)blockIdx.y * rg.len, rg.n_pos);
    const int64_t t1 = min(t0 + rg.len, rg.n_pos);
    /* positions a warp takes per round: 32, or down to ATT_MIN_ROUND for a
     * short chunk so that all 4 warps get some (see ATT_MIN_ROUND) */
    int cw = 32;
    if (t1 - t0 < 32 * ATT_WARPS)
        cw = max(ATT_MIN_ROUND,
                 (int)((t1 - t0 + 8 * ATT_WARPS - 1) / (8 * ATT_WARPS)) * 8);

    for (int i = threadIdx.x; i < gq * D; i += blockDim.x)
        sm_dyn[i] = a.q[(r * a.n_head + (int64_t)g * gq) * D + i] * a.scale;
    __syncthreads();

    float acc[GQM][DPL], m[GQM], l[GQM];        /* l: this lane's share of the sum */
#pragma unroll
    for (int h = 0; h < GQM; h++) {
        m[h] = ATT_NEG;
        l[h] = 0.0f;
#pragma unroll
        for (int d = 0; d < DPL; d++)
            acc[h][d] = 0.0f;
    }
    /* cache rows in uint16 units; a Q8_0 V lane reads DPL elements of
     * block vblk at offset vo (D = 32*DPL: every lane is on) */
    const size_t wk = kv_row_units(KQ, a.n_kv, D), wv = kv_row_units(VQ, a.n_kv, D);
    const size_t s0 = (size_t)(rg.n_pos > 0 ? a.slot[r] : 0) * (size_t)a.n_ctx;
    const uint16_t *__restrict__ kb = a.kc + s0 * wk + kv_head_units(KQ, g, D);
    const int vblk = lane * DPL / 32, vo = lane * DPL % 32;
    const uint16_t *__restrict__ vb = a.vc + s0 * wv + kv_head_units(VQ, g, D) +
                                      (VQ ? (size_t)vblk * KVQ8_UNITS : (size_t)lane * DPL);
    /* cw positions per warp and round: lane j scores position tb + j over
     * the whole head, then the warp adds the cw V rows, lane l its DPL
     * elements, ATT_VB rows a batch (rows past the chunk are re-reads of
     * its last row with weight 0) */
    for (int64_t tb = t0 + (int64_t)cw * warp; tb < t1; tb += (int64_t)cw * ATT_WARPS) {
        const int nv = (int)min((int64_t)cw, t1 - tb);
        float sc[GQM];
        if (lane < nv) {
            if constexpr (KQ)
                att_scores_q8<DPL, GQM>(sc, kb + (size_t)(tb + lane) * wk, sm_dyn, gq);
            else
                att_scores<DPL, GQM>(sc, kb + (size_t)(tb + lane) * wk, sm_dyn, D, gq);
        } else {
#pragma unroll
            for (int h = 0; h < GQM; h++)
                sc[h] = ATT_NEG;
        }
#pragma unroll
        for (int h = 0; h < GQM; h++) {
            if (h < gq) {
                const float x = lane < nv ? sc[h] : ATT_NEG;
                const float mn = fmaxf(m[h], kq_warp_max(x));
                const float corr = expf(m[h] - mn), pw = lane < nv ? expf(x - mn) : 0.0f;
                l[h] = l[h] * corr + pw;
                sm_p[warp][h][lane] = pw;
#pragma unroll
                for (int d = 0; d < DPL; d++)
                    acc[h][d] *= corr;
                m[h] = mn;
            }
        }
        __syncwarp();
        if (lane_on) {
            constexpr int VB = ATT_VB(DPL);
            for (int j0 = 0; j0 < nv; j0 += VB) {
                float vf[VB][DPL];
#pragma unroll
                for (int u = 0; u < VB; u++) {
                    const uint16_t *vr = vb + (size_t)min(tb + j0 + u, t1 - 1) * wv;
                    if constexpr (VQ)
                        kvq8_elems<DPL>(vr, vo, vf[u]);
                    else
                        load_h<DPL>(vr, vf[u]);
                }
#pragma unroll
                for (int u = 0; u < VB; u++) {
#pragma unroll
                    for (int h = 0; h < GQM; h++) {
                        if (h < gq) {
                            const float pw = sm_p[warp][h][j0 + u];
#pragma unroll
                            for (int d = 0; d < DPL; d++)
                                acc[h][d] += pw * vf[u][d];
                        }
                    }
                }
            }
        }
        __syncwarp();
    }
#pragma unroll
    for (int h = 0; h < GQM; h++)
        l[h] = kq_warp_sum(l[h]);
    __syncthreads();                            /* q is read: sm_dyn takes the partials */
    /* merge the warps: each publishes (m, l, acc), then all threads combine */
#pragma unroll
    for (int h = 0; h < GQM; h++) {
        if (h < gq) {
            if (lane == 0) {
                sm_m[warp][h] = m[h];
                sm_l[warp][h] = l[h];
            }
            if (lane_on) {
#pragma unroll
                for (int d = 0; d < DPL; d++)
                    sm_dyn[((size_t)warp * gq + h) * D + lane * DPL + d] = acc[h][d];
            }
        }
    }
    __syncthreads();
    const int64_t head0 = r * a.n_head + (int64_t)g * gq;     /* the group's first q head */
    if (rg.n_used == 1) {
        /* the row's only chunk: write the normalised output (and its q8_1
         * rows), attn_merge skips the row. gq*D % 32 == 0 with a.q8, so the
         * warps stay whole in this loop. */
        for (int i = threadIdx.x; i < gq * D; i += blockDim.x) {
            const int h = i / D, c = i % D;
            float mx = ATT_NEG;
#pragma unroll
            for (int k = 0; k < ATT_WARPS; k++)
                mx = fmaxf(mx, sm_m[k][h]);
            float v = 0.0f, ls = 0.0f;
#pragma unroll
            for (int k = 0; k < ATT_WARPS; k++) {
                const float e = expf(sm_m[k][h] - mx);
                ls += e * sm_l[k][h];
                v += e * sm_dyn[((size_t)k * gq + h) * D + c];
            }
            v = ls > 0.0f ? v / ls : 0.0f;
            a.out[head0 * D + i] = v;
            if (a.q8)
                att_q8_store(a, r, (int64_t)g * gq * D + i, v);
        }
        return;
    }
    const int nsplit = a.n_split;
    for (int i = threadIdx.x; i < gq * (D + 2); i += blockDim.x) {
        const int h = i / (D + 2), c = i % (D + 2);
        float mx = ATT_NEG;
        for (int k = 0; k < ATT_WARPS; k++)
            mx = fmaxf(mx, sm_m[k][h]);
        float v = 0.0f;
        for (int k = 0; k < ATT_WARPS; k++) {
            const float e = expf(sm_m[k][h] - mx);
            v += e * (c == 0 ? 0.0f : c == 1 ? sm_l[k][h]
                                             : sm_dyn[((size_t)k * gq + h) * D + (c - 2)]);
        }
        if (c == 0)
            v = mx;
        a.part[((head0 + h) * nsplit + blockIdx.y) * (D + 2) + c] = v;
    }
}

/* One block of ATT_MERGE_THREADS per (row, query head); rows of one chunk
 * return at once (attn_split wrote them). The row's n_used partials only:
 * threads over chunks take the maximum and the weights e^(m_s - M) (kept
 * in shared memory) with block reductions, then thread d sums chunk
 * column d, four independent sums so that the loads overlap. */
static __global__ void __launch_bounds__(ATT_MERGE_THREADS) attn_merge(const st_kern_attn a)
{
    __shared__ float sw[ATT_SPLIT_MAX];         /* m_s, then e^(m_s - M) */
    __shared__ float red_m[ATT_MERGE_THREADS / 32], red_l[ATT_MERGE_THREADS / 32];
    const int D = a.head_dim;
    const int64_t rh = blockIdx.x;              /* row * n_head + head */
    const int64_t r = rh / a.n_head;
    const att_range rg = att_row_range(a, r);
    if (rg.n_used <= 1)
        return;
    const int ns = rg.n_used, tid = threadIdx.x;
    const int nw = ATT_MERGE_THREADS / 32;
    const size_t st = (size_t)D + 2;
    const float *__restrict__ pp = a.part + (size_t)rh * a.n_split * st;

    float mx = ATT_NEG;
    for (int s = tid; s < ns; s += ATT_MERGE_THREADS) {
        sw[s] = pp[s * st];
        mx = fmaxf(mx, sw[s]);
    }
    mx = kq_warp_max(mx);
    if (tid % 32 == 0)
        red_m[tid / 32] = mx;
    __syncthreads();
    mx = red_m[0];
    for (int k = 1; k < nw; k++)
        mx = fmaxf(mx, red_m[k]);
    float ls = 0.0f;
    for (int s = tid; s < ns; s += ATT_MERGE_THREADS) {
        const float e = expf(sw[s] - mx);
        sw[s] = e;
        ls += e * pp[s * st + 1];
    }
    ls = kq_warp_sum(ls);
    if (tid % 32 == 0)
        red_l[tid / 32] = ls;
    __syncthreads();                            /* also publishes sw */
    ls = 0.0f;
    for (int k = 0; k < nw; k++)
        ls += red_l[k];

    for (int d = tid; d < D; d += ATT_MERGE_THREADS) {
        const float *__restrict__ col = pp + 2 + d;
        float v0 = 0.0f, v1 = 0.0f, v2 = 0.0f, v3 = 0.0f;
        int s = 0;
        for (; s + 4 <= ns; s += 4) {
            const float x0 = col[s * st], x1 = col[(s + 1) * st];
            const float x2 = col[(s + 2) * st], x3 = col[(s + 3) * st];
            v0 += sw[s] * x0;
            v1 += sw[s + 1] * x1;
            v2 += sw[s + 2] * x2;
            v3 += sw[s + 3] * x3;
        }
        for (; s < ns; s++)
            v0 += sw[s] * col[s * st];
        float v = (v0 + v1) + (v2 + v3);
        v = ls > 0.0f ? v / ls : 0.0f;
        a.out[rh * D + d] = v;
        if (a.q8)
            att_q8_store(a, r, (rh % a.n_head) * D + d, v);
    }
}

static int att_dpl(int32_t head_dim)
{
    int dpl = 1;
    while (dpl * 32 < head_dim)
        dpl *= 2;
    return dpl;
}

static int att_gqm(int32_t group)
{
    int g = 1;
    while (g < group)
        g *= 2;
    return g;
}

extern "C" bool st_kern_attn_supported(int32_t head_dim, int32_t group)
{
    if (head_dim < 1 || head_dim > 256 || group < 1 || group > 16)
        return false;
    int dpl = att_dpl(head_dim);
    return head_dim % dpl == 0 && dpl * att_gqm(group) <= 64 &&
           (size_t)ATT_WARPS * group * head_dim * sizeof(float) <= 32 * 1024;
}

extern "C" bool st_kern_attn_q8_supported(int32_t head_dim)
{
    return head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256;
}

extern "C" size_t st_kern_attn_scratch_bytes(int64_t n_rows, int32_t n_head, int32_t head_dim,
                                             int32_t n_split)
{
    return (size_t)n_rows * (size_t)n_head * (size_t)n_split * (size_t)(head_dim + 2) *
           sizeof(float);
}

template <int DPL, bool KQ, bool VQ>
static void attn_launch_dpl(const st_kern_attn &a, int gqm, dim3 grid, size_t smem,
                            cudaStream_t s)
{
    switch (gqm) {
    case 1: KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 1, KQ, VQ>)(a); break;
    case 2: KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 2, KQ, VQ>)(a); break;
    case 4: KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 4, KQ, VQ>)(a); break;
    case 8: KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 8, KQ, VQ>)(a); break;
    default:
        if constexpr (DPL <= 4)       /* DPL 8 with 16 heads per group is unsupported */
            KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 16, KQ, VQ>)(a);
        break;
    }
}

/* The cache types as template arguments: F16 code unchanged by Q8_0's. */
template <int DPL>
static void attn_launch_kv(const st_kern_attn &a, int gqm, dim3 grid, size_t smem,
                           cudaStream_t s)
{
    if (a.kq8 && a.vq8)
        attn_launch_dpl<DPL, true, true>(a, gqm, grid, smem, s);
    else if (a.kq8)
        attn_launch_dpl<DPL, true, false>(a, gqm, grid, smem, s);
    else if (a.vq8)
        attn_launch_dpl<DPL, false, true>(a, gqm, grid, smem, s);
    else
        attn_launch_dpl<DPL, false, false>(a, gqm, grid, smem, s);
}

static void kv_write_launch(const st_kern_attn &a, int64_t r0, int64_t nr, cudaStream_t s)
{
    const int64_t w = (int64_t)a.n_kv * a.head_dim;
    const dim3 grid(kq_cdiv(w, 256), (unsigned)nr);
    const float *k = a.k + r0 * w, *v = a.v + r0 * w;
    const int32_t *sl = a.slot + r0, *ps = a.pos + r0;
    if (a.kq8 && a.vq8)
        KQ_LAUNCH(grid, 256, 0, s, kv_write<true, true>)(a.kc, a.vc, k, v, sl, ps, w, a.n_ctx,
                                                          a.n_slots, a.err_flag);
    else if (a.kq8)
        KQ_LAUNCH(grid, 256, 0, s, kv_write<true, false>)(a.kc, a.vc, k, v, sl, ps, w, a.n_ctx,
                                                           a.n_slots, a.err_flag);
    else if (a.vq8)
        KQ_LAUNCH(grid, 256, 0, s, kv_write<false, true>)(a.kc, a.vc, k, v, sl, ps, w, a.n_ctx,
                                                           a.n_slots, a.err_flag);
    else
        KQ_LAUNCH(grid, 256, 0, s, kv_write<false, false>)(a.kc, a.vc, k, v, sl, ps, w,
                                                            a.n_ctx, a.n_slots, a.err_flag);
}

cudaError_t st_kern_attn_tiled(const st_kern_attn &a, cudaStream_t stream);   /* attention_tc.cu */

extern "C" cudaError_t st_kern_attention(const struct st_kern_attn *a_in, cudaStream_t stream)
{
    /* the short path (attn_short_heads) reads f16 caches only */
    st_kern_attn a_copy = *a_in;
    if (a_copy.kq8 || a_copy.vq8)
        a_copy.short_max = 0;
    const struct st_kern_attn *a = &a_copy;
    const int32_t group = a->n_kv > 0 ? a->n_head / a->n_kv : 0;
    if (!st_kern_attn_supported(a->head_dim, group) || a->n_rows < 1 ||
        a->n_rows * a->n_kv > 0x7fffffff || a->n_rows * a->n_head > 0x7fffffff ||
        (!a->tiled && (a->n_split < 1 || a->n_split > ATT_SPLIT_MAX || a->split_min < 1 ||
                       a->short_max < 0)) ||
        (a->q8 && (a->head_dim % 32 != 0 ||
                   a->q8_stride < st_kern_q8_1_row_bytes((int64_t)a->n_head * a->head_dim))) ||
        ((a->kq8 || a->vq8) && !st_kern_attn_q8_supported(a->head_dim)))
        return cudaErrorInvalidValue;
    for (int64_t r0 = 0; r0 < a->n_rows; r0 += 65535) {    /* grid.y <= 65535 */
        const int64_t nr = a->n_rows - r0 < 65535 ? a->n_rows - r0 : 65535;
        kv_write_launch(*a, r0, nr, stream);
    }
    if (a->tiled)
        return st_kern_attn_tiled(*a, stream);

    const int dpl = att_dpl(a->head_dim), gqm = att_gqm(group);
    const dim3 grid((unsigned)(a->n_rows * a->n_kv), (unsigned)a->n_split);
    const size_t smem = (size_t)ATT_WARPS * group * a->head_dim * sizeof(float);
    switch (dpl) {
    case 1: attn_launch_kv<1>(*a, gqm, grid, smem, stream); break;
    case 2: attn_launch_kv<2>(*a, gqm, grid, smem, stream); break;
    case 4: attn_launch_kv<4>(*a, gqm, grid, smem, stream); break;
    default: attn_launch_kv<8>(*a, gqm, grid, smem, stream); break;
    }
    KQ_LAUNCH((unsigned)(a->n_rows * a->n_head), ATT_MERGE_THREADS, 0, stream, attn_merge)(*a);
    return cudaGetLastError();
}
