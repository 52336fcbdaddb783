/* cuemu_blas.cpp -- cuBLAS's two GEMMs on the CPU, column-major as cuBLAS:
 * C[m, n] = alpha * op(A)[m, k] . op(B)[k, n] + beta * C, op = N or T.
 * Inputs f32 or fp16, output f32 or fp16, accumulation in f32 (cuBLAS's
 * CUBLAS_COMPUTE_32F); alpha and beta are read at the call (host pointer
 * mode), and with beta == 0 C is not read (it may hold garbage, as
 * cuBLAS allows). The product is enqueued on the handle's stream, so a
 * capture records it like a kernel. Matrices must lie in device memory of
 * the current device: else CUBLAS_STATUS_INVALID_VALUE.
 */
#include <stdlib.h>

#include "cuda_fp16.h"
#include "cublas_v2.h"
#include "cuemu_internal.h"

struct cuemu_blas {
    cudaStream_t stream;
};

namespace {

struct matrix {
    const void *p;
    cudaDataType type;
    int ld;
    bool trans;

    /* op(M)(i, l) */
    float at(int64_t i, int64_t l) const
    {
        const int64_t off = trans ? l + i * (int64_t)ld : i + l * (int64_t)ld;
        return type == CUDA_R_16F ? __half2float(((const __half *)p)[off])
                                  : ((const float *)p)[off];
    }
};

size_t elem_bytes(cudaDataType t)
{
    return t == CUDA_R_16F ? 2 : 4;
}

/* Bytes a column-major matrix of 'rows' x 'cols' stored with leading
 * dimension ld spans. */
size_t span(int64_t rows, int64_t cols, int ld, cudaDataType t)
{
    if (rows == 0 || cols == 0)
        return 0;
    return (size_t)((cols - 1) * (int64_t)ld + rows) * elem_bytes(t);
}

bool on_device(const void *p, size_t n)
{
    int dev = -1;
    return n == 0 || (cuemu_mem_of(p, n, &dev) == CUEMU_MEM_DEVICE &&
                      dev == cuemu_current_device());
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, float alpha, const void *A, cudaDataType at, int lda, const void *B,
                    cudaDataType bt, int ldb, float beta, void *C, cudaDataType ct, int ldc)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    const bool tA = ta == CUBLAS_OP_T, tB = tb == CUBLAS_OP_T;
    if (m < 0 || n < 0 || k < 0 || (ta != CUBLAS_OP_N && !tA) || (tb != CUBLAS_OP_N && !tB) ||
        lda < (tA ? k : m) || ldb < (tB ? n : k) || ldc < m || lda < 1 || ldb < 1 || ldc < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    if ((at != CUDA_R_32F && at != CUDA_R_16F) || (bt != CUDA_R_32F && bt != CUDA_R_16F) ||
        (ct != CUDA_R_32F && ct != CUDA_R_16F))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!on_device(A, tA ? span(k, m, lda, at) : span(m, k, lda, at)) ||
        !on_device(B, tB ? span(n, k, ldb, bt) : span(k, n, ldb, bt)) ||
        !on_device(C, span(m, n, ldc, ct)))
        return CUBLAS_STATUS_INVALID_VALUE;
    const matrix a{ A, at, lda, tA }, b{ B, bt, ldb, !tB };   /* b.at(j, l) = op(B)(l, j) */
    cuemu_enqueue(h->stream, [=] {
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                float acc = 0.0f;
                for (int64_t l = 0; l < k; l++)
                    acc += a.at(i, l) * b.at(j, l);
                const int64_t off = i + j * (int64_t)ldc;
                float v = alpha * acc;
                if (beta != 0.0f)
                    v += beta * (ct == CUDA_R_16F ? __half2float(((const __half *)C)[off])
                                                  : ((const float *)C)[off]);
                if (ct == CUDA_R_16F)
                    ((__half *)C)[off] = __float2half_rn(v);
                else
                    ((float *)C)[off] = v;
            }
    });
    return CUBLAS_STATUS_SUCCESS;
}

} // namespace

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    *h = new cuemu_blas{ nullptr };
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    return on_device(ws, bytes) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc)
{
    return gemm(h, ta, tb, m, n, k, *alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, *beta, C,
                CUDA_R_32F, ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
    (void)algo;
    if (compute != CUBLAS_COMPUTE_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm(h, ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb,
                *(const float *)beta, C, ct, ldc);
}
