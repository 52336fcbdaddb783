/* quant_lowbit.c -- weight quantizers for Q4_1, Q5_0, Q5_1, Q2_K and Q3_K
 * (layouts and formulas in docs/GGUF.md, "The five older / low-bit types").
 *
 * Unlike the one-pass quantizers of quant_quantize.c these search, because
 * at 2-3 bits a plain min/max scale wastes most of the levels:
 *   - symmetric types (Q5_0, the Q3_K sub-blocks) try ~40 candidate scales
 *     around "signed max -> end level" (both ends), and keep the one whose
 *     codes give the largest sum(xq)^2 / sum(q^2), i.e. the least squared
 *     error with the least-squares scale sum(xq) / sum(q^2);
 *   - affine types (Q4_1, Q5_1, the Q2_K sub-blocks) try 21 stretches of
 *     the [min, max] range, refit (scale, offset) by least squares to the
 *     codes, reassign, refit once more, and keep the least squared error.
 * After the sub-block scales are themselves quantized (4 or 6 bits against
 * an fp16 super-scale) the codes are reassigned with the stored values and
 * the neighbouring integer scales are tried, so rounding of the scales is
 * partly repaired. Not ggml's exact algorithm (no importance weights).
 *
 * No libm (the backend library does not link it).
 */
#include "quant_internal.h"

#include "strata/compiler.h"

static float fabs_(float x) { return x < 0 ? -x : x; }
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static float fp16r(float x) { return st_fp16_to_f32(st_f32_to_fp16(x)); }

static float signed_max(const float *x, int n)
{
    float amax = 0, max = 0;
    for (int j = 0; j < n; j++)
        if (fabs_(x[j]) > amax) {
            amax = fabs_(x[j]);
            max = x[j];
        }
    return max;
}

/* ---- symmetric: x ~ s * q, q in [qmin, qmax] ------------------------------ */

/* Squared error of x against s * q with q = clamp(round(x / s)); q out. */
static float sym_assign(const float *x, int n, int qmin, int qmax, float s, int8_t *q)
{
    float err = 0, is = s != 0 ? 1.f / s : 0.f;
    for (int j = 0; j < n; j++) {
        int l = clampi(st_nearest_int(x[j] * is), qmin, qmax);
        float e = x[j] - s * (float)l;
        q[j] = (int8_t)l;
        err += e * e;
    }
    return err;
}

/* The least-squares scale of the best candidate code set (0 for x = 0). */
static float sym_fit(const float *x, int n, int qmin, int qmax)
{
    float v = signed_max(x, n), best = 0, best_s = 0;
    if (v == 0)
        return 0;
    for (int side = 0; side < 2; side++) {
        float end = side ? (float)qmax : (float)qmin;
        for (int k = 0; k <= 20; k++) {
            float is = end / v * (0.55f + 0.025f * (float)k), sxq = 0, sqq = 0;
            for (int j = 0; j < n; j++) {
                float l = (float)clampi(st_nearest_int(x[j] * is), qmin, qmax);
                sxq += x[j] * l;
                sqq += l * l;
            }
            if (sqq > 0 && sxq * sxq / sqq > best) {
                best = sxq * sxq / sqq;
                best_s = sxq / sqq;
            }
        }
    }
    return best_s;
}

/* ---- affine: x ~ a * q + b, q in [0, nmax] -------------------------------- */

static float aff_assign(const float *x, int n, int nmax, float a, float b, uint8_t *q)
{
    float err = 0, ia = a > 0 ? 1.f / a : 0.f;
    for (int j = 0; j < n; j++) {
        int l = clampi(st_nearest_int((x[j] - b) * ia), 0, nmax);
        float e = x[j] - (a * (float)l + b);
        q[j] = (uint8_t)l;
        err += e * e;
    }
    return err;
}

/* Least-squares (a, b) for fixed codes; b <= 0 enforced when nonpos_b. */
static void aff_ls(const float *x, const uint8_t *q, int n, bool nonpos_b, float *a, float *b)
{
    float sx = 0, sq = 0, sqq = 0, sxq = 0;
    for (int j = 0; j < n; j++) {
        sx += x[j];
        sq += q[j];
        sqq += (float)q[j] * q[j];
        sxq += x[j] * q[j];
    }
    float den = (float)n * sqq - sq * sq;
    *a = den > 0 ? ((float)n * sxq - sx * sq) / den : 0;
    *b = (sx - *a * sq) / (float)n;
    if (nonpos_b && *b > 0) {
        *b = 0;
        *a = sqq > 0 ? sxq / sqq : 0;
    }
}

static void aff_fit(const float *x, int n, int nmax, bool nonpos_b, float *ap, float *bp)
{
    uint8_t q[32];
    float lo = x[0], hi = x[0];
    for (int j = 1; j < n; j++) {
        lo = ST_MIN(lo, x[j]);
        hi = ST_MAX(hi, x[j]);
    }
    if (nonpos_b)
        lo = ST_MIN(lo, 0.f);
    *ap = (hi - lo) / (float)nmax;
    *bp = lo;
    if (hi <= lo)
        return;
    float best = aff_assign(x, n, nmax, *ap, *bp, q);
    for (int k = -10; k <= 10; k++) {
        float is = ((float)nmax + 0.1f * (float)k) / (hi - lo), a, b;
        for (int j = 0; j < n; j++)
            q[j] = (uint8_t)clampi(st_nearest_int((x[j] - lo) * is), 0, nmax);
        for (int it = 0; it < 2; it++) {
            aff_ls(x, q, n, nonpos_b, &a, &b);
            if (!(a > 0))
                break;
            float e = aff_assign(x, n, nmax, a, b, q);
            if (e < best) {
                best = e;
                *ap = a;
                *bp = b;
            }
        }
    }
}

/* ---- 32-element types ---------------------------------------------------- */

static void pack_q5(const uint8_t *q, uint8_t qh[4], uint8_t qs[16])
{
    uint32_t h = 0;
    for (int e = 0; e < ST_QK; e++)
        h |= (uint32_t)(q[e] >> 4) << e;
    for (int k = 0; k < 4; k++)
        qh[k] = (uint8_t)(h >> (8 * k));
    for (int j = 0; j < ST_QK / 2; j++)
        qs[j] = (uint8_t)((q[j] & 0xf) | ((q[j + 16] & 0xf) << 4));
}

void st_quant_block_q4_1(const float *x, struct st_block_q4_1 *y)
{
    uint8_t q[ST_QK];
    float a, b;
    aff_fit(x, ST_QK, 15, false, &a, &b);
    y->d = st_f32_to_fp16(a);
    y->m = st_f32_to_fp16(b);
    aff_assign(x, ST_QK, 15, st_fp16_to_f32(y->d), st_fp16_to_f32(y->m), q);
    for (int j = 0; j < ST_QK / 2; j++)
        y->qs[j] = (uint8_t)(q[j] | (q[j + 16] << 4));
}

void st_quant_block_q5_1(const float *x, struct st_block_q5_1 *y)
{
    uint8_t q[ST_QK];
    float a, b;
    aff_fit(x, ST_QK, 31, false, &a, &b);
    y->d = st_f32_to_fp16(a);
    y->m = st_f32_to_fp16(b);
    aff_assign(x, ST_QK, 31, st_fp16_to_f32(y->d), st_fp16_to_f32(y->m), q);
    pack_q5(q, y->qh, y->qs);
}

void st_quant_block_q5_0(const float *x, struct st_block_q5_0 *y)
{
    int8_t q[ST_QK];
    uint8_t u[ST_QK];
    y->d = st_f32_to_fp16(sym_fit(x, ST_QK, -16, 15));
    sym_assign(x, ST_QK, -16, 15, st_fp16_to_f32(y->d), q);
    for (int j = 0; j < ST_QK; j++)
        u[j] = (uint8_t)(q[j] + 16);
    pack_q5(u, y->qh, y->qs);
}

/* ---- K types: 16 sub-blocks of 16 ------------------------------------------ */

/* Codes 0..3 (low 2 bits) of 256 elements into the Q2_K / Q3_K qs layout. */
static void pack_2bit(const uint8_t *q, uint8_t *qs)
{
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++)
            qs[32 * h + l] = (uint8_t)((q[128 * h + l] & 3) | ((q[128 * h + 32 + l] & 3) << 2) |
                                       ((q[128 * h + 64 + l] & 3) << 4) |
                                       ((q[128 * h + 96 + l] & 3) << 6));
}

/* Q2_K: x ~ (d*sc) q - (dmin*m), sc and m 4-bit, q 2-bit, per 16. */
void st_quant_block_q2_k(const float *x, struct st_block_q2_k *y)
{
    float a[16], mn[16], max_a = 0, max_m = 0;
    uint8_t q[ST_QK_K];
    for (int g = 0; g < 16; g++) {
        float b;
        aff_fit(x + 16 * g, 16, 3, true, &a[g], &b);
        mn[g] = -b;
        max_a = ST_MAX(max_a, a[g]);
        max_m = ST_MAX(max_m, mn[g]);
    }
    float d = fp16r(max_a / 15.f), dmin = fp16r(max_m / 15.f);
    y->d = st_f32_to_fp16(d);
    y->dmin = st_f32_to_fp16(dmin);
    for (int g = 0; g < 16; g++) {
        int m = dmin > 0 ? clampi(st_nearest_int(mn[g] / dmin), 0, 15) : 0;
        int sc0 = d > 0 ? clampi(st_nearest_int(a[g] / d), 0, 15) : 0, best_sc = sc0;
        float best = -1;
        for (int sc = ST_MAX(sc0 - 1, 0); sc <= ST_MIN(sc0 + 1, 15); sc++) {
            float e = aff_assign(x + 16 * g, 16, 3, d * (float)sc, -dmin * (float)m, q + 16 * g);
            if (best < 0 || e < best) {
                best = e;
                best_sc = sc;
            }
        }
        aff_assign(x + 16 * g, 16, 3, d * (float)best_sc, -dmin * (float)m, q + 16 * g);
        y->scales[g] = (uint8_t)(best_sc | (m << 4));
    }
    pack_2bit(q, y->qs);
}

/* Q3_K: x ~ d (s - 32) q, s 6-bit, q in [-4, 3], per 16. */
void st_quant_block_q3_k(const float *x, struct st_block_q3_k *y)
{
    float s[16];
    int8_t q[ST_QK_K];
    uint8_t u[ST_QK_K];
    for (int g = 0; g < 16; g++)
        s[g] = sym_fit(x + 16 * g, 16, -4, 3);
    float smax = signed_max(s, 16);
    float is = smax != 0 ? -32.f / smax : 0.f, d = smax != 0 ? fp16r(1.f / is) : 0.f;
    y->d = st_f32_to_fp16(d);
    memset(y->scales, 0, sizeof(y->scales));
    memset(y->hmask, 0, sizeof(y->hmask));
    for (int g = 0; g < 16; g++) {
        int l0 = clampi(st_nearest_int(is * s[g]), -32, 31), best_l = l0;
        float best = -1;
        for (int l = ST_MAX(l0 - 1, -32); l <= ST_MIN(l0 + 1, 31); l++) {
            float e = sym_assign(x + 16 * g, 16, -4, 3, d * (float)l, q + 16 * g);
            if (best < 0 || e < best) {
                best = e;
                best_l = l;
            }
        }
        sym_assign(x + 16 * g, 16, -4, 3, d * (float)best_l, q + 16 * g);
        int v = best_l + 32;                /* 0..63 */
        y->scales[g % 8] |= (uint8_t)((v & 0xf) << (g < 8 ? 0 : 4));
        y->scales[8 + g % 4] |= (uint8_t)((v >> 4) << (2 * (g / 4)));
    }
    for (int e = 0; e < ST_QK_K; e++) {
        u[e] = (uint8_t)(q[e] + 4);
        if (u[e] & 4)                       /* set: no -4 offset */
            y->hmask[e % 32] |= (uint8_t)(1 << (e / 32));
    }
    pack_2bit(u, y->qs);
}
