/* bench_priority.c -- issue 3, item 9a: the seed PR's two real-engine
 * scenarios replayed on the sim engine, with and without priority.
 *
 * Runs on a manual clock (st_engine_pool_step): simulated time, so it
 * finishes in a fraction of a second and gives the same numbers every run.
 * Time model (matching the seed's RTX PRO 6000 numbers): prompt reads at
 * 5,200 tok/s per engine, decode at 60 tok/s per slot, 512-token chunks,
 * give-way every 16,384 tokens, 4 slots.
 *
 *   1. 4 slots decode 700-token stories, 8 more stories wait (priority
 *      10); a short request (priority 100) arrives 2 s in.
 *   2. An 84,000-token read is under way (priority 10); an equally long
 *      request of priority 20 arrives 3 s in.
 *
 * "Without priority" gives every request priority 10. For each scenario it
 * prints the late request's time to first token each way, the ratio, and
 * the minimum the rules allow: (1) the first slot to free after it arrives
 * plus one step; (2) the next give-way boundary plus its own read.
 *
 * With STRATA_BENCH_SUMMARY set (scripts/bench.sh) each scenario also
 * appends a summary row (bench_summary.h): TTFT without vs with priority.
 *
 * Usage: bench_priority [prompt_tps decode_tps]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_summary.h"
#include "engine_fixture.h"
#include "strata/log.h"

#define SEC(x) ((int64_t)((x) * (double)ST_NS_PER_SEC + 0.5))

static double g_prompt_tps = 5200.0;
static double g_decode_tps = 60.0;

struct outcome {
    double ttft_s;       /* the late request's time to first token */
    double minimum_s;    /* what the rules allow at best */
    int    ahead;        /* requests that got their first token before it, after it arrived */
};

static void setup(struct fixture *f)
{
    fx_defaults(f);
    f->scfg.give_way_tokens = 16384;
    f->pcfg.model.parallel = 4;
    f->pcfg.model.ctx_size = 200000;
    f->pcfg.sim.prompt_tps = g_prompt_tps;
    f->pcfg.sim.decode_tps = g_decode_tps;
    f->pcfg.sim.tokens = 100000;
    if (!fx_start(f)) {
        fprintf(stderr, "bench_priority: cannot start the sim engine\n");
        exit(1);
    }
}

static double seconds(int64_t ns)
{
    return (double)ns / (double)ST_NS_PER_SEC;
}

/* Scenario 1: 12 stories at priority 10 (4 decode, 8 wait), a short
 * request at 'late_priority' arrives at 2 s. */
static struct outcome stories(int32_t late_priority)
{
    enum { N = 12, PROMPT = 40, STORY = 700, SHORT = 30 };
    struct fixture f;
    struct rec r[N], late;
    struct st_request *req[N], *lreq;
    struct outcome o = { 0 };
    setup(&f);
    for (int i = 0; i < N; i++) {
        char id[24];   /* room for any int (-Wformat-truncation, from -O1) */
        snprintf(id, sizeof(id), "story%d", i);
        req[i] = fx_submit(&f, id, 10, PROMPT, STORY, &r[i]);
    }
    const int64_t arrival = SEC(2.0);
    fx_run_until(&f, arrival);
    lreq = fx_submit(&f, "short", late_priority, SHORT, 20, &late);
    fx_run_idle(&f);

    int64_t first_free = INT64_MAX;
    for (int i = 0; i < N; i++) {
        if (r[i].end_ns >= arrival && r[i].end_ns < first_free)
            first_free = r[i].end_ns;
        if (r[i].first_ns > arrival && r[i].first_ns < late.first_ns)
            o.ahead++;
        st_request_unref(req[i]);
    }
    /* The step after the slot frees: its read plus the 3 other slots' decode. */
    double step = SHORT / g_prompt_tps + 1.0 / g_decode_tps;
    o.ttft_s = seconds(late.first_ns - arrival);
    o.minimum_s = seconds(first_free - arrival) + step;
    st_request_unref(lreq);
    fx_stop(&f);
    return o;
}

/* Scenario 2: an 84K read at priority 10, an equally long one at
 * 'late_priority' arriving at 3 s. */
static struct outcome long_reads(int32_t late_priority)
{
    enum { PROMPT = 84000, GEN = 50 };
    struct fixture f;
    struct rec a, b;
    struct outcome o = { 0 };
    setup(&f);
    struct st_request *ra = fx_submit(&f, "first", 10, PROMPT, GEN, &a);
    const int64_t arrival = SEC(3.0);
    fx_run_until(&f, arrival);
    struct st_request *rb = fx_submit(&f, "late", late_priority, PROMPT, GEN, &b);
    fx_run_idle(&f);

    /* The first read started at 0; its next boundary after the arrival. */
    int64_t g = f.scfg.give_way_tokens;
    int64_t read_at_arrival = (int64_t)(seconds(arrival) * g_prompt_tps);
    int64_t boundary = (read_at_arrival / g + 1) * g;
    if (boundary > PROMPT)
        boundary = PROMPT;
    o.ttft_s = seconds(b.first_ns - arrival);
    o.minimum_s = (double)boundary / g_prompt_tps + PROMPT / g_prompt_tps - seconds(arrival);
    o.ahead = a.first_ns < b.first_ns;
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
    return o;
}

static void row(const char *name, struct outcome without, struct outcome with, const char *seed)
{
    printf("%-44s %9.2f s %9.2f s %6.2fx %9.2f s   %s\n", name, without.ttft_s, with.ttft_s,
           with.ttft_s > 0 ? without.ttft_s / with.ttft_s : 0.0, with.minimum_s, seed);
    char what[128], base[32], fig[32];
    snprintf(what, sizeof(what), "sim TTFT, late request, %s: without vs with priority",
             name + 3);
    snprintf(base, sizeof(base), "%.2f s", without.ttft_s);
    snprintf(fig, sizeof(fig), "%.2f s", with.ttft_s);
    bench_summary("priority", what, base, fig, with.ttft_s > 0 ? without.ttft_s / with.ttft_s : 0);
}

int main(int argc, char **argv)
{
    if (argc == 3) {
        g_prompt_tps = atof(argv[1]);
        g_decode_tps = atof(argv[2]);
    }
    if (g_prompt_tps <= 0 || g_decode_tps <= 0) {
        fprintf(stderr, "usage: bench_priority [prompt_tps decode_tps]\n");
        return 2;
    }
    st_log_set_level(ST_LOG_WARN);
    printf("sim engine: prompt %.0f tok/s, decode %.0f tok/s per slot, 4 slots, ubatch 512, "
           "give-way 16384 (simulated time)\n\n", g_prompt_tps, g_decode_tps);
    printf("%-44s %11s %11s %7s %11s   %s\n", "late request's time to first token",
           "without", "with", "ratio", "minimum", "seed (real engine, without -> with)");

    struct outcome s1_without = stories(10), s1_with = stories(100);
    row("1. short (100) behind 4 stories + 8 waiting", s1_without, s1_with, "45.3 s -> 12.2 s");
    struct outcome s2_without = long_reads(10), s2_with = long_reads(20);
    row("2. 84K read, equal-length (20) at 3 s", s2_without, s2_with, "29.5 s -> 16.0 s");

    printf("\nwithout priority: %d stories went first in 1; the first read finished first in 2: "
           "%s\n", s1_without.ahead, s2_without.ahead ? "yes" : "no");
    printf("with priority: %d requests went first in 1; at the minimum: %s / %s\n", s1_with.ahead,
           s1_with.ttft_s <= s1_with.minimum_s + 1e-6 ? "yes" : "no",
           s2_with.ttft_s <= s2_with.minimum_s + 1e-6 ? "yes" : "no");
    return 0;
}
