/* mt19937.h -- the 32-bit Mersenne Twister (Matsumoto and Nishimura 1998,
 * as C++11 specifies std::mt19937) and the uniform double that
 * std::uniform_real_distribution<double>(0, 1) makes of two of its
 * outputs (std::generate_canonical<double, 53>, as libstdc++ has it).
 *
 * Why this generator: llama-server draws each sampled token with exactly
 * these, from a request's seed, so the same seed, prompt and model give
 * the same text here as there (docs/API.md "Sampling"). mt19937.c.
 */
#ifndef STRATA_ENGINE_SAMPLE_MT19937_H
#define STRATA_ENGINE_SAMPLE_MT19937_H

#include <stdint.h>

#define ST_MT_N 624

struct st_mt19937 {
    uint32_t mt[ST_MT_N];
    int32_t  i;         /* next word of mt to temper; ST_MT_N: regenerate first */
};

void st_mt_seed(struct st_mt19937 *m, uint32_t seed);
/* The next 32-bit output. */
uint32_t st_mt_next(struct st_mt19937 *m);
/* A uniform double in [0, 1) from the next two outputs a, b:
 * (a + b * 2^32) / 2^64 rounded to double, and the largest double below 1
 * where that rounds up to 1. */
double st_mt_uniform(struct st_mt19937 *m);

#endif /* STRATA_ENGINE_SAMPLE_MT19937_H */
