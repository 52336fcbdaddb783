/* kern_avx2.c -- the x86 kernels (kern_x86.inc) for AVX2 + FMA + F16C,
 * int8 dots through vpmaddubsw/vpmaddwd. Selected at run time when the
 * CPU has these features; the attributes below are per function, so the
 * rest of the binary stays baseline x86-64. */
#if defined(__x86_64__)
#define KT __attribute__((target("avx2,fma,f16c")))
#define KNX 4
#define KNAME "avx2"
#define KTABLE cpu_kernels_avx2
#define ACC_US8(a, u, s) \
    _mm256_add_epi32((a), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define ACC_S16(a, x, y) _mm256_add_epi32((a), _mm256_madd_epi16((x), (y)))
#include "kern_x86.inc"
#else
typedef int st_kern_avx2_empty_;   /* not x86-64: nothing to build */
#endif
