/* test_cpu_attention.c -- st_backend_attention on the CPU (the tiled path
 * of cpu_attention.c) against a plain double-precision attention written
 * here over a float mirror of the F16 cache.
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
    float *k, *v;   /* [SLOTS][CTX][n_kv * d], the F16 values as floats */
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
    for (int r = 0; r < n; r++)
        for (int i = 0; i < kw; i++) {
            size_t at = ((size_t)slot[r] * CTX + (size_t)pos[r]) * (size_t)kw + (size_t)i;
            m->k[at] = st_fp16_to_f32(st_f32_to_fp16(k[r * kw + i]));
            m->v[at] = st_fp16_to_f32(st_f32_to_fp16(v[r * kw + i]));
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
                              "d %d heads %d/%d: row %d (slot %d pos %d) head %d dim %d: "
                              "%.7g vs %.7g", d, m->sh.n_head, m->sh.n_kv, r, slot[r], pos[r],
                              h, i, g, want[i]);
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

static void run_script(struct shape sh)
{
    static int32_t slot[CTX], pos[CTX];
    struct mirror m = { .sh = sh };
    size_t kw = (size_t)(sh.n_kv * sh.d), cells = (size_t)SLOTS * CTX * kw;
    int n;

    m.k = calloc(cells, sizeof(float));
    m.v = calloc(cells, sizeof(float));
    struct st_err err;
    ck_assert_int_eq(st_backend_alloc(be, ST_DTYPE_F16, (int64_t[4]){ (int64_t)kw, CTX, SLOTS, 1 },
                                      &m.kc, &err), ST_OK);
    ck_assert_int_eq(st_backend_alloc(be, ST_DTYPE_F16, (int64_t[4]){ (int64_t)kw, CTX, SLOTS, 1 },
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
        run_script(shapes[i]);
    backend_close();
}

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

static Suite *attention_suite(void)
{
    Suite *s = suite_create("cpu_attention");
    TCase *tc = tcase_create("tiled");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_cpu_attention_two_threads);
    tcase_add_test(tc, test_cpu_attention_one_thread);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(attention_suite(), CK_FORK);
}
