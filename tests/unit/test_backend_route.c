/* test_backend_route.c -- the two op-table additions for glm4moe on the
 * CPU backend, on hand-computed cases:
 *
 *   - st_backend_add with a one-row b [C, 1]: a bias added to every row
 *     (in place too), and the shapes it refuses;
 *   - st_backend_moe_route's routing parameters: sigmoid gating, the
 *     selection bias (it changes which experts are chosen, never their
 *     weights), norm on/off and the routed scale; softmax with scale; and
 *     the parameters op_check refuses.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "strata/backend.h"
#include "support.h"

static struct st_backend *be;

static void setup(void)
{
    struct st_backend_config cfg = { .n_threads = 2 };
    struct st_err err = { 0 };
    ck_assert_msg(st_backend_open("cpu", &cfg, &be, &err) == ST_OK, "%s", err.msg);
}

static void teardown(void)
{
    st_backend_close(be);
}

static struct st_tensor mk(enum st_dtype t, int64_t ne0, int64_t ne1)
{
    struct st_tensor out;
    ck_assert_int_eq(st_backend_alloc(be, t, (int64_t[4]){ ne0, ne1, 1, 1 }, &out, NULL), ST_OK);
    return out;
}

static struct st_tensor mk_f32(const float *v, int64_t ne0, int64_t ne1)
{
    struct st_tensor t = mk(ST_DTYPE_F32, ne0, ne1);
    ck_assert_int_eq(st_backend_write(be, &t, 0, v, st_tensor_nbytes(&t), NULL), ST_OK);
    return t;
}

/* ---- bias add ------------------------------------------------------------- */

START_TEST(test_backend_route_bias_add)
{
    const float a[3 * 5] = { 1, 2, 3, 4, 5, -1, -2, -3, -4, -5, 0.5f, 0, 0, 0, 100 };
    const float b[5] = { 10, 20, 30, 40, 50 };
    struct st_tensor at = mk_f32(a, 5, 3), bt = mk_f32(b, 5, 1), out = mk(ST_DTYPE_F32, 5, 3);
    float got[15];
    ck_assert_int_eq(st_backend_add(be, &out, &at, &bt, NULL), ST_OK);
    ck_assert_int_eq(st_backend_read(be, &out, 0, got, sizeof(got), NULL), ST_OK);
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 5; i++)
            ck_assert(got[r * 5 + i] == a[r * 5 + i] + b[i]);
    ck_assert_int_eq(st_backend_add(be, &at, &at, &bt, NULL), ST_OK);   /* in place */
    ck_assert_int_eq(st_backend_read(be, &at, 0, got, sizeof(got), NULL), ST_OK);
    ck_assert(got[7] == -3 + 30 && got[14] == 150);
    /* a bias of another width, or an out that is the bias row, is refused */
    struct st_tensor b4 = mk(ST_DTYPE_F32, 4, 1), one = mk(ST_DTYPE_F32, 5, 1);
    struct st_err err = { 0 };
    ck_assert_int_eq(st_backend_add(be, &out, &at, &b4, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_add(be, &bt, &at, &bt, &err), ST_ERR_INVALID);
    /* two single rows are the element-wise add, as before */
    ck_assert_int_eq(st_backend_add(be, &one, &bt, &bt, NULL), ST_OK);
    ck_assert_int_eq(st_backend_read(be, &one, 0, got, 5 * sizeof(float), NULL), ST_OK);
    ck_assert(got[0] == 20 && got[4] == 100);
    struct st_tensor *all[] = { &at, &bt, &out, &b4, &one };
    for (size_t i = 0; i < 5; i++)
        st_backend_release(be, all[i]);
}
END_TEST

/* ---- routing --------------------------------------------------------------- */

/* One row x = e_0 (E = 32: the CPU's F32 dot runs whole blocks of 8)
 * against a router whose expert e has weights [w_e, 0, ...]: the logits
 * are exactly w = 2, 1, 0, -1. */
struct route_case {
    struct st_tensor x, router, sel, wts, bias;
};

static void route_setup(struct route_case *c, int k)
{
    float x[32] = { 1 }, r[4 * 32] = { 0 };
    const float bias[4] = { 0, 0, 0.5f, 0 };
    for (int e = 0; e < 4; e++)
        r[e * 32] = (float)(2 - e);
    c->x = mk_f32(x, 32, 1);
    c->router = mk_f32(r, 32, 4);
    c->bias = mk_f32(bias, 4, 1);   /* f32 [4] */
    c->sel = mk(ST_DTYPE_I32, k, 1);
    c->wts = mk(ST_DTYPE_F32, k, 1);
}

static void route_free(struct route_case *c)
{
    st_backend_release(be, &c->x);
    st_backend_release(be, &c->router);
    st_backend_release(be, &c->sel);
    st_backend_release(be, &c->wts);
    st_backend_release(be, &c->bias);
}

static double sig(double v) { return 1.0 / (1.0 + exp(-v)); }

/* Route, then check the k choices and weights. */
static void expect(struct route_case *c, const struct st_moe_route_params *rp, int k,
                   const int32_t *sel, const double *w)
{
    int32_t gs[4];
    float gw[4];
    struct st_err err = { 0 };
    ck_assert_msg(st_backend_moe_route(be, &c->sel, &c->wts, &c->x, &c->router, rp, &err) ==
                  ST_OK, "%s", err.msg);
    ck_assert_int_eq(st_backend_read(be, &c->sel, 0, gs, (size_t)k * 4, NULL), ST_OK);
    ck_assert_int_eq(st_backend_read(be, &c->wts, 0, gw, (size_t)k * 4, NULL), ST_OK);
    for (int j = 0; j < k; j++) {
        ck_assert_int_eq(gs[j], sel[j]);
        ck_assert_msg(fabs(gw[j] - w[j]) <= 1e-6 * (1 + fabs(w[j])), "weight %d: %.7f, want "
                      "%.7f", j, (double)gw[j], w[j]);
    }
}

START_TEST(test_backend_route_sigmoid)
{
    struct route_case c;
    route_setup(&c, 2);
    double p0 = sig(2), p1 = sig(1), p2 = sig(0);
    /* sigmoid, top-2 = experts 0, 1, renormalized */
    struct st_moe_route_params rp = { ST_MOE_GATING_SIGMOID, NULL, true, 1.0f };
    expect(&c, &rp, 2, (const int32_t[]){ 0, 1 }, (const double[]){ p0 / (p0 + p1),
                                                                     p1 / (p0 + p1) });
    /* the bias lifts expert 2 to the top (0.5 + 0.5 > 0.881): chosen first,
     * but weighted by its unbiased p = 0.5; times the scale 2.5 */
    rp = (struct st_moe_route_params){ ST_MOE_GATING_SIGMOID, &c.bias, true, 2.5f };
    expect(&c, &rp, 2, (const int32_t[]){ 2, 0 }, (const double[]){ 2.5 * p2 / (p2 + p0),
                                                                     2.5 * p0 / (p2 + p0) });
    /* no renormalization: the raw sigmoids, times 2 */
    rp = (struct st_moe_route_params){ ST_MOE_GATING_SIGMOID, NULL, false, 2.0f };
    expect(&c, &rp, 2, (const int32_t[]){ 0, 1 }, (const double[]){ 2 * p0, 2 * p1 });
    /* softmax (qwen3moe's) with a scale: the renormalized pair times 3 */
    double e0 = exp(2), e1 = exp(1);
    rp = (struct st_moe_route_params){ ST_MOE_GATING_SOFTMAX, NULL, true, 3.0f };
    expect(&c, &rp, 2, (const int32_t[]){ 0, 1 }, (const double[]){ 3 * e0 / (e0 + e1),
                                                                     3 * e1 / (e0 + e1) });
    route_free(&c);
}
END_TEST

START_TEST(test_backend_route_rejects_bad_params)
{
    struct route_case c;
    route_setup(&c, 2);
    struct st_err err = { 0 };
    struct st_tensor b3 = mk(ST_DTYPE_F32, 3, 1);
    const struct st_moe_route_params bad[] = {
        { (enum st_moe_gating)0, NULL, true, 1.0f },       /* no such gating */
        { ST_MOE_GATING_SIGMOID, NULL, true, 0.0f },       /* scale must be > 0 */
        { ST_MOE_GATING_SIGMOID, NULL, true, NAN },
        { ST_MOE_GATING_SIGMOID, &b3, true, 1.0f },       /* bias of 3 for 4 experts */
        { ST_MOE_GATING_SIGMOID, &c.sel, true, 1.0f },     /* an I32 [2] bias */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_int_eq(st_backend_moe_route(be, &c.sel, &c.wts, &c.x, &c.router, &bad[i], &err),
                         ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_moe_route(be, &c.sel, &c.wts, &c.x, &c.router, NULL, &err),
                     ST_ERR_INVALID);
    st_backend_release(be, &b3);
    route_free(&c);
}
END_TEST

static Suite *backend_route_suite(void)
{
    Suite *s = suite_create("backend_route");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_backend_route_bias_add);
    tcase_add_test(tc, test_backend_route_sigmoid);
    tcase_add_test(tc, test_backend_route_rejects_bad_params);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(backend_route_suite(), CK_FORK);
}
