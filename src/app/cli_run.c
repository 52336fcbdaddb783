/* cli_run.c -- `strata run`: one-shot generation (src/app/cli.h).
 *
 * It builds what the server builds, minus HTTP: a scheduler on the real
 * clock, an engine pool of one CPU engine with one slot, one request with
 * the same generation parameters the OpenAI endpoints set; then it steps
 * the engine on this thread until the request ends. So sampling, stop
 * handling, detokenizing and the context limit are the server's own code,
 * and greedy output (--temp 0) is what the server gives for the same
 * prompt. With --chat the prompt is one user message rendered with the
 * model's chat template.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "app/cli.h"
#include "strata/default_model.h"
#include "strata/defaults.h"
#include "strata/engine.h"
#include "strata/gguf.h"
#include "strata/log.h"
#include "strata/sched.h"

struct run_opts {
    const char *model, *prompt;
    int32_t n_predict, threads, top_k;
    int64_t ctx;
    float temp, top_p, min_p;
    bool has_seed, chat, ignore_eos;
    uint64_t seed;
    struct st_model_config rope;   /* only the rope fields (--rope-scaling etc.) and the
                                    * KV cache types (-ctk, -ctv) */
};

/* What the request received, for the summary. */
struct run_out {
    bool ended;
    enum st_finish finish;
    enum st_status status;
    char error[256];
    int64_t n_prompt, n_generated, n_cached;
};

static int usage(FILE *f)
{
    fputs("usage: strata run [-m FILE] -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]\n"
          "                  [--min-p M] [--seed S] [-t THREADS] [-c CTX] [--chat] [--ignore-eos]\n"
          "  Generate a completion of PROMPT with the model in FILE (GGUF) on the CPU engine.\n"
          "  -m FILE       model (default: the cached make-model tiny model, whose text is noise)\n"
          "  -p PROMPT     prompt text (with --chat: the user message)\n"
          "  -n N          tokens to generate at most (default 128; -1 = until the end or the\n"
          "                context is full)\n"
          "  --temp T      temperature, 0 = greedy (default 0.8)\n"
          "  --top-k K     (default 40, 0 = off)   --top-p P (default 0.95)   --min-p M (0.05)\n"
          "  --seed S      sampler seed (default: random)\n"
          "  -t THREADS    CPU threads (default: all cores)\n"
          "  -c CTX        context size in tokens (default: the model's, at most 4096)\n"
          "  --chat        render PROMPT as a user message with the model's chat template\n"
          "  --ignore-eos  keep generating past end-of-generation tokens\n"
          "  --rope-scaling none|linear|yarn, --rope-scale N, --yarn-orig-ctx N\n"
          "                rope scaling past the trained context, as strata serve\n"
          "  -ctk T, -ctv T  KV cache types of keys and values: f16 (default), q8_0,\n"
          "                f32 or bf16, as strata serve\x27s\n", f);
    return f == stdout ? 0 : 2;   /* --help asked for it: not an error */
}

static bool num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

/* One option with a value; false for an unknown option or a bad value. */
static bool take(struct run_opts *o, const char *a, const char *v)
{
    double d;
    bool ok;
    if (st_cli_rope_arg(a, v, &o->rope, &ok) ||
        st_cli_kv_type_arg(a, v, &o->rope.cache_type_k, &o->rope.cache_type_v, &ok))
        return ok;
    if (!strcmp(a, "-m")) o->model = v;
    else if (!strcmp(a, "-p")) o->prompt = v;
    else if (!strcmp(a, "-n") && num(v, -1, 1e9, &d)) o->n_predict = (int32_t)d;
    else if (!strcmp(a, "-t") && num(v, 0, 1024, &d)) o->threads = (int32_t)d;
    else if (!strcmp(a, "-c") && num(v, 2, 1 << 24, &d)) o->ctx = (int64_t)d;
    else if (!strcmp(a, "--temp") && num(v, 0, 100, &d)) o->temp = (float)d;
    else if (!strcmp(a, "--top-k") && num(v, 0, 1e9, &d)) o->top_k = (int32_t)d;
    else if (!strcmp(a, "--top-p") && num(v, 0, 1, &d)) o->top_p = (float)d;
    else if (!strcmp(a, "--min-p") && num(v, 0, 1, &d)) o->min_p = (float)d;
    else if (!strcmp(a, "--seed") && num(v, 0, 1.8e19, &d)) {
        o->seed = (uint64_t)strtoull(v, NULL, 10);
        o->has_seed = true;
    } else
        return false;
    return true;
}

static bool parse(int argc, char **argv, struct run_opts *o)
{
    *o = (struct run_opts){ .n_predict = 128, .ctx = 0, .temp = ST_DEFAULT_TEMPERATURE,
                            .top_k = ST_DEFAULT_TOP_K, .top_p = ST_DEFAULT_TOP_P,
                            .min_p = ST_DEFAULT_MIN_P };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--chat"))
            o->chat = true;
        else if (!strcmp(argv[i], "--ignore-eos"))
            o->ignore_eos = true;
        else if (i + 1 >= argc || !take(o, argv[i], argv[i + 1]))
            return false;
        else
            i++;
    }
    return o->prompt != NULL;
}

static void on_event(void *ctx, const struct st_event *ev)
{
    struct run_out *o = ctx;
    if (ev->kind == ST_EVENT_TOKEN) {
        fwrite(ev->text, 1, ev->text_len, stdout);
        fflush(stdout);
        return;
    }
    o->finish = ev->finish;
    o->status = ev->status;
    snprintf(o->error, sizeof(o->error), "%s", ev->error ? ev->error : "");
    o->n_prompt = ev->n_prompt;
    o->n_generated = ev->n_generated;
    o->n_cached = ev->n_cached;
    o->ended = true;
}

/* The prompt text: as given, or one user message through the template. */
static char *render_prompt(struct st_engine_pool *p, const struct run_opts *o,
                           struct st_err *err)
{
    if (!o->chat)
        return strdup(o->prompt);
    struct st_chat_request req;
    st_chat_request_init(&req);
    cJSON *msg = cJSON_CreateObject();
    req.messages = cJSON_CreateArray();
    cJSON_AddStringToObject(msg, "role", "user");
    cJSON_AddStringToObject(msg, "content", o->prompt);
    cJSON_AddItemToArray(req.messages, msg);
    char *prompt = NULL;
    if (st_engine_pool_apply_template(p, 0, &req, ST_CHAT_END_GENERATE, &prompt, err) != ST_OK)
        prompt = NULL;
    st_chat_request_fini(&req);
    return prompt;
}

static struct st_request *make_request(const struct run_opts *o, char *prompt,
                                       struct run_out *out)
{
    struct st_request *req = st_request_new();
    if (!req)
        return NULL;
    snprintf(req->id, sizeof(req->id), "run-1");
    req->prompt = prompt;
    req->params.max_tokens = o->n_predict;
    req->params.temperature = o->temp;
    req->params.top_k = o->top_k;
    req->params.top_p = o->top_p;
    req->params.min_p = o->min_p;
    req->params.has_seed = o->has_seed;
    req->params.seed = o->seed;
    req->params.ignore_eos = o->ignore_eos;
    req->emit = on_event;
    req->emit_ctx = out;
    return req;
}

static void summary(const struct st_request *req, const struct run_out *out)
{
    double pp_s = (double)(req->first_token_ns - req->submit_ns) / 1e9;
    double tg_s = (double)(req->end_ns - req->first_token_ns) / 1e9;
    fprintf(stderr, "\n\nstrata run: %s; prompt %lld tokens in %.3f s (%.1f t/s), generated "
            "%lld tokens in %.3f s (%.1f t/s)\n", st_finish_name(out->finish),
            (long long)out->n_prompt, pp_s, pp_s > 0 ? (double)out->n_prompt / pp_s : 0.0,
            (long long)out->n_generated, tg_s,
            tg_s > 0 && out->n_generated > 1 ? (double)(out->n_generated - 1) / tg_s : 0.0);
}

/* Submit one request and step engine 0 until it ends. */
static int generate(struct st_engine_pool *p, const struct run_opts *o)
{
    struct st_err err = { 0 };
    struct run_out out = { 0 };
    (void)st_engine_pool_step(p, 0);   /* loads the model */
    if (!st_engine_pool_ready(p)) {
        fprintf(stderr, "strata run: the model did not load (see the log above)\n");
        return 1;
    }
    char *prompt = render_prompt(p, o, &err);
    struct st_request *req = prompt ? make_request(o, prompt, &out) : NULL;
    if (!req) {
        free(prompt);
        fprintf(stderr, "strata run: %s\n", err.msg[0] ? err.msg : "out of memory");
        return 1;
    }
    if (st_engine_pool_submit(p, req, &err) != ST_OK) {
        fprintf(stderr, "strata run: %s\n", err.msg);
        st_request_unref(req);
        return 1;
    }
    while (!out.ended && st_engine_pool_step(p, 0))
        ;
    int rc = out.ended && out.finish != ST_FINISH_ERROR ? 0 : 1;
    if (out.ended)
        summary(req, &out);
    if (rc)
        fprintf(stderr, "strata run: %s\n", out.ended ? out.error : "the engine stopped");
    st_request_unref(req);
    return rc;
}

/* min(<arch>.context_length, 4096), or 4096 when the file does not say. */
static int64_t default_ctx(const char *path)
{
    struct st_gguf *g = NULL;
    struct st_str arch;
    int64_t ctx = 4096, train = 0;
    char key[96];
    if (st_gguf_open(path, &g, NULL) == ST_OK &&
        st_gguf_get_str(g, "general.architecture", &arch, NULL) == ST_OK &&
        snprintf(key, sizeof(key), "%.*s.context_length", (int)arch.len, arch.ptr) > 0 &&
        st_gguf_get_i64(g, key, &train, NULL) == ST_OK && train >= 2)
        ctx = ST_MIN(train, ctx);
    st_gguf_close(g);
    return ctx;
}

int st_cli_run(int argc, char **argv)
{
    struct run_opts o;
    if (st_cli_wants_help(argc, argv))
        return usage(stdout);
    if (!parse(argc, argv, &o))
        return usage(stderr);
    char def[1024];
    struct st_err err = { 0 };
    if (!o.model) {
        if (st_default_model_path(def, sizeof(def), &err) != ST_OK) {
            fprintf(stderr, "strata run: %s\n", err.msg);
            return 1;
        }
        fprintf(stderr, "strata run: no -m given: using the synthetic default model %s "
                "(random weights: its text is noise)\n", def);
        o.model = def;
    }
    struct st_sched_config sc;
    st_sched_config_defaults(&sc);
    struct st_pool_config pc;
    st_pool_config_defaults(&pc);
    pc.model.name = (char *)"run";
    pc.model.path = (char *)o.model;
    pc.model.backend = ST_BACKEND_CPU;
    pc.model.ctx_size = o.ctx > 0 ? o.ctx : default_ctx(o.model);
    pc.model.rope_scaling = o.rope.rope_scaling;
    pc.model.rope_scale = o.rope.rope_scale;
    pc.model.yarn_orig_ctx = o.rope.yarn_orig_ctx;
    pc.model.cache_type_k = o.rope.cache_type_k;
    pc.model.cache_type_v = o.rope.cache_type_v;
    pc.threads = o.threads;
    struct st_sched *sched = NULL;
    struct st_engine_pool *pool = NULL;
    int rc = 1;
    if (st_sched_new(&sc, st_clock_real(), &sched, &err) == ST_OK &&
        st_engine_pool_new(&pc, sched, st_clock_real(), &pool, &err) == ST_OK)
        rc = generate(pool, &o);
    else
        fprintf(stderr, "strata run: %s\n", err.msg);
    st_engine_pool_free(pool);
    st_sched_free(sched);
    return rc;
}
