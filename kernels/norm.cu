/* norm.cu -- RMSNorm with gain (per row or per head), residual add, SwiGLU.
 *
 * rms_norm mapping: groups of g consecutive floats (a row with g = E, or
 * one head with g = head_dim). Small groups (g <= 256): one warp per
 * group, 8 groups per 256-thread block. Large groups: one 256-thread
 * block per group, warp partial sums combined in shared memory. The sum of
 * squares is accumulated in double (as the CPU reference and ggml do);
 * H200 runs fp64 at half the fp32 rate, and these are a few KB per row.
 * out may alias x: each thread reads its elements before the group's
 * scale is known and writes only after.
 *
 * add / silu_mul: grid-stride loops over n floats, one element per thread
 * per step.
 */
#include "common.cuh"

#define NORM_THREADS 256

static __device__ __forceinline__ double warp_sum_d(double v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off, 32);
    return v;
}

static __global__ void __launch_bounds__(NORM_THREADS)
rms_norm_warp(float *out, const float *x, const float *w, int64_t n_groups, int64_t g, float eps)
{
    const int64_t grp = (int64_t)blockIdx.x * (NORM_THREADS / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (grp >= n_groups)
        return;
    const float *xg = x + grp * g;
    double ss = 0.0;
    for (int64_t i = lane; i < g; i += 32)
        ss += (double)xg[i] * (double)xg[i];
    ss = warp_sum_d(ss);
    const float scale = 1.0f / sqrtf((float)(ss / (double)g) + eps);
    float *og = out + grp * g;
    for (int64_t i = lane; i < g; i += 32)
        og[i] = xg[i] * scale * w[i];
}

static __global__ void __launch_bounds__(NORM_THREADS)
rms_norm_block(float *out, const float *x, const float *w, int64_t g, float eps)
{
    __shared__ double part[NORM_THREADS / 32];
    __shared__ float scale_s;
    const float *xg = x + (int64_t)blockIdx.x * g;
    double ss = 0.0;
    for (int64_t i = threadIdx.x; i < g; i += NORM_THREADS)
        ss += (double)xg[i] * (double)xg[i];
    ss = warp_sum_d(ss);
    if (threadIdx.x % 32 == 0)
        part[threadIdx.x / 32] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int k = 0; k < NORM_THREADS / 32; k++)
            t += part[k];
        scale_s = 1.0f / sqrtf((float)(t / (double)g) + eps);
    }
    __syncthreads();
    const float scale = scale_s;
    float *og = out + (int64_t)blockIdx.x * g;
    for (int64_t i = threadIdx.x; i < g; i += NORM_THREADS)
        og[i] = xg[i] * scale * w[i];
}

extern "C" cudaError_t st_kern_rms_norm(float *out, const float *x, const float *w,
                                        int64_t n_groups, int64_t g, float eps,
                                        cudaStream_t stream)
{
    if (n_groups < 1 || g < 1)
        return cudaErrorInvalidValue;
    if (g <= 256)
        rms_norm_warp<<<kq_cdiv(n_groups, NORM_THREADS / 32), NORM_THREADS, 0, stream>>>(
            out, x, w, n_groups, g, eps);
    else if (n_groups <= 0x7fffffff)
        rms_norm_block<<<(unsigned)n_groups, NORM_THREADS, 0, stream>>>(out, x, w, g, eps);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

static unsigned ew_blocks(int64_t n)
{
    unsigned b = kq_cdiv(n, 256);
    return b < 65535 ? (b ? b : 1) : 65535;
}

static __global__ void add_f32(float *out, const float *a, const float *b, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

static __global__ void silu_mul_f32(float *out, const float *gate, const float *up, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

extern "C" cudaError_t st_kern_add(float *out, const float *a, const float *b, int64_t n,
                                   cudaStream_t stream)
{
    add_f32<<<ew_blocks(n), 256, 0, stream>>>(out, a, b, n);
    return cudaGetLastError();
}

extern "C" cudaError_t st_kern_silu_mul(float *out, const float *gate, const float *up,
                                        int64_t n, cudaStream_t stream)
{
    silu_mul_f32<<<ew_blocks(n), 256, 0, stream>>>(out, gate, up, n);
    return cudaGetLastError();
}
