/* kern_scalar.c -- the reference dot kernels: plain C, one weight row
 * against one activation row at a time, integer sums per block exactly
 * as ggml's scalar vec_dot (ENGINE.md 2.3-2.11).
 *
 * These are deliberately simple: they are the definition every SIMD
 * kernel is tested against, and the fallback on a CPU without AVX2.
 * Block integer sums are exact, so a SIMD kernel differs from these only
 * by float rounding of the per-block scale products.
 */
#include <string.h>

#include "cpu.h"

typedef float (*dot1_fn)(int64_t n, const void *w, const void *x);

static float dot1_f32(int64_t n, const void *w, const void *x)
{
    const float *a = w, *b = x;
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * (double)b[i];
    return (float)s;
}

static float dot1_f16(int64_t n, const void *w, const void *x)
{
    const uint16_t *a = w, *b = x;
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)cpu_h2f(a[i]) * (double)cpu_h2f(b[i]);
    return (float)s;
}

static float dot1_bf16(int64_t n, const void *w, const void *x)
{
    const uint16_t *a = w, *b = x;
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)st_bf16_to_f32(a[i]) * (double)st_bf16_to_f32(b[i]);
    return (float)s;
}

static float dot1_q8_0(int64_t n, const void *w, const void *x)
{
    const struct st_block_q8_0 *a = w, *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK; i++) {
        int32_t sum = 0;
        for (int j = 0; j < ST_QK; j++)
            sum += a[i].qs[j] * b[i].qs[j];
        s += cpu_h2f(a[i].d) * cpu_h2f(b[i].d) * (float)sum;
    }
    return s;
}

static float dot1_q4_0(int64_t n, const void *w, const void *x)
{
    const struct st_block_q4_0 *a = w;
    const struct st_block_q8_0 *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK; i++) {
        int32_t sum = 0;
        for (int j = 0; j < ST_QK / 2; j++) {
            sum += ((a[i].qs[j] & 0xf) - 8) * b[i].qs[j];
            sum += ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + ST_QK / 2];
        }
        s += cpu_h2f(a[i].d) * cpu_h2f(b[i].d) * (float)sum;
    }
    return s;
}

/* Q4_1 / Q5_1 against Q8_0: sum (d q + m) d8 y = d d8 sum(q y) + m d8 sum(y),
 * the sum of y exact in integers (ggml pairs these with Q8_1, whose stored
 * s = d8 sum(y) is the same quantity rounded to fp16). */
static float dot1_q4_1(int64_t n, const void *w, const void *x)
{
    const struct st_block_q4_1 *a = w;
    const struct st_block_q8_0 *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK; i++) {
        int32_t sum = 0, sy = 0;
        for (int j = 0; j < ST_QK / 2; j++) {
            sum += (a[i].qs[j] & 0xf) * b[i].qs[j] + (a[i].qs[j] >> 4) * b[i].qs[j + ST_QK / 2];
            sy += b[i].qs[j] + b[i].qs[j + ST_QK / 2];
        }
        float d8 = cpu_h2f(b[i].d);
        s += cpu_h2f(a[i].d) * d8 * (float)sum + cpu_h2f(a[i].m) * d8 * (float)sy;
    }
    return s;
}

/* The 32 five-bit codes of a Q5_0 / Q5_1 block (0..31). */
static void q5_codes(const uint8_t qh[4], const uint8_t qs[16], int q[32])
{
    uint32_t h = st_q5_qh(qh);
    for (int j = 0; j < ST_QK / 2; j++) {
        q[j] = (qs[j] & 0xf) | (int)(((h >> j) & 1) << 4);
        q[j + ST_QK / 2] = (qs[j] >> 4) | (int)(((h >> (j + 16)) & 1) << 4);
    }
}

static float dot1_q5_0(int64_t n, const void *w, const void *x)
{
    const struct st_block_q5_0 *a = w;
    const struct st_block_q8_0 *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK; i++) {
        int q[ST_QK];
        int32_t sum = 0;
        q5_codes(a[i].qh, a[i].qs, q);
        for (int j = 0; j < ST_QK; j++)
            sum += (q[j] - 16) * b[i].qs[j];
        s += cpu_h2f(a[i].d) * cpu_h2f(b[i].d) * (float)sum;
    }
    return s;
}

static float dot1_q5_1(int64_t n, const void *w, const void *x)
{
    const struct st_block_q5_1 *a = w;
    const struct st_block_q8_0 *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK; i++) {
        int q[ST_QK];
        int32_t sum = 0, sy = 0;
        q5_codes(a[i].qh, a[i].qs, q);
        for (int j = 0; j < ST_QK; j++) {
            sum += q[j] * b[i].qs[j];
            sy += b[i].qs[j];
        }
        float d8 = cpu_h2f(b[i].d);
        s += cpu_h2f(a[i].d) * d8 * (float)sum + cpu_h2f(a[i].m) * d8 * (float)sy;
    }
    return s;
}

/* Q2_K: the mins come through the activation bsums (one per 16 = one per
 * Q2_K sub-block): sum x = b.d (d sum_g sc_g sum q y - dmin sum_g m_g bsum_g). */
static float dot1_q2_k(int64_t n, const void *w, const void *x)
{
    const struct st_block_q2_k *a = w;
    const struct st_block_q8_k *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK_K; i++) {
        int32_t sumi = 0, summ = 0;
        for (int g = 0; g < 16; g++) {
            int32_t sg = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                int h = e / 128, k = (e % 128) / 32, l = e % 32;
                sg += ((a[i].qs[32 * h + l] >> (2 * k)) & 3) * b[i].qs[e];
            }
            sumi += (a[i].scales[g] & 0xf) * sg;
            summ += (a[i].scales[g] >> 4) * b[i].bsums[g];
        }
        s += b[i].d * (cpu_h2f(a[i].d) * (float)sumi - cpu_h2f(a[i].dmin) * (float)summ);
    }
    return s;
}

static float dot1_q3_k(int64_t n, const void *w, const void *x)
{
    const struct st_block_q3_k *a = w;
    const struct st_block_q8_k *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK_K; i++) {
        int32_t sumi = 0;
        for (int g = 0; g < 16; g++) {
            int32_t sg = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                int h = e / 128, k = (e % 128) / 32, l = e % 32;
                int q = (a[i].qs[32 * h + l] >> (2 * k)) & 3;
                if (!((a[i].hmask[l] >> (4 * h + k)) & 1))
                    q -= 4;
                sg += q * b[i].qs[e];
            }
            sumi += (st_q3k_scale(g, a[i].scales) - 32) * sg;
        }
        s += cpu_h2f(a[i].d) * b[i].d * (float)sumi;
    }
    return s;
}

/* Q4_K and Q5_K share everything but the 5th bit ('qh' NULL for Q4_K). */
static float kquant45_block(float d, float dmin, const uint8_t *scales, const uint8_t *qs,
                            const uint8_t *qh, const struct st_block_q8_k *b)
{
    int32_t sumi = 0, summ = 0;
    for (int c = 0; c < 4; c++) {
        uint8_t sc0, m0, sc1, m1;
        int32_t s0 = 0, s1 = 0;
        st_q4k_scale_min(2 * c, scales, &sc0, &m0);
        st_q4k_scale_min(2 * c + 1, scales, &sc1, &m1);
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * c + l] & 0xf, hi = qs[32 * c + l] >> 4;
            if (qh) {
                lo += ((qh[l] >> (2 * c)) & 1) << 4;
                hi += ((qh[l] >> (2 * c + 1)) & 1) << 4;
            }
            s0 += lo * b->qs[64 * c + l];
            s1 += hi * b->qs[64 * c + 32 + l];
        }
        sumi += sc0 * s0 + sc1 * s1;
        summ += m0 * (b->bsums[4 * c] + b->bsums[4 * c + 1]) +
                m1 * (b->bsums[4 * c + 2] + b->bsums[4 * c + 3]);
    }
    return b->d * (d * (float)sumi - dmin * (float)summ);
}

static float dot1_q4_k(int64_t n, const void *w, const void *x)
{
    const struct st_block_q4_k *a = w;
    const struct st_block_q8_k *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK_K; i++)
        s += kquant45_block(cpu_h2f(a[i].d), cpu_h2f(a[i].dmin), a[i].scales, a[i].qs, NULL,
                            &b[i]);
    return s;
}

static float dot1_q5_k(int64_t n, const void *w, const void *x)
{
    const struct st_block_q5_k *a = w;
    const struct st_block_q8_k *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK_K; i++)
        s += kquant45_block(cpu_h2f(a[i].d), cpu_h2f(a[i].dmin), a[i].scales, a[i].qs,
                            a[i].qh, &b[i]);
    return s;
}

static float dot1_q6_k(int64_t n, const void *w, const void *x)
{
    const struct st_block_q6_k *a = w;
    const struct st_block_q8_k *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK_K; i++) {
        int32_t sumi = 0;
        for (int g = 0; g < 16; g++) {
            int32_t sg = 0;
            for (int e = 16 * g; e < 16 * g + 16; e++) {
                int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
                uint8_t lb = a[i].ql[64 * h + l + 32 * (k & 1)];
                int lo4 = k < 2 ? (lb & 0xf) : (lb >> 4);
                int hi2 = (a[i].qh[32 * h + l] >> (2 * k)) & 3;
                sg += ((lo4 | (hi2 << 4)) - 32) * b[i].qs[e];
            }
            sumi += a[i].scales[g] * sg;
        }
        s += cpu_h2f(a[i].d) * b[i].d * (float)sumi;
    }
    return s;
}

static float dot1_iq3_s(int64_t n, const void *w, const void *x)
{
    const struct st_block_iq3_s *a = w;
    const struct st_block_q8_k *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK_K; i++) {
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            int ls = 2 * ((a[i].scales[ib / 2] >> (4 * (ib & 1))) & 0xf) + 1;
            int32_t sumi = 0;
            for (int k = 0; k < 8; k++) {
                int idx = a[i].qs[8 * ib + k] | (((a[i].qh[ib] >> k) & 1) << 8);
                uint32_t g = st_iq3s_grid[idx];
                uint8_t sg = a[i].signs[4 * ib + k / 2];
                for (int j = 0; j < 4; j++) {
                    int mag = (int)((g >> (8 * j)) & 0xff);
                    int v = (sg >> (4 * (k & 1) + j)) & 1 ? -mag : mag;
                    sumi += v * b[i].qs[32 * ib + 4 * k + j];
                }
            }
            bsum += sumi * ls;
        }
        s += cpu_h2f(a[i].d) * b[i].d * (float)bsum;
    }
    return s;
}

static float dot1_iq3_xxs(int64_t n, const void *w, const void *x)
{
    const struct st_block_iq3_xxs *a = w;
    const struct st_block_q8_k *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK_K; i++) {
        const uint8_t *words = a[i].qs + ST_QK_K / 4;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t aux;
            memcpy(&aux, words + 4 * ib, 4);
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++) {
                uint8_t signs = st_ksigns_iq2xs[(aux >> (7 * l)) & 127];
                for (int j = 0; j < 8; j++) {
                    uint32_t g = st_iq3xxs_grid[a[i].qs[8 * ib + 2 * l + j / 4]];
                    int mag = (int)((g >> (8 * (j & 3))) & 0xff);
                    int v = (signs >> j) & 1 ? -mag : mag;
                    sumi += v * b[i].qs[32 * ib + 8 * l + j];
                }
            }
            bsum += sumi * (int32_t)(2 * (aux >> 28) + 1);
        }
        s += 0.25f * cpu_h2f(a[i].d) * b[i].d * (float)bsum;
    }
    return s;
}

static float dot1_iq4_xs(int64_t n, const void *w, const void *x)
{
    const struct st_block_iq4_xs *a = w;
    const struct st_block_q8_k *b = x;
    float s = 0.0f;
    for (int64_t i = 0; i < n / ST_QK_K; i++) {
        int32_t sumi = 0;
        for (int ib = 0; ib < 8; ib++) {
            int ls = ((a[i].scales_l[ib / 2] >> (4 * (ib & 1))) & 0xf) |
                     (((a[i].scales_h >> (2 * ib)) & 3) << 4);
            int32_t sb = 0;
            for (int j = 0; j < 16; j++) {
                uint8_t q = a[i].qs[16 * ib + j];
                sb += st_kvalues_iq4nl[q & 0xf] * b[i].qs[32 * ib + j];
                sb += st_kvalues_iq4nl[q >> 4] * b[i].qs[32 * ib + 16 + j];
            }
            sumi += (ls - 32) * sb;
        }
        s += cpu_h2f(a[i].d) * b[i].d * (float)sumi;
    }
    return s;
}

/* The multi-row entry points: the reference simply loops rows. */
#define SCALAR_ENTRY(type)                                                                 \
    static void dot_##type(int64_t n, const void *w, const void *x, size_t xs, int nx,    \
                           float *y, size_t ys)                                           \
    {                                                                                      \
        for (int j = 0; j < nx; j++)                                                       \
            y[(size_t)j * ys] = dot1_##type(n, w, (const char *)x + (size_t)j * xs);       \
    }
SCALAR_ENTRY(f32)
SCALAR_ENTRY(f16)
SCALAR_ENTRY(bf16)
SCALAR_ENTRY(q8_0)
SCALAR_ENTRY(q4_0)
SCALAR_ENTRY(q4_1)
SCALAR_ENTRY(q5_0)
SCALAR_ENTRY(q5_1)
SCALAR_ENTRY(q2_k)
SCALAR_ENTRY(q3_k)
SCALAR_ENTRY(q4_k)
SCALAR_ENTRY(q5_k)
SCALAR_ENTRY(q6_k)
SCALAR_ENTRY(iq3_s)
SCALAR_ENTRY(iq3_xxs)
SCALAR_ENTRY(iq4_xs)

const struct cpu_kernels cpu_kernels_scalar = {
    .name = "scalar",
    .nx = 1,
    .dot = {
        [ST_DTYPE_F32] = dot_f32,
        [ST_DTYPE_F16] = dot_f16,
        [ST_DTYPE_BF16] = dot_bf16,
        [ST_DTYPE_Q8_0] = dot_q8_0,
        [ST_DTYPE_Q4_0] = dot_q4_0,
        [ST_DTYPE_Q4_1] = dot_q4_1,
        [ST_DTYPE_Q5_0] = dot_q5_0,
        [ST_DTYPE_Q5_1] = dot_q5_1,
        [ST_DTYPE_Q2_K] = dot_q2_k,
        [ST_DTYPE_Q3_K] = dot_q3_k,
        [ST_DTYPE_Q4_K] = dot_q4_k,
        [ST_DTYPE_Q5_K] = dot_q5_k,
        [ST_DTYPE_Q6_K] = dot_q6_k,
        [ST_DTYPE_IQ3_S] = dot_iq3_s,
        [ST_DTYPE_IQ3_XXS] = dot_iq3_xxs,
        [ST_DTYPE_IQ4_XS] = dot_iq4_xs,
    },
};
