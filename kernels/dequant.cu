/* dequant.cu -- whole-row dequantization: the embedding lookup (rows picked
 * by id, to f32; also a plain row gather when the table is an f32
 * activation buffer) and weights to fp16 for the cuBLAS prompt path.
 *
 * Mapping: one thread per 32-element piece of a row (quant_dev.cuh
 * kq_deq_row32: a sub-block of a quantized block, or 32 consecutive float
 * elements); 128 threads per block along the row (grid.x), one row per
 * grid.y (65535 at most per launch: the launcher loops over row chunks).
 * Each thread decodes its 32 values into registers and stores them.
 *
 * Layout: table/weight rows of row_bytes, dense, n_cols elements (a
 * multiple of 32); outputs dense [n_cols, rows].
 */
#include "quant_dev.cuh"

#define DQ_THREADS 128
#define DQ_MAX_ROWS 65535

template <int T>
static __global__ void __launch_bounds__(DQ_THREADS)
embed_rows(float *out, const uint8_t *table, size_t row_bytes, int64_t n_table,
           const int32_t *ids, int64_t n_cols, unsigned *err_flag)
{
    const int64_t r = blockIdx.y;
    const int64_t s = (int64_t)blockIdx.x * DQ_THREADS + threadIdx.x;
    if (s >= n_cols / 32)
        return;
    int64_t id = ids[r];
    if (id < 0 || id >= n_table) {
        kq_flag(err_flag, ST_KF_BAD_ID);
        id = 0;
    }
    float y[32];
    kq_deq_row32<T>(table + (size_t)id * row_bytes, s, y);
    float4 *o = (float4 *)(out + r * n_cols + s * 32);
#pragma unroll
    for (int j = 0; j < 8; j++)
        o[j] = make_float4(y[4 * j], y[4 * j + 1], y[4 * j + 2], y[4 * j + 3]);
}

template <int T>
static __global__ void __launch_bounds__(DQ_THREADS)
dequant_f16(__half *out, const uint8_t *w, size_t row_bytes, int64_t n_cols)
{
    const int64_t r = blockIdx.y;
    const int64_t s = (int64_t)blockIdx.x * DQ_THREADS + threadIdx.x;
    if (s >= n_cols / 32)
        return;
    float y[32];
    kq_deq_row32<T>(w + (size_t)r * row_bytes, s, y);
    __half2 *o = (__half2 *)(out + r * n_cols + s * 32);
#pragma unroll
    for (int j = 0; j < 16; j++)
        o[j] = __floats2half2_rn(y[2 * j], y[2 * j + 1]);
}

extern "C" bool st_kern_dequant_supported(int type)
{
    switch (type) {
#define DQ_OK(T) case T: return true;
        KQ_QUANT_TYPES(DQ_OK)
        KQ_FLOAT_TYPES(DQ_OK)
#undef DQ_OK
    default:
        return false;
    }
}

extern "C" cudaError_t st_kern_embed(float *out, const void *table, int type, size_t row_bytes,
                                     int64_t n_table, const int32_t *ids, int64_t n_rows,
                                     int64_t n_cols, unsigned *err_flag, cudaStream_t stream)
{
    if (!st_kern_dequant_supported(type) || n_cols % 32 != 0)
        return cudaErrorInvalidValue;
    for (int64_t r0 = 0; r0 < n_rows; r0 += DQ_MAX_ROWS) {
        int64_t nr = n_rows - r0 < DQ_MAX_ROWS ? n_rows - r0 : DQ_MAX_ROWS;
        dim3 grid(kq_cdiv(n_cols / 32, DQ_THREADS), (unsigned)nr);
        float *o = out + r0 * n_cols;
        const uint8_t *t = (const uint8_t *)table;
        switch (type) {
#define DQ_EMBED(T)                                                                      \
    case T:                                                                              \
        KQ_LAUNCH(grid, DQ_THREADS, 0, stream, embed_rows<T>)(o, t, row_bytes, n_table,       \
                                                              ids + r0, n_cols, err_flag);  \
        break;
            KQ_QUANT_TYPES(DQ_EMBED)
            KQ_FLOAT_TYPES(DQ_EMBED)
#undef DQ_EMBED
        }
    }
    return cudaGetLastError();
}

extern "C" cudaError_t st_kern_dequant_f16(uint16_t *out, const void *w, int type,
                                           size_t row_bytes, int64_t n_rows, int64_t n_cols,
                                           cudaStream_t stream)
{
    if (!st_kern_dequant_supported(type) || n_cols % 32 != 0)
        return cudaErrorInvalidValue;
    for (int64_t r0 = 0; r0 < n_rows; r0 += DQ_MAX_ROWS) {
        int64_t nr = n_rows - r0 < DQ_MAX_ROWS ? n_rows - r0 : DQ_MAX_ROWS;
        dim3 grid(kq_cdiv(n_cols / 32, DQ_THREADS), (unsigned)nr);
        __half *o = (__half *)out + r0 * n_cols;
        const uint8_t *src = (const uint8_t *)w + (size_t)r0 * row_bytes;
        switch (type) {
#define DQ_F16(T)                                                                    \
    case T:                                                                          \
        KQ_LAUNCH(grid, DQ_THREADS, 0, stream, dequant_f16<T>)(o, src, row_bytes, n_cols);  \
        break;
            KQ_QUANT_TYPES(DQ_F16)
            KQ_FLOAT_TYPES(DQ_F16)
#undef DQ_F16
        }
    }
    return cudaGetLastError();
}
