/* test_cuda_status.c -- the CUDA backend's error mapping (cuda_status.c):
 * a failed CUDA or cuBLAS call becomes a status naming the call and where
 * it was made; out of memory, from either library, says what the device
 * has free and leaves the backend usable; a sticky CUDA error or a failed
 * cuBLAS execution poisons the backend once, after which cuda_enter
 * refuses every op naming the first cause. On a struct cuda_backend of
 * the test's own: no kernel runs, and the runtime is asked only for the
 * free memory (0 of 0 without a device), so it needs no GPU.
 */
#include <check.h>
#include <string.h>

#include "cuda_internal.h"
#include "support.h"

static struct cuda_backend cb;

static void setup(void)
{
    memset(&cb, 0, sizeof(cb));
    cb.device = 3;
}

#define HAS(msg, s) ck_assert_msg(strstr((msg), (s)) != NULL, "'%s' lacks '%s'", (msg), (s))

START_TEST(test_cuda_status_out_of_memory)
{
    struct st_err err = { 0 };
    ck_assert_int_eq(cuda_status(&cb, cudaSuccess, "x", "a/b.c", 1, &err), ST_OK);
    ck_assert_int_eq(cuda_status(&cb, cudaErrorMemoryAllocation, "cudaMalloc(&p, n)",
                                 "src/backend/cuda/cuda_mem.c", 12, &err), ST_ERR_DEVICE_OOM);
    HAS(err.msg, "cuda:3 out of memory in cudaMalloc(&p, n) (cuda_mem.c:12); ");
    HAS(err.msg, " MiB free of ");
    ck_assert_int_eq(cuda_blas_status(&cb, CUBLAS_STATUS_SUCCESS, "x", "a/b.c", 1, &err), ST_OK);
    ck_assert_int_eq(cuda_blas_status(&cb, CUBLAS_STATUS_ALLOC_FAILED, "cublasGemmEx(h)",
                                      "src/backend/cuda/cuda_matmul.c", 40, &err),
                     ST_ERR_DEVICE_OOM);
    HAS(err.msg, "cuda:3 cuBLAS out of memory in cublasGemmEx(h) (cuda_matmul.c:40); ");
    HAS(err.msg, " MiB free of ");
    ck_assert(!cb.poisoned);
}
END_TEST

START_TEST(test_cuda_status_plain_errors_do_not_poison)
{
    struct st_err err = { 0 };
    ck_assert_int_eq(cuda_status(&cb, cudaErrorInvalidValue, "cudaMemcpy(d, s, n)", "x/y.c", 7,
                                 &err), ST_ERR_DEVICE);
    HAS(err.msg, "cuda:3 cudaMemcpy(d, s, n): ");
    HAS(err.msg, " (y.c:7)");
    ck_assert_int_eq(cuda_blas_status(&cb, CUBLAS_STATUS_INVALID_VALUE, "cublasGemmEx(h)", "y.c",
                                      8, &err), ST_ERR_DEVICE);
    HAS(err.msg, "cuda:3 cuBLAS cublasGemmEx(h): status ");
    ck_assert(!cb.poisoned);
}
END_TEST

START_TEST(test_cuda_status_blas_execution_poisons)
{
    struct st_err err = { 0 };
    ck_assert_int_eq(cuda_blas_status(&cb, CUBLAS_STATUS_EXECUTION_FAILED, "cublasGemmEx(h)",
                                      "a/z.c", 9, &err), ST_ERR_DEVICE);
    HAS(err.msg, "cuda:3 cuBLAS cublasGemmEx(h): execution failed, status ");
    ck_assert(cb.poisoned);
    /* a later sticky error keeps the first cause */
    ck_assert_int_eq(cuda_status(&cb, cudaErrorIllegalAddress, "cudaStreamSynchronize(s)",
                                 "z.c", 10, &err), ST_ERR_DEVICE);
    ck_assert_int_eq(cuda_enter(&cb, &err), ST_ERR_DEVICE);
    HAS(err.msg, "cuda:3 is unusable after an earlier error: cuBLAS execution failed, status ");
    HAS(err.msg, " in cublasGemmEx(h) (z.c:9)");
}
END_TEST

START_TEST(test_cuda_status_sticky_error_poisons)
{
    struct st_err err = { 0 };
    ck_assert_int_eq(cuda_status(&cb, cudaErrorIllegalAddress, "cudaStreamSynchronize(s)",
                                 "z.c", 10, &err), ST_ERR_DEVICE);
    ck_assert(cb.poisoned);
    ck_assert_int_eq(cuda_enter(&cb, &err), ST_ERR_DEVICE);
    HAS(err.msg, "cuda:3 is unusable after an earlier error: ");
    HAS(err.msg, cudaGetErrorString(cudaErrorIllegalAddress));
    HAS(err.msg, " in cudaStreamSynchronize(s) (z.c:10)");
}
END_TEST

/* Without a backend (a call made before one exists): device -1, nothing
 * to poison. */
START_TEST(test_cuda_status_without_backend)
{
    struct st_err err = { 0 };
    ck_assert_int_eq(cuda_blas_status(NULL, CUBLAS_STATUS_EXECUTION_FAILED, "cublasCreate(&h)",
                                      "z.c", 3, &err), ST_ERR_DEVICE);
    HAS(err.msg, "cuda:-1 cuBLAS cublasCreate(&h): ");
    ck_assert_int_eq(cuda_status(NULL, cudaErrorIllegalAddress, "cudaSetDevice(0)", "z.c", 4,
                                 &err), ST_ERR_DEVICE);
    HAS(err.msg, "cuda:-1 cudaSetDevice(0): ");
}
END_TEST

static Suite *cuda_status_suite(void)
{
    Suite *s = suite_create("cuda_status");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_cuda_status_out_of_memory);
    tcase_add_test(tc, test_cuda_status_plain_errors_do_not_poison);
    tcase_add_test(tc, test_cuda_status_blas_execution_poisons);
    tcase_add_test(tc, test_cuda_status_sticky_error_poisons);
    tcase_add_test(tc, test_cuda_status_without_backend);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* CUDA does not survive fork(): the suites run in this process */
    return support_run_suite(cuda_status_suite(), CK_NOFORK);
}
