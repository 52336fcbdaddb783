/* test_engine_sched.c -- docs/design/SCHEDULER.md section 9 end to end: the scheduler
 * driving the sim engine on a manual clock (st_engine_pool_step, no
 * threads, exact times). Time model in every test: prompt 1000 tok/s,
 * decode 10 tok/s per slot, 512-token chunks; give-way every 1024 tokens
 * where a test needs give-way. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "strata/log.h"
#include "support.h"

#define SEC(x) ((int64_t)((x) * (double)ST_NS_PER_SEC + 0.5))

static void fx_give_way(struct fixture *f, int32_t parallel)
{
    fx_defaults(f);
    f->pcfg.model.parallel = parallel;
    f->scfg.give_way_tokens = 1024;
}

/* Both of two slots busy (a: 20 tokens, b: 30); at 0.5 s c (priority 0,
 * 5 tokens) and then d (priority prio_d, 100 tokens) wait for them.
 * r[0..3] = a, b, c, d, filled by the run to idle. */
static void two_wait_for_two_slots(int32_t prio_d, struct rec r[4])
{
    struct fixture f;
    struct st_request *q[4];
    fx_defaults(&f);
    f.pcfg.model.parallel = 2;
    ck_assert(fx_start(&f));
    q[0] = fx_submit(&f, "a", 0, 10, 20, &r[0]);
    q[1] = fx_submit(&f, "b", 0, 10, 30, &r[1]);
    fx_run_until(&f, SEC(0.5));
    q[2] = fx_submit(&f, "c", 0, 10, 5, &r[2]);
    q[3] = fx_submit(&f, "d", prio_d, 10, 100, &r[3]);
    fx_run_idle(&f);
    for (int i = 0; i < 4; i++)
        st_request_unref(q[i]);
    fx_stop(&f);
}

START_TEST(test_engine_free_slot_goes_to_highest_priority)
{
    /* A 0 waits, then a 5 arrives: the first free slot goes to the 5, one
     * step after it frees (the minimum). */
    struct rec r[4];
    two_wait_for_two_slots(5, r);
    const struct rec *a = &r[0], *b = &r[1], *c = &r[2], *d = &r[3];
    ck_assert_int_eq(a->end_ns, SEC(1.92));
    /* d reads 10 tokens (0.01 s) while b decodes (0.1 s) */
    ck_assert_int_eq(d->first_ns, a->end_ns + SEC(0.11));
    ck_assert_int_eq(c->first_ns, b->end_ns + SEC(0.11));
    ck_assert(d->first_ns < c->first_ns);
}
END_TEST

START_TEST(test_engine_fifo_without_priority)
{
    /* The same with equal priorities: arrival order. */
    struct rec r[4];
    two_wait_for_two_slots(0, r);
    ck_assert_int_eq(r[2].first_ns, r[0].end_ns + SEC(0.11));
    ck_assert(r[2].first_ns < r[3].first_ns);
}
END_TEST

START_TEST(test_engine_long_read_gives_way_to_higher_priority)
{
    /* Two 4096-token prompts; the later one has priority 5. The first read
     * parks at its 1024-token boundary; the later one's first token comes
     * after its own read: 1.024 + 4.096 s (the minimum the rules allow). */
    struct fixture f;
    struct rec a, b;
    fx_give_way(&f, 2);
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 4096, 3, &a);
    fx_run_until(&f, SEC(0.6));
    ck_assert_int_eq(st_clock_now(&f.clk.clock), SEC(1.024));
    struct st_request *rb = fx_submit(&f, "b", 5, 4096, 3, &b);
    ck_assert(st_engine_pool_step(f.pool, 0));
    struct st_slot_view v[2];
    st_engine_pool_slots(f.pool, v, 2);
    ck_assert_int_eq(v[0].state, ST_SLOT_PARKED);
    ck_assert_int_eq(v[0].give_ways, 1);
    ck_assert_int_eq(v[0].n_read, 1024);
    ck_assert_int_eq(v[1].state, ST_SLOT_READING);
    fx_run_idle(&f);
    ck_assert_int_eq(b.first_ns, SEC(1.024 + 4.096));
    ck_assert(a.first_ns > b.first_ns);
    ck_assert_int_eq(a.yields, 1);
    ck_assert_int_eq(b.yields, 0);
    ck_assert_int_eq(a.finish, ST_FINISH_LENGTH);
    struct st_sched_stats ss;
    st_sched_stats(f.sched, &ss);
    ck_assert_int_eq(ss.band[ST_BAND_NORMAL].give_ways, 1);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_no_give_way_to_lower_priority)
{
    /* A short 0 does not make a 5 give way. */
    struct fixture f;
    struct rec a, b;
    fx_give_way(&f, 2);
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 5, 4096, 3, &a);
    fx_run_until(&f, SEC(0.6));
    struct st_request *rb = fx_submit(&f, "b", 0, 100, 3, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(a.first_ns, SEC(4.096));
    ck_assert_int_eq(a.yields, 0);
    /* b reads right after, alongside a's first decode */
    ck_assert_int_eq(b.first_ns, SEC(4.096 + 0.1 + 0.1));
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

static void half_rule(int64_t later_words, bool expect_give_way)
{
    struct fixture f;
    struct rec a, b;
    fx_give_way(&f, 2);
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 4096, 3, &a);
    fx_run_until(&f, SEC(0.6));
    struct st_request *rb = fx_submit(&f, "b", 0, later_words, 3, &b);
    fx_run_idle(&f);
    if (expect_give_way) {
        ck_assert_int_eq(a.yields, 1);
        ck_assert_int_eq(b.first_ns, SEC(1.024) + later_words * ST_NS_PER_MS);
        ck_assert(b.first_ns < a.first_ns);
    } else {
        ck_assert_int_eq(a.yields, 0);
        ck_assert_int_eq(a.first_ns, SEC(4.096));
        ck_assert(b.first_ns > a.first_ns);
    }
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}

START_TEST(test_engine_half_length_rule_within_a_level)
{
    half_rule(1000, true);    /* under half of 4096 */
    half_rule(3000, false);   /* over half */
}
END_TEST

START_TEST(test_engine_yields_max_caps_give_ways)
{
    struct fixture f;
    struct rec a, b, c;
    fx_give_way(&f, 3);
    f.scfg.yields_max = 1;
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 4096, 3, &a);
    fx_run_until(&f, SEC(0.6));
    struct st_request *rb = fx_submit(&f, "b", 5, 2048, 100, &b);
    fx_run_until(&f, SEC(3.5));   /* b's read is done, a reads again */
    struct st_request *rc = fx_submit(&f, "c", 10, 1000, 3, &c);
    fx_run_idle(&f);
    ck_assert_int_eq(a.yields, 1);   /* gave way to b, not again to c */
    ck_assert(c.first_ns > a.first_ns);
    ck_assert(b.first_ns < a.first_ns);
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rc);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_after_epoch_keeps_parked_read_back)
{
    /* a (0) parks for b (5). When b's read ends, c (0, later than a, longer
     * than half of a) gets the lines before a takes them back. */
    struct fixture f;
    struct rec a, b, c;
    fx_give_way(&f, 3);
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 4096, 3, &a);
    fx_run_until(&f, SEC(0.6));
    struct st_request *rb = fx_submit(&f, "b", 5, 600, 3, &b);
    struct st_request *rc = fx_submit(&f, "c", 0, 3000, 3, &c);
    fx_run_idle(&f);
    ck_assert_int_eq(a.yields, 1);
    ck_assert(b.first_ns < c.first_ns);
    ck_assert(c.first_ns < a.first_ns);
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rc);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_parked_read_takes_lines_back_when_alone)
{
    /* Nobody else waits for the lines: the parked read resumes at once. */
    struct fixture f;
    struct rec a, b;
    fx_give_way(&f, 2);
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 4096, 1, &a);
    fx_run_until(&f, SEC(0.6));
    struct st_request *rb = fx_submit(&f, "b", 5, 512, 1, &b);
    fx_run_idle(&f);
    /* b: one chunk (0.512 s); a: the rest of its read (3.072 s), no decodes
     * in between since b ends with its first token (max_tokens 1). */
    ck_assert_int_eq(b.first_ns, SEC(1.024 + 0.512));
    ck_assert_int_eq(a.first_ns, SEC(1.024 + 0.512 + 3.072));
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_long_long_short_mixed_no_deadlock)
{
    /* Every slot taken by long reads of mixed priorities, short and long
     * requests of all levels waiting: everything finishes. */
    struct fixture f;
    struct rec r[8];
    struct st_request *req[8];
    const int32_t prio[8] = { 0, 5, 10, -5, 10, 0, 100, -100 };
    const int64_t words[8] = { 5000, 5000, 50, 4000, 5000, 30, 3000, 20 };
    fx_give_way(&f, 2);
    ck_assert(fx_start(&f));
    for (int i = 0; i < 8; i++) {
        char id[16];
        snprintf(id, sizeof(id), "r%d", i);
        req[i] = fx_submit(&f, id, prio[i], words[i], 5, &r[i]);
        fx_run_until(&f, st_clock_now(&f.clk.clock) + SEC(0.7));
    }
    fx_run_idle(&f);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(r[i].n_end, 1);
        ck_assert_int_eq(r[i].finish, ST_FINISH_LENGTH);
        ck_assert_int_eq(r[i].n_generated, 5);
        st_request_unref(req[i]);
    }
    struct st_sched_stats ss;
    st_sched_stats(f.sched, &ss);
    ck_assert_int_eq(ss.running, 0);
    ck_assert_int_eq(ss.waiting, 0);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_random_mix_counters_add_up)
{
    /* 60 requests of random priority and length at random times, some
     * cancelled: each ends exactly once and the scheduler's counters add up. */
    struct fixture f;
    enum { N = 60 };
    struct rec *r = calloc(N, sizeof(*r));
    struct st_request *req[N];
    fx_give_way(&f, 3);
    ck_assert(fx_start(&f));
    srand(7);
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof(id), "r%d", i);
        int32_t p = (rand() % 3 - 1) * 60;
        req[i] = fx_submit(&f, id, p, 1 + rand() % 3000, 1 + rand() % 20, &r[i]);
        fx_run_until(&f, st_clock_now(&f.clk.clock) + rand() % 500 * ST_NS_PER_MS);
        if (i % 7 == 3)
            st_engine_pool_cancel(f.pool, req[i - 2]);
    }
    fx_run_idle(&f);
    int cancelled = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(r[i].n_end, 1);
        cancelled += r[i].finish == ST_FINISH_CANCELLED;
        st_request_unref(req[i]);
    }
    struct st_sched_stats ss;
    st_sched_stats(f.sched, &ss);
    uint64_t dispatched = 0, done = 0, cancels = 0;
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        dispatched += ss.band[b].dispatched;
        done += ss.band[b].outcomes[ST_OUTCOME_COMPLETED];
        cancels += ss.band[b].outcomes[ST_OUTCOME_CANCELLED];
    }
    ck_assert_int_eq(cancels, (uint64_t)cancelled);
    ck_assert_int_eq(done + cancels, N);
    ck_assert(dispatched <= N && dispatched >= done);
    ck_assert_int_eq(ss.running, 0);
    ck_assert_int_eq(ss.slots_idle, 3);
    free(r);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_without_batch_one_at_a_time)
{
    /* sched batch=false: one request per engine even with 3 slots, the next
     * still chosen by priority. */
    struct fixture f;
    struct rec a, b, c;
    fx_defaults(&f);
    f.scfg.batch = false;
    f.pcfg.model.parallel = 3;
    ck_assert(fx_start(&f));
    struct st_request *ra = fx_submit(&f, "a", 0, 10, 5, &a);
    struct st_request *rb = fx_submit(&f, "b", 0, 10, 5, &b);
    struct st_request *rc = fx_submit(&f, "c", 9, 10, 5, &c);
    ck_assert(st_engine_pool_step(f.pool, 0));
    struct st_pool_stats ps;
    st_engine_pool_stats(f.pool, &ps);
    ck_assert_int_eq(ps.running, 1);
    fx_run_idle(&f);
    /* one at a time, by priority, then arrival: c, a, b */
    ck_assert(a.first_ns >= c.end_ns);
    ck_assert(b.first_ns >= a.end_ns);
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rc);
    fx_stop(&f);
}
END_TEST

static Suite *engine_sched_suite(void)
{
    Suite *s = suite_create("engine_sched");
    TCase *t = tcase_create("slots");
    tcase_add_test(t, test_engine_free_slot_goes_to_highest_priority);
    tcase_add_test(t, test_engine_fifo_without_priority);
    tcase_add_test(t, test_engine_without_batch_one_at_a_time);
    suite_add_tcase(s, t);
    t = tcase_create("give_way");
    tcase_add_test(t, test_engine_long_read_gives_way_to_higher_priority);
    tcase_add_test(t, test_engine_no_give_way_to_lower_priority);
    tcase_add_test(t, test_engine_half_length_rule_within_a_level);
    tcase_add_test(t, test_engine_yields_max_caps_give_ways);
    tcase_add_test(t, test_engine_after_epoch_keeps_parked_read_back);
    tcase_add_test(t, test_engine_parked_read_takes_lines_back_when_alone);
    suite_add_tcase(s, t);
    t = tcase_create("mixed");
    tcase_add_test(t, test_engine_long_long_short_mixed_no_deadlock);
    tcase_add_test(t, test_engine_random_mix_counters_add_up);
    tcase_set_timeout(t, 60);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    st_log_set_level(ST_LOG_WARN);
    return support_run_suite(engine_sched_suite(), CK_FORK);
}
