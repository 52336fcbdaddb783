/* test_backend_sample.c -- the optional ops of the table on the CPU backend:
 * st_backend_sample (greedy, ties, top-k, top-p, min-p, temperature, the
 * draw; include/strata/draw.h) and the graph calls, which the CPU backend
 * does not offer (they must be no-ops so the layer program can call them
 * unconditionally). The CUDA backend's
 * versions are compared with these in test_cuda_ops.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_fixture.h"
#include "strata/backend.h"
#include "support.h"

static void setup(void)
{
    backend_open(1);
}

/* Sample n rows of V logits by d[0..n); ids written to 'got'. */
static enum st_status run(const float *lg, int64_t V, int64_t n, const struct st_draw *d,
                          int32_t *got, struct st_err *err)
{
    struct st_tensor l = tensor_of(ST_DTYPE_F32, V, n, lg);
    struct st_tensor ids = tensor_of(ST_DTYPE_I32, n, 1, NULL);
    struct st_tensor dt = tensor_of(ST_DTYPE_I32, ST_DRAW_WORDS, n, d);
    enum st_status rc = st_backend_sample(be, &ids, &l, &dt, err);
    if (rc == ST_OK)
        ck_assert_int_eq(st_backend_read(be, &ids, 0, got, (size_t)n * 4, err), ST_OK);
    st_backend_release(be, &ids);
    st_backend_release(be, &l);
    st_backend_release(be, &dt);
    return rc;
}

static struct st_draw draw_of(int32_t top_k, float temp, double u)
{
    return (struct st_draw){ .top_k = top_k, .top_p = 1.0f, .min_p = 0.0f, .temp = temp, .u = u };
}

START_TEST(test_backend_sample_greedy_and_ties)
{
    float lg[2][6] = { { 0.5f, 3.0f, -1.0f, 3.0f, 2.9f, 0.0f },   /* tie: id 1 wins */
                       { -5.0f, -4.0f, -3.0f, -2.0f, -1.0f, -0.5f } };
    struct st_draw d[2] = { draw_of(40, 0.0f, 0.99), draw_of(1, 0.8f, 0.99) };
    int32_t got[2];
    struct st_err err;
    ck_assert_int_eq(run(&lg[0][0], 6, 2, d, got, &err), ST_OK);
    ck_assert_int_eq(got[0], 1);        /* temp 0: argmax, lower id on a tie */
    ck_assert_int_eq(got[1], 5);        /* top_k 1: argmax whatever u */
}
END_TEST

START_TEST(test_backend_sample_topk_draw)
{
    /* logits ln(4), ln(3), ln(2), ln(1) at temp 1: weights 4,3,2,1 of 10 */
    float lg[5] = { logf(2.0f), logf(4.0f), -30.0f, logf(3.0f), logf(1.0f) };
    const double us[] = { 0.0, 0.39, 0.41, 0.69, 0.71, 0.89, 0.91, 0.999 };
    const int32_t want4[] = { 1, 1, 3, 3, 0, 0, 4, 4 };
    const int32_t want2[] = { 1, 1, 1, 3, 3, 3, 3, 3 };   /* weights 4, 3 of 7 */
    const int32_t want3[] = { 1, 1, 1, 3, 3, 0, 0, 0 };   /* weights 4, 3, 2 of 9 */
    struct st_err err;
    for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++) {
        struct st_draw d = draw_of(4, 1.0f, us[i]);
        int32_t got;
        ck_assert_int_eq(run(lg, 5, 1, &d, &got, &err), ST_OK);
        ck_assert_msg(got == want4[i], "u %.3f: %d, want %d", us[i], got, want4[i]);
        d.top_k = 2;
        ck_assert_int_eq(run(lg, 5, 1, &d, &got, &err), ST_OK);
        ck_assert_msg(got == want2[i], "k2 u %.3f: %d, want %d", us[i], got, want2[i]);
        /* top-p 0.6 of p = .4 .3 .2 .1 keeps two, as does min-p 0.6 (p/p0
         * = 1 .75 .5 .25); min-p 0.3 keeps three */
        d = draw_of(4, 1.0f, us[i]);
        d.top_p = 0.6f;
        ck_assert_int_eq(run(lg, 5, 1, &d, &got, &err), ST_OK);
        ck_assert_msg(got == want2[i], "top_p u %.3f: %d, want %d", us[i], got, want2[i]);
        d = draw_of(0, 1.0f, us[i]);
        d.min_p = 0.6f;
        ck_assert_int_eq(run(lg, 5, 1, &d, &got, &err), ST_OK);
        ck_assert_msg(got == want2[i], "min_p u %.3f: %d, want %d", us[i], got, want2[i]);
        d.min_p = 0.3f;
        ck_assert_int_eq(run(lg, 5, 1, &d, &got, &err), ST_OK);
        ck_assert_msg(got == want3[i], "min_p .3 u %.3f: %d, want %d", us[i], got, want3[i]);
    }
}
END_TEST

/* The top-k order written out again: larger first, the lower id on ties,
 * -0 == +0, NaN after every number (NaNs by id). */
static int ref_cmp(const void *pa, const void *pb)
{
    const struct st_draw_cand *a = pa, *b = pb;
    bool na = isnan(a->logit), nb = isnan(b->logit);
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->logit != b->logit)
        return a->logit > b->logit ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Rows full of ties, zeros of both signs, infinities and NaNs: the k best
 * are the first k of a full sort, in its order. */
START_TEST(test_backend_sample_top_k_matches_sort)
{
    enum { V = 700 };
    static const float pool[] = { 1.0f, 1.0f, 0.5f, 0.0f, -0.0f, -1.0f, 2.0f, 2.0f };
    static struct st_draw_cand all[V], got[ST_DRAW_MAX_K];
    static float lg[V];
    uint64_t s = 7;
    for (int row = 0; row < 40; row++) {
        for (int i = 0; i < V; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            int r = (int)(s >> 33);
            lg[i] = row % 4 == 0 ? pool[r % 8]                         /* ties everywhere */
                  : r % 97 == 0 ? NAN : r % 89 == 0 ? -INFINITY : r % 83 == 0 ? INFINITY
                  : (float)(r % 1000) / 100.0f;
            all[i] = (struct st_draw_cand){ i, lg[i], 0.0f };
        }
        qsort(all, V, sizeof(all[0]), ref_cmp);
        int k = 1 + row * 37 % ST_DRAW_MAX_K;
        st_draw_top_k(lg, V, got, k);
        for (int j = 0; j < k; j++)
            ck_assert_msg(got[j].id == all[j].id, "row %d k %d: place %d has %d, want %d", row,
                          k, j, got[j].id, all[j].id);
    }
}
END_TEST

START_TEST(test_backend_sample_large_vocab_matches_sort)
{
    const int64_t V = 5000;
    float *lg = malloc((size_t)V * sizeof(float));
    uint64_t s = 99;
    for (int64_t i = 0; i < V; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        lg[i] = (float)(s >> 40) / (float)(1 << 24) * 10.0f;
    }
    lg[1234] = 11.0f;                   /* a clear maximum */
    struct st_draw d = draw_of(300, 0.0f, 0.5);   /* above 256: clamped, still valid */
    int32_t got;
    struct st_err err;
    ck_assert_int_eq(run(lg, V, 1, &d, &got, &err), ST_OK);
    ck_assert_int_eq(got, 1234);
    d.temp = 1e-3f;                     /* near-greedy temperature */
    ck_assert_int_eq(run(lg, V, 1, &d, &got, &err), ST_OK);
    ck_assert_int_eq(got, 1234);
    free(lg);
}
END_TEST

START_TEST(test_backend_sample_rejects_bad_shapes)
{
    float lg[8] = { 0 };
    struct st_tensor l = tensor_of(ST_DTYPE_F32, 4, 2, lg);
    struct st_tensor ids = tensor_of(ST_DTYPE_I32, 3, 1, NULL);
    struct st_tensor ok = tensor_of(ST_DTYPE_I32, 2, 1, NULL);
    struct st_tensor d = tensor_of(ST_DTYPE_I32, ST_DRAW_WORDS, 2, NULL);
    struct st_tensor short_d = tensor_of(ST_DTYPE_I32, ST_DRAW_WORDS - 1, 2, NULL);
    struct st_err err;
    ck_assert_int_eq(st_backend_sample(be, &ids, &l, &d, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_sample(be, &ok, &l, &short_d, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_sample(be, &ok, &l, &l, &err), ST_ERR_INVALID);
    st_backend_release(be, &l);
    st_backend_release(be, &ids);
    st_backend_release(be, &ok);
    st_backend_release(be, &d);
    st_backend_release(be, &short_d);
}
END_TEST

START_TEST(test_backend_graph_calls_are_noops_on_cpu)
{
    bool replayed = true;
    struct st_err err;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(st_backend_graph_begin(be, 42, &replayed, &err), ST_OK);
        ck_assert(!replayed);           /* the caller always issues its ops */
        ck_assert_int_eq(st_backend_graph_end(be, &err), ST_OK);
    }
    ck_assert_int_eq(st_backend_graph_begin(be, 0, &replayed, &err), ST_ERR_INVALID);
}
END_TEST

static Suite *sample_suite(void)
{
    Suite *s = suite_create("backend_sample");
    TCase *tc = tcase_create("sample");
    tcase_add_checked_fixture(tc, setup, backend_close);
    tcase_add_test(tc, test_backend_sample_greedy_and_ties);
    tcase_add_test(tc, test_backend_sample_topk_draw);
    tcase_add_test(tc, test_backend_sample_top_k_matches_sort);
    tcase_add_test(tc, test_backend_sample_large_vocab_matches_sort);
    tcase_add_test(tc, test_backend_sample_rejects_bad_shapes);
    tcase_add_test(tc, test_backend_graph_calls_are_noops_on_cpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(sample_suite(), CK_FORK);
}
