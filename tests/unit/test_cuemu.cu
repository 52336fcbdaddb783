/* test_cuemu.cu -- tests/cuemu itself: the CPU emulation of CUDA that the
 * CUDA suites run on when there is no GPU (-DSTRATA_CUDA_EMU=ON). What the
 * other suites rely on it for is checked here against what CUDA specifies:
 *   - warp intrinsics: __shfl_xor/idx/down/up_sync with widths, ballot,
 *     all/any, match_any, and the one-meeting butterfly reductions (bit for
 *     bit the same as the shuffle loop of kernels/common.cuh);
 *   - __syncthreads across warps and partial warps, threads that return
 *     early, dynamic shared memory, blocks and grids in 3 dimensions;
 *   - what stops the program (a deadlock, a lane that leaves a shuffle,
 *     warps in different intrinsics, a host pointer given to a kernel,
 *     a missing barrier is no such thing: the shuffled order shows it);
 *   - the runtime: launch limits, copy directions, capture rules (unsafe
 *     calls invalidate the capture), graph replay with the captured
 *     arguments, memory accounting and out of memory, devices, and the
 *     cuBLAS GEMMs against a plain loop;
 *   - fp16 rounding against src/backend's st_f32_to_fp16.
 * Plain C++ on the CPU; built only in the emulated configuration.
 */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include "common.cuh"
extern "C" {
#include "support.h"
}
#define _Static_assert static_assert
extern "C" {
#include "strata/quant.h"
}

/* ---- helpers -------------------------------------------------------------- */

template <class T>
static T *dev_alloc(size_t n)
{
    void *p = nullptr;
    ck_assert_int_eq(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
    return (T *)p;
}

template <class T>
static void to_dev(T *d, const T *h, size_t n)
{
    ck_assert_int_eq(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
}

template <class T>
static void to_host(T *h, const T *d, size_t n)
{
    ck_assert_int_eq(cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
}

static uint32_t rng = 12345;
static float rand_float(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((int32_t)rng >> 8) / (float)(1 << 20);
}

/* ---- warp intrinsics -------------------------------------------------------- */

static __global__ void butterfly_kernel(const float *x, uint32_t *fast, uint32_t *loop, int width,
                                        int take_max)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const float v = x[t];
    float w = v;
    for (int off = width / 2; off > 0; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, w, off, 32);
        w = take_max ? fmaxf(w, o) : w + o;
    }
    const float f = cuemu_butterfly(v, width, take_max != 0);
    memcpy(&fast[t], &f, 4);
    memcpy(&loop[t], &w, 4);
}

/* cuemu_butterfly (kq_group_sum / kq_warp_max on the emulator) equals the
 * shuffle loop it stands for, bit for bit. */
START_TEST(test_cuemu_butterfly_equals_shuffles)
{
    enum { N = 128 };
    float h[N];
    for (int i = 0; i < N; i++)
        h[i] = rand_float() * (i % 7 == 0 ? 1e6f : 1.0f);   /* rounding order matters */
    float *x = dev_alloc<float>(N);
    uint32_t *a = dev_alloc<uint32_t>(N), *b = dev_alloc<uint32_t>(N);
    to_dev(x, h, N);
    for (int width = 2; width <= 32; width *= 2)
        for (int mx = 0; mx < 2; mx++) {
            KQ_LAUNCH(2, 64, 0, nullptr, butterfly_kernel)(x, a, b, width, mx);
            ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
            uint32_t ha[N], hb[N];
            to_host(ha, a, N);
            to_host(hb, b, N);
            ck_assert_msg(memcmp(ha, hb, sizeof(ha)) == 0, "width %d max %d", width, mx);
        }
    /* kq_group_sum<8>: lanes of each group of 8 hold that group's sum */
    ck_assert_int_eq(cudaFree(x), cudaSuccess);
    cudaFree(a);
    cudaFree(b);
}
END_TEST

static __global__ void shuffle_kernel(const int *x, int *out)
{
    const int t = threadIdx.x, l = t % 32, v = x[t];
    int *o = out + t * 8;
    o[0] = __shfl_sync(0xffffffffu, v, 3);          /* lane 3 of the warp */
    o[1] = __shfl_sync(0xffffffffu, v, l + 1, 8);   /* next lane, wrapping inside 8 */
    o[2] = __shfl_down_sync(0xffffffffu, v, 2, 16);
    o[3] = __shfl_up_sync(0xffffffffu, v, 5);
    o[4] = (int)__ballot_sync(0xffffffffu, v % 3 == 0);
    o[5] = __all_sync(0xffffffffu, v >= 0) + 2 * __any_sync(0xffffffffu, v == 7);
    o[6] = (int)__match_any_sync(0xffffffffu, v % 4);
    o[7] = l < 16 ? __shfl_xor_sync(0x0000ffffu, v, 1, 16) : -1;   /* half a warp */
}

START_TEST(test_cuemu_warp_intrinsics)
{
    enum { N = 64 };
    int h[N], got[N * 8];
    for (int i = 0; i < N; i++)
        h[i] = (i * 37 + 11) % 50;
    h[40] = 7;
    int *x = dev_alloc<int>(N), *out = dev_alloc<int>(N * 8);
    to_dev(x, h, N);
    KQ_LAUNCH(1, N, 0, nullptr, shuffle_kernel)(x, out);
    ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
    to_host(got, out, N * 8);
    for (int t = 0; t < N; t++) {
        const int w = t / 32 * 32, l = t % 32;
        unsigned ballot = 0, match = 0;
        bool all = true, any = false;
        for (int o = 0; o < 32; o++) {
            ballot |= (unsigned)(h[w + o] % 3 == 0) << o;
            match |= (unsigned)(h[w + o] % 4 == h[t] % 4) << o;
            all = all && h[w + o] >= 0;
            any = any || h[w + o] == 7;
        }
        const int *g = got + t * 8;
        ck_assert_int_eq(g[0], h[w + 3]);
        ck_assert_int_eq(g[1], h[w + l / 8 * 8 + (l % 8 + 1) % 8]);
        ck_assert_int_eq(g[2], l % 16 + 2 < 16 ? h[t + 2] : h[t]);
        ck_assert_int_eq(g[3], l >= 5 ? h[t - 5] : h[t]);
        ck_assert_uint_eq((unsigned)g[4], ballot);
        ck_assert_int_eq(g[5], (int)all + 2 * (int)any);
        ck_assert_uint_eq((unsigned)g[6], match);
        ck_assert_int_eq(g[7], l < 16 ? h[t ^ 1] : -1);
    }
    cudaFree(x);
    cudaFree(out);
}
END_TEST

/* ---- barriers, shared memory, indices ----------------------------------------- */

static __global__ void barrier_kernel(int *out, int n_live)
{
    __shared__ int vals[1024];
    KQ_DYN_SMEM(int, dyn);
    const int t = threadIdx.x;
    if (t >= n_live)
        return;                        /* exited threads do not hold up the barriers */
    vals[t] = t * 3;
    dyn[t] = t + 1;
    __syncthreads();
    int sum = 0;
    for (int i = 0; i < n_live; i++)   /* every thread sees every write */
        sum += vals[i] + dyn[i];
    __syncthreads();
    vals[t] = sum + t;                 /* writes after the second barrier ... */
    __syncthreads();
    const int u = (t + 1) % n_live;    /* ... seen after the third */
    out[blockIdx.x * blockDim.x + t] = vals[u] == sum + u ? sum : -1;
}

START_TEST(test_cuemu_barriers_and_shared_memory)
{
    enum { T = 1000, B = 3 };          /* 1000: a partial last warp */
    int *out = dev_alloc<int>(T * B), got[T * B];
    ck_assert_int_eq(cudaMemset(out, 0, sizeof(got)), cudaSuccess);
    const int live = 777;
    KQ_LAUNCH(B, T, T * sizeof(int), nullptr, barrier_kernel)(out, live);
    ck_assert_int_eq(cudaGetLastError(), cudaSuccess);
    to_host(got, out, T * B);
    const int want = 3 * live * (live - 1) / 2 + live * (live + 1) / 2;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            ck_assert_int_eq(got[b * T + t], t < live ? want : 0);
    cudaFree(out);
}
END_TEST

static __global__ void index_kernel(int *out)
{
    const int x = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    atomicAdd(&out[b * (int)(blockDim.x * blockDim.y * blockDim.z) + x], 1);
}

START_TEST(test_cuemu_grid_and_block_indices)
{
    const dim3 grid(3, 2, 2), block(4, 3, 2);
    const int n = 12 * 24;
    int *out = dev_alloc<int>(n), got[n];
    ck_assert_int_eq(cudaMemset(out, 0, sizeof(got)), cudaSuccess);
    KQ_LAUNCH(grid, block, 0, nullptr, index_kernel)(out);
    to_host(got, out, n);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(got[i], 1);   /* every (block, thread) once */
    cudaFree(out);
}
END_TEST

/* ---- what stops the program ----------------------------------------------------- */

/* Warp 1's low half waits in __syncwarp for its high half, which waits
 * at the barrier for the low half: nothing can run. */
static __global__ void deadlock_kernel(void)
{
    if (threadIdx.x >= 32 && threadIdx.x < 48)
        __syncwarp();
    __syncthreads();
}

START_TEST(test_cuemu_deadlock_stops)
{
    KQ_LAUNCH(1, 64, 0, nullptr, deadlock_kernel)();
}
END_TEST

static __global__ void leaves_shuffle_kernel(int *out)
{
    int v = (int)threadIdx.x;
    if (threadIdx.x % 2 == 0)
        v = __shfl_xor_sync(0xffffffffu, v, 1);   /* the odd lanes never come */
    out[threadIdx.x] = v;
}

START_TEST(test_cuemu_lane_leaving_a_shuffle_stops)
{
    int *out = dev_alloc<int>(32);
    KQ_LAUNCH(1, 32, 0, nullptr, leaves_shuffle_kernel)(out);
}
END_TEST

static __global__ void divergent_kernel(int *out)
{
    int v = (int)threadIdx.x;
    if (threadIdx.x < 16)
        v = __shfl_xor_sync(0xffffffffu, v, 1);
    else
        v = (int)__ballot_sync(0xffffffffu, v);
    out[threadIdx.x] = v;
}

START_TEST(test_cuemu_divergent_warp_intrinsics_stop)
{
    int *out = dev_alloc<int>(32);
    KQ_LAUNCH(1, 32, 0, nullptr, divergent_kernel)(out);
}
END_TEST

static __global__ void write_kernel(int *out)
{
    out[threadIdx.x] = 1;
}

START_TEST(test_cuemu_host_pointer_argument_stops)
{
    static int host[32];
    KQ_LAUNCH(1, 32, 0, nullptr, write_kernel)(host);
}
END_TEST

/* A missing barrier between a shared write and another thread's read
 * gives wrong results, as on a GPU: the fibers do not start in thread
 * order. (Thread t reads the slot thread t+1 writes.) */
static __global__ void race_kernel(int *out, int with_barrier, int salt)
{
    __shared__ int s[256];
    s[threadIdx.x] = (int)threadIdx.x + salt;
    if (with_barrier)
        __syncthreads();
    else
        (void)__ballot_sync(0xffffffffu, 1);   /* a warp meets, the block does not */
    out[threadIdx.x] = s[(threadIdx.x + 32) % 256];
}

START_TEST(test_cuemu_missing_barrier_shows)
{
    int *out = dev_alloc<int>(256), got[256];
    int wrong = 0;
    for (int with = 1; with >= 0; with--) {
        for (int rep = 0; rep < 4; rep++) {
            const int salt = 1000 * (rep + 1) + 10000 * with;   /* unlike the last launch's */
            ck_assert_int_eq(cudaMemset(out, 0, sizeof(got)), cudaSuccess);
            KQ_LAUNCH(1, 256, 0, nullptr, race_kernel)(out, with, salt);
            to_host(got, out, 256);
            for (int t = 0; t < 256; t++) {
                const bool ok = got[t] == (t + 32) % 256 + salt;
                if (with)
                    ck_assert(ok);
                else
                    wrong += !ok;
            }
        }
    }
    ck_assert_int_gt(wrong, 0);
    cudaFree(out);
}
END_TEST

/* ---- the runtime -------------------------------------------------------------- */

static __global__ void count_kernel(int *c, int add)
{
    atomicAdd(c, add);
}

START_TEST(test_cuemu_launch_limits)
{
    int *c = dev_alloc<int>(1), got = 0;
    ck_assert_int_eq(cudaMemset(c, 0, sizeof(int)), cudaSuccess);
    KQ_LAUNCH(1, 1025, 0, nullptr, count_kernel)(c, 1);
    ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidConfiguration);
    ck_assert_int_eq(cudaGetLastError(), cudaSuccess);   /* read and cleared */
    KQ_LAUNCH(dim3(1, 65536), 32, 0, nullptr, count_kernel)(c, 1);
    ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidConfiguration);
    KQ_LAUNCH(1, 32, 48 * 1024 + 1, nullptr, count_kernel)(c, 1);
    ck_assert_int_eq(cudaGetLastError(), cudaErrorInvalidValue);
    to_host(&got, c, 1);
    ck_assert_int_eq(got, 0);                            /* none of them ran */
    KQ_LAUNCH(dim3(2, 3), dim3(8, 4), 0, nullptr, count_kernel)(c, 1);
    to_host(&got, c, 1);
    ck_assert_int_eq(got, 6 * 32);
    cudaFree(c);
}
END_TEST

START_TEST(test_cuemu_copies_check_their_sides)
{
    int host[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, back[8];
    int *d = dev_alloc<int>(8);
    cudaStream_t s;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ck_assert_int_eq(cudaMemcpyAsync(host, d, 32, cudaMemcpyHostToDevice, s),
                     cudaErrorInvalidValue);                            /* reversed */
    ck_assert_int_eq(cudaMemcpyAsync(d, host, 36, cudaMemcpyHostToDevice, s),
                     cudaErrorInvalidValue);                            /* past the end */
    ck_assert_int_eq(cudaMemcpyAsync(d + 1, host, 28, cudaMemcpyHostToDevice, s), cudaSuccess);
    ck_assert_int_eq(cudaMemcpyAsync(back, d + 1, 28, cudaMemcpyDeviceToHost, s), cudaSuccess);
    ck_assert_int_eq(cudaStreamSynchronize(s), cudaSuccess);
    ck_assert_int_eq(memcmp(back, host, 28), 0);
    ck_assert_int_eq(cudaMemsetAsync(host, 0, 4, s), cudaErrorInvalidValue);
    ck_assert_int_eq(cudaFree(host), cudaErrorInvalidDevicePointer);
    (void)cudaGetLastError();
    /* fresh device memory is garbage (0xff bytes), as on a GPU */
    int *fresh = dev_alloc<int>(4), f[4];
    to_host(f, fresh, 4);
    ck_assert_int_eq(f[0], -1);
    cudaFree(fresh);
    cudaFree(d);
    cudaStreamDestroy(s);
}
END_TEST

START_TEST(test_cuemu_capture_and_replay)
{
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ex;
    int *c = dev_alloc<int>(1), got = 0, add = 5;
    ck_assert_int_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ck_assert_int_eq(cudaMemset(c, 0, sizeof(int)), cudaSuccess);
    ck_assert_int_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    KQ_LAUNCH(1, 4, 0, s, count_kernel)(c, add);       /* recorded with add = 5 */
    add = 100;
    ck_assert_int_eq(cudaMemcpyAsync(&got, c, sizeof(int), cudaMemcpyDeviceToHost, s),
                     cudaSuccess);                     /* recorded too */
    ck_assert_int_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    ck_assert_int_eq(got, 0);                          /* nothing ran yet */
    ck_assert_int_eq(cudaGraphInstantiate(&ex, g, 0), cudaSuccess);
    ck_assert_int_eq(cudaGraphLaunch(ex, s), cudaSuccess);
    ck_assert_int_eq(got, 20);
    ck_assert_int_eq(cudaGraphLaunch(ex, s), cudaSuccess);
    ck_assert_int_eq(got, 40);                         /* the same arguments again */
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);

    /* an unsafe call while capturing fails and invalidates the capture */
    void *p = nullptr;
    ck_assert_int_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&p, 16), cudaErrorStreamCaptureUnsupported);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    ck_assert_int_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    ck_assert_ptr_null(g);
    ck_assert_int_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureUnmatched);
    (void)cudaGetLastError();
    ck_assert_int_eq(cudaMalloc(&p, 16), cudaSuccess);   /* fine again */
    cudaFree(p);
    cudaFree(c);
    cudaStreamDestroy(s);
}
END_TEST

START_TEST(test_cuemu_memory_accounting_and_devices)
{
    size_t free0, total, free1;
    ck_assert_int_eq(cudaMemGetInfo(&free0, &total), cudaSuccess);
    void *p = nullptr;
    ck_assert_int_eq(cudaMalloc(&p, 64 << 20), cudaSuccess);
    ck_assert_int_eq(cudaMemGetInfo(&free1, &total), cudaSuccess);
    ck_assert_uint_eq(free0 - free1, (size_t)64 << 20);
    void *too_big = nullptr;
    ck_assert_int_eq(cudaMalloc(&too_big, total), cudaErrorMemoryAllocation);
    ck_assert_ptr_null(too_big);
    ck_assert_int_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    ck_assert_int_eq(cudaFree(p), cudaSuccess);
    ck_assert_int_eq(cudaMemGetInfo(&free1, &total), cudaSuccess);
    ck_assert_uint_eq(free1, free0);
    int n = 0, dev = -1;
    ck_assert_int_eq(cudaGetDeviceCount(&n), cudaSuccess);
    ck_assert_int_ge(n, 1);
    ck_assert_int_eq(cudaSetDevice(n), cudaErrorInvalidDevice);
    ck_assert_int_eq(cudaGetDevice(&dev), cudaSuccess);
    ck_assert_int_eq(dev, 0);
    struct cudaDeviceProp prop;
    ck_assert_int_eq(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    ck_assert_int_eq(prop.major, 9);
    ck_assert_uint_eq(prop.totalGlobalMem, total);
    (void)cudaGetLastError();
}
END_TEST

/* The GEMMs against a plain loop, every transpose, fp16 inputs, beta 0
 * over garbage and beta 1 accumulating. */
START_TEST(test_cuemu_gemm_matches_loop)
{
    enum { M = 7, N = 5, K = 9 };
    cublasHandle_t h;
    ck_assert_int_eq(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    float a[M * K], b[K * N], c0[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = rand_float();
    for (int i = 0; i < K * N; i++)
        b[i] = rand_float();
    for (int i = 0; i < M * N; i++)
        c0[i] = rand_float();
    float *da = dev_alloc<float>(M * K), *db = dev_alloc<float>(K * N);
    float *dc = dev_alloc<float>(M * N);
    to_dev(da, a, M * K);
    to_dev(db, b, K * N);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int beta_i = 0; beta_i < 2; beta_i++) {
                const float alpha = 0.5f, beta = (float)beta_i;
                std::vector<float> init(M * N, beta_i ? 0.0f : NAN);
                if (beta_i)
                    memcpy(init.data(), c0, sizeof(c0));
                to_dev(dc, init.data(), M * N);
                const int lda = ta ? K : M, ldb = tb ? N : K;
                ck_assert_int_eq(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                             tb ? CUBLAS_OP_T : CUBLAS_OP_N, M, N, K, &alpha, da,
                                             lda, db, ldb, &beta, dc, M),
                                 CUBLAS_STATUS_SUCCESS);
                float got[M * N];
                to_host(got, dc, M * N);
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        double acc = 0.0;
                        for (int l = 0; l < K; l++)
                            acc += (double)(ta ? a[l + i * K] : a[i + l * M]) *
                                   (tb ? b[j + l * N] : b[l + j * K]);
                        const double want = alpha * acc + (beta_i ? init[i + j * M] : 0.0);
                        ck_assert_msg(fabs(got[i + j * M] - want) < 1e-5, "ta %d tb %d beta %d",
                                      ta, tb, beta_i);
                    }
            }
    /* fp16 inputs, f32 out: the inputs rounded to fp16 first */
    __half ha[M * K], hb[K * N];
    for (int i = 0; i < M * K; i++)
        ha[i] = __float2half_rn(a[i]);
    for (int i = 0; i < K * N; i++)
        hb[i] = __float2half_rn(b[i]);
    __half *dha = dev_alloc<__half>(M * K), *dhb = dev_alloc<__half>(K * N);
    to_dev(dha, ha, M * K);
    to_dev(dhb, hb, K * N);
    const float one = 1.0f, zero = 0.0f;
    ck_assert_int_eq(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, dha, CUDA_R_16F, K,
                                  dhb, CUDA_R_16F, K, &zero, dc, CUDA_R_32F, M,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     CUBLAS_STATUS_SUCCESS);
    float got[M * N];
    to_host(got, dc, M * N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int l = 0; l < K; l++)
                acc += (double)__half2float(ha[l + i * K]) * __half2float(hb[l + j * K]);
            ck_assert(fabs(got[i + j * M] - acc) < 1e-5);
        }
    /* a host matrix is refused */
    ck_assert_int_eq(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, a, M, db, K, &zero,
                                 dc, M),
                     CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dha);
    cudaFree(dhb);
    cublasDestroy(h);
}
END_TEST

/* __float2half_rn equals the CPU backend's conversion (round to nearest
 * even, overflow to inf, subnormals) and __half2float inverts it. */
START_TEST(test_cuemu_fp16_matches_cpu)
{
    for (uint32_t hbits = 0; hbits < 0x10000; hbits++) {
        const __half h = __ushort_as_half((unsigned short)hbits);
        const float f = __half2float(h);
        ck_assert(f == st_fp16_to_f32((uint16_t)hbits) || (f != f && hbits > 0x7c00u));
        if (f == f)
            ck_assert_uint_eq(__half_as_ushort(__float2half_rn(f)), hbits);
    }
    const float cases[] = { 65504.0f, 65519.99f, 65520.0f, 1e9f, 5.96e-8f, 2.98e-8f, 2.99e-8f,
                            6.1e-5f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, -0.0f, 1e-30f };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (int sgn = 0; sgn < 2; sgn++) {
            const float f = sgn ? -cases[i] : cases[i];
            ck_assert_msg(__half_as_ushort(__float2half_rn(f)) == st_f32_to_fp16(f), "%g", f);
        }
    for (int i = 0; i < 100000; i++) {
        const float f = rand_float() * 70000.0f * (i % 2 ? 1e-6f : 1.0f);
        ck_assert_msg(__half_as_ushort(__float2half_rn(f)) == st_f32_to_fp16(f), "%.9g", f);
    }
}
END_TEST

static Suite *cuemu_suite(void)
{
    Suite *s = suite_create("cuemu");
    TCase *dev = tcase_create("device"), *stop = tcase_create("stops");
    TCase *rt = tcase_create("runtime");
    tcase_add_test(dev, test_cuemu_butterfly_equals_shuffles);
    tcase_add_test(dev, test_cuemu_warp_intrinsics);
    tcase_add_test(dev, test_cuemu_barriers_and_shared_memory);
    tcase_add_test(dev, test_cuemu_grid_and_block_indices);
    tcase_add_test(dev, test_cuemu_missing_barrier_shows);
    tcase_add_test_raise_signal(stop, test_cuemu_deadlock_stops, SIGABRT);
    tcase_add_test_raise_signal(stop, test_cuemu_lane_leaving_a_shuffle_stops, SIGABRT);
    tcase_add_test_raise_signal(stop, test_cuemu_divergent_warp_intrinsics_stop, SIGABRT);
    tcase_add_test_raise_signal(stop, test_cuemu_host_pointer_argument_stops, SIGABRT);
    tcase_add_test(rt, test_cuemu_launch_limits);
    tcase_add_test(rt, test_cuemu_copies_check_their_sides);
    tcase_add_test(rt, test_cuemu_capture_and_replay);
    tcase_add_test(rt, test_cuemu_memory_accounting_and_devices);
    tcase_add_test(rt, test_cuemu_gemm_matches_loop);
    tcase_add_test(rt, test_cuemu_fp16_matches_cpu);
    suite_add_tcase(s, dev);
    suite_add_tcase(s, stop);
    suite_add_tcase(s, rt);
    return s;
}

int main(void)
{
    return support_run_suite(cuemu_suite(), CK_FORK);   /* the 'stops' tests abort */
}
