/* bench_prefix.c -- prefix sharing across slots (docs/BATCHING.md "Prefix
 * reuse", src/engine/prefix.c): what copying another slot's KV for a shared
 * prompt prefix saves over reading it again, on the CPU model runner.
 *
 *   1. another slot: request a (S shared tokens + 16 of its own) decodes in
 *      slot 0; request b (the same S + 16 others) arrives and takes slot 1.
 *      Time from b's submit to its first token, with cache_prompt on (b
 *      copies a's S rows) and off (b reads all S + 16 tokens).
 *   2. multiple choice (lm-evaluation-harness): one context of C tokens and
 *      four answers of 3-6 tokens, sent together to four slots, each
 *      scored (echo + prompt logprobs) with one generated token. Time from
 *      submit until all four ended, cache_prompt on (three of them copy the
 *      context) and off.
 *
 * Each run builds a fresh pool (scheduler + one CPU engine, ubatch 512) on
 * the real clock and steps it on this thread, so nothing is cached between
 * runs. After one untimed warm-up run (copy), every repetition runs off
 * then on; the ratio is the median of the pairs' ratios (a shared
 * machine's slow drifts cancel within a pair). Prompts are random byte
 * tokens (ids 0-255, plain tokens in every make-model vocabulary).
 * A run whose copy did not happen (copied tokens not as expected) makes the
 * bench fail: the figure would not measure what it says.
 *
 * Usage: bench_prefix MODEL.gguf [S (1024)] [C (512)] [reps (3)] [threads (2)]
 * Not a test: it is not registered with ctest and asserts no timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_summary.h"
#include "strata/clock.h"
#include "strata/engine.h"
#include "strata/log.h"
#include "strata/sched.h"

#define MAX_REPS 20
#define TAIL 16

struct opts {
    const char *model;
    int32_t shared, context, reps, threads;
};

/* What one request saw (real clock, ns). */
struct got {
    struct st_request *req;
    int64_t submit_ns, first_ns, end_ns, n_cached;
    bool    ended, failed;
};

struct pool {
    struct st_sched       *sched;
    struct st_engine_pool *pool;
};

static uint64_t rng = 0x2545f4914f6cdd1dull;

static int32_t rand_byte(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int32_t)(rng % 256);
}

static void on_event(void *ctx, const struct st_event *ev)
{
    struct got *g = ctx;
    int64_t now = st_clock_now(st_clock_real());
    if (ev->kind == ST_EVENT_TOKEN && g->first_ns < 0)
        g->first_ns = now;
    if (ev->kind == ST_EVENT_END) {
        g->ended = true;
        g->failed = ev->finish == ST_FINISH_ERROR;
        g->end_ns = now;
        g->n_cached = ev->n_cached;
    }
}

static void pool_stop(struct pool *p)
{
    st_engine_pool_free(p->pool);   /* ends whatever still runs; NULL: nothing */
    if (p->sched)
        st_sched_free(p->sched);
    p->pool = NULL;
    p->sched = NULL;
}

static bool pool_start(struct pool *p, const struct opts *o, int32_t np, int32_t ctx)
{
    struct st_sched_config sc;
    struct st_pool_config pc;
    struct st_err err = { 0 };
    st_sched_config_defaults(&sc);
    sc.batch = true;
    sc.log_dispatch = false;
    st_pool_config_defaults(&pc);
    pc.model.name = (char *)"bench";
    pc.model.path = (char *)o->model;
    pc.model.backend = ST_BACKEND_CPU;
    pc.model.parallel = np;
    pc.model.ctx_size = ctx;
    pc.threads = o->threads;
    p->sched = NULL;
    p->pool = NULL;
    if (st_sched_new(&sc, st_clock_real(), &p->sched, &err) != ST_OK ||
        st_engine_pool_new(&pc, p->sched, st_clock_real(), &p->pool, &err) != ST_OK) {
        fprintf(stderr, "bench_prefix: %s\n", err.msg);
        pool_stop(p);
        return false;
    }
    (void)st_engine_pool_step(p->pool, 0);   /* loads the model */
    struct st_model_status ms;
    if (st_engine_pool_model_status(p->pool, 0, &ms) && ms.state == ST_MODEL_FAILED) {
        fprintf(stderr, "bench_prefix: the model did not load: %s\n", ms.reason);
        pool_stop(p);
        return false;
    }
    return true;
}

static uint64_t copied(struct pool *p)
{
    struct st_pool_stats st;
    st_engine_pool_stats(p->pool, &st);
    return st.copied_tokens;
}

/* Submit ids (copied) greedily; scored: prompt logprobs with echo. */
static bool submit(struct pool *p, const int32_t *ids, int64_t n, int32_t max_tokens,
                   bool no_cache, bool scored, struct got *g)
{
    memset(g, 0, sizeof(*g));
    g->first_ns = g->end_ns = -1;
    struct st_request *req = st_request_new();
    if (!req)
        return false;
    snprintf(req->id, sizeof(req->id), "bench-prefix");
    req->prompt = strdup("");
    req->tokens = malloc((size_t)n * sizeof(*ids));
    if (!req->prompt || !req->tokens) {
        st_request_unref(req);
        return false;
    }
    memcpy(req->tokens, ids, (size_t)n * sizeof(*ids));
    req->n_tokens = n;
    req->no_prompt_cache = no_cache;
    req->params.temperature = 0.0f;
    req->params.max_tokens = max_tokens;
    req->params.ignore_eos = true;
    req->params.echo = scored;
    req->params.prompt_logprobs = scored;
    req->params.prompt_top_logprobs = scored ? 1 : 0;
    req->emit = on_event;
    req->emit_ctx = g;
    g->req = req;
    g->submit_ns = st_clock_now(st_clock_real());
    struct st_err err = { 0 };
    if (st_engine_pool_submit(p->pool, req, &err) != ST_OK) {
        fprintf(stderr, "bench_prefix: %s\n", err.msg);
        st_request_unref(req);
        g->req = NULL;
        return false;
    }
    return true;
}

static void release(struct got *g)
{
    if (g->req)
        st_request_unref(g->req);
    g->req = NULL;
}

/* Scenario 1, one run: seconds from b's submit to its first token, or -1. */
static double another_slot(const struct opts *o, bool on)
{
    int32_t n = o->shared + TAIL;
    int32_t *a = malloc((size_t)n * sizeof(int32_t)), *b = malloc((size_t)n * sizeof(int32_t));
    struct pool p;
    struct got ga, gb;
    double t = -1;
    uint64_t saved = rng;
    for (int32_t i = 0; i < o->shared; i++)
        a[i] = b[i] = rand_byte();
    for (int32_t i = o->shared; i < n; i++) {
        a[i] = 300 + (i == o->shared ? 0 : rand_byte());   /* the tails differ at once */
        b[i] = 301 + (i == o->shared ? 0 : rand_byte());
    }
    rng = saved;   /* every run the same prompts */
    /* a decodes through b's whole cold read: one token per step, a chunk of
     * 512 per step, so S / 512 + a margin */
    int32_t a_gen = o->shared / 256 + 64;
    if (a && b && pool_start(&p, o, 2, n + a_gen + 16)) {
        if (submit(&p, a, n, a_gen, !on, false, &ga)) {
            for (int i = 0; i < 100000 && ga.first_ns < 0 && !ga.ended; i++)
                (void)st_engine_pool_step(p.pool, 0);
            if (ga.first_ns >= 0 && !ga.ended && submit(&p, b, n, 1, !on, false, &gb)) {
                for (int i = 0; i < 100000 && !gb.ended; i++)
                    (void)st_engine_pool_step(p.pool, 0);
                bool a_busy = !ga.ended;   /* b's read happened next to a's decode */
                uint64_t want = on ? (uint64_t)o->shared : 0;
                if (gb.ended && !gb.failed && gb.first_ns >= 0 && copied(&p) == want && a_busy)
                    t = (double)(gb.first_ns - gb.submit_ns) / 1e9;
                else
                    fprintf(stderr, "bench_prefix: another slot (%s): ended %d, copied %llu of "
                            "%llu, a still decoding %d\n", on ? "copy" : "cold", gb.ended,
                            (unsigned long long)copied(&p), (unsigned long long)want, a_busy);
                release(&gb);
            }
            release(&ga);
        }
        pool_stop(&p);
    }
    free(a);
    free(b);
    return t;
}

/* Scenario 2, one run: seconds from the submits until all four ended, or -1. */
static double multiple_choice(const struct opts *o, bool on)
{
    enum { K = 4 };
    int32_t c = o->context, *ids[K];
    int64_t n[K];
    struct pool p;
    struct got g[K];
    double t = -1;
    uint64_t saved = rng;
    for (int k = 0; k < K; k++) {
        n[k] = c + 3 + k;
        ids[k] = malloc((size_t)n[k] * sizeof(int32_t));
    }
    for (int32_t i = 0; i < c; i++) {
        int32_t v = rand_byte();
        for (int k = 0; k < K; k++)
            ids[k][i] = v;
    }
    for (int k = 0; k < K; k++)
        for (int32_t i = c; i < n[k]; i++)
            ids[k][i] = i == c ? 400 + k : rand_byte();   /* answers differ at once */
    rng = saved;
    if (pool_start(&p, o, K, c + 16)) {
        int subm = 0;
        while (subm < K && submit(&p, ids[subm], n[subm], 1, !on, true, &g[subm]))
            subm++;
        int64_t t0 = subm ? g[0].submit_ns : 0;
        bool all = subm == K;
        for (int i = 0; all && i < 100000 && st_engine_pool_step(p.pool, 0); i++)
            ;
        int64_t t1 = 0;
        for (int k = 0; k < subm; k++) {
            all = all && g[k].ended && !g[k].failed;
            t1 = g[k].end_ns > t1 ? g[k].end_ns : t1;
            release(&g[k]);
        }
        uint64_t want = on ? (uint64_t)(K - 1) * (uint64_t)(c - 1) : 0;
        if (all && copied(&p) == want)
            t = (double)(t1 - t0) / 1e9;
        else
            fprintf(stderr, "bench_prefix: multiple choice (%s): all ended %d, copied %llu of "
                    "%llu\n", on ? "copy" : "cold", all, (unsigned long long)copied(&p),
                    (unsigned long long)want);
        pool_stop(&p);
    }
    for (int k = 0; k < K; k++)
        free(ids[k]);
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Warm-up, then reps pairs (off, on); prints one row and the summary line. */
static bool scenario(const struct opts *o, double (*run)(const struct opts *, bool),
                     const char *label, const char *what)
{
    double off[MAX_REPS], on[MAX_REPS], ratio[MAX_REPS];
    if (run(o, true) < 0)   /* warm-up: the file's pages, the allocator */
        return false;
    for (int i = 0; i < o->reps; i++) {
        off[i] = run(o, false);
        on[i] = run(o, true);
        if (off[i] < 0 || on[i] < 0)
            return false;
        ratio[i] = off[i] / on[i];
    }
    double r = median(ratio, o->reps), m_off = median(off, o->reps), m_on = median(on, o->reps);
    printf("%-52s %9.3f s %9.3f s %7.2fx\n", label, m_off, m_on, r);
    fflush(stdout);
    char b[32], f[32];
    snprintf(b, sizeof(b), "%.3f s", m_off);
    snprintf(f, sizeof(f), "%.3f s", m_on);
    bench_summary("prefix", what, b, f, r);
    return true;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_prefix MODEL.gguf [shared (1024)] [context (512)] [reps (3)]"
                    " [threads (2)]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct opts o = { argc > 1 ? argv[1] : NULL, 1024, 512, 3, 2 };
    if (argc > 2) o.shared = atoi(argv[2]);
    if (argc > 3) o.context = atoi(argv[3]);
    if (argc > 4) o.reps = atoi(argv[4]);
    if (argc > 5) o.threads = atoi(argv[5]);
    if (!o.model || argc > 6 || o.shared < 64 || o.context < 64 || o.reps < 1 ||
        o.reps > MAX_REPS || o.threads < 0)
        return usage();
    st_log_set_level(ST_LOG_ERROR);   /* the chat template warning, once per pool */
    printf("%s: %d threads, ubatch 512, median of %d (cold, copy) pairs after a warm-up\n",
           o.model, (int)o.threads, (int)o.reps);
    printf("%-52s %11s %11s %8s\n", "", "cold read", "copy", "ratio");
    char label[96], what[128];
    snprintf(label, sizeof(label), "1. 2nd request, %d shared tokens, other slot: TTFT",
             (int)o.shared);
    snprintf(what, sizeof(what), "TTFT, 2nd request, %d-token prefix in another slot: cold "
             "read vs copy", (int)o.shared);
    if (!scenario(&o, another_slot, label, what))
        return 1;
    snprintf(label, sizeof(label), "2. 4-answer choice, %d-token context, 4 slots: all",
             (int)o.context);
    snprintf(what, sizeof(what), "4-answer multiple choice, %d-token context, 4 slots, scored: "
             "cold vs copy", (int)o.context);
    if (!scenario(&o, multiple_choice, label, what))
        return 1;
    return 0;
}
