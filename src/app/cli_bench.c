/* cli_bench.c -- `strata bench`: prompt and decode throughput of a model on
 * the CPU engine (or GPU N with --backend cuda --gpu N), reported the way llama-bench reports it
 * (src/app/cli.h).
 *
 * Tests, each repeated -r times after one untimed warm-up run:
 *   pp<P> at np N: N prompts of P tokens (one per slot, from position 0)
 *                  in one forward (chunked by the engine's ubatch + N rows),
 *                  logits for each prompt's last row: N*P tokens.
 *   tg<G> at np N: G steps of N rows (one per slot) from position 0, with
 *                  logits for every row: N*G tokens.
 * Each run times the forward calls only (wall clock) and gives tokens / s;
 * the mean and standard deviation are over the runs, as llama-bench's
 * avg_ts and stddev_ts. With -d D (llama-bench's -d) each slot first
 * holds D tokens of context, read once per test and untimed, and the
 * timed tokens go at positions D, D+1, ...: their attention reads the D
 * positions before them (a run rewrites only positions from D on, so the
 * context stays valid across the repetitions). Like llama-bench, the tokens are random ids and
 * nothing is sampled. np 1 always runs; -np N > 1 adds the same tests at N.
 *
 * With --mtp (--ngram) the command is cli_bench_mtp.c's instead: greedy
 * decode through the engine with and without MTP (n-gram) drafting.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "app/cli.h"
#include "runner/runner_model.h"
#include "strata/clock.h"
#include "strata/forward.h"
#include "strata/log.h"

#define MAX_REPS 100

struct bench_opts {
    const char *model;
    const char *backend;    /* "cpu" or "cuda" */
    int32_t n_prompt, n_gen, threads, reps, np, gpu, depth;
    bool json;
    struct st_model_config rope;   /* only the rope fields (--rope-scaling etc.) and the
                                    * KV cache types (-ctk, -ctv) */
};

struct result {
    int32_t np, n_prompt, n_gen, depth;
    double  ts[MAX_REPS];    /* tokens per second of each run */
    double  ns[MAX_REPS];    /* ns of each run */
    double  avg_ts, sd_ts, avg_ns, sd_ns;
};

static int usage(FILE *f)
{
    fputs("usage: strata bench -m FILE [-p 128] [-n 64] [-t THREADS] [-r 3] [-np N]"
          " [-d N] [-o md|json] [--backend cpu|cuda] [--gpu N]\n"
          "  Prompt (pp) and decode (tg) tokens per second of FILE on the CPU (or CUDA)\n"
          "  engine, at one slot and, with -np N > 1, at N slots together.\n"
          "  -p N     prompt tokens per slot (default 128; 0 = skip)\n"
          "  -n N     generated tokens per slot (default 64; 0 = skip)\n"
          "  -t N     CPU threads (default: all cores)\n"
          "  -r N     repetitions (default 3)\n"
          "  -np N    also run with N slots together (default 1 = only one slot)\n"
          "  -d N     context depth: each slot first holds N tokens (untimed), as\n"
          "           llama-bench -d; the pp and tg tokens come after them\n"
          "  -o FMT   md (default, a llama-bench style table) or json\n"
          "  --backend B  cpu (default) or cuda\n"
          "  --gpu N  the GPU for --backend cuda (default 0)\n"
          "  -ctk T, -ctv T  KV cache types of keys and values: f16 (default), q8_0,\n"
          "           f32 or bf16 (f32, bf16: cpu backend)\n"
          "           (as llama-bench; the table adds type_k / type_v columns)\n"
          "  --rope-scaling none|linear|yarn, --rope-scale N, --yarn-orig-ctx N\n"
          "           rope scaling past the trained context, as strata serve\n"
          "  strata bench --mtp [-m FILE] ...: decode with and without MTP drafting\n"
          "           (strata bench --mtp -h for its options)\n"
          "  strata bench --ngram [-m FILE] ...: decode with and without n-gram drafts\n"
          "           on repetitive prompts (strata bench --ngram -h for its options)\n", f);
    return f == stdout ? 0 : 2;   /* --help asked for it: not an error */
}

static bool parse(int argc, char **argv, struct bench_opts *o)
{
    *o = (struct bench_opts){ .backend = "cpu", .n_prompt = 128, .n_gen = 64, .reps = 3,
                              .np = 1 };
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        bool ok = true;
        if (!strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "-p")) ok = st_cli_int_arg(v, 0, 1 << 20, &o->n_prompt);
        else if (!strcmp(a, "-n")) ok = st_cli_int_arg(v, 0, 1 << 20, &o->n_gen);
        else if (!strcmp(a, "-t")) ok = st_cli_int_arg(v, 0, 1024, &o->threads);
        else if (!strcmp(a, "-r")) ok = st_cli_int_arg(v, 1, MAX_REPS, &o->reps);
        else if (!strcmp(a, "-np")) ok = st_cli_int_arg(v, 1, 256, &o->np);
        else if (!strcmp(a, "-d")) ok = st_cli_int_arg(v, 0, 1 << 22, &o->depth);
        else if (!strcmp(a, "--backend")) ok = st_cli_backend_arg(v, &o->backend);
        else if (!strcmp(a, "--gpu")) ok = st_cli_int_arg(v, 0, 255, &o->gpu);
        else if (!strcmp(a, "-o") && (!strcmp(v, "md") || !strcmp(v, "json")))
            o->json = !strcmp(v, "json");
        else if (st_cli_kv_type_arg(a, v, &o->rope.cache_type_k, &o->rope.cache_type_v, &ok))
            ;
        else if (!st_cli_rope_arg(a, v, &o->rope, &ok)) ok = false;
        if (!ok)
            return false;
    }
    return o->model && (argc % 2) == 1;
}

/* ---- running the tests ------------------------------------------------- */

struct rows {
    int32_t *tok, *slot;
    int64_t *pos, *out;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static int32_t rand_token(int64_t n_vocab)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int32_t)(rng % (uint64_t)n_vocab);
}

/* np prompts of n tokens from position 'at' in one forward; false on error. */
static bool read_prompts(struct st_model *m, struct rows *r, int32_t np, int32_t n, int32_t at,
                         struct st_err *err)
{
    int64_t nv = st_model_hparams(m)->n_vocab, k = 0;
    const float *lg;
    for (int32_t s = 0; s < np; s++) {
        for (int32_t i = 0; i < n; i++, k++) {
            r->tok[k] = rand_token(nv);
            r->slot[k] = s;
            r->pos[k] = at + i;
        }
        r->out[s] = k - 1;
    }
    struct st_model_batch b = { k, r->tok, r->slot, r->pos, np, r->out };
    return st_model_forward(m, &b, &lg, err) == ST_OK;
}

/* One timed run of test (np, n_prompt, n_gen) after 'depth' positions of
 * context; returns ns or -1. */
static double run_once(struct st_model *m, struct rows *r, int32_t np, int32_t n_prompt,
                       int32_t n_gen, int32_t depth, struct st_err *err)
{
    int64_t nv = st_model_hparams(m)->n_vocab, n = 0;
    int64_t t0 = st_clock_now(st_clock_real());
    const float *lg;
    for (int32_t s = 0; s < np && n_prompt > 0; s++) {
        for (int32_t i = 0; i < n_prompt; i++, n++) {
            r->tok[n] = rand_token(nv);
            r->slot[n] = s;
            r->pos[n] = depth + i;
        }
        r->out[s] = n - 1;
    }
    if (n_prompt > 0) {
        struct st_model_batch b = { n, r->tok, r->slot, r->pos, np, r->out };
        if (st_model_forward(m, &b, &lg, err) != ST_OK)
            return -1;
    }
    for (int32_t g = 0; g < n_gen; g++) {
        for (int32_t s = 0; s < np; s++) {
            r->tok[s] = rand_token(nv);
            r->slot[s] = s;
            r->pos[s] = depth + g;
            r->out[s] = s;
        }
        struct st_model_batch b = { np, r->tok, r->slot, r->pos, np, r->out };
        if (st_model_forward(m, &b, &lg, err) != ST_OK)
            return -1;
    }
    return (double)(st_clock_now(st_clock_real()) - t0);
}

static bool run_test(struct st_model *m, struct rows *r, const struct bench_opts *o,
                     struct result *res, struct st_err *err)
{
    double tokens = (double)res->np * (res->n_prompt + res->n_gen);
    if (res->depth > 0 && !read_prompts(m, r, res->np, res->depth, 0, err))   /* context */
        return false;
    if (run_once(m, r, res->np, res->n_prompt ? ST_MIN(res->n_prompt, 16) : 0,
                 res->n_gen ? 2 : 0, res->depth, err) < 0)   /* warm-up */
        return false;
    for (int i = 0; i < o->reps; i++) {
        res->ns[i] = run_once(m, r, res->np, res->n_prompt, res->n_gen, res->depth, err);
        if (res->ns[i] < 0)
            return false;
        res->ts[i] = tokens / (res->ns[i] / 1e9);
    }
    st_cli_mean_sd(res->ts, o->reps, &res->avg_ts, &res->sd_ts);
    st_cli_mean_sd(res->ns, o->reps, &res->avg_ns, &res->sd_ns);
    return true;
}

/* ---- output ------------------------------------------------------------ */

struct model_info {
    char   type[96];      /* "qwen3moe 4.1M Q8_0" */
    double size_bytes;    /* all tensors */
    double n_params;      /* all tensors */
    int    threads;
    const char *backend;  /* "CPU" or "CUDA" (llama-bench's names) */
};

static const char *ftype_name(int64_t ft)
{
    static const struct { int64_t id; const char *name; } names[] = {
        { 0, "all F32" }, { 1, "F16" }, { 2, "Q4_0" }, { 3, "Q4_1" }, { 7, "Q8_0" },
        { 8, "Q5_0" }, { 9, "Q5_1" }, { 10, "Q2_K - Medium" }, { 11, "Q3_K - Small" },
        { 12, "Q3_K - Medium" }, { 13, "Q3_K - Large" }, { 14, "Q4_K - Small" },
        { 15, "Q4_K - Medium" }, { 16, "Q5_K - Small" }, { 17, "Q5_K - Medium" },
        { 18, "Q6_K" }, { 21, "Q2_K - Small" }, { 23, "IQ3_XXS - 3.0625 bpw" },
        { 26, "IQ3_S - 3.4375 bpw" }, { 30, "IQ4_XS - 4.25 bpw" }, { 32, "BF16" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(names); i++)
        if (names[i].id == ft)
            return names[i].name;
    return "?";
}

static void model_info(const struct st_model *m, const struct bench_opts *o,
                       struct model_info *mi)
{
    int threads = o->threads;
    mi->backend = strcmp(o->backend, "cuda") ? "CPU" : "CUDA";
    const struct st_gguf *g = st_model_gguf(m);
    mi->size_bytes = mi->n_params = 0;
    for (int64_t i = 0; i < st_gguf_n_tensors(g); i++) {
        const struct st_gguf_tensor *t = st_gguf_tensor(g, i);
        mi->size_bytes += (double)t->nbytes;
        mi->n_params += (double)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    }
    int64_t ft = -1;
    const struct st_gguf_kv *kv = st_gguf_find_kv(g, "general.file_type");
    if (kv)
        (void)st_gguf_kv_i64(kv, &ft);
    double p = mi->n_params;
    snprintf(mi->type, sizeof(mi->type), "%s %.*f%s %s", st_model_hparams(m)->arch_name,
             p >= 1e9 ? 1 : 0, p >= 1e9 ? p / 1e9 : p / 1e6, p >= 1e9 ? "B" : "M",
             ftype_name(ft));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    mi->threads = threads > 0 ? threads : (int)(cores > 0 ? cores : 1);
}

/* llama-bench shows the KV cache types only when they are not f16. */
static bool kv_cols(const struct bench_opts *o)
{
    return o->rope.cache_type_k != ST_KV_F16 || o->rope.cache_type_v != ST_KV_F16;
}

static void print_md_header(const struct bench_opts *o)
{
    printf("| %-30s | %10s | %10s | %-7s | %7s | %3s |", "model", "size", "params", "backend",
           "threads", "np");
    if (kv_cols(o))
        printf(" %6s | %6s |", "type_k", "type_v");
    printf(" %12s | %20s |\n", "test", "t/s");
    printf("| ------------------------------ | ---------: | ---------: | ------- | ------: | --: |");
    if (kv_cols(o))
        printf(" -----: | -----: |");
    printf(" -----------: | -------------------: |\n");
}

static void print_md_row(const struct bench_opts *o, const struct model_info *mi,
                         const struct result *r)
{
    char test[32], ts[48];
    if (r->n_prompt > 0)
        snprintf(test, sizeof(test), "pp%d", (int)r->n_prompt);
    else
        snprintf(test, sizeof(test), "tg%d", (int)r->n_gen);
    if (r->depth > 0) {   /* llama-bench's "pp512 @ d4096" */
        size_t at = strlen(test);
        snprintf(test + at, sizeof(test) - at, " @ d%d", (int)r->depth);
    }
    snprintf(ts, sizeof(ts), "%.2f ± %.2f", r->avg_ts, r->sd_ts);
    printf("| %-30s | %6.2f MiB | %8.2f M | %-7s | %7d | %3d |", mi->type,
           mi->size_bytes / (1024.0 * 1024.0), mi->n_params / 1e6, mi->backend, mi->threads,
           (int)r->np);
    if (kv_cols(o))
        printf(" %6s | %6s |", st_kv_type_name(o->rope.cache_type_k),
               st_kv_type_name(o->rope.cache_type_v));
    printf(" %12s | %20s |\n", test, ts);
}

static cJSON *json_row(const struct bench_opts *o, const struct model_info *mi,
                       const struct result *r, const char *time_s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model_filename", o->model);
    cJSON_AddStringToObject(j, "model_type", mi->type);
    cJSON_AddNumberToObject(j, "model_size", mi->size_bytes);
    cJSON_AddNumberToObject(j, "model_n_params", mi->n_params);
    cJSON_AddStringToObject(j, "backends", mi->backend);
    cJSON_AddNumberToObject(j, "n_threads", mi->threads);
    cJSON_AddNumberToObject(j, "n_parallel", r->np);
    cJSON_AddNumberToObject(j, "n_prompt", r->n_prompt);
    cJSON_AddNumberToObject(j, "n_gen", r->n_gen);
    cJSON_AddNumberToObject(j, "n_depth", r->depth);
    cJSON_AddStringToObject(j, "type_k", st_kv_type_name(o->rope.cache_type_k));
    cJSON_AddStringToObject(j, "type_v", st_kv_type_name(o->rope.cache_type_v));
    cJSON_AddStringToObject(j, "test_time", time_s);
    cJSON_AddNumberToObject(j, "avg_ns", round(r->avg_ns));
    cJSON_AddNumberToObject(j, "stddev_ns", round(r->sd_ns));
    cJSON_AddNumberToObject(j, "avg_ts", r->avg_ts);
    cJSON_AddNumberToObject(j, "stddev_ts", r->sd_ts);
    cJSON_AddItemToObject(j, "samples_ns", cJSON_CreateDoubleArray(r->ns, o->reps));
    cJSON_AddItemToObject(j, "samples_ts", cJSON_CreateDoubleArray(r->ts, o->reps));
    return j;
}

/* ---- main -------------------------------------------------------------- */

static struct st_model *open_model(const struct bench_opts *o, enum st_status *rc,
                                   struct st_err *err)
{
    struct st_model *m = NULL;
    if ((*rc = st_model_open(o->model, &m, err)) != ST_OK)
        return NULL;
    struct st_rope_override ov = st_model_config_rope(&o->rope);
    if ((*rc = st_model_set_rope(m, &ov, err)) != ST_OK) {
        st_model_free(m);
        return NULL;
    }
    int64_t need = (int64_t)o->depth + ST_MAX(o->n_prompt, 0) + ST_MAX(o->n_gen, 0);
    struct st_model_params p = { .backend = o->backend, .device = o->gpu,
                                 .n_threads = o->threads, .n_slots = o->np,
                                 .n_ctx = ST_MAX(need, 16), .max_out = o->np,
                                 .type_k = o->rope.cache_type_k,
                                 .type_v = o->rope.cache_type_v };
    if ((*rc = st_model_load(m, &p, NULL, NULL, err)) != ST_OK) {
        st_model_free(m);
        return NULL;
    }
    return m;
}

static int run_all(struct st_model *m, const struct bench_opts *o, struct rows *r)
{
    struct model_info mi;
    model_info(m, o, &mi);
    char when[32];
    time_t now = time(NULL);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    cJSON *arr = cJSON_CreateArray();
    struct st_err err = { 0 };
    int32_t nps[2] = { 1, o->np };
    if (!o->json)
        print_md_header(o);
    for (int k = 0; k < (o->np > 1 ? 2 : 1); k++) {
        for (int t = 0; t < 2; t++) {
            struct result res = { .np = nps[k], .n_prompt = t == 0 ? o->n_prompt : 0,
                                  .n_gen = t == 1 ? o->n_gen : 0, .depth = o->depth };
            if (res.n_prompt + res.n_gen == 0)
                continue;
            if (!run_test(m, r, o, &res, &err)) {
                fprintf(stderr, "strata bench: %s\n", err.msg);
                cJSON_Delete(arr);
                return 1;
            }
            if (o->json)
                cJSON_AddItemToArray(arr, json_row(o, &mi, &res, when));
            else
                print_md_row(o, &mi, &res);
            fflush(stdout);
        }
    }
    if (o->json) {
        char *s = cJSON_Print(arr);
        printf("%s\n", s ? s : "[]");
        free(s);
    }
    cJSON_Delete(arr);
    return 0;
}

int st_cli_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--mtp"))
            return st_cli_bench_mtp(argc, argv);
        else if (!strcmp(argv[i], "--ngram"))
            return st_cli_bench_ngram(argc, argv);
    struct bench_opts o;
    if (st_cli_wants_help(argc, argv))
        return usage(stdout);
    if (!parse(argc, argv, &o))
        return usage(stderr);
    struct st_err err = { 0 };
    enum st_status orc = ST_OK;
    struct st_model *m = open_model(&o, &orc, &err);
    if (!m) {
        fprintf(stderr, "strata bench: %s\n", err.msg);
        return st_cli_bench_fail_status(orc);
    }
    size_t rows = (size_t)o.np * (size_t)ST_MAX(ST_MAX(o.n_prompt, o.depth), 1);
    struct rows r = { malloc(rows * sizeof(int32_t)), malloc(rows * sizeof(int32_t)),
                      malloc(rows * sizeof(int64_t)), malloc((size_t)o.np * sizeof(int64_t)) };
    int rc = 1;
    if (r.tok && r.slot && r.pos && r.out)
        rc = run_all(m, &o, &r);
    else
        fprintf(stderr, "strata bench: out of memory\n");
    free(r.tok);
    free(r.slot);
    free(r.pos);
    free(r.out);
    st_model_free(m);
    return rc;
}
