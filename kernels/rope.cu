/* rope.cu -- NEOX rotary embedding (pairs (i, i + n_rot/2) of each head).
 *
 * Mapping: one thread per (row, head, i < n_rot/2) pair, 256 threads per
 * block, grid.x over the pairs of a row, grid.y = row. Dimensions
 * n_rot..head_dim-1 of each head are copied by the threads of i <
 * head_dim - n_rot when out does not alias x.
 * theta = pos * kr_rope_inv_freq(rope, i) (rope_params.cuh: freq_scale *
 * freq_base^(-2i/n_rot) without YaRN, the YaRN ramp mix with it), cos and
 * sin times kr_rope_mscale, computed as the CPU backend does (powf, then
 * cosf/sinf in full precision, no fast math).
 *
 * Layout: x, out f32 [width, n_rows], width = heads * head_dim; pos i32
 * [n_rows]. A negative position is flagged (ST_KF_BAD_POS) and treated as 0.
 */
#include "common.cuh"
#include "rope_params.cuh"

/* The rotation of one pair, shared by rope_neox and rms_norm_rope so both
 * round alike: explicit fmaf / __fmul_rn, never left to the compiler's
 * contraction choices (which may differ between two kernels). */
static __device__ __forceinline__ void rope_pair(float x0, float x1, int p, int i,
                                                 const st_rope_params &rp, float mscale,
                                                 float *y0, float *y1)
{
    const float theta = __fmul_rn((float)p, kr_rope_inv_freq(rp, i));
    const float cs = __fmul_rn(cosf(theta), mscale), sn = __fmul_rn(sinf(theta), mscale);
    *y0 = fmaf(x0, cs, -__fmul_rn(x1, sn));
    *y1 = fmaf(x0, sn, __fmul_rn(x1, cs));
}

static __global__ void rope_neox(float *out, const float *x, const int32_t *pos, int64_t width,
                                 int head_dim, st_rope_params rp, unsigned *err_flag)
{
    const int n_rot = rp.n_rot;
    const int64_t r = blockIdx.y;
    const int half = n_rot / 2;
    const int64_t heads = width / head_dim;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t per_head = half > head_dim - n_rot ? half : head_dim - n_rot;
    if (t >= heads * per_head)
        return;
    const int64_t h = t / per_head;
    const int i = (int)(t % per_head);
    const float *xh = x + r * width + h * head_dim;
    float *oh = out + r * width + h * head_dim;
    int p = pos[r];
    if (p < 0) {
        kq_flag(err_flag, ST_KF_BAD_POS);
        p = 0;
    }
    float x0 = 0.0f, x1 = 0.0f, xp = 0.0f;
    const bool rot = i < half, pass = i < head_dim - n_rot && oh != xh;
    if (rot) {
        x0 = xh[i];
        x1 = xh[i + half];
    }
    if (pass)
        xp = xh[n_rot + i];
    if (rot)
        rope_pair(x0, x1, p, i, rp, kr_rope_mscale(rp), &oh[i], &oh[i + half]);
    if (pass)
        oh[n_rot + i] = xp;
}

extern "C" cudaError_t st_kern_rope_neox(float *out, const float *x, const int32_t *pos,
                                         int64_t n_rows, int64_t width, int head_dim,
                                         const struct st_rope_params *rope, unsigned *err_flag,
                                         cudaStream_t stream)
{
    if (!rope)
        return cudaErrorInvalidValue;
    const int n_rot = rope->n_rot;
    if (n_rows < 1 || head_dim < 1 || width % head_dim != 0 || n_rot < 2 || n_rot % 2 != 0 ||
        n_rot > head_dim)
        return cudaErrorInvalidValue;
    const int half = n_rot / 2;
    const int64_t per_head = half > head_dim - n_rot ? half : head_dim - n_rot;
    for (int64_t r0 = 0; r0 < n_rows; r0 += 65535) {      /* grid.y <= 65535 */
        const int64_t nr = n_rows - r0 < 65535 ? n_rows - r0 : 65535;
        dim3 grid(kq_cdiv((width / head_dim) * per_head, 256), (unsigned)nr);
        KQ_LAUNCH(grid, 256, 0, stream, rope_neox)(out + r0 * width, x + r0 * width, pos + r0,
                                                   width, head_dim, *rope, err_flag);
    }
    return cudaGetLastError();
}

/* ---- per-head RMSNorm + NEOX rope in one kernel -----------------------------
 * One warp per (row, head), 8 per 256-thread block. Lane l owns elements
 * i = l + 32j (j < RN_NPT) of its head and loads them, their gains and the
 * row's position before using any (one round trip to memory). The head's
 * sum of squares in double over i = lane, lane + 32, ... (rms_norm_warp's
 * order and fma, so the normed values are bit for bit norm.cu's), then
 * each pair (i, i + n_rot/2) is rotated with rope_neox's arithmetic
 * (rope_pair), so the result is bit for bit rms_norm then rope.
 * When n_rot/2 is a multiple of 32 (H32 = n_rot/64 of 1, 2 or 4: head_dim
 * 64, 128, 256 rotated whole, or 128 with n_rot 64), both elements of a
 * lane's pairs are its own (j and j + H32) and everything stays in
 * registers; otherwise (H32 = 0) the normed head is stored, __syncwarp
 * orders the warp's writes, and the pairs are read back from out.
 * head_dim <= 32 * RN_NPT = 256 (the launcher refuses more). */
#define RN_NPT 8

template <int H32>
static __global__ void __launch_bounds__(256)
rms_norm_rope(float *out, const float *x, const float *w, const int32_t *pos, int64_t n_groups,
              int64_t heads, int head_dim, st_rope_params rp, float eps, unsigned *err_flag)
{
    const int64_t grp = (int64_t)blockIdx.x * 8 + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (grp >= n_groups)
        return;                          /* whole warps leave together */
    const float *xg = x + grp * head_dim;
    float *og = out + grp * head_dim;
    int p = pos[grp / heads];
    float v[RN_NPT], wv[RN_NPT];
#pragma unroll
    for (int j = 0; j < RN_NPT; j++) {
        const int i = lane + 32 * j;
        v[j] = i < head_dim ? xg[i] : 0.0f;
        wv[j] = i < head_dim ? w[i] : 0.0f;
    }
    double ss = 0.0;
#pragma unroll
    for (int j = 0; j < RN_NPT; j++)
        if (lane + 32 * j < head_dim)
            ss = fma((double)v[j], (double)v[j], ss);   /* as norm.cu's norm_load */
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, off, 32);
    const float scale = 1.0f / sqrtf((float)(ss / (double)head_dim) + eps);
#pragma unroll
    for (int j = 0; j < RN_NPT; j++)
        v[j] = v[j] * scale * wv[j];
    if (p < 0) {
        if (lane == 0)
            kq_flag(err_flag, ST_KF_BAD_POS);
        p = 0;
    }
    const float mscale = kr_rope_mscale(rp);
    if constexpr (H32 > 0) {
#pragma unroll
        for (int j = 0; j < H32; j++)
            rope_pair(v[j], v[j + H32], p, lane + 32 * j, rp, mscale, &v[j], &v[j + H32]);
    }
#pragma unroll
    for (int j = 0; j < RN_NPT; j++)
        if (lane + 32 * j < head_dim)
            og[lane + 32 * j] = v[j];
    if constexpr (H32 == 0) {
        __syncwarp();
        const int half = rp.n_rot / 2;
        for (int i = lane; i < half; i += 32) {
            const float x0 = og[i], x1 = og[i + half];
            rope_pair(x0, x1, p, i, rp, mscale, &og[i], &og[i + half]);
        }
    }
}

extern "C" cudaError_t st_kern_rms_norm_rope(float *out, const float *x, const float *w,
                                             const int32_t *pos, int64_t n_rows, int64_t width,
                                             int head_dim, const struct st_rope_params *rope,
                                             float eps, unsigned *err_flag, cudaStream_t stream)
{
    if (!rope)
        return cudaErrorInvalidValue;
    const int n_rot = rope->n_rot;
    if (n_rows < 1 || head_dim < 1 || head_dim > 256 || width % head_dim != 0 || n_rot < 2 ||
        n_rot % 2 != 0 || n_rot > head_dim)
        return cudaErrorInvalidValue;
    const int64_t heads = width / head_dim, n_groups = n_rows * heads;
    if (kq_cdiv(n_groups, 8) > 0x7fffffffu)
        return cudaErrorInvalidValue;
    const unsigned nb = kq_cdiv(n_groups, 8);
    switch (n_rot % 64 == 0 ? n_rot / 64 : 0) {
    case 1:
        KQ_LAUNCH(nb, 256, 0, stream, rms_norm_rope<1>)(out, x, w, pos, n_groups, heads,
                                                         head_dim, *rope, eps, err_flag);
        break;
    case 2:
        KQ_LAUNCH(nb, 256, 0, stream, rms_norm_rope<2>)(out, x, w, pos, n_groups, heads,
                                                         head_dim, *rope, eps, err_flag);
        break;
    case 4:
        KQ_LAUNCH(nb, 256, 0, stream, rms_norm_rope<4>)(out, x, w, pos, n_groups, heads,
                                                         head_dim, *rope, eps, err_flag);
        break;
    default:                             /* n_rot/2 not a multiple of 32, or 192 */
        KQ_LAUNCH(nb, 256, 0, stream, rms_norm_rope<0>)(out, x, w, pos, n_groups, heads,
                                                         head_dim, *rope, eps, err_flag);
        break;
    }
    return cudaGetLastError();
}
