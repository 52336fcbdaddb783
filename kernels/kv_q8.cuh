/* kv_q8.cuh -- the Q8_0 KV cache on the device: the KV write's quantizer
 * and the dequantizing loads of the two attention kernels
 * (docs/CUDA.md "KV cache types").
 *
 * A cache row (one position, every KV head) is the CPU backend's: n_kv*D/32
 * GGML Q8_0 blocks of 34 bytes (an f16 scale d, then 32 int8 q; x = d*q),
 * so slot files and prefix copies hold the same bytes on either backend
 * and the KV write stores exactly st_quantize_row_q8_0's bytes. A block is
 * 17 uint16 units and 2-byte aligned; the kernels address the cache in
 * those units: (position t, KV head g) starts at unit (t*n_kv + g)*17*NB,
 * NB = D/32 blocks a head. The device kernels take NB = 1, 2, 4 or 8
 * (D = 32, 64, 128, 256): then a head row starts on a multiple of 2*NB
 * bytes and a group of G = min(NB, 4) blocks is 17 aligned words of 2G
 * bytes (17 ushort, uint32 or uint2 loads), while every index into those
 * words is a compile-time constant.
 *
 * The int8 -> float conversion is a plain cast (I2F): the exact trick of
 * placing b xor 0x80 in the mantissa of 2^23 and subtracting made ptxas
 * spill in more instances (sm_90, -Xptxas -v: docs/CUDA.md).
 */
#ifndef STRATA_KERNELS_KV_Q8_CUH
#define STRATA_KERNELS_KV_Q8_CUH
#include "common.cuh"

#define KVQ8_UNITS 17   /* uint16 units a block */

/* Units of one cache row / the start of KV head g in it, for a Q8_0 (q8)
 * or f16 cache of n_kv heads of D elements. */
static __device__ __forceinline__ size_t kv_row_units(bool q8, int n_kv, int D)
{
    return q8 ? (size_t)n_kv * (size_t)(D / 32) * KVQ8_UNITS : (size_t)n_kv * (size_t)D;
}

static __device__ __forceinline__ size_t kv_head_units(bool q8, int g, int D)
{
    return q8 ? (size_t)g * (size_t)(D / 32) * KVQ8_UNITS : (size_t)g * (size_t)D;
}

/* The KV write of one block: lane l holds element l of a 32-block whose
 * units start at blk (all 32 lanes call it). d = max|x| / 127, q =
 * round-half-away(x * (1/d)) (0 when d is 0), d stored as f16: the
 * arithmetic of st_quantize_row_q8_0 (and of the CPU's AVX2 quantizer),
 * operation for operation, so both backends store the same bytes. */
static __device__ __forceinline__ void kvq8_store(uint16_t *blk, float x, int lane)
{
    const float amax = kq_warp_max(fabsf(x));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    ((int8_t *)(blk + 1))[lane] = (int8_t)(int)roundf(x * id);
    if (lane == 0)
        blk[0] = __half_as_ushort(__float2half_rn(d));
}

/* The 4 signed bytes of w as floats (see the top). */
static __device__ __forceinline__ void kvq8_i8x4(uint32_t w, float (&f)[4])
{
#pragma unroll
    for (int k = 0; k < 4; k++)
        f[k] = (float)(int8_t)(uint8_t)(w >> (8 * k));
}

/* A group of G blocks (17*G units at p, aligned to 2G bytes) in registers:
 * G = 1: u[i] = unit i; G = 2, 4: u[i] = units 2i, 2i+1 (little-endian). */
template <int G>
static __device__ __forceinline__ void kvq8_load(const uint16_t *__restrict__ p,
                                                 uint32_t (&u)[G == 1 ? 17 : 17 * G / 2])
{
    if constexpr (G == 1) {
#pragma unroll
        for (int i = 0; i < 17; i++)
            u[i] = p[i];
    } else if constexpr (G == 2) {
        const uint32_t *q = (const uint32_t *)(const void *)p;
#pragma unroll
        for (int i = 0; i < 17; i++)
            u[i] = q[i];
    } else {
        const uint2 *q = (const uint2 *)(const void *)p;
#pragma unroll
        for (int i = 0; i < 17; i++) {
            const uint2 t = q[i];
            u[2 * i] = t.x;
            u[2 * i + 1] = t.y;
        }
    }
}

/* Unit i / the 32 bits of units i, i+1 of a loaded group (i a constant). */
template <int G, int N>
static __device__ __forceinline__ uint32_t kvq8_unit(const uint32_t (&u)[N], int i)
{
    return G == 1 ? u[i] : (u[i / 2] >> (16 * (i % 2))) & 0xffffu;
}

template <int G, int N>
static __device__ __forceinline__ uint32_t kvq8_word(const uint32_t (&u)[N], int i)
{
    if (G == 1)
        return u[i] | (u[i + 1] << 16);
    return i % 2 == 0 ? u[i / 2] : (u[i / 2] >> 16) | (u[i / 2 + 1] << 16);
}

/* n (1, 2, 4 or 8) consecutive elements of a block, the first at even
 * offset o (any offset when n == 1): blk points at the block's scale unit.
 * f[k] = d * q[o + k], exact in float (11 x 8 significant bits). */
template <int n>
static __device__ __forceinline__ void kvq8_elems(const uint16_t *__restrict__ blk, int o,
                                                  float *f)
{
    const float d = kq_h2f(blk[0]);
    const uint16_t *q = blk + 1 + o / 2;
    if constexpr (n == 1) {
        const int b = (int)(int8_t)(uint8_t)(q[0] >> (8 * (o % 2)));
        f[0] = d * (float)b;
    } else {
        uint32_t w[(n + 3) / 4];
#pragma unroll
        for (int i = 0; i < (n + 3) / 4; i++)
            w[i] = n == 2 ? (uint32_t)q[0] : (uint32_t)q[2 * i] | ((uint32_t)q[2 * i + 1] << 16);
#pragma unroll
        for (int i = 0; i < (n + 3) / 4; i++) {
            float e[4];
            kvq8_i8x4(w[i], e);
#pragma unroll
            for (int k = 0; k < 4 && 4 * i + k < n; k++)
                f[4 * i + k] = d * e[k];
        }
    }
}

#endif /* STRATA_KERNELS_KV_Q8_CUH */
