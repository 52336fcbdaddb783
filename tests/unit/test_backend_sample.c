/* test_backend_sample.c -- the optional ops of the table on the CPU backend:
 * st_backend_sample (greedy, ties, top-k, temperature, the draw) and the
 * graph calls, which the CPU backend does not offer (they must be no-ops
 * so the layer program can call them unconditionally). The CUDA backend's
 * versions are compared with these in test_cuda_ops.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strata/backend.h"
#include "support.h"

static struct st_backend *be;

static void setup(void)
{
    struct st_backend_config cfg = { 1, 0 };
    struct st_err err;
    ck_assert_int_eq(st_backend_open("cpu", &cfg, &be, &err), ST_OK);
}

static void teardown(void)
{
    st_backend_close(be);
    be = NULL;
}

static struct st_tensor vec(enum st_dtype t, int64_t ne0, int64_t ne1, const void *data)
{
    struct st_tensor out;
    struct st_err err;
    ck_assert_int_eq(st_backend_alloc(be, t, (int64_t[4]){ ne0, ne1, 1, 1 }, &out, &err), ST_OK);
    if (data)
        ck_assert_int_eq(st_backend_write(be, &out, 0, data, st_tensor_nbytes(&out), &err), ST_OK);
    return out;
}

/* Sample n rows of V logits; ids written to 'got'. */
static enum st_status run(const float *lg, int64_t V, int64_t n, const int32_t *k,
                          const float *temp, const float *u, int32_t *got, struct st_err *err)
{
    struct st_tensor l = vec(ST_DTYPE_F32, V, n, lg), ids = vec(ST_DTYPE_I32, n, 1, NULL);
    struct st_tensor kt = vec(ST_DTYPE_I32, n, 1, k), tt = vec(ST_DTYPE_F32, n, 1, temp);
    struct st_tensor ut = vec(ST_DTYPE_F32, n, 1, u);
    enum st_status rc = st_backend_sample(be, &ids, &l, &kt, &tt, &ut, err);
    if (rc == ST_OK)
        ck_assert_int_eq(st_backend_read(be, &ids, 0, got, (size_t)n * 4, err), ST_OK);
    st_backend_release(be, &ids);
    st_backend_release(be, &l);
    st_backend_release(be, &kt);
    st_backend_release(be, &tt);
    st_backend_release(be, &ut);
    return rc;
}

START_TEST(test_backend_sample_greedy_and_ties)
{
    float lg[2][6] = { { 0.5f, 3.0f, -1.0f, 3.0f, 2.9f, 0.0f },   /* tie: id 1 wins */
                       { -5.0f, -4.0f, -3.0f, -2.0f, -1.0f, -0.5f } };
    int32_t k[2] = { 40, 1 }, got[2];
    float temp[2] = { 0.0f, 0.8f }, u[2] = { 0.99f, 0.99f };
    struct st_err err;
    ck_assert_int_eq(run(&lg[0][0], 6, 2, k, temp, u, got, &err), ST_OK);
    ck_assert_int_eq(got[0], 1);        /* temp 0: argmax, lower id on a tie */
    ck_assert_int_eq(got[1], 5);        /* top_k 1: argmax whatever u */
}
END_TEST

START_TEST(test_backend_sample_topk_draw)
{
    /* logits ln(4), ln(3), ln(2), ln(1) at temp 1: weights 4,3,2,1 of 10 */
    float lg[5] = { logf(2.0f), logf(4.0f), -30.0f, logf(3.0f), logf(1.0f) };
    const float us[] = { 0.0f, 0.39f, 0.41f, 0.69f, 0.71f, 0.89f, 0.91f, 0.999f };
    const int32_t want4[] = { 1, 1, 3, 3, 0, 0, 4, 4 };
    const int32_t want2[] = { 1, 1, 1, 3, 3, 3, 3, 3 };   /* weights 4, 3 of 7 */
    struct st_err err;
    for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++) {
        int32_t k4 = 4, k2 = 2, got;
        float t = 1.0f;
        ck_assert_int_eq(run(lg, 5, 1, &k4, &t, &us[i], &got, &err), ST_OK);
        ck_assert_msg(got == want4[i], "u %.3f: %d, want %d", (double)us[i], got, want4[i]);
        ck_assert_int_eq(run(lg, 5, 1, &k2, &t, &us[i], &got, &err), ST_OK);
        ck_assert_msg(got == want2[i], "k2 u %.3f: %d, want %d", (double)us[i], got, want2[i]);
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
    int32_t k = 300, got;               /* above 256: clamped, still valid */
    float t = 0.0f, u = 0.5f;
    struct st_err err;
    ck_assert_int_eq(run(lg, V, 1, &k, &t, &u, &got, &err), ST_OK);
    ck_assert_int_eq(got, 1234);
    t = 1e-3f;                          /* near-greedy temperature */
    ck_assert_int_eq(run(lg, V, 1, &k, &t, &u, &got, &err), ST_OK);
    ck_assert_int_eq(got, 1234);
    free(lg);
}
END_TEST

START_TEST(test_backend_sample_rejects_bad_shapes)
{
    float lg[8] = { 0 };
    struct st_tensor l = vec(ST_DTYPE_F32, 4, 2, lg), ids = vec(ST_DTYPE_I32, 3, 1, NULL);
    struct st_tensor k = vec(ST_DTYPE_I32, 2, 1, NULL), t = vec(ST_DTYPE_F32, 2, 1, NULL);
    struct st_err err;
    ck_assert_int_eq(st_backend_sample(be, &ids, &l, &k, &t, &t, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_sample(be, &k, &l, &t, &t, &t, &err), ST_ERR_INVALID);
    st_backend_release(be, &l);
    st_backend_release(be, &ids);
    st_backend_release(be, &k);
    st_backend_release(be, &t);
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
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_backend_sample_greedy_and_ties);
    tcase_add_test(tc, test_backend_sample_topk_draw);
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
