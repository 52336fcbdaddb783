/* pool.c -- the engines of a server and their link to the scheduler.
 *
 * Life cycle: st_engine_pool_new() builds one engine per device (sim: per
 * --gpus entry), each with its runner and slots, and registers it with the
 * scheduler; st_engine_pool_start() runs one thread per engine, which
 * loads its model and then steps while there is work, sleeping on a
 * condvar the scheduler's notify callback signals. Tests skip the threads
 * and call st_engine_pool_step() on a manual clock.
 *
 * Requests: submit takes the engine side's reference and remembers the
 * request in the live list, so shutdown can end every one of them (in a
 * slot: by the engine loop's end path; still waiting: through
 * st_sched_cancel). Whoever ends a request emits END, forgets it and drops
 * the engine's reference; exactly one party does, decided by the
 * scheduler's mutex (st_sched_cancel returns true once, an admit hands the
 * job to one engine).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "strata/log.h"

#define DEFAULT_MODEL_NAME "strata-sim"

void st_pool_config_defaults(struct st_pool_config *c)
{
    memset(c, 0, sizeof(*c));
    c->model.name = NULL;          /* NULL: "strata-sim" */
    c->model.backend = ST_BACKEND_SIM;
    c->model.parallel = 1;
    c->model.ctx_size = 4096;
    c->n_engines = 1;
    c->ubatch = 512;
    c->mtp_draft = 1;
    c->sim.prompt_tps = 5000.0;
    c->sim.decode_tps = 50.0;
    c->sim.load_seconds = 0.0;
    c->sim.tokens = 16;
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

void st_pool_forget(struct st_engine_pool *p, struct st_request *req)
{
    pthread_mutex_lock(&p->mu);
    if (req->pool_prev)
        req->pool_prev->pool_next = req->pool_next;
    else if (p->live == req)
        p->live = req->pool_next;
    if (req->pool_next)
        req->pool_next->pool_prev = req->pool_prev;
    req->pool_prev = req->pool_next = NULL;
    pthread_mutex_unlock(&p->mu);
}

void st_pool_end_unslotted(struct st_engine_pool *p, struct st_request *req,
                           enum st_finish finish, enum st_status status, const char *error)
{
    req->end_ns = st_clock_now(p->clock);
    st_request_emit_end(req, finish, status, error, 0);
    st_pool_forget(p, req);
    st_request_unref(req);
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

static enum st_status engine_init(struct st_engine_pool *p, struct st_engine *e,
                                  struct st_err *err)
{
    const struct st_model_config *m = &p->cfg.model;
    e->pool = p;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->wake = true;   /* look for work once the model is loaded */
    enum st_status rc = st_runner_sim_new(&p->cfg.sim, m->parallel, m->ctx_size, &e->runner, err);
    if (rc != ST_OK)
        return rc;
    size_t n = (size_t)m->parallel;
    e->n_slots = m->parallel;
    e->slots = calloc(n, sizeof(*e->slots));
    e->seqs = calloc(n + 1, sizeof(*e->seqs));
    e->rows = calloc(n + 1, sizeof(*e->rows));
    e->decode_tokens = calloc(n, sizeof(*e->decode_tokens));
    e->views = calloc(n, sizeof(*e->views));
    if (!e->slots || !e->seqs || !e->rows || !e->decode_tokens || !e->views)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for %d slots", (int)m->parallel);
    for (int32_t i = 0; i < e->n_slots; i++) {
        e->slots[i].index = i;
        st_sampler_init(&e->slots[i].sampler);
        st_buf_init(&e->slots[i].utf8);
        st_buf_init(&e->slots[i].out);
    }
    e->index = st_sched_add_engine(p->sched, m->parallel, 0);
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
    }
    st_runner_free(e->runner);
    free(e->slots);
    free(e->seqs);
    free(e->rows);
    free(e->decode_tokens);
    free(e->views);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
}

static enum st_status check_config(const struct st_pool_config *c, struct st_err *err)
{
    if (c->model.backend != ST_BACKEND_SIM)
        return st_err_set(err, ST_ERR_UNSUPPORTED,
                          "backend '%s' is not available yet: only the simulated engine is "
                          "built; start with --backend sim",
                          c->model.backend == ST_BACKEND_CPU ? "cpu" : "cuda");
    if (c->n_engines < 1 || c->n_engines > (int32_t)ST_ARRAY_LEN(c->gpus))
        return st_err_set(err, ST_ERR_BAD_CONFIG, "engines: %d, expected 1..%d",
                          (int)c->n_engines, (int)ST_ARRAY_LEN(c->gpus));
    if (c->model.parallel < 1 || c->model.parallel > 4096)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "parallel: %d, expected 1..4096",
                          (int)c->model.parallel);
    if (c->model.ctx_size < 2)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "ctx-size: %lld, expected >= 2",
                          (long long)c->model.ctx_size);
    if (c->ubatch < 1)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "ubatch: %d, expected >= 1", (int)c->ubatch);
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
    p->cfg.model.name = strdup(cfg->model.name ? cfg->model.name : DEFAULT_MODEL_NAME);
    p->cfg.model.path = cfg->model.path ? strdup(cfg->model.path) : NULL;
    p->sched = sched;
    p->clock = clock;
    pthread_mutex_init(&p->mu, NULL);
    for (int b = 0; b < ST_BAND_COUNT; b++) {
        st_histogram_init(&p->ttft[b]);
        st_histogram_init(&p->itl[b]);
    }
    p->engines = calloc((size_t)cfg->n_engines, sizeof(*p->engines));
    if (!p->cfg.model.name || (cfg->model.path && !p->cfg.model.path) || !p->engines) {
        rc = st_err_set(err, ST_ERR_NOMEM, "no memory for the engine pool");
        goto out_free;
    }
    for (int32_t i = 0; i < cfg->n_engines; i++) {
        p->n_engines = i + 1;
        rc = engine_init(p, &p->engines[i], err);
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

static void *engine_main(void *arg)
{
    struct st_engine *e = arg;
    (void)st_engine_load(e);
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->wake && !atomic_load(&e->stop))
            pthread_cond_wait(&e->cv, &e->mu);
        e->wake = false;
        pthread_mutex_unlock(&e->mu);
        if (atomic_load(&e->stop))
            break;
        /* Step until there is nothing left; a notify during the steps sets
         * 'wake' again, so no work is ever missed. */
        while (!atomic_load(&e->stop) && st_engine_step(e))
            ;
    }
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

void st_engine_pool_free(struct st_engine_pool *p)
{
    if (!p)
        return;
    atomic_store(&p->closing, true);
    stop_threads(p);
    if (p->sched && p->engines)
        st_sched_set_notify(p->sched, NULL, NULL);
    if (p->engines)
        end_everything(p);
    for (int32_t i = 0; p->engines && i < p->n_engines; i++)
        engine_fini(&p->engines[i]);
    free(p->engines);
    free(p->cfg.model.name);
    free(p->cfg.model.path);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

bool st_engine_pool_ready(struct st_engine_pool *p)
{
    for (int32_t i = 0; i < p->n_engines; i++) {
        if (!atomic_load(&p->engines[i].loaded) || atomic_load(&p->engines[i].load_failed))
            return false;
    }
    return true;
}

bool st_engine_pool_step(struct st_engine_pool *p, int32_t engine)
{
    ST_ASSERT(!p->started && engine >= 0 && engine < p->n_engines);
    struct st_engine *e = &p->engines[engine];
    bool loaded_now = false;
    if (!atomic_load(&e->loaded)) {
        (void)st_engine_load(e);
        loaded_now = true;
    }
    return st_engine_step(e) || loaded_now;
}

/* ---- submit and cancel ---------------------------------------------- */

enum st_status st_engine_pool_submit(struct st_engine_pool *p, struct st_request *req,
                                     struct st_err *err)
{
    if (atomic_load(&p->closing))
        return st_err_set(err, ST_ERR_SHUTDOWN, "the server is shutting down");
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
    return ST_OK;
}

void st_engine_pool_cancel(struct st_engine_pool *p, struct st_request *req)
{
    atomic_store(&req->cancelled, true);
    if (st_sched_cancel(p->sched, &req->job))
        st_pool_end_unslotted(p, req, ST_FINISH_CANCELLED, ST_OK, NULL);
}
