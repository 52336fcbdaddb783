/* test_engine_spec_cost.c -- the draft cost model and the draft-length plan
 * (src/engine/draft/spec_cost.c, docs/ENGINE.md "Draft length: cost-aware"),
 * with injected timings only: nothing here reads a clock.
 *
 *   - the model: a measured row count returns its time; between two it
 *     interpolates, beyond them it extrapolates with the fitted slope, and
 *     with one row count only it knows nothing else; a row count seen
 *     rarely is pulled towards the line of the others; zero timings (a
 *     manual clock) teach nothing; a preempted step counts at most 3x; a
 *     change of load is followed; the draft fit separates per-pass and
 *     per-slot costs, and prices a one-slot history exactly;
 *   - the plan against a brute force over every k vector (free drafts:
 *     n-gram) on random linear and concave costs and random acceptances:
 *     the same best rate, and no drafts exactly when none pays;
 *   - the plan's shape: rows nearly free (a GPU) draft to the limit, rows
 *     as dear as a step (this VM at 4 slots) draft nothing, a better
 *     estimate gets more drafts, dearer draft passes never mean more MTP
 *     drafts, nothing accepted never drafts; the verdicts that hand over
 *     to the caller (unpriced, measure, explore);
 *   - the MTP catch-up's price (the upkeep of its rows) and its share in
 *     every plan with drafts.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "support.h"

#define MS 1000000.0

/* Steps on 'curve' of rows lo..hi, each timed a + b rows (ms), 'reps' times. */
static void teach(struct st_spec_cost *c, enum st_spec_curve curve, int32_t lo, int32_t hi,
                  double a, double b, int reps)
{
    for (int r = 0; r < reps; r++)
        for (int32_t rows = lo; rows <= hi; rows++)
            st_spec_cost_step(c, curve, rows, (int64_t)((a + b * rows) * MS));
}

START_TEST(test_engine_spec_cost_measured_and_between)
{
    struct st_spec_cost c;
    st_spec_cost_init(&c, false);
    ck_assert(!c.timed);
    ck_assert(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 4) < 0.0);
    st_spec_cost_step(&c, ST_SPEC_LEAN, 4, 0);   /* a manual clock: nothing learned */
    ck_assert(!c.timed);
    ck_assert(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 4) < 0.0);
    st_spec_cost_step(&c, ST_SPEC_LEAN, 4, (int64_t)(2 * MS));
    ck_assert(c.timed);
    ck_assert_double_eq_tol(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 4), 2 * MS, 1.0);
    /* one row count: nothing known about any other, nor about the other curve */
    ck_assert(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 5) < 0.0);
    ck_assert(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 3) < 0.0);
    ck_assert(st_spec_cost_step_ns(&c, ST_SPEC_FULL, 4) < 0.0);
    st_spec_cost_step(&c, ST_SPEC_LEAN, 8, (int64_t)(6 * MS));
    ck_assert_double_eq_tol(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 6), 4 * MS, 1.0);
    /* beyond: the slope 1 ms per row */
    ck_assert_double_eq_tol(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 12), 10 * MS, 1e3);
    /* below: the line (0 ms at 2 rows, 1 at 3) but never less than in
     * proportion to the rows (1 ms at 2, 1.5 at 3) */
    ck_assert_double_eq_tol(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 2), 1 * MS, 1e3);
    ck_assert_double_eq_tol(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 3), 1.5 * MS, 1e3);
    /* past the table: the fit's line */
    ck_assert_double_eq_tol(st_spec_cost_step_ns(&c, ST_SPEC_LEAN, 400), 398 * MS, 1e4);
}
END_TEST

START_TEST(test_engine_spec_cost_outliers_and_load)
{
    struct st_spec_cost c;
    st_spec_cost_init(&c, true);
    teach(&c, ST_SPEC_FULL, 4, 4, 2.0, 0.0, 20);
    ck_assert_double_eq_tol(st_spec_cost_step_ns(&c, ST_SPEC_FULL, 4), 2 * MS, 1.0);
    /* a step the machine preempted for 100 ms counts as 3x the estimate */
    st_spec_cost_step(&c, ST_SPEC_FULL, 4, (int64_t)(100 * MS));
    double t = st_spec_cost_step_ns(&c, ST_SPEC_FULL, 4);
    ck_assert_msg(t < 2.5 * MS, "one preempted step moved the estimate to %.3f ms", t / MS);
    /* the load doubles for good: followed within 30 steps */
    teach(&c, ST_SPEC_FULL, 4, 4, 4.0, 0.0, 30);
    t = st_spec_cost_step_ns(&c, ST_SPEC_FULL, 4);
    ck_assert_msg(fabs(t - 4 * MS) < 0.2 * MS, "after a load change: %.3f ms", t / MS);
}
END_TEST

/* A row count seen once, on a bad step, is pulled towards the line the
 * others make; one seen often keeps its own value (a GPU's flat start). */
START_TEST(test_engine_spec_cost_shrinks_to_the_line)
{
    struct st_spec_cost c;
    st_spec_cost_init(&c, true);
    teach(&c, ST_SPEC_FULL, 1, 3, 1.0, 1.0, 10);   /* 2, 3, 4 ms */
    st_spec_cost_step(&c, ST_SPEC_FULL, 4, (int64_t)(15 * MS));   /* the line: 5 ms */
    double t = st_spec_cost_step_ns(&c, ST_SPEC_FULL, 4);
    ck_assert_msg(t < 11 * MS && t > 5 * MS, "one 15 ms step at 4 rows: %.3f ms", t / MS);
    teach(&c, ST_SPEC_FULL, 4, 4, 11.0, 1.0, 40);   /* 15 ms, measured often */
    t = st_spec_cost_step_ns(&c, ST_SPEC_FULL, 4);
    ck_assert_msg(t > 13.5 * MS, "forty 15 ms steps at 4 rows: %.3f ms", t / MS);
}
END_TEST

START_TEST(test_engine_spec_cost_draft_fit)
{
    struct st_spec_cost c;
    st_spec_cost_init(&c, true);
    ck_assert_double_eq(st_spec_cost_draft_ns(&c, 3, 12), 0.0);   /* unknown: free */
    /* the first calls (cold: the MTP weights' first touch) are not learned */
    st_spec_cost_draft(&c, 1, 1, (int64_t)(50.0 * MS));
    st_spec_cost_draft(&c, 1, 1, (int64_t)(50.0 * MS));
    ck_assert_double_eq(st_spec_cost_draft_ns(&c, 1, 1), 0.0);
    /* one slot only (passes == slot-passes): still priced exactly */
    for (int i = 0; i < 20; i++)
        for (int32_t p = 1; p <= 3; p++)
            st_spec_cost_draft(&c, p, p, (int64_t)(0.3 * MS * p));
    ck_assert_double_eq_tol(st_spec_cost_draft_ns(&c, 2, 2), 0.6 * MS, 0.01 * MS);
    /* d0 = 0.2 ms per pass, d1 = 0.05 ms per slot-pass */
    st_spec_cost_init(&c, true);
    for (int i = 0; i < 20; i++)
        for (int32_t p = 1; p <= 3; p++)
            for (int32_t n = 1; n <= 4; n++)
                st_spec_cost_draft(&c, p, p * n, (int64_t)((0.2 * p + 0.05 * p * n) * MS));
    ck_assert_double_eq_tol(st_spec_cost_draft_ns(&c, 4, 32), (0.8 + 1.6) * MS, 0.1 * MS);
    ck_assert_double_eq_tol(st_spec_cost_draft_ns(&c, 1, 1), 0.25 * MS, 0.02 * MS);
}
END_TEST

/* ---- the plan ---------------------------------------------------------- */

/* Expected tokens per ns of the split k, as the plan defines it. */
static double rate_of(const struct st_spec_cost *c, const struct st_spec_want *w, int32_t n,
                      const int32_t *k)
{
    double tok = n;
    int32_t rows = n, passes = 0, sp = 0;
    for (int32_t i = 0; i < n; i++) {
        for (int32_t j = 1; j <= k[i]; j++)
            tok += pow(w[i].alpha, j);
        rows += k[i];
        if (w[i].mtp && k[i] > 0) {
            passes = ST_MAX(passes, k[i]);
            sp += k[i];
        }
    }
    enum st_spec_curve cv = rows == n ? ST_SPEC_LEAN : c->mtp ? ST_SPEC_FULL : ST_SPEC_LEAN;
    return tok / (st_spec_cost_step_ns(c, cv, rows) + st_spec_cost_draft_ns(c, passes, sp));
}

/* The best rate over every k vector (k_i in 0..max_i). */
static double brute(const struct st_spec_cost *c, const struct st_spec_want *w, int32_t n)
{
    int32_t k[8] = { 0 };
    double best = 0.0;
    for (;;) {
        best = fmax(best, rate_of(c, w, n, k));
        int32_t i = 0;
        while (i < n && k[i] == w[i].max)
            k[i++] = 0;
        if (i == n)
            return best;
        k[i]++;
    }
}

START_TEST(test_engine_spec_cost_plan_is_best)
{
    srand(7);
    int drafted = 0, plain = 0;
    for (int trial = 0; trial < 400; trial++) {
        struct st_spec_cost c;
        st_spec_cost_init(&c, false);
        int32_t n = 1 + rand() % 4;
        double a = 0.2 + (rand() % 100) / 20.0, b = (rand() % 100) / 50.0;
        bool concave = trial % 2;   /* MoE: later rows read experts already read */
        for (int32_t rows = 1; rows <= 40; rows++) {
            double t = concave ? a + b * 4.0 * sqrt((double)rows) : a + b * rows;
            st_spec_cost_step(&c, ST_SPEC_LEAN, rows, (int64_t)(t * MS));
        }
        struct st_spec_want w[4];
        for (int32_t i = 0; i < n; i++)
            w[i] = (struct st_spec_want){ .alpha = (rand() % 101) / 100.0, .max = rand() % 6 };
        int32_t k[4];
        struct st_spec_plan_out out;
        enum st_spec_verdict v = st_spec_plan(&c, w, n, k, &out);
        double best = brute(&c, w, n), got = rate_of(&c, w, n, k);
        ck_assert_msg(fabs(got - best) <= 1e-9 * best, "trial %d: the plan's rate %.6g, the "
                      "best %.6g", trial, got, best);
        double rate0 = n / st_spec_cost_step_ns(&c, ST_SPEC_LEAN, n);
        ck_assert_double_eq_tol(out.rate0, rate0, 1e-12 * rate0);
        int32_t total = 0;
        for (int32_t i = 0; i < n; i++) {
            ck_assert(k[i] >= 0 && k[i] <= w[i].max);
            total += k[i];
        }
        ck_assert_int_eq(total, out.k_total);
        if (v == ST_SPEC_DRAFT) {
            ck_assert(total > 0 && best > rate0);
            drafted++;
        } else {
            ck_assert_int_eq(v, ST_SPEC_PLAIN);
            ck_assert(total == 0 && best <= rate0 * (1 + 1e-12));
            plain++;
        }
    }
    ck_assert_msg(drafted > 50 && plain > 50, "drafted %d, plain %d", drafted, plain);
}
END_TEST

/* A cost model with LEAN and FULL steps a + b rows (ms), FULL up * LEAN. */
static void linear(struct st_spec_cost *c, bool mtp, double a, double b, double up)
{
    st_spec_cost_init(c, mtp);
    teach(c, ST_SPEC_LEAN, 1, 8, a, b, 3);
    if (mtp)
        teach(c, ST_SPEC_FULL, 1, 40, a * up, b * up, 3);
}

static int32_t plan_total(const struct st_spec_cost *c, double alpha, int32_t n, int32_t max,
                          bool mtp, int32_t *k)
{
    struct st_spec_want w[8];
    for (int32_t i = 0; i < n; i++)
        w[i] = (struct st_spec_want){ .alpha = alpha, .max = max, .mtp = mtp };
    struct st_spec_plan_out out;
    (void)st_spec_plan(c, w, n, k, &out);
    return out.k_total;
}

START_TEST(test_engine_spec_cost_plan_shape)
{
    struct st_spec_cost c;
    int32_t k[8];
    /* a GPU: a step is 10 ms whatever it carries: draft to the limit */
    linear(&c, true, 10.0, 0.01, 1.02);
    ck_assert_int_eq(plan_total(&c, 0.8, 1, 4, true, k), 4);
    ck_assert_int_eq(plan_total(&c, 0.8, 4, 4, true, k), 16);
    /* this VM at 4 slots (bench_spec_cost, -t 1): 0.6 ms + 0.78 ms per row,
     * the upkeep +7%, a pass 0.2 ms + 0.07 ms per slot: nothing pays even at
     * 93% accepted */
    linear(&c, true, 0.6, 0.78, 1.07);
    for (int i = 0; i < 20; i++)
        for (int32_t n = 1; n <= 4; n++)
            st_spec_cost_draft(&c, 1, n, (int64_t)((0.2 + 0.07 * n) * MS));
    ck_assert_int_eq(plan_total(&c, 0.93, 4, 3, true, k), 0);
    /* nothing accepted: never */
    linear(&c, false, 10.0, 0.01, 1.0);
    ck_assert_int_eq(plan_total(&c, 0.0, 2, 8, false, k), 0);
    /* a better estimate gets more drafts */
    linear(&c, false, 1.0, 0.15, 1.0);
    struct st_spec_want w[2] = { { .alpha = 0.95, .max = 8 }, { .alpha = 0.5, .max = 8 } };
    struct st_spec_plan_out out;
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &out), ST_SPEC_DRAFT);
    ck_assert_msg(k[0] > k[1], "k %d vs %d", (int)k[0], (int)k[1]);
    /* dearer draft passes never mean more MTP drafts */
    int32_t last = 1 << 30;
    for (double d0 = 0.0; d0 <= 3.0; d0 += 0.25) {
        linear(&c, true, 1.0, 0.1, 1.05);
        for (int i = 0; i < 10; i++)
            for (int32_t p = 1; p <= 4; p++)
                st_spec_cost_draft(&c, p, 2 * p, (int64_t)((d0 * p + 0.01 * 2 * p) * MS));
        int32_t t = plan_total(&c, 0.85, 2, 4, true, k);
        ck_assert_msg(t <= last, "pass cost %.2f ms: %d drafts after %d", d0, (int)t, (int)last);
        last = t;
    }
    ck_assert_int_eq(last, 0);   /* a 3 ms pass against a 1.2 ms step: none */
}
END_TEST

START_TEST(test_engine_spec_cost_plan_verdicts)
{
    struct st_spec_cost c;
    struct st_spec_want w[2] = { { .alpha = 0.9, .max = 3, .mtp = true },
                                 { .alpha = 0.9, .max = 3, .mtp = true } };
    int32_t k[2] = { 7, 7 };
    struct st_spec_plan_out out;
    st_spec_cost_init(&c, true);
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &out), ST_SPEC_UNPRICED);
    ck_assert(k[0] == 0 && k[1] == 0);
    /* fewer than WARM_STEPS (6) drafting steps timed: the first steps are
     * cold, the acceptance rule decides; then, no plain one: measure one */
    teach(&c, ST_SPEC_FULL, 4, 4, 3.0, 0.0, 5);
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &out), ST_SPEC_UNPRICED);
    teach(&c, ST_SPEC_FULL, 4, 4, 3.0, 0.0, 1);
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &out), ST_SPEC_MEASURE);
    /* a plain step known, a step with one draft row not: explore */
    teach(&c, ST_SPEC_LEAN, 2, 2, 1.0, 0.0, 1);
    st_spec_cost_init(&c, true);
    teach(&c, ST_SPEC_LEAN, 2, 2, 1.0, 0.0, 1);
    teach(&c, ST_SPEC_FULL, 2, 2, 1.1, 0.0, 6);
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &out), ST_SPEC_EXPLORE);
    /* two FULL row counts give the line: priced */
    teach(&c, ST_SPEC_FULL, 6, 6, 1.4, 0.0, 1);
    enum st_spec_verdict v = st_spec_plan(&c, w, 2, k, &out);
    ck_assert_msg(v == ST_SPEC_DRAFT, "verdict %d", (int)v);
    ck_assert(out.k_total == k[0] + k[1] && out.rate > out.rate0 && out.alt_k > 0);
    /* no slot may draft: plain, nothing to explore */
    w[0].max = w[1].max = 0;
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &out), ST_SPEC_PLAIN);
    ck_assert_int_eq(out.alt_k, 0);
    /* the split of a given total takes the largest increments first */
    struct st_spec_want v2[3] = { { .alpha = 0.9, .max = 2 }, { .alpha = 0.6, .max = 4 },
                                  { .alpha = 0.95, .max = 1 } };
    int32_t s[3];
    st_spec_split(v2, 3, 4, s);   /* 0.95, 0.9, 0.81, 0.6 */
    ck_assert(s[0] == 2 && s[1] == 1 && s[2] == 1);
    st_spec_split(v2, 3, 100, s);   /* everything there is */
    ck_assert(s[0] == 2 && s[1] == 4 && s[2] == 1);
}
END_TEST

/* The catch-up (an MTP layer's kv-only pass over the positions slots
 * decoded without the upkeep) is priced as the upkeep of that many rows,
 * FULL minus LEAN, and the plan adds an eighth of it to every plan with
 * drafts: the same plan costs exactly that much more per step, and one
 * that pays by a little does not with gaps to catch up. */
START_TEST(test_engine_spec_cost_catch_up_priced)
{
    struct st_spec_cost c, plain;
    st_spec_cost_init(&c, true);
    st_spec_cost_init(&plain, false);
    teach(&c, ST_SPEC_LEAN, 1, 8, 1.0, 0.5, 10);
    teach(&c, ST_SPEC_FULL, 1, 16, 1.1, 0.55, 10);
    teach(&plain, ST_SPEC_LEAN, 1, 8, 1.0, 0.5, 10);
    ck_assert(st_spec_cost_catch_ns(&c, 0) == 0.0);
    /* 40 rows: beyond both curves' measured counts, on their lines */
    double catch40 = st_spec_cost_catch_ns(&c, 40);
    ck_assert_double_eq_tol(catch40, (0.1 + 0.05 * 40) * MS, 1e3);
    ck_assert(st_spec_cost_catch_ns(&plain, 40) == 0.0);   /* no MTP layer: nothing to catch */

    struct st_spec_want w[2] = { { .alpha = 0.9, .max = 3, .mtp = true },
                                 { .alpha = 0.9, .max = 3, .mtp = true } };
    int32_t k[2];
    struct st_spec_plan_out o0, o1;
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &o0), ST_SPEC_DRAFT);
    w[0].gap = 30;
    w[1].gap = 10;
    (void)st_spec_plan(&c, w, 2, k, &o1);
    ck_assert_double_eq_tol(o1.rate0, o0.rate0, 1e-15);   /* plain steps owe nothing */
    ck_assert(o1.alt_rate < o0.alt_rate);
    ck_assert_int_eq(o1.alt_k, o0.alt_k);   /* the same plan here, only dearer */
    double tokens = 2.0;   /* expected tokens of that plan's split */
    st_spec_split(w, 2, o0.alt_k, k);
    for (int i = 0; i < 2; i++)
        for (int32_t j = 1; j <= k[i]; j++)
            tokens += pow(0.9, j);
    ck_assert_double_eq_tol(1.0 / o1.alt_rate - 1.0 / o0.alt_rate,
                            catch40 / ST_SPEC_CATCH_AMORT / tokens, 1e-6 / tokens);
    /* 3% better with drafts (alpha 0.7, one each): not with 40 rows to catch up */
    w[0].alpha = w[1].alpha = 0.7;
    w[0].gap = w[1].gap = 0;
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &o0), ST_SPEC_DRAFT);
    ck_assert(o0.rate < 1.05 * o0.rate0);
    w[0].gap = 30;
    w[1].gap = 10;
    ck_assert_int_eq(st_spec_plan(&c, w, 2, k, &o1), ST_SPEC_PLAIN);
    ck_assert(k[0] == 0 && k[1] == 0);
}
END_TEST

static Suite *engine_spec_cost_suite(void)
{
    Suite *s = suite_create("engine_spec_cost");
    TCase *tc = tcase_create("cost");
    tcase_add_test(tc, test_engine_spec_cost_measured_and_between);
    tcase_add_test(tc, test_engine_spec_cost_outliers_and_load);
    tcase_add_test(tc, test_engine_spec_cost_shrinks_to_the_line);
    tcase_add_test(tc, test_engine_spec_cost_draft_fit);
    tcase_add_test(tc, test_engine_spec_cost_plan_is_best);
    tcase_add_test(tc, test_engine_spec_cost_plan_shape);
    tcase_add_test(tc, test_engine_spec_cost_plan_verdicts);
    tcase_add_test(tc, test_engine_spec_cost_catch_up_priced);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(engine_spec_cost_suite(), CK_FORK);
}
