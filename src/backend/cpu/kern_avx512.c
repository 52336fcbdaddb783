/* kern_avx512.c -- the x86 kernels (kern_x86.inc) for AVX-512 (F, BW, VL)
 * with VNNI: EVEX vpdpbusd/vpdpwssd, and the 32 vector registers of the
 * EVEX encoding let each weight block pass serve 8 activation rows.
 * Per-function target attributes; chosen at run time. */
#if defined(__x86_64__)
#define KT __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define KNX 8
#define KWIDE 1   /* add the 512-bit kernels of kern_x86_512.inc */
#define KNAME "avx512-vnni"
#define KTABLE cpu_kernels_avx512
#define ACC_US8(a, u, s) _mm256_dpbusd_epi32((a), (u), (s))
#define ACC_S16(a, x, y) _mm256_dpwssd_epi32((a), (x), (y))
#include "kern_x86.inc"
#else
typedef int st_kern_avx512_empty_;
#endif
