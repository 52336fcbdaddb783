/* mt19937.c -- the 32-bit Mersenne Twister and its uniform double
 * (mt19937.h). Constants are the generator's published parameters: word
 * size 32, state 624 words, middle word 397, twist matrix 0x9908b0df,
 * tempering (11, 7 0x9d2c5680, 15 0xefc60000, 18), initialisation
 * multiplier 1812433253.
 */
#include <math.h>

#include "engine/sample/mt19937.h"

#define MT_M 397
#define MT_UPPER 0x80000000u
#define MT_LOWER 0x7fffffffu

void st_mt_seed(struct st_mt19937 *m, uint32_t seed)
{
    m->mt[0] = seed;
    for (uint32_t k = 1; k < ST_MT_N; k++)
        m->mt[k] = 1812433253u * (m->mt[k - 1] ^ (m->mt[k - 1] >> 30)) + k;
    m->i = ST_MT_N;
}

/* The next 624 words of state at once. */
static void twist(struct st_mt19937 *m)
{
    for (int32_t k = 0; k < ST_MT_N; k++) {
        uint32_t y = (m->mt[k] & MT_UPPER) | (m->mt[(k + 1) % ST_MT_N] & MT_LOWER);
        uint32_t v = m->mt[(k + MT_M) % ST_MT_N] ^ (y >> 1);
        m->mt[k] = (y & 1u) ? v ^ 0x9908b0dfu : v;
    }
    m->i = 0;
}

uint32_t st_mt_next(struct st_mt19937 *m)
{
    if (m->i >= ST_MT_N)
        twist(m);
    uint32_t y = m->mt[m->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double st_mt_uniform(struct st_mt19937 *m)
{
    double a = (double)st_mt_next(m);
    double b = (double)st_mt_next(m);
    double u = (a + b * 4294967296.0) / 18446744073709551616.0;   /* 2^32, 2^64 */
    return u < 1.0 ? u : nextafter(1.0, 0.0);
}
