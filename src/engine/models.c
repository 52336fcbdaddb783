/* models.c -- the models of a pool: their configs, states and counters, the
 * back-off after a failed load, and the text side (docs/MODELS.md).
 *
 * A model's state is derived, never stored: loaded when some engine has it
 * loaded, else loading when some engine is loading it, else failed when its
 * last load failed, else unloaded. Engines report loads and unloads here
 * (swap.c); the server reads st_engine_pool_model_status().
 *
 * Back-off. A load that fails on engine E denies the model on E (in the
 * scheduler) until retry_ns = now + load_backoff_s, so E does not pick the
 * model's requests again at once. When every engine that may run the model
 * is in its back-off, the model is "blocked": its waiting requests are
 * ended with ST_ERR_LOADING and the reason, and st_engine_pool_submit
 * refuses new ones with the same (503). The first submit or engine step
 * after retry_ns lifts the denial, so the next request tries the load
 * again. Nothing waits forever: a request either waits for an engine that
 * may load its model, or is told why not.
 *
 * The text side (tokenize, templates) is served by one unloaded runner per
 * model (runner.h): made at creation for the sim, on first use for a
 * backend that opens a file, so start-up never opens a model file.
 *
 * Locks: models_mu guards the states, the engines' retry_ns and the swap
 * matrix, and may be held while calling the scheduler (pool.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "strata/log.h"

#define DEFAULT_MODEL_NAME "strata-sim"

const char *st_model_state_name(enum st_model_state s)
{
    switch (s) {
    case ST_MODEL_UNLOADED: return "unloaded";
    case ST_MODEL_LOADING:  return "loading";
    case ST_MODEL_LOADED:   return "loaded";
    case ST_MODEL_FAILED:   return "failed";
    }
    return "unknown";
}

static int64_t now_ns(const struct st_engine_pool *p)
{
    return st_clock_now(p->clock);
}

/* ---- creation -------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = true;
    return d;
}

/* A copy of the n strings of v (NULL ones as ""); *n_out how many it holds. */
static char **dup_list(char *const *v, int32_t n, int32_t *n_out, bool *oom)
{
    *n_out = 0;
    if (n <= 0)
        return NULL;
    char **out = calloc((size_t)n, sizeof(*out));
    *oom |= out == NULL;
    for (int32_t a = 0; out && a < n; a++, (*n_out)++)
        out[a] = dup_or_null(v[a] ? v[a] : "", oom);
    return out;
}

/* Copy 'src' into 'dst' (strings owned by the pool). */
static enum st_status copy_model(struct st_model_config *dst, const struct st_model_config *src,
                                 struct st_err *err)
{
    bool oom = false;
    *dst = *src;
    dst->name = dup_or_null(src->name ? src->name : DEFAULT_MODEL_NAME, &oom);
    dst->path = dup_or_null(src->path, &oom);
    dst->aliases = dup_list(src->aliases, src->n_aliases, &dst->n_aliases, &oom);
    dst->tags = dup_list(src->tags, src->n_tags, &dst->n_tags, &oom);
    return oom ? st_err_set(err, ST_ERR_NOMEM, "no memory for the model list") : ST_OK;
}

static bool answers_to(const struct st_model_config *m, const char *id)
{
    if (strcmp(m->name, id) == 0)
        return true;
    for (int32_t a = 0; a < m->n_aliases; a++) {
        if (strcmp(m->aliases[a], id) == 0)
            return true;
    }
    return false;
}

/* Names and aliases are unique; a pinned model's devices exist. */
static enum st_status check_model(struct st_engine_pool *p, int32_t i, struct st_err *err)
{
    struct st_pool_model *pm = &p->models[i];
    for (int32_t j = 0; j < i; j++) {
        bool clash = answers_to(&p->models[j].cfg, pm->cfg.name);
        for (int32_t a = 0; a < pm->cfg.n_aliases && !clash; a++)
            clash = answers_to(&p->models[j].cfg, pm->cfg.aliases[a]);
        if (clash)
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "model '%s': its name or an alias is already used by model '%s'",
                              pm->cfg.name, p->models[j].cfg.name);
    }
    if (pm->cfg.n_gpus == 0) {
        pm->engine_mask = (UINT32_C(1) << p->cfg.n_engines) - 1;
        return ST_OK;
    }
    for (int32_t g = 0; g < pm->cfg.n_gpus; g++) {
        int32_t hit = -1;
        for (int32_t e = 0; e < p->cfg.n_engines && hit < 0; e++)
            hit = p->cfg.gpus[e] == pm->cfg.gpus[g] ? e : -1;
        if (hit < 0)
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "model '%s': gpu %d is not one of the server's devices", pm->cfg.name,
                              (int)pm->cfg.gpus[g]);
        pm->engine_mask |= UINT32_C(1) << hit;
    }
    return ST_OK;
}

enum st_status st_pool_models_init(struct st_engine_pool *p, const struct st_pool_config *cfg,
                                   struct st_err *err)
{
    int32_t n = 1 + cfg->n_extra_models;
    enum st_status rc = ST_OK;
    p->models = calloc((size_t)n, sizeof(*p->models));
    p->swaps = calloc((size_t)(n + 1) * (size_t)n, sizeof(*p->swaps));
    if (!p->models || !p->swaps)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for %d models", (int)n);
    p->n_models = n;
    for (int32_t i = 0; i < n && rc == ST_OK; i++) {
        const struct st_model_config *src = i == 0 ? &cfg->model : &cfg->extra_models[i - 1];
        st_histogram_init_load(&p->models[i].load_seconds);
        rc = copy_model(&p->models[i].cfg, src, err);
        if (rc == ST_OK)
            rc = check_model(p, i, err);
        /* The sim's text side costs nothing: make it now (this also checks
         * the sim's settings at start-up). Others wait for first use. */
        if (rc == ST_OK && p->models[i].cfg.backend == ST_BACKEND_SIM)
            rc = st_pool_runner_new(p, i, -1, &p->models[i].text, err);
    }
    /* A server of one model loads it at start, as llama-server does. */
    if (rc == ST_OK && n == 1)
        p->models[0].cfg.preload = true;
    return rc;
}

void st_pool_models_fini(struct st_engine_pool *p)
{
    for (int32_t i = 0; p->models && i < p->n_models; i++) {
        struct st_model_config *m = &p->models[i].cfg;
        st_runner_free(p->models[i].text);
        free(m->name);
        free(m->path);
        for (int32_t a = 0; a < m->n_aliases; a++)
            free(m->aliases[a]);
        free(m->aliases);
        for (int32_t a = 0; a < m->n_tags; a++)
            free(m->tags[a]);
        free(m->tags);
    }
    free(p->models);
    free(p->swaps);
    p->models = NULL;
    p->swaps = NULL;
    p->n_models = 0;
}

/* ---- back-off ---------------------------------------------------------- */

/* Under models_mu: lift engine e's back-off of model m if it has passed. */
static void lift_locked(struct st_engine_pool *p, struct st_engine *e, int32_t m, int64_t now)
{
    if (e->retry_ns[m] != 0 && e->retry_ns[m] <= now) {
        e->retry_ns[m] = 0;
        st_sched_engine_allow_model(p->sched, e->index, m, true);
    }
}

/* Under models_mu: is every engine that may run m in its back-off? Sets
 * *retry to the soonest end. */
static bool blocked_locked(struct st_engine_pool *p, int32_t m, int64_t now, int64_t *retry)
{
    const struct st_pool_model *pm = &p->models[m];
    *retry = INT64_MAX;
    for (int32_t i = 0; i < p->n_engines; i++) {
        struct st_engine *e = &p->engines[i];
        if (!(pm->engine_mask & (UINT32_C(1) << i)))
            continue;
        lift_locked(p, e, m, now);
        if (e->retry_ns[m] == 0)
            return false;
        *retry = ST_MIN(*retry, e->retry_ns[m]);
    }
    return *retry != INT64_MAX;
}

static double seconds_until(int64_t t, int64_t now)
{
    return t > now ? (double)(t - now) / (double)ST_NS_PER_SEC : 0.0;
}

bool st_pool_model_blocked(struct st_engine_pool *p, int32_t model, struct st_err *err)
{
    int64_t now = now_ns(p), retry;
    pthread_mutex_lock(&p->models_mu);
    bool blocked = blocked_locked(p, model, now, &retry);
    if (blocked)
        st_err_set(err, ST_ERR_LOADING,
                   "model '%s' failed to load: %s; the next request after %.0f s tries again",
                   p->models[model].cfg.name, p->models[model].reason,
                   seconds_until(retry, now) + 0.499);
    pthread_mutex_unlock(&p->models_mu);
    return blocked;
}

bool st_pool_model_failed(struct st_engine_pool *p, int32_t engine, int32_t model,
                          const char *reason)
{
    struct st_pool_model *pm = &p->models[model];
    int64_t now = now_ns(p), retry;
    int64_t until = now + (int64_t)(p->cfg.load_backoff_s * (double)ST_NS_PER_SEC);
    pthread_mutex_lock(&p->models_mu);
    pm->failed = true;
    snprintf(pm->reason, sizeof(pm->reason), "%s", reason && reason[0] ? reason : "unknown");
    for (int32_t i = 0; until > now && i < p->n_engines; i++) {
        if ((engine >= 0 && i != engine) || !(pm->engine_mask & (UINT32_C(1) << i)))
            continue;
        p->engines[i].retry_ns[model] = until;
        st_sched_engine_allow_model(p->sched, i, model, false);
    }
    /* Loaded or loading elsewhere: those engines keep serving it. */
    bool blocked = pm->n_loaded == 0 && pm->n_loading == 0 &&
                   blocked_locked(p, model, now, &retry);
    pthread_mutex_unlock(&p->models_mu);
    char where[32] = "";
    if (engine >= 0)
        snprintf(where, sizeof(where), " on engine %d", (int)engine);
    st_log(ST_LOG_ERROR, "engine", "model '%s' failed to load%s: %s; %s (back-off %.0f s)",
           pm->cfg.name, where, reason && reason[0] ? reason : "unknown",
           blocked ? "its requests get 503 with this reason until the back-off ends"
                   : "other engines may still serve it",
           p->cfg.load_backoff_s);
    return blocked;
}

void st_pool_fail_waiting(struct st_engine_pool *p, int32_t model, const char *msg)
{
    struct st_sched_job *jobs[32];
    size_t n;
    while ((n = st_sched_drain_model(p->sched, model, ST_OUTCOME_FAILED, jobs,
                                     ST_ARRAY_LEN(jobs))) > 0) {
        for (size_t i = 0; i < n; i++) {
            struct st_request *req = ST_CONTAINER_OF(jobs[i], struct st_request, job);
            st_pool_end_unslotted(p, req, ST_FINISH_ERROR, ST_ERR_LOADING, msg);
        }
    }
}

void st_pool_engine_lift(struct st_engine *e)
{
    struct st_engine_pool *p = e->pool;
    int64_t now = now_ns(p);
    pthread_mutex_lock(&p->models_mu);
    for (int32_t m = 0; m < p->n_models; m++)
        lift_locked(p, e, m, now);
    pthread_mutex_unlock(&p->models_mu);
}

int64_t st_pool_engine_retry_deadline(struct st_engine *e)
{
    struct st_engine_pool *p = e->pool;
    int64_t t = INT64_MAX;
    pthread_mutex_lock(&p->models_mu);
    for (int32_t m = 0; m < p->n_models; m++) {
        if (e->retry_ns[m] != 0)
            t = ST_MIN(t, e->retry_ns[m]);
    }
    pthread_mutex_unlock(&p->models_mu);
    return t;
}

/* ---- load accounting ------------------------------------------------- */

void st_pool_model_loading(struct st_engine_pool *p, int32_t model)
{
    pthread_mutex_lock(&p->models_mu);
    p->models[model].n_loading++;
    pthread_mutex_unlock(&p->models_mu);
}

void st_pool_model_load_done(struct st_engine_pool *p, int32_t from, int32_t model, bool ok,
                             double seconds)
{
    struct st_pool_model *pm = &p->models[model];
    pthread_mutex_lock(&p->models_mu);
    pm->n_loading--;
    st_histogram_add(&pm->load_seconds, seconds);
    if (ok) {
        pm->n_loaded++;
        pm->loads++;
        pm->failed = false;
        pm->reason[0] = '\0';
        p->swaps[(size_t)(from + 1) * (size_t)p->n_models + (size_t)model]++;
    } else {
        pm->load_failures++;
    }
    pthread_mutex_unlock(&p->models_mu);
}

void st_pool_model_unloaded(struct st_engine_pool *p, int32_t model, bool ttl)
{
    pthread_mutex_lock(&p->models_mu);
    p->models[model].n_loaded--;
    p->models[model].unloads++;
    p->models[model].ttl_unloads += ttl;
    pthread_mutex_unlock(&p->models_mu);
}

/* ---- the text side ---------------------------------------------------- */

enum st_status st_pool_text(struct st_engine_pool *p, int32_t model, const struct st_runner **out,
                            struct st_err *err)
{
    struct st_pool_model *pm = &p->models[model];
    struct st_err why = { 0 };
    bool drain = false;

    pthread_mutex_lock(&p->text_mu);
    struct st_runner *r = pm->text;
    if (!r && !st_pool_model_blocked(p, model, NULL)) {
        if (st_pool_runner_new(p, model, -1, &r, &why) == ST_OK) {
            pm->text = r;
        } else {
            r = NULL;
            drain = st_pool_model_failed(p, -1, model, why.msg);
        }
    }
    pthread_mutex_unlock(&p->text_mu);
    if (drain)
        st_pool_fail_waiting(p, model, why.msg);
    *out = r;
    if (r)
        return ST_OK;
    /* Blocked: its message says when it retries. Not blocked (back-off 0):
     * the reason is this attempt's. */
    if (!st_pool_model_blocked(p, model, err))
        st_err_set(err, ST_ERR_LOADING, "model '%s' failed to load: %s", pm->cfg.name,
                   why.msg[0] ? why.msg : "unknown");
    return ST_ERR_LOADING;
}

/* ---- what the server reads ------------------------------------------ */

int32_t st_engine_pool_n_models(const struct st_engine_pool *p)
{
    return p->n_models;
}

int32_t st_engine_pool_n_engines(const struct st_engine_pool *p)
{
    return p->n_engines;
}

const char *st_engine_pool_model_name(const struct st_engine_pool *p, int32_t model)
{
    return model >= 0 && model < p->n_models ? p->models[model].cfg.name : NULL;
}

const char *st_engine_pool_model_path(const struct st_engine_pool *p, int32_t model)
{
    return model >= 0 && model < p->n_models ? p->models[model].cfg.path : NULL;
}

const char *const *st_engine_pool_model_aliases(const struct st_engine_pool *p, int32_t model,
                                                int32_t *n)
{
    if (model < 0 || model >= p->n_models) {
        *n = 0;
        return NULL;
    }
    *n = p->models[model].cfg.n_aliases;
    return (const char *const *)p->models[model].cfg.aliases;
}

const char *const *st_engine_pool_model_tags(const struct st_engine_pool *p, int32_t model,
                                             int32_t *n)
{
    if (model < 0 || model >= p->n_models) {
        *n = 0;
        return NULL;
    }
    *n = p->models[model].cfg.n_tags;
    return (const char *const *)p->models[model].cfg.tags;
}

int32_t st_engine_pool_find_model(const struct st_engine_pool *p, const char *name)
{
    if (!name)
        return -1;
    for (int32_t m = 0; m < p->n_models; m++) {
        if (answers_to(&p->models[m].cfg, name))
            return m;
    }
    return -1;
}

int32_t st_engine_pool_pick_model(const struct st_engine_pool *p, const char *name)
{
    if (p->n_models == 1 || (name == NULL && p->n_models > 0))
        return 0;
    return st_engine_pool_find_model(p, name);
}

int64_t st_engine_pool_ctx_size(const struct st_engine_pool *p, int32_t model)
{
    return model >= 0 && model < p->n_models ? p->models[model].cfg.ctx_size : 0;
}

const char *st_engine_pool_backend_name(const struct st_engine_pool *p, int32_t model)
{
    if (model < 0 || model >= p->n_models)
        return NULL;
    switch (p->models[model].cfg.backend) {
    case ST_BACKEND_SIM:  return "sim";
    case ST_BACKEND_CPU:  return "cpu";
    case ST_BACKEND_CUDA: return "cuda";
    }
    return "unknown";
}

int32_t st_engine_pool_engine_model(struct st_engine_pool *p, int32_t engine)
{
    if (engine < 0 || engine >= p->n_engines)
        return -1;
    return atomic_load(&p->engines[engine].model_view);
}

static enum st_model_state state_locked(const struct st_pool_model *pm)
{
    if (pm->n_loaded > 0)
        return ST_MODEL_LOADED;
    if (pm->n_loading > 0)
        return ST_MODEL_LOADING;
    return pm->failed ? ST_MODEL_FAILED : ST_MODEL_UNLOADED;
}

bool st_engine_pool_model_status(struct st_engine_pool *p, int32_t model,
                                 struct st_model_status *out)
{
    memset(out, 0, sizeof(*out));
    if (model < 0 || model >= p->n_models)
        return false;
    const struct st_pool_model *pm = &p->models[model];
    int64_t now = now_ns(p), retry = INT64_MAX;
    pthread_mutex_lock(&p->models_mu);
    out->state = state_locked(pm);
    snprintf(out->reason, sizeof(out->reason), "%s", pm->failed ? pm->reason : "");
    for (int32_t i = 0; i < p->n_engines; i++) {
        if (p->engines[i].retry_ns[model] != 0)
            retry = ST_MIN(retry, p->engines[i].retry_ns[model]);
    }
    if (out->state == ST_MODEL_FAILED && retry != INT64_MAX)
        out->retry_in_s = seconds_until(retry, now);
    out->n_loaded = pm->n_loaded;
    out->loads = pm->loads;
    out->load_failures = pm->load_failures;
    out->unloads = pm->unloads;
    out->ttl_unloads = pm->ttl_unloads;
    out->load_seconds = pm->load_seconds;
    pthread_mutex_unlock(&p->models_mu);
    /* Which engines: those that have it (or, while loading, are getting it). */
    for (int32_t i = 0; i < p->n_engines && out->n_engines < (int32_t)ST_ARRAY_LEN(out->engines);
         i++) {
        const struct st_engine *e = &p->engines[i];
        if (atomic_load(&e->model_view) == model || atomic_load(&e->loading_view) == model)
            out->engines[out->n_engines++] = i;
    }
    return true;
}

uint64_t st_engine_pool_swaps(struct st_engine_pool *p, int32_t from, int32_t to)
{
    if (from < -1 || from >= p->n_models || to < 0 || to >= p->n_models)
        return 0;
    pthread_mutex_lock(&p->models_mu);
    uint64_t n = p->swaps[(size_t)(from + 1) * (size_t)p->n_models + (size_t)to];
    pthread_mutex_unlock(&p->models_mu);
    return n;
}
