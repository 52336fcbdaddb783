/* test_kernels_affine.c -- Q4_1 / Q5_1 dots are exact in the min term.
 *
 * A Q4_1 / Q5_1 weight is d q + m; against Q8_0 activations (d8, q8) a
 * block's dot is d d8 sum(q q8) + m d8 sum(q8), and Strata keeps sum(q8)
 * an exact integer. ggml pairs these types with Q8_1, whose stored
 * s = d8 sum(q8) is rounded to fp16, so llama.cpp's result carries an
 * extra error of up to 2^-11 |m s| per block. On centred weights (m about
 * -d L/2, what `strata make-model` writes) the min term and the scale
 * term are each several times the result and cancel, so that error is a
 * few 1e-5 of sum |w x| (docs/ENGINE.md "Correctness against llama.cpp").
 *
 * Here, on such blocks and on all-positive activations (the largest
 * sum(q8)), every kernel table this CPU runs must equal a double
 * reference built from the GGUF block definition within float rounding
 * (TOL of sum |w x|); the fp16-s value must miss that bound on some row,
 * so the test tells the two roundings apart.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "cpu/cpu.h"
#include "kernels_fixture.h"
#include "support.h"

#define N    768                /* 24 blocks of 32 */
#define ROWS 4
#define TOL  2e-6

/* Block b of the row: d, m and the 32 unsigned codes, from the format's
 * definition (GGUF / ggml): codes j and j + 16 share byte qs[j] (low,
 * high nibble); Q5_1's fifth bit of code e is bit e of qh (little end). */
static void block_codes(enum st_dtype t, const uint8_t *row, int64_t b, float *d, float *m,
                        int q[32])
{
    const uint8_t *p = row + b * (t == ST_DTYPE_Q4_1 ? 20 : 24);
    uint16_t hd, hm;
    memcpy(&hd, p, 2);
    memcpy(&hm, p + 2, 2);
    *d = st_fp16_to_f32(hd);
    *m = st_fp16_to_f32(hm);
    const uint8_t *qs = p + (t == ST_DTYPE_Q4_1 ? 4 : 8);
    uint32_t qh = t == ST_DTYPE_Q5_1 ? (uint32_t)p[4] | (uint32_t)p[5] << 8 |
                                           (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24
                                     : 0;
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0xf) | (int)((qh >> j) & 1) << 4;
        q[j + 16] = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
    }
}

/* Centred weights as make-model writes them: random codes, m = -d L/2. */
static void make_row(enum st_dtype t, uint8_t *row, uint64_t *s)
{
    size_t bb = t == ST_DTYPE_Q4_1 ? 20 : 24;
    float half = t == ST_DTYPE_Q4_1 ? 7.5f : 15.5f;
    for (size_t i = 0; i < bb * (N / 32); i++)
        row[i] = (uint8_t)rnd(s);
    for (int64_t b = 0; b < N / 32; b++) {
        float d = rndf(s, 0.002f, 0.02f);
        uint16_t hd = st_f32_to_fp16(d), hm = st_f32_to_fp16(-half * d);
        memcpy(row + b * bb, &hd, 2);
        memcpy(row + b * bb + 2, &hm, 2);
    }
}

struct refs {
    double exact;               /* the dequantized rows' dot, in double */
    double q81;                 /* the same with ggml's fp16 s in the min term */
    double mag;                 /* sum |w x| */
};

static struct refs reference(enum st_dtype t, const uint8_t *w, const struct st_block_q8_0 *x,
                             const float *xf)
{
    struct refs r = { 0 };
    for (int64_t b = 0; b < N / 32; b++) {
        float d, m, amax = 0.0f;
        int q[32], sum = 0, sy = 0;
        block_codes(t, w, b, &d, &m, q);
        double d8 = st_fp16_to_f32(x[b].d);
        for (int j = 0; j < 32; j++) {
            double wv = (double)d * q[j] + (double)m, xv = d8 * x[b].qs[j];
            r.exact += wv * xv;
            r.mag += fabs(wv * xv);
            sum += q[j] * x[b].qs[j];
            sy += x[b].qs[j];
            amax = fmaxf(amax, fabsf(xf[b * 32 + j]));
        }
        float s = st_fp16_to_f32(st_f32_to_fp16(amax / 127.f * (float)sy));
        r.q81 += (double)d * d8 * sum + (double)m * s;
    }
    return r;
}

START_TEST(test_kernels_affine_min_exact)
{
    static const enum st_dtype ts[] = { ST_DTYPE_Q4_1, ST_DTYPE_Q5_1 };
    static uint8_t w[24 * (N / 32)];
    static struct st_block_q8_0 x[ROWS][N / 32];
    static float xf[ROWS][N];
    int tables = 0;

    for (size_t ti = 0; ti < ST_ARRAY_LEN(ts); ti++) {
        enum st_dtype t = ts[ti];
        uint64_t s = 41 + ti;
        double q81_miss = 0.0;
        make_row(t, w, &s);
        for (int r = 0; r < ROWS; r++) {
            for (int i = 0; i < N; i++)
                xf[r][i] = rndf(&s, 0.25f, 1.0f);
            cpu_quantize_act(NULL, ST_DTYPE_Q8_0, xf[r], x[r], N);
        }
        for (int isa = CPU_ISA_SCALAR; isa < CPU_ISA_COUNT; isa++) {
            const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)isa);
            float y[ROWS];
            if (!k || !k->dot[t])
                continue;
            tables++;
            k->dot[t](N, w, x, sizeof(x[0]), ROWS, y, 1);
            for (int r = 0; r < ROWS; r++) {
                struct refs ref = reference(t, w, x[r], xf[r]);
                ck_assert_msg(fabs((double)y[r] - ref.exact) <= TOL * ref.mag,
                              "%s %s row %d: %.9g, exact %.9g (%.2g of sum |w x|)", k->name,
                              st_dtype_info(t)->name, r, (double)y[r], ref.exact,
                              fabs((double)y[r] - ref.exact) / ref.mag);
                q81_miss = fmax(q81_miss, fabs(ref.q81 - ref.exact) / ref.mag);
            }
        }
        ck_assert_msg(q81_miss > 5 * TOL, "%s: the fp16-s value is off by only %.2g",
                      st_dtype_info(t)->name, q81_miss);
    }
    ck_assert_int_ge(tables, 2);            /* at least scalar, for both types */
}
END_TEST

static Suite *affine_suite(void)
{
    Suite *s = suite_create("kernels_affine");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_kernels_affine_min_exact);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(affine_suite(), CK_FORK);
}
