/* make_random.c -- random weights for make-model, written as blocks of the
 * target type directly (no float detour, no quantizer search), so even
 * the medium preset is written in seconds.
 *
 * Every element is (approximately) zero-mean with standard deviation
 * 'sigma': floats are uniform in [-sqrt(3) sigma, +sqrt(3) sigma]; for a
 * block type the quant codes are uniform, the sub-block scales uniform in
 * a high range, and the super-scale d set so that d * E[scale] * rms(code)
 * is sigma. The asymmetric K types pick each min as scale * mean(code), so
 * sub-blocks stay centred. The PRNG is xorshift64*, seeded per tensor.
 */
#include <string.h>

#include "model/synth/synth.h"
#include "strata/quant.h"

uint64_t st_mm_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

static int rint_(uint64_t *s, int lo, int hi)      /* uniform in [lo, hi] */
{
    return lo + (int)((st_mm_rand(s) >> 33) % (uint64_t)(hi - lo + 1));
}

static float unif(uint64_t *s)                     /* uniform in [-1, 1) */
{
    return (float)(st_mm_rand(s) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

static void rbytes(uint64_t *s, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(st_mm_rand(s) >> 56);
}

/* Root mean square of the byte magnitudes of a grid table. */
static float grid_rms(const uint32_t *grid, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 4; j++) {
            double m = (grid[i] >> (8 * j)) & 0xff;
            sum += m * m;
        }
    double ms = sum / (4.0 * n), r = ms;
    for (int it = 0; it < 30; it++)                 /* Newton sqrt: no libm here */
        r = 0.5 * (r + ms / r);
    return (float)r;
}

static void rand_q4_k(uint64_t *s, struct st_block_q4_k *b, float sigma, int nmax)
{
    /* code uniform 0..nmax: rms about the mean = sqrt(((nmax+1)^2-1)/12) */
    float rms = nmax == 15 ? 4.61f : 9.23f, mean = (float)nmax / 2.f;
    float d = sigma / (rms * 47.5f), dmin = d * (mean + 0.5f);
    uint8_t sc[8], m[8];
    b->d = st_f32_to_fp16(d);
    b->dmin = st_f32_to_fp16(dmin);
    for (int j = 0; j < 8; j++) {
        sc[j] = (uint8_t)rint_(s, 32, 63);
        m[j] = (uint8_t)((sc[j] * nmax + (nmax + 1) / 2) / (nmax + 1)); /* sc * mean / (mean + .5) */
    }
    for (int j = 0; j < 4; j++) {
        b->scales[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        b->scales[j + 4] = (uint8_t)((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        b->scales[j + 8] = (uint8_t)((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
    }
    rbytes(s, b->qs, sizeof(b->qs));
}

static void rand_iq3_s(uint64_t *s, struct st_block_iq3_s *b, float sigma, float rms)
{
    rbytes(s, b->qs, sizeof(b->qs));
    rbytes(s, b->qh, sizeof(b->qh));
    rbytes(s, b->signs, sizeof(b->signs));
    for (int j = 0; j < 4; j++) {                   /* s in 4..15: 1+2s in 9..31 */
        int lo = rint_(s, 4, 15);   /* one draw a statement: C leaves the order */
        int hi = rint_(s, 4, 15);   /* of two calls in one expression open */
        b->scales[j] = (uint8_t)(lo | hi << 4);
    }
    b->d = st_f32_to_fp16(sigma / (rms * 20.f));
}

static void rand_iq3_xxs(uint64_t *s, struct st_block_iq3_xxs *b, float sigma, float rms)
{
    rbytes(s, b->qs, 64);
    for (int ib = 0; ib < 8; ib++) {                /* 4 x 7 sign bits + 4-bit scale 4..15 */
        uint32_t a = (uint32_t)(st_mm_rand(s) >> 36);
        a |= (uint32_t)rint_(s, 4, 15) << 28;
        for (int k = 0; k < 4; k++)
            b->qs[64 + 4 * ib + k] = (uint8_t)(a >> (8 * k));
    }
    b->d = st_f32_to_fp16(sigma / (rms * 5.0f));
}

static void rand_iq4_xs(uint64_t *s, struct st_block_iq4_xs *b, float sigma)
{
    b->scales_h = 0;
    memset(b->scales_l, 0, sizeof(b->scales_l));
    for (int ib = 0; ib < 8; ib++) {                /* ls in 40..63: ls - 32 in 8..31 */
        int ls = rint_(s, 40, 63);
        b->scales_l[ib / 2] |= (uint8_t)((ls & 0xf) << (4 * (ib & 1)));
        b->scales_h |= (uint16_t)((ls >> 4) << (2 * ib));
    }
    rbytes(s, b->qs, sizeof(b->qs));
    b->d = st_f32_to_fp16(sigma / (64.f * 19.5f));
}

/* Q4_1 / Q5_1 (nmax 15 / 31): codes uniform, min centring them; Q5_0 is
 * centred by its -16 (mean -0.5 d, small against sigma). */
static void rand_q4_1(uint64_t *s, struct st_block_q4_1 *b, float sigma)
{
    float d = sigma / 4.61f;
    b->d = st_f32_to_fp16(d);
    b->m = st_f32_to_fp16(-7.5f * d);
    rbytes(s, b->qs, sizeof(b->qs));
}

static void rand_q5(uint64_t *s, uint16_t *d, uint16_t *m, uint8_t *qh, uint8_t *qs, float sigma)
{
    float dd = sigma / 9.23f;
    *d = st_f32_to_fp16(dd);
    if (m)
        *m = st_f32_to_fp16(-15.5f * dd);
    rbytes(s, qh, 4);
    rbytes(s, qs, ST_QK / 2);
}

/* Q2_K: sc in 8..15 (rms 11.7), q uniform 0..3 (rms about the mean 1.118);
 * m = sc with dmin = 1.5 d puts each sub-block's mean at zero. */
static void rand_q2_k(uint64_t *s, struct st_block_q2_k *b, float sigma)
{
    float d = sigma / (11.7f * 1.118f);
    b->d = st_f32_to_fp16(d);
    b->dmin = st_f32_to_fp16(1.5f * d);
    for (int g = 0; g < 16; g++) {
        int sc = rint_(s, 8, 15);
        b->scales[g] = (uint8_t)(sc | (sc << 4));
    }
    rbytes(s, b->qs, sizeof(b->qs));
}

/* Q3_K: |s - 32| in 8..31 (rms 20.7) with a random sign per sub-block, so
 * the -0.5 mean of the codes -4..3 (rms 2.345) cancels on average. */
static void rand_q3_k(uint64_t *s, struct st_block_q3_k *b, float sigma)
{
    memset(b->scales, 0, sizeof(b->scales));
    for (int g = 0; g < 16; g++) {
        int v = rint_(s, 8, 31);
        v = 32 + (rint_(s, 0, 1) ? v : -v);      /* 1..24 or 40..63 */
        b->scales[g % 8] |= (uint8_t)((v & 0xf) << (g < 8 ? 0 : 4));
        b->scales[8 + g % 4] |= (uint8_t)((v >> 4) << (2 * (g / 4)));
    }
    rbytes(s, b->hmask, sizeof(b->hmask));
    rbytes(s, b->qs, sizeof(b->qs));
    b->d = st_f32_to_fp16(sigma / (20.7f * 2.345f));
}

struct grids {
    float rms_iq3s, rms_iq3xxs;                     /* rms magnitude of each grid */
};

static void rand_block(uint64_t *s, enum st_dtype t, void *blk, float sigma,
                       const struct grids *g)
{
    switch (t) {
    case ST_DTYPE_Q8_0: {
        struct st_block_q8_0 *b = blk;
        b->d = st_f32_to_fp16(sigma * 1.7320508f / 127.f);
        for (int j = 0; j < ST_QK; j++)
            b->qs[j] = (int8_t)rint_(s, -127, 127);
        break;
    }
    case ST_DTYPE_Q4_0: {
        struct st_block_q4_0 *b = blk;
        b->d = st_f32_to_fp16(sigma / 4.61f);
        rbytes(s, b->qs, sizeof(b->qs));
        break;
    }
    case ST_DTYPE_Q4_1:
        rand_q4_1(s, blk, sigma);
        break;
    case ST_DTYPE_Q5_0: {
        struct st_block_q5_0 *b = blk;
        rand_q5(s, &b->d, NULL, b->qh, b->qs, sigma);
        break;
    }
    case ST_DTYPE_Q5_1: {
        struct st_block_q5_1 *b = blk;
        rand_q5(s, &b->d, &b->m, b->qh, b->qs, sigma);
        break;
    }
    case ST_DTYPE_Q2_K:
        rand_q2_k(s, blk, sigma);
        break;
    case ST_DTYPE_Q3_K:
        rand_q3_k(s, blk, sigma);
        break;
    case ST_DTYPE_Q4_K:
        rand_q4_k(s, blk, sigma, 15);
        break;
    case ST_DTYPE_Q5_K: {
        struct st_block_q5_k *b = blk;
        struct st_block_q4_k tmp;
        rand_q4_k(s, &tmp, sigma, 31);
        b->d = tmp.d;
        b->dmin = tmp.dmin;
        memcpy(b->scales, tmp.scales, 12);
        memcpy(b->qs, tmp.qs, sizeof(b->qs));
        rbytes(s, b->qh, sizeof(b->qh));
        break;
    }
    case ST_DTYPE_Q6_K: {
        struct st_block_q6_k *b = blk;
        rbytes(s, b->ql, sizeof(b->ql));
        rbytes(s, b->qh, sizeof(b->qh));
        for (int j = 0; j < 16; j++)
            b->scales[j] = (int8_t)rint_(s, 32, 127);
        b->d = st_f32_to_fp16(sigma / (18.47f * 79.5f));
        break;
    }
    case ST_DTYPE_IQ3_S:
        rand_iq3_s(s, blk, sigma, g->rms_iq3s);
        break;
    case ST_DTYPE_IQ3_XXS:
        rand_iq3_xxs(s, blk, sigma, g->rms_iq3xxs);
        break;
    case ST_DTYPE_IQ4_XS:
        rand_iq4_xs(s, blk, sigma);
        break;
    default:
        break;
    }
}

void st_mm_random_rows(uint64_t *state, int type, int64_t ne0, int64_t nrows, float sigma,
                       void *dst)
{
    enum st_dtype t = (enum st_dtype)type;
    const struct st_dtype_info *info = st_dtype_info((uint32_t)type);
    int64_t n = ne0 * nrows;
    uint8_t *p = dst;
    if (t == ST_DTYPE_F32 || t == ST_DTYPE_F16 || t == ST_DTYPE_BF16) {
        float a = sigma * 1.7320508f;
        for (int64_t i = 0; i < n; i++) {
            float v = a * unif(state);
            if (t == ST_DTYPE_F32) {
                memcpy(p + 4 * i, &v, 4);
            } else {
                uint16_t h = t == ST_DTYPE_F16 ? st_f32_to_fp16(v) : st_f32_to_bf16(v);
                memcpy(p + 2 * i, &h, 2);
            }
        }
        return;
    }
    struct grids g = { 0, 0 };
    if (t == ST_DTYPE_IQ3_S)
        g.rms_iq3s = grid_rms(st_iq3s_grid, 512);
    if (t == ST_DTYPE_IQ3_XXS)
        g.rms_iq3xxs = grid_rms(st_iq3xxs_grid, 256);
    for (int64_t i = 0; i < n / info->block_elems; i++)
        rand_block(state, t, p + i * info->block_bytes, sigma, &g);
}
