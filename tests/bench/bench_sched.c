/* bench_sched.c -- the scheduler's own cost (issue 3 item 9b).
 *
 *   decisions/s: with N jobs waiting (default 100,000), one decision is a
 *     submit of a new job + an admit into the engine's free slot + the
 *     finish of the admitted job, so the queue stays at N. Random
 *     priorities over all three bands, 1 or 4 models, serial and fifo.
 *   stats: st_sched_stats with 10,000 waiting (the server's /metrics render
 *     adds its own formatting on top of this).
 *
 * Not a ctest; run by hand: build-x/tests/bench_sched [waiting] [decisions]
 * Prints a table. Uses the real clock, so aging keys differ per job.
 * With STRATA_BENCH_SUMMARY set (scripts/bench.sh) it also appends summary
 * rows (bench_summary.h): serial's decisions/s against fifo's (the plain
 * queue in the same process: the ratio is what the priority order costs),
 * and the stats call's absolute rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_summary.h"
#include "strata/clock.h"
#include "strata/log.h"
#include "strata/sched.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fill_job(struct st_sched_job *j, int32_t n_models)
{
    static const int32_t base[] = { -100, 0, 0, 0, 100 };
    j->priority = base[next_rand() % 5] + (int32_t)(next_rand() % 7) - 3;
    j->model = (int32_t)(next_rand() % (uint64_t)n_models);
    j->prompt_tokens = 1 + (int64_t)(next_rand() % 4096);
}

static struct st_sched *make(enum st_sched_policy policy)
{
    struct st_sched_config c;
    struct st_sched *s = NULL;
    struct st_err err = {0};

    st_sched_config_defaults(&c);
    c.policy = policy;
    c.batch = true;
    c.log_dispatch = false;
    if (st_sched_new(&c, st_clock_real(), &s, &err) != ST_OK) {
        fprintf(stderr, "bench_sched: %s\n", err.msg);
        exit(1);
    }
    st_sched_add_engine(s, 1, 0);   /* one slot: every admit is one decision */
    return s;
}

/* Fill 'waiting' jobs, then time 'n' submit+admit+finish rounds. Returns
 * decisions per second. 'jobs' has waiting + 1 entries. */
static double decisions(struct st_sched_job *jobs, int64_t waiting, int64_t n,
                        enum st_sched_policy policy, int32_t n_models)
{
    struct st_sched *s = make(policy);
    struct st_sched_job *spare = &jobs[waiting];

    for (int64_t i = 0; i < waiting; i++) {
        memset(&jobs[i], 0, sizeof(jobs[i]));
        fill_job(&jobs[i], n_models);
        if (st_sched_submit(s, &jobs[i], NULL) != ST_OK)
            exit(1);
    }
    memset(spare, 0, sizeof(*spare));
    double t0 = now_s();
    for (int64_t i = 0; i < n; i++) {
        fill_job(spare, n_models);
        if (st_sched_submit(s, spare, NULL) != ST_OK)
            exit(1);
        struct st_sched_job *got = st_sched_admit(s, 0, 0);
        if (!got)
            exit(1);
        st_sched_finish(s, got, ST_OUTCOME_COMPLETED, NULL);
        spare = got;   /* the finished job is free to be submitted again */
    }
    double dt = now_s() - t0;
    st_sched_free(s);
    return (double)n / dt;
}

static double stats_ns(struct st_sched_job *jobs, int64_t waiting, int64_t calls)
{
    struct st_sched *s = make(ST_SCHED_SERIAL);
    struct st_sched_stats st;

    for (int64_t i = 0; i < waiting; i++) {
        memset(&jobs[i], 0, sizeof(jobs[i]));
        fill_job(&jobs[i], 1);
        if (st_sched_submit(s, &jobs[i], NULL) != ST_OK)
            exit(1);
    }
    double t0 = now_s();
    for (int64_t i = 0; i < calls; i++)
        st_sched_stats(s, &st);
    double dt = now_s() - t0;
    if (st.waiting != waiting)
        exit(1);
    st_sched_free(s);
    return dt / (double)calls * 1e9;
}

int main(int argc, char **argv)
{
    int64_t waiting = argc > 1 ? atoll(argv[1]) : 100000;
    int64_t n = argc > 2 ? atoll(argv[2]) : 1000000;
    struct st_sched_job *jobs = calloc((size_t)waiting + 1 > 10001 ? (size_t)waiting + 1 : 10001,
                                       sizeof(*jobs));
    if (!jobs || waiting < 0 || n < 1)
        return 1;
    st_log_set_level(ST_LOG_WARN);

    printf("%-44s %14s %12s\n", "case", "per second", "ns each");
    static const struct { const char *name; enum st_sched_policy p; int32_t models; } cases[] = {
        { "serial, 1 model", ST_SCHED_SERIAL, 1 },
        { "serial, 4 models", ST_SCHED_SERIAL, 4 },
        { "fifo, 1 model", ST_SCHED_FIFO, 1 },
    };
    double rate[3];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double r = decisions(jobs, waiting, n, cases[i].p, cases[i].models);
        char label[96];
        snprintf(label, sizeof(label), "decision, %lld waiting, %s", (long long)waiting,
                 cases[i].name);
        printf("%-44s %14.0f %12.1f\n", label, r, 1e9 / r);
        rate[i] = r;
    }
    double ns = stats_ns(jobs, 10000, 200000);
    printf("%-44s %14.0f %12.1f\n", "st_sched_stats, 10000 waiting", 1e9 / ns, ns);
    for (int i = 0; i < 2; i++) {
        char what[96], base[32], fig[32];
        snprintf(what, sizeof(what), "decisions/s, %lld waiting: fifo 1 model vs serial %s",
                 (long long)waiting, i ? "4 models" : "1 model");
        snprintf(base, sizeof(base), "%.0f/s", rate[2]);
        snprintf(fig, sizeof(fig), "%.0f/s", rate[i]);
        bench_summary("sched", what, base, fig, rate[i] / rate[2]);
    }
    char fig[32];
    snprintf(fig, sizeof(fig), "%.0f/s", 1e9 / ns);
    bench_summary("sched", "st_sched_stats calls/s, 10000 waiting (absolute)", "", fig, 0);
    free(jobs);
    return 0;
}
