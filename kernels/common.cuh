/* common.cuh -- helpers shared by the kernel files: half/bf16 decoding,
 * unaligned int loads from packed blocks, dp4a, warp reductions, and the
 * device-side error flag.
 *
 * Everything here is __host__ __device__ where it can be, so the block
 * decoders built on it (quant_dev.cuh) also compile into a host program
 * that checks them against the C reference without a GPU
 * (tests/unit/test_cuda_kern_host.cu). The #ifdef __CUDA_ARCH__ branches
 * pick the device intrinsic; the host branch computes the same value the
 * long way.
 *
 * Error flag: kernels that read per-row integers (ids, slots, positions,
 * expert ids) cannot return an error, so an out-of-range value makes them
 * clamp (never touch memory out of bounds) and OR a bit into *err_flag,
 * a device word the backend reads back at the next sync (KF_* below).
 */
#ifndef STRATA_KERNELS_COMMON_CUH
#define STRATA_KERNELS_COMMON_CUH

#include <stdint.h>
#include <string.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.h"

#define KQ_HD __host__ __device__ __forceinline__

/* A launch, written KQ_LAUNCH(grid, block, smem, stream, kernel)(args):
 * kernel<<<grid, block, smem, stream>>>(args) under nvcc; on tests/cuemu
 * (CUDA run on the CPU, which has no <<< >>>) the same launch through
 * cuemu_launch, so the CUDA suites also run where there is no GPU. */
#ifdef CUEMU
#define KQ_LAUNCH(grid, block, smem, stream, ...) \
    cuemu_launch(#__VA_ARGS__, __VA_ARGS__, grid, block, smem, stream)
#define KQ_DYN_SMEM(type, name) type *name = (type *)cuemu_dyn_smem()
#else
#define KQ_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<grid, block, smem, stream>>>
/* The block's dynamic shared memory as an array 'name' of 'type'. */
#define KQ_DYN_SMEM(type, name) extern __shared__ type name[]
#endif

/* "#pragma unroll" for code that the host compiler sees too. */
#ifdef __CUDA_ARCH__
#define KQ_UNROLL _Pragma("unroll")
#else
#define KQ_UNROLL
#endif

/* ---- fp16 / bf16 -------------------------------------------------------- */

KQ_HD float kq_h2f(uint16_t h)
{
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(h));
#else
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ffu, u;
    float f;
    if (e == 0) {
        f = (float)m * 5.9604644775390625e-8f;   /* m * 2^-24 */
        memcpy(&u, &f, 4);
        u |= sign;
    } else if (e == 31) {
        u = sign | 0x7f800000u | (m << 13);
    } else {
        u = sign | ((e + 112) << 23) | (m << 13);
    }
    memcpy(&f, &u, 4);
    return f;
#endif
}

KQ_HD float kq_bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

/* fp16 at byte offset 'off' of a block (2-byte aligned). */
KQ_HD float kq_h2f_at(const uint8_t *p, int off)
{
    return kq_h2f(*(const uint16_t *)(const void *)(p + off));
}

/* ---- int loads from packed blocks --------------------------------------- */

/* 4 bytes at p + 4*i where p is only 2-byte aligned (Q8_0, Q4_0, Q6_K,
 * IQ3_S, IQ3_XXS blocks have odd multiples of 2 as sizes). */
KQ_HD int kq_int_b2(const uint8_t *p, int i)
{
    const uint16_t *q = (const uint16_t *)(const void *)(p + 4 * i);
    return (int)((uint32_t)q[0] | ((uint32_t)q[1] << 16));
}

/* 4 bytes at p + 4*i, p 4-byte aligned. */
KQ_HD int kq_int_b4(const uint8_t *p, int i)
{
    return ((const int *)(const void *)p)[i];
}

/* n ints (n % 4 == 0) at p, which must be 16-byte aligned, by 16-byte loads:
 * a quarter of the load instructions of int loads, and whole 16-byte pieces
 * per lane (HOPPER.md). Q4_K/Q5_K quants (144/176-byte blocks at 16-byte
 * aligned offsets) and q8_1 activation rows (16-byte strides) qualify. */
template <int n>
KQ_HD void kq_load_ints16(const uint8_t *p, int *v)
{
    const int4 *q = (const int4 *)(const void *)p;
KQ_UNROLL
    for (int i = 0; i < n / 4; i++) {
        const int4 t = q[i];
        v[4 * i] = t.x;
        v[4 * i + 1] = t.y;
        v[4 * i + 2] = t.z;
        v[4 * i + 3] = t.w;
    }
}

/* ---- integer SIMD within a word ------------------------------------------ */

/* sum of the 4 signed byte products of a and b, plus c */
KQ_HD int kq_dp4a(int a, int b, int c)
{
#ifdef __CUDA_ARCH__
    return __dp4a(a, b, c);
#else
    for (int k = 0; k < 4; k++)
        c += (int)(int8_t)(a >> (8 * k)) * (int)(int8_t)(b >> (8 * k));
    return c;
#endif
}

/* per-byte a - b, modulo 256 (no borrow between bytes) */
KQ_HD int kq_vsub4(int a, int b)
{
#ifdef __CUDA_ARCH__
    return (int)__vsub4((unsigned)a, (unsigned)b);
#else
    uint32_t r = 0;
    for (int k = 0; k < 4; k++)
        r |= (uint32_t)(uint8_t)((uint8_t)(a >> (8 * k)) - (uint8_t)(b >> (8 * k))) << (8 * k);
    return (int)r;
#endif
}

/* 4 sign bits -> 4 bytes of 0x00 / 0xff (bit k -> byte k). The multiply
 * places bit k at bit 8k (copies at 0, 7, 14 and 21 never overlap). */
KQ_HD int kq_sign_mask4(uint32_t s4)
{
    return (int)(((s4 * 0x00204081u) & 0x01010101u) * 0xffu);
}

/* 4 magnitudes (bytes) with 4 sign bits applied: bytes become -m when set. */
KQ_HD int kq_apply_signs(uint32_t mag4, uint32_t s4)
{
    int m = kq_sign_mask4(s4 & 0xfu);
    return kq_vsub4((int)mag4 ^ m, m);
}

/* ---- warp reductions (device only) --------------------------------------- */

#if defined(__CUDACC__) || defined(CUEMU)
/* Sum over the 'width' lanes of an aligned group (width a power of two <= 32).
 * Every lane of the warp must call it. (On tests/cuemu the same butterfly
 * runs as one meeting of the warp: the same sums, fewer fiber switches.) */
template <int width>
static __device__ __forceinline__ float kq_group_sum(float v)
{
#ifdef CUEMU
    return cuemu_butterfly(v, width, false);
#else
#pragma unroll
    for (int off = width / 2; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off, 32);
    return v;
#endif
}

static __device__ __forceinline__ float kq_warp_sum(float v)
{
    return kq_group_sum<32>(v);
}

static __device__ __forceinline__ float kq_warp_max(float v)
{
#ifdef CUEMU
    return cuemu_butterfly(v, 32, true);
#else
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off, 32));
    return v;
#endif
}

/* Raise bit 'bit' of the error word (see KF_* in kernels.h). */
static __device__ __forceinline__ void kq_flag(unsigned *err_flag, unsigned bit)
{
    if (err_flag)
        atomicOr(err_flag, bit);
}

/* Ceil-divide for launch sizes. */
static inline unsigned kq_cdiv(long long a, long long b)
{
    return (unsigned)((a + b - 1) / b);
}
#endif

#endif /* STRATA_KERNELS_COMMON_CUH */
