/* test_sched_queue.c -- who gets a free slot (docs/design/SCHEDULER.md sections 3, 5,
 * 6, 8): score order, aging, affinity, fifo, the queue limit and shedding,
 * cancel, several engines, the non-batch path, notify, stats, activity and
 * the dispatch log line. All on a manual clock. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "sched_sim.h"
#include "strata/log.h"
#include "support.h"

static void config(struct st_sched_config *c, bool batch, double div, int32_t bonus)
{
    st_sched_config_defaults(c);
    c->batch = batch;
    c->aging_divisor_s = div;
    c->swap_affinity_bonus = bonus;
}

static void advance_s(struct sim *sim, double s)
{
    st_clock_manual_advance(&sim->clock, (int64_t)(s * (double)ST_NS_PER_SEC));
}

/* Submit that must succeed. */
static void put(struct sim *sim, struct sim_job *j, int32_t prio, int32_t model)
{
    ck_assert_int_eq(sim_submit(sim, j, prio, model, 100, 1, NULL), ST_OK);
    ck_assert_int_eq(j->job.state, ST_JOB_WAITING);
}

/* The engine finishes whatever holds 'j''s slot. */
static void finish(struct sim *sim, struct sim_job *j)
{
    int32_t e = j->job.engine, k = j->job.slot;
    st_sched_finish(sim->s, &j->job, ST_OUTCOME_COMPLETED, NULL);
    sim->slot[e][k] = NULL;
    j->done = true;
}

static struct sim_job *admit(struct sim *sim, int32_t e, int32_t k)
{
    struct st_sched_job *j = st_sched_admit(sim->s, e, k);
    if (!j)
        return NULL;
    sim->slot[e][k] = ST_CONTAINER_OF(j, struct sim_job, job);
    return sim->slot[e][k];
}

static void check_ok(struct sim *sim)
{
    char why[160];
    ck_assert_msg(st_sched_check_invariants(sim->s, why, sizeof(why)), "%s", why);
}

START_TEST(test_sched_free_slot_goes_to_highest_priority)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job a, b, w0, w5;

    config(&c, true, 60, 10);
    sim_init(&sim, &c, 1, 2, 512);
    put(&sim, &a, 0, 0);
    put(&sim, &b, 0, 0);
    ck_assert_int_eq(sim_admit_all(&sim), 2);          /* both slots busy */
    put(&sim, &w0, 0, 0);                               /* a 0 waits ... */
    advance_s(&sim, 1);
    put(&sim, &w5, 5, 0);                               /* ... then a 5 arrives */
    ck_assert_ptr_null(st_sched_admit(sim.s, 0, 0));    /* slot 0 is not free */
    finish(&sim, &a);
    ck_assert_ptr_eq(admit(&sim, 0, a.job.slot), &w5);  /* the first free slot: the 5 */
    ck_assert_int_eq(w5.job.state, ST_JOB_ADMITTED);
    ck_assert_int_eq(w0.job.state, ST_JOB_WAITING);
    finish(&sim, &b);
    ck_assert_ptr_eq(admit(&sim, 0, b.job.slot), &w0);
    check_ok(&sim);
    sim_fini(&sim);

    /* The same through the simulated engine: the 5 gets its first token first. */
    struct sim_job j[4];
    sim_init(&sim, &c, 1, 2, 512);
    ck_assert_int_eq(sim_submit(&sim, &j[0], 0, 0, 100, 50, NULL), ST_OK);
    ck_assert_int_eq(sim_submit(&sim, &j[1], 0, 0, 100, 60, NULL), ST_OK);
    sim_step(&sim);
    ck_assert_int_eq(sim_submit(&sim, &j[2], 0, 0, 100, 5, NULL), ST_OK);
    sim_step(&sim);
    ck_assert_int_eq(sim_submit(&sim, &j[3], 5, 0, 100, 5, NULL), ST_OK);
    ck_assert(sim_run(&sim, j, 4, 1000));
    ck_assert_int_lt(j[3].first_token_ns, j[2].first_token_ns);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_equal_priority_keeps_arrival_order)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[6];

    config(&c, false, 60, 10);
    sim_init(&sim, &c, 1, 1, 512);
    for (int i = 0; i < 6; i++)
        put(&sim, &j[i], 0, 0);   /* same clock time: the arrival number decides */
    for (int i = 0; i < 6; i++) {
        ck_assert_ptr_eq(admit(&sim, 0, 0), &j[i]);
        finish(&sim, &j[i]);
    }
    sim_fini(&sim);
}
END_TEST

/* One slot, a batch job at t=0, and normal traffic: a fresh normal job
 * arrives every 10 s as the previous one finishes. Returns the time the
 * batch job got the slot, or -1 if it did not within 'limit_s'. */
static double batch_overtakes_at(double div, double limit_s, uint64_t *aging_reorders)
{
    static struct sim_job normal[4000];
    struct sim sim;
    struct st_sched_config c;
    struct sim_job b;
    double at = -1;

    config(&c, false, div, 10);
    sim_init(&sim, &c, 1, 1, 512);
    put(&sim, &b, -100, 0);
    put(&sim, &normal[0], 0, 0);
    struct sim_job *run = admit(&sim, 0, 0);
    ck_assert_ptr_eq(run, &normal[0]);
    for (int k = 1; k < 4000 && sim_now_s(&sim) < limit_s; k++) {
        advance_s(&sim, 10);
        put(&sim, &normal[k], 0, 0);
        finish(&sim, run);
        run = admit(&sim, 0, 0);
        if (run == &b) {
            at = sim_now_s(&sim);
            break;
        }
    }
    struct st_sched_stats st;
    st_sched_stats(sim.s, &st);
    *aging_reorders = st.band[ST_BAND_BATCH].reorders_aging;
    sim_fini(&sim);
    return at;
}

START_TEST(test_sched_aging_batch_overtakes_normal_traffic)
{
    uint64_t reorders = 0;
    double at = batch_overtakes_at(60, 20000, &reorders);   /* the default: 1 point per minute */
    ck_assert_msg(at >= 5990 && at <= 6020, "batch dispatched at %.0f s, want ~6000 s", at);
    ck_assert_uint_eq(reorders, 1);                          /* aging changed that pick */
    at = batch_overtakes_at(1, 20000, &reorders);            /* scales with agingDivisor */
    ck_assert_msg(at >= 90 && at <= 120, "batch dispatched at %.0f s, want ~100 s", at);
    ck_assert_double_eq(batch_overtakes_at(0, 20000, &reorders), -1);   /* aging off: starves */
    ck_assert_uint_eq(reorders, 0);
}
END_TEST

START_TEST(test_sched_fifo_policy_is_priority_then_arrival)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job old_batch, n[3], m1;

    config(&c, false, 60, 50);
    c.policy = ST_SCHED_FIFO;
    sim_init(&sim, &c, 1, 1, 512);
    put(&sim, &old_batch, -100, 0);
    advance_s(&sim, 1e6);                 /* a very long wait: no aging under fifo */
    put(&sim, &m1, 0, 1);                 /* another model: no affinity under fifo */
    for (int i = 0; i < 3; i++)
        put(&sim, &n[i], 0, 0);
    struct sim_job *want[] = { &m1, &n[0], &n[1], &n[2], &old_batch };
    for (size_t i = 0; i < ST_ARRAY_LEN(want); i++) {
        struct sim_job *got = admit(&sim, 0, 0);
        ck_assert_ptr_eq(got, want[i]);
        ck_assert_double_eq(got->job.dispatch_score, got->job.priority);
        finish(&sim, got);
    }
    struct st_sched_stats st;
    st_sched_stats(sim.s, &st);
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        ck_assert_uint_eq(st.band[b].reorders_aging, 0);
        ck_assert_uint_eq(st.band[b].reorders_affinity, 0);
    }
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_affinity_never_promotes_across_a_band)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job loaded_normal, other_interactive, loaded_batch, other_normal;

    config(&c, true, 60, 99);                 /* the largest bonus allowed */
    sim_init(&sim, &c, 1, 2, 512);            /* engine 0 has model 0 loaded */
    put(&sim, &loaded_normal, 0, 0);          /* earlier, and on the loaded model */
    put(&sim, &other_interactive, 100, 1);
    struct sim_job *got = admit(&sim, 0, 0);
    ck_assert_ptr_eq(got, &other_interactive);   /* 0 + 99 < 100 */
    ck_assert(got->job.swapped);
    finish(&sim, got);
    finish(&sim, admit(&sim, 0, 0));             /* loaded_normal (now another model) */
    ck_assert(loaded_normal.done);

    st_sched_engine_set_model(sim.s, 0, 0);
    put(&sim, &loaded_batch, -100, 0);
    put(&sim, &other_normal, 0, 1);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &other_normal);   /* -100 + 99 < 0 */
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_affinity_breaks_near_ties_and_swaps_when_idle)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job x, y;

    config(&c, true, 60, 10);
    sim_init(&sim, &c, 1, 2, 512);
    put(&sim, &x, 5, 1);                       /* another model, earlier, higher */
    put(&sim, &y, 0, 0);                       /* loaded model: 0 + 10 > 5 */
    ck_assert_ptr_eq(admit(&sim, 0, 0), &y);
    ck_assert(!y.job.swapped);
    ck_assert_double_eq_tol(y.job.dispatch_score, 10, 1e-9);
    ck_assert_ptr_null(admit(&sim, 0, 1));     /* a busy engine never swaps */
    finish(&sim, &y);
    ck_assert_ptr_eq(admit(&sim, 0, 1), &x);   /* all slots free: swap */
    ck_assert(x.job.swapped);

    struct st_sched_stats st;
    st_sched_stats(sim.s, &st);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].reorders_affinity, 1);   /* y's pick only */
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].reorders_aging, 0);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_bonus_zero_is_strict_priority_then_arrival)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j1, j2, j3, j4;

    config(&c, false, 0, 0);
    sim_init(&sim, &c, 1, 1, 512);
    put(&sim, &j1, 0, 1);
    put(&sim, &j2, 0, 0);
    put(&sim, &j3, 5, 1);
    put(&sim, &j4, 5, 0);
    struct sim_job *want[] = { &j3, &j4, &j1, &j2 };
    for (int i = 0; i < 4; i++) {
        struct sim_job *got = admit(&sim, 0, 0);
        ck_assert_ptr_eq(got, want[i]);
        finish(&sim, got);
    }
    struct st_sched_stats st;
    st_sched_stats(sim.s, &st);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].reorders_affinity, 0);
    sim_fini(&sim);
}
END_TEST

/* A known sequence on one slot, agingDivisor 1 s, bonus 10, model 0 loaded:
 *   t=0   a(-100,m0) b(0,m1) c(100,m0) wait      -> c (110)
 *   t=10  c done                                 -> b (10; swap to m1)
 *   t=20  d(0,m0) e(-5,m1) arrive, b done        -> e (5; d without affinity)
 *   t=30  e done                                 -> d (10; swap to m0)
 *   t=200 g(10,m0) arrives, d done               -> a (110; g without aging)
 *   t=210 a done                                 -> g (30: waited 10 s) */
START_TEST(test_sched_band_labels_and_reorder_counters)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job a, b, cc, d, e, g;
    struct st_sched_stats st;

    config(&c, false, 1, 10);
    sim_init(&sim, &c, 1, 1, 512);
    put(&sim, &a, -100, 0);
    put(&sim, &b, 0, 1);
    put(&sim, &cc, 100, 0);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &cc);
    advance_s(&sim, 10);
    finish(&sim, &cc);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &b);
    ck_assert(b.job.swapped);
    advance_s(&sim, 10);
    put(&sim, &d, 0, 0);
    put(&sim, &e, -5, 1);
    finish(&sim, &b);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &e);
    advance_s(&sim, 10);
    finish(&sim, &e);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &d);
    advance_s(&sim, 170);
    put(&sim, &g, 10, 0);
    st_sched_stats(sim.s, &st);
    ck_assert_double_eq_tol(st.band[ST_BAND_BATCH].oldest_wait_s, 200, 1e-9);
    ck_assert_double_eq_tol(st.band[ST_BAND_NORMAL].oldest_wait_s, 0, 1e-9);
    ck_assert_int_eq(st.band[ST_BAND_BATCH].queue_depth, 1);
    ck_assert_int_eq(st.band[ST_BAND_NORMAL].queue_depth, 1);
    finish(&sim, &d);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &a);
    advance_s(&sim, 10);
    finish(&sim, &a);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &g);

    st_sched_stats(sim.s, &st);
    ck_assert_uint_eq(st.band[ST_BAND_INTERACTIVE].dispatched, 1);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].dispatched, 4);
    ck_assert_uint_eq(st.band[ST_BAND_BATCH].dispatched, 1);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].reorders_affinity, 1);
    ck_assert_uint_eq(st.band[ST_BAND_BATCH].reorders_aging, 1);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].reorders_aging, 0);
    ck_assert_uint_eq(st.band[ST_BAND_BATCH].reorders_affinity, 0);
    ck_assert_uint_eq(st.band[ST_BAND_INTERACTIVE].reorders_aging +
                      st.band[ST_BAND_INTERACTIVE].reorders_affinity, 0);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].outcomes[ST_OUTCOME_COMPLETED], 3);
    ck_assert_int_eq(st.band[ST_BAND_NORMAL].running, 1);
    ck_assert_int_eq(st.waiting, 0);
    ck_assert_int_eq(st.running, 1);
    ck_assert_int_eq(st.slots_admitted, 1);
    ck_assert_int_eq(st.slots_idle, 0);

    struct st_activity rec[8];
    ck_assert_uint_eq(st_sched_activity(sim.s, rec, 8), 6);
    static const char *const who[] = { "interactive", "normal", "normal", "normal", "batch", "normal" };
    static const double score[] = { 110, 10, 5, 10, 110, 30 };
    for (int i = 0; i < 6; i++) {
        ck_assert_uint_eq(rec[i].id, (uint64_t)i + 1);      /* newest last */
        ck_assert_str_eq(st_band_name(rec[i].band), who[i]);
        ck_assert_double_eq_tol(rec[i].score, score[i], 1e-6);
    }
    ck_assert_int_eq(rec[4].priority, -100);
    ck_assert_double_eq_tol(rec[4].queue_wait_ms, 200000, 1e-3);
    ck_assert(rec[1].swapped && rec[3].swapped && !rec[2].swapped && !rec[4].swapped);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_queue_limit_rejects_and_sheds_lowest)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job a, b, same, high, higher, busy;
    struct st_sched_job *shed = NULL;
    struct st_sched_stats st;

    config(&c, false, 60, 10);
    c.max_queue = 2;
    sim_init(&sim, &c, 1, 1, 512);
    put(&sim, &busy, 0, 0);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &busy);
    put(&sim, &a, 0, 0);
    advance_s(&sim, 120);                       /* b ages 2 points less than a */
    put(&sim, &b, 1, 0);                        /* b: 1, a: 0 + 2 = 2; lowest is b */
    ck_assert_int_eq(sim_submit(&sim, &same, 1, 0, 100, 1, &shed), ST_ERR_QUEUE_FULL);
    ck_assert_ptr_null(shed);                   /* equal score: the earlier one stays */
    ck_assert_int_eq(same.job.state, ST_JOB_DONE);
    ck_assert_int_eq(sim_submit(&sim, &high, 50, 0, 100, 1, &shed), ST_OK);
    ck_assert_ptr_eq(shed, &b.job);             /* the lowest at now, with aging */
    ck_assert_int_eq(b.job.state, ST_JOB_DONE);
    ck_assert_int_eq(high.job.state, ST_JOB_WAITING);
    ck_assert_int_eq(sim_submit(&sim, &higher, 60, 0, 100, 1, NULL), ST_ERR_QUEUE_FULL);

    st_sched_stats(sim.s, &st);
    ck_assert_uint_eq(st.shed, 3);
    ck_assert_int_eq(st.waiting, 2);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].outcomes[ST_OUTCOME_REJECTED], 2);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].undispatched[ST_OUTCOME_REJECTED], 2);
    ck_assert_uint_eq(st.band[ST_BAND_INTERACTIVE].outcomes[ST_OUTCOME_REJECTED], 1);
    check_ok(&sim);
    finish(&sim, &busy);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &high);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

/* The check before a request is prepared agrees with submit's make_room,
 * and a refusal is counted as submit's would be. */
START_TEST(test_sched_refuse_if_full_agrees_with_submit)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job a, busy;
    struct st_sched_stats st;

    config(&c, false, 60, 10);
    c.max_queue = 1;
    sim_init(&sim, &c, 1, 1, 512);
    ck_assert(!st_sched_refuse_if_full(sim.s, 0));   /* empty queue */
    put(&sim, &busy, 0, 0);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &busy);
    put(&sim, &a, 10, 0);
    ck_assert(st_sched_refuse_if_full(sim.s, 5));    /* outranks nobody */
    ck_assert(st_sched_refuse_if_full(sim.s, 10));   /* equal: the earlier one stays */
    ck_assert(!st_sched_refuse_if_full(sim.s, 50));  /* would shed a: submit decides */
    st_sched_stats(sim.s, &st);
    ck_assert_uint_eq(st.shed, 2);
    ck_assert_int_eq(st.waiting, 1);
    uint64_t rejected = 0;
    for (int b = 0; b < ST_BAND_COUNT; b++)
        rejected += st.band[b].outcomes[ST_OUTCOME_REJECTED];
    ck_assert_uint_eq(rejected, 2);
    check_ok(&sim);                                  /* the counters still add up */
    finish(&sim, &busy);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &a);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_cancel_while_waiting)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[3];
    struct st_sched_stats st;

    config(&c, true, 60, 10);
    sim_init(&sim, &c, 1, 1, 512);
    for (int i = 0; i < 3; i++)
        put(&sim, &j[i], 10 - i, 0);
    ck_assert(st_sched_cancel(sim.s, &j[0].job));         /* the best one leaves */
    ck_assert_int_eq(j[0].job.state, ST_JOB_DONE);
    ck_assert(!st_sched_cancel(sim.s, &j[0].job));        /* twice: nothing */
    ck_assert_ptr_eq(admit(&sim, 0, 0), &j[1]);
    ck_assert(!st_sched_cancel(sim.s, &j[1].job));        /* holds a slot: the engine ends it */
    ck_assert_int_eq(j[1].job.state, ST_JOB_ADMITTED);
    st_sched_finish(sim.s, &j[1].job, ST_OUTCOME_CANCELLED, NULL);
    sim.slot[0][0] = NULL;
    ck_assert(st_sched_cancel(sim.s, &j[2].job));
    ck_assert_ptr_null(admit(&sim, 0, 0));
    st_sched_stats(sim.s, &st);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].outcomes[ST_OUTCOME_CANCELLED], 3);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].undispatched[ST_OUTCOME_CANCELLED], 2);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].dispatched, 1);
    ck_assert_int_eq(st.waiting, 0);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_engines_share_one_queue)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[8];

    config(&c, true, 60, 10);
    sim_init(&sim, &c, 2, 2, 256);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(sim_submit(&sim, &j[i], i, 0, 1000, 20, NULL), ST_OK);
    /* engine 1 asks first: it gets the two best */
    ck_assert_ptr_eq(admit(&sim, 1, 0), &j[7]);
    ck_assert_ptr_eq(admit(&sim, 1, 1), &j[6]);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &j[5]);
    ck_assert(sim_run(&sim, j, 8, 10000));
    ck_assert_int_gt(sim.reads[0], 0);
    ck_assert_int_gt(sim.reads[1], 0);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(j[i].outcome, ST_OUTCOME_COMPLETED);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_without_batch_one_at_a_time_by_score)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job lo, hi;

    config(&c, false, 60, 10);
    sim_init(&sim, &c, 1, 2, 512);           /* even with 2 slots registered */
    put(&sim, &lo, 0, 0);
    put(&sim, &hi, 3, 0);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &hi);
    ck_assert_ptr_null(admit(&sim, 0, 1));   /* one request at a time */
    finish(&sim, &hi);
    ck_assert_ptr_eq(admit(&sim, 0, 1), &lo);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_engine_that_cannot_swap)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job other, mine;

    config(&c, true, 60, 10);
    sim_init(&sim, &c, 1, 1, 512);
    st_sched_engine_set_swap(sim.s, 0, false);
    put(&sim, &other, 100, 1);
    ck_assert_ptr_null(admit(&sim, 0, 0));
    put(&sim, &mine, 0, 0);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &mine);
    ck_assert_int_eq(other.job.state, ST_JOB_WAITING);

    struct sim_job bad;
    memset(&bad, 0, sizeof(bad));
    bad.job.model = ST_SCHED_MAX_MODELS;
    bad.job.prompt_tokens = 1;
    ck_assert_int_eq(st_sched_submit(sim.s, &bad.job, NULL), ST_ERR_INVALID);
    bad.job.model = 0;
    bad.job.prompt_tokens = 0;
    ck_assert_int_eq(st_sched_submit(sim.s, &bad.job, NULL), ST_ERR_INVALID);
    ck_assert_int_eq(st_sched_add_engine(sim.s, 0, 0), -1);
    ck_assert_int_eq(st_sched_add_engine(sim.s, 1, -2), -1);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

struct notify_probe {
    struct st_sched *s;
    int calls;
    int64_t waiting_seen;
};

/* Calls back into the scheduler: would deadlock if notify ran under the mutex. */
static void on_notify(void *ctx)
{
    struct notify_probe *p = ctx;
    struct st_sched_stats st;
    st_sched_stats(p->s, &st);
    p->waiting_seen = st.waiting;
    p->calls++;
}

START_TEST(test_sched_notify_outside_the_mutex)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job a, b, lo, hi;
    struct st_sched_job *shed = NULL;

    config(&c, true, 60, 10);
    c.max_queue = 1;
    sim_init(&sim, &c, 1, 1, 512);
    struct notify_probe p = { sim.s, 0, -1 };
    st_sched_set_notify(sim.s, on_notify, &p);
    put(&sim, &a, 0, 0);
    ck_assert_int_eq(p.calls, 1);
    ck_assert_int_eq(p.waiting_seen, 1);
    ck_assert_int_eq(sim_submit(&sim, &b, 0, 0, 10, 1, NULL), ST_ERR_QUEUE_FULL);
    ck_assert_int_eq(p.calls, 1);                      /* nothing changed */
    ck_assert(st_sched_cancel(sim.s, &a.job));
    ck_assert_int_eq(p.calls, 2);
    put(&sim, &lo, 0, 0);
    ck_assert_int_eq(sim_submit(&sim, &hi, 9, 0, 10, 1, &shed), ST_OK);   /* sheds lo */
    ck_assert_ptr_eq(shed, &lo.job);
    ck_assert_int_eq(p.calls, 4);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &hi);
    finish(&sim, &hi);
    ck_assert_int_eq(p.calls, 5);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_activity_ring_and_finish_fields)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[5];
    struct st_activity rec[8];

    config(&c, false, 60, 10);
    c.activity_capacity = 3;
    sim_init(&sim, &c, 1, 1, 512);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(sim_submit(&sim, &j[i], 0, 0, 100 + i, 1, NULL), ST_OK);
        advance_s(&sim, 1);
        ck_assert_ptr_eq(admit(&sim, 0, 0), &j[i]);
        if (i < 4)
            finish(&sim, &j[i]);
    }
    ck_assert_uint_eq(st_sched_activity(sim.s, rec, 8), 3);
    ck_assert_uint_eq(rec[0].id, 3);
    ck_assert_uint_eq(rec[2].id, 5);
    ck_assert_str_eq(rec[2].request_id, j[4].job.request_id);
    ck_assert_int_eq(rec[2].prompt_tokens, 104);
    ck_assert(!rec[2].finished);
    ck_assert_double_eq(rec[2].ttft_ms, -1);
    ck_assert(rec[1].finished);
    ck_assert_int_eq(rec[1].outcome, ST_OUTCOME_COMPLETED);
    ck_assert_double_eq_tol(rec[1].queue_wait_ms, 1000, 1e-6);

    int64_t submit_ns = j[4].job.arrival_ns;
    advance_s(&sim, 2);
    struct st_job_report rep = { .first_token_ns = submit_ns + 1500 * ST_NS_PER_MS,
                                 .n_generated = 42, .mtp_drafted = 10, .mtp_accepted = 7 };
    st_sched_finish(sim.s, &j[4].job, ST_OUTCOME_FAILED, &rep);
    ck_assert_uint_eq(st_sched_activity(sim.s, rec, 2), 2);   /* the newest two */
    ck_assert_uint_eq(rec[0].id, 4);
    ck_assert_uint_eq(rec[1].id, 5);
    ck_assert(rec[1].finished);
    ck_assert_int_eq(rec[1].outcome, ST_OUTCOME_FAILED);
    ck_assert_double_eq_tol(rec[1].ttft_ms, 1500, 1e-6);
    ck_assert_double_eq_tol(rec[1].total_ms, 3000, 1e-6);
    ck_assert_int_eq(rec[1].n_generated, 42);
    ck_assert_int_eq(rec[1].mtp_accepted, 7);
    ck_assert_int_gt(rec[1].dispatched_unix_ms, 1600000000000);
    sim_fini(&sim);
}
END_TEST

/* The finished-record hook (--state-dir keeps what it is told) and the
 * numbering continued after a kept history. */
struct hooked {
    int calls;
    struct st_activity last;
};

static void on_finished(void *ctx, const struct st_activity *a)
{
    struct hooked *h = ctx;
    h->calls++;
    h->last = *a;
}

START_TEST(test_sched_activity_hook_and_continue)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[3];
    struct st_activity rec[8];
    struct hooked h = { 0 };

    config(&c, false, 60, 10);
    c.activity_capacity = 4;
    sim_init(&sim, &c, 1, 1, 512);
    ck_assert(st_sched_activity_continue(sim.s, 41));
    ck_assert_uint_eq(st_sched_activity(sim.s, rec, 8), 0);   /* the kept ones are not here */
    st_sched_set_activity_hook(sim.s, on_finished, &h);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sim_submit(&sim, &j[i], 0, 0, 10, 1, NULL), ST_OK);
        ck_assert_ptr_eq(admit(&sim, 0, 0), &j[i]);
        ck_assert_int_eq(h.calls, i);   /* told once finished, not at dispatch */
        finish(&sim, &j[i]);
    }
    ck_assert_int_eq(h.calls, 2);
    ck_assert_uint_eq(h.last.id, 43);
    ck_assert(h.last.finished);
    ck_assert_str_eq(h.last.request_id, j[1].job.request_id);
    ck_assert_uint_eq(st_sched_activity(sim.s, rec, 8), 2);
    ck_assert_uint_eq(rec[0].id, 42);
    ck_assert(!st_sched_activity_continue(sim.s, 100));   /* too late: ignored */
    st_sched_set_activity_hook(sim.s, NULL, NULL);
    ck_assert_int_eq(sim_submit(&sim, &j[2], 0, 0, 10, 1, NULL), ST_OK);
    ck_assert_ptr_eq(admit(&sim, 0, 0), &j[2]);
    finish(&sim, &j[2]);
    ck_assert_int_eq(h.calls, 2);
    ck_assert_uint_eq(st_sched_activity(sim.s, rec, 8), 3);
    ck_assert_uint_eq(rec[2].id, 44);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_dispatch_log_line)
{
    char path[256], dir[200], text[4096];
    struct st_sched_config c;
    struct st_clock_manual clk;
    struct st_sched *s = NULL;
    struct st_sched_job j;

    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/log", dir);
    FILE *f = fopen(path, "w+");
    ck_assert_ptr_nonnull(f);
    int saved = dup(2);
    dup2(fileno(f), 2);
    st_log_set_level(ST_LOG_INFO);

    config(&c, false, 60, 10);
    st_clock_manual_init(&clk, 0);
    ck_assert_int_eq(st_sched_new(&c, &clk.clock, &s, NULL), ST_OK);
    ck_assert_int_eq(st_sched_add_engine(s, 1, 0), 0);
    memset(&j, 0, sizeof(j));
    j.priority = -100;
    j.prompt_tokens = 77;
    strcpy(j.request_id, "chatcmpl-xyz");
    ck_assert_int_eq(st_sched_submit(s, &j, NULL), ST_OK);
    st_clock_manual_advance(&clk, 250 * ST_NS_PER_MS);
    ck_assert_ptr_eq(st_sched_admit(s, 0, 0), &j);
    st_sched_free(s);

    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    support_rmtree(dir);
    static const char *const want[] = {
        "dispatch", "serial_priority=-100", "serial_band=batch", "serial_score=",
        "serial_queue_wait_ms=250.000", "request_id=chatcmpl-xyz", "model=0", "engine=0",
        "slot=0", "prompt_tokens=77",
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(want); i++)
        ck_assert_msg(strstr(text, want[i]), "'%s' missing from: %s", want[i], text);
}
END_TEST

static Suite *queue_suite(void)
{
    Suite *s = suite_create("sched_queue");
    TCase *order = tcase_create("order");
    TCase *limits = tcase_create("limits");
    TCase *observe = tcase_create("observe");

    tcase_add_test(order, test_sched_free_slot_goes_to_highest_priority);
    tcase_add_test(order, test_sched_equal_priority_keeps_arrival_order);
    tcase_add_test(order, test_sched_aging_batch_overtakes_normal_traffic);
    tcase_add_test(order, test_sched_fifo_policy_is_priority_then_arrival);
    tcase_add_test(order, test_sched_affinity_never_promotes_across_a_band);
    tcase_add_test(order, test_sched_affinity_breaks_near_ties_and_swaps_when_idle);
    tcase_add_test(order, test_sched_bonus_zero_is_strict_priority_then_arrival);
    tcase_add_test(order, test_sched_engines_share_one_queue);
    tcase_add_test(order, test_sched_without_batch_one_at_a_time_by_score);
    tcase_add_test(order, test_sched_engine_that_cannot_swap);
    tcase_add_test(limits, test_sched_queue_limit_rejects_and_sheds_lowest);
    tcase_add_test(limits, test_sched_refuse_if_full_agrees_with_submit);
    tcase_add_test(limits, test_sched_cancel_while_waiting);
    tcase_add_test(observe, test_sched_band_labels_and_reorder_counters);
    tcase_add_test(observe, test_sched_notify_outside_the_mutex);
    tcase_add_test(observe, test_sched_activity_ring_and_finish_fields);
    tcase_add_test(observe, test_sched_activity_hook_and_continue);
    tcase_add_test(observe, test_sched_dispatch_log_line);
    suite_add_tcase(s, order);
    suite_add_tcase(s, limits);
    suite_add_tcase(s, observe);
    return s;
}

int main(void)
{
    return support_run_suite(queue_suite(), CK_FORK);
}
