/* pool.c -- the engines of a server and their link to the scheduler.
 *
 * Life cycle: st_engine_pool_new() builds one engine per device (sim: per
 * --gpus entry), each with slots for the largest model it may serve, and
 * registers it with the scheduler (no model loaded: models load on first
 * use, or at start with preload; models.c and swap.c). st_engine_pool_start()
 * runs one thread per engine, which does its start-up load and then steps
 * while there is work, sleeping on a condvar the scheduler's notify
 * callback signals, or until a ttl or back-off needs it. Tests skip the
 * threads and call st_engine_pool_step() on a manual clock.
 *
 * st_pool_runner_new() (runner_new.c) is the one place that turns a
 * model's backend kind into a runner.
 *
 * Requests: submit takes the engine side's reference and remembers the
 * request in the live list, so shutdown can end every one of them; how
 * each one ends is live.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/pool.h"
#include "engine/step.h"
#include "strata/defaults.h"
#include "strata/log.h"

void st_pool_config_defaults(struct st_pool_config *c)
{
    memset(c, 0, sizeof(*c));
    c->model.name = NULL;          /* NULL: "strata-sim" */
    c->model.backend = ST_BACKEND_SIM;
    c->model.parallel = 1;
    c->model.ctx_size = 4096;
    c->n_engines = 1;
    c->gpus[0] = -1;
    c->ubatch = ST_DEFAULT_UBATCH;
    c->load_backoff_s = 30.0;
    c->mtp_draft = ST_DEFAULT_MTP_DRAFT;
    c->ngram_min = ST_DEFAULT_NGRAM_MIN;
    c->ngram_max = ST_DEFAULT_NGRAM_MAX;
    c->spec_draft = ST_DEFAULT_SPEC_DRAFT;
    c->ctx_checkpoints = ST_DEFAULT_CTX_CHECKPOINTS;
    c->sim.prompt_tps = ST_DEFAULT_SIM_PROMPT_TPS;
    c->sim.decode_tps = ST_DEFAULT_SIM_DECODE_TPS;
    c->sim.load_seconds = 0.0;
    c->sim.tokens = ST_DEFAULT_SIM_TOKENS;
    c->kv_block = ST_DEFAULT_KV_BLOCK;
}

/* ---- the live list -------------------------------------------------- */

static void remember(struct st_engine_pool *p, struct st_request *req)
{
    pthread_mutex_lock(&p->mu);
    req->pool_prev = NULL;
    req->pool_next = p->live;
    if (p->live)
        p->live->pool_prev = req;
    p->live = req;
    pthread_mutex_unlock(&p->mu);
}

/* ---- engines -------------------------------------------------------- */

static void notify(void *ctx)
{
    struct st_engine_pool *p = ctx;
    for (int32_t i = 0; i < p->n_engines; i++) {
        struct st_engine *e = &p->engines[i];
        pthread_mutex_lock(&e->mu);
        e->wake = true;
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
}

/* Slots for the largest model engine 'idx' may serve. */
static int32_t engine_slots(const struct st_engine_pool *p, int32_t idx)
{
    int32_t n = 1;
    for (int32_t m = 0; m < p->n_models; m++) {
        if (p->models[m].engine_mask & (UINT32_C(1) << idx))
            n = ST_MAX(n, p->models[m].cfg.parallel);
    }
    return n;
}

static enum st_status engine_init(struct st_engine_pool *p, struct st_engine *e, int32_t idx,
                                  struct st_err *err)
{
    pthread_condattr_t ca;
    e->pool = p;
    e->index = idx;
    e->device = p->cfg.gpus[idx];
    e->model = -1;
    atomic_store(&e->model_view, -1);
    atomic_store(&e->state_tokens, 0);
    atomic_store(&e->state_ckpts, 0);
    atomic_store(&e->loading_view, -1);
    pthread_mutex_init(&e->mu, NULL);
    /* Timed waits (ttl, back-off) count on the monotonic clock. */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&e->slot_cv, NULL);
    e->wake = true;   /* look for work once the start-up load is done */
    size_t n = (size_t)engine_slots(p, idx);
    e->n_slots = (int32_t)n;
    e->n_active = e->n_slots;
    e->slots = calloc(n, sizeof(*e->slots));
    e->seqs = calloc(n + 1, sizeof(*e->seqs));
    e->rows = calloc(n + 1, sizeof(*e->rows));
    e->decode_tokens = calloc(n, sizeof(*e->decode_tokens));
    e->drafts = calloc(n, sizeof(*e->drafts));
    e->spec.want = calloc(n, sizeof(*e->spec.want));
    e->spec.k = calloc(n, sizeof(*e->spec.k));
    e->spec.slot = calloc(n, sizeof(*e->spec.slot));
    e->views = calloc(n, sizeof(*e->views));
    e->retry_ns = calloc((size_t)p->n_models, sizeof(*e->retry_ns));
    if (!e->slots || !e->seqs || !e->rows || !e->decode_tokens || !e->drafts || !e->views ||
        !e->retry_ns || !e->spec.want || !e->spec.k || !e->spec.slot)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for %d slots", (int)n);
    for (int32_t i = 0; i < e->n_slots; i++) {
        e->slots[i].index = i;
        st_sampler_init(&e->slots[i].sampler);
        st_buf_init(&e->slots[i].utf8);
        st_buf_init(&e->slots[i].out);
    }
    int32_t sched_idx = st_sched_add_engine(p->sched, e->n_slots, -1);
    if (sched_idx != idx)
        return st_err_set(err, ST_ERR_INTERNAL,
                          "engine %d registered as scheduler engine %d: the scheduler must have "
                          "no engines before the pool is made", (int)idx, (int)sched_idx);
    /* Pinning: the models this engine may not run never reach it. */
    for (int32_t m = 0; m < p->n_models; m++) {
        if (!(p->models[m].engine_mask & (UINT32_C(1) << idx)))
            st_sched_engine_allow_model(p->sched, idx, m, false);
    }
    st_engine_update_views(e);
    return ST_OK;
}

/* Frees a (possibly partly built) engine; its slots must be empty. */
static void engine_fini(struct st_engine *e)
{
    if (!e->pool)
        return;
    for (int32_t i = 0; e->slots && i < e->n_slots; i++) {
        st_sampler_fini(&e->slots[i].sampler);
        st_buf_fini(&e->slots[i].utf8);
        st_buf_fini(&e->slots[i].out);
        st_engine_prefix_fini(&e->slots[i]);
        st_kv_slot_fini(&e->slots[i].kvb);
        st_ngram_fini(&e->slots[i].ngram);
    }
    st_engine_unload_quiet(e);
    st_engine_prompt_fini(e);
    st_engine_embed_fini(e);
    free(e->slots);
    free(e->seqs);
    free(e->rows);
    free(e->decode_tokens);
    free(e->drafts);
    free(e->spec.want);
    free(e->spec.k);
    free(e->spec.slot);
    free(e->views);
    free(e->retry_ns);
    pthread_cond_destroy(&e->cv);
    pthread_cond_destroy(&e->slot_cv);
    pthread_mutex_destroy(&e->mu);
}

static enum st_status check_model(const struct st_model_config *m, int32_t i,
                                  struct st_err *err)
{
    const char *name = m->name ? m->name : "strata-sim";
    if (!st_pool_backend_built(m->backend))
        return st_err_set(err, ST_ERR_UNSUPPORTED,
                          "model '%s': backend 'cuda' is not built in (this build has no "
                          "nvcc); start with --backend sim or --backend cpu", name);
    if (m->parallel < 1 || m->parallel > 4096)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "model '%s': parallel: %d, expected 1..4096",
                          name, (int)m->parallel);
    if (m->ctx_size < 2)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "model '%s': ctx-size: %lld, expected >= 2",
                          name, (long long)m->ctx_size);
    if (m->kv_pool != 0 && m->kv_pool != m->ctx_size)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "model '%s': a unified KV pool of %lld "
                          "tokens needs ctx-size %lld (any slot may fill it), not %lld", name,
                          (long long)m->kv_pool, (long long)m->kv_pool,
                          (long long)m->ctx_size);
    if (!isfinite(m->ttl_s) || m->ttl_s < 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "model '%s': ttl: %g, expected >= 0 seconds",
                          name, m->ttl_s);
    if (m->n_gpus < 0 || m->n_gpus > (int32_t)ST_ARRAY_LEN(m->gpus) || m->n_aliases < 0 ||
        (m->n_aliases > 0 && !m->aliases) || m->n_tags < 0 || (m->n_tags > 0 && !m->tags) ||
        (i > 0 && !m->name))
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "model %d: needs a name, and 0..%d gpus and a valid alias list",
                          (int)i, (int)ST_ARRAY_LEN(m->gpus));
    return ST_OK;
}

static enum st_status check_config(const struct st_pool_config *c, struct st_err *err)
{
    if (c->n_engines < 1 || c->n_engines > (int32_t)ST_ARRAY_LEN(c->gpus))
        return st_err_set(err, ST_ERR_BAD_CONFIG, "engines: %d, expected 1..%d",
                          (int)c->n_engines, (int)ST_ARRAY_LEN(c->gpus));
    if (c->n_extra_models < 0 || c->n_extra_models >= ST_POOL_MAX_MODELS ||
        (c->n_extra_models > 0 && !c->extra_models))
        return st_err_set(err, ST_ERR_BAD_CONFIG, "models: %d, expected 1..%d",
                          (int)c->n_extra_models + 1, ST_POOL_MAX_MODELS);
    enum st_status rc = check_model(&c->model, 0, err);
    for (int32_t i = 0; rc == ST_OK && i < c->n_extra_models; i++)
        rc = check_model(&c->extra_models[i], i + 1, err);
    if (rc != ST_OK)
        return rc;
    if (c->ubatch < 1)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "ubatch: %d, expected >= 1", (int)c->ubatch);
    if (!isfinite(c->load_backoff_s) || c->load_backoff_s < 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "load back-off: %g, expected >= 0 seconds",
                          c->load_backoff_s);
    if (c->kv_block < 0 || c->kv_block > 4096)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "KV block size: %d, expected 1..4096 tokens",
                          (int)c->kv_block);
    return ST_OK;
}

enum st_status st_engine_pool_new(const struct st_pool_config *cfg, struct st_sched *sched,
                                  const struct st_clock *clock, struct st_engine_pool **out,
                                  struct st_err *err)
{
    *out = NULL;
    enum st_status rc = check_config(cfg, err);
    if (rc != ST_OK)
        return rc;
    struct st_engine_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the engine pool");
    p->cfg = *cfg;
    p->cfg.model = (struct st_model_config){ 0 };   /* the pool's copies live in p->models */
    p->cfg.extra_models = NULL;
    if (p->cfg.kv_block == 0)
        p->cfg.kv_block = 16;   /* a config made without st_pool_config_defaults */
    p->sched = sched;
    p->clock = clock;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->text_mu, NULL);
    pthread_mutex_init(&p->models_mu, NULL);
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        st_histogram_init(&p->ttft[b]);
        st_histogram_init(&p->itl[b]);
    }
    p->cfg.sim.reply = cfg->sim.reply ? strdup(cfg->sim.reply) : NULL;   /* the pool's copy */
    if (cfg->sim.reply && !p->cfg.sim.reply) {
        rc = st_err_set(err, ST_ERR_NOMEM, "no memory for the sim reply");
        goto out_free;
    }
    rc = st_pool_models_init(p, cfg, err);   /* copies cfg->model and extra_models */
    if (rc != ST_OK)
        goto out_free;
    p->engines = calloc((size_t)cfg->n_engines, sizeof(*p->engines));
    if (!p->engines) {
        rc = st_err_set(err, ST_ERR_NOMEM, "no memory for the engine pool");
        goto out_free;
    }
    for (int32_t i = 0; i < cfg->n_engines; i++) {
        p->n_engines = i + 1;
        rc = engine_init(p, &p->engines[i], i, err);
        if (rc != ST_OK)
            goto out_free;
    }
    st_sched_set_notify(sched, notify, p);
    *out = p;
    return ST_OK;

out_free:
    st_engine_pool_free(p);
    return rc;
}

/* Sleep until woken, stopped, or the engine's next deadline (a ttl or a
 * back-off ending) has come on the pool's clock. */
static void wait_for_work(struct st_engine *e)
{
    const struct st_clock *clock = e->pool->clock;
    int64_t deadline = st_engine_next_deadline(e);
    pthread_mutex_lock(&e->mu);
    while (!e->wake && !atomic_load(&e->stop)) {
        if (deadline == INT64_MAX) {
            pthread_cond_wait(&e->cv, &e->mu);
            continue;
        }
        int64_t left = deadline - st_clock_now(clock);
        if (left <= 0)
            break;
        left = ST_MIN(left, 3600 * ST_NS_PER_SEC);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + left % ST_NS_PER_SEC;
        ts.tv_sec += (time_t)(left / ST_NS_PER_SEC + ns / ST_NS_PER_SEC);
        ts.tv_nsec = (long)(ns % ST_NS_PER_SEC);
        (void)pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    e->wake = false;
    pthread_mutex_unlock(&e->mu);
}

static void *engine_main(void *arg)
{
    struct st_engine *e = arg;
    (void)st_engine_start_up(e);
    for (;;) {
        wait_for_work(e);
        if (atomic_load(&e->stop))
            break;
        /* Step until there is nothing left; a notify during the steps sets
         * 'wake' again, so no work is ever missed. /slots actions run
         * between steps. */
        st_engine_slot_ops_run(e);
        while (!atomic_load(&e->stop) && st_engine_step(e))
            st_engine_slot_ops_run(e);
    }
    st_engine_slot_ops_fail(e);
    return NULL;
}

enum st_status st_engine_pool_start(struct st_engine_pool *p, struct st_err *err)
{
    if (p->started)
        return st_err_set(err, ST_ERR_INTERNAL, "the engine pool is already started");
    for (int32_t i = 0; i < p->n_engines; i++) {
        struct st_engine *e = &p->engines[i];
        int rc = pthread_create(&e->thread, NULL, engine_main, e);
        if (rc != 0)
            return st_err_set(err, ST_ERR_INTERNAL, "cannot start engine thread %d: %s",
                              (int)i, strerror(rc));
        e->thread_started = true;
        p->started = true;
    }
    return ST_OK;
}

static void stop_threads(struct st_engine_pool *p)
{
    for (int32_t i = 0; i < p->n_engines; i++) {
        struct st_engine *e = &p->engines[i];
        pthread_mutex_lock(&e->mu);
        atomic_store(&e->stop, true);
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
    }
    for (int32_t i = 0; i < p->n_engines; i++) {
        if (p->engines[i].thread_started)
            pthread_join(p->engines[i].thread, NULL);
        p->engines[i].thread_started = false;
    }
}

/* Every request still held ends with ST_ERR_SHUTDOWN: those in slots
 * first, then those still waiting in the queue. */
static void end_everything(struct st_engine_pool *p)
{
    static const char msg[] = "the server is shutting down";
    for (int32_t i = 0; i < p->n_engines; i++) {
        struct st_engine *e = &p->engines[i];
        for (int32_t s = 0; e->slots && s < e->n_slots; s++) {
            if (e->slots[s].req)
                st_engine_end_slot(e, &e->slots[s], ST_FINISH_ERROR, ST_ERR_SHUTDOWN, msg,
                                   ST_OUTCOME_FAILED);
        }
    }
    for (;;) {
        pthread_mutex_lock(&p->mu);
        struct st_request *req = p->live;
        pthread_mutex_unlock(&p->mu);
        if (!req)
            break;
        if (!st_sched_cancel(p->sched, &req->job))
            st_log(ST_LOG_WARN, "engine", "request %s neither waiting nor in a slot at shutdown",
                   req->id);
        st_pool_end_unslotted(p, req, ST_FINISH_ERROR, ST_ERR_SHUTDOWN, msg);
    }
}

/* Refuse new submits, stop the engine threads, end what is held. Every
 * step is idempotent: st_engine_pool_stop and then _free run it twice. */
static void halt(struct st_engine_pool *p)
{
    atomic_store(&p->closing, true);
    stop_threads(p);
    if (p->sched && p->engines)
        st_sched_set_notify(p->sched, NULL, NULL);
    if (p->engines)
        end_everything(p);
}

void st_engine_pool_stop(struct st_engine_pool *p)
{
    if (p)
        halt(p);
}

void st_engine_pool_free(struct st_engine_pool *p)
{
    if (!p)
        return;
    halt(p);
    for (int32_t i = 0; p->engines && i < p->n_engines; i++)
        engine_fini(&p->engines[i]);
    free(p->engines);
    st_kv_blocks_close(p);   /* after the engines: their unloads' events go out */
    st_pool_models_fini(p);
    free(p->cfg.sim.reply);
    pthread_mutex_destroy(&p->models_mu);
    pthread_mutex_destroy(&p->text_mu);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

bool st_engine_pool_ready(struct st_engine_pool *p)
{
    for (int32_t i = 0; i < p->n_engines; i++) {
        if (!atomic_load(&p->engines[i].started_up))
            return false;
    }
    return true;
}

bool st_engine_pool_step(struct st_engine_pool *p, int32_t engine)
{
    ST_ASSERT(!p->started && engine >= 0 && engine < p->n_engines);
    struct st_engine *e = &p->engines[engine];
    bool loaded_now = false;
    if (!atomic_load(&e->started_up))
        loaded_now = st_engine_start_up(e);
    return st_engine_step(e) || loaded_now;
}

/* ---- submit and cancel ---------------------------------------------- */

enum st_status st_engine_pool_submit(struct st_engine_pool *p, struct st_request *req,
                                     struct st_err *err)
{
    if (atomic_load(&p->closing))
        return st_err_set(err, ST_ERR_SHUTDOWN, "the server is shutting down");
    if (req->model < 0 || req->model >= p->n_models)
        return st_err_set(err, ST_ERR_NOT_FOUND, "no model with index %d", (int)req->model);
    if (st_pool_model_blocked(p, req->model, err))
        return ST_ERR_LOADING;
    if (!req->tokens) {
        enum st_status rc = st_engine_pool_prepare(p, req, err);
        if (rc != ST_OK)
            return rc;
    }
    req->job.model = req->model;
    req->job.prompt_tokens = req->n_tokens;
    if (req->job.request_id[0] == '\0')
        memcpy(req->job.request_id, req->id, sizeof(req->job.request_id));
    req->job.request_id[sizeof(req->job.request_id) - 1] = '\0';
    req->band = st_band_of(req->job.priority);
    req->submit_ns = st_clock_now(p->clock);
    req->first_token_ns = 0;

    st_request_ref(req);   /* the engine side's reference */
    remember(p, req);
    struct st_sched_job *shed = NULL;
    enum st_status rc = st_sched_submit(p->sched, &req->job, &shed);
    if (rc != ST_OK) {
        st_pool_forget(p, req);
        st_request_unref(req);
        return st_err_set(err, rc, "the waiting queue is full; retry later");
    }
    if (shed) {
        struct st_request *victim = ST_CONTAINER_OF(shed, struct st_request, job);
        st_pool_end_unslotted(p, victim, ST_FINISH_ERROR, ST_ERR_QUEUE_FULL,
                              "the waiting queue is full and a request of higher priority "
                              "took this one's place; retry later");
    }
    /* The model may have failed everywhere between the check above and the
     * queueing: whoever failed it drained the queue before this request
     * was in it, so fail what waits for it now (nothing waits forever). */
    struct st_err why = { 0 };
    if (st_pool_model_blocked(p, req->model, &why))
        st_pool_fail_waiting(p, req->model, why.msg);
    return ST_OK;
}

enum st_status st_engine_pool_check_room(struct st_engine_pool *p, int32_t priority,
                                         struct st_err *err)
{
    if (st_sched_refuse_if_full(p->sched, priority))
        return st_err_set(err, ST_ERR_QUEUE_FULL, "the waiting queue is full; retry later");
    return ST_OK;
}

void st_engine_pool_cancel(struct st_engine_pool *p, struct st_request *req)
{
    atomic_store(&req->cancelled, true);
    if (st_sched_cancel(p->sched, &req->job))
        st_pool_end_unslotted(p, req, ST_FINISH_CANCELLED, ST_OK, NULL);
}
