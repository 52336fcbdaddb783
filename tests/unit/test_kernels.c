/* test_kernels.c -- the CPU dot kernels of every weight type.
 *
 * 1. The scalar reference agrees with "dequantize both rows with the
 *    quant.h reference and take the dot product in double".
 * 2. Every SIMD table this CPU can run (avx2, avx-vnni, avx512-vnni)
 *    agrees with the scalar reference for every type, for every number of
 *    activation rows 1..CPU_NX_MAX, on seeded random blocks (random quant
 *    bytes with sane fp16 scales). The integer block sums are exact, so
 *    the tolerance is float rounding only: 1e-5 of sum |w||x|.
 * 3. Every dotw (CPU_NW weight rows per call) is bitwise equal to its
 *    level's dot row by row; Q8_0 and the six low-bit types (Q4_0, Q4_1,
 *    Q5_0, Q5_1, Q2_K, Q3_K) have one at every x86 level, and are also checked on rows with tails (one 32-block, an odd
 *    number of blocks for the 512-bit block pairs, 1 and 5 K super-blocks)
 *    and through cpu_matmul_rows on weight-row ranges that are not whole
 *    CPU_NW groups (dotw for the groups, dot for the rest).
 * 4. cpu_matmul_rows at every (weight rows, activation rows, blocks)
 *    shape, on buffers of their exact size: each output bitwise its row's
 *    dot alone, within tolerance of the reference.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "kernels_fixture.h"
#include "support.h"

static const enum st_dtype types[] = {
    ST_DTYPE_F32, ST_DTYPE_F16, ST_DTYPE_BF16, ST_DTYPE_Q8_0, ST_DTYPE_Q4_0, ST_DTYPE_Q4_K,
    ST_DTYPE_Q5_K, ST_DTYPE_Q6_K, ST_DTYPE_IQ3_S, ST_DTYPE_IQ3_XXS, ST_DTYPE_IQ4_XS,
    ST_DTYPE_Q4_1, ST_DTYPE_Q5_0, ST_DTYPE_Q5_1, ST_DTYPE_Q2_K, ST_DTYPE_Q3_K,
};

static void put_f16(uint8_t *p, float v)
{
    uint16_t h = st_f32_to_fp16(v);
    memcpy(p, &h, 2);
}

/* A row of n elements of type t: random bytes, then sane scales. */
static void rand_row(enum st_dtype t, uint8_t *dst, int64_t n, uint64_t *s)
{
    const struct st_dtype_info *info = st_dtype_info(t);
    size_t rb = st_dtype_row_bytes(t, n), bb = (size_t)info->block_bytes;

    for (size_t i = 0; i < rb; i++)
        dst[i] = (uint8_t)rnd(s);
    for (int64_t i = 0; i < n && info->block_elems == 1; i++) {
        float v = rndf(s, -1.0f, 1.0f);
        if (t == ST_DTYPE_F32)
            memcpy(dst + 4 * i, &v, 4);
        else {
            uint16_t h = t == ST_DTYPE_F16 ? st_f32_to_fp16(v) : st_f32_to_bf16(v);
            memcpy(dst + 2 * i, &h, 2);
        }
    }
    for (size_t b = 0; info->block_elems > 1 && b < rb / bb; b++) {
        uint8_t *blk = dst + b * bb;
        float d = rndf(s, -0.02f, 0.02f);
        switch (t) {
        case ST_DTYPE_Q6_K: put_f16(blk + 208, d); break;
        case ST_DTYPE_Q3_K: put_f16(blk + 108, d); break;
        case ST_DTYPE_Q2_K:                       /* d, dmin at the end */
            put_f16(blk + 80, fabsf(d));
            put_f16(blk + 82, rndf(s, 0.0f, 0.02f));
            break;
        case ST_DTYPE_Q4_1: case ST_DTYPE_Q5_1:   /* d, then a min of either sign */
            put_f16(blk, d);
            put_f16(blk + 2, rndf(s, -0.2f, 0.2f));
            break;
        case ST_DTYPE_Q4_K: case ST_DTYPE_Q5_K:
            put_f16(blk, fabsf(d));
            put_f16(blk + 2, rndf(s, 0.0f, 0.02f));
            break;
        default: put_f16(blk, d); break;
        }
    }
}

/* Reference: dequantize w and x, dot in double; *mag = sum |w||x|. */
static double ref_dot(enum st_dtype t, const void *w, const void *x, int64_t n, double *mag)
{
    float *a = malloc((size_t)n * sizeof(float)), *b = malloc((size_t)n * sizeof(float));
    double s = 0.0, m = 0.0;
    st_dequant_row(t, w, a, n);
    st_dequant_row(cpu_dot_type(t), x, b, n);
    for (int64_t i = 0; i < n; i++) {
        s += (double)a[i] * (double)b[i];
        m += fabs((double)a[i] * (double)b[i]);
    }
    free(a);
    free(b);
    *mag = m;
    return s;
}

#define N 768
#define ROWS CPU_NX_MAX

struct fixture {
    uint8_t *w;          /* one weight row */
    uint8_t *x;          /* ROWS activation rows, stride xs */
    size_t xs;
};

static void make_fixture(enum st_dtype t, uint64_t seed, struct fixture *f)
{
    uint64_t s = seed;
    enum st_dtype dt = cpu_dot_type(t);
    float xf[N];

    f->w = malloc(st_dtype_row_bytes(t, N));
    f->xs = st_dtype_row_bytes(dt, N) + 36;   /* a stride that is not the row size */
    f->x = calloc(ROWS, f->xs);
    rand_row(t, f->w, N, &s);
    for (int r = 0; r < ROWS; r++) {
        for (int i = 0; i < N; i++)
            xf[i] = rndf(&s, -1.0f, 1.0f) * (i % 7 == 0 ? 4.0f : 1.0f);
        cpu_quantize_act(NULL, dt, xf, f->x + (size_t)r * f->xs, N);
    }
}

static void free_fixture(struct fixture *f)
{
    free(f->w);
    free(f->x);
}

START_TEST(test_kernels_scalar_matches_dequant)
{
    for (size_t ti = 0; ti < ST_ARRAY_LEN(types); ti++) {
        enum st_dtype t = types[ti];
        struct fixture f;
        float y[ROWS];
        make_fixture(t, 1000 + ti, &f);
        cpu_kernels_scalar.dot[t](N, f.w, f.x, f.xs, ROWS, y, 1);
        for (int r = 0; r < ROWS; r++) {
            double mag, want = ref_dot(t, f.w, f.x + (size_t)r * f.xs, N, &mag);
            ck_assert_msg(fabs(y[r] - want) <= 1e-4 * mag + 1e-6,
                          "%s row %d: scalar %.7g, dequantized %.7g (mag %.4g)",
                          st_dtype_info(t)->name, r, (double)y[r], want, mag);
        }
        free_fixture(&f);
    }
}
END_TEST

START_TEST(test_kernels_simd_match_scalar)
{
    int tested = 0;
    for (int isa = CPU_ISA_AVX2; isa < CPU_ISA_COUNT; isa++) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
        if (!k)
            continue;
        for (size_t ti = 0; ti < ST_ARRAY_LEN(types); ti++) {
            enum st_dtype t = types[ti];
            struct fixture f;
            float want[ROWS], got[2 * ROWS];
            if (!k->dot[t])
                continue;
            make_fixture(t, 2000 + ti, &f);
            cpu_kernels_scalar.dot[t](N, f.w, f.x, f.xs, ROWS, want, 1);
            for (int nx = 1; nx <= ROWS; nx++) {
                for (int i = 0; i < 2 * ROWS; i++)
                    got[i] = -12345.0f;
                k->dot[t](N, f.w, f.x, f.xs, nx, got, 2);   /* output stride 2 */
                for (int r = 0; r < nx; r++) {
                    double mag;
                    ref_dot(t, f.w, f.x + (size_t)r * f.xs, N, &mag);
                    ck_assert_msg(fabs((double)got[2 * r] - want[r]) <= 1e-5 * mag + 1e-6,
                                  "%s %s nx=%d row %d: %.7g vs scalar %.7g", k->name,
                                  st_dtype_info(t)->name, nx, r, (double)got[2 * r],
                                  (double)want[r]);
                    ck_assert(got[2 * r + 1] == -12345.0f);   /* stride respected */
                }
                for (int r = nx; r < ROWS; r++)
                    ck_assert(got[2 * r] == -12345.0f);       /* no row past nx written */
            }
            tested++;
            free_fixture(&f);
        }
    }
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        ck_assert_int_ge(tested, (int)ST_ARRAY_LEN(types));
#endif
}
END_TEST

/* Bigger magnitudes: full-range activations and scales near the int16
 * limits of maddubs must not saturate in any SIMD path. */
START_TEST(test_kernels_extreme_values)
{
    for (int isa = CPU_ISA_AVX2; isa < CPU_ISA_COUNT; isa++) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
        if (!k)
            continue;
        for (size_t ti = 3; ti < ST_ARRAY_LEN(types); ti++) {
            enum st_dtype t = types[ti], dt = cpu_dot_type(t);
            size_t wb = st_dtype_row_bytes(t, N), xb = st_dtype_row_bytes(dt, N);
            uint8_t *w = malloc(wb), *x = malloc(xb);
            float xf[N], a, b;
            uint64_t s = 77 + ti;
            rand_row(t, w, N, &s);
            if (t == ST_DTYPE_Q8_0)
                for (size_t i = 0; i < wb; i += 34)
                    memset(w + i + 2, 0x80, 32);        /* -128 everywhere */
            for (int i = 0; i < N; i++)
                xf[i] = (i & 1) ? -1.0f : 1.0f;          /* every q at +-127 */
            cpu_quantize_act(NULL, dt, xf, x, N);
            cpu_kernels_scalar.dot[t](N, w, x, xb, 1, &a, 1);
            k->dot[t](N, w, x, xb, 1, &b, 1);
            double mag;
            ref_dot(t, w, x, N, &mag);
            ck_assert_msg(fabs((double)a - b) <= 1e-5 * mag + 1e-6, "%s %s: %g vs %g", k->name,
                          st_dtype_info(t)->name, (double)b, (double)a);
            free(w);
            free(x);
        }
    }
}
END_TEST

/* The SIMD activation quantizers must be bit-exact with quant.h's (the
 * results of every dot depend on them), ties and zero blocks included. */
START_TEST(test_kernels_quantizers_bit_exact)
{
    static const enum st_dtype qt[] = { ST_DTYPE_Q8_0, ST_DTYPE_Q8_K };
    float x[4 * ST_QK_K];
    uint64_t s = 99;
    for (int i = 0; i < 4 * ST_QK_K; i++)
        x[i] = rndf(&s, -3.0f, 3.0f);
    for (int i = 0; i < ST_QK_K; i++)            /* block 1: ties at .5 after scaling */
        x[ST_QK_K + i] = (i == 5) ? -127.0f : (i == 0 ? 127.0f : (float)(i % 50) - 24.5f);
    for (int i = 0; i < ST_QK_K; i++)            /* block 2: all zero */
        x[2 * ST_QK_K + i] = 0.0f;
    for (int isa = CPU_ISA_AVX2; isa < CPU_ISA_COUNT; isa++) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
        for (size_t i = 0; k && i < ST_ARRAY_LEN(qt); i++) {
            size_t nb = st_dtype_row_bytes(qt[i], 4 * ST_QK_K);
            uint8_t *a = calloc(1, nb), *b = calloc(1, nb);
            ck_assert(k->quant[qt[i]] != NULL);
            cpu_quantize_act(NULL, qt[i], x, a, 4 * ST_QK_K);
            k->quant[qt[i]](x, b, 4 * ST_QK_K);
            ck_assert_msg(memcmp(a, b, nb) == 0, "%s %s quantizer differs from the reference",
                          k->name, st_dtype_info(qt[i])->name);
            free(a);
            free(b);
        }
    }
}
END_TEST

/* A dotw kernel (CPU_NW weight rows per call) must be bitwise equal to
 * its level's dot once per weight row, for every nx: the matmul uses
 * dotw for whole groups and dot for the rest of a chunk, so any
 * difference would make a row's logits depend on the thread split. */
START_TEST(test_kernels_dotw_bitwise_equal_dot)
{
    int tested = 0;
    for (int isa = CPU_ISA_SCALAR; isa < CPU_ISA_COUNT; isa++) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
        for (size_t ti = 0; k && ti < ST_ARRAY_LEN(types); ti++) {
            enum st_dtype t = types[ti];
            if (!k->dotw[t])
                continue;
            size_t ws = st_dtype_row_bytes(t, N) + 14;   /* a stride that is not the row */
            uint8_t *w = calloc(CPU_NW, ws);
            uint64_t s = 500 + ti;
            struct fixture f;
            make_fixture(t, 3000 + ti, &f);
            for (int r = 0; r < CPU_NW; r++)
                rand_row(t, w + (size_t)r * ws, N, &s);
            for (int nx = 1; nx <= ROWS; nx++) {
                float got[ROWS * CPU_NW], want[ROWS * CPU_NW];
                for (int i = 0; i < ROWS * CPU_NW; i++)
                    got[i] = want[i] = -7.0f;
                k->dotw[t](N, w, ws, f.x, f.xs, nx, got, CPU_NW);
                for (int r = 0; r < CPU_NW; r++)
                    k->dot[t](N, w + (size_t)r * ws, f.x, f.xs, nx, want + r, CPU_NW);
                ck_assert_msg(memcmp(got, want, sizeof(got)) == 0, "%s %s nx=%d: dotw != dot",
                              k->name, st_dtype_info(t)->name, nx);
                for (int i = nx * CPU_NW; i < ROWS * CPU_NW; i++)
                    ck_assert(got[i] == -7.0f);
            }
            tested++;
            free(w);
            free_fixture(&f);
        }
    }
    if (cpu_kernels_for(CPU_ISA_AVX512))
        ck_assert_int_ge(tested, 3);
}
END_TEST

/* The types with a dotw entry at every x86 level: Q8_0 and the low-bit
 * ones (Q4_0 since 2026-11-30). Q8_0 and Q4_0 run the 512-bit block-pair
 * kernels at avx512-vnni, hence their place in the tail tests too. */
static const enum st_dtype wtypes[] = { ST_DTYPE_Q8_0, ST_DTYPE_Q4_0, ST_DTYPE_Q4_1,
                                        ST_DTYPE_Q5_0, ST_DTYPE_Q5_1, ST_DTYPE_Q2_K,
                                        ST_DTYPE_Q3_K };

START_TEST(test_kernels_dotw_every_level)
{
    for (int isa = CPU_ISA_AVX2; isa < CPU_ISA_COUNT; isa++) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
        for (size_t ti = 0; k && ti < ST_ARRAY_LEN(wtypes); ti++) {
            int wnx = k->dotw_nx[wtypes[ti]];
            ck_assert_msg(k->dotw[wtypes[ti]] != NULL, "%s %s: no dotw", k->name,
                          st_dtype_info(wtypes[ti])->name);
            ck_assert(wnx == 0 || (wnx >= 2 && wnx <= CPU_NX_MAX));
        }
        /* the 512-bit block-pair kernels take 4 decode rows per pass */
        if (k && isa == CPU_ISA_AVX512)
            ck_assert_int_eq(k->dotw_nx[ST_DTYPE_Q8_0], 4);
    }
}
END_TEST

/* n elements, nx activation rows (stride xs) of random floats quantized. */
static uint8_t *make_acts(enum st_dtype t, int64_t n, int rows, size_t *xs, uint64_t *s)
{
    enum st_dtype dt = cpu_dot_type(t);
    float *xf = malloc((size_t)n * sizeof(float));
    *xs = st_dtype_row_bytes(dt, n) + 4;   /* not the row size; Q8_K keeps its float aligned */
    uint8_t *x = calloc((size_t)rows, *xs);
    for (int r = 0; r < rows; r++) {
        for (int64_t i = 0; i < n; i++)
            xf[i] = rndf(s, -1.0f, 1.0f) * (i % 5 == 0 ? 3.0f : 1.0f);
        cpu_quantize_act(NULL, dt, xf, x + (size_t)r * *xs, n);
    }
    free(xf);
    return x;
}

/* Row lengths that leave tails: one 32-block, an odd number of blocks
 * (the 512-bit kernels pair blocks), one and five K super-blocks. Every
 * level's dot and dotw against the scalar reference, and dotw bitwise
 * equal to dot. */
START_TEST(test_kernels_dotw_tails)
{
    static const int64_t lens[] = { 32, 96, 800, 256, 1280 };
    for (int isa = CPU_ISA_AVX2; isa < CPU_ISA_COUNT; isa++) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
        for (size_t ti = 0; k && ti < ST_ARRAY_LEN(wtypes); ti++) {
            enum st_dtype t = wtypes[ti];
            for (size_t li = 0; li < ST_ARRAY_LEN(lens); li++) {
                int64_t n = lens[li];
                if (n % st_dtype_info(t)->block_elems)
                    continue;
                uint64_t s = 4000 + 10 * ti + li;
                size_t xs, ws = st_dtype_row_bytes(t, n) + 2;
                uint8_t *x = make_acts(t, n, ROWS, &xs, &s), *w = malloc(CPU_NW * ws);
                for (int r = 0; r < CPU_NW; r++)
                    rand_row(t, w + (size_t)r * ws, n, &s);
                for (int nx = 1; nx <= ROWS; nx++) {
                    float got[ROWS * CPU_NW], one[ROWS * CPU_NW], want;
                    k->dotw[t](n, w, ws, x, xs, nx, got, CPU_NW);
                    for (int r = 0; r < CPU_NW; r++)
                        k->dot[t](n, w + (size_t)r * ws, x, xs, nx, one + r, CPU_NW);
                    ck_assert_msg(memcmp(got, one, sizeof(float) * (size_t)(nx * CPU_NW)) == 0,
                                  "%s %s n=%lld nx=%d: dotw != dot", k->name,
                                  st_dtype_info(t)->name, (long long)n, nx);
                    for (int r = 0; r < CPU_NW; r++) {
                        for (int j = 0; j < nx; j++) {
                            double mag;
                            const uint8_t *wr = w + (size_t)r * ws, *xj = x + (size_t)j * xs;
                            cpu_kernels_scalar.dot[t](n, wr, xj, xs, 1, &want, 1);
                            ref_dot(t, wr, xj, n, &mag);
                            ck_assert_msg(fabs((double)got[j * CPU_NW + r] - want) <= 1e-5 * mag + 1e-6,
                                          "%s %s n=%lld nx=%d w%d x%d: %.7g vs scalar %.7g",
                                          k->name, st_dtype_info(t)->name, (long long)n, nx, r,
                                          j, (double)got[j * CPU_NW + r], (double)want);
                        }
                    }
                }
                free(w);
                free(x);
            }
        }
    }
}
END_TEST

/* cpu_matmul_rows over weight-row ranges that are not whole CPU_NW
 * groups (dotw for the groups, dot for the rest) at decode shapes (1-2
 * activation rows; 3-4 where the level's dotw_nx says so; 5 goes through
 * dot): each output bitwise equal to the level's dot for that row alone. */
START_TEST(test_kernels_dotw_matmul_ragged_rows)
{
    enum { O = 13, NR = 5 };
    static const int64_t ranges[][2] = { { 0, O }, { 1, 12 }, { 2, 5 }, { 5, 6 } };
    for (int isa = CPU_ISA_AVX2; isa < CPU_ISA_COUNT; isa++) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
        for (size_t ti = 0; k && ti < ST_ARRAY_LEN(wtypes); ti++) {
            enum st_dtype t = wtypes[ti];
            uint64_t s = 6000 + ti;
            size_t xs, ws = st_dtype_row_bytes(t, N);
            uint8_t *x = make_acts(t, N, NR, &xs, &s), *w = malloc(O * ws);
            for (int o = 0; o < O; o++)
                rand_row(t, w + (size_t)o * ws, N, &s);
            for (int nr = 1; nr <= NR; nr++) {
                for (size_t ri = 0; ri < ST_ARRAY_LEN(ranges); ri++) {
                    float y[NR * O], want;
                    for (int i = 0; i < NR * O; i++)
                        y[i] = -3.0f;
                    cpu_matmul_rows(k, t, w, ws, N, ranges[ri][0], ranges[ri][1], x, xs, nr, y, O);
                    for (int j = 0; j < NR; j++) {
                        for (int64_t o = 0; o < O; o++) {
                            bool in = j < nr && o >= ranges[ri][0] && o < ranges[ri][1];
                            if (!in) {
                                ck_assert(y[j * O + o] == -3.0f);
                                continue;
                            }
                            k->dot[t](N, w + (size_t)o * ws, x + (size_t)j * xs, xs, 1, &want, 1);
                            ck_assert_msg(memcmp(&y[j * O + o], &want, sizeof(float)) == 0,
                                          "%s %s rows %d range %zu: row %lld differs from dot",
                                          k->name, st_dtype_info(t)->name, nr, ri, (long long)o);
                        }
                    }
                }
            }
            free(w);
            free(x);
        }
    }
}
END_TEST

START_TEST(test_kernels_dispatch_complete)
{
    const struct cpu_kernels *best = cpu_kernels_best();
    for (size_t ti = 0; ti < ST_ARRAY_LEN(types); ti++) {
        ck_assert(best->dot[types[ti]] != NULL);
        ck_assert(cpu_kernels_scalar.dot[types[ti]] != NULL);
        ck_assert_int_ne(cpu_dot_type(types[ti]), ST_DTYPE_COUNT_);
    }
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_Q4_0), ST_DTYPE_Q8_0);
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_Q4_1), ST_DTYPE_Q8_0);
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_Q5_0), ST_DTYPE_Q8_0);
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_Q5_1), ST_DTYPE_Q8_0);
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_Q2_K), ST_DTYPE_Q8_K);
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_Q3_K), ST_DTYPE_Q8_K);
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_IQ3_S), ST_DTYPE_Q8_K);
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_BF16), ST_DTYPE_BF16);
    ck_assert_int_eq(cpu_dot_type(ST_DTYPE_Q8_K), ST_DTYPE_COUNT_);
    ck_assert_int_ge(best->nx, 1);
    ck_assert_int_le(best->nx, CPU_NX_MAX);
    ck_assert_ptr_nonnull(cpu_kernels_for(CPU_ISA_SCALAR));
}
END_TEST

/* (review 2026-11-30) cpu_matmul_rows at every shape the decode and
 * prefill paths split differently: 1-9 weight rows (whole CPU_NW groups
 * and not), 1 to CPU_NX_MAX + 1 activation rows (dotw up to the level's
 * dotw_nx, then dot), 1, 3 and 25 blocks (the 512-bit block-pair tails)
 * and 1 and 5 K super-blocks, weights and activations allocated to their
 * exact size so that ASan sees any read past them. Each output bitwise the level's dot for that row
 * alone (docs/design/ENGINE.md "Determinism") and within tolerance of the reference. */
START_TEST(test_kernels_matmul_every_shape)
{
    static const int64_t lens[] = { 32, 96, 800, 256, 1280 };
    static const int outs[] = { 1, 3, 4, 5, 9 };
    enum { NRM = CPU_NX_MAX + 1 };
    for (int isa = CPU_ISA_AVX2; isa < CPU_ISA_COUNT; isa++) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
        for (size_t ti = 0; k && ti < ST_ARRAY_LEN(types); ti++) {
            enum st_dtype t = types[ti], dt = cpu_dot_type(t);
            for (size_t li = 0; li < ST_ARRAY_LEN(lens); li++) {
                int64_t n = lens[li];
                if (n % st_dtype_info(t)->block_elems)
                    continue;
                uint64_t s = 8000 + 10 * ti + li;
                size_t ws = st_dtype_row_bytes(t, n), xs = st_dtype_row_bytes(dt, n);
                float *xf = malloc((size_t)n * sizeof(float)), y[NRM * 9], want;
                uint8_t *x = malloc(NRM * xs), *w = malloc(9 * ws);
                for (int r = 0; r < NRM; r++) {
                    for (int64_t i = 0; i < n; i++)
                        xf[i] = rndf(&s, -1.0f, 1.0f);
                    cpu_quantize_act(NULL, dt, xf, x + (size_t)r * xs, n);
                }
                for (size_t oi = 0; oi < ST_ARRAY_LEN(outs); oi++) {
                    int O = outs[oi];
                    uint8_t *wo = w + (size_t)(9 - O) * ws;   /* the last O rows: ends at w's end */
                    for (int o = 0; o < O; o++)
                        rand_row(t, wo + (size_t)o * ws, n, &s);
                    for (int nr = 1; nr <= NRM; nr++) {
                        cpu_matmul_rows(k, t, wo, ws, n, 0, O, x, xs, nr, y, (size_t)O);
                        for (int j = 0; j < nr; j++) {
                            for (int o = 0; o < O; o++) {
                                double mag, ref;
                                const uint8_t *wr = wo + (size_t)o * ws, *xj = x + (size_t)j * xs;
                                k->dot[t](n, wr, xj, xs, 1, &want, 1);
                                ref = ref_dot(t, wr, xj, n, &mag);
                                ck_assert_msg(memcmp(&y[j * O + o], &want, sizeof(want)) == 0 &&
                                                  fabs((double)want - ref) <= 1e-5 * mag + 1e-5,
                                              "%s %s n=%lld O=%d rows %d: row %d x %d: %.7g, "
                                              "dot %.7g, ref %.7g", k->name,
                                              st_dtype_info(t)->name, (long long)n, O, nr, o, j,
                                              (double)y[j * O + o], (double)want, ref);
                            }
                        }
                    }
                }
                free(xf);
                free(x);
                free(w);
            }
        }
    }
}
END_TEST

static Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_kernels_scalar_matches_dequant);
    tcase_add_test(tc, test_kernels_simd_match_scalar);
    tcase_add_test(tc, test_kernels_extreme_values);
    tcase_add_test(tc, test_kernels_quantizers_bit_exact);
    tcase_add_test(tc, test_kernels_dotw_bitwise_equal_dot);
    tcase_add_test(tc, test_kernels_dotw_every_level);
    tcase_add_test(tc, test_kernels_dotw_tails);
    tcase_add_test(tc, test_kernels_dotw_matmul_ragged_rows);
    tcase_add_test(tc, test_kernels_matmul_every_shape);
    tcase_add_test(tc, test_kernels_dispatch_complete);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(kernels_suite(), CK_FORK);
}
