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
 * One warp per (row, head), 8 per 256-thread block: the head's sum of
 * squares in double over lanes i = lane, lane + 32, ... (rms_norm_warp's
 * order, so the normed values are bit for bit norm.cu's), the normed head
 * stored to out, __syncwarp (orders the warp's global writes), then each
 * lane rotates its pairs (i, i + n_rot/2) from out with rope_neox's
 * arithmetic (rope_pair; the sum of squares with explicit fma as norm.cu),
 * so the result is bit for bit rms_norm then rope. head_dim <= 256 (the
 * launcher refuses more). */
static __global__ void __launch_bounds__(256)
rms_norm_rope(float *out, const float *x, const float *w, const int32_t *pos, int64_t n_groups,
              int64_t heads, int head_dim, st_rope_params rp, float eps, unsigned *err_flag)
{
    const int n_rot = rp.n_rot;
    const int64_t grp = (int64_t)blockIdx.x * 8 + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (grp >= n_groups)
        return;                          /* whole warps leave together */
    const float *xg = x + grp * head_dim;
    float *og = out + grp * head_dim;
    double ss = 0.0;
    for (int i = lane; i < head_dim; i += 32)
        ss = fma((double)xg[i], (double)xg[i], ss);   /* as norm.cu's norm_pass1 */
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, off, 32);
    const float scale = 1.0f / sqrtf((float)(ss / (double)head_dim) + eps);
    for (int i = lane; i < head_dim; i += 32)
        og[i] = xg[i] * scale * w[i];
    __syncwarp();
    int p = pos[grp / heads];
    if (p < 0) {
        if (lane == 0)
            kq_flag(err_flag, ST_KF_BAD_POS);
        p = 0;
    }
    const int half = n_rot / 2;
    const float mscale = kr_rope_mscale(rp);
    for (int i = lane; i < half; i += 32) {
        const float x0 = og[i], x1 = og[i + half];
        rope_pair(x0, x1, p, i, rp, mscale, &og[i], &og[i + half]);
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
    KQ_LAUNCH(kq_cdiv(n_groups, 8), 256, 0, stream, rms_norm_rope)(out, x, w, pos, n_groups,
                                                                   heads, head_dim, *rope, eps,
                                                                   err_flag);
    return cudaGetLastError();
}
