/* test_backend_ssm.c -- the recurrent ops (strata/backend_ssm.h) on the CPU
 * backend against plain scalar references written here from the contract:
 * the conv1d and the delta rule with several slots interleaved in a step,
 * a restart at position 0, and Hv = 2 Hk; reading a run as one step equals
 * reading it a row at a time; long runs of one slot (the chunked form)
 * against both; the sigmoid gate in both shapes; and the
 * shapes and slots the ops refuse.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strata/backend_ssm.h"
#include "support.h"

#define C 12        /* conv channels */
#define K 4         /* taps */
#define S 3         /* slots */
#define HK 2
#define HV 4
#define D 8
#define C3 ((2 * HK + HV) * D)
#define N 10        /* rows of the mixed step */

static struct st_backend *be;

static void setup(void)
{
    struct st_backend_config cfg = { .n_threads = 2 };
    struct st_err err = { 0 };
    ck_assert_msg(st_backend_open("cpu", &cfg, &be, &err) == ST_OK, "%s", err.msg);
}

/* Every tensor a test makes, released at teardown (the sanitizer pass). */
static struct st_tensor made[32];
static int n_made;

static void teardown(void)
{
    while (n_made > 0)
        st_backend_release(be, &made[--n_made]);
    st_backend_close(be);
}

static struct st_tensor mk(enum st_dtype t, int64_t n0, int64_t n1, int64_t n2, int64_t n3)
{
    struct st_tensor out;
    ck_assert_int_lt(n_made, 32);
    ck_assert_int_eq(st_backend_alloc(be, t, (int64_t[4]){ n0, n1, n2, n3 }, &out, NULL), ST_OK);
    made[n_made++] = out;
    return out;
}

static void put(const struct st_tensor *t, const void *v)
{
    ck_assert_int_eq(st_backend_write(be, t, 0, v, st_tensor_nbytes(t), NULL), ST_OK);
}

static void get(const struct st_tensor *t, void *v)
{
    ck_assert_int_eq(st_backend_read(be, t, 0, v, st_tensor_nbytes(t), NULL), ST_OK);
}

/* Entries [r, r + n) of an i32 column [1, N] as the [n] vector the ops take. */
static struct st_tensor col(const struct st_tensor *t, int64_t r, int64_t n)
{
    struct st_tensor v = st_tensor_slice(t, 1, r, n);
    return st_tensor_reshape(&v, (int64_t[4]){ n, 1, 1, 1 });
}

static float rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) / (double)(1ull << 53)) * 2.0f - 1.0f;
}

/* The step: slots 0 and 1 interleaved (0 continues at 3.., 1 starts at 0),
 * then slot 2 restarts at 0 over a state holding something else. */
static const int32_t slots[N] = { 0, 1, 0, 1, 0, 1, 2, 2, 2, 2 };
static const int32_t poss[N] = { 3, 0, 4, 1, 5, 2, 0, 1, 2, 3 };

static float silu(double x) { return (float)(x / (1.0 + exp(-x))); }

START_TEST(test_ssm_conv_matches_reference)
{
    uint64_t seed = 1;
    float x[N * C], w[C * K], st0[S * (K - 1) * C], got[N * C];
    for (int i = 0; i < N * C; i++)
        x[i] = rnd(&seed);
    for (int i = 0; i < C * K; i++)
        w[i] = rnd(&seed);
    for (int i = 0; i < S * (K - 1) * C; i++)
        st0[i] = rnd(&seed);
    struct st_tensor xt = mk(ST_DTYPE_F32, C, N, 1, 1), wt = mk(ST_DTYPE_F32, K, C, 1, 1);
    struct st_tensor out = mk(ST_DTYPE_F32, C, N, 1, 1), st = mk(ST_DTYPE_F32, C, K - 1, S, 1);
    struct st_tensor sl = mk(ST_DTYPE_I32, N, 1, 1, 1), ps = mk(ST_DTYPE_I32, N, 1, 1, 1);
    put(&xt, x), put(&wt, w), put(&st, st0), put(&sl, slots), put(&ps, poss);
    ck_assert_int_eq(st_backend_ssm_conv(be, &out, &xt, &wt, &st, &sl, &ps, NULL), ST_OK);
    get(&out, got);
    float ref[S * (K - 1) * C];
    memcpy(ref, st0, sizeof(ref));
    for (int r = 0; r < N; r++) {
        float *s = ref + slots[r] * (K - 1) * C;
        if (poss[r] == 0)
            memset(s, 0, sizeof(float) * (K - 1) * C);
        for (int c = 0; c < C; c++) {
            double acc = (double)w[c * K + K - 1] * x[r * C + c];
            for (int t = 0; t < K - 1; t++)
                acc += (double)w[c * K + t] * s[t * C + c];
            ck_assert_msg(fabsf(got[r * C + c] - silu(acc)) < 1e-5f, "row %d ch %d: %g vs %g",
                          r, c, (double)got[r * C + c], (double)silu(acc));
        }
        memmove(s, s + C, sizeof(float) * (K - 2) * C);
        memcpy(s + (K - 2) * C, x + r * C, sizeof(float) * C);
    }
    float st1[S * (K - 1) * C];
    get(&st, st1);
    for (int i = 0; i < S * (K - 1) * C; i++)
        ck_assert(st1[i] == ref[i]);   /* the state is the inputs, moved */
    /* the same rows a step each continue from the state: equal */
    struct st_tensor slc = mk(ST_DTYPE_I32, 1, N, 1, 1), psc = mk(ST_DTYPE_I32, 1, N, 1, 1);
    put(&slc, slots), put(&psc, poss), put(&st, st0);
    for (int r = 0; r < N; r++) {
        struct st_tensor x1 = st_tensor_slice(&xt, 1, r, 1), o1 = st_tensor_slice(&out, 1, r, 1);
        struct st_tensor s1 = col(&slc, r, 1), p1 = col(&psc, r, 1);
        float one[C];
        ck_assert_int_eq(st_backend_ssm_conv(be, &o1, &x1, &wt, &st, &s1, &p1, NULL), ST_OK);
        get(&o1, one);
        for (int c = 0; c < C; c++)
            ck_assert(one[c] == got[r * C + c]);
    }
    get(&st, st1);
    for (int i = 0; i < S * (K - 1) * C; i++)
        ck_assert(st1[i] == ref[i]);
}
END_TEST

/* The delta rule from the contract, in double, for one row of slot state m
 * (grouped: v head h reads q/k head h / (HV/HK), else h mod HK). */
static void ref_delta(const float *row, float alpha[HV], float beta[HV], const float *dt,
                      const float *a, double *m, float *out, bool grouped)
{
    for (int h = 0; h < HV; h++) {
        int g = grouped ? h / (HV / HK) : h % HK;
        double q[D], k[D], sq = 0, sk = 0;
        for (int i = 0; i < D; i++) {
            q[i] = row[g * D + i];
            k[i] = row[(HK + g) * D + i];
            sq += q[i] * q[i];
            sk += k[i] * k[i];
        }
        for (int i = 0; i < D; i++) {
            q[i] /= fmax(sqrt(sq), 1e-6);
            k[i] /= fmax(sqrt(sk), 1e-6);
        }
        double x = (double)alpha[h] + dt[h], decay = exp(log1p(exp(x)) * a[h]);
        double b = 1.0 / (1.0 + exp(-(double)beta[h]));
        double *mh = m + h * D * D;
        const float *v = row + 2 * HK * D + h * D;
        for (int j = 0; j < D; j++) {
            double sum = 0;
            for (int i = 0; i < D; i++)
                sum += (mh[j * D + i] *= decay) * k[i];
            double dj = (v[j] - sum) * b, o = 0;
            for (int i = 0; i < D; i++)
                o += (mh[j * D + i] += k[i] * dj) * q[i];
            out[h * D + j] = (float)(o / sqrt((double)D));
        }
    }
}

START_TEST(test_delta_net_matches_reference)   /* _i: tiled (0) or grouped (1) v heads */
{
    uint64_t seed = 7;
    static float qkv[N * C3], al[N * HV], bt[N * HV], dt[HV], a[HV], got[N * HV * D];
    static float st0[S * HV * D * D];
    static double ref[S * HV * D * D];
    for (int i = 0; i < N * C3; i++)
        qkv[i] = rnd(&seed);
    for (int i = 0; i < N * HV; i++)
        al[i] = rnd(&seed), bt[i] = 2.0f * rnd(&seed);
    for (int h = 0; h < HV; h++)
        dt[h] = 0.1f * rnd(&seed), a[h] = -0.5f - fabsf(rnd(&seed));
    for (int i = 0; i < S * HV * D * D; i++)
        ref[i] = st0[i] = 0.1f * rnd(&seed);
    struct st_tensor xt = mk(ST_DTYPE_F32, C3, N, 1, 1), out = mk(ST_DTYPE_F32, HV * D, N, 1, 1);
    struct st_tensor at = mk(ST_DTYPE_F32, HV, N, 1, 1), btt = mk(ST_DTYPE_F32, HV, N, 1, 1);
    struct st_tensor dtt = mk(ST_DTYPE_F32, HV, 1, 1, 1), aa = mk(ST_DTYPE_F32, HV, 1, 1, 1);
    struct st_tensor st = mk(ST_DTYPE_F32, D, D, HV, S);
    struct st_tensor slc = mk(ST_DTYPE_I32, 1, N, 1, 1), psc = mk(ST_DTYPE_I32, 1, N, 1, 1);
    struct st_tensor sl = col(&slc, 0, N), ps = col(&psc, 0, N);
    put(&xt, qkv), put(&at, al), put(&btt, bt), put(&dtt, dt), put(&aa, a), put(&st, st0);
    put(&sl, slots), put(&ps, poss);
    const struct st_delta_net_params p = { HK, HV, D, 1e-6f, _i == 1 };
    ck_assert_int_eq(st_backend_delta_net(be, &out, &xt, &at, &btt, &dtt, &aa, &st, &sl, &ps,
                                          &p, NULL), ST_OK);
    get(&out, got);
    for (int r = 0; r < N; r++) {
        double *m = ref + slots[r] * HV * D * D;
        float want[HV * D];
        if (poss[r] == 0)
            memset(m, 0, sizeof(double) * HV * D * D);
        ref_delta(qkv + r * C3, al + r * HV, bt + r * HV, dt, a, m, want, p.v_grouped);
        for (int i = 0; i < HV * D; i++)
            ck_assert_msg(fabsf(got[r * HV * D + i] - want[i]) < 1e-5f, "row %d [%d]: %g vs %g",
                          r, i, (double)got[r * HV * D + i], (double)want[i]);
    }
    /* the same rows one step at a time continue from the state: equal */
    put(&st, st0);
    for (int r = 0; r < N; r++) {
        struct st_tensor x1 = st_tensor_slice(&xt, 1, r, 1), o1 = st_tensor_slice(&out, 1, r, 1);
        struct st_tensor a1 = st_tensor_slice(&at, 1, r, 1), b1 = st_tensor_slice(&btt, 1, r, 1);
        struct st_tensor s1 = col(&slc, r, 1), p1 = col(&psc, r, 1);
        float one[HV * D];
        ck_assert_int_eq(st_backend_delta_net(be, &o1, &x1, &a1, &b1, &dtt, &aa, &st, &s1, &p1,
                                              &p, NULL), ST_OK);
        get(&o1, one);
        for (int i = 0; i < HV * D; i++)
            ck_assert(one[i] == got[r * HV * D + i]);
    }
}
END_TEST

/* A step whose long runs of one slot take the chunked form (runs of at
 * least 32 rows, chunks of 32): slot 1 starts, slot 0 continues for 140
 * rows (four chunks and 12), slot 1 continues for 40, slot 2 restarts for
 * 7, slot 0 takes one more row; some rows decay so hard that the chunk's
 * running decay underflows. Against the double reference, and against the
 * same rows read one at a time (the recurrence), to a tolerance. */
#define NL 189

START_TEST(test_delta_net_long_runs_match_recurrence)
{
    static int32_t sl_l[NL], ps_l[NL];
    int r = 0;
    sl_l[r] = 1, ps_l[r++] = 0;
    for (int t = 0; t < 140; t++)
        sl_l[r] = 0, ps_l[r++] = 5 + t;
    for (int t = 0; t < 40; t++)
        sl_l[r] = 1, ps_l[r++] = 1 + t;
    for (int t = 0; t < 7; t++)
        sl_l[r] = 2, ps_l[r++] = t;
    sl_l[r] = 0, ps_l[r++] = 145;
    ck_assert_int_eq(r, NL);

    uint64_t seed = 11;
    static float qkv[NL * C3], al[NL * HV], bt[NL * HV], dt[HV], a[HV], got[NL * HV * D];
    static float st0[S * HV * D * D], one[HV * D];
    static double ref[S * HV * D * D];
    for (int i = 0; i < NL * C3; i++)
        qkv[i] = rnd(&seed);
    for (int i = 0; i < NL * HV; i++)
        al[i] = 3.0f * rnd(&seed), bt[i] = 2.0f * rnd(&seed);
    for (int i = 40 * HV; i < 41 * HV; i++)
        al[i] = 30.0f;                       /* decay e^-30 and less: underflows in a chunk */
    for (int h = 0; h < HV; h++)
        dt[h] = 0.1f * rnd(&seed), a[h] = -0.05f - 0.5f * fabsf(rnd(&seed));
    for (int i = 0; i < S * HV * D * D; i++)
        ref[i] = st0[i] = 0.1f * rnd(&seed);
    struct st_tensor xt = mk(ST_DTYPE_F32, C3, NL, 1, 1), out = mk(ST_DTYPE_F32, HV * D, NL, 1, 1);
    struct st_tensor at = mk(ST_DTYPE_F32, HV, NL, 1, 1), btt = mk(ST_DTYPE_F32, HV, NL, 1, 1);
    struct st_tensor dtt = mk(ST_DTYPE_F32, HV, 1, 1, 1), aa = mk(ST_DTYPE_F32, HV, 1, 1, 1);
    struct st_tensor st = mk(ST_DTYPE_F32, D, D, HV, S);
    struct st_tensor slc = mk(ST_DTYPE_I32, 1, NL, 1, 1), psc = mk(ST_DTYPE_I32, 1, NL, 1, 1);
    struct st_tensor sl = col(&slc, 0, NL), ps = col(&psc, 0, NL);
    put(&xt, qkv), put(&at, al), put(&btt, bt), put(&dtt, dt), put(&aa, a), put(&st, st0);
    put(&sl, sl_l), put(&ps, ps_l);
    const struct st_delta_net_params p = { HK, HV, D, 1e-6f, _i == 1 };   /* _i: grouped */
    ck_assert_int_eq(st_backend_delta_net(be, &out, &xt, &at, &btt, &dtt, &aa, &st, &sl, &ps,
                                          &p, NULL), ST_OK);
    get(&out, got);
    for (r = 0; r < NL; r++) {
        double *m = ref + sl_l[r] * HV * D * D;
        float want[HV * D];
        if (ps_l[r] == 0)
            memset(m, 0, sizeof(double) * HV * D * D);
        ref_delta(qkv + r * C3, al + r * HV, bt + r * HV, dt, a, m, want, p.v_grouped);
        for (int i = 0; i < HV * D; i++)
            ck_assert_msg(fabsf(got[r * HV * D + i] - want[i]) <= 1e-4f * (1.0f + fabsf(want[i])),
                          "row %d [%d]: %g vs %g", r, i, (double)got[r * HV * D + i],
                          (double)want[i]);
    }
    static float st1[S * HV * D * D];
    get(&st, st1);
    for (int i = 0; i < S * HV * D * D; i++)
        ck_assert_msg(fabs(st1[i] - ref[i]) <= 1e-4 * (1.0 + fabs(ref[i])), "state [%d]: %g vs %g",
                      i, (double)st1[i], ref[i]);
    /* the recurrence, a row per step, from the same start */
    put(&st, st0);
    for (r = 0; r < NL; r++) {
        struct st_tensor x1 = st_tensor_slice(&xt, 1, r, 1), o1 = st_tensor_slice(&out, 1, r, 1);
        struct st_tensor a1 = st_tensor_slice(&at, 1, r, 1), b1 = st_tensor_slice(&btt, 1, r, 1);
        struct st_tensor s1 = col(&slc, r, 1), p1 = col(&psc, r, 1);
        ck_assert_int_eq(st_backend_delta_net(be, &o1, &x1, &a1, &b1, &dtt, &aa, &st, &s1, &p1,
                                              &p, NULL), ST_OK);
        get(&o1, one);
        for (int i = 0; i < HV * D; i++)
            ck_assert_msg(fabsf(one[i] - got[r * HV * D + i]) <= 1e-4f * (1.0f + fabsf(one[i])),
                          "row %d [%d]: %g vs %g", r, i, (double)one[i],
                          (double)got[r * HV * D + i]);
    }
}
END_TEST

/* Head width 12 (not whole eights: the chunked form's own dots, not the
 * kernels'), one k head for two v heads: a 70-row run of one slot read in
 * one step (chunks 32, 32 and 6) against the same rows a step each. */
START_TEST(test_delta_net_chunked_odd_width)
{
    enum { hk = 1, hv = 2, d = 12, c3 = (2 * hk + hv) * d, n = 70 };
    uint64_t seed = 5;
    static float qkv[n * c3], al[n * hv], bt[n * hv], got[n * hv * d], one[hv * d];
    static int32_t sl0[n], ps0[n];
    float dt[hv] = { 0.2f, -0.1f }, a[hv] = { -0.3f, -1.2f };
    for (int i = 0; i < n * c3; i++)
        qkv[i] = rnd(&seed);
    for (int i = 0; i < n * hv; i++)
        al[i] = 2.0f * rnd(&seed), bt[i] = 2.0f * rnd(&seed);
    for (int r = 0; r < n; r++)
        sl0[r] = 1, ps0[r] = r;
    struct st_tensor xt = mk(ST_DTYPE_F32, c3, n, 1, 1), out = mk(ST_DTYPE_F32, hv * d, n, 1, 1);
    struct st_tensor at = mk(ST_DTYPE_F32, hv, n, 1, 1), btt = mk(ST_DTYPE_F32, hv, n, 1, 1);
    struct st_tensor dtt = mk(ST_DTYPE_F32, hv, 1, 1, 1), aa = mk(ST_DTYPE_F32, hv, 1, 1, 1);
    struct st_tensor st = mk(ST_DTYPE_F32, d, d, hv, 2);
    struct st_tensor slc = mk(ST_DTYPE_I32, 1, n, 1, 1), psc = mk(ST_DTYPE_I32, 1, n, 1, 1);
    struct st_tensor sl = col(&slc, 0, n), ps = col(&psc, 0, n);
    put(&xt, qkv), put(&at, al), put(&btt, bt), put(&dtt, dt), put(&aa, a);
    put(&sl, sl0), put(&ps, ps0);
    const struct st_delta_net_params p = { hk, hv, d, 1e-6f, false };
    ck_assert_int_eq(st_backend_delta_net(be, &out, &xt, &at, &btt, &dtt, &aa, &st, &sl, &ps,
                                          &p, NULL), ST_OK);
    get(&out, got);
    for (int r = 0; r < n; r++) {
        struct st_tensor x1 = st_tensor_slice(&xt, 1, r, 1), o1 = st_tensor_slice(&out, 1, r, 1);
        struct st_tensor a1 = st_tensor_slice(&at, 1, r, 1), b1 = st_tensor_slice(&btt, 1, r, 1);
        struct st_tensor s1 = col(&slc, r, 1), p1 = col(&psc, r, 1);
        ck_assert_int_eq(st_backend_delta_net(be, &o1, &x1, &a1, &b1, &dtt, &aa, &st, &s1, &p1,
                                              &p, NULL), ST_OK);
        get(&o1, one);
        for (int i = 0; i < hv * d; i++)
            ck_assert_msg(fabsf(one[i] - got[r * hv * d + i]) <= 1e-4f * (1.0f + fabsf(one[i])),
                          "row %d [%d]: %g vs %g", r, i, (double)one[i],
                          (double)got[r * hv * d + i]);
    }
}
END_TEST

START_TEST(test_sigmoid_mul_both_shapes)
{
    float x[6] = { 1, -2, 3, 0.5f, 0, -1 }, g[6] = { 0, 1, -1, 2, -2, 10 }, g1[2] = { 0, 3 };
    float got[6];
    struct st_tensor xt = mk(ST_DTYPE_F32, 3, 2, 1, 1), gt = mk(ST_DTYPE_F32, 3, 2, 1, 1);
    struct st_tensor g1t = mk(ST_DTYPE_F32, 1, 2, 1, 1), out = mk(ST_DTYPE_F32, 3, 2, 1, 1);
    put(&xt, x), put(&gt, g), put(&g1t, g1);
    ck_assert_int_eq(st_backend_sigmoid_mul(be, &out, &xt, &gt, NULL), ST_OK);
    get(&out, got);
    for (int i = 0; i < 6; i++)
        ck_assert(fabsf(got[i] - x[i] / (1.0f + expf(-g[i]))) < 1e-6f);
    ck_assert_int_eq(st_backend_sigmoid_mul(be, &xt, &xt, &g1t, NULL), ST_OK);   /* in place */
    get(&xt, got);
    for (int i = 0; i < 6; i++)
        ck_assert(fabsf(got[i] - x[i] / (1.0f + expf(-g1[i / 3]))) < 1e-6f);
}
END_TEST

START_TEST(test_ssm_ops_refuse_bad_input)
{
    struct st_err err = { 0 };
    struct st_tensor x = mk(ST_DTYPE_F32, C, 2, 1, 1), out = mk(ST_DTYPE_F32, C, 2, 1, 1);
    struct st_tensor w = mk(ST_DTYPE_F32, K, C, 1, 1), st = mk(ST_DTYPE_F32, C, K - 1, S, 1);
    struct st_tensor sl = mk(ST_DTYPE_I32, 2, 1, 1, 1), ps = mk(ST_DTYPE_I32, 2, 1, 1, 1);
    struct st_tensor g3 = mk(ST_DTYPE_F32, 3, 2, 1, 1);
    const int32_t bad_slots[2] = { 0, S }, zero[2] = { 0, 0 };
    put(&ps, zero);
    put(&sl, bad_slots);
    ck_assert_int_eq(st_backend_ssm_conv(be, &out, &x, &w, &st, &sl, &ps, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "slot"));
    put(&sl, zero);
    ck_assert_int_eq(st_backend_ssm_conv(be, &x, &x, &w, &st, &sl, &ps, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_ssm_conv(be, &out, &x, &st, &st, &sl, &ps, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_sigmoid_mul(be, &out, &x, &g3, &err), ST_ERR_INVALID);
    const struct st_delta_net_params p = { 3, 4, D, 1e-6f, false };   /* 4 v heads over 3 k heads */
    ck_assert_int_eq(st_backend_delta_net(be, &out, &x, &x, &x, &x, &x, &st, &sl, &ps, &p, &err),
                     ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "delta_net"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("backend_ssm");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_ssm_conv_matches_reference);
    tcase_add_loop_test(tc, test_delta_net_matches_reference, 0, 2);
    tcase_add_loop_test(tc, test_delta_net_long_runs_match_recurrence, 0, 2);
    tcase_add_test(tc, test_delta_net_chunked_odd_width);
    tcase_add_test(tc, test_sigmoid_mul_both_shapes);
    tcase_add_test(tc, test_ssm_ops_refuse_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(suite(), CK_FORK);
}
