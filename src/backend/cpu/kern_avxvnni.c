/* kern_avxvnni.c -- the x86 kernels (kern_x86.inc) with AVX-VNNI: the
 * VEX-encoded vpdpbusd/vpdpwssd fuse multiply, pair-add and accumulate of
 * the int8/int16 dots into one instruction (Alder Lake, Sapphire Rapids
 * and later). Per-function target attributes; chosen at run time. */
#if defined(__x86_64__)
#define KT __attribute__((target("avx2,fma,f16c,avxvnni")))
#define KNX 4
#define KNAME "avx-vnni"
#define KTABLE cpu_kernels_avxvnni
#define ACC_US8(a, u, s) _mm256_dpbusd_avx_epi32((a), (u), (s))
#define ACC_S16(a, x, y) _mm256_dpwssd_avx_epi32((a), (x), (y))
#include "kern_x86.inc"
#else
typedef int st_kern_avxvnni_empty_;
#endif
