/* test_backend_score.c -- the score op of the table on the CPU backend
 * (st_backend_score, its row function st_score_row; backend.h) against a
 * brute-force double reference: the logprob within 1e-5, the rank and the
 * top ids exactly (ties to the lower id), over rows of every size (odd
 * tails for the AVX2 path, fewer tokens than alternatives), with integer
 * ties, -inf and NaN logits, K = 0, 1, 5, 20 and next = -1; rows spread
 * over the pool give st_score_row's bits; bad shapes and ids are refused.
 * ctest runs it twice: AVX2 (when present) and STRATA_CPU_ISA=scalar.
 * The CUDA kernel is compared with this op in test_cuda_ops.
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
    backend_open(2);
}

/* Score n rows of V logits with k alternatives; vals/ids [(1 + k) * n]. */
static enum st_status run(const float *lg, int64_t V, int64_t n, const int32_t *next, int k,
                          float *vals, int32_t *ids, struct st_err *err)
{
    struct st_tensor l = tensor_of(ST_DTYPE_F32, V, n, lg);
    struct st_tensor nx = tensor_of(ST_DTYPE_I32, n, 1, next);
    struct st_tensor v = tensor_of(ST_DTYPE_F32, 1 + k, n, NULL);
    struct st_tensor id = tensor_of(ST_DTYPE_I32, 1 + k, n, NULL);
    enum st_status rc = st_backend_score(be, &v, &id, &l, &nx, err);
    if (rc == ST_OK) {
        ck_assert_int_eq(st_backend_read(be, &v, 0, vals, st_tensor_nbytes(&v), err), ST_OK);
        ck_assert_int_eq(st_backend_read(be, &id, 0, ids, st_tensor_nbytes(&id), err), ST_OK);
    }
    st_backend_release(be, &l);
    st_backend_release(be, &nx);
    st_backend_release(be, &v);
    st_backend_release(be, &id);
    return rc;
}

/* (v, i) before (bv, bi): the larger logit, NaN last, ties to the lower id. */
static bool ref_before(float v, int32_t i, float bv, int32_t bi)
{
    if (v != v)
        return bv != bv && i < bi;
    return bv != bv || v > bv || (v == bv && i < bi);
}

/* The documented result, in double, by brute force. */
static void ref_row(const float *l, int64_t V, int32_t next, int k, double *lp, int32_t *rank,
                    int32_t *top)
{
    double mx = -INFINITY, z = 0.0;
    for (int64_t i = 0; i < V; i++)
        if (l[i] == l[i] && l[i] > mx)
            mx = l[i];
    for (int64_t i = 0; i < V; i++)
        if (l[i] == l[i] && l[i] > -INFINITY)
            z += exp((double)l[i] - mx);
    double logz = log(z) + mx;
    *lp = 0.0;
    *rank = 0;
    if (next >= 0) {
        float x = l[next];
        int32_t above = 0;
        for (int64_t i = 0; i < V; i++)
            above += x != x ? l[i] == l[i] : l[i] > x;
        *lp = (double)x - logz;
        *rank = 1 + above;
    }
    for (int j = 0; j < k; j++) {
        int32_t best = -1;
        for (int32_t i = 0; i < (int32_t)V; i++) {
            bool taken = false;
            for (int t = 0; t < j; t++)
                taken |= top[t] == i;
            if (!taken && (best < 0 || ref_before(l[i], i, l[best], best)))
                best = i;
        }
        top[j] = best;
    }
}

static void expect_lp(float got, double want, const char *what, int64_t r)
{
    if (want != want)
        ck_assert_msg(got != got, "%s row %lld: %g, want NaN", what, (long long)r, (double)got);
    else if (isinf(want))
        ck_assert_msg((double)got == want, "%s row %lld: %g, want %g", what, (long long)r,
                      (double)got, want);
    else
        ck_assert_msg(fabs((double)got - want) < 1e-5, "%s row %lld: %.9g, want %.9g", what,
                      (long long)r, (double)got, want);
}

/* Every row of one op call against ref_row, and against st_score_row's bits. */
static void check_rows(const float *lg, int64_t V, int64_t n, const int32_t *next, int k)
{
    size_t w = (size_t)(1 + k);
    float *vals = malloc(w * (size_t)n * sizeof(float)), rv[21];
    int32_t *ids = malloc(w * (size_t)n * sizeof(int32_t)), ri[21], top[20];
    struct st_err err = { 0 };
    ck_assert_msg(run(lg, V, n, next, k, vals, ids, &err) == ST_OK, "%s", err.msg);
    for (int64_t r = 0; r < n; r++) {
        const float *l = lg + r * V, *v = vals + (size_t)r * w;
        const int32_t *id = ids + (size_t)r * w;
        double lp;
        int32_t rank;
        ref_row(l, V, next[r], k, &lp, &rank, top);
        ck_assert_int_eq(id[0], rank);
        if (next[r] >= 0)
            expect_lp(v[0], lp, "logprob", r);
        else
            ck_assert(v[0] == 0.0f);
        for (int j = 0; j < k; j++) {
            ck_assert_msg(id[1 + j] == top[j], "row %lld top %d: %d, want %d", (long long)r, j,
                          id[1 + j], top[j]);
            double want;
            int32_t unused;
            ref_row(l, V, top[j], 0, &want, &unused, NULL);
            expect_lp(v[1 + j], want, "top logprob", r);
        }
        st_score_row(l, V, next[r], k, rv, ri);
        ck_assert(memcmp(rv, v, w * sizeof(float)) == 0);
        ck_assert(memcmp(ri, id, w * sizeof(int32_t)) == 0);
    }
    free(vals);
    free(ids);
}

/* Random rows: uniform, integer ties, and with -inf / NaN sprinkled in. */
static void fill(float *l, int64_t V, int kind)
{
    for (int64_t i = 0; i < V; i++) {
        l[i] = kind == 1 ? (float)(rand() % 7) : (float)rand() / (float)RAND_MAX * 60.0f - 40.0f;
        if (kind == 2 && rand() % 5 == 0)
            l[i] = rand() % 2 ? -INFINITY : NAN;
    }
}

START_TEST(test_backend_score_matches_brute_force)
{
    static const int ks[4] = { 0, 1, 5, 20 };
    srand(7);
    for (int it = 0; it < 240; it++) {
        int64_t V = 1 + rand() % (it < 120 ? 40 : 3000), n = 1 + rand() % 6;
        int k = ks[it % 4] < V ? ks[it % 4] : (int)V;
        float *lg = malloc((size_t)(V * n) * sizeof(float));
        int32_t next[6];
        for (int64_t r = 0; r < n; r++) {
            fill(lg + r * V, V, (it / 4) % 3);
            next[r] = (int32_t)(rand() % (V + 1)) - 1;   /* -1 .. V-1 */
        }
        check_rows(lg, V, n, next, k);
        free(lg);
    }
}
END_TEST

/* NaN and -inf as 'next', ties at the K-th place, a row of one value. */
START_TEST(test_backend_score_special_values)
{
    enum { V = 37 };
    float lg[4 * V];
    for (int i = 0; i < 4 * V; i++)
        lg[i] = (float)(i % 3);
    lg[5] = NAN;
    lg[6] = -INFINITY;
    lg[V + 2] = NAN;
    lg[V + 30] = NAN;
    for (int i = 0; i < V; i++)
        lg[2 * V + i] = 1.5f;   /* flat: the top list is ids 0.. */
    lg[3 * V + 9] = -0.0f;      /* -0 and +0 tie */
    int32_t next[4] = { 5, 2, 3, 9 };
    check_rows(lg, V, 4, next, 5);
    next[0] = 6;
    next[1] = -1;
    check_rows(lg, V, 4, next, 20);
    /* the NaN next: rank 1 + the non-NaN tokens, a NaN logprob */
    float v[1];
    int32_t id[1];
    st_score_row(lg, V, 5, 0, v, id);
    ck_assert_int_eq(id[0], V);
    ck_assert(v[0] != v[0]);
    /* the -inf next: rank 1 + the finite tokens, logprob -inf */
    st_score_row(lg, V, 6, 0, v, id);
    ck_assert_int_eq(id[0], V - 1);
    ck_assert(isinf(v[0]) && v[0] < 0);
}
END_TEST

/* A Qwen-sized vocabulary, rows over the pool. */
START_TEST(test_backend_score_large_vocab)
{
    const int64_t V = 151936, n = 3;
    float *lg = malloc((size_t)(V * n) * sizeof(float));
    srand(11);
    for (int64_t r = 0; r < n; r++)
        fill(lg + r * V, V, (int)r);
    int32_t next[3] = { 0, 151935, -1 };
    check_rows(lg, V, n, next, 20);
    free(lg);
}
END_TEST

START_TEST(test_backend_score_rejects_bad_input)
{
    float lg[2 * 8] = { 0 }, vals[64];
    int32_t ids[64], next[4] = { 0, 1, 0, 1 };   /* up to 4 rows */
    struct st_err err = { 0 };
    next[1] = 8;
    ck_assert_int_eq(run(lg, 8, 2, next, 1, vals, ids, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "next[1]"));
    next[1] = -2;
    ck_assert_int_eq(run(lg, 8, 2, next, 1, vals, ids, &err), ST_ERR_INVALID);
    next[1] = 1;
    ck_assert_int_eq(run(lg, 8, 2, next, 21, vals, ids, &err), ST_ERR_INVALID);   /* K > 20 */
    ck_assert_int_eq(run(lg, 4, 4, next, 5, vals, ids, &err), ST_ERR_INVALID);    /* K > V */
    ck_assert_int_eq(run(lg, 8, 2, next, 8, vals, ids, &err), ST_OK);             /* K = V */

    struct st_tensor l = tensor_of(ST_DTYPE_F32, 8, 2, lg);
    struct st_tensor nx = tensor_of(ST_DTYPE_I32, 2, 1, next);
    struct st_tensor v = tensor_of(ST_DTYPE_F32, 3, 2, NULL);
    struct st_tensor id = tensor_of(ST_DTYPE_I32, 4, 2, NULL);
    struct st_tensor id3 = tensor_of(ST_DTYPE_F32, 3, 2, NULL);
    struct st_tensor nx3 = tensor_of(ST_DTYPE_I32, 3, 1, next);
    ck_assert_int_eq(st_backend_score(be, &v, &id, &l, &nx, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_score(be, &v, &id3, &l, &nx, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_score(be, &v, &v, &l, &nx, &err), ST_ERR_INVALID);
    struct st_tensor ok = tensor_of(ST_DTYPE_I32, 3, 2, NULL);
    ck_assert_int_eq(st_backend_score(be, &v, &ok, &l, &nx3, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_score(be, &v, &ok, &l, &nx, &err), ST_OK);
    struct st_tensor *all[] = { &l, &nx, &v, &id, &id3, &nx3, &ok };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        st_backend_release(be, all[i]);
}
END_TEST

static Suite *score_suite(void)
{
    Suite *s = suite_create("backend_score");
    TCase *tc = tcase_create("score");
    tcase_add_checked_fixture(tc, setup, backend_close);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_backend_score_matches_brute_force);
    tcase_add_test(tc, test_backend_score_special_values);
    tcase_add_test(tc, test_backend_score_large_vocab);
    tcase_add_test(tc, test_backend_score_rejects_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(score_suite(), CK_FORK);
}
