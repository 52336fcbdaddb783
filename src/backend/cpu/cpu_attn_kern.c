/* cpu_attn_kern.c -- scalar and AVX2 tile kernels of the tiled attention
 * (cpu_attn_kern.h).
 *
 * The AVX2 q.k kernel takes two queries against four keys per pass (eight
 * accumulators: six loads feed eight FMAs) and reduces the four dot
 * products of a query with one hadd tree; p.v takes two queries over 32
 * dims per pass (eight accumulators, two broadcasts and four loads per
 * position). exp is Cephes' float polynomial (cpu_vmath.h), shared with
 * cpu_score.c.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "cpu_attn_kern.h"
#include "cpu_vmath.h"

/* ---- scalar ------------------------------------------------------------- */

static void load_scalar(const void *x, size_t stride, int nt, int d, float *y)
{
    for (int t = 0; t < nt; t++) {
        const uint16_t *xr = (const uint16_t *)((const char *)x + (size_t)t * stride);
        for (int i = 0; i < d; i++)
            y[(size_t)t * (size_t)d + (size_t)i] = cpu_h2f(xr[i]);
    }
}

static void load_q8_scalar(const void *x, size_t stride, int nt, int d, float *y)
{
    for (int t = 0; t < nt; t++) {
        const struct st_block_q8_0 *b =
            (const struct st_block_q8_0 *)((const char *)x + (size_t)t * stride);
        float *yr = y + (size_t)t * (size_t)d;
        for (int k = 0; k < d / ST_QK; k++) {
            float sc = cpu_h2f(b[k].d);
            for (int i = 0; i < ST_QK; i++)
                yr[k * ST_QK + i] = sc * (float)b[k].qs[i];
        }
    }
}

static void store_q8_ref(const float *x, void *y, int64_t n)
{
    st_quantize_row_q8_0(x, y, n);
}

static void qk_scalar(const float *q, int nq, const float *k, int nt, int d, float *s)
{
    int nt4 = (nt + 3) & ~3;
    for (int qi = 0; qi < nq; qi++)
        for (int t = 0; t < nt4; t++) {
            float acc = 0.0f;
            for (int i = 0; i < d; i++)
                acc += q[qi * d + i] * k[t * d + i];
            s[qi * ATTN_TILE + t] = acc;
        }
}

static float exp_sum_scalar(float *s, float m)
{
    float sum = 0.0f;
    for (int t = 0; t < ATTN_TILE; t++) {
        s[t] = expf(s[t] - m);
        sum += s[t];
    }
    return sum;
}

static void pv_scalar(const float *p, int nq, const float *v, int nt, int d, const float *c,
                      float *acc)
{
    for (int qi = 0; qi < nq; qi++) {
        float *a = acc + (size_t)qi * (size_t)d;
        for (int i = 0; i < d; i++)
            a[i] *= c[qi];
        for (int t = 0; t < nt; t++) {
            float w = p[qi * ATTN_TILE + t];
            for (int i = 0; i < d; i++)
                a[i] += w * v[t * d + i];
        }
    }
}

static void store_scalar(const float *x, void *y, int64_t n)
{
    uint16_t *h = y;
    for (int64_t i = 0; i < n; i++)
        h[i] = st_f32_to_fp16(x[i]);
}

/* F32 rows: plain copies (the compiler vectorizes them; no AVX2 set). */
static void load_f32(const void *x, size_t stride, int nt, int d, float *y)
{
    for (int t = 0; t < nt; t++)
        memcpy(y + (size_t)t * (size_t)d, (const char *)x + (size_t)t * stride,
               (size_t)d * sizeof(float));
}

static void store_f32(const float *x, void *y, int64_t n)
{
    memcpy(y, x, (size_t)n * sizeof(float));
}

static void load_bf16_scalar(const void *x, size_t stride, int nt, int d, float *y)
{
    for (int t = 0; t < nt; t++) {
        const uint16_t *xr = (const uint16_t *)((const char *)x + (size_t)t * stride);
        for (int i = 0; i < d; i++)
            y[(size_t)t * (size_t)d + (size_t)i] = st_bf16_to_f32(xr[i]);
    }
}

static void store_bf16_scalar(const float *x, void *y, int64_t n)
{
    uint16_t *h = y;
    for (int64_t i = 0; i < n; i++)
        h[i] = st_f32_to_bf16(x[i]);
}

static const struct attn_kern kern_scalar = { qk_scalar, exp_sum_scalar, pv_scalar };
static const struct attn_kv_io io_f16_scalar = { load_scalar, store_scalar };
static const struct attn_kv_io io_q8_scalar = { load_q8_scalar, store_q8_ref };
static const struct attn_kv_io io_f32 = { load_f32, store_f32 };
static const struct attn_kv_io io_bf16_scalar = { load_bf16_scalar, store_bf16_scalar };

/* ---- AVX2 + FMA + F16C -------------------------------------------------- */

#if defined(__x86_64__)
#include <immintrin.h>
#define AT __attribute__((target("avx2,fma,f16c")))

/* exp(x) for x <= 0; exactly 0 below -87 (so exp(-inf) is 0). */
static AT __m256 exp_neg8(__m256 x)
{
    __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(CPU_EXP_LO), _CMP_GE_OQ);
    return _mm256_and_ps(cpu_exp_neg8(x), keep);
}

static AT void load_avx2(const void *x, size_t stride, int nt, int d, float *y)
{
    for (int t = 0; t < nt; t++) {
        const uint16_t *xr = (const uint16_t *)((const char *)x + (size_t)t * stride);
        float *yr = y + (size_t)t * (size_t)d;
        for (int i = 0; i < d; i += 8)
            _mm256_storeu_ps(yr + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(xr + i))));
    }
}

/* Q8_0 -> floats: each block's 32 int8 widened in fours of 8 and scaled
 * (scale * q is exact in float: an 11-bit times an 8-bit significand). */
static AT void load_q8_avx2(const void *x, size_t stride, int nt, int d, float *y)
{
    for (int t = 0; t < nt; t++) {
        const struct st_block_q8_0 *b =
            (const struct st_block_q8_0 *)((const char *)x + (size_t)t * stride);
        float *yr = y + (size_t)t * (size_t)d;
        for (int k = 0; k < d / ST_QK; k++, yr += ST_QK) {
            __m256 sc = _mm256_set1_ps(cpu_h2f(b[k].d));
            for (int j = 0; j < 4; j++) {
                __m128i q8 = _mm_loadl_epi64((const __m128i *)(b[k].qs + 8 * j));
                __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
                _mm256_storeu_ps(yr + 8 * j, _mm256_mul_ps(f, sc));
            }
        }
    }
}

/* The four sums of a0..a3, in order. */
static AT __m128 sum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

static AT void qk_avx2(const float *q, int nq, const float *k, int nt, int d, float *s)
{
    for (int qi = 0; qi < nq; qi += 2) {
        const float *q0 = q + qi * d, *q1 = q0 + d;
        for (int t = 0; t < nt; t += 4) {
            const float *k0 = k + t * d, *k1 = k0 + d, *k2 = k1 + d, *k3 = k2 + d;
            __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
            __m256 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
            for (int i = 0; i < d; i += 8) {
                __m256 x0 = _mm256_loadu_ps(q0 + i), x1 = _mm256_loadu_ps(q1 + i);
                __m256 y = _mm256_loadu_ps(k0 + i);
                a00 = _mm256_fmadd_ps(x0, y, a00);
                a10 = _mm256_fmadd_ps(x1, y, a10);
                y = _mm256_loadu_ps(k1 + i);
                a01 = _mm256_fmadd_ps(x0, y, a01);
                a11 = _mm256_fmadd_ps(x1, y, a11);
                y = _mm256_loadu_ps(k2 + i);
                a02 = _mm256_fmadd_ps(x0, y, a02);
                a12 = _mm256_fmadd_ps(x1, y, a12);
                y = _mm256_loadu_ps(k3 + i);
                a03 = _mm256_fmadd_ps(x0, y, a03);
                a13 = _mm256_fmadd_ps(x1, y, a13);
            }
            _mm_storeu_ps(s + qi * ATTN_TILE + t, sum4(a00, a01, a02, a03));
            _mm_storeu_ps(s + (qi + 1) * ATTN_TILE + t, sum4(a10, a11, a12, a13));
        }
    }
}

static AT float exp_sum_avx2(float *s, float m)
{
    __m256 vm = _mm256_set1_ps(m), sum = _mm256_setzero_ps();
    for (int t = 0; t < ATTN_TILE; t += 8) {
        __m256 p = exp_neg8(_mm256_sub_ps(_mm256_loadu_ps(s + t), vm));
        _mm256_storeu_ps(s + t, p);
        sum = _mm256_add_ps(sum, p);
    }
    return cpu_hsum8(sum);
}

/* Two queries over dims [i0, i0 + 8*W) of acc (W vectors each). */
#define PV_PASS(W)                                                                      \
    do {                                                                                \
        __m256 u[W], w[W];                                                              \
        for (int j = 0; j < W; j++) {                                                   \
            u[j] = _mm256_mul_ps(_mm256_loadu_ps(a0 + i0 + 8 * j), c0);                 \
            w[j] = _mm256_mul_ps(_mm256_loadu_ps(a1 + i0 + 8 * j), c1);                 \
        }                                                                               \
        for (int t = 0; t < nt; t++) {                                                  \
            __m256 b0 = _mm256_broadcast_ss(p0 + t), b1 = _mm256_broadcast_ss(p1 + t);  \
            const float *vt = v + t * d + i0;                                           \
            for (int j = 0; j < W; j++) {                                               \
                __m256 y = _mm256_loadu_ps(vt + 8 * j);                                 \
                u[j] = _mm256_fmadd_ps(b0, y, u[j]);                                    \
                w[j] = _mm256_fmadd_ps(b1, y, w[j]);                                    \
            }                                                                           \
        }                                                                               \
        for (int j = 0; j < W; j++) {                                                   \
            _mm256_storeu_ps(a0 + i0 + 8 * j, u[j]);                                    \
            _mm256_storeu_ps(a1 + i0 + 8 * j, w[j]);                                    \
        }                                                                               \
    } while (0)

static AT void pv_avx2(const float *p, int nq, const float *v, int nt, int d, const float *c,
                       float *acc)
{
    for (int qi = 0; qi < nq; qi += 2) {
        const float *p0 = p + qi * ATTN_TILE, *p1 = p0 + ATTN_TILE;
        float *a0 = acc + (size_t)qi * (size_t)d, *a1 = a0 + d;
        __m256 c0 = _mm256_set1_ps(c[qi]), c1 = _mm256_set1_ps(c[qi + 1]);
        int i0 = 0;
        for (; i0 + 32 <= d; i0 += 32)
            PV_PASS(4);
        for (; i0 < d; i0 += 8)
            PV_PASS(1);
    }
}

/* vcvtps2ph with round-to-nearest-even: bit-exact with st_f32_to_fp16 for
 * every non-NaN input (NaN payloads may differ). */
static AT void store_avx2(const float *x, void *yv, int64_t n)
{
    uint16_t *y = yv;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        y[i] = st_f32_to_fp16(x[i]);
}

/* BF16 -> floats: eight 16-bit values widened to 32 bits and shifted up. */
static AT void load_bf16_avx2(const void *x, size_t stride, int nt, int d, float *y)
{
    for (int t = 0; t < nt; t++) {
        const uint16_t *xr = (const uint16_t *)((const char *)x + (size_t)t * stride);
        float *yr = y + (size_t)t * (size_t)d;
        for (int i = 0; i < d; i += 8) {
            __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(xr + i)));
            _mm256_storeu_ps(yr + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
        }
    }
}

/* floats -> BF16 with st_f32_to_bf16's rounding: u + 0x7fff + (bit 16 of
 * u), top half; a NaN gets its top half with the quiet bit (64) set. The
 * 32-bit halves are packed (packus is unsigned-saturating, so the top
 * halves are taken as u >> 16 first: they fit 16 bits) and the lane order
 * fixed with a permute. */
static AT __m128i bf16_8(__m256 f)
{
    const __m256i u = _mm256_castps_si256(f);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    r = _mm256_srli_epi32(r, 16);
    __m256i nan_bits = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
    __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(r, nan_bits, is_nan);
    __m256i p = _mm256_packus_epi32(r, r);   /* lanes: 0-3 0-3 | 4-7 4-7 */
    p = _mm256_permute4x64_epi64(p, 0x08);   /* qwords 0, 2 */
    return _mm256_castsi256_si128(p);
}

static AT void store_bf16_avx2(const float *x, void *yv, int64_t n)
{
    uint16_t *y = yv;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), bf16_8(_mm256_loadu_ps(x + i)));
    for (; i < n; i++)
        y[i] = st_f32_to_bf16(x[i]);
}

static const struct attn_kern kern_avx2 = { qk_avx2, exp_sum_avx2, pv_avx2 };
/* The activation quantizer of the dot kernels at the best ISA level. */
static void store_q8_best(const float *x, void *y, int64_t n)
{
    cpu_quant_fn q = cpu_kernels_best()->quant[ST_DTYPE_Q8_0];
    (q ? q : store_q8_ref)(x, y, n);
}

static const struct attn_kv_io io_f16_avx2 = { load_avx2, store_avx2 };
static const struct attn_kv_io io_q8_avx2 = { load_q8_avx2, store_q8_best };
static const struct attn_kv_io io_bf16_avx2 = { load_bf16_avx2, store_bf16_avx2 };
#endif

/* The SIMD set applies (STRATA_CPU_ISA=scalar caps it as it caps the dot
 * kernels); cached, as this runs once per layer per step. */
static bool use_avx2(int d)
{
#if defined(__x86_64__)
    return d % 8 == 0 && cpu_has_avx2_f16c() && cpu_kernels_best()->nx > 1;
#else
    (void)d;
    return false;
#endif
}

const struct attn_kv_io *cpu_attn_kv_io(enum st_dtype t, int d)
{
    if (t == ST_DTYPE_Q8_0) {
        if (d % ST_QK != 0)
            return NULL;
#if defined(__x86_64__)
        if (use_avx2(d))
            return &io_q8_avx2;
#endif
        return &io_q8_scalar;
    }
    if (t == ST_DTYPE_F32)
        return &io_f32;
    if (t == ST_DTYPE_BF16) {
#if defined(__x86_64__)
        if (use_avx2(d))
            return &io_bf16_avx2;
#endif
        return &io_bf16_scalar;
    }
    if (t != ST_DTYPE_F16)
        return NULL;
#if defined(__x86_64__)
    if (use_avx2(d))
        return &io_f16_avx2;
#endif
    return &io_f16_scalar;
}

const struct attn_kern *cpu_attn_kern(int d)
{
#if defined(__x86_64__)
    if (use_avx2(d))
        return &kern_avx2;
#endif
    return &kern_scalar;
}
