/* quant_ref.c -- scalar reference dequantizers, one per weight type.
 *
 * Written from ENGINE.md section 2, one super-block at a time, as plainly
 * as the formats allow: these are what the SIMD and CUDA kernels are
 * compared with, so clarity beats speed here. The quantizers live in
 * quant_quantize.c.
 */
#include "strata/compiler.h"
#include "strata/quant.h"

uint16_t st_f32_to_fp16(float f)
{
    uint32_t u = st_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;

    if (a > 0x7f800000u)                    /* NaN: keep it quiet */
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u)                   /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {                  /* below 2^-14: fp16 subnormal */
        if (a <= 0x33000000u)               /* <= 2^-25 rounds (even) to 0 */
            return sign;
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e;           /* value = m >> shift units of 2^-24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
        return (uint16_t)(sign | q);        /* q == 0x400 is the smallest normal */
    }
    uint32_t h = ((((a >> 23) - 112) << 10) | ((a & 0x7fffffu) >> 13));
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;                                /* a carry into the exponent is right */
    return (uint16_t)(sign | h);
}

bool st_quant_supported(enum st_dtype t)
{
    switch (t) {
    case ST_DTYPE_F32: case ST_DTYPE_F16: case ST_DTYPE_BF16:
    case ST_DTYPE_Q8_0: case ST_DTYPE_Q4_0: case ST_DTYPE_Q4_1:
    case ST_DTYPE_Q5_0: case ST_DTYPE_Q5_1: case ST_DTYPE_Q2_K:
    case ST_DTYPE_Q3_K: case ST_DTYPE_Q4_K:
    case ST_DTYPE_Q5_K: case ST_DTYPE_Q6_K: case ST_DTYPE_IQ3_S:
    case ST_DTYPE_IQ3_XXS: case ST_DTYPE_IQ4_XS: case ST_DTYPE_Q8_K:
        return true;
    default:
        return false;
    }
}

static void deq_q8_0(const struct st_block_q8_0 *b, float *y)
{
    float d = st_fp16_to_f32(b->d);
    for (int j = 0; j < ST_QK; j++)
        y[j] = d * (float)b->qs[j];
}

static void deq_q4_0(const struct st_block_q4_0 *b, float *y)
{
    float d = st_fp16_to_f32(b->d);
    for (int j = 0; j < ST_QK / 2; j++) {
        y[j] = d * (float)((b->qs[j] & 0xf) - 8);
        y[j + ST_QK / 2] = d * (float)((b->qs[j] >> 4) - 8);
    }
}

/* Q4_1: x = d * q + m, q the unsigned nibble (m is added, not subtracted). */
static void deq_q4_1(const struct st_block_q4_1 *b, float *y)
{
    float d = st_fp16_to_f32(b->d), m = st_fp16_to_f32(b->m);
    for (int j = 0; j < ST_QK / 2; j++) {
        y[j] = d * (float)(b->qs[j] & 0xf) + m;
        y[j + ST_QK / 2] = d * (float)(b->qs[j] >> 4) + m;
    }
}

/* Q5_0 / Q5_1: q = nibble | (bit e of the qh word) << 4, e the element;
 * Q5_0 centres (q - 16), Q5_1 adds its min. */
static void deq_q5_0(const struct st_block_q5_0 *b, float *y)
{
    float d = st_fp16_to_f32(b->d);
    uint32_t qh = st_q5_qh(b->qh);
    for (int j = 0; j < ST_QK / 2; j++) {
        int lo = (b->qs[j] & 0xf) | (int)(((qh >> j) & 1) << 4);
        int hi = (b->qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
        y[j] = d * (float)(lo - 16);
        y[j + ST_QK / 2] = d * (float)(hi - 16);
    }
}

static void deq_q5_1(const struct st_block_q5_1 *b, float *y)
{
    float d = st_fp16_to_f32(b->d), m = st_fp16_to_f32(b->m);
    uint32_t qh = st_q5_qh(b->qh);
    for (int j = 0; j < ST_QK / 2; j++) {
        int lo = (b->qs[j] & 0xf) | (int)(((qh >> j) & 1) << 4);
        int hi = (b->qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
        y[j] = d * (float)lo + m;
        y[j + ST_QK / 2] = d * (float)hi + m;
    }
}

/* Q2_K, per element e: h = e/128, g = (e%128)/32, l = e%32; q = bits
 * 2g..2g+1 of qs[32h + l]; scale byte e/16 (low nibble sc, high nibble m). */
static void deq_q2_k(const struct st_block_q2_k *b, float *y)
{
    float d = st_fp16_to_f32(b->d), dmin = st_fp16_to_f32(b->dmin);
    for (int e = 0; e < ST_QK_K; e++) {
        int h = e / 128, g = (e % 128) / 32, l = e % 32;
        int q = (b->qs[32 * h + l] >> (2 * g)) & 3;
        uint8_t sc = b->scales[e / 16];
        y[e] = d * (float)(sc & 0xf) * (float)q - dmin * (float)(sc >> 4);
    }
}

/* Q3_K: 2 low bits as Q2_K; bit (4h + g) of hmask[l] set means q as is,
 * clear means q - 4; scale e/16 is 6 bits minus 32 (st_q3k_scale). */
static void deq_q3_k(const struct st_block_q3_k *b, float *y)
{
    float d = st_fp16_to_f32(b->d);
    for (int e = 0; e < ST_QK_K; e++) {
        int h = e / 128, g = (e % 128) / 32, l = e % 32;
        int q = (b->qs[32 * h + l] >> (2 * g)) & 3;
        if (!((b->hmask[l] >> (4 * h + g)) & 1))
            q -= 4;
        y[e] = d * (float)(st_q3k_scale(e / 16, b->scales) - 32) * (float)q;
    }
}

/* Q4_K: chunk c of 32 bytes holds elements 64c..64c+63; low nibbles use
 * (sc, m)[2c], high nibbles (sc, m)[2c+1]. */
static void deq_q4_k(const struct st_block_q4_k *b, float *y)
{
    float d = st_fp16_to_f32(b->d), dmin = st_fp16_to_f32(b->dmin);
    for (int c = 0; c < 4; c++) {
        uint8_t sc0, m0, sc1, m1;
        st_q4k_scale_min(2 * c, b->scales, &sc0, &m0);
        st_q4k_scale_min(2 * c + 1, b->scales, &sc1, &m1);
        const uint8_t *q = b->qs + 32 * c;
        for (int l = 0; l < 32; l++) {
            y[64 * c + l] = d * sc0 * (float)(q[l] & 0xf) - dmin * m0;
            y[64 * c + 32 + l] = d * sc1 * (float)(q[l] >> 4) - dmin * m1;
        }
    }
}

/* Q5_K: as Q4_K plus a 5th bit: bit 2c (low half) / 2c+1 (high) of qh[l]. */
static void deq_q5_k(const struct st_block_q5_k *b, float *y)
{
    float d = st_fp16_to_f32(b->d), dmin = st_fp16_to_f32(b->dmin);
    for (int c = 0; c < 4; c++) {
        uint8_t sc0, m0, sc1, m1;
        st_q4k_scale_min(2 * c, b->scales, &sc0, &m0);
        st_q4k_scale_min(2 * c + 1, b->scales, &sc1, &m1);
        const uint8_t *q = b->qs + 32 * c;
        for (int l = 0; l < 32; l++) {
            int lo = (q[l] & 0xf) + (((b->qh[l] >> (2 * c)) & 1) << 4);
            int hi = (q[l] >> 4) + (((b->qh[l] >> (2 * c + 1)) & 1) << 4);
            y[64 * c + l] = d * sc0 * (float)lo - dmin * m0;
            y[64 * c + 32 + l] = d * sc1 * (float)hi - dmin * m1;
        }
    }
}

/* Q6_K, per element e: h = e/128, r = e%128, k = r/32, l = r%32. */
static void deq_q6_k(const struct st_block_q6_k *b, float *y)
{
    float d = st_fp16_to_f32(b->d);
    for (int e = 0; e < ST_QK_K; e++) {
        int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
        uint8_t lowb = b->ql[64 * h + l + 32 * (k & 1)];
        int low4 = k < 2 ? (lowb & 0xf) : (lowb >> 4);
        int hi2 = (b->qh[32 * h + l] >> (2 * k)) & 3;
        int q = (low4 | (hi2 << 4)) - 32;
        y[e] = d * (float)b->scales[e / 16] * (float)q;
    }
}

static void deq_q8_k(const struct st_block_q8_k *b, float *y)
{
    for (int j = 0; j < ST_QK_K; j++)
        y[j] = b->d * (float)b->qs[j];
}

/* IQ3_S: 8 sub-blocks of 32; db = d(1+2s); 9-bit grid index per 4 weights;
 * explicit sign bit per weight. */
static void deq_iq3_s(const struct st_block_iq3_s *b, float *y)
{
    float d = st_fp16_to_f32(b->d);
    for (int ib = 0; ib < 8; ib++) {
        int s = (b->scales[ib / 2] >> (4 * (ib & 1))) & 0xf;
        float db = d * (float)(1 + 2 * s);
        for (int k = 0; k < 8; k++) {
            int idx = b->qs[8 * ib + k] | (((b->qh[ib] >> k) & 1) << 8);
            uint32_t g = st_iq3s_grid[idx];
            uint8_t sg = b->signs[4 * ib + k / 2];
            for (int j = 0; j < 4; j++) {
                float mag = (float)((g >> (8 * j)) & 0xff);
                bool neg = (sg >> (4 * (k & 1) + j)) & 1;
                y[32 * ib + 4 * k + j] = db * (neg ? -mag : mag);
            }
        }
    }
}

/* IQ3_XXS: 64 8-bit indices into the 256-entry grid, then one LE u32 per
 * sub-block: 4 x 7-bit sign fields (ksigns, even parity) + 4-bit scale. */
static void deq_iq3_xxs(const struct st_block_iq3_xxs *b, float *y)
{
    float d = st_fp16_to_f32(b->d);
    const uint8_t *w = b->qs + ST_QK_K / 4;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t a = (uint32_t)w[4 * ib] | (uint32_t)w[4 * ib + 1] << 8 |
                     (uint32_t)w[4 * ib + 2] << 16 | (uint32_t)w[4 * ib + 3] << 24;
        float db = d * (0.5f + (float)(a >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++) {
            uint8_t signs = st_ksigns_iq2xs[(a >> (7 * l)) & 127];
            uint32_t g0 = st_iq3xxs_grid[b->qs[8 * ib + 2 * l]];
            uint32_t g1 = st_iq3xxs_grid[b->qs[8 * ib + 2 * l + 1]];
            for (int j = 0; j < 8; j++) {
                uint32_t g = j < 4 ? g0 : g1;
                float mag = (float)((g >> (8 * (j & 3))) & 0xff);
                y[32 * ib + 8 * l + j] = db * ((signs >> j) & 1 ? -mag : mag);
            }
        }
    }
}

static void deq_iq4_xs(const struct st_block_iq4_xs *b, float *y)
{
    float d = st_fp16_to_f32(b->d);
    for (int ib = 0; ib < 8; ib++) {
        int ls = ((b->scales_l[ib / 2] >> (4 * (ib & 1))) & 0xf) |
                 (((b->scales_h >> (2 * ib)) & 3) << 4);
        float dl = d * (float)(ls - 32);
        const uint8_t *q = b->qs + 16 * ib;
        for (int j = 0; j < 16; j++) {
            y[32 * ib + j] = dl * (float)st_kvalues_iq4nl[q[j] & 0xf];
            y[32 * ib + 16 + j] = dl * (float)st_kvalues_iq4nl[q[j] >> 4];
        }
    }
}

static void deq_floats(enum st_dtype t, const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        switch (t) {
        case ST_DTYPE_F32:
            memcpy(&dst[i], p + 4 * i, 4);
            break;
        case ST_DTYPE_F16:
            memcpy(&h, p + 2 * i, 2);
            dst[i] = st_fp16_to_f32(h);
            break;
        default:                            /* BF16 */
            memcpy(&h, p + 2 * i, 2);
            dst[i] = st_bf16_to_f32(h);
            break;
        }
    }
}

void st_dequant_row(enum st_dtype t, const void *src, float *dst, int64_t n)
{
    const struct st_dtype_info *info = st_dtype_info((uint32_t)t);
    ST_ASSERT(info && st_quant_supported(t) && n >= 0 && n % info->block_elems == 0);
    if (t == ST_DTYPE_F32 || t == ST_DTYPE_F16 || t == ST_DTYPE_BF16) {
        deq_floats(t, src, dst, n);
        return;
    }
    int64_t nb = n / info->block_elems;
    const uint8_t *p = src;
    for (int64_t i = 0; i < nb; i++, p += info->block_bytes) {
        float *y = dst + i * info->block_elems;
        switch (t) {
        case ST_DTYPE_Q8_0:    deq_q8_0((const void *)p, y); break;
        case ST_DTYPE_Q4_0:    deq_q4_0((const void *)p, y); break;
        case ST_DTYPE_Q4_1:    deq_q4_1((const void *)p, y); break;
        case ST_DTYPE_Q5_0:    deq_q5_0((const void *)p, y); break;
        case ST_DTYPE_Q5_1:    deq_q5_1((const void *)p, y); break;
        case ST_DTYPE_Q2_K:    deq_q2_k((const void *)p, y); break;
        case ST_DTYPE_Q3_K:    deq_q3_k((const void *)p, y); break;
        case ST_DTYPE_Q4_K:    deq_q4_k((const void *)p, y); break;
        case ST_DTYPE_Q5_K:    deq_q5_k((const void *)p, y); break;
        case ST_DTYPE_Q6_K:    deq_q6_k((const void *)p, y); break;
        case ST_DTYPE_Q8_K:    deq_q8_k((const void *)p, y); break;
        case ST_DTYPE_IQ3_S:   deq_iq3_s((const void *)p, y); break;
        case ST_DTYPE_IQ3_XXS: deq_iq3_xxs((const void *)p, y); break;
        case ST_DTYPE_IQ4_XS:  deq_iq4_xs((const void *)p, y); break;
        default:               ST_ASSERT(!"unreachable"); break;
        }
    }
}
