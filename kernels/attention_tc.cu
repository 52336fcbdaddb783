/* attention_tc.cu -- tiled (flash) attention for prompt chunks, the matrix
 * products on tensor cores (mma.sync m16n8k16: f16 inputs, f32
 * accumulation; sm_80 and newer).
 *
 * One block of 4 warps per (query block, KV head g): blockIdx.x = query
 * block, blockIdx.y = g. A query block is QR = 64 / gq consecutive rows x
 * the gq query heads of g: 64 query vectors (row, head), vector
 * v = row_local * gq + head_local, warp w owning vectors 16w..16w+15 (the
 * M = 16 of one mma). Each K/V tile of BK positions is staged once in
 * shared memory for all of them (K as rows [BK][D], V transposed [D][BK]),
 * so a prompt chunk reads the slot's K/V once per query block instead of
 * once per row.
 *
 * Per tile, each warp: S = Q K^T (16 x BK, Q's fragments in registers for
 * the whole pass), the causal mask (position <= the vector's row
 * position), the online softmax on S's accumulator fragments (row max over
 * the 4 lanes of a row, running max m, running sum l kept per lane and
 * added up at the end), then O += P V with P taken straight from S's
 * accumulator layout (the C fragments of two adjacent n8 tiles are the A
 * fragment of one k16 step). out = O / l. K and V are f16 already (a
 * Q8_0 cache is dequantized as its tiles are staged: d*q, exact in f32,
 * rounded to f16 in shared memory, so the products are the F16 path's; the
 * kernel is a template on the two cache types); q and
 * p go to the tensor cores as two f16 parts each (the rounding, then the
 * rounding of what it missed: tc_split), two products each, so the result
 * is as exact as f32 arithmetic to ~1e-6 instead of f16's ~2e-4: twice
 * the tensor work, in a kernel not bound by it.
 *
 * Rows of one block may belong to different slots (a step mixing a prompt
 * chunk with decode rows): the block runs one pass per distinct slot, each
 * over positions 0..max(pos)+1 of that slot's rows; usually there is one.
 * A row with a bad slot or position (flagged by the KV write) gets zeros,
 * as in the split kernel. The grid depends on n_rows and n_kv only.
 *
 * mma: PTX's mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 on sm_80+.
 * On tests/cuemu (no tensor cores) tc_mma computes the same product from
 * the same fragments in software: each lane puts its fragments' elements
 * where PTX's layout says they belong (A: rows g, g+8 x cols 2t, 2t+1, +8;
 * B: rows 2t, 2t+1, +8 x col g; g = lane / 4, t = lane % 4) in matrices the
 * warp shares, and takes its C elements (rows g, g+8 x cols 2t, 2t+1) as
 * dot products. So every fragment load, the mask, the softmax and the
 * C-to-A reuse run in CI; only the instruction itself needs a GPU
 * (tests/gpu/attn_check.cu checks it there).
 */
#include "common.cuh"
#include "kv_q8.cuh"

#define TC_WARPS 4
#define TC_VECS (16 * TC_WARPS)   /* query vectors per block */
#define TC_NEG (-1e30f)           /* "no score yet", finite as in attention.cu */
/* tests/cuemu under UBSan (scripts/test.sh): GCC's instrumentation of this
 * file's code gave zeros for every first accumulator row (vectors g, not
 * g + 8) with no UB reported; without it the kernel equals the CPU, and
 * AddressSanitizer still watches it. So UBSan is off for these functions. */
#ifdef CUEMU
#define TC_NOUB __attribute__((no_sanitize("undefined")))
#else
#define TC_NOUB
#endif

static TC_NOUB __device__ __forceinline__ uint32_t tc_pack(float lo, float hi)
{
    return (uint32_t)__half_as_ushort(__float2half_rn(lo)) |
           ((uint32_t)__half_as_ushort(__float2half_rn(hi)) << 16);
}

/* x, y as two f16 pairs: big = their f16 roundings, small = what those miss
 * (f16 again), so big + small carries about 22 bits of each. */
static TC_NOUB __device__ __forceinline__ void tc_split(float x, float y, uint32_t &big, uint32_t &small)
{
    const float xb = __half2float(__float2half_rn(x)), yb = __half2float(__float2half_rn(y));
    big = tc_pack(xb, yb);
    small = tc_pack(x - xb, y - yb);
}

/* c[j] += A[kk] B[j][kk] over kk < ks, for j < nt: one m16n8k16 per (j, kk).
 * a: this lane's A fragments; loadb(j, kk, b) loads its B fragment. */
template <int NT, int KS, class LoadB>
static TC_NOUB __device__ __forceinline__ void tc_mma(float (&c)[NT][4], const uint32_t (&a)[KS][4],
                                              int nt, int ks, LoadB loadb)
{
#if defined(CUEMU)
    /* Each lane scatters its fragments' elements to where PTX's layout puts
     * them in A (16 x 16ks, row-major) and B (16ks x 8nt, stored by column);
     * then each lane takes its four C elements as plain dot products. */
    __shared__ float am[TC_WARPS][16][16 * KS], bm[TC_WARPS][8 * NT][16 * KS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int kk = 0; kk < ks; kk++)
        for (int i = 0; i < 8; i++)             /* register i / 2, half i % 2 */
            am[warp][g + 8 * (i / 2 % 2)][16 * kk + 8 * (i / 4) + 2 * t + i % 2] =
                kq_h2f((uint16_t)(a[kk][i / 2] >> (16 * (i % 2))));
    for (int j = 0; j < nt; j++)
        for (int kk = 0; kk < ks; kk++) {
            uint32_t b[2];
            loadb(j, kk, b);
            for (int i = 0; i < 4; i++)
                bm[warp][8 * j + g][16 * kk + 8 * (i / 2) + 2 * t + i % 2] =
                    kq_h2f((uint16_t)(b[i / 2] >> (16 * (i % 2))));
        }
    __syncwarp();
    const float *a0 = am[warp][g], *a1 = am[warp][g + 8];
    for (int j = 0; j < nt; j++) {
        const float *b0 = bm[warp][8 * j + 2 * t], *b1 = bm[warp][8 * j + 2 * t + 1];
        float s00 = 0.0f, s01 = 0.0f, s10 = 0.0f, s11 = 0.0f;
        for (int k = 0; k < 16 * ks; k++) {
            s00 += a0[k] * b0[k];
            s01 += a0[k] * b1[k];
            s10 += a1[k] * b0[k];
            s11 += a1[k] * b1[k];
        }
        c[j][0] += s00;
        c[j][1] += s01;
        c[j][2] += s10;
        c[j][3] += s11;
    }
    __syncwarp();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#pragma unroll
    for (int j = 0; j < NT; j++) {
        if (j < nt) {
#pragma unroll
            for (int kk = 0; kk < KS; kk++) {
                if (kk < ks) {
                    uint32_t b[2];
                    loadb(j, kk, b);
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                                 "{%0, %1, %2, %3};"
                                 : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                                 : "r"(a[kk][0]), "r"(a[kk][1]), "r"(a[kk][2]), "r"(a[kk][3]),
                                   "r"(b[0]), "r"(b[1]));
                }
            }
        }
    }
#else
    /* never launched: st_kern_attn_tiled_supported wants sm_80+ */
    (void)c, (void)a, (void)nt, (void)ks, (void)loadb;
    __trap();
#endif
}

static TC_NOUB __device__ __forceinline__ int tc_warp_max_int(int v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v = max(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

/* The max over the 4 lanes that hold one accumulator row. */
static TC_NOUB __device__ __forceinline__ float tc_quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

static TC_NOUB __device__ __forceinline__ float tc_quad_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

/* 8 elements of a cache row from element d (d % 8 == 0) as 8 f16 in a
 * uint4: an F16 row as it is (16-byte aligned), a Q8_0 row (p at its head's
 * first unit) as f16(d*q) of block d / 32. */
template <bool Q8>
static TC_NOUB __device__ __forceinline__ uint4 tc_load8(const uint16_t *__restrict__ p, int d)
{
    if constexpr (!Q8) {
        return *(const uint4 *)(p + d);
    } else {
        float f[8];
        kvq8_elems<8>(p + (size_t)(d / 32) * KVQ8_UNITS, d % 32, f);
        uint4 u;
        u.x = tc_pack(f[0], f[1]);
        u.y = tc_pack(f[2], f[3]);
        u.z = tc_pack(f[4], f[5]);
        u.w = tc_pack(f[6], f[7]);
        return u;
    }
}

/* DT: head_dim rounded up (64, 128, 256); BK: positions per tile; KQ, VQ:
 * Q8_0 K / V cache. */
template <int DT, int BK, bool KQ, bool VQ>
static TC_NOUB __global__ void __launch_bounds__(32 * TC_WARPS) attn_tiled(const st_kern_attn a)
{
    constexpr int KS = DT / 16, NS = BK / 8, NO = DT / 8, KP = BK / 16;
    /* per row of the block: slot (-1 none, -2 done, -3 bad slot/position), position */
    __shared__ int32_t rs[TC_VECS], rp[TC_VECS];
    KQ_DYN_SMEM(uint16_t, sm);                  /* K [BK][D + 8], then V^T [D][BK + 8] */
    const int D = a.head_dim, gq = a.n_head / a.n_kv, qr = TC_VECS / gq;
    const int kst = D + 8, vst = BK + 8;
    uint16_t *ks = sm, *vt = sm + BK * kst;
    const int kvh = blockIdx.y;
    const int64_t r0 = (int64_t)blockIdx.x * qr;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const size_t wk = kv_row_units(KQ, a.n_kv, D), wv = kv_row_units(VQ, a.n_kv, D);

    for (int i = threadIdx.x; i < qr; i += blockDim.x) {
        const int64_t r = r0 + i;
        int32_t s = -1, p = 0;
        if (r < a.n_rows) {
            s = a.slot[r];
            p = a.pos[r];
            if (s < 0 || s >= a.n_slots || p < 0 || p >= a.n_ctx)
                s = -3;
        }
        rs[i] = s;
        rp[i] = p;
    }
    /* this lane's two accumulator rows: vectors 16w + g and 16w + g + 8 */
    int vrow[2], vhead[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int v = warp * 16 + g + 8 * h;
        vrow[h] = v < qr * gq && r0 + v / gq < a.n_rows ? v / gq : -1;
        vhead[h] = kvh * gq + v % gq;
    }
    /* Q's A fragments, scaled, f16: register i holds row g + 8 (i % 2), cols
     * 16kk + 2t (+1) + 8 (i / 2) */
    uint32_t qa[KS][4], qb[KS][4];             /* big and small halves */
#pragma unroll
    for (int kk = 0; kk < KS; kk++) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int h = i % 2, d = kk * 16 + 8 * (i / 2) + 2 * t;
            qa[kk][i] = qb[kk][i] = 0;
            if (kk < D / 16 && vrow[h] >= 0) {
                const float *qp = a.q + ((r0 + vrow[h]) * a.n_head + vhead[h]) * D + d;
                tc_split(qp[0] * a.scale, qp[1] * a.scale, qa[kk][i], qb[kk][i]);
            }
        }
    }
    __syncthreads();

    for (;;) {
        /* one pass per slot of the block's rows, the first row's first */
        int32_t cur = -1, tend = 0;
        for (int i = 0; i < qr; i++)
            if (rs[i] >= 0) {
                cur = rs[i];
                break;
            }
        if (cur < 0)
            break;
        for (int i = 0; i < qr; i++)
            if (rs[i] == cur)
                tend = max(tend, rp[i] + 1);
        int lim[2];                             /* last visible position; -1: not this pass */
#pragma unroll
        for (int h = 0; h < 2; h++)
            lim[h] = vrow[h] >= 0 && rs[vrow[h]] == cur ? rp[vrow[h]] : -1;
        const int wlim = tc_warp_max_int(max(lim[0], lim[1]));
        float o[NO][4], m[2] = { TC_NEG, TC_NEG }, l[2] = { 0.0f, 0.0f };
#pragma unroll
        for (int n = 0; n < NO; n++)
            o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
        const uint16_t *kb = a.kc + (size_t)cur * (size_t)a.n_ctx * wk + kv_head_units(KQ, kvh, D);
        const uint16_t *vb = a.vc + (size_t)cur * (size_t)a.n_ctx * wv + kv_head_units(VQ, kvh, D);

        for (int t0 = 0; t0 < tend; t0 += BK) {
            __syncthreads();                    /* the last tile is consumed */
            /* stage BK positions, 8 halves a thread; past tend: zeros */
            for (int e = threadIdx.x; e < BK * (D / 8); e += blockDim.x) {
                const int i = e / (D / 8), d = e % (D / 8) * 8;
                uint4 kx = { 0, 0, 0, 0 }, vx = { 0, 0, 0, 0 };
                if (t0 + i < tend) {
                    kx = tc_load8<KQ>(kb + (size_t)(t0 + i) * wk, d);
                    vx = tc_load8<VQ>(vb + (size_t)(t0 + i) * wv, d);
                }
                *(uint4 *)(ks + i * kst + d) = kx;
                const uint32_t vw[4] = { vx.x, vx.y, vx.z, vx.w };
                /* rotated by d / 8: threads of one i store to 8 rows of vt
                 * at once, not all to row d (one bank: 16-way conflicts) */
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    const int u = (k + d / 8) % 8;
                    vt[(d + u) * vst + i] = (uint16_t)(vw[u / 2] >> (16 * (u % 2)));
                }
            }
            __syncthreads();
            if (t0 > wlim)                      /* warp-uniform: nothing here for its rows */
                continue;

            float s[NS][4];
#pragma unroll
            for (int j = 0; j < NS; j++)
                s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
            const auto kfrag = [&](int j, int kk, uint32_t *b) {
                const uint16_t *p = ks + (j * 8 + g) * kst + kk * 16 + 2 * t;
                b[0] = *(const uint32_t *)p;
                b[1] = *(const uint32_t *)(p + 8);
            };
            tc_mma<NS, KS>(s, qa, NS, D / 16, kfrag);
            tc_mma<NS, KS>(s, qb, NS, D / 16, kfrag);
            /* s[j][i]: vector row g + 8 (i / 2), position t0 + 8j + 2t + i % 2 */
            float mx[2] = { TC_NEG, TC_NEG }, corr[2], psum[2] = { 0.0f, 0.0f };
#pragma unroll
            for (int j = 0; j < NS; j++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    if (t0 + j * 8 + 2 * t + i % 2 <= lim[i / 2])
                        mx[i / 2] = fmaxf(mx[i / 2], s[j][i]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const float mn = fmaxf(m[h], tc_quad_max(mx[h]));
                corr[h] = expf(m[h] - mn);
                m[h] = mn;
            }
#pragma unroll
            for (int j = 0; j < NS; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int h = i / 2;
                    const float p = t0 + j * 8 + 2 * t + i % 2 <= lim[h] ? expf(s[j][i] - m[h])
                                                                         : 0.0f;
                    s[j][i] = p;
                    psum[h] += p;
                }
#pragma unroll
            for (int h = 0; h < 2; h++)
                l[h] = l[h] * corr[h] + psum[h];
#pragma unroll
            for (int n = 0; n < NO; n++) {
                o[n][0] *= corr[0];
                o[n][1] *= corr[0];
                o[n][2] *= corr[1];
                o[n][3] *= corr[1];
            }
            /* P as A fragments: n8 tiles 2kk and 2kk + 1 of S make k16 step kk */
            uint32_t pa[KP][4], pb[KP][4];
#pragma unroll
            for (int kk = 0; kk < KP; kk++) {
                tc_split(s[2 * kk][0], s[2 * kk][1], pa[kk][0], pb[kk][0]);
                tc_split(s[2 * kk][2], s[2 * kk][3], pa[kk][1], pb[kk][1]);
                tc_split(s[2 * kk + 1][0], s[2 * kk + 1][1], pa[kk][2], pb[kk][2]);
                tc_split(s[2 * kk + 1][2], s[2 * kk + 1][3], pa[kk][3], pb[kk][3]);
            }
            const auto vfrag = [&](int j, int kk, uint32_t *b) {
                const uint16_t *p = vt + (j * 8 + g) * vst + kk * 16 + 2 * t;
                b[0] = *(const uint32_t *)p;
                b[1] = *(const uint32_t *)(p + 8);
            };
            tc_mma<NO, KP>(o, pa, D / 8, KP, vfrag);
            tc_mma<NO, KP>(o, pb, D / 8, KP, vfrag);
        }

#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float lt = tc_quad_sum(l[h]);
            if (lim[h] < 0)
                continue;
            const float inv = lt > 0.0f ? 1.0f / lt : 0.0f;
            float *op = a.out + ((r0 + vrow[h]) * a.n_head + vhead[h]) * D + 2 * t;
#pragma unroll
            for (int n = 0; n < NO; n++) {
                if (n < D / 8) {
                    op[n * 8] = o[n][2 * h] * inv;
                    op[n * 8 + 1] = o[n][2 * h + 1] * inv;
                }
            }
        }
        __syncthreads();
        for (int i = threadIdx.x; i < qr; i += blockDim.x)
            if (rs[i] == cur)
                rs[i] = -2;
        __syncthreads();
    }
    /* rows with a bad slot or position: zeros, as the split kernel gives */
    for (int e = threadIdx.x; e < qr * gq * D; e += blockDim.x) {
        const int i = e / (gq * D);
        if (rs[i] == -3)
            a.out[((r0 + i) * a.n_head + (int64_t)kvh * gq) * D + e % (gq * D)] = 0.0f;
    }
}

extern "C" bool st_kern_attn_tiled_supported(int32_t head_dim, int32_t group, int cc_major)
{
    return cc_major >= 8 && head_dim >= 16 && head_dim <= 256 && head_dim % 16 == 0 &&
           group >= 1 && group <= 16;
}

template <bool KQ, bool VQ>
static void tc_launch(const st_kern_attn &a, dim3 grid, size_t smem, cudaStream_t stream)
{
    if (a.head_dim <= 64)
        KQ_LAUNCH(grid, 32 * TC_WARPS, smem, stream, attn_tiled<64, 64, KQ, VQ>)(a);
    else if (a.head_dim <= 128)
        KQ_LAUNCH(grid, 32 * TC_WARPS, smem, stream, attn_tiled<128, 64, KQ, VQ>)(a);
    else
        KQ_LAUNCH(grid, 32 * TC_WARPS, smem, stream, attn_tiled<256, 32, KQ, VQ>)(a);
}

/* Called by st_kern_attention after the KV write (attention.cu). */
cudaError_t st_kern_attn_tiled(const st_kern_attn &a, cudaStream_t stream)
{
    const int gq = a.n_head / a.n_kv, qr = TC_VECS / gq;
    const dim3 grid(kq_cdiv(a.n_rows, qr), (unsigned)a.n_kv);
    const int D = a.head_dim, bk = D <= 128 ? 64 : 32;
    const size_t smem = ((size_t)bk * (D + 8) + (size_t)D * (bk + 8)) * sizeof(uint16_t);
    if (!st_kern_attn_tiled_supported(D, gq, 8) || a.q8 || grid.x > 0x7fffffffu)
        return cudaErrorInvalidValue;
    if (a.kq8 && a.vq8)
        tc_launch<true, true>(a, grid, smem, stream);
    else if (a.kq8)
        tc_launch<true, false>(a, grid, smem, stream);
    else if (a.vq8)
        tc_launch<false, true>(a, grid, smem, stream);
    else
        tc_launch<false, false>(a, grid, smem, stream);
    return cudaGetLastError();
}
