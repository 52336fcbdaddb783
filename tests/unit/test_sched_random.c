/* test_sched_random.c -- randomized property tests of st_sched.
 *
 * 1. Seeded random configurations and random sequences of submits,
 *    cancels, engine steps and clock jumps through the simulated engine;
 *    after every call: the scheduler's structural invariants
 *    (st_sched_check_invariants: trees, band lists, slot tables, one lines
 *    holder per engine, counters), each job in at most one slot, and a
 *    DECODING job only ever goes on to DONE. Then the sim runs on until
 *    every job is done, and the counters add up against what the test saw.
 * 2. Threads: two submitter threads (10% of their jobs cancelled) and two
 *    engine threads on one scheduler; every job ends exactly once.
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "sched_sim.h"
#include "support.h"

#define N_JOBS 300

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(2685821657736338717);
}

static int64_t rng_in(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

struct world {
    struct sim sim;
    struct sim_job jobs[N_JOBS];
    int n_jobs;
    uint64_t submitted;     /* submit calls that counted (OK or queue full) */
    int32_t n_models;
};

static void random_config(uint64_t *r, struct st_sched_config *c, int32_t *engines,
                          int32_t *slots)
{
    static const double divs[] = { 0, 0.05, 1, 60 };
    static const int64_t gws[] = { 128, 1000, 4096 };
    static const int32_t queues[] = { 0, 0, 4, 20 };

    st_sched_config_defaults(c);
    c->batch = rng_in(r, 0, 3) != 0;
    c->policy = rng_in(r, 0, 4) == 0 ? ST_SCHED_FIFO : ST_SCHED_SERIAL;
    c->aging_divisor_s = divs[rng_in(r, 0, 3)];
    c->swap_affinity_bonus = (int32_t)rng_in(r, 0, 99);
    c->give_way_tokens = gws[rng_in(r, 0, 2)];
    c->yields_max = (int32_t)rng_in(r, 0, 4);
    c->max_queue = queues[rng_in(r, 0, 3)];
    c->activity_capacity = (int32_t)rng_in(r, 0, 50);
    *engines = (int32_t)rng_in(r, 1, 3);
    *slots = (int32_t)rng_in(r, 1, 4);
}

/* Plain checks with one report on failure: ck_assert costs a pipe write
 * per call in fork mode, and this runs after every one of ~10^5 calls. */
static void check_world(struct world *w)
{
    char why[200];
    if (!st_sched_check_invariants(w->sim.s, why, sizeof(why)))
        ck_abort_msg("%s", why);
    /* each job in at most one slot, and the slot table matches the job */
    for (int32_t e = 0; e < w->sim.n_engines; e++) {
        for (int32_t k = 0; k < w->sim.n_slots; k++) {
            struct sim_job *j = w->sim.slot[e][k];
            if (j && (j->job.engine != e || j->job.slot != k))
                ck_abort_msg("engine %d slot %d holds a job placed elsewhere", (int)e, (int)k);
        }
    }
    for (int i = 0; i < w->n_jobs; i++) {
        struct sim_job *j = &w->jobs[i];
        if (j->prev == ST_JOB_DECODING && j->job.state != ST_JOB_DECODING &&
            j->job.state != ST_JOB_DONE)
            ck_abort_msg("a decoding job went to %s", st_job_state_name(j->job.state));
        if (j->done != (j->job.state == ST_JOB_DONE))
            ck_abort_msg("job %d: done flag and state %s disagree", i,
                         st_job_state_name(j->job.state));
        j->prev = j->job.state;
    }
}

static void random_submit(struct world *w, uint64_t *r)
{
    static const int32_t prios[] = { -100, -5, 0, 0, 0, 3, 5, 10, 100 };
    struct st_sched_job *shed = NULL;
    struct sim_job *j = &w->jobs[w->n_jobs++];
    int32_t prio = prios[rng_in(r, 0, (int64_t)ST_ARRAY_LEN(prios) - 1)] + (int32_t)rng_in(r, -2, 2);
    enum st_status rc = sim_submit(&w->sim, j, prio, (int32_t)rng_in(r, 0, w->n_models - 1),
                                   rng_in(r, 1, 6000), rng_in(r, 1, 40), &shed);
    if (rc != ST_OK && (rc != ST_ERR_QUEUE_FULL || j->job.state != ST_JOB_DONE))
        ck_abort_msg("submit: %s, state %s", st_status_name(rc), st_job_state_name(j->job.state));
    w->submitted++;
}

static void random_action(struct world *w, uint64_t *r)
{
    int64_t what = rng_in(r, 0, 9);
    if (what <= 2 && w->n_jobs < N_JOBS) {
        random_submit(w, r);
    } else if (what == 3 && w->n_jobs > 0) {
        sim_cancel(&w->sim, &w->jobs[rng_in(r, 0, w->n_jobs - 1)]);
    } else if (what == 4) {
        st_clock_manual_advance(&w->sim.clock, rng_in(r, 0, 5 * ST_NS_PER_SEC));
    } else {
        sim_step(&w->sim);
    }
}

static void counters_match(struct world *w)
{
    struct st_sched_stats st;
    uint64_t seen[ST_OUTCOME_COUNT] = {0}, got[ST_OUTCOME_COUNT] = {0}, submitted = 0;
    uint64_t dispatched = 0, undispatched = 0, shed = 0;

    for (int i = 0; i < w->n_jobs; i++)
        seen[w->jobs[i].outcome]++;
    st_sched_stats(w->sim.s, &st);
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        submitted += st.band[b].submitted;
        dispatched += st.band[b].dispatched;
        for (int o = 0; o < ST_OUTCOME_COUNT; o++) {
            got[o] += st.band[b].outcomes[o];
            undispatched += st.band[b].undispatched[o];
        }
        ck_assert_int_eq(st.band[b].queue_depth, 0);
        ck_assert_int_eq(st.band[b].running, 0);
    }
    for (int o = 0; o < ST_OUTCOME_COUNT; o++)
        ck_assert_uint_eq(got[o], seen[o]);
    shed = got[ST_OUTCOME_REJECTED];
    ck_assert_uint_eq(submitted, w->submitted);
    ck_assert_uint_eq(dispatched + undispatched, (uint64_t)w->n_jobs);
    ck_assert_uint_eq(st.shed, shed);
    ck_assert_int_eq(st.slots_idle, st.slots_total);
    ck_assert_int_eq(st.waiting, 0);
}

static void run_seed(uint64_t seed)
{
    static struct world w;
    struct st_sched_config c;
    int32_t engines, slots;
    uint64_t r = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;

    memset(&w, 0, sizeof(w));
    random_config(&r, &c, &engines, &slots);
    sim_init(&w.sim, &c, engines, slots, rng_in(&r, 64, 2048));
    w.n_models = (int32_t)rng_in(&r, 1, 3);
    for (int32_t e = 0; e < engines; e++)
        st_sched_engine_set_model(w.sim.s, e, (int32_t)rng_in(&r, -1, w.n_models - 1));
    for (int i = 0; i < 3000; i++) {
        random_action(&w, &r);
        check_world(&w);
    }
    for (int64_t step = 0; step < 200000 && w.sim.n_done + 0 < w.n_jobs; step++) {
        bool all = true;
        for (int i = 0; i < w.n_jobs && all; i++)
            all = w.jobs[i].done;
        if (all)
            break;
        sim_step(&w.sim);
        check_world(&w);
    }
    for (int i = 0; i < w.n_jobs; i++)
        ck_assert_msg(w.jobs[i].done, "seed %llu: job %d never finished (state %s)",
                      (unsigned long long)seed, i, st_job_state_name(w.jobs[i].job.state));
    counters_match(&w);
    sim_fini(&w.sim);
}

START_TEST(test_sched_random_operations_keep_invariants)
{
    for (uint64_t seed = 1; seed <= 40; seed++)
        run_seed(seed * 7919 + (uint64_t)_i);
}
END_TEST

/* ---- threads --------------------------------------------------------- */

#define T_JOBS 2000

struct tjob {
    struct st_sched_job job;
    int64_t n_decode;
    int64_t generated;
    atomic_bool cancel;
    atomic_int ended;      /* times it ended: must be exactly 1 */
};

struct tworld {
    struct st_sched *s;
    struct tjob jobs[T_JOBS];
    atomic_int n_ended;
    int32_t n_slots;
};

struct tsub {
    struct tworld *w;
    int first, count;
};

static void end_job(struct tworld *w, struct tjob *j)
{
    atomic_fetch_add(&j->ended, 1);
    atomic_fetch_add(&w->n_ended, 1);
}

static void *submitter(void *arg)
{
    struct tsub *t = arg;
    uint64_t r = (uint64_t)t->first + 12345;
    for (int i = t->first; i < t->first + t->count; i++) {
        struct tjob *j = &t->w->jobs[i];
        j->job.priority = (int32_t)rng_in(&r, -120, 120);
        j->job.model = 0;
        j->job.prompt_tokens = rng_in(&r, 1, 3000);
        j->n_decode = rng_in(&r, 1, 20);
        if (st_sched_submit(t->w->s, &j->job, NULL) != ST_OK)
            ck_abort_msg("submit failed");
        if (i % 10 == 5) {
            if (st_sched_cancel(t->w->s, &j->job))
                end_job(t->w, j);
            else
                atomic_store(&j->cancel, true);
        }
        if (i % 50 == 0)
            sched_yield();
    }
    return NULL;
}

struct tengine {
    struct tworld *w;
    int32_t id;
    struct tjob *slot[8];
};

static void tengine_step(struct tengine *e)
{
    struct tworld *w = e->w;
    for (int32_t k = 0; k < w->n_slots; k++) {
        if (!e->slot[k]) {
            struct st_sched_job *j = st_sched_admit(w->s, e->id, k);
            e->slot[k] = j ? ST_CONTAINER_OF(j, struct tjob, job) : NULL;
        }
    }
    struct st_sched_job *h = st_sched_lines(w->s, e->id);
    if (h)
        st_sched_read_progress(w->s, h, 256);
    for (int32_t k = 0; k < w->n_slots; k++) {
        struct tjob *j = e->slot[k];
        if (!j)
            continue;
        bool cancel = atomic_load(&j->cancel);
        if (!cancel && (j->job.state != ST_JOB_DECODING || ++j->generated < j->n_decode))
            continue;
        st_sched_finish(w->s, &j->job, cancel ? ST_OUTCOME_CANCELLED : ST_OUTCOME_COMPLETED, NULL);
        e->slot[k] = NULL;
        end_job(w, j);
    }
}

static void *engine_thread(void *arg)
{
    struct tengine *e = arg;
    while (atomic_load(&e->w->n_ended) < T_JOBS)
        tengine_step(e);
    return NULL;
}

START_TEST(test_sched_threads_submit_cancel_and_serve)
{
    static struct tworld w;
    struct st_clock_manual clk;
    struct st_sched_config c;
    pthread_t sub[2], eng[2];
    struct tsub ts[2];
    struct tengine te[2];

    memset(&w, 0, sizeof(w));
    st_clock_manual_init(&clk, 0);
    st_sched_config_defaults(&c);
    c.batch = true;
    c.give_way_tokens = 512;
    c.log_dispatch = false;
    ck_assert_int_eq(st_sched_new(&c, &clk.clock, &w.s, NULL), ST_OK);
    w.n_slots = 3;
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(st_sched_add_engine(w.s, w.n_slots, 0), i);
        te[i] = (struct tengine){ .w = &w, .id = i };
        ts[i] = (struct tsub){ .w = &w, .first = i * (T_JOBS / 2), .count = T_JOBS / 2 };
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_create(&eng[i], NULL, engine_thread, &te[i]), 0);
        ck_assert_int_eq(pthread_create(&sub[i], NULL, submitter, &ts[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(sub[i], NULL);
        pthread_join(eng[i], NULL);
    }
    for (int i = 0; i < T_JOBS; i++) {
        ck_assert_int_eq(atomic_load(&w.jobs[i].ended), 1);
        ck_assert_int_eq(w.jobs[i].job.state, ST_JOB_DONE);
    }
    struct st_sched_stats st;
    st_sched_stats(w.s, &st);
    uint64_t completed = 0, cancelled = 0, dispatched = 0;
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        completed += st.band[b].outcomes[ST_OUTCOME_COMPLETED];
        cancelled += st.band[b].outcomes[ST_OUTCOME_CANCELLED];
        dispatched += st.band[b].dispatched;
    }
    ck_assert_uint_eq(completed + cancelled, T_JOBS);
    ck_assert_uint_le(dispatched, T_JOBS);
    ck_assert_uint_ge(dispatched, completed);
    ck_assert_uint_ge(cancelled, 1);
    ck_assert_int_eq(st.running, 0);
    ck_assert_int_eq(st.waiting, 0);
    char why[200];
    ck_assert_msg(st_sched_check_invariants(w.s, why, sizeof(why)), "%s", why);
    st_sched_free(w.s);
}
END_TEST

static Suite *random_suite(void)
{
    Suite *s = suite_create("sched_random");
    TCase *prop = tcase_create("property");
    TCase *threads = tcase_create("threads");

    tcase_add_loop_test(prop, test_sched_random_operations_keep_invariants, 0, 3);
    tcase_set_timeout(prop, 60);
    tcase_add_test(threads, test_sched_threads_submit_cancel_and_serve);
    tcase_set_timeout(threads, 60);
    suite_add_tcase(s, prop);
    suite_add_tcase(s, threads);
    return s;
}

int main(void)
{
    return support_run_suite(random_suite(), CK_FORK);
}
