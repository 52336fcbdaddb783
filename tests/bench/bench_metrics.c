/* bench_metrics.c -- what one /metrics scrape costs with a long queue (issue
 * 21: a router's endpoint picker scrapes every 50 ms, so the render must
 * stay under 1 ms with 10,000 requests waiting).
 *
 * One scrape here is what st_h_metrics does minus the HTTP: the scheduler's
 * stats snapshot, the per-model waiting counts, and the full text render
 * (every family, the router-facing ones included) of a 4-model snapshot.
 * Timed twice in the same process: with an empty queue (the baseline) and
 * with N waiting jobs (default 10,000) spread over the models and bands.
 * The ratio baseline / loaded is ~1 when nothing walks the queue.
 *
 * Not a ctest; run by hand: build-x/tests/bench_metrics [waiting] [scrapes]
 * With STRATA_BENCH_SUMMARY set (scripts/bench.sh) it appends one summary
 * row (bench_summary.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_summary.h"
#include "server/http/http.h"
#include "strata/clock.h"

#define N_MODELS 4

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct st_sched *make(void)
{
    struct st_sched_config c;
    struct st_sched *s = NULL;
    struct st_err err = {0};
    st_sched_config_defaults(&c);
    c.batch = true;
    c.log_dispatch = false;
    if (st_sched_new(&c, st_clock_real(), &s, &err) != ST_OK) {
        fprintf(stderr, "bench_metrics: %s\n", err.msg);
        exit(1);
    }
    st_sched_add_engine(s, 4, 0);
    return s;
}

/* Submit 'waiting' jobs: models 0..N_MODELS-1, priorities over the bands. */
static void fill(struct st_sched *s, struct st_sched_job *jobs, int64_t waiting)
{
    static const int32_t prio[] = { -100, 0, 0, 100 };
    for (int64_t i = 0; i < waiting; i++) {
        memset(&jobs[i], 0, sizeof(jobs[i]));
        jobs[i].priority = prio[i % 4];
        jobs[i].model = (int32_t)(i % N_MODELS);
        jobs[i].prompt_tokens = 1 + i % 4096;
        if (st_sched_submit(s, &jobs[i], NULL) != ST_OK) {
            fprintf(stderr, "bench_metrics: submit failed at %lld\n", (long long)i);
            exit(1);
        }
    }
}

/* Buckets as the pool keeps them (16 bounds), so the render formats as
 * many lines as a real scrape. */
static void histogram_init(struct st_histogram *h, double first)
{
    memset(h, 0, sizeof(*h));
    h->n_bounds = ST_HIST_BUCKETS;
    for (int i = 0; i < ST_HIST_BUCKETS; i++)
        h->bounds[i] = first * (double)(1 << (i / 2)) * (i % 2 ? 2.5 : 1.0);
}

/* The per-model part, filled by hand as st_metrics_models_take would. */
struct snapshot {
    const char *names[N_MODELS];
    struct st_model_status status[N_MODELS];
    struct st_metrics_resident resident[N_MODELS];
    struct st_metrics_swap swaps[(N_MODELS + 1) * N_MODELS];
    struct st_metrics_models mm;
};

static void snapshot_init(struct snapshot *sn)
{
    static const char *const names[N_MODELS] = { "qwen3-30b-a3b", "qwen3-0.6b", "glm-4.5-air",
                                                 "embed" };
    memset(sn, 0, sizeof(*sn));
    size_t n_swaps = 0;
    for (int32_t m = 0; m < N_MODELS; m++) {
        sn->names[m] = names[m];
        histogram_init(&sn->status[m].load_seconds, 0.1);
        for (int32_t from = -1; from < N_MODELS; from++)
            if (from != m)
                sn->swaps[n_swaps++] = (struct st_metrics_swap){ from, m, 1 };
    }
    sn->status[0].n_loaded = 1;
    sn->mm = (struct st_metrics_models){ .n_models = N_MODELS, .names = sn->names,
                                         .status = sn->status, .swaps = sn->swaps,
                                         .n_swaps = n_swaps, .resident = sn->resident };
    sn->mm.pod.block_size = 16;
    sn->mm.pod.max_resident = 1;
}

/* One scrape: snapshots, then the text. Returns the text's size. */
static size_t scrape(struct st_sched *s, struct snapshot *sn, struct st_buf *b)
{
    struct st_sched_stats ss;
    struct st_pool_stats ps;
    struct st_http_stats hs;
    int64_t waiting[N_MODELS];
    memset(&ps, 0, sizeof(ps));
    memset(&hs, 0, sizeof(hs));
    ps.kv_tokens = 4 * 8192;
    for (int band = 0; band < ST_BAND_COUNT; band++) {
        histogram_init(&ps.ttft[band], 0.005);
        histogram_init(&ps.itl[band], 0.005);
    }
    st_sched_stats(s, &ss);
    st_sched_models_waiting(s, waiting, N_MODELS);
    for (int32_t m = 0; m < N_MODELS; m++)
        sn->resident[m].waiting = waiting[m];
    sn->mm.pod.now_unix = (double)time(NULL);
    st_buf_reset(b);
    if (st_metrics_render(b, &ss, &ps, &hs, &sn->mm) != ST_OK) {
        fprintf(stderr, "bench_metrics: render failed\n");
        exit(1);
    }
    return b->len;
}

/* Mean seconds per scrape over 'n' scrapes with 'waiting' jobs queued. */
static double time_scrapes(struct st_sched_job *jobs, int64_t waiting, int64_t n, size_t *bytes)
{
    struct st_sched *s = make();
    struct snapshot sn;
    struct st_buf b;
    snapshot_init(&sn);
    st_buf_init(&b);
    fill(s, jobs, waiting);
    scrape(s, &sn, &b);   /* warm the buffer */
    double t0 = now_s();
    for (int64_t i = 0; i < n; i++)
        *bytes = scrape(s, &sn, &b);
    double dt = now_s() - t0;
    if (!strstr(b.data, "vllm:num_requests_waiting ")) {
        fprintf(stderr, "bench_metrics: the scrape lacks the queue gauge\n");
        exit(1);
    }
    char want[64];
    snprintf(want, sizeof(want), "\nstrata:num_requests_waiting %lld\n", (long long)waiting);
    if (!strstr(b.data, want)) {
        fprintf(stderr, "bench_metrics: the scrape does not show %lld waiting\n",
                (long long)waiting);
        exit(1);
    }
    st_buf_fini(&b);
    st_sched_free(s);
    return dt / (double)n;
}

int main(int argc, char **argv)
{
    int64_t waiting = argc > 1 ? atoll(argv[1]) : 10000;
    int64_t n = argc > 2 ? atoll(argv[2]) : 2000;
    if (waiting < 1 || n < 1) {
        fprintf(stderr, "usage: bench_metrics [waiting >= 1] [scrapes >= 1]\n");
        return 2;
    }
    struct st_sched_job *jobs = calloc((size_t)waiting, sizeof(*jobs));
    if (!jobs)
        return 1;
    size_t bytes_empty = 0, bytes_full = 0;
    double empty = time_scrapes(jobs, 0, n, &bytes_empty);
    double full = time_scrapes(jobs, waiting, n, &bytes_full);
    printf("%-40s %12s %10s\n", "one /metrics scrape", "us", "bytes");
    printf("%-40s %12.1f %10zu\n", "empty queue (baseline)", empty * 1e6, bytes_empty);
    char what[64];
    snprintf(what, sizeof(what), "%lld waiting", (long long)waiting);
    printf("%-40s %12.1f %10zu\n", what, full * 1e6, bytes_full);
    printf("ratio baseline / loaded: %.2f; budget 1000 us: %s\n", empty / full,
           full < 1e-3 ? "within" : "OVER");
    char base[32], fig[32], row[96];
    snprintf(base, sizeof(base), "%.1f us", empty * 1e6);
    snprintf(fig, sizeof(fig), "%.1f us", full * 1e6);
    snprintf(row, sizeof(row), "/metrics scrape, %s vs empty queue", what);
    bench_summary("metrics", row, base, fig, empty / full);
    free(jobs);
    return 0;
}
