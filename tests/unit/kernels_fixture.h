/* kernels_fixture.h -- seeded random numbers for the CPU kernel suites
 * (test_kernels.c, test_kernels_affine.c): splitmix64 on a caller-held
 * state, so each test's blocks are the same on every run. Header-only. */
#ifndef STRATA_TEST_KERNELS_FIXTURE_H
#define STRATA_TEST_KERNELS_FIXTURE_H

#include <stdint.h>

static inline uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi), 24 bits. */
static inline float rndf(uint64_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)(rnd(s) >> 40) / (float)(1 << 24);
}

#endif /* STRATA_TEST_KERNELS_FIXTURE_H */
