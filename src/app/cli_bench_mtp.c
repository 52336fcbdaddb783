/* cli_bench_mtp.c -- `strata bench --mtp` and `strata bench --ngram`:
 * decode throughput with and without drafts (MTP: docs/ENGINE.md "MTP";
 * n-gram: "N-gram drafts"), through the real engine.
 *
 * Unlike the pp/tg tests of cli_bench.c (random tokens into the model),
 * MTP needs real greedy decoding: acceptance depends on what the model
 * generates. So each run builds what the server builds minus HTTP (a
 * scheduler, a pool of one CPU engine with -np slots, --batch-mtp on or
 * off), submits -np greedy requests of -n tokens each (ignore_eos, so
 * every run has the same length) and steps the engine on this thread.
 * Decode tokens/s is counted over the window in which every request is
 * decoding (from the last first token to the first end), so prompt reads
 * do not dilute it. Each repetition runs without and with MTP back to
 * back; the speedup is the median of those pairs' ratios (robust to a
 * shared machine's load). The MTP run also reports the drafts verified
 * per run, the acceptance rate (accepted / drafted) and the mean accepted
 * length per verify step (1 + accepted / steps), from the pool's counters.
 *
 * Without -m it writes two synthetic models into a temporary directory
 * and runs both: mtp-demo (an MTP block that agrees with the model on
 * purpose: the mechanism's upside) and small --mtp (random MTP weights:
 * drafts almost never accepted, the mechanism's cost). --preset NAME
 * writes and runs that preset alone (Q8_0, with its MTP block):
 * next-mtp-demo is mtp-demo for the Next family (qwen35moe), whose
 * rejections also restore the recurrent state (runner_rollback.c).
 *
 * --ngram is the same measurement with --spec ngram instead of
 * --batch-mtp, on prompts that repeat themselves (code with near-copies,
 * a JSON list, a quoted passage, a numbered sequence: what prompt lookup is
 * for); without -m it runs the small preset. The acceptance then depends
 * on how much the model's greedy text repeats itself and its prompt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "engine/draft/spec_cost.h"
#include "engine/pool.h"
#include "strata/log.h"
#include "strata/make_model.h"
#include "strata/sched.h"

#define MAX_GEN 4096
#define MAX_NP 16
#define MAX_REPS 20

struct mb_opts {
    const char *model;
    const char *preset;    /* --preset: make-model's, written to a temporary file */
    const char *backend;   /* "cpu" or "cuda" */
    bool ngram;            /* --ngram: n-gram drafts, not MTP */
    bool verbose;          /* -v: what each run's cost model learned */
    int32_t n_gen, np, threads, draft, reps, gpu;
    int32_t ngram_min, ngram_max;
};

/* Token times of one request (real clock, ns). */
struct mb_req {
    int64_t *t;
    int32_t  n;
    bool     ended, failed;
};

struct mb_run {
    double  tps;                       /* decode tokens per second */
    uint64_t drafted, accepted, steps;
};

static int usage(FILE *f)
{
    fputs("usage: strata bench --mtp [-m FILE | --preset NAME] [-n 128] [-np 1] [--mtp-draft 3]\n"
          "                      [-t THREADS] [-r 3] [--backend cpu|cuda] [--gpu N]\n"
          "  Decode tokens/s without and with MTP drafting (--batch-mtp) through the engine,\n"
          "  greedy, and the draft acceptance. Without -m: on the mtp-demo preset (drafts that\n"
          "  agree by construction) and on small --mtp (random MTP weights).\n"
          "  --preset NAME a make-model preset instead (q8_0, with its MTP block), e.g.\n"
          "                next-mtp-demo: mtp-demo for qwen35moe (the Next family)\n"
          "  -n N          tokens generated per request (default 128)\n"
          "  -np N         requests decoding together, one per slot (default 1)\n"
          "  --mtp-draft K most draft tokens per slot and step, 1..4 (default 3)\n"
          "  -t N          CPU threads (default: all cores)\n"
          "  -r N          repetitions (default 3)\n"
          "  -v            print what each run's draft cost model learned\n"
          "  --backend B   cpu (default) or cuda; --gpu N: the GPU for cuda (default 0)\n", f);
    return f == stdout ? 0 : 2;   /* --help asked for it: not an error */
}

static int usage_ngram(FILE *f)
{
    fputs("usage: strata bench --ngram [-m FILE] [-n 128] [-np 1] [--spec-draft 8]\n"
          "                        [--spec-ngram-min 2] [--spec-ngram-max 4] [-t THREADS] [-r 3]\n"
          "                        [--backend cpu|cuda] [--gpu N]\n"
          "  Decode tokens/s without and with n-gram drafts (--spec ngram) through the engine,\n"
          "  greedy, on prompts that repeat themselves, and the draft acceptance. Without -m:\n"
          "  on the small preset.\n"
          "  -n N               tokens generated per request (default 128)\n"
          "  -np N              requests decoding together, one per slot (default 1)\n"
          "  --spec-draft K     most draft tokens per slot and step, 1..16 (default 8)\n"
          "  --spec-ngram-min N, --spec-ngram-max N  n-gram lengths, 1..8 (default 2, 4)\n"
          "  -t N               CPU threads (default: all cores)\n"
          "  -r N               repetitions (default 3)\n"
          "  -v                 print what each run's draft cost model learned\n"
          "  --backend B        cpu (default) or cuda; --gpu N: the GPU for cuda (default 0)\n", f);
    return f == stdout ? 0 : 2;   /* --help asked for it: not an error */
}

/* One option of the --ngram form (a the flag, v its value); false when a
 * is none of them or v is bad. */
static bool parse_ngram_opt(const char *a, const char *v, struct mb_opts *o)
{
    if (!strcmp(a, "--spec-draft"))
        return st_cli_int_arg(v, 1, ST_SPEC_MAX_DRAFT, &o->draft);
    if (!strcmp(a, "--spec-ngram-min"))
        return st_cli_int_arg(v, 1, ST_NGRAM_MAX_N, &o->ngram_min);
    if (!strcmp(a, "--spec-ngram-max"))
        return st_cli_int_arg(v, 1, ST_NGRAM_MAX_N, &o->ngram_max);
    return false;
}

static bool parse(int argc, char **argv, bool ngram, struct mb_opts *o)
{
    *o = (struct mb_opts){ .backend = "cpu", .ngram = ngram, .n_gen = 128, .np = 1,
                           .draft = ngram ? 8 : 3, .reps = 3, .ngram_min = 2, .ngram_max = 4 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(a, ngram ? "--ngram" : "--mtp"))
            continue;
        if (!strcmp(a, "-v")) {
            o->verbose = true;
            st_log_set_level(ST_LOG_DEBUG);   /* the engine's "drafts (do not) pay" lines */
            continue;
        }
        if (!v)
            return false;
        if (!strcmp(a, "-m")) o->model = v;
        else if (!ngram && !strcmp(a, "--preset")) o->preset = v;
        else if (!strcmp(a, "-n")) ok = st_cli_int_arg(v, 8, MAX_GEN, &o->n_gen);
        else if (!strcmp(a, "-np")) ok = st_cli_int_arg(v, 1, MAX_NP, &o->np);
        else if (ngram && !strncmp(a, "--spec-", 7)) ok = parse_ngram_opt(a, v, o);
        else if (!ngram && !strcmp(a, "--mtp-draft"))
            ok = st_cli_int_arg(v, 1, ST_RUNNER_MAX_DRAFT, &o->draft);
        else if (!strcmp(a, "-t")) ok = st_cli_int_arg(v, 0, 1024, &o->threads);
        else if (!strcmp(a, "-r")) ok = st_cli_int_arg(v, 1, MAX_REPS, &o->reps);
        else if (!strcmp(a, "--backend")) ok = st_cli_backend_arg(v, &o->backend);
        else if (!strcmp(a, "--gpu")) ok = st_cli_int_arg(v, 0, 255, &o->gpu);
        else ok = false;
        if (!ok)
            return false;
        i++;
    }
    return o->ngram_min <= o->ngram_max && !(o->model && o->preset);
}

static void on_event(void *ctx, const struct st_event *ev)
{
    struct mb_req *r = ctx;
    if (ev->kind == ST_EVENT_END) {
        r->ended = true;
        r->failed = ev->finish == ST_FINISH_ERROR;
        return;
    }
    if (r->n < MAX_GEN)
        r->t[r->n++] = st_clock_now(st_clock_real());
}

static const char *const prompts[MAX_NP] = {
    "The quick brown fox", "Once upon a time", "In the beginning", "It was a dark night",
    "Call me Ishmael", "All happy families", "It is a truth", "Happy birthday to you",
    "To be or not to be", "Four score and seven", "We hold these truths", "I have a dream",
    "Ask not what", "The only thing", "Space, the final", "A long time ago",
};

/* --ngram: text that repeats itself, as a coding agent rewriting a file, a
 * summary quoting its input or JSON echoing keys give. */
static const char *const repeat_prompts[4] = {
    "def area(w, h):\n    return w * h\n\ndef volume(w, h, d):\n    return w * h * d\n\n"
    "Rewrite the code above with type hints:\n\ndef area(w, h):\n    return w * h\n\n"
    "def volume(w, h, d):\n",
    "[{\"id\": 1, \"name\": \"alpha\", \"tags\": [\"a\", \"b\"]}, {\"id\": 2, \"name\": "
    "\"beta\", \"tags\": [\"a\", \"b\"]}, {\"id\": 3, \"name\": \"gamma\", \"tags\": [",
    "The quick brown fox jumps over the lazy dog. Summary: the quick brown fox jumps over "
    "the lazy dog. Quote it again: the quick brown fox jumps over",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5,",
};

static bool submit_all(struct st_engine_pool *p, const struct mb_opts *o, struct mb_req *rq)
{
    for (int32_t i = 0; i < o->np; i++) {
        struct st_request *req = st_request_new();
        struct st_err err = { 0 };
        if (!req)
            return false;
        snprintf(req->id, sizeof(req->id), "bench-%d", (int)i);
        req->prompt = strdup(o->ngram ? repeat_prompts[i % 4] : prompts[i]);
        req->params.max_tokens = o->n_gen;
        req->params.temperature = 0.0f;
        req->params.ignore_eos = true;
        req->emit = on_event;
        req->emit_ctx = &rq[i];
        enum st_status rc = req->prompt ? st_engine_pool_submit(p, req, &err) : ST_ERR_NOMEM;
        st_request_unref(req);
        if (rc != ST_OK) {
            fprintf(stderr, "strata bench: %s\n", err.msg[0] ? err.msg : st_status_msg(rc));
            return false;
        }
    }
    return true;
}

/* Tokens emitted in the window where every request decodes, per second. */
static double window_tps(const struct mb_req *rq, int32_t np)
{
    int64_t t0 = INT64_MIN, t1 = INT64_MAX, n = 0;
    for (int32_t i = 0; i < np; i++) {
        t0 = ST_MAX(t0, rq[i].t[0]);
        t1 = ST_MIN(t1, rq[i].t[rq[i].n - 1]);
    }
    for (int32_t i = 0; i < np; i++)
        for (int32_t k = 0; k < rq[i].n; k++)
            n += rq[i].t[k] > t0 && rq[i].t[k] <= t1;
    return t1 > t0 ? (double)n / ((double)(t1 - t0) / 1e9) : 0.0;
}

/* -v: the step times by rows the engine measured (ms, samples), what it
 * prices a draft call at, and the steps where drafting did not pay. */
static void print_cost(const struct st_engine *e)
{
    const struct st_spec_cost *c = &e->spec.cost;
    for (int32_t k = 0; k < ST_SPEC_CURVES; k++) {
        fprintf(stderr, "cost model, %s steps, rows:ms(samples):", k ? "full" : "lean");
        for (int32_t r = 1; r <= ST_SPEC_COST_ROWS; r++)
            if (c->curve[k].n[r] > 0)
                fprintf(stderr, " %d:%.3f(%d)", (int)r, c->curve[k].ns[r] / 1e6,
                        (int)c->curve[k].n[r]);
        fputc('\n', stderr);
    }
    fprintf(stderr, "draft 1 slot x 1 pass %.3f ms, 4 x 1 %.3f ms; plain steps %llu\n",
            st_spec_cost_draft_ns(c, 1, 1) / 1e6, st_spec_cost_draft_ns(c, 1, 4) / 1e6,
            (unsigned long long)e->spec.plain_steps);
}

/* One run; 'on': with drafts (MTP, or n-gram with --ngram). */
static bool run_once(const struct mb_opts *o, const char *path, bool on, struct mb_run *out)
{
    struct st_sched_config sc;
    struct st_pool_config pc;
    struct st_sched *s = NULL;
    struct st_engine_pool *p = NULL;
    struct st_err err = { 0 };
    struct mb_req rq[MAX_NP] = { 0 };
    bool ok = false;
    st_sched_config_defaults(&sc);
    sc.batch = true;   /* --batch: the -np requests decode together */
    sc.log_dispatch = false;
    st_pool_config_defaults(&pc);
    pc.model.name = (char *)"bench";
    pc.model.path = (char *)path;
    pc.model.backend = strcmp(o->backend, "cuda") ? ST_BACKEND_CPU : ST_BACKEND_CUDA;
    pc.gpus[0] = strcmp(o->backend, "cuda") ? -1 : o->gpu;
    pc.model.parallel = o->np;
    pc.model.ctx_size = o->n_gen + (o->ngram ? 256 : 64);   /* prompt + the tokens + room */
    pc.threads = o->threads;
    pc.mtp = on && !o->ngram;
    pc.mtp_draft = o->ngram ? 1 : o->draft;
    pc.ngram = on && o->ngram;
    pc.spec_draft = o->ngram ? o->draft : pc.spec_draft;
    pc.ngram_min = o->ngram_min;
    pc.ngram_max = o->ngram_max;
    for (int32_t i = 0; i < o->np; i++)
        rq[i].t = malloc(MAX_GEN * sizeof(int64_t));
    if (st_sched_new(&sc, st_clock_real(), &s, &err) == ST_OK &&
        st_engine_pool_new(&pc, s, st_clock_real(), &p, &err) == ST_OK) {
        (void)st_engine_pool_step(p, 0);   /* loads the model */
        struct st_model_status ms;
        if (st_engine_pool_model_status(p, 0, &ms) && ms.state == ST_MODEL_FAILED)
            fprintf(stderr, "strata bench: the model did not load: %s\n", ms.reason);
        ok = st_engine_pool_ready(p) && ms.state != ST_MODEL_FAILED && submit_all(p, o, rq);
        while (ok && st_engine_pool_step(p, 0))
            ;
        for (int32_t i = 0; ok && i < o->np; i++)
            ok = rq[i].ended && !rq[i].failed && rq[i].n >= 2;
        struct st_pool_stats ps;
        st_engine_pool_stats(p, &ps);
        if (on && o->verbose)
            print_cost(&p->engines[0]);
        *out = (struct mb_run){ ok ? window_tps(rq, o->np) : 0.0,
                                o->ngram ? ps.ngram_drafted : ps.mtp_drafted,
                                o->ngram ? ps.ngram_accepted : ps.mtp_accepted,
                                o->ngram ? ps.ngram_steps : ps.mtp_steps };
    } else {
        fprintf(stderr, "strata bench: %s\n", err.msg);
    }
    st_engine_pool_free(p);
    st_sched_free(s);
    for (int32_t i = 0; i < o->np; i++)
        free(rq[i].t);
    return ok;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of on[i] / off[i]: each repetition runs both back to back, so the
 * ratio of a pair cancels the slow drifts of a shared machine's load. */
static double paired_speedup(const double *off, const double *on, int n)
{
    double r[MAX_REPS];
    for (int i = 0; i < n; i++)
        r[i] = off[i] > 0 ? on[i] / off[i] : 0.0;
    qsort(r, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
}

/* Warm-up, then -r runs each way; one table row. */
static bool bench_model(const struct mb_opts *o, const char *path, const char *label)
{
    double off[MAX_REPS] = { 0 }, on[MAX_REPS] = { 0 }, a0, s0, a1, s1;
    struct mb_run r;
    uint64_t d = 0, a = 0, st = 0;
    if (!run_once(o, path, true, &r))
        return false;
    for (int i = 0; i < o->reps; i++) {
        if (!run_once(o, path, false, &r))
            return false;
        off[i] = r.tps;
        if (!run_once(o, path, true, &r))
            return false;
        on[i] = r.tps;
        d += r.drafted;
        a += r.accepted;
        st += r.steps;
    }
    st_cli_mean_sd(off, o->reps, &a0, &s0);
    st_cli_mean_sd(on, o->reps, &a1, &s1);
    char t0[32], t1[32];
    snprintf(t0, sizeof(t0), "%.2f ± %.2f", a0, s0);
    snprintf(t1, sizeof(t1), "%.2f ± %.2f", a1, s1);
    printf("| %-17s | %3d | %5d | %3d | %17s | %17s | %6.2fx | %7.1f | %8.1f%% | %8.2f |\n",
           label, (int)o->np, (int)o->n_gen, (int)o->draft, t0, t1,
           paired_speedup(off, on, o->reps), (double)d / o->reps,
           d ? 100.0 * (double)a / (double)d : 0.0, st ? 1.0 + (double)a / (double)st : 1.0);
    fflush(stdout);
    return true;
}

static void header(bool ngram)
{
    printf("| %-17s | %3s | %5s | %3s | %17s | %17s | %7s | %7s | %9s | %8s |\n", "model", "np",
           "n", "k", ngram ? "tg t/s, no drafts" : "tg t/s, no MTP",
           ngram ? "tg t/s, n-gram" : "tg t/s, MTP", "speedup", "drafted", "accepted", "mean len");
    printf("| ----------------- | --: | ----: | --: | ---------------: | ---------------: | "
           "------: | ------: | --------: | -------: |\n");
}

/* Write the presets into a fresh directory (caller removes it): 'one'
 * alone (--preset) into demo, else mtp-demo and small --mtp. */
static bool make_presets(const char *one, char *dir, size_t cap, char demo[512], char rnd[512])
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/strata-bench-mtp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return false;
    snprintf(demo, 512, "%s/%s.gguf", dir, one ? "preset" : "mtp-demo");
    snprintf(rnd, 512, "%s/small-mtp.gguf", dir);
    struct st_make_model_opts a = { .out_path = demo, .preset = one ? one : "mtp-demo",
                                    .seed = 1, .mtp = true };
    struct st_make_model_opts b = { .out_path = rnd, .preset = "small", .seed = 1, .mtp = true };
    struct st_err err = { 0 };
    if (st_make_model(&a, &err) != ST_OK || (!one && st_make_model(&b, &err) != ST_OK)) {
        fprintf(stderr, "strata bench: %s\n", err.msg);
        unlink(demo);
        rmdir(dir);
        return false;
    }
    return true;
}

int st_cli_bench_mtp(int argc, char **argv)
{
    struct mb_opts o;
    if (st_cli_wants_help(argc, argv))
        return usage(stdout);
    if (!parse(argc, argv, false, &o))
        return usage(stderr);
    if (o.model) {
        header(false);
        return bench_model(&o, o.model, "model") ? 0 : 1;
    }
    char dir[400], demo[512], rnd[512], label[64];
    if (!make_presets(o.preset, dir, sizeof(dir), demo, rnd))
        return 1;
    snprintf(label, sizeof(label), "%s q8_0", o.preset ? o.preset : "mtp-demo");
    header(false);
    bool ok = bench_model(&o, demo, label) &&
              (o.preset || bench_model(&o, rnd, "small q8_0 --mtp"));
    unlink(demo);
    unlink(rnd);
    rmdir(dir);
    return ok ? 0 : 1;
}

int st_cli_bench_ngram(int argc, char **argv)
{
    struct mb_opts o;
    if (st_cli_wants_help(argc, argv))
        return usage_ngram(stdout);
    if (!parse(argc, argv, true, &o))
        return usage_ngram(stderr);
    if (o.model) {
        header(true);
        return bench_model(&o, o.model, "model") ? 0 : 1;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[400], path[512];
    snprintf(dir, sizeof(dir), "%s/strata-bench-ngram-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/small.gguf", dir);
    struct st_make_model_opts m = { .out_path = path, .preset = "small", .seed = 1 };
    struct st_err err = { 0 };
    bool ok = st_make_model(&m, &err) == ST_OK;
    if (!ok)
        fprintf(stderr, "strata bench: %s\n", err.msg);
    if (ok) {
        header(true);
        ok = bench_model(&o, path, "small q8_0");
    }
    unlink(path);
    rmdir(dir);
    return ok ? 0 : 1;
}
