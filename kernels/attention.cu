/* attention.cu -- causal GQA attention over the per-slot F16 KV cache,
 * batched across slots (each row has its own slot and position): the KV
 * write and the split-context (flash-decoding) kernel with its merge. The
 * tiled prompt kernel is attention_tc.cu.
 *
 * Three launches, in stream order (a tiled launch replaces 2 and 3):
 *
 * 1. kv_write: one thread per element of the step's k and v rows (grid.x
 *    over n_kv*D, grid.y = row) converts to fp16 and stores at (slot[r],
 *    pos[r]). All rows are written before any row attends, so the rows of
 *    one slot's prompt chunk see each other causally.
 *
 * 2. attn_split: one block of 4 warps per (row, KV head g, chunk s):
 *    blockIdx.x = row * n_kv + g, blockIdx.y = s. The row's own range
 *    0..pos is cut into n_split equal chunks, on the device: L =
 *    max(split_min, ceil((pos+1) / n_split) rounded up to 32), chunk s =
 *    [s*L, min((s+1)*L, pos+1)) (empty for the last ones when pos is small:
 *    they write an empty partial). So every slot, at any depth, spreads
 *    over all n_split blocks, and the grid never depends on pos. The gq
 *    query heads that share g (GQA) sit scaled in shared memory, and every
 *    K/V row is read once for all of them. Warps take rounds of 32
 *    positions (warp w: t0 + 32w, then + 128, ...): lane j scores position
 *    tb + j against every head (the whole K row, 16-byte loads, q read as
 *    a broadcast), the warp's max updates the online softmax (running max
 *    m, sum l, unnormalised accumulator) once per round and head, the 32
 *    weights go through shared memory, and the warp adds the 32 V rows,
 *    lane l holding elements [l*DPL, l*DPL + DPL) (DPL = 1, 2, 4 or 8
 *    halves: one load per lane per V row, the warp reads the whole row).
 *    So there is one warp reduction per 32 positions and head, not one
 *    per position. The 4 warps merge through shared memory and write one
 *    partial (m, l, acc[D]) per (row, head, chunk) to 'part'.
 *
 * 3. attn_merge: one block per (row, query head) merges the n_split
 *    partials: out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s;
 *    with a.q8 it also writes out's q8_1 rows (the wo matmul's input).
 *
 * The grid is sized from n_rows and n_split (not from positions, which
 * live on the device), so a captured CUDA graph stays valid at any
 * position.
 *
 * Memory layout: kc/vc f16 [n_kv*D, n_ctx, n_slots]: the row of (slot s,
 * position t, KV head g) starts at element ((s*n_ctx + t)*n_kv + g)*D.
 * q/out f32 [n_head*D, n_rows]; k/v f32 [n_kv*D, n_rows]. part: float
 * [n_rows][n_head][n_split][D + 2] = (m, l, acc...).
 */
#include <float.h>

#include "common.cuh"

#define ATT_WARPS 4
#define ATT_NEG (-1e30f)      /* "no score yet": finite so that e^(a - b) never sees inf - inf */

static __global__ void kv_write(uint16_t *kc, uint16_t *vc, const float *k, const float *v,
                                const int32_t *slot, const int32_t *pos, int64_t w,
                                int64_t n_ctx, int64_t n_slots, unsigned *err_flag)
{
    const int64_t r = blockIdx.y;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= w)
        return;
    const int64_t s = slot[r], p = pos[r];
    if (s < 0 || s >= n_slots || p < 0 || p >= n_ctx) {
        if (i == 0)
            kq_flag(err_flag, (s < 0 || s >= n_slots) ? ST_KF_BAD_SLOT : ST_KF_BAD_POS);
        return;
    }
    const size_t at = ((size_t)s * (size_t)n_ctx + (size_t)p) * (size_t)w + (size_t)i;
    kc[at] = __half_as_ushort(__float2half_rn(k[r * w + i]));
    vc[at] = __half_as_ushort(__float2half_rn(v[r * w + i]));
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

/* K row kr (D halves) dotted with the gq scaled query heads in sq (f32
 * [gq][D], shared memory: every lane reads the same address). */
template <int GQM>
static __device__ __forceinline__ void att_scores(float (&sc)[GQM], const uint16_t *kr,
                                                  const float *sq, int D, int gq)
{
#pragma unroll
    for (int h = 0; h < GQM; h++)
        sc[h] = 0.0f;
    if (D % 8 == 0) {
        for (int d = 0; d < D; d += 8) {
            float kf[8];
            load_h<8>(kr + d, kf);
#pragma unroll
            for (int h = 0; h < GQM; h++) {
                if (h < gq) {
                    const float *qh = sq + h * D + d;
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        sc[h] += qh[e] * kf[e];
                }
            }
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

template <int DPL, int GQM>
static __global__ void __launch_bounds__(32 * ATT_WARPS) attn_split(const st_kern_attn a)
{
    __shared__ float sm_m[ATT_WARPS][GQM], sm_l[ATT_WARPS][GQM];
    __shared__ float sm_p[ATT_WARPS][GQM][32];  /* a warp's softmax weights, by lane */
    KQ_DYN_SMEM(float, sm_dyn);                  /* q [gq][D]; later [ATT_WARPS][gq][D] */
    const int D = a.head_dim, gq = a.n_head / a.n_kv;
    const int64_t r = blockIdx.x / a.n_kv;
    const int g = (int)(blockIdx.x % a.n_kv);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool lane_on = lane * DPL < D;
    const int64_t s = a.slot[r], p = a.pos[r];
    const bool row_ok = s >= 0 && s < a.n_slots && p >= 0 && p < a.n_ctx;
    const int64_t n_pos = row_ok ? p + 1 : 0;
    int64_t len = ((n_pos + a.n_split - 1) / a.n_split + 31) / 32 * 32;
    len = max(len, (int64_t)a.split_min);
    const int64_t t0 = min((int64_t)blockIdx.y * len, n_pos);
    const int64_t t1 = min(t0 + len, n_pos);

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
    const size_t w = (size_t)a.n_kv * D;
    const size_t base = ((size_t)(row_ok ? s : 0) * (size_t)a.n_ctx) * w + (size_t)g * D;
    /* 32 positions per warp and round: lane j scores position tb + j over the
     * whole head, then the warp adds the 32 V rows, lane l its DPL elements */
    for (int64_t tb = t0 + 32 * warp; tb < t1; tb += 32 * ATT_WARPS) {
        const int64_t t = tb + lane;
        const int nv = (int)min((int64_t)32, t1 - tb);
        float sc[GQM];
        att_scores<GQM>(sc, a.kc + base + (size_t)min(t, t1 - 1) * w, sm_dyn, D, gq);
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
            for (int j = 0; j < nv; j++) {
                float vf[DPL];
                load_h<DPL>(a.vc + base + (size_t)(tb + j) * w + lane * DPL, vf);
#pragma unroll
                for (int h = 0; h < GQM; h++) {
                    if (h < gq) {
                        const float pw = sm_p[warp][h][j];
#pragma unroll
                        for (int d = 0; d < DPL; d++)
                            acc[h][d] += pw * vf[d];
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
        const int64_t head = (int64_t)g * gq + h;
        a.part[((r * a.n_head + head) * nsplit + blockIdx.y) * (D + 2) + c] = v;
    }
}

static __global__ void attn_merge(const st_kern_attn a)
{
    const int D = a.head_dim;
    const int64_t rh = blockIdx.x;              /* row * n_head + head */
    const float *pp = a.part + rh * a.n_split * (D + 2);
    float mx = ATT_NEG;
    for (int s = 0; s < a.n_split; s++)
        mx = fmaxf(mx, pp[s * (D + 2)]);
    float lsum = 0.0f;
    for (int s = 0; s < a.n_split; s++)
        lsum += expf(pp[s * (D + 2)] - mx) * pp[s * (D + 2) + 1];
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float v = 0.0f;
        for (int s = 0; s < a.n_split; s++)
            v += expf(pp[s * (D + 2)] - mx) * pp[s * (D + 2) + 2 + d];
        v = lsum > 0.0f ? v / lsum : 0.0f;
        a.out[rh * D + d] = v;
        if (a.q8) {
            /* q8_1 epilogue (D % 32 == 0: a warp holds one 32-block of the
             * row, lane l element 32b + l, as quantize.cu): the bytes
             * st_kern_quantize_q8_1 would write from out */
            const int64_t r = rh / a.n_head, W = (int64_t)a.n_head * D;
            const int64_t i = (rh % a.n_head) * D + d;
            uint8_t *row = (uint8_t *)a.q8 + (size_t)r * a.q8_stride;
            const float amax = kq_warp_max(fabsf(v));
            const float sum = kq_warp_sum(v);
            const float dq = amax / 127.0f;
            ((int8_t *)row)[i] = (int8_t)(amax == 0.0f ? 0 : (int)roundf(v / dq));
            if (threadIdx.x % 32 == 0)
                ((float2 *)(row + W))[i / 32] = make_float2(dq, sum);
        }
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

extern "C" size_t st_kern_attn_scratch_bytes(int64_t n_rows, int32_t n_head, int32_t head_dim,
                                             int32_t n_split)
{
    return (size_t)n_rows * (size_t)n_head * (size_t)n_split * (size_t)(head_dim + 2) *
           sizeof(float);
}

template <int DPL>
static void attn_launch_dpl(const st_kern_attn &a, int gqm, dim3 grid, size_t smem,
                            cudaStream_t s)
{
    switch (gqm) {
    case 1: KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 1>)(a); break;
    case 2: KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 2>)(a); break;
    case 4: KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 4>)(a); break;
    case 8: KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 8>)(a); break;
    default:
        if constexpr (DPL <= 4)       /* DPL 8 with 16 heads per group is unsupported */
            KQ_LAUNCH(grid, 32 * ATT_WARPS, smem, s, attn_split<DPL, 16>)(a);
        break;
    }
}

cudaError_t st_kern_attn_tiled(const st_kern_attn &a, cudaStream_t stream);   /* attention_tc.cu */

extern "C" cudaError_t st_kern_attention(const struct st_kern_attn *a, cudaStream_t stream)
{
    const int32_t group = a->n_kv > 0 ? a->n_head / a->n_kv : 0;
    if (!st_kern_attn_supported(a->head_dim, group) || a->n_rows < 1 ||
        a->n_rows * a->n_kv > 0x7fffffff || a->n_rows * a->n_head > 0x7fffffff ||
        (!a->tiled && (a->n_split < 1 || a->n_split > 65535 || a->split_min < 1)) ||
        (a->q8 && (a->head_dim % 32 != 0 ||
                   a->q8_stride < st_kern_q8_1_row_bytes((int64_t)a->n_head * a->head_dim))))
        return cudaErrorInvalidValue;
    const int64_t w = (int64_t)a->n_kv * a->head_dim;
    for (int64_t r0 = 0; r0 < a->n_rows; r0 += 65535) {    /* grid.y <= 65535 */
        const int64_t nr = a->n_rows - r0 < 65535 ? a->n_rows - r0 : 65535;
        KQ_LAUNCH(dim3(kq_cdiv(w, 256), (unsigned)nr), 256, 0, stream, kv_write)(
            a->kc, a->vc, a->k + r0 * w, a->v + r0 * w, a->slot + r0, a->pos + r0, w, a->n_ctx,
            a->n_slots, a->err_flag);
    }
    if (a->tiled)
        return st_kern_attn_tiled(*a, stream);

    const int dpl = att_dpl(a->head_dim), gqm = att_gqm(group);
    const dim3 grid((unsigned)(a->n_rows * a->n_kv), (unsigned)a->n_split);
    const size_t smem = (size_t)ATT_WARPS * group * a->head_dim * sizeof(float);
    switch (dpl) {
    case 1: attn_launch_dpl<1>(*a, gqm, grid, smem, stream); break;
    case 2: attn_launch_dpl<2>(*a, gqm, grid, smem, stream); break;
    case 4: attn_launch_dpl<4>(*a, gqm, grid, smem, stream); break;
    default: attn_launch_dpl<8>(*a, gqm, grid, smem, stream); break;
    }
    KQ_LAUNCH((unsigned)(a->n_rows * a->n_head), 128, 0, stream, attn_merge)(*a);
    return cudaGetLastError();
}
