/* test_cpu_attention.c -- st_backend_attention on the CPU (the tiled path
 * of cpu_attention.c, and the plain one) against a plain double-precision
 * attention written here over a float mirror of the cache: after each step
 * the rows it wrote are read back from the cache (F16, Q8_0, F32 or BF16) and turned
 * into floats, so the reference sees exactly the stored values and the
 * tolerance covers only the kernels' float arithmetic (2e-4, as for F16:
 * Q8_0 changes what is stored, not how it is summed). The Q8_0 rows are
 * also checked against the floats written: within half a step of their
 * block's scale (GGML's rounding) plus the scale's own f16 rounding; F32
 * rows must be the floats written, BF16 rows bit-exact st_f32_to_bf16 of
 * them (round to nearest even; the SIMD store too, NaN kept a NaN).
 *
 * Each shape runs one script of steps over three slots: ragged prompt
 * chunks (not multiples of the tile or the query block), a chunk long
 * enough to span many tiles and blocks, decode rows of one long slot
 * alone (with 2 threads its KV range is split and merged), mixed steps of
 * slots at very different depths, and a slot reused from position 0.
 * Shapes: the head dims of our presets (16, 32, 64, 128, 256; 12 for the
 * scalar path) at GQA ratios 1, 2, 4, 8 and 32. Rows of long chunks are
 * checked on a sample so the suite stays quick under ASan.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_fixture.h"
#include "strata/backend.h"
#include "strata/quant.h"
#include "support.h"

#define SLOTS 3
#define CTX 600
#define TOL 2e-4

struct shape {
    int d, n_head, n_kv;
};

struct mirror {
    struct shape sh;
    enum st_dtype kt, vt;   /* cache types: F16, Q8_0, F32 or BF16 */
    float *k, *v;   /* [SLOTS][CTX][n_kv * d], the stored values as floats */
    struct st_tensor kc, vc;
};

static uint64_t seed_state;

static float frand(float amp)
{
    seed_state = seed_state * 6364136223846793005ull + 1442695040888963407ull;
    return amp * ((float)((seed_state >> 40) & 0xffffff) / 8388608.0f - 1.0f);
}

static float *rand_floats(int64_t n, float amp)
{
    float *x = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        x[i] = frand(amp);
    return x;
}

/* The reference output of query head h of row r, into want[d]. */
static void reference(const struct mirror *m, const float *q, int32_t slot, int32_t pos, int h,
                      double *want)
{
    int d = m->sh.d, kw = m->sh.n_kv * d, g = h / (m->sh.n_head / m->sh.n_kv);
    double *sc = malloc((size_t)(pos + 1) * sizeof(double)), mx = -1e300, sum = 0;
    double scale = 1.0 / sqrt((double)d);
    for (int t = 0; t <= pos; t++) {
        const float *k = m->k + ((size_t)slot * CTX + (size_t)t) * (size_t)kw + (size_t)(g * d);
        double dot = 0;
        for (int i = 0; i < d; i++)
            dot += (double)q[h * d + i] * k[i];
        sc[t] = dot * scale;
        mx = sc[t] > mx ? sc[t] : mx;
    }
    for (int t = 0; t <= pos; t++)
        sum += (sc[t] = exp(sc[t] - mx));
    for (int i = 0; i < d; i++)
        want[i] = 0;
    for (int t = 0; t <= pos; t++) {
        const float *v = m->v + ((size_t)slot * CTX + (size_t)t) * (size_t)kw + (size_t)(g * d);
        for (int i = 0; i < d; i++)
            want[i] += sc[t] / sum * v[i];
    }
    free(sc);
}

/* Row 'at' of cache c (kw elements) as floats into y; for Q8_0, F32 and
 * BF16 also checks it against x, the floats written. */
static void read_row(const struct st_tensor *c, size_t at, int kw, const float *x, float *y)
{
    size_t rb = st_tensor_row_bytes(c);
    unsigned char *buf = malloc(rb);
    struct st_err err;
    ck_assert_int_eq(st_backend_read(be, c, at * rb, buf, rb, &err), ST_OK);
    if (c->type == ST_DTYPE_F16) {
        const uint16_t *h = (const uint16_t *)(void *)buf;
        for (int i = 0; i < kw; i++)
            y[i] = st_fp16_to_f32(h[i]);
    } else if (c->type == ST_DTYPE_F32) {
        memcpy(y, buf, (size_t)kw * sizeof(float));
        ck_assert_msg(memcmp(y, x, (size_t)kw * sizeof(float)) == 0, "f32 row not a copy");
    } else if (c->type == ST_DTYPE_BF16) {
        const uint16_t *h = (const uint16_t *)(void *)buf;
        for (int i = 0; i < kw; i++) {
            y[i] = st_bf16_to_f32(h[i]);
            if (isnan(x[i]))
                ck_assert_msg(isnan(y[i]), "bf16 element %d: NaN stored as %g", i, (double)y[i]);
            else
                ck_assert_msg(h[i] == st_f32_to_bf16(x[i]), "bf16 element %d: %#x stored for "
                              "%a (want %#x)", i, h[i], (double)x[i], st_f32_to_bf16(x[i]));
        }
    } else {
        const struct st_block_q8_0 *b = (const struct st_block_q8_0 *)(void *)buf;
        for (int k = 0; k < kw / ST_QK; k++) {
            float sc = st_fp16_to_f32(b[k].d), amax = 0;
            for (int i = 0; i < ST_QK; i++)
                amax = fmaxf(amax, fabsf(x[k * ST_QK + i]));
            /* the scale is amax/127 rounded to f16 (relative error 2^-11) */
            ck_assert_msg(fabsf(sc - amax / 127.0f) <= amax / 127.0f * 1e-3f + 1e-12f,
                          "q8_0 scale %g for amax %g", (double)sc, (double)amax);
            for (int i = 0; i < ST_QK; i++) {
                y[k * ST_QK + i] = sc * (float)b[k].qs[i];
                /* half a step, plus 127 x the scale's f16 rounding (2^-11) */
                ck_assert_msg(fabsf(y[k * ST_QK + i] - x[k * ST_QK + i]) <= 0.57f * sc + 1e-6f,
                              "q8_0 element %d: %g stored for %g (scale %g)", k * ST_QK + i,
                              (double)y[k * ST_QK + i], (double)x[k * ST_QK + i], (double)sc);
            }
        }
    }
    free(buf);
}

/* One step of n rows (slot[r], pos[r]); checks every row when n is small,
 * else a sample and the last rows. */
static void step(struct mirror *m, const int32_t *slot, const int32_t *pos, int n)
{
    int d = m->sh.d, qw = m->sh.n_head * d, kw = m->sh.n_kv * d;
    float *q = rand_floats((int64_t)qw * n, 2.0f), *k = rand_floats((int64_t)kw * n, 1.0f);
    float *v = rand_floats((int64_t)kw * n, 1.0f);
    struct st_tensor qt = tensor_of(ST_DTYPE_F32, qw, n, q), kt = tensor_of(ST_DTYPE_F32, kw, n, k);
    struct st_tensor vt = tensor_of(ST_DTYPE_F32, kw, n, v);
    struct st_tensor st = tensor_of(ST_DTYPE_I32, n, 1, slot), pt = tensor_of(ST_DTYPE_I32, n, 1, pos);
    struct st_tensor out = tensor_of(ST_DTYPE_F32, qw, n, NULL);
    struct st_err err;

    ck_assert_msg(st_backend_attention(be, &out, &qt, &kt, &vt, &m->kc, &m->vc, &st, &pt,
                                       m->sh.n_head, m->sh.n_kv, 1.0f / sqrtf((float)d),
                                       &err) == ST_OK, "%s", err.msg);
    for (int r = 0; r < n; r++) {
        size_t at = (size_t)slot[r] * CTX + (size_t)pos[r];
        read_row(&m->kc, at, kw, k + (size_t)r * (size_t)kw, m->k + at * (size_t)kw);
        read_row(&m->vc, at, kw, v + (size_t)r * (size_t)kw, m->v + at * (size_t)kw);
    }
    float *got = malloc((size_t)qw * (size_t)n * sizeof(float));
    ck_assert_int_eq(st_backend_read(be, &out, 0, got, (size_t)qw * (size_t)n * sizeof(float),
                                     &err), ST_OK);
    double *want = malloc((size_t)d * sizeof(double));
    for (int r = 0; r < n; r++) {
        if (n > 40 && r % 29 != 0 && r < n - 3)
            continue;
        for (int h = 0; h < m->sh.n_head; h++) {
            reference(m, q + (size_t)r * (size_t)qw, slot[r], pos[r], h, want);
            for (int i = 0; i < d; i++) {
                double g = got[(size_t)r * (size_t)qw + (size_t)(h * d + i)];
                ck_assert_msg(fabs(g - want[i]) <= TOL,
                              "d %d heads %d/%d, kv types %d/%d: row %d (slot %d pos %d) "
                              "head %d dim %d: %.7g vs %.7g", d, m->sh.n_head, m->sh.n_kv,
                              (int)m->kt, (int)m->vt, r, slot[r], pos[r], h, i, g, want[i]);
            }
        }
    }
    free(want); free(got); free(q); free(k); free(v);
    st_backend_release(be, &qt); st_backend_release(be, &kt); st_backend_release(be, &vt);
    st_backend_release(be, &st); st_backend_release(be, &pt); st_backend_release(be, &out);
}

/* Rows [p0, p0 + n) of one slot, appended to slot[]/pos[] at *at. */
static void chunk(int32_t *slot, int32_t *pos, int *at, int32_t s, int32_t p0, int n)
{
    for (int i = 0; i < n; i++, (*at)++) {
        slot[*at] = s;
        pos[*at] = p0 + i;
    }
}

static void run_script(struct shape sh, enum st_dtype kt, enum st_dtype vt)
{
    static int32_t slot[CTX], pos[CTX];
    struct mirror m = { .sh = sh, .kt = kt, .vt = vt };
    size_t kw = (size_t)(sh.n_kv * sh.d), cells = (size_t)SLOTS * CTX * kw;
    int n;

    m.k = calloc(cells, sizeof(float));
    m.v = calloc(cells, sizeof(float));
    struct st_err err;
    ck_assert_int_eq(st_backend_alloc(be, kt, (int64_t[4]){ (int64_t)kw, CTX, SLOTS, 1 },
                                      &m.kc, &err), ST_OK);
    ck_assert_int_eq(st_backend_alloc(be, vt, (int64_t[4]){ (int64_t)kw, CTX, SLOTS, 1 },
                                      &m.vc, &err), ST_OK);
    /* ragged chunks of two slots in one step */
    n = 0;
    chunk(slot, pos, &n, 0, 0, 37);
    chunk(slot, pos, &n, 2, 0, 3);
    step(&m, slot, pos, n);
    /* a long chunk: many tiles and query blocks, the last one partial */
    n = 0;
    chunk(slot, pos, &n, 0, 37, 500);
    step(&m, slot, pos, n);
    /* decode of the long slot alone (split over the context with 2 threads) */
    for (int i = 0; i < 3; i++) {
        n = 0;
        chunk(slot, pos, &n, 0, 537 + i, 1);
        step(&m, slot, pos, n);
    }
    /* slots at different depths in one step: decode, a new chunk, decode */
    n = 0;
    chunk(slot, pos, &n, 2, 3, 1);
    chunk(slot, pos, &n, 1, 0, 5);
    chunk(slot, pos, &n, 0, 540, 1);
    step(&m, slot, pos, n);
    /* a short chunk continuing one slot next to the long one's decode */
    n = 0;
    chunk(slot, pos, &n, 1, 5, 70);
    chunk(slot, pos, &n, 0, 541, 1);
    step(&m, slot, pos, n);
    /* slot 1 reused from position 0: what it held before is not read */
    n = 0;
    chunk(slot, pos, &n, 1, 0, 1);
    step(&m, slot, pos, n);
    free(m.k);
    free(m.v);
    st_backend_release(be, &m.kc);
    st_backend_release(be, &m.vc);
}

static const struct shape shapes[] = {
    { 64, 16, 4 },    /* medium: ratio 4 */
    { 128, 8, 1 },    /* ratio 8 */
    { 16, 2, 2 },     /* ratio 1, tiny heads */
    { 256, 8, 1 },    /* a3b-like wide heads, ratio 8 */
    { 32, 32, 1 },    /* ratio 32: two rows per query block */
    { 16, 4, 2 },     /* tiny preset */
    { 12, 4, 1 },     /* head dim not a multiple of 8: scalar kernels */
};

static void shapes_on(int threads)
{
    backend_open(threads);
    seed_state = 1234 + (uint64_t)threads;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        run_script(shapes[i], ST_DTYPE_F16, ST_DTYPE_F16);
    backend_close();
}

/* Q8_0 caches need head dims that are multiples of 32: those shapes with
 * both caches Q8_0, and one with each of k and v alone. */
static void q8_shapes_on(int threads)
{
    backend_open(threads);
    seed_state = 4321 + (uint64_t)threads;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        if (shapes[i].d % ST_QK == 0)
            run_script(shapes[i], ST_DTYPE_Q8_0, ST_DTYPE_Q8_0);
    run_script(shapes[0], ST_DTYPE_Q8_0, ST_DTYPE_F16);
    run_script(shapes[0], ST_DTYPE_F16, ST_DTYPE_Q8_0);
    backend_close();
}

/* F32 and BF16 caches: every shape (12: the scalar row kernels; 'all'
 * false: ratio 4, tiny heads and 12 only, to keep ASan runs short), both
 * caches of one type, and mixed with the other types. */
static void float_shapes_on(int threads, bool all)
{
    backend_open(threads);
    seed_state = 5678 + (uint64_t)threads;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        if (!all && i != 0 && i != 2 && i != 6)
            continue;
        run_script(shapes[i], ST_DTYPE_F32, ST_DTYPE_F32);
        run_script(shapes[i], ST_DTYPE_BF16, ST_DTYPE_BF16);
    }
    run_script(shapes[0], ST_DTYPE_F32, ST_DTYPE_Q8_0);
    run_script(shapes[0], ST_DTYPE_BF16, ST_DTYPE_F32);
    run_script(shapes[0], ST_DTYPE_F16, ST_DTYPE_BF16);
    run_script(shapes[6], ST_DTYPE_BF16, ST_DTYPE_F16);
    backend_close();
}

/* Hard cases of the BF16 store, through the cache of one decode step at
 * head dims 32 (the AVX2 store, 8 at a time) and 12 (scalar): ties to
 * even both ways, a NaN, infinities, a subnormal, -0, the largest float
 * (rounds to inf), a value just under a tie. */
static void bf16_edges(int d)
{
    static const uint32_t bits[] = { 0x3f808000u, 0x3f818000u, 0x7fc00001u, 0x7f800000u,
                                     0xff800000u, 0x00000001u, 0x80000000u, 0x7f7fffffu,
                                     0x3f807fffu, 0xbf808001u, 0xff812345u, 0x00808000u };
    const int nb = (int)(sizeof(bits) / sizeof(bits[0])), kw = 2 * d;
    struct st_tensor kc, vc;
    struct st_err err;
    ck_assert_int_eq(st_backend_alloc(be, ST_DTYPE_BF16, (int64_t[4]){ kw, 4, 1, 1 }, &kc, &err),
                     ST_OK);
    ck_assert_int_eq(st_backend_alloc(be, ST_DTYPE_BF16, (int64_t[4]){ kw, 4, 1, 1 }, &vc, &err),
                     ST_OK);
    float *q = rand_floats(2 * d, 1.0f), *k = rand_floats(kw, 1.0f), y[512];
    for (int i = 0; i < kw; i++) {
        uint32_t b = bits[i % nb];
        memcpy(&k[i], &b, sizeof(b));
    }
    int32_t slot = 0, pos = 0;
    struct st_tensor qt = tensor_of(ST_DTYPE_F32, 2 * d, 1, q), kt = tensor_of(ST_DTYPE_F32, kw, 1, k);
    struct st_tensor vt = tensor_of(ST_DTYPE_F32, kw, 1, k);
    struct st_tensor st = tensor_of(ST_DTYPE_I32, 1, 1, &slot), pt = tensor_of(ST_DTYPE_I32, 1, 1, &pos);
    struct st_tensor out = tensor_of(ST_DTYPE_F32, 2 * d, 1, NULL);
    ck_assert_int_eq(st_backend_attention(be, &out, &qt, &kt, &vt, &kc, &vc, &st, &pt, 2, 2, 0.25f,
                                          &err), ST_OK);
    read_row(&kc, 0, kw, k, y);
    read_row(&vc, 0, kw, k, y);
    ck_assert(y[0] == 1.0f && y[1] == 0x1.04p0f && isinf(y[3]) && isinf(y[7]));
    free(q); free(k);
    st_backend_release(be, &qt); st_backend_release(be, &kt); st_backend_release(be, &vt);
    st_backend_release(be, &st); st_backend_release(be, &pt); st_backend_release(be, &out);
    st_backend_release(be, &kc); st_backend_release(be, &vc);
}

START_TEST(test_cpu_attention_float_two_threads)
{
    float_shapes_on(2, true);
}
END_TEST

START_TEST(test_cpu_attention_float_one_thread)
{
    float_shapes_on(1, false);
}
END_TEST

/* The plain path reads F32 and BF16 through the same row kernels. */
START_TEST(test_cpu_attention_float_plain)
{
    setenv("STRATA_CPU_ATTN", "plain", 1);
    float_shapes_on(2, false);
}
END_TEST

START_TEST(test_cpu_attention_bf16_edges)
{
    backend_open(1);
    bf16_edges(32);
    bf16_edges(12);
    backend_close();
}
END_TEST

START_TEST(test_cpu_attention_two_threads)
{
    shapes_on(2);
}
END_TEST

START_TEST(test_cpu_attention_one_thread)
{
    shapes_on(1);
}
END_TEST

START_TEST(test_cpu_attention_q8_two_threads)
{
    q8_shapes_on(2);
}
END_TEST

START_TEST(test_cpu_attention_q8_one_thread)
{
    q8_shapes_on(1);
}
END_TEST

/* The plain (per-row) path reads Q8_0 too; it is selected once per
 * process, and each test runs in its own (CK_FORK). */
START_TEST(test_cpu_attention_q8_plain)
{
    setenv("STRATA_CPU_ATTN", "plain", 1);
    q8_shapes_on(2);
}
END_TEST

/* A Q8_0 cache whose heads do not start on a block is refused. */
START_TEST(test_cpu_attention_q8_bad_head_dim)
{
    backend_open(1);
    int d = 16, kw = 2 * d;   /* 2 KV heads of 16: the row is one block */
    struct st_tensor kc, vc;
    struct st_err err;
    ck_assert_int_eq(st_backend_alloc(be, ST_DTYPE_Q8_0, (int64_t[4]){ kw, 8, 1, 1 }, &kc, &err),
                     ST_OK);
    ck_assert_int_eq(st_backend_alloc(be, ST_DTYPE_F16, (int64_t[4]){ kw, 8, 1, 1 }, &vc, &err),
                     ST_OK);
    float *q = rand_floats(4 * d, 1.0f), *k = rand_floats(kw, 1.0f);
    int32_t slot = 0, pos = 0;
    struct st_tensor qt = tensor_of(ST_DTYPE_F32, 4 * d, 1, q), kt = tensor_of(ST_DTYPE_F32, kw, 1, k);
    struct st_tensor vt = tensor_of(ST_DTYPE_F32, kw, 1, k);
    struct st_tensor st = tensor_of(ST_DTYPE_I32, 1, 1, &slot), pt = tensor_of(ST_DTYPE_I32, 1, 1, &pos);
    struct st_tensor out = tensor_of(ST_DTYPE_F32, 4 * d, 1, NULL);
    ck_assert_int_eq(st_backend_attention(be, &out, &qt, &kt, &vt, &kc, &vc, &st, &pt, 4, 2, 0.25f,
                                          &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "kcache"));
    free(q); free(k);
    st_backend_release(be, &qt); st_backend_release(be, &kt); st_backend_release(be, &vt);
    st_backend_release(be, &st); st_backend_release(be, &pt); st_backend_release(be, &out);
    st_backend_release(be, &kc); st_backend_release(be, &vc);
    backend_close();
}
END_TEST

static Suite *attention_suite(void)
{
    Suite *s = suite_create("cpu_attention");
    TCase *tc = tcase_create("tiled");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_cpu_attention_two_threads);
    tcase_add_test(tc, test_cpu_attention_one_thread);
    tcase_add_test(tc, test_cpu_attention_q8_two_threads);
    tcase_add_test(tc, test_cpu_attention_q8_one_thread);
    tcase_add_test(tc, test_cpu_attention_q8_plain);
    tcase_add_test(tc, test_cpu_attention_q8_bad_head_dim);
    tcase_add_test(tc, test_cpu_attention_float_two_threads);
    tcase_add_test(tc, test_cpu_attention_float_one_thread);
    tcase_add_test(tc, test_cpu_attention_float_plain);
    tcase_add_test(tc, test_cpu_attention_bf16_edges);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(attention_suite(), CK_FORK);
}
