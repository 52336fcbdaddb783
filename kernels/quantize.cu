/* quantize.cu -- activation conversions before a matmul: f32 rows to q8_1
 * (the dp4a path) and f32 to fp16, saturating (the cuBLAS path).
 *
 * q8_1 mapping: one warp per 32-element block, one element per lane; 8
 * warps (256 threads) per CUDA block. grid.x covers the blocks of a row,
 * grid.y is the row. Lane l reads x[32b + l], the warp reduces max|x| and
 * sum(x); each lane writes its int8, lane 0 the (d, s) pair.
 *
 * Layout (kernels.h): row r at dst + r*dst_stride holds n int8 quants then
 * n/32 float2 (d, s). d = amax/127, q = round(x/d) (0 when amax is 0), s =
 * the sum of the 32 original floats (ggml's CUDA q8_1 convention).
 */
#include "common.cuh"

#define Q8_WARPS 8

static __global__ void __launch_bounds__(32 * Q8_WARPS)
quantize_q8_1(uint8_t *dst, size_t dst_stride, const float *x, int64_t n)
{
    const int64_t r = blockIdx.y;
    const int64_t b = (int64_t)blockIdx.x * Q8_WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (b >= n / 32)
        return;                         /* whole warp leaves together */
    const float v = x[r * n + b * 32 + lane];
    const float amax = kq_warp_max(fabsf(v));
    const float sum = kq_warp_sum(v);
    const float d = amax / 127.0f;
    const int q = amax == 0.0f ? 0 : (int)roundf(v / d);
    uint8_t *row = dst + (size_t)r * dst_stride;
    ((int8_t *)row)[b * 32 + lane] = (int8_t)q;
    if (lane == 0)
        ((float2 *)(row + n))[b] = make_float2(d, sum);
}

extern "C" cudaError_t st_kern_quantize_q8_1(void *dst, size_t dst_stride, const float *x,
                                             int64_t n, int64_t n_rows, cudaStream_t stream)
{
    if (n % 32 != 0 || n_rows < 1 || dst_stride < st_kern_q8_1_row_bytes(n))
        return cudaErrorInvalidValue;
    /* grid.y <= 65535: MoE pairs of a large prompt chunk (ubatch * k) can be more */
    for (int64_t r0 = 0; r0 < n_rows; r0 += 65535) {
        const int64_t nr = n_rows - r0 < 65535 ? n_rows - r0 : 65535;
        dim3 grid(kq_cdiv(n / 32, Q8_WARPS), (unsigned)nr);
        KQ_LAUNCH(grid, 32 * Q8_WARPS, 0, stream, quantize_q8_1)(
            (uint8_t *)dst + (size_t)r0 * dst_stride, dst_stride, x + r0 * n, n);
    }
    return cudaGetLastError();
}

/* Saturating: an activation beyond fp16's range (|x| > 65504) becomes
 * +-65504, not inf, so one outlier cannot turn a whole GEMM row into
 * inf/NaN (NaN stays NaN). */
static __global__ void f32_to_f16(__half *dst, const float *x, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];   /* comparisons, not fminf/fmaxf: those turn NaN into a bound */
        dst[i] = __float2half_rn(v > 65504.0f ? 65504.0f : v < -65504.0f ? -65504.0f : v);
    }
}

extern "C" cudaError_t st_kern_f32_to_f16(uint16_t *dst, const float *x, int64_t n,
                                          cudaStream_t stream)
{
    if (n < 1)
        return cudaSuccess;
    unsigned blocks = kq_cdiv(n, 256);
    KQ_LAUNCH(blocks < 65536 ? blocks : 65535, 256, 0, stream, f32_to_f16)((__half *)dst, x, n);
    return cudaGetLastError();
}
