/* norm.cu -- RMSNorm with gain (per row or per head), residual add, SwiGLU.
 *
 * rms_norm mapping: groups of g consecutive floats (a row with g = E, or
 * one head with g = head_dim). Each thread owns the elements i = first +
 * j*step (j < NORM_NPT) and loads them all (x, add, w) into registers
 * before using any, so a row costs one round trip to memory instead of a
 * chain of dependent loads; pass 2 works from the registers.
 *   g <= 256:  one warp per group (step 32), 8 groups per 256-thread block.
 *   g <= 2048: one 256-thread block per group (step 256).
 *   g <= 8192: one 1024-thread block per group (step 1024).
 *   larger:    one 256-thread block per group, looping (rms_norm_loop).
 * The sum of squares is accumulated in double (as the CPU reference and
 * ggml do), per thread in increasing i, then a warp butterfly, then (block
 * kernels) a butterfly over the warp sums that every warp computes alike;
 * H200 runs fp64 at half the fp32 rate, and these are a few KB per row.
 * out may alias x: each thread reads its elements before the group's
 * scale is known and writes only after.
 *
 * st_kern_rms_norm_ex adds two fusions to the same kernels: the residual
 * add before the norm (x += add, stored, then normed: what add followed by
 * rms_norm computes, the same double sum in the same order, because both
 * are this kernel) and a q8_1 copy of the output for the next matmul
 * (q8_1_put_all below; q8_1_put for the looping form).
 *
 * add / silu_mul: grid-stride loops over n floats, one element per thread
 * per step.
 */
#include "common.cuh"

#define NORM_THREADS 256
#define NORM_NPT 8            /* elements per thread held in registers */

static __device__ __forceinline__ double warp_sum_d(double v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off, 32);
    return v;
}

/* A block's sum of the threads' ss: each warp's butterfly, the warp sums
 * once through shared memory (part: THREADS / 32), then every warp adds
 * them with the same butterfly, so all threads get the same bits without
 * a second barrier. */
template <int THREADS>
static __device__ __forceinline__ double block_sum_d(double ss, double *part)
{
    const int lane = threadIdx.x % 32;
    ss = warp_sum_d(ss);
    if (lane == 0)
        part[threadIdx.x / 32] = ss;
    __syncthreads();
    return warp_sum_d(lane < THREADS / 32 ? part[lane] : 0.0);
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

/* Pass 1 from registers: this thread's elements i = first + j*step of the
 * group (j < NORM_NPT, i < g) into v, and its gains into wv, all loads
 * issued before any use; with ADD, v = x + add is stored back to x (the
 * norm reads the sum, as add then rms_norm would). Returns this thread's
 * part of the sum of squares (double, increasing i). */
template <bool ADD>
static __device__ __forceinline__ double norm_load(float *v, float *wv, float *xg,
                                                   const float *ag, const float *w, int64_t g,
                                                   int first, int step)
{
    float a[NORM_NPT];
#pragma unroll
    for (int j = 0; j < NORM_NPT; j++) {
        const int64_t i = first + (int64_t)j * step;
        v[j] = i < g ? xg[i] : 0.0f;
        a[j] = ADD && i < g ? ag[i] : 0.0f;
        wv[j] = i < g ? w[i] : 0.0f;
    }
    double ss = 0.0;
#pragma unroll
    for (int j = 0; j < NORM_NPT; j++) {
        const int64_t i = first + (int64_t)j * step;
        if (i < g) {
            if (ADD) {
                v[j] = v[j] + a[j];
                xg[i] = v[j];
            }
            ss = fma((double)v[j], (double)v[j], ss);   /* explicit: rope.cu's fused norm matches */
        }
    }
    return ss;
}

/* The q8_1 epilogue of a thread's NORM_NPT outputs: q8_1_put's arithmetic
 * for all of them at once, the NORM_NPT max and sum butterflies interleaved
 * (kq_warp_max / kq_warp_sum's steps in their order, so the same bits;
 * tests/cuemu runs these shuffles too, so cuda_ops' fused == unfused checks
 * cover them) instead of one element's 10 dependent shuffles after
 * another. Every lane of the warp calls it; elements past g (whole warps,
 * as g % 32 == 0) are reduced but not stored. */
static __device__ __forceinline__ void q8_1_put_all(uint8_t *row, int64_t g, const float *o,
                                                    int first, int step)
{
    float amax[NORM_NPT], sum[NORM_NPT];
#pragma unroll
    for (int j = 0; j < NORM_NPT; j++) {
        amax[j] = fabsf(o[j]);
        sum[j] = o[j];
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
#pragma unroll
        for (int j = 0; j < NORM_NPT; j++) {
            amax[j] = fmaxf(amax[j], __shfl_xor_sync(0xffffffffu, amax[j], off, 32));
            sum[j] += __shfl_xor_sync(0xffffffffu, sum[j], off, 32);
        }
    }
#pragma unroll
    for (int j = 0; j < NORM_NPT; j++) {
        const int64_t i = first + (int64_t)j * step;
        if (i < g) {
            const float d = amax[j] / 127.0f;
            const int q = amax[j] == 0.0f ? 0 : (int)roundf(o[j] / d);
            ((int8_t *)row)[i] = (int8_t)q;
            if (i % 32 == 0)
                ((float2 *)(row + g))[i / 32] = make_float2(d, sum[j]);
        }
    }
}

/* Pass 2 from registers: out = x * scale * w, and the q8_1 row when Q. */
template <bool Q>
static __device__ __forceinline__ void norm_store(float *og, const float *v, const float *wv,
                                                  int64_t g, float scale, uint8_t *qrow,
                                                  int first, int step)
{
    float o[NORM_NPT];
#pragma unroll
    for (int j = 0; j < NORM_NPT; j++) {
        const int64_t i = first + (int64_t)j * step;
        o[j] = v[j] * scale * wv[j];
        if (i < g)
            og[i] = o[j];
    }
    if (Q)
        q8_1_put_all(qrow, g, o, first, step);
}

static __device__ __forceinline__ float norm_scale(double ss, int64_t g, float eps)
{
    return 1.0f / sqrtf((float)(ss / (double)g) + eps);
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
    float v[NORM_NPT], wv[NORM_NPT];
    double ss = norm_load<ADD>(v, wv, x + grp * g, ADD ? add + grp * g : NULL, w, g, lane, 32);
    ss = warp_sum_d(ss);
    norm_store<Q>(out + grp * g, v, wv, g, norm_scale(ss, g, eps),
                  Q ? q + (size_t)grp * q_stride : NULL, lane, 32);
}

/* One block of THREADS per group, g <= THREADS * NORM_NPT. The warp sums
 * meet in shared memory once; every warp then adds them with the same
 * butterfly, so all threads hold the same scale without a second barrier. */
template <bool ADD, bool Q, int THREADS>
static __global__ void __launch_bounds__(THREADS)
rms_norm_block(float *out, float *x, const float *add, const float *w, int64_t g, float eps,
               uint8_t *q, size_t q_stride)
{
    __shared__ double part[THREADS / 32];
    const int64_t r = blockIdx.x;
    float v[NORM_NPT], wv[NORM_NPT];
    double ss = norm_load<ADD>(v, wv, x + r * g, ADD ? add + r * g : NULL, w, g, threadIdx.x,
                               THREADS);
    ss = block_sum_d<THREADS>(ss, part);
    norm_store<Q>(out + r * g, v, wv, g, norm_scale(ss, g, eps),
                  Q ? q + (size_t)r * q_stride : NULL, threadIdx.x, THREADS);
}

/* Rows beyond 1024 * NORM_NPT floats: the looping form (re-reads x and w). */
template <bool ADD, bool Q>
static __global__ void __launch_bounds__(NORM_THREADS)
rms_norm_loop(float *out, float *x, const float *add, const float *w, int64_t g, float eps,
              uint8_t *q, size_t q_stride)
{
    __shared__ double part[NORM_THREADS / 32];
    const int64_t r = blockIdx.x;
    float *xg = x + r * g;
    double ss = 0.0;
    for (int64_t i = threadIdx.x; i < g; i += NORM_THREADS) {
        float v = xg[i];
        if (ADD) {
            v = v + add[r * g + i];
            xg[i] = v;
        }
        ss = fma((double)v, (double)v, ss);
    }
    const float scale = norm_scale(block_sum_d<NORM_THREADS>(ss, part), g, eps);
    for (int64_t i = threadIdx.x; i < g; i += NORM_THREADS) {
        const float o = xg[i] * scale * w[i];
        out[r * g + i] = o;
        if (Q)
            q8_1_put(q + (size_t)r * q_stride, g, i, o);
    }
}

template <bool ADD, bool Q>
static cudaError_t norm_launch(float *out, float *x, const float *add, const float *w,
                               int64_t n_groups, int64_t g, float eps, uint8_t *q,
                               size_t q_stride, cudaStream_t stream)
{
    if (g <= 32 * NORM_NPT) {
        KQ_LAUNCH(kq_cdiv(n_groups, NORM_THREADS / 32), NORM_THREADS, 0, stream,
                  rms_norm_warp<ADD, Q>)(out, x, add, w, n_groups, g, eps, q, q_stride);
        return cudaGetLastError();
    }
    if (n_groups > 0x7fffffff)
        return cudaErrorInvalidValue;
    const unsigned nb = (unsigned)n_groups;
    if (g <= NORM_THREADS * NORM_NPT)
        KQ_LAUNCH(nb, NORM_THREADS, 0, stream, rms_norm_block<ADD, Q, NORM_THREADS>)(
            out, x, add, w, g, eps, q, q_stride);
    else if (g <= 1024 * NORM_NPT)
        KQ_LAUNCH(nb, 1024, 0, stream, rms_norm_block<ADD, Q, 1024>)(out, x, add, w, g, eps, q,
                                                                      q_stride);
    else
        KQ_LAUNCH(nb, NORM_THREADS, 0, stream, rms_norm_loop<ADD, Q>)(out, x, add, w, g, eps, q,
                                                                       q_stride);
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
