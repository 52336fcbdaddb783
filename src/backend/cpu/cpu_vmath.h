/* cpu_vmath.h -- small float math the CPU kernels share: exp for x <= 0
 * (scalar and eight AVX2 lanes) and the sum of eight lanes.
 *
 * exp is Cephes' expf: Cody-Waite reduction by ln 2 and a degree-6
 * polynomial, relative error < 1e-7. x (NaN included) is clamped at -87,
 * where exp is ~1e-38: a partition that holds exp(0) gets nothing from
 * it; a caller that needs exp(-inf) to be exactly 0 masks the result.
 * The scalar and the AVX2 versions evaluate the same expression, so they
 * agree to float rounding (the vector one fuses its multiply-adds).
 *
 * Everything here is static inline; the AVX2 functions carry their own
 * target attribute (avx2 + fma), so a caller compiled with a wider target
 * inlines them and the rest of the binary stays baseline x86-64.
 *
 * Thread: any (pure).
 */
#ifndef STRATA_BACKEND_CPU_VMATH_H
#define STRATA_BACKEND_CPU_VMATH_H

#include <stdint.h>
#include <string.h>

#define CPU_EXP_LO    (-87.0f)
#define CPU_EXP_LOG2E 1.44269504f
#define CPU_EXP_LN2HI 0.693145752f
#define CPU_EXP_LN2LO 1.42860677e-6f
#define CPU_EXP_ROUND 12582912.0f   /* 1.5 * 2^23: adding it rounds to an integer */
#define CPU_EXP_P0    1.9875691500e-4f
#define CPU_EXP_P1    1.3981999507e-3f
#define CPU_EXP_P2    8.3334519073e-3f
#define CPU_EXP_P3    4.1665795894e-2f
#define CPU_EXP_P4    1.6666665459e-1f
#define CPU_EXP_P5    5.0000001201e-1f

/* exp(x) for x <= 0; below -87 (and NaN) it is exp(-87). */
static inline float cpu_exp_neg(float x)
{
    x = !(x >= CPU_EXP_LO) ? CPU_EXP_LO : x;
    float n = (x * CPU_EXP_LOG2E + CPU_EXP_ROUND) - CPU_EXP_ROUND;
    float r = x - n * CPU_EXP_LN2HI;
    r = r - n * CPU_EXP_LN2LO;
    float p =
        ((((CPU_EXP_P0 * r + CPU_EXP_P1) * r + CPU_EXP_P2) * r + CPU_EXP_P3) * r + CPU_EXP_P4) * r +
        CPU_EXP_P5;
    p = p * r * r + r + 1.0f;
    int32_t e = ((int32_t)n + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &e, sizeof(scale));
    return p * scale;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define CPU_VMATH_AVX2 __attribute__((target("avx2,fma")))

/* cpu_exp_neg on eight lanes (max_ps takes its 2nd operand for a NaN lane,
 * so NaN clamps too). */
static inline CPU_VMATH_AVX2 __m256 cpu_exp_neg8(__m256 x)
{
    x = _mm256_max_ps(x, _mm256_set1_ps(CPU_EXP_LO));
    __m256 mag = _mm256_set1_ps(CPU_EXP_ROUND);
    __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(CPU_EXP_LOG2E), mag), mag);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CPU_EXP_LN2HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CPU_EXP_LN2LO), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(CPU_EXP_P0), r, _mm256_set1_ps(CPU_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CPU_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CPU_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CPU_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CPU_EXP_P5));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* v[0] + ... + v[7], pairwise (the same order on every call). */
static inline CPU_VMATH_AVX2 float cpu_hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

#endif /* STRATA_BACKEND_CPU_VMATH_H */
