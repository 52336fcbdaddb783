/* main.c -- the strata binary: argv -> config -> modules wired -> run.
 *
 * The only place that ends the process: main() returns the exit status.
 *   0  done (serve: after a graceful shutdown on SIGINT/SIGTERM)
 *   1  a failure at run time (cannot bind, out of memory, ...)
 *   2  a usage or configuration error: unknown flag, bad value, bad config
 *      file, a backend this build or machine cannot run
 *
 * serve's life: parse (config module) -> log settings -> block SIGINT and
 * SIGTERM in every thread (they are blocked before any thread starts, so
 * the threads inherit the mask) -> scheduler, engine pool, HTTP server ->
 * sigwait() in this thread -> stop the server, free the pool, free the
 * scheduler, free the config. No work happens in a signal handler.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/cli.h"
#include "strata/chat.h"
#include "strata/clock.h"
#include "strata/config.h"
#include "strata/default_model.h"
#include "strata/engine.h"
#include "strata/gguf.h"
#include "strata/log.h"
#include "strata/model_desc.h"
#include "strata/sched.h"
#include "strata/server.h"

#ifndef STRATA_VERSION
#define STRATA_VERSION "unknown"
#endif

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Everything serve starts, in start order; stopped in reverse. */
struct running {
    struct st_sched       *sched;
    struct st_engine_pool *pool;
    struct st_server      *server;
    struct st_api_key     *keys;   /* views of the config's keys (strings borrowed) */
    int32_t               *model_priority;   /* [n_models], for the server */
    struct st_model_config *extra_models;   /* models 1.. for the pool (strings borrowed) */
};

static int print_text(FILE *f, enum st_status (*render)(struct st_buf *))
{
    struct st_buf b;
    int status = 0;

    st_buf_init(&b);
    if (render(&b) != ST_OK || fputs(b.data, f) == EOF || fflush(f) != 0)
        status = EXIT_RUNTIME;
    st_buf_fini(&b);
    return status;
}

/* Bad input and things this build or machine cannot do are usage errors. */
static int exit_status_of(enum st_status rc)
{
    switch (rc) {
    case ST_ERR_BAD_CONFIG:
    case ST_ERR_UNSUPPORTED:
    case ST_ERR_INVALID:
        return EXIT_USAGE;
    default:
        return EXIT_RUNTIME;
    }
}

static enum st_backend_kind backend_kind(enum st_cfg_backend b)
{
    switch (b) {
    case ST_CFG_BACKEND_CPU:  return ST_BACKEND_CPU;
    case ST_CFG_BACKEND_CUDA: return ST_BACKEND_CUDA;
    case ST_CFG_BACKEND_AUTO:
    case ST_CFG_BACKEND_SIM:  return ST_BACKEND_SIM;
    }
    return ST_BACKEND_SIM;
}

static void fill_sched(const struct st_config *c, struct st_sched_config *s)
{
    st_sched_config_defaults(s);
    s->policy = c->scheduler == ST_CFG_SCHED_FIFO ? ST_SCHED_FIFO : ST_SCHED_SERIAL;
    s->aging_divisor_s = c->aging_divisor_s;
    s->swap_affinity_bonus = c->swap_affinity_bonus;
    s->give_way_tokens = c->give_way_tokens;
    s->yields_max = c->yields_max;
    s->max_queue = c->max_queue;
    s->batch = c->batch;
}

/* The engine of 'device' (-1: the CPU, or a sim engine without --gpus),
 * added to p's list when new. False when there are too many. */
static bool engine_of(struct st_pool_config *p, int32_t device, int32_t *idx)
{
    for (int32_t i = 0; i < p->n_engines; i++) {
        if (p->gpus[i] == device) {
            *idx = i;
            return true;
        }
    }
    if (p->n_engines >= (int32_t)ST_ARRAY_LEN(p->gpus))
        return false;
    *idx = p->n_engines;
    p->gpus[p->n_engines++] = device;
    return true;
}

/* One model of the config as the pool sees it; its devices join the
 * engine list. Without --batch an engine serves one request at a time:
 * 1 slot, whatever --parallel says. Strings are borrowed (the pool copies). */
static enum st_status fill_model(const struct st_config *c, const struct st_config_model *m,
                                 struct st_pool_config *p, struct st_model_config *out,
                                 struct st_err *err)
{
    int32_t idx;
    memset(out, 0, sizeof(*out));
    out->name = m->name;
    out->path = m->path;
    out->aliases = m->aliases;
    out->n_aliases = (int32_t)m->n_aliases;
    out->backend = backend_kind(m->backend);
    out->parallel = c->batch ? m->parallel : 1;
    out->ctx_size = st_config_slot_ctx(c, m);
    if (c->kv_unified && c->batch && out->parallel > 1) {   /* one pool; any slot may fill it */
        out->kv_pool = out->ctx_size * out->parallel;
        out->ctx_size = out->kv_pool;
    }
    out->rope_scaling = m->rope_scaling;
    out->rope_scale = m->rope_scale;
    out->yarn_orig_ctx = m->yarn_orig_ctx;
    out->cache_type_k = c->cache_type_k;
    out->cache_type_v = c->cache_type_v;
    out->ttl_s = m->ttl_s;
    out->preload = m->preload;
    for (int32_t i = 0; i < (m->gpus.n > 0 ? m->gpus.n : 1); i++) {
        int32_t device = m->gpus.n > 0 ? m->gpus.ids[i] : -1;
        if (!engine_of(p, device, &idx))
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "model '%s': the models use more than %d devices together",
                              m->name, (int)ST_ARRAY_LEN(p->gpus));
        out->gpus[out->n_gpus++] = device;
    }
    return ST_OK;
}

/* Every configured model: model 0 in p->model, the rest in *extra (owned
 * array of views). Engines: one per device any model names. */
static enum st_status fill_pool(const struct st_config *c, struct st_pool_config *p,
                                struct st_model_config **extra, struct st_err *err)
{
    st_pool_config_defaults(p);
    p->n_engines = 0;
    *extra = NULL;
    if (c->n_models > 1 && (*extra = calloc(c->n_models - 1, sizeof(**extra))) == NULL)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the model list");
    enum st_status rc = fill_model(c, &c->models[0], p, &p->model, err);
    for (size_t i = 1; rc == ST_OK && i < c->n_models; i++)
        rc = fill_model(c, &c->models[i], p, &(*extra)[i - 1], err);
    p->extra_models = *extra;
    p->n_extra_models = (int32_t)c->n_models - 1;
    p->ubatch = c->ubatch;
    p->threads = c->threads;
    p->mtp = c->batch_mtp;
    p->mtp_draft = c->mtp_draft;
    p->ngram = c->spec == ST_CFG_SPEC_NGRAM;
    p->ngram_min = c->spec_ngram_min;
    p->ngram_max = c->spec_ngram_max;
    p->spec_draft = c->spec_draft;
    p->ctx_checkpoints = c->ctx_checkpoints;
    p->sim.prompt_tps = c->sim_prompt_tps;
    p->sim.decode_tps = c->sim_decode_tps;
    p->sim.load_seconds = c->sim_load_seconds;
    p->sim.tokens = c->sim_tokens;
    p->sim.reply = c->sim_reply;
    p->kv_block = c->kv_block_size;
    return rc;
}

/* The server config; *keys is an owned array of views into the config. */
static enum st_status fill_server(const struct st_config *c, struct st_server_config *s,
                                  struct running *r, struct st_err *err)
{
    struct st_api_key **keys = &r->keys;
    st_server_config_defaults(s);
    *keys = NULL;
    r->model_priority = calloc(c->n_models, sizeof(*r->model_priority));
    if (!r->model_priority)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the model list");
    for (size_t i = 0; i < c->n_models; i++)
        r->model_priority[i] = c->models[i].priority;
    if (c->n_keys > 0 && (*keys = calloc(c->n_keys, sizeof(**keys))) == NULL)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the API keys");
    for (size_t i = 0; i < c->n_keys; i++) {
        (*keys)[i] = (struct st_api_key){
            .name = c->keys[i].name,
            .key = c->keys[i].key,
            .has_default_priority = c->keys[i].has_default_priority,
            .default_priority = c->keys[i].default_priority,
            .has_max_priority = c->keys[i].has_max_priority,
            .max_priority = c->keys[i].max_priority,
            .admin = c->keys[i].admin,
        };
    }
    s->host = c->host;
    s->port = (uint16_t)c->port;
    s->body_limit = c->body_limit;
    s->keys = *keys;
    s->n_keys = c->n_keys;
    s->priority_order = c->priority_order == ST_CFG_ORDER_LOW_FIRST ? ST_PRIORITY_LOW_FIRST
                                                                    : ST_PRIORITY_HIGH_FIRST;
    s->http_threads = c->http_threads;
    s->reasoning_format = c->reasoning_format == ST_CFG_REASONING_NONE ? ST_REASONING_NONE
                                                                       : ST_REASONING_DEEPSEEK;
    s->reasoning_budget = c->reasoning_budget;
    s->n_predict = c->n_predict;
    s->cors_origins = c->cors_origins;
    s->allowed_hosts = c->allowed_hosts;
    s->metrics_key = c->metrics_key;
    s->slot_save_path = c->slot_save_path;
    s->sse_keepalive_s = c->sse_keepalive_s;
    s->responses_store_bytes = (size_t)c->responses_store_mb << 20;
    s->state_dir = c->state_dir;
    s->state_max_rows = c->state_max_rows;
    s->max_connections = c->max_connections;
    s->max_connections_per_ip = c->max_connections_per_ip;
    s->timeout_s = c->timeout_s;
    s->header_timeout_s = c->header_timeout_s;
    s->stream_buffer = c->stream_buffer;
    s->model_priority = r->model_priority;
    s->n_model_priority = c->n_models;
    s->webui = c->webui;
    s->slots = c->slots;
    return ST_OK;
}

/* One line per model: what it is, where it may run, when it loads. */
static void announce_model(const struct st_config *c, const struct st_config_model *m)
{
    char gpus[128] = "";
    size_t len = 0;
    for (int32_t i = 0; i < m->gpus.n && len < sizeof(gpus) - 12; i++)
        len += (size_t)snprintf(gpus + len, sizeof(gpus) - len, "%s%d", i ? "," : " on gpus ",
                                (int)m->gpus.ids[i]);
    st_log(ST_LOG_INFO, "main",
           "model '%s': backend %s%s, %d slot(s) per engine, %lld context tokens per slot%s, "
           "%s%s",
           m->name, st_cfg_backend_name(m->backend), gpus, c->batch ? (int)m->parallel : 1,
           (long long)st_config_slot_ctx(c, m), c->batch ? ", batched" : ", one request at a time (no --batch)",
           m->preload || c->n_models == 1 ? "loads at start" : "loads on first use",
           m->ttl_s > 0 ? ", unloads when idle for its ttl" : "");
}

/* The GGUF at 'path' opens and holds an architecture the engine knows,
 * every tensor bound: checked before the port is bound, so a bad file is
 * reported before "listening on" (the weights are only mapped, not read). */
static enum st_status check_model_file(const char *path, struct st_err *err)
{
    struct st_gguf *g = NULL;
    struct st_model_desc *d = NULL;
    struct st_err why = { 0 };
    enum st_status rc = st_gguf_open(path, &g, &why);
    if (rc == ST_OK)
        rc = st_model_desc_load(g, &d, &why);
    st_model_desc_free(d);
    st_gguf_close(g);
    if (rc != ST_OK && rc != ST_ERR_NOMEM)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "--model %s: %s", path,
                          why.msg[0] ? why.msg : st_status_msg(rc));
    return rc == ST_ERR_NOMEM ? st_err_set(err, rc, "--model %s: out of memory", path) : ST_OK;
}

/* A model named with -m must exist and be a model now: a typo should fail
 * at start, as with llama-server (models from a config file load on first
 * use instead, docs/MODELS.md). Given no model and no config file (or only
 * --backend cpu), serve the built-in default: make-model's tiny preset,
 * made once and cached, on the CPU engine. */
static enum st_status use_default_model(struct st_config *c, struct st_err *err)
{
    char path[4096];
    struct st_config_model *m = &c->models[0];

    if (c->model_path && access(c->model_path, R_OK) != 0)
        return st_err_errno(err, ST_ERR_BAD_CONFIG, "--model %s", c->model_path);
    if (c->model_path && m->backend != ST_CFG_BACKEND_SIM) {
        enum st_status rc = check_model_file(c->model_path, err);
        if (rc != ST_OK)
            return rc;
    }
    if (!c->config_path && !m->path && m->backend == ST_CFG_BACKEND_CUDA)
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "--backend cuda needs a model: add -m FILE.gguf (docs/GUIDE.md); "
                          "without -m, serve runs its tiny built-in model on the CPU");
    if (c->config_path || c->n_models != 1 || m->path ||
        (st_config_given(c, ST_OPT_BACKEND) && m->backend != ST_CFG_BACKEND_CPU))
        return ST_OK;
    enum st_status rc = st_default_model_path(path, sizeof(path), err);
    if (rc != ST_OK)
        return rc;
    m->path = strdup(path);
    if (!m->path)
        return st_err_set(err, ST_ERR_NOMEM, "out of memory");
    m->backend = ST_CFG_BACKEND_CPU;
    st_log(ST_LOG_WARN, "main",
           "no model given: serving the built-in tiny model %s on the CPU engine; its weights "
           "are random, so its text is noise (give -m FILE.gguf for a real model)", path);
    return ST_OK;
}

/* Log what the config decided. */
static void announce(const struct st_config *c)
{
    for (size_t i = 0; i < c->n_warnings; i++)
        st_log(ST_LOG_WARN, "config", "%s", c->warnings[i]);
    if (c->models[0].backend == ST_CFG_BACKEND_SIM)
        st_log(ST_LOG_INFO, "main",
               "serving the simulated engine (sim); its text is not a model's");
    if (c->n_models > 1)
        st_log(ST_LOG_INFO, "main",
               "%zu models share the engines: an engine swaps its model when all its slots are "
               "free (docs/MODELS.md)", c->n_models);
    for (size_t i = 0; i < c->n_models; i++)
        announce_model(c, &c->models[i]);
}

/* The engines end what they hold first ("shutting down"), so open streams
 * get that error event and [DONE] and end cleanly; the HTTP server gets a
 * moment to send them before it stops. */
static void stop(struct running *r)
{
    st_engine_pool_stop(r->pool);
    const struct timespec tick = { 0, 10 * 1000 * 1000 };
    for (int i = 0; r->server && i < 100 && st_server_in_progress(r->server) > 0; i++)
        nanosleep(&tick, NULL);
    st_server_free(r->server);
    st_engine_pool_free(r->pool);
    st_sched_free(r->sched);
    free(r->keys);
    free(r->model_priority);
    free(r->extra_models);
    memset(r, 0, sizeof(*r));
}

/* Start scheduler, engines and server; on failure logs why and returns
 * the exit status (whatever started is stopped by the caller). */
static int start(const struct st_config *c, struct running *r)
{
    const struct st_clock *clock = st_clock_real();
    struct st_sched_config sc;
    struct st_pool_config pc;
    struct st_server_config srv;
    struct st_err err = { 0 };
    enum st_status rc;
    const char *host = c->host;
    bool v6 = strchr(host, ':') != NULL;

    /* The port is bound before the engines start loading: a port in use
     * ends serve before a long model load, not after it. */
    fill_sched(c, &sc);
    rc = fill_pool(c, &pc, &r->extra_models, &err);
    if (rc == ST_OK)
        rc = st_sched_new(&sc, clock, &r->sched, &err);
    if (rc == ST_OK)
        rc = st_engine_pool_new(&pc, r->sched, clock, &r->pool, &err);
    if (rc == ST_OK && c->kv_events)   /* before any request: the events see every block */
        rc = st_engine_pool_kv_events_open(r->pool, c->kv_events, &err);
    if (rc == ST_OK)
        rc = fill_server(c, &srv, r, &err);
    if (rc == ST_OK)
        rc = st_server_start(&srv, r->pool, r->sched, &r->server, &err);
    if (rc == ST_OK)
        rc = st_engine_pool_start(r->pool, &err);
    if (rc != ST_OK) {
        st_log(ST_LOG_ERROR, "main", "cannot start: %s", err.msg[0] ? err.msg : st_status_msg(rc));
        /* No GPU (or no driver) for --backend cuda is the user's to fix too. */
        for (size_t i = 0; i < c->n_models; i++) {
            if (c->models[i].backend == ST_CFG_BACKEND_CUDA && rc == ST_ERR_DEVICE)
                return EXIT_USAGE;
        }
        return exit_status_of(rc);
    }
    if (c->kv_events) {   /* the topic names the port really bound (--port 0) */
        char pod[128];
        st_cli_kv_pod(c, st_server_port(r->server), pod, sizeof(pod));
        st_engine_pool_kv_events_pod(r->pool, pod);
        st_log(ST_LOG_INFO, "main", "KV events: topic kv@%s@<model>", pod);
    }
    /* The e2e tests grep "listening on http://" and read the port after the
     * last colon; keep this line's shape. */
    st_log(st_log_enabled(ST_LOG_INFO) ? ST_LOG_INFO : ST_LOG_WARN, "main",
           "listening on http://%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "",
           (unsigned)st_server_port(r->server));
    return 0;
}

/* A single model named on the command line (no config file) loads at
 * start; if that load fails there is nothing to serve, so serve ends with
 * the reason (exit 2: a missing GPU, a model the backend cannot run, too
 * little memory are the user's to fix) instead of answering 503. Waits for
 * the start-up load while still honouring SIGINT/SIGTERM (*sig is set then).
 * Several models (a config file) keep serving: the others may still work. */
static int wait_start_load(const struct st_config *c, struct running *r, const sigset_t *set,
                           int *sig)
{
    if (c->config_path || c->n_models != 1)
        return 0;
    const struct timespec tick = { 0, 20 * 1000 * 1000 };
    while (!st_engine_pool_ready(r->pool)) {
        int got = sigtimedwait(set, NULL, &tick);
        if (got == SIGINT || got == SIGTERM) {
            *sig = got;
            return 0;
        }
    }
    struct st_model_status ms;
    if (st_engine_pool_model_status(r->pool, 0, &ms) && ms.state == ST_MODEL_FAILED) {
        st_log(ST_LOG_ERROR, "main", "cannot start: the model did not load: %s",
               ms.reason[0] ? ms.reason : "(no reason given)");
        return EXIT_USAGE;
    }
    return 0;
}

/* --shutdown-timeout: refuse new generations and wait, up to the timeout
 * or a second signal, for the requests in progress to finish; then the
 * caller stops everything (what is left ends with "shutting down"). */
static void drain(const struct st_config *c, struct running *r, const sigset_t *set)
{
    int64_t left = st_server_in_progress(r->server);
    if (c->shutdown_timeout_s <= 0 || left == 0)
        return;
    st_server_drain(r->server);
    st_log(ST_LOG_INFO, "main", "draining: %lld request(s) in progress, new ones get 503; "
           "waiting up to %d s (send the signal again to stop at once)", (long long)left,
           (int)c->shutdown_timeout_s);
    const struct st_clock *clock = st_clock_real();
    int64_t deadline = st_clock_now(clock) + (int64_t)c->shutdown_timeout_s * ST_NS_PER_SEC;
    const struct timespec tick = { 0, 50 * 1000 * 1000 };
    while ((left = st_server_in_progress(r->server)) > 0) {
        if (st_clock_now(clock) >= deadline) {
            st_log(ST_LOG_WARN, "main", "shutdown timeout: ending %lld request(s) still in "
                   "progress", (long long)left);
            return;
        }
        int got = sigtimedwait(set, NULL, &tick);
        if (got == SIGINT || got == SIGTERM) {
            st_log(ST_LOG_INFO, "main", "second signal: ending %lld request(s) now",
                   (long long)left);
            return;
        }
    }
    st_log(ST_LOG_INFO, "main", "drained: every request finished");
}

/* Block until SIGINT or SIGTERM; returns which. */
static int wait_for_signal(const sigset_t *set)
{
    int sig = 0;
    while (sigwait(set, &sig) != 0 || (sig != SIGINT && sig != SIGTERM))
        ;
    return sig;
}

/* --chat-template, --chat-template-file and --jinja, for every model. */
static enum st_status choose_template(const struct st_config *c, struct st_err *err)
{
    struct st_chat_tmpl_choice ch = { c->chat_template, c->chat_template_file, c->jinja };
    return st_chat_tmpl_choose(&ch, err);
}

static int serve(int argc, char **argv)
{
    struct st_config c;
    struct running r = { 0 };
    struct st_err err = { 0 };
    sigset_t set;
    bool help;
    int status;
    enum st_status rc = st_config_from_args(&c, argc, argv, &help, &err);

    if (rc != ST_OK) {
        fprintf(stderr, "strata: %s\n", err.msg[0] ? err.msg : st_status_msg(rc));
        return rc == ST_ERR_NOMEM ? EXIT_RUNTIME : EXIT_USAGE;
    }
    if (help) {
        st_config_fini(&c);
        return print_text(stdout, st_cli_serve_help);
    }
    st_log_set_format(c.log_format);
    st_log_set_level(c.log_level);
    rc = use_default_model(&c, &err);
    if (rc == ST_OK)
        rc = choose_template(&c, &err);
    if (rc != ST_OK) {
        fprintf(stderr, "strata: %s\n", err.msg[0] ? err.msg : st_status_msg(rc));
        status = rc == ST_ERR_BAD_CONFIG ? EXIT_USAGE : EXIT_RUNTIME;
        goto out;
    }
    announce(&c);

    /* Before any thread exists, so every thread inherits the mask. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    status = start(&c, &r);
    int sig = 0;
    if (status == 0)
        status = wait_start_load(&c, &r, &set, &sig);
    if (status == 0) {
        if (sig == 0)
            sig = wait_for_signal(&set);
        st_log(ST_LOG_INFO, "main", "%s: shutting down (send it again to stop at once)",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
        drain(&c, &r, &set);
        /* Only this thread unblocks: a second signal now ends the process. */
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    }
    stop(&r);
    if (status == 0)
        st_log(ST_LOG_INFO, "main", "stopped");
out:
    st_chat_tmpl_choice_reset();
    st_config_fini(&c);
    return status;
}

int main(int argc, char **argv)
{
    struct st_cli cli;
    struct st_err err = { 0 };

    if (st_cli_parse_command(argc, argv, &cli, &err) != ST_OK) {
        fprintf(stderr, "strata: %s\n", err.msg);
        return EXIT_USAGE;
    }
    switch (cli.command) {
    case ST_CLI_HELP:
        return print_text(stdout, st_cli_help);
    case ST_CLI_VERSION:
        printf("strata %s (backends: sim, cpu%s)\n", STRATA_VERSION,
               st_config_cuda_built() ? ", cuda" : "");
        return fflush(stdout) == 0 ? 0 : EXIT_RUNTIME;
    case ST_CLI_SERVE:
        return serve(cli.argc, cli.argv);
    case ST_CLI_MAKE_MODEL:
        return st_cli_make_model(cli.argc, cli.argv);
    case ST_CLI_INSPECT:
        return st_cli_inspect(cli.argc, cli.argv);
    case ST_CLI_RUN:
        return st_cli_run(cli.argc, cli.argv);
    case ST_CLI_BENCH:
        return st_cli_bench(cli.argc, cli.argv);
    }
    return EXIT_USAGE;
}
