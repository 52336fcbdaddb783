/* rope.cu -- NEOX rotary embedding (pairs (i, i + n_rot/2) of each head).
 *
 * Mapping: one thread per (row, head, i < n_rot/2) pair, 256 threads per
 * block, grid.x over the pairs of a row, grid.y = row. Dimensions
 * n_rot..head_dim-1 of each head are copied by the threads of i <
 * head_dim - n_rot when out does not alias x.
 * theta = pos * freq_scale * freq_base^(-2i/n_rot), computed as the CPU
 * backend does (powf, then cosf/sinf in full precision, no fast math).
 *
 * Layout: x, out f32 [width, n_rows], width = heads * head_dim; pos i32
 * [n_rows]. A negative position is flagged (ST_KF_BAD_POS) and treated as 0.
 */
#include "common.cuh"

static __global__ void rope_neox(float *out, const float *x, const int32_t *pos, int64_t width,
                                 int head_dim, int n_rot, float freq_base, float freq_scale,
                                 unsigned *err_flag)
{
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
    if (rot) {
        const float inv = freq_scale * powf(freq_base, -2.0f * (float)i / (float)n_rot);
        const float theta = (float)p * inv;
        const float cs = cosf(theta), sn = sinf(theta);
        oh[i] = x0 * cs - x1 * sn;
        oh[i + half] = x0 * sn + x1 * cs;
    }
    if (pass)
        oh[n_rot + i] = xp;
}

extern "C" cudaError_t st_kern_rope_neox(float *out, const float *x, const int32_t *pos,
                                         int64_t n_rows, int64_t width, int head_dim, int n_rot,
                                         float freq_base, float freq_scale, unsigned *err_flag,
                                         cudaStream_t stream)
{
    if (n_rows < 1 || head_dim < 1 || width % head_dim != 0 || n_rot < 2 || n_rot % 2 != 0 ||
        n_rot > head_dim)
        return cudaErrorInvalidValue;
    const int half = n_rot / 2;
    const int64_t per_head = half > head_dim - n_rot ? half : head_dim - n_rot;
    for (int64_t r0 = 0; r0 < n_rows; r0 += 65535) {      /* grid.y <= 65535 */
        const int64_t nr = n_rows - r0 < 65535 ? n_rows - r0 : 65535;
        dim3 grid(kq_cdiv((width / head_dim) * per_head, 256), (unsigned)nr);
        rope_neox<<<grid, 256, 0, stream>>>(out + r0 * width, x + r0 * width, pos + r0, width,
                                            head_dim, n_rot, freq_base, freq_scale, err_flag);
    }
    return cudaGetLastError();
}
