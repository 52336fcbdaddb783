/* cuda_fp16.h -- cuemu's half type: storage and the conversions kernels/
 * use, computed on the CPU with round-to-nearest-even (as the device does).
 * C++ only, like the kernels that include it.
 */
#ifndef CUEMU_CUDA_FP16_H
#define CUEMU_CUDA_FP16_H

#include <stdint.h>
#include <string.h>

struct __half {
    uint16_t __x;
};
struct __half2 {
    __half x, y;
};
typedef __half half;
typedef __half2 half2;

/* IEEE binary32 -> binary16, round to nearest even; overflow -> inf, NaN
 * stays NaN (quiet), subnormals kept. */
static inline __half __float2half_rn(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    uint16_t h;
    if (a > 0x7f800000u) {
        h = (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    } else if (a >= 0x477ff000u) {   /* rounds to beyond 65504 */
        h = (uint16_t)(sign | 0x7c00u);
    } else if (a < 0x38800000u) {    /* below 2^-14: subnormal or zero */
        const int shift = 126 - (int)(a >> 23);   /* 14 + (113 - e) */
        if (shift > 24) {
            h = (uint16_t)sign;
        } else {
            const uint32_t m = (a & 0x7fffffu) | 0x800000u;
            const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u),
                           half_ulp = 1u << (shift - 1);
            uint32_t r = q + (rem > half_ulp || (rem == half_ulp && (q & 1u)));
            h = (uint16_t)(sign | r);
        }
    } else {
        uint32_t r = a - 0x38000000u;   /* rebias 127 -> 15 */
        r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
        h = (uint16_t)(sign | r);
    }
    __half out;
    out.__x = h;
    return out;
}

static inline __half __float2half(float f)
{
    return __float2half_rn(f);
}

static inline float __half2float(__half h)
{
    const uint32_t sign = (uint32_t)(h.__x >> 15) << 31, e = (h.__x >> 10) & 0x1fu,
                   m = h.__x & 0x3ffu;
    uint32_t u;
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
}

static inline unsigned short __half_as_ushort(__half h)
{
    return h.__x;
}

static inline __half __ushort_as_half(unsigned short u)
{
    __half h;
    h.__x = u;
    return h;
}

static inline __half2 __floats2half2_rn(float a, float b)
{
    __half2 r;
    r.x = __float2half_rn(a);
    r.y = __float2half_rn(b);
    return r;
}

#endif /* CUEMU_CUDA_FP16_H */
