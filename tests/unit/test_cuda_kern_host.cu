/* test_cuda_kern_host.cu -- the CUDA kernels' block decoders, run on the
 * host. No GPU needed.
 *
 * kernels/quant_dev.cuh is __host__ __device__: the code that every
 * matmul, embedding and dequant kernel uses to decode weight blocks and to
 * form the dp4a dot products compiles for the CPU too. This suite checks
 * that host build against the C reference of src/backend (quant.h):
 *   - the lookup tables copied into kernels/iq_tables.inc equal quant_tables.c;
 *   - kq_deq_row32 equals st_dequant_row exactly, for every type;
 *   - the item decoder + integer dot (load/dot) equals the float dot of
 *     the dequantized weights with the dequantized q8_1 activations, for
 *     every type (so nibble order, sign masks, scales and the (d, s)
 *     activation terms are right before the code ever meets a GPU);
 *   - both again on blocks of random bytes (every bit pattern, not only
 *     what the quantizers emit), and block sizes/offsets against quant.h;
 *   - the order keys of the top-k radix select (topk.cuh) sort exactly as
 *     st_draw_before (zeros, NaN, infinities, ties);
 *   - the rope frequency and cos/sin multiplier (rope_params.cuh) equal
 *     strata/rope.h's, for no scaling, linear and YaRN.
 * What it cannot check: launches, indexing across threads, shared memory,
 * warp shuffles -- test_cuda_ops does that on a GPU.
 */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "quant_dev.cuh"
#include "rope_params.cuh"
#include "topk.cuh"
extern "C" {
#include "support.h"
}

/* quant.h is a C header: give C++ its _Static_assert and C linkage. */
#define _Static_assert static_assert
extern "C" {
#include "strata/quant.h"
}
#undef _Static_assert

static uint64_t rng_state = 12345;

static float rndf(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)(z >> 40) / (float)(1 << 23) - 1.0f;
}

static const enum st_dtype qtypes[] = {
    ST_DTYPE_Q8_0, ST_DTYPE_Q4_0, ST_DTYPE_Q4_K, ST_DTYPE_Q5_K,
    ST_DTYPE_Q6_K, ST_DTYPE_IQ3_S, ST_DTYPE_IQ3_XXS, ST_DTYPE_IQ4_XS,
    ST_DTYPE_Q4_1, ST_DTYPE_Q5_0, ST_DTYPE_Q5_1, ST_DTYPE_Q2_K, ST_DTYPE_Q3_K,
};

START_TEST(test_cuda_kern_host_tables_match)
{
    ck_assert_int_eq(memcmp(kq_iq3s_grid_h, st_iq3s_grid, sizeof(st_iq3s_grid)), 0);
    ck_assert_int_eq(memcmp(kq_iq3xxs_grid_h, st_iq3xxs_grid, sizeof(st_iq3xxs_grid)), 0);
    ck_assert_int_eq(memcmp(kq_kvalues_h, st_kvalues_iq4nl, sizeof(st_kvalues_iq4nl)), 0);
    for (int i = 0; i < 128; i++) {   /* the in-kernel ksigns formula */
        uint32_t s8 = (uint32_t)i | ((uint32_t)(kq_popc((uint32_t)i) & 1) << 7);
        ck_assert_uint_eq(s8, st_ksigns_iq2xs[i]);
    }
}
END_TEST

START_TEST(test_cuda_kern_host_sign_helpers)
{
    for (uint32_t s = 0; s < 16; s++) {
        int v = kq_apply_signs(0x0f050301u, s);
        const int mags[4] = { 1, 3, 5, 15 };
        for (int k = 0; k < 4; k++)
            ck_assert_int_eq((int8_t)(v >> (8 * k)), (s >> k) & 1 ? -mags[k] : mags[k]);
    }
    ck_assert_int_eq(kq_dp4a((int)0xff7f0102u, (int)0x02ff80ffu, 5),
                     5 + (2 * -1) + (1 * -128) + (127 * -1) + (-1 * 2));
}
END_TEST

/* n floats quantized to 'type' (host bytes, caller frees). */
static uint8_t *make_weights(enum st_dtype type, int64_t n)
{
    float *x = (float *)malloc((size_t)n * sizeof(float));
    uint8_t *q = (uint8_t *)malloc(st_dtype_row_bytes(type, n));
    for (int64_t i = 0; i < n; i++)
        x[i] = rndf() * (1.0f + (float)(i % 7));
    st_quantize_row(type, x, q, n);
    free(x);
    return q;
}

/* Blocks of random bytes (every bit pattern of quants, high bits, sign
 * and scale bytes, not only what a quantizer emits), with the fp16 fields
 * set to finite scales. Byte offsets of the fp16 fields per type. */
static int half_offsets(enum st_dtype t, int *off)
{
    switch (t) {
    case ST_DTYPE_Q4_1: case ST_DTYPE_Q5_1: case ST_DTYPE_Q4_K: case ST_DTYPE_Q5_K:
        off[0] = 0, off[1] = 2;
        return 2;
    case ST_DTYPE_Q2_K: off[0] = 80, off[1] = 82; return 2;
    case ST_DTYPE_Q3_K: off[0] = 108; return 1;
    case ST_DTYPE_Q6_K: off[0] = 208; return 1;
    default: off[0] = 0; return 1;   /* Q8_0, Q4_0, Q5_0, IQ3_S, IQ3_XXS, IQ4_XS */
    }
}

static uint8_t *random_blocks(enum st_dtype t, int64_t n)
{
    const struct st_dtype_info *info = st_dtype_info((uint32_t)t);
    size_t nb = st_dtype_row_bytes(t, n);
    uint8_t *q = (uint8_t *)malloc(nb);
    for (size_t i = 0; i < nb; i++)
        q[i] = (uint8_t)((rndf() + 1.0f) * 128.0f);
    int off[2];
    const int nh = half_offsets(t, off);
    for (size_t b = 0; b < nb; b += (size_t)info->block_bytes) {
        for (int k = 0; k < nh; k++) {
            uint16_t h = st_f32_to_fp16(rndf() * 0.01f);
            memcpy(q + b + off[k], &h, 2);
        }
    }
    return q;
}
/* Weights of type T: quantized from random floats, or (random) random
 * bytes; float types are always quantized (random bytes would be NaNs). */
template <int T>
static uint8_t *test_weights(int64_t n, bool random)
{
    return random && kq<T>::QK > 1 ? random_blocks((enum st_dtype)T, n)
                                   : make_weights((enum st_dtype)T, n);
}

template <int T>
static void check_deq(int64_t n, bool random)
{
    uint8_t *q = test_weights<T>(n, random);
    float *ref = (float *)malloc((size_t)n * sizeof(float)), y[32];
    st_dequant_row((enum st_dtype)T, q, ref, n);
    for (int64_t s = 0; s < n / 32; s++) {
        kq_deq_row32<T>(q, s, y);
        for (int j = 0; j < 32; j++)
            ck_assert_msg(y[j] == ref[s * 32 + j], "type %d element %lld: %g vs %g", T,
                          (long long)(s * 32 + j), (double)y[j], (double)ref[s * 32 + j]);
    }
    free(ref);
    free(q);
}

START_TEST(test_cuda_kern_host_dequant_matches_reference)
{
    const int64_t n = 1024;
#define CHECK_DEQ(T) check_deq<T>(n, false);
    KQ_QUANT_TYPES(CHECK_DEQ)
    KQ_FLOAT_TYPES(CHECK_DEQ)
#undef CHECK_DEQ
}
END_TEST

/* Host q8_1 row in the kernel layout. s = d * sum(q) here (not the float
 * sum the GPU stores) so the integer dot must equal the float dot of the
 * dequantized vectors up to rounding: any layout slip shows. */
static void quantize_q8_1_host(const float *x, uint8_t *row, int64_t n)
{
    for (int64_t b = 0; b < n / 32; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[b * 32 + j]));
        float d = amax / 127.0f;
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            int q = amax == 0.0f ? 0 : (int)roundf(x[b * 32 + j] / d);
            ((int8_t *)row)[b * 32 + j] = (int8_t)q;
            sum += q;
        }
        float2 ds;
        ds.x = d;
        ds.y = d * (float)sum;
        memcpy(row + n + 8 * b, &ds, sizeof(ds));
    }
}

template <int T>
static void check_dot(int64_t n, bool random)
{
    typedef kq<T> K;
    uint8_t *w = test_weights<T>(n, random);
    float *x = (float *)malloc((size_t)n * sizeof(float));
    float *wd = (float *)malloc((size_t)n * sizeof(float));
    uint8_t *xq = (uint8_t *)aligned_alloc(16, st_kern_q8_1_row_bytes(n));
    for (int64_t i = 0; i < n; i++)
        x[i] = rndf();
    quantize_q8_1_host(x, xq, n);
    st_dequant_row((enum st_dtype)T, w, wd, n);

    double ref = 0.0, mag = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float2 ds;
        memcpy(&ds, xq + n + 8 * (i / 32), sizeof(ds));
        double xv = (double)ds.x * (double)((int8_t *)xq)[i];
        ref += (double)wd[i] * xv;
        mag += fabs((double)wd[i] * xv);
    }
    double got = 0.0;
    for (int64_t it = 0; it < n / K::IE; it++) {
        typename K::W wv;
        K::load(w + (size_t)(it / K::NI) * K::BB, (int)(it % K::NI), wv);
        got += K::dot(wv, (const int *)(xq + it * K::IE),
                      (const float2 *)(xq + n) + it * (K::IE / 32));
    }
    ck_assert_msg(fabs(got - ref) <= 1e-5 * mag + 1e-6, "type %d: dot %.6f, reference %.6f", T,
                  got, ref);
    free(xq);
    free(wd);
    free(x);
    free(w);
}

START_TEST(test_cuda_kern_host_dot_matches_reference)
{
    for (int rep = 0; rep < 4; rep++) {
#define CHECK_DOT(T) check_dot<T>(2048, false);
        KQ_QUANT_TYPES(CHECK_DOT)
#undef CHECK_DOT
    }
}
END_TEST

/* The same two checks on blocks of random bytes: every quant, high-bit,
 * sign and scale pattern, independent of what the quantizers emit. */
START_TEST(test_cuda_kern_host_random_blocks_match_reference)
{
    for (int rep = 0; rep < 4; rep++) {
#define CHECK_RND(T) check_deq<T>(1024, true); check_dot<T>(2048, true);
        KQ_QUANT_TYPES(CHECK_RND)
#undef CHECK_RND
    }
}
END_TEST

START_TEST(test_cuda_kern_host_q8_1_layout)
{
    ck_assert_uint_eq(st_kern_q8_1_row_bytes(32), 48);     /* 32 + 8, padded to 16 */
    ck_assert_uint_eq(st_kern_q8_1_row_bytes(2048), 2560);
    ck_assert_uint_eq(st_kern_q8_1_row_bytes(768) % 16, 0);
    for (size_t i = 0; i < sizeof(qtypes) / sizeof(qtypes[0]); i++) {
        const struct st_dtype_info *info = st_dtype_info((uint32_t)qtypes[i]);
        ck_assert_ptr_nonnull(info);
    }
    ck_assert_int_eq(kq<ST_DTYPE_Q4_K>::BB, (int)sizeof(struct st_block_q4_k));
    ck_assert_int_eq(kq<ST_DTYPE_Q5_K>::BB, (int)sizeof(struct st_block_q5_k));
    ck_assert_int_eq(kq<ST_DTYPE_Q6_K>::BB, (int)sizeof(struct st_block_q6_k));
    ck_assert_int_eq(kq<ST_DTYPE_IQ3_S>::BB, (int)sizeof(struct st_block_iq3_s));
    ck_assert_int_eq(kq<ST_DTYPE_IQ3_XXS>::BB, (int)sizeof(struct st_block_iq3_xxs));
    ck_assert_int_eq(kq<ST_DTYPE_IQ4_XS>::BB, (int)sizeof(struct st_block_iq4_xs));
    ck_assert_int_eq(kq<ST_DTYPE_Q8_0>::BB, (int)sizeof(struct st_block_q8_0));
    ck_assert_int_eq(kq<ST_DTYPE_Q4_0>::BB, (int)sizeof(struct st_block_q4_0));
    ck_assert_int_eq(kq<ST_DTYPE_Q4_1>::BB, (int)sizeof(struct st_block_q4_1));
    ck_assert_int_eq(kq<ST_DTYPE_Q5_0>::BB, (int)sizeof(struct st_block_q5_0));
    ck_assert_int_eq(kq<ST_DTYPE_Q5_1>::BB, (int)sizeof(struct st_block_q5_1));
    ck_assert_int_eq(kq<ST_DTYPE_Q2_K>::BB, (int)sizeof(struct st_block_q2_k));
    ck_assert_int_eq(kq<ST_DTYPE_Q3_K>::BB, (int)sizeof(struct st_block_q3_k));
    /* the byte offsets the decoders hard-code (fp16 fields, quants) */
    ck_assert_int_eq((int)offsetof(struct st_block_q4_1, qs), 4);
    ck_assert_int_eq((int)offsetof(struct st_block_q5_0, qh), 2);
    ck_assert_int_eq((int)offsetof(struct st_block_q5_0, qs), 6);
    ck_assert_int_eq((int)offsetof(struct st_block_q5_1, qh), 4);
    ck_assert_int_eq((int)offsetof(struct st_block_q5_1, qs), 8);
    ck_assert_int_eq((int)offsetof(struct st_block_q2_k, qs), 16);
    ck_assert_int_eq((int)offsetof(struct st_block_q2_k, d), 80);
    ck_assert_int_eq((int)offsetof(struct st_block_q2_k, dmin), 82);
    ck_assert_int_eq((int)offsetof(struct st_block_q3_k, qs), 32);
    ck_assert_int_eq((int)offsetof(struct st_block_q3_k, scales), 96);
    ck_assert_int_eq((int)offsetof(struct st_block_q3_k, d), 108);
    /* every dispatched type has the block size and length of dtype.h, and
     * the list above names every one of them */
    int n_dispatched = 0;
#define CHECK_BLOCK(T)                                                                  \
    ck_assert_int_eq(kq<T>::BB, st_dtype_info((uint32_t)T)->block_bytes);               \
    ck_assert_int_eq(kq<T>::QK, st_dtype_info((uint32_t)T)->block_elems);               \
    ck_assert_int_eq(kq<T>::QK % kq<T>::IE, 0);                                         \
    ck_assert_int_eq(kq<T>::NI * kq<T>::IE, kq<T>::QK);                                 \
    n_dispatched++;
    KQ_QUANT_TYPES(CHECK_BLOCK)
#undef CHECK_BLOCK
    ck_assert_int_eq(n_dispatched, (int)(sizeof(qtypes) / sizeof(qtypes[0])));
}
END_TEST

/* The radix select of sample.cu / score.cu ranks logits by order_key: a
 * larger key must be exactly "ranks before" of st_draw_before ignoring ids
 * (a larger number; any number before NaN), equal keys exactly the ties
 * (equal numbers, -0 == +0, or both NaN); and the device's before() must
 * be st_draw_before. */
START_TEST(test_cuda_kern_host_order_key_matches_draw_order)
{
    float v[64];
    int n = 0;
    const float special[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f, -1.0f,
                              1e-45f, -1e-45f, 1.17549435e-38f, -3.4028235e38f, 3.4028235e38f };
    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
        v[n++] = special[i];
    while (n < 64)
        v[n++] = rndf() * (n % 3 == 0 ? 1e30f : 10.0f);
    v[60] = v[61];                          /* an exact tie between numbers */
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            const float x = v[a], y = v[b];
            const bool gt = x == x && (y != y || x > y), eq = x == y || (x != x && y != y);
            ck_assert_msg((order_key(x) > order_key(y)) == gt, "%g vs %g", (double)x, (double)y);
            ck_assert_msg((order_key(x) == order_key(y)) == eq, "%g vs %g", (double)x,
                          (double)y);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    ck_assert(before(x, i, y, j) == st_draw_before(x, i, y, j));
        }
    }
}
END_TEST

/* The CUDA twin of the rope formula, host build, against the C one (the
 * device build rounds the same operations explicitly): equal bits for
 * every pair of Qwen3's head and a partial rotation, with no scaling,
 * linear scaling and YaRN; and YaRN really differs from linear. */
START_TEST(test_cuda_kern_host_rope_params_match)
{
    const struct st_rope_params cases[] = {
        st_rope_params_init(128, 1e6f, 1.0f, 0.0f, 1.0f, 0, 0.0f, 0.0f),
        st_rope_params_init(128, 1e6f, 0.5f, 0.0f, 1.0f, 0, 0.0f, 0.0f),
        st_rope_params_init(128, 1e6f, 0.25f, 1.0f, 1.0f, 32768, 32.0f, 1.0f),
        st_rope_params_init(64, 1e4f, 0.125f, 1.0f, 0.9f, 4096, 32.0f, 1.0f),
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const st_rope_params &p = cases[c];
        ck_assert(kr_rope_mscale(p) == st_rope_mscale(&p));
        for (int i = 0; i < p.n_rot / 2; i++)
            ck_assert_msg(kr_rope_inv_freq(p, i) == st_rope_inv_freq(&p, i),
                          "case %zu pair %d: %.9g vs %.9g", c, i, (double)kr_rope_inv_freq(p, i),
                          (double)st_rope_inv_freq(&p, i));
    }
    const st_rope_params lin = st_rope_params_init(128, 1e6f, 0.25f, 0.0f, 1.0f, 0, 0, 0);
    ck_assert(kr_rope_inv_freq(cases[2], 0) != kr_rope_inv_freq(lin, 0));     /* extrapolated */
    ck_assert(kr_rope_inv_freq(cases[2], 63) == kr_rope_inv_freq(lin, 63));   /* interpolated */
    ck_assert(kr_rope_mscale(cases[2]) > 1.13f && kr_rope_mscale(cases[2]) < 1.14f);
}
END_TEST

static Suite *kern_host_suite(void)
{
    Suite *s = suite_create("cuda_kern_host");
    TCase *tc = tcase_create("decode");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cuda_kern_host_tables_match);
    tcase_add_test(tc, test_cuda_kern_host_sign_helpers);
    tcase_add_test(tc, test_cuda_kern_host_q8_1_layout);
    tcase_add_test(tc, test_cuda_kern_host_dequant_matches_reference);
    tcase_add_test(tc, test_cuda_kern_host_dot_matches_reference);
    tcase_add_test(tc, test_cuda_kern_host_random_blocks_match_reference);
    tcase_add_test(tc, test_cuda_kern_host_order_key_matches_draw_order);
    tcase_add_test(tc, test_cuda_kern_host_rope_params_match);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(kern_host_suite(), CK_FORK);
}
