/* quant_quantize.c -- scalar quantizers from float, one per weight type,
 * plus the activation quantizers Q8_0 and Q8_K of ENGINE.md 2.11.
 *
 * The activation quantizers are bit-exact with ggml's CPU reference (the
 * kernels' results depend on them). The weight quantizers aim only at a
 * correct format with sane error: one pass, no iterative scale search
 * (ggml's make_qkx2 / importance-matrix search is not reproduced). IQ3_S
 * and IQ3_XXS pick each group of 4 magnitudes by exhaustive search of
 * the grid, so they are slow; make-model writes random blocks directly
 * and does not use them for big tensors. Q4_1, Q5_0, Q5_1, Q2_K and Q3_K
 * are in quant_lowbit.c (they search scales; 2-3 bits need it).
 *
 * No libm: the backend library does not link it, hence the small helpers.
 */
#include "quant_internal.h"
#include "strata/compiler.h"
#include "strata/quant.h"

static float fabs_(float x) { return x < 0 ? -x : x; }

/* roundf: half away from zero, exact for |x| < 2^23. */
static float round_(float x)
{
    if (!(fabs_(x) < 8388608.f))
        return x;
    float t = (float)(int32_t)x, r = x - t;
    if (r >= 0.5f)
        t += 1.f;
    else if (r <= -0.5f)
        t -= 1.f;
    return t;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The element of largest magnitude, with its sign (first one on ties). */
static float signed_max(const float *x, int n)
{
    float amax = 0, max = 0;
    for (int j = 0; j < n; j++) {
        if (fabs_(x[j]) > amax) {
            amax = fabs_(x[j]);
            max = x[j];
        }
    }
    return max;
}

/* The largest magnitude |x[j]|, j < n (0 for none). */
static float abs_max(const float *x, int n)
{
    float amax = 0;
    for (int j = 0; j < n; j++)
        amax = ST_MAX(amax, fabs_(x[j]));
    return amax;
}

/* For each of the 8 sub-blocks of 32 in a 256 super-block, the scale that
 * maps its largest magnitude to qmax; returns the largest of those. */
static float subblock_scales(const float *x, float qmax, float want[8])
{
    float max_db = 0;
    for (int ib = 0; ib < 8; ib++) {
        want[ib] = abs_max(x + 32 * ib, 32) / qmax;
        max_db = ST_MAX(max_db, want[ib]);
    }
    return max_db;
}

void st_quantize_row_q8_0(const float *x, struct st_block_q8_0 *y, int64_t n)
{
    ST_ASSERT(n % ST_QK == 0);
    for (int64_t i = 0; i < n / ST_QK; i++, x += ST_QK) {
        float d = abs_max(x, ST_QK) / 127.f, id = d != 0 ? 1.f / d : 0.f;
        y[i].d = st_f32_to_fp16(d);
        for (int j = 0; j < ST_QK; j++)
            y[i].qs[j] = (int8_t)round_(x[j] * id);
    }
}

void st_quantize_row_q8_k(const float *x, struct st_block_q8_k *y, int64_t n)
{
    ST_ASSERT(n % ST_QK_K == 0);
    for (int64_t i = 0; i < n / ST_QK_K; i++, x += ST_QK_K) {
        float max = signed_max(x, ST_QK_K);
        if (max == 0) {
            memset(&y[i], 0, sizeof(y[i]));
            continue;
        }
        float iscale = -127.f / max;
        for (int j = 0; j < ST_QK_K; j++)
            y[i].qs[j] = (int8_t)ST_MIN(127, st_nearest_int(iscale * x[j]));
        for (int g = 0; g < ST_QK_K / 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++)
                sum += y[i].qs[16 * g + j];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.f / iscale;
    }
}

static void q4_0_block(const float *x, struct st_block_q4_0 *y)
{
    float max = signed_max(x, ST_QK);
    float d = max / -8.f, id = d != 0 ? 1.f / d : 0.f;
    y->d = st_f32_to_fp16(d);
    for (int j = 0; j < ST_QK / 2; j++) {
        int lo = ST_MIN(15, (int)(x[j] * id + 8.5f));
        int hi = ST_MIN(15, (int)(x[j + ST_QK / 2] * id + 8.5f));
        y->qs[j] = (uint8_t)(lo | (hi << 4));
    }
}

/* Pack 8 6-bit scales and mins the Q4_K way (inverse of st_q4k_scale_min). */
static void pack_scale_min(const uint8_t *sc, const uint8_t *m, uint8_t *s)
{
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
    }
}

/* Asymmetric K-quant (Q4_K nmax 15, Q5_K nmax 31): per 32-element
 * sub-block x ~ scale*q - min with min >= 0; scales and mins quantized to
 * 6 bits against fp16 super-scales. q[256] gets the levels 0..nmax. */
static void kquant_asym(const float *x, int nmax, uint16_t *dp, uint16_t *dminp,
                        uint8_t *scales12, uint8_t *q)
{
    float scale[8], mn[8], max_scale = 0, max_min = 0;
    for (int ib = 0; ib < 8; ib++) {
        float lo = 0, hi = 0;               /* lo <= 0: the min term stays >= 0 */
        for (int j = 0; j < 32; j++) {
            lo = ST_MIN(lo, x[32 * ib + j]);
            hi = ST_MAX(hi, x[32 * ib + j]);
        }
        scale[ib] = (hi - lo) / (float)nmax;
        mn[ib] = -lo;
        max_scale = ST_MAX(max_scale, scale[ib]);
        max_min = ST_MAX(max_min, mn[ib]);
    }
    float d = st_fp16_to_f32(st_f32_to_fp16(max_scale / 63.f));
    float dmin = st_fp16_to_f32(st_f32_to_fp16(max_min / 63.f));
    uint8_t sc[8], m[8];
    for (int ib = 0; ib < 8; ib++) {
        sc[ib] = (uint8_t)(d > 0 ? clampi((int)round_(scale[ib] / d), 0, 63) : 0);
        m[ib] = (uint8_t)(dmin > 0 ? clampi((int)round_(mn[ib] / dmin), 0, 63) : 0);
        float ds = d * sc[ib], dm = dmin * m[ib];
        for (int j = 0; j < 32; j++) {
            int l = ds > 0 ? (int)round_((x[32 * ib + j] + dm) / ds) : 0;
            q[32 * ib + j] = (uint8_t)clampi(l, 0, nmax);
        }
    }
    *dp = st_f32_to_fp16(d);
    *dminp = st_f32_to_fp16(dmin);
    pack_scale_min(sc, m, scales12);
}

static void q4_k_block(const float *x, struct st_block_q4_k *y)
{
    uint8_t q[ST_QK_K];
    kquant_asym(x, 15, &y->d, &y->dmin, y->scales, q);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            y->qs[32 * c + l] = (uint8_t)(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

static void q5_k_block(const float *x, struct st_block_q5_k *y)
{
    uint8_t q[ST_QK_K];
    kquant_asym(x, 31, &y->d, &y->dmin, y->scales, q);
    memset(y->qh, 0, sizeof(y->qh));
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
            y->qs[32 * c + l] = (uint8_t)((lo & 0xf) | ((hi & 0xf) << 4));
            y->qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        }
    }
}

/* Q6_K: symmetric, 16 sub-blocks of 16, q in [-32, 31], int8 scales. */
static void q6_k_block(const float *x, struct st_block_q6_k *y)
{
    float scale[16], max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 16; ib++) {
        scale[ib] = signed_max(x + 16 * ib, 16) / -32.f;
        if (fabs_(scale[ib]) > amax_scale) {
            amax_scale = fabs_(scale[ib]);
            max_scale = scale[ib];
        }
    }
    float iscale = max_scale != 0 ? -128.f / max_scale : 0.f;
    float d = max_scale != 0 ? st_fp16_to_f32(st_f32_to_fp16(1.f / iscale)) : 0.f;
    y->d = st_f32_to_fp16(d);
    memset(y->ql, 0, sizeof(y->ql));
    memset(y->qh, 0, sizeof(y->qh));
    for (int ib = 0; ib < 16; ib++)
        y->scales[ib] = (int8_t)ST_MIN(127, st_nearest_int(iscale * scale[ib]));
    for (int e = 0; e < ST_QK_K; e++) {
        float ds = d * y->scales[e / 16];
        int q = ds != 0 ? clampi(st_nearest_int(x[e] / ds), -32, 31) + 32 : 32;
        int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
        y->ql[64 * h + l + 32 * (k & 1)] |= (uint8_t)((q & 0xf) << (k < 2 ? 0 : 4));
        y->qh[32 * h + l] |= (uint8_t)((q >> 4) << (2 * k));
    }
}

/* Nearest kvalues_iq4nl entry to v. */
static int iq4nl_index(float v)
{
    int best = 0;
    float bd = fabs_(v - st_kvalues_iq4nl[0]);
    for (int i = 1; i < 16; i++) {
        float dd = fabs_(v - st_kvalues_iq4nl[i]);
        if (dd < bd) {
            bd = dd;
            best = i;
        }
    }
    return best;
}

static void iq4_xs_block(const float *x, struct st_block_iq4_xs *y)
{
    float scale[8], max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ib++) {           /* signed max maps to -127 */
        scale[ib] = signed_max(x + 32 * ib, 32) / (float)st_kvalues_iq4nl[0];
        if (fabs_(scale[ib]) > amax_scale) {
            amax_scale = fabs_(scale[ib]);
            max_scale = scale[ib];
        }
    }
    float d = st_fp16_to_f32(st_f32_to_fp16(max_scale / -32.f));
    y->d = st_f32_to_fp16(d);
    y->scales_h = 0;
    memset(y->scales_l, 0, sizeof(y->scales_l));
    for (int ib = 0; ib < 8; ib++) {
        int l = d != 0 ? clampi(st_nearest_int(scale[ib] / d), -32, 31) : 0;
        int ls = l + 32;
        y->scales_l[ib / 2] |= (uint8_t)((ls & 0xf) << (4 * (ib & 1)));
        y->scales_h |= (uint16_t)((ls >> 4) << (2 * ib));
        float dl = d * (float)l, idl = dl != 0 ? 1.f / dl : 0.f;
        for (int j = 0; j < 16; j++) {
            int lo = iq4nl_index(x[32 * ib + j] * idl);
            int hi = iq4nl_index(x[32 * ib + 16 + j] * idl);
            y->qs[16 * ib + j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

/* Index of the grid entry nearest (L2) to the 4 magnitudes m[]. */
static int grid_nearest(const uint32_t *grid, int n, const float *m)
{
    int best = 0;
    float bd = 1e30f;
    for (int i = 0; i < n; i++) {
        float dist = 0;
        for (int j = 0; j < 4; j++) {
            float t = m[j] - (float)((grid[i] >> (8 * j)) & 0xff);
            dist += t * t;
        }
        if (dist < bd) {
            bd = dist;
            best = i;
        }
    }
    return best;
}

/* IQ3_S: db = d(1+2s), magnitudes 1..15 from a 512-entry grid, one
 * explicit sign bit per weight. */
static void iq3_s_block(const float *x, struct st_block_iq3_s *y)
{
    float want[8];
    float max_db = subblock_scales(x, 15.f, want);
    float d = st_fp16_to_f32(st_f32_to_fp16(max_db / 31.f));
    memset(y, 0, sizeof(*y));
    y->d = st_f32_to_fp16(d);
    for (int ib = 0; ib < 8; ib++) {
        int s = d > 0 ? clampi((int)round_((want[ib] / d - 1.f) / 2.f), 0, 15) : 0;
        y->scales[ib / 2] |= (uint8_t)(s << (4 * (ib & 1)));
        float db = d * (float)(1 + 2 * s), idb = db > 0 ? 1.f / db : 0.f;
        for (int k = 0; k < 8; k++) {
            const float *xk = x + 32 * ib + 4 * k;
            float m[4];
            for (int j = 0; j < 4; j++) {
                m[j] = fabs_(xk[j]) * idb;
                if (xk[j] < 0)
                    y->signs[4 * ib + k / 2] |= (uint8_t)(1 << (4 * (k & 1) + j));
            }
            int idx = grid_nearest(st_iq3s_grid, 512, m);
            y->qs[8 * ib + k] = (uint8_t)(idx & 0xff);
            y->qh[ib] |= (uint8_t)((idx >> 8) << k);
        }
    }
}

/* IQ3_XXS sign field for 8 weights: 7 stored bits, parity implied even.
 * With an odd count of negatives the smallest-magnitude weight flips. */
static uint32_t iq3xxs_signs(const float *x)
{
    int neg = 0, smallest = 0;
    uint32_t bits = 0;
    for (int j = 0; j < 8; j++) {
        if (x[j] < 0) {
            bits |= 1u << j;
            neg++;
        }
        if (fabs_(x[j]) < fabs_(x[smallest]))
            smallest = j;
    }
    if (neg & 1)
        bits ^= 1u << smallest;
    return bits & 127;                       /* bit 7 is the parity */
}

static void iq3_xxs_block(const float *x, struct st_block_iq3_xxs *y)
{
    float want[8];
    float max_db = subblock_scales(x, 62.f, want);
    /* db = d (0.5 + s) 0.5, s = 0..15 -> the largest is d * 7.75 */
    float d = st_fp16_to_f32(st_f32_to_fp16(max_db / 7.75f));
    memset(y, 0, sizeof(*y));
    y->d = st_f32_to_fp16(d);
    uint8_t *words = y->qs + ST_QK_K / 4;
    for (int ib = 0; ib < 8; ib++) {
        int s = d > 0 ? clampi((int)round_(want[ib] * 2.f / d - 0.5f), 0, 15) : 0;
        float db = d * (0.5f + (float)s) * 0.5f, idb = db > 0 ? 1.f / db : 0.f;
        uint32_t a = (uint32_t)s << 28;
        for (int l = 0; l < 4; l++) {
            const float *xg = x + 32 * ib + 8 * l;
            a |= iq3xxs_signs(xg) << (7 * l);
            for (int h = 0; h < 2; h++) {
                float m[4];
                for (int j = 0; j < 4; j++)
                    m[j] = fabs_(xg[4 * h + j]) * idb;
                y->qs[8 * ib + 2 * l + h] = (uint8_t)grid_nearest(st_iq3xxs_grid, 256, m);
            }
        }
        for (int k = 0; k < 4; k++)
            words[4 * ib + k] = (uint8_t)(a >> (8 * k));
    }
}

static void quant_floats(enum st_dtype t, const float *x, void *dst, int64_t n)
{
    uint8_t *p = dst;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        if (t == ST_DTYPE_F32) {
            memcpy(p + 4 * i, &x[i], 4);
            continue;
        }
        h = t == ST_DTYPE_F16 ? st_f32_to_fp16(x[i]) : st_f32_to_bf16(x[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

void st_quantize_row(enum st_dtype t, const float *src, void *dst, int64_t n)
{
    const struct st_dtype_info *info = st_dtype_info((uint32_t)t);
    ST_ASSERT(info && st_quant_supported(t) && t != ST_DTYPE_Q8_K);
    ST_ASSERT(n >= 0 && n % info->block_elems == 0);
    if (t == ST_DTYPE_F32 || t == ST_DTYPE_F16 || t == ST_DTYPE_BF16) {
        quant_floats(t, src, dst, n);
        return;
    }
    if (t == ST_DTYPE_Q8_0) {
        st_quantize_row_q8_0(src, dst, n);
        return;
    }
    uint8_t *p = dst;
    for (int64_t i = 0; i < n / info->block_elems; i++, p += info->block_bytes) {
        const float *x = src + i * info->block_elems;
        switch (t) {
        case ST_DTYPE_Q4_0:    q4_0_block(x, (void *)p); break;
        case ST_DTYPE_Q4_1:    st_quant_block_q4_1(x, (void *)p); break;
        case ST_DTYPE_Q5_0:    st_quant_block_q5_0(x, (void *)p); break;
        case ST_DTYPE_Q5_1:    st_quant_block_q5_1(x, (void *)p); break;
        case ST_DTYPE_Q2_K:    st_quant_block_q2_k(x, (void *)p); break;
        case ST_DTYPE_Q3_K:    st_quant_block_q3_k(x, (void *)p); break;
        case ST_DTYPE_Q4_K:    q4_k_block(x, (void *)p); break;
        case ST_DTYPE_Q5_K:    q5_k_block(x, (void *)p); break;
        case ST_DTYPE_Q6_K:    q6_k_block(x, (void *)p); break;
        case ST_DTYPE_IQ3_S:   iq3_s_block(x, (void *)p); break;
        case ST_DTYPE_IQ3_XXS: iq3_xxs_block(x, (void *)p); break;
        case ST_DTYPE_IQ4_XS:  iq4_xs_block(x, (void *)p); break;
        default:               ST_ASSERT(!"unreachable"); break;
        }
    }
}
