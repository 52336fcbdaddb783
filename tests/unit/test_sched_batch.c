/* test_sched_batch.c -- the control lines and give-way with --batch
 * (docs/design/SCHEDULER.md section 4): the lines by score among slot-holders only,
 * give-way to a higher priority, never to a lower one, the half-length rule
 * within one level, YIELDS_MAX, after_epoch, no preemption, no deadlock,
 * and the all-zero case reducing to FIFO. Driven step by step through the
 * tiny simulated engine (sched_sim.c) on a manual clock. */
#include <check.h>
#include <string.h>

#include "internal.h"
#include "sched_sim.h"
#include "support.h"

static void config(struct st_sched_config *c, int64_t give_way, int32_t yields_max)
{
    st_sched_config_defaults(c);
    c->batch = true;
    c->give_way_tokens = give_way;
    c->yields_max = yields_max;
}

static void check_ok(struct sim *sim)
{
    char why[160];
    ck_assert_msg(st_sched_check_invariants(sim->s, why, sizeof(why)), "%s", why);
}

static void submit(struct sim *sim, struct sim_job *j, int32_t prio, int64_t prompt,
                   int64_t n_decode)
{
    ck_assert_int_eq(sim_submit(sim, j, prio, 0, prompt, n_decode, NULL), ST_OK);
}

START_TEST(test_sched_lines_go_to_slot_holders_by_score)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job a, b, w;

    config(&c, 1000, 4);
    sim_init(&sim, &c, 1, 2, 500);
    submit(&sim, &a, 0, 4000, 5);
    submit(&sim, &b, 5, 4000, 5);
    ck_assert_int_eq(sim_admit_all(&sim), 2);
    submit(&sim, &w, 100, 10, 5);                      /* waits for a slot */
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &b.job);   /* highest among slot-holders */
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &b.job);   /* the holder keeps them */
    ck_assert_int_eq(b.job.state, ST_JOB_READING);
    ck_assert_int_eq(a.job.state, ST_JOB_ADMITTED);
    ck_assert_int_eq(w.job.state, ST_JOB_WAITING);
    /* at b's boundary the interactive waiter has no slot: it cannot take the lines */
    st_sched_read_progress(sim.s, &b.job, 1000);
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &b.job);
    ck_assert_int_eq(b.job.next_boundary, 2000);
    st_sched_read_progress(sim.s, &b.job, 3000);
    ck_assert_int_eq(b.job.state, ST_JOB_DECODING);
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &a.job);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

/* The seed's second scenario: an 84K-token read under way (priority 10),
 * an equally long request of a higher priority arrives 3 s in; the first
 * read gives way at 16,384 tokens and parks. */
START_TEST(test_sched_long_read_gives_way_to_higher_priority)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[2];
    struct sim_job *r = &j[0], *w = &j[1];

    config(&c, 16384, 4);
    sim_init(&sim, &c, 1, 4, 2048);
    sim.step_ns = 500 * ST_NS_PER_MS;
    submit(&sim, r, 10, 84000, 20);
    for (int i = 0; i < 6; i++)
        sim_step(&sim);                              /* 3 s in */
    submit(&sim, w, 20, 84000, 20);
    while (r->job.state == ST_JOB_READING)
        sim_step(&sim);
    ck_assert_int_eq(r->job.state, ST_JOB_PARKED);
    ck_assert_int_eq(r->job.tokens_read, 16384);      /* at the boundary */
    ck_assert_int_eq(r->job.yields, 1);
    ck_assert_ptr_eq(sim.last_reader[0], w);          /* w read in that same step */
    ck_assert(sim_run(&sim, j, 2, 10000));
    ck_assert_int_lt(w->first_token_ns, r->first_token_ns);
    ck_assert_int_eq(r->outcome, ST_OUTCOME_COMPLETED);

    struct st_sched_stats st;
    st_sched_stats(sim.s, &st);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].give_ways, 1);
    struct st_activity rec[2];
    ck_assert_uint_eq(st_sched_activity(sim.s, rec, 2), 2);
    ck_assert_int_eq(rec[0].give_ways, 1);            /* r's record */
    ck_assert_int_eq(rec[1].give_ways, 0);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

/* Runs R (reading first) against W (arriving once R reads) and tells
 * whether R gave way. */
static bool gives_way(int32_t r_prio, int64_t r_prompt, int32_t w_prio, int64_t w_prompt)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[2];

    config(&c, 1000, 4);
    sim_init(&sim, &c, 1, 2, 500);
    submit(&sim, &j[0], r_prio, r_prompt, 3);
    sim_step(&sim);
    submit(&sim, &j[1], w_prio, w_prompt, 3);
    bool w_read_first = false;
    for (int i = 0; i < 100000 && !(j[0].done && j[1].done); i++) {
        sim_step(&sim);
        if (j[1].job.tokens_read > 0 && j[0].job.tokens_read < r_prompt)
            w_read_first = true;
    }
    ck_assert(j[0].done && j[1].done);
    ck_assert_int_eq(w_read_first, j[0].job.yields > 0);
    bool gave = j[0].job.yields > 0;
    sim_fini(&sim);
    return gave;
}

START_TEST(test_sched_no_way_given_to_a_lower_priority)
{
    ck_assert(!gives_way(5, 40000, 0, 100));    /* a short 0 does not move a 5 */
    ck_assert(!gives_way(5, 40000, 4, 1));
    ck_assert(!gives_way(-100, 40000, -101, 1));
}
END_TEST

START_TEST(test_sched_higher_priority_whatever_its_length)
{
    ck_assert(gives_way(0, 40000, 5, 40000));
    ck_assert(gives_way(0, 4000, 1, 400000));   /* even a much longer prompt */
    ck_assert(gives_way(-100, 4000, 100, 4000));
}
END_TEST

START_TEST(test_sched_half_length_rule_within_one_level)
{
    ck_assert(gives_way(0, 40000, 0, 19999));   /* under half */
    ck_assert(!gives_way(0, 40000, 0, 20000));  /* exactly half: no */
    ck_assert(!gives_way(0, 40000, 0, 30000));  /* over half: no */
    ck_assert(gives_way(0, 40001, 0, 20000));   /* 2 * 20000 < 40001 */
    ck_assert(gives_way(7, 5000, 7, 10));
}
END_TEST

/* R reads a long prompt while higher-priority short jobs keep arriving:
 * it gives way at most yields_max times. Returns R's give-ways. */
static int32_t yields_under_pressure(int32_t yields_max)
{
    static struct sim_job w[400];
    struct sim sim;
    struct st_sched_config c;
    struct sim_job r;
    int n_w = 0;

    config(&c, 1000, yields_max);
    sim_init(&sim, &c, 1, 3, 500);
    submit(&sim, &r, 0, 30000, 1);
    /* A new higher-priority job whenever r holds the lines and the last one
     * is gone: it reaches a slot before r's next boundary. */
    for (int step = 0; step < 5000 && !r.done; step++) {
        struct sim_job *last = n_w ? &w[n_w - 1] : NULL;
        if (r.job.state == ST_JOB_READING && (!last || last->done) && n_w < 400)
            submit(&sim, &w[n_w++], 5, 600, 1);
        sim_step(&sim);
    }
    ck_assert(r.done);
    ck_assert(sim_run(&sim, w, n_w, 10000));
    struct st_sched_stats st;
    st_sched_stats(sim.s, &st);
    ck_assert_uint_eq(st.band[ST_BAND_NORMAL].give_ways, (uint64_t)r.job.yields);
    int32_t y = r.job.yields;
    sim_fini(&sim);
    return y;
}

START_TEST(test_sched_yields_max_caps_give_ways)
{
    ck_assert_int_eq(yields_under_pressure(2), 2);
    ck_assert_int_eq(yields_under_pressure(4), 4);
    ck_assert_int_eq(yields_under_pressure(0), 0);
}
END_TEST

START_TEST(test_sched_after_epoch_keeps_a_parked_read_back)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[3];
    struct sim_job *r = &j[0], *w = &j[1], *x = &j[2];

    config(&c, 1000, 4);
    sim_init(&sim, &c, 1, 3, 500);
    submit(&sim, r, 0, 10000, 2);
    sim_step(&sim);                                   /* r reads 500 */
    submit(&sim, w, 5, 2000, 50);
    submit(&sim, x, 0, 2000, 50);                     /* same level as r, later: ranks below r */
    sim_step(&sim);                                   /* r reaches its 1000 boundary */
    ck_assert_int_eq(r->job.state, ST_JOB_READING);
    sim_step(&sim);                                   /* ... and gives way to w */
    ck_assert_int_eq(r->job.state, ST_JOB_PARKED);
    ck_assert_ptr_eq(sim.last_reader[0], w);
    uint64_t epoch_w = r->job.after_epoch - 1;        /* the epoch w took the lines in */
    ck_assert_uint_gt(epoch_w, 0);
    while (w->job.state == ST_JOB_READING)
        sim_step(&sim);
    ck_assert_int_eq(w->job.state, ST_JOB_DECODING);
    /* w's epoch ended: r still lets others go first, so x takes the lines */
    sim_step(&sim);
    ck_assert_ptr_eq(sim.last_reader[0], x);
    ck_assert_int_eq(r->job.state, ST_JOB_PARKED);
    /* x's epoch has passed once x is done; then r reads again */
    while (x->job.state == ST_JOB_READING)
        sim_step(&sim);
    sim_step(&sim);
    ck_assert_ptr_eq(sim.last_reader[0], r);
    ck_assert(sim_run(&sim, j, 3, 10000));
    check_ok(&sim);
    sim_fini(&sim);

    /* Nobody else waits for the lines: the parked read takes them back at once. */
    config(&c, 1000, 4);
    sim_init(&sim, &c, 1, 2, 500);
    submit(&sim, r, 0, 10000, 2);
    sim_step(&sim);
    submit(&sim, w, 5, 1500, 50);
    while (r->job.state == ST_JOB_READING)
        sim_step(&sim);
    ck_assert_int_eq(r->job.state, ST_JOB_PARKED);
    while (w->job.state == ST_JOB_READING)
        sim_step(&sim);
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &r->job);
    ck_assert_int_eq(r->job.state, ST_JOB_READING);
    ck_assert(sim_run(&sim, j, 2, 10000));
    sim_fini(&sim);
}
END_TEST

/* Every slot taken by long reads and waiters of mixed priority behind them:
 * parked reads hold slots and need the lines; everything must finish. */
START_TEST(test_sched_long_long_short_mixed_priorities_do_not_deadlock)
{
    static const struct { int32_t prio; int64_t prompt; } mix[] = {
        { 0, 60000 }, { 5, 60000 }, { 10, 300 }, { -100, 90000 }, { 100, 50000 },
        { 5, 200 }, { 0, 45000 }, { 100, 100 }, { -5, 30000 }, { 10, 70000 },
    };
    struct sim_job j[ST_ARRAY_LEN(mix)];
    struct sim sim;
    struct st_sched_config c;

    config(&c, 1024, 4);
    sim_init(&sim, &c, 1, 3, 512);
    for (size_t i = 0; i < ST_ARRAY_LEN(mix); i++) {
        submit(&sim, &j[i], mix[i].prio, mix[i].prompt, 30);
        if (i % 3 == 2)
            sim_step(&sim);
    }
    ck_assert(sim_run(&sim, j, (int)ST_ARRAY_LEN(mix), 100000));
    for (size_t i = 0; i < ST_ARRAY_LEN(mix); i++)
        ck_assert_int_eq(j[i].outcome, ST_OUTCOME_COMPLETED);
    struct st_sched_stats st;
    st_sched_stats(sim.s, &st);
    uint64_t gw = 0;
    for (int b = 0; b < ST_BAND_COUNT; b++)
        gw += st.band[b].give_ways;
    ck_assert_uint_gt(gw, 0);                         /* the scenario did exercise give-way */
    ck_assert_int_eq(st.slots_idle, st.slots_total);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

/* A waiter for a free slot that would make R give way: the decision waits
 * until the engine's next admit puts it in a slot. */
START_TEST(test_sched_give_way_to_a_slot_waiter_waits_for_admit)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job r, w;

    config(&c, 1000, 4);
    sim_init(&sim, &c, 1, 2, 500);
    submit(&sim, &r, 0, 5000, 1);
    ck_assert_int_eq(sim_admit_all(&sim), 1);
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &r.job);
    st_sched_read_progress(sim.s, &r.job, 1000);
    submit(&sim, &w, 9, 5000, 1);                     /* after this step's admit */
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &r.job);   /* cannot hand w the lines yet */
    ck_assert_int_eq(r.job.next_boundary, 1000);      /* the check stays due */
    ck_assert_int_eq(sim_admit_all(&sim), 1);
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &w.job);
    ck_assert_int_eq(r.job.state, ST_JOB_PARKED);
    ck_assert_int_eq(r.job.next_boundary, 2000);
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_decoding_is_never_preempted)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job j[2];
    struct sim_job *d = &j[0], *h = &j[1];

    config(&c, 1000, 4);
    sim_init(&sim, &c, 1, 1, 500);
    submit(&sim, d, -100, 100, 200);
    sim_step(&sim);
    ck_assert_int_eq(d->job.state, ST_JOB_DECODING);
    submit(&sim, h, 100, 100, 1);
    while (!d->done) {
        ck_assert_int_eq(d->job.state, ST_JOB_DECODING);
        ck_assert_int_eq(h->job.state, ST_JOB_WAITING);
        ck_assert_ptr_null(st_sched_lines(sim.s, 0));
        sim_step(&sim);
    }
    ck_assert_int_eq(d->generated, 200);
    ck_assert(sim_run(&sim, j, 2, 100));
    sim_fini(&sim);
}
END_TEST

static struct sim_job *reading_now(const struct sim *sim)
{
    for (int32_t k = 0; k < sim->n_slots; k++)
        if (sim->slot[0][k] && sim->slot[0][k]->job.state == ST_JOB_READING)
            return sim->slot[0][k];
    return NULL;
}

/* All priorities 0, aging off, one model: FIFO slots plus the old
 * half-length rule (every give-way is to a prompt under half as long). */
START_TEST(test_sched_all_zero_reduces_to_fifo_and_half_length)
{
    static const int64_t prompt[] = { 8000, 3000, 9000, 500, 4000, 7000, 100, 6000, 2500 };
    struct sim_job j[ST_ARRAY_LEN(prompt)];
    const int n = (int)ST_ARRAY_LEN(prompt);
    struct sim sim;
    struct st_sched_config c;
    int gave = 0;

    config(&c, 1000, 4);
    c.aging_divisor_s = 0;
    sim_init(&sim, &c, 1, 2, 500);
    for (int i = 0; i < n; i++)
        submit(&sim, &j[i], 0, prompt[i], 5);
    struct sim_job *prev = NULL;
    for (int step = 0; step < 100000 && sim.n_done < n; step++) {
        sim_step(&sim);
        if (prev && prev->job.state == ST_JOB_PARKED) {   /* it gave way this step */
            struct sim_job *w = sim.last_reader[0];
            ck_assert_int_lt(2 * w->job.prompt_tokens, prev->job.prompt_tokens);
            gave++;
        }
        prev = reading_now(&sim);
    }
    ck_assert_int_eq(sim.n_done, n);
    for (int i = 1; i < n; i++)   /* slots in arrival order */
        ck_assert_int_le(j[i - 1].job.dispatch_ns, j[i].job.dispatch_ns);
    ck_assert_int_gt(j[0].job.yields, 0);             /* 8000 gave way to 3000 */
    ck_assert_int_gt(gave, 0);
    sim_fini(&sim);
}
END_TEST

START_TEST(test_sched_each_engine_has_its_own_lines)
{
    struct sim sim;
    struct st_sched_config c;
    struct sim_job a, b;

    config(&c, 1000, 4);
    sim_init(&sim, &c, 2, 1, 500);
    submit(&sim, &a, 0, 3000, 1);
    submit(&sim, &b, 0, 3000, 1);
    ck_assert_int_eq(sim_admit_all(&sim), 2);
    ck_assert_ptr_eq(st_sched_lines(sim.s, 0), &a.job);
    ck_assert_ptr_eq(st_sched_lines(sim.s, 1), &b.job);
    ck_assert_int_eq(a.job.state, ST_JOB_READING);
    ck_assert_int_eq(b.job.state, ST_JOB_READING);
    ck_assert_ptr_null(st_sched_lines(sim.s, 7));     /* no such engine */
    check_ok(&sim);
    sim_fini(&sim);
}
END_TEST

static Suite *batch_suite(void)
{
    Suite *s = suite_create("sched_batch");
    TCase *lines = tcase_create("lines");
    TCase *gw = tcase_create("give_way");
    TCase *live = tcase_create("liveness");

    tcase_add_test(lines, test_sched_lines_go_to_slot_holders_by_score);
    tcase_add_test(lines, test_sched_each_engine_has_its_own_lines);
    tcase_add_test(gw, test_sched_long_read_gives_way_to_higher_priority);
    tcase_add_test(gw, test_sched_no_way_given_to_a_lower_priority);
    tcase_add_test(gw, test_sched_higher_priority_whatever_its_length);
    tcase_add_test(gw, test_sched_half_length_rule_within_one_level);
    tcase_add_test(gw, test_sched_yields_max_caps_give_ways);
    tcase_add_test(gw, test_sched_after_epoch_keeps_a_parked_read_back);
    tcase_add_test(gw, test_sched_give_way_to_a_slot_waiter_waits_for_admit);
    tcase_add_test(live, test_sched_long_long_short_mixed_priorities_do_not_deadlock);
    tcase_add_test(live, test_sched_decoding_is_never_preempted);
    tcase_add_test(live, test_sched_all_zero_reduces_to_fifo_and_half_length);
    suite_add_tcase(s, lines);
    suite_add_tcase(s, gw);
    suite_add_tcase(s, live);
    return s;
}

int main(void)
{
    return support_run_suite(batch_suite(), CK_FORK);
}
