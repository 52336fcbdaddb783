/* swap.c -- which model an engine has loaded, and when that changes
 * (docs/MODELS.md, docs/design/SCHEDULER.md section 6).
 *
 *   start-up  the engine loads the first model (config order) marked
 *             preload that it may run; a pool of one model always does;
 *   swap      the scheduler gave a free engine a request for another model
 *             (job->swapped: it only does so when all the engine's slots
 *             are free, no preemption): unload, load the request's model,
 *             then the request starts. The load time goes to the request's
 *             activity record and to strata_model_load_seconds;
 *   ttl       an engine idle for its model's ttl unloads it;
 *   failure   a load that fails ends the request that caused it with
 *             ST_ERR_LOADING and the reason, and hands the model to the
 *             back-off logic in models.c (the engine is left empty).
 *
 * Load progress is logged at INFO every 10%. Everything here runs on the
 * engine's thread (or the test thread in st_engine_pool_step mode).
 */
#include <stdio.h>
#include <string.h>

#include "engine/step.h"
#include "strata/log.h"

static int64_t now_ns(const struct st_engine *e)
{
    return st_clock_now(e->pool->clock);
}

static const char *model_name(const struct st_engine *e, int32_t m)
{
    return m >= 0 ? e->pool->models[m].cfg.name : "(none)";
}

static void log_progress(void *ctx, double fraction)
{
    struct st_engine *e = ctx;
    int32_t decile = (int32_t)(fraction * 10.0 + 1e-9);
    if (decile <= e->progress_decile || decile > 10)
        return;
    e->progress_decile = decile;
    int32_t m = atomic_load(&e->loading_view);
    st_log(ST_LOG_INFO, "engine", "engine %d: loading model '%s': %d%%", (int)e->index,
           model_name(e, m), (int)decile * 10);
}

/* Load model m into the (empty) engine. *seconds: how long it took. On
 * failure err says why and the engine stays empty. */
static enum st_status load(struct st_engine *e, int32_t from, int32_t m, double *seconds,
                           struct st_err *err)
{
    struct st_engine_pool *p = e->pool;
    const struct st_model_config *mc = &p->models[m].cfg;
    struct st_runner *r = NULL;
    int64_t t0 = now_ns(e);

    ST_ASSERT(e->runner == NULL && e->model < 0);
    e->progress_decile = 0;
    atomic_store(&e->loading_view, m);
    st_engine_update_views(e);   /* /slots: no model while loading (not the one unloaded) */
    st_pool_model_loading(p, m);
    st_log(ST_LOG_INFO, "engine", "engine %d: loading model '%s' (%s%s%s)", (int)e->index,
           mc->name, st_engine_pool_backend_name(p, m), mc->path ? ", " : "",
           mc->path ? mc->path : "");
    enum st_status rc = st_pool_runner_new(p, m, e->device, &r, err);
    if (rc == ST_OK) {
        r->mtp_draft = p->cfg.mtp ? p->cfg.mtp_draft : 0;   /* (MTP) read by load */
        r->spec_draft = p->cfg.ngram ? ST_MIN(p->cfg.spec_draft, ST_SPEC_MAX_DRAFT) : 0;
        r->ctx_checkpoints = ST_MIN(p->cfg.ctx_checkpoints, ST_RUNNER_MAX_CKPT);
        rc = st_runner_load(r, p->clock, log_progress, e, err);
    }
    if (rc != ST_OK && err && err->code == ST_OK)
        st_err_set(err, rc, "%s", st_status_msg(rc));
    *seconds = (double)(now_ns(e) - t0) / (double)ST_NS_PER_SEC;
    if (rc != ST_OK) {
        st_runner_free(r);
    } else {
        e->runner = r;
        e->model = m;
        e->n_active = ST_MIN(mc->parallel, e->n_slots);
        st_sched_engine_set_slots(p->sched, e->index, e->n_active);
        atomic_store(&e->state_tokens, r->state_tokens);
        atomic_store(&e->state_ckpts, r->recurrent ? r->ctx_checkpoints : 0);
        atomic_store(&e->model_view, m);
        st_log(ST_LOG_INFO, "engine", "engine %d: model '%s' (%s, %d slots of %lld tokens%s) "
               "loaded in %.2f s", (int)e->index, mc->name, r->ops->name, (int)e->n_active,
               (long long)r->n_ctx, mc->kv_pool > 0 ? " shared: one unified KV pool" : "",
               *seconds);
        st_engine_mtp_loaded(e);   /* (MTP) drafting on, or say the model has no MTP layer */
    }
    st_pool_model_load_done(p, from, m, rc == ST_OK, *seconds);
    atomic_store(&e->loading_view, -1);
    e->idle_since_ns = now_ns(e);
    /* /slots reads the views, which a step only refreshes when it has work:
     * an engine that loads at start-up and then idles must show its model
     * now, not the empty engine of engine_init. */
    st_engine_update_views(e);
    return rc;
}

/* Drop the loaded model; 'count': an unload the metrics see (not shutdown). */
static void unload(struct st_engine *e, bool count, bool ttl)
{
    if (e->model < 0)
        return;
    int32_t m = e->model;
    atomic_store(&e->model_view, -1);
    atomic_store(&e->state_tokens, 0);
    atomic_store(&e->state_ckpts, 0);
    st_kv_blocks_unload(e, m);   /* before the slots' caches are void */
    st_runner_unload(e->runner);
    st_runner_free(e->runner);
    e->runner = NULL;
    e->model = -1;
    st_engine_prefix_forget(e);   /* the KV the slots kept went with the runner */
    if (count)
        st_pool_model_unloaded(e->pool, m, ttl);
}

void st_engine_unload_quiet(struct st_engine *e)
{
    unload(e, false, false);   /* the pool is going away: its counters no longer matter */
}

bool st_engine_start_up(struct st_engine *e)
{
    struct st_engine_pool *p = e->pool;
    int32_t pick = -1;
    for (int32_t m = 0; m < p->n_models && pick < 0; m++) {
        if (p->models[m].cfg.preload && (p->models[m].engine_mask & (UINT32_C(1) << e->index)))
            pick = m;
    }
    if (pick >= 0) {
        struct st_err err = { 0 };
        double seconds;
        if (load(e, -1, pick, &seconds, &err) == ST_OK) {
            st_sched_engine_set_model(p->sched, e->index, pick);
        } else if (st_pool_model_failed(p, e->index, pick, err.msg)) {
            st_pool_fail_waiting(p, pick, err.msg);
        }
    }
    e->idle_since_ns = now_ns(e);
    atomic_store(&e->started_up, true);
    return pick >= 0;
}

/* End a request the scheduler admitted into a slot this engine never bound
 * (its model did not load): it leaves the scheduler, gets END, and the
 * engine's reference goes. */
static void end_admitted(struct st_engine *e, struct st_request *req, const char *msg)
{
    struct st_job_report report = { 0 };
    req->end_ns = now_ns(e);
    st_sched_finish(e->pool->sched, &req->job, ST_OUTCOME_FAILED, &report);
    st_request_emit_end(req, ST_FINISH_ERROR, ST_ERR_LOADING, msg, 0);
    st_pool_forget(e->pool, req);
    st_request_unref(req);
}

bool st_engine_swap(struct st_engine *e, struct st_request *req)
{
    struct st_engine_pool *p = e->pool;
    int32_t from = e->model, to = req->model;
    struct st_err err = { 0 };
    double seconds = 0;

    st_log(ST_LOG_INFO, "engine", "engine %d: swapping model '%s' -> '%s' for request %s "
           "(priority %d, waited %.3f s)", (int)e->index, model_name(e, from), model_name(e, to),
           req->id, (int)req->job.priority,
           (double)(req->job.dispatch_ns - req->job.arrival_ns) / (double)ST_NS_PER_SEC);
    unload(e, true, false);
    enum st_status rc = load(e, from, to, &seconds, &err);
    st_sched_job_loaded(p->sched, &req->job, seconds * 1000.0);
    if (rc == ST_OK)
        return true;

    /* The scheduler thinks 'to' is loaded here: it is not, nothing is. */
    st_sched_engine_set_model(p->sched, e->index, -1);
    char msg[sizeof(err.msg) + 300];
    snprintf(msg, sizeof(msg), "model '%s' failed to load: %s", model_name(e, to), err.msg);
    bool blocked = st_pool_model_failed(p, e->index, to, err.msg);
    end_admitted(e, req, msg);
    if (blocked)
        st_pool_fail_waiting(p, to, msg);
    return false;
}

bool st_engine_ttl_check(struct st_engine *e)
{
    if (e->model < 0 || atomic_load(&e->busy) > 0)
        return false;
    double ttl = e->pool->models[e->model].cfg.ttl_s;
    int64_t idle = now_ns(e) - e->idle_since_ns;
    if (ttl <= 0 || (double)idle < ttl * (double)ST_NS_PER_SEC)
        return false;
    int32_t m = e->model;
    unload(e, true, true);
    st_sched_engine_set_model(e->pool->sched, e->index, -1);
    st_log(ST_LOG_INFO, "engine", "engine %d: model '%s' unloaded after %.0f s idle (ttl %g s)",
           (int)e->index, model_name(e, m), (double)idle / (double)ST_NS_PER_SEC, ttl);
    return true;
}

int64_t st_engine_next_deadline(struct st_engine *e)
{
    int64_t t = st_pool_engine_retry_deadline(e);
    if (e->model >= 0 && atomic_load(&e->busy) == 0) {
        double ttl = e->pool->models[e->model].cfg.ttl_s;
        if (ttl > 0)
            t = ST_MIN(t, e->idle_since_ns + (int64_t)(ttl * (double)ST_NS_PER_SEC));
    }
    return t;
}
