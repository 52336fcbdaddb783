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
 * st_kern_rms_norm_ex adds two fusions to the same kernels: the residual
 * add before the norm (x += add, stored, then normed: what add followed by
 * rms_norm computes, the same double sum in the same order) and a q8_1
 * copy of the output for the next matmul (q8_1_put below).
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

/* The q8_1 epilogue: lane l of a warp holds element 32b + l of block b of
 * the row (all 32 lanes present: the caller's g % 32 == 0), exactly as
 * quantize.cu's kernel holds them, so the bytes are the same as
 * st_kern_quantize_q8_1 of the stored output. */
static __device__ __forceinline__ void q8_1_put(uint8_t *row, int64_t g, int64_t i, float v)
{
    const float amax = kq_warp_max(fabsf(v));
    const float sum = kq_warp_sum(v);
    const float d = amax / 127.0f;
    const int q = amax == 0.0f ? 0 : (int)roundf(v / d);
    ((int8_t *)row)[i] = (int8_t)q;
    if (i % 32 == 0)
        ((float2 *)(row + g))[i / 32] = make_float2(d, sum);
}

/* One group's elements at i = first, first + step, ...: with ADD, x += add
 * first (stored; the norm reads the sum back, as add then rms_norm would);
 * returns the group's sum of squares in double (this thread's part). */
template <bool ADD>
static __device__ __forceinline__ double norm_pass1(float *xg, const float *ag, int64_t g,
                                                    int first, int step)
{
    double ss = 0.0;
    for (int64_t i = first; i < g; i += step) {
        float v = xg[i];
        if (ADD) {
            v = v + ag[i];
            xg[i] = v;
        }
        ss = fma((double)v, (double)v, ss);   /* explicit: rope.cu's fused norm matches */
    }
    return ss;
}

/* out = x * scale * w, and the q8_1 row when q != NULL (Q). */
template <bool Q>
static __device__ __forceinline__ void norm_pass2(float *og, const float *xg, const float *w,
                                                  int64_t g, float scale, uint8_t *qrow,
                                                  int first, int step)
{
    for (int64_t i = first; i < g; i += step) {
        const float v = xg[i] * scale * w[i];
        og[i] = v;
        if (Q)
            q8_1_put(qrow, g, i, v);
    }
}

template <bool ADD, bool Q>
static __global__ void __launch_bounds__(NORM_THREADS)
rms_norm_warp(float *out, float *x, const float *add, const float *w, int64_t n_groups,
              int64_t g, float eps, uint8_t *q, size_t q_stride)
{
    const int64_t grp = (int64_t)blockIdx.x * (NORM_THREADS / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (grp >= n_groups)
        return;
    float *xg = x + grp * g;
    double ss = norm_pass1<ADD>(xg, ADD ? add + grp * g : NULL, g, lane, 32);
    ss = warp_sum_d(ss);
    const float scale = 1.0f / sqrtf((float)(ss / (double)g) + eps);
    norm_pass2<Q>(out + grp * g, xg, w, g, scale, Q ? q + (size_t)grp * q_stride : NULL, lane,
                  32);
}

template <bool ADD, bool Q>
static __global__ void __launch_bounds__(NORM_THREADS)
rms_norm_block(float *out, float *x, const float *add, const float *w, int64_t g, float eps,
               uint8_t *q, size_t q_stride)
{
    __shared__ double part[NORM_THREADS / 32];
    __shared__ float scale_s;
    float *xg = x + (int64_t)blockIdx.x * g;
    double ss = norm_pass1<ADD>(xg, ADD ? add + (int64_t)blockIdx.x * g : NULL, g,
                                threadIdx.x, NORM_THREADS);
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
    norm_pass2<Q>(out + (int64_t)blockIdx.x * g, xg, w, g, scale_s,
                  Q ? q + (size_t)blockIdx.x * q_stride : NULL, threadIdx.x, NORM_THREADS);
}

template <bool ADD, bool Q>
static cudaError_t norm_launch(float *out, float *x, const float *add, const float *w,
                               int64_t n_groups, int64_t g, float eps, uint8_t *q,
                               size_t q_stride, cudaStream_t stream)
{
    if (g <= 256)
        KQ_LAUNCH(kq_cdiv(n_groups, NORM_THREADS / 32), NORM_THREADS, 0, stream,
                  rms_norm_warp<ADD, Q>)(out, x, add, w, n_groups, g, eps, q, q_stride);
    else if (n_groups <= 0x7fffffff)
        KQ_LAUNCH((unsigned)n_groups, NORM_THREADS, 0, stream, rms_norm_block<ADD, Q>)(
            out, x, add, w, g, eps, q, q_stride);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

extern "C" cudaError_t st_kern_rms_norm(float *out, const float *x, const float *w,
                                        int64_t n_groups, int64_t g, float eps,
                                        cudaStream_t stream)
{
    if (n_groups < 1 || g < 1)
        return cudaErrorInvalidValue;
    /* x is only read without ADD */
    return norm_launch<false, false>(out, (float *)x, NULL, w, n_groups, g, eps, NULL, 0,
                                     stream);
}

extern "C" cudaError_t st_kern_rms_norm_ex(float *out, float *x, const float *add,
                                           const float *w, int64_t n_groups, int64_t g,
                                           float eps, void *q, size_t q_stride,
                                           cudaStream_t stream)
{
    if (n_groups < 1 || g < 1 ||
        (q && (g % 32 != 0 || q_stride < st_kern_q8_1_row_bytes(g))))
        return cudaErrorInvalidValue;
    uint8_t *qb = (uint8_t *)q;
    if (add)
        return q ? norm_launch<true, true>(out, x, add, w, n_groups, g, eps, qb, q_stride, stream)
                 : norm_launch<true, false>(out, x, add, w, n_groups, g, eps, NULL, 0, stream);
    return q ? norm_launch<false, true>(out, x, NULL, w, n_groups, g, eps, qb, q_stride, stream)
             : norm_launch<false, false>(out, x, NULL, w, n_groups, g, eps, NULL, 0, stream);
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

static __global__ void add_row_f32(float *out, const float *a, const float *b, int64_t width,
                                   int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i % width];
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
    KQ_LAUNCH(ew_blocks(n), 256, 0, stream, add_f32)(out, a, b, n);
    return cudaGetLastError();
}

extern "C" cudaError_t st_kern_add_row(float *out, const float *a, const float *b,
                                       int64_t width, int64_t n_rows, cudaStream_t stream)
{
    if (width < 1 || n_rows < 1)
        return cudaErrorInvalidValue;
    KQ_LAUNCH(ew_blocks(width * n_rows), 256, 0, stream, add_row_f32)(out, a, b, width,
                                                                       width * n_rows);
    return cudaGetLastError();
}

extern "C" cudaError_t st_kern_silu_mul(float *out, const float *gate, const float *up,
                                        int64_t n, cudaStream_t stream)
{
    KQ_LAUNCH(ew_blocks(n), 256, 0, stream, silu_mul_f32)(out, gate, up, n);
    return cudaGetLastError();
}
