/* h_info.c -- the read-only endpoints:
 *
 *   GET /v1/models        {"object":"list","data":[{"id","object":"model","created",
 *                          "owned_by":"strata","strata":{"backend","state","ctx_size",
 *                          "aliases","engines"[,"reason","retry_in_s"]}}]}
 *   GET /v1/models/{id}   one of those (by name or alias), or 404 model_not_found
 *   GET /health           200 {"status":"ok"}; 503 (OpenAI error shape) while loading,
 *                         while draining for a shutdown, and while no model can serve
 *                         (every one failed to load: model_load_failed, the reason)
 *   GET /metrics          Prometheus text 0.0.4 (metrics.c)
 *   GET /api/activity     the scheduler's dispatch records, newest last; ?limit=N
 *   GET /slots            every engine's slots: state, request, priority, progress,
 *                         the engine's model and its context per slot
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/daemon.h"
#include "server/responses/responses_store.h"

#define ACTIVITY_MAX 10000

/* Writes element i of the caller's array 'items' as JSON. */
typedef enum st_status (*elem_writer)(struct st_buf *b, struct st_server *srv,
                                      const void *items, size_t i);

/* The JSON array [put(0),put(1),...] of n elements. */
static enum st_status json_array(struct st_buf *b, struct st_server *srv, const void *items,
                                 size_t n, elem_writer put)
{
    enum st_status rc = st_buf_append(b, ST_LIT("["));
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        if (i)
            rc = st_buf_append(b, ST_LIT(","));
        if (rc == ST_OK)
            rc = put(b, srv, items, i);
    }
    if (rc == ST_OK)
        rc = st_buf_append(b, ST_LIT("]"));
    return rc;
}

/* "aliases":[...],"engines":[...] of the strata object. */
static enum st_status model_lists(struct st_buf *b, struct st_server *srv, int32_t m,
                                  const struct st_model_status *st)
{
    int32_t n_alias = 0;
    const char *const *aliases = st_engine_pool_model_aliases(srv->pool, m, &n_alias);
    enum st_status rc = st_buf_append(b, ST_LIT(",\"aliases\":["));
    for (int32_t i = 0; i < n_alias && rc == ST_OK; i++) {
        if (i)
            rc = st_buf_append(b, ST_LIT(","));
        if (rc == ST_OK)
            rc = st_json_cstr(b, aliases[i]);
    }
    if (rc == ST_OK)
        rc = st_buf_append(b, ST_LIT("],\"engines\":["));
    for (int32_t i = 0; i < st->n_engines && rc == ST_OK; i++)
        rc = st_buf_printf(b, "%s%d", i ? "," : "", (int)st->engines[i]);
    if (rc == ST_OK)
        rc = st_buf_append(b, ST_LIT("]"));
    return rc;
}

/* One model: OpenAI's fields, then ours under "strata": backend, state
 * (unloaded, loading, loaded, failed), ctx_size, aliases, the engines that
 * have it (or are loading it); a failed model adds the reason and the
 * seconds until a request may try the load again. */
static enum st_status model_obj(struct st_buf *b, struct st_server *srv, int32_t m)
{
    struct st_model_status st;
    st_engine_pool_model_status(srv->pool, m, &st);
    const char *backend = st_engine_pool_backend_name(srv->pool, m);
    enum st_status rc = st_buf_append(b, ST_LIT("{\"id\":"));
    if (rc == ST_OK)
        rc = st_json_cstr(b, st_engine_pool_model_name(srv->pool, m));
    if (rc == ST_OK)
        rc = st_buf_printf(b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"strata\","
                              "\"strata\":{\"backend\":",
                           (long long)srv->created);
    if (rc == ST_OK)
        rc = st_json_cstr(b, backend ? backend : "unknown");
    if (rc == ST_OK)
        rc = st_buf_printf(b, ",\"state\":\"%s\",\"ctx_size\":%lld",
                           st_model_state_name(st.state),
                           (long long)st_engine_pool_ctx_size(srv->pool, m));
    if (rc == ST_OK)
        rc = model_lists(b, srv, m, &st);
    if (rc == ST_OK && st.state == ST_MODEL_FAILED) {
        rc = st_buf_append(b, ST_LIT(",\"reason\":"));
        if (rc == ST_OK)
            rc = st_json_cstr(b, st.reason);
        if (rc == ST_OK)
            rc = st_buf_printf(b, ",\"retry_in_s\":%d", st_retry_seconds(st.retry_in_s));
    }
    if (rc == ST_OK)
        rc = st_buf_append(b, ST_LIT("}}"));
    return rc;
}

/* The models are numbered: no items array. */
static enum st_status model_at(struct st_buf *b, struct st_server *srv, const void *items,
                               size_t i)
{
    (void)items;
    return model_obj(b, srv, (int32_t)i);
}

enum st_route_result st_h_models(struct st_call *c)
{
    struct st_buf b;
    st_buf_init(&b);
    size_t n = (size_t)st_engine_pool_n_models(c->srv->pool);
    enum st_status rc = st_buf_append(&b, ST_LIT("{\"object\":\"list\",\"data\":"));
    if (rc == ST_OK)
        rc = json_array(&b, c->srv, NULL, n, model_at);
    if (rc == ST_OK)
        rc = st_buf_append(&b, ST_LIT("}"));
    return st_reply_json_built(c, rc, &b);
}

enum st_route_result st_h_model_one(struct st_call *c)
{
    const char *id = c->url + strlen("/v1/models/");
    int32_t m = st_engine_pool_find_model(c->srv->pool, id);
    if (m < 0) {
        struct st_api_error e;
        st_api_error_set(&e, ST_ERR_NOT_FOUND, "model", "model_not_found",
                         "The model `%.120s` does not exist.", id);
        return st_reply_error(c, &e);
    }
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = model_obj(&b, c->srv, m);
    return st_reply_json_built(c, rc, &b);
}

/* 503 model_load_failed when every model's last load failed (none can
 * serve until a back-off ends), naming the first one's reason; Retry-After:
 * the soonest retry. False while at least one model can serve. */
static bool health_none_can_serve(struct st_server *srv, struct st_api_error *e)
{
    int32_t n = st_engine_pool_n_models(srv->pool);
    struct st_model_status first = { 0 };
    double soonest = 0;
    for (int32_t m = 0; m < n; m++) {
        struct st_model_status st;
        if (!st_engine_pool_model_status(srv->pool, m, &st) || st.state != ST_MODEL_FAILED)
            return false;
        if (m == 0)
            first = st;
        if (m == 0 || st.retry_in_s < soonest)
            soonest = st.retry_in_s;
    }
    if (n == 0)
        return false;
    const char *why = first.reason[0] ? first.reason : "its load failed";
    if (n == 1)
        st_api_error_set(e, ST_ERR_LOADING, NULL, "model_load_failed",
                         "No model can serve: %.200s", why);
    else
        st_api_error_set(e, ST_ERR_LOADING, NULL, "model_load_failed",
                         "No model can serve: all %d failed to load; the first: %.160s", (int)n,
                         why);
    int retry = st_retry_seconds(soonest);
    e->retry_after_s = retry > 0 ? retry : 1;
    return true;
}

enum st_route_result st_h_health(struct st_call *c)
{
    if (st_server_draining(c->srv)) {
        struct st_api_error e;
        st_api_error_set(&e, ST_ERR_SHUTDOWN, NULL, "shutting_down",
                         "The server is shutting down.");
        e.retry_after_s = 1;
        return st_reply_error(c, &e);
    }
    if (!st_engine_pool_ready(c->srv->pool)) {
        struct st_api_error e;
        st_api_error_set(&e, ST_ERR_LOADING, NULL, "model_loading", "Loading model");
        e.retry_after_s = 1;
        return st_reply_error(c, &e);
    }
    struct st_api_error none;
    if (health_none_can_serve(c->srv, &none))
        return st_reply_error(c, &none);
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_buf_append(&b, ST_LIT("{\"status\":\"ok\"}"));
    return st_reply_json_built(c, rc, &b);
}

enum st_route_result st_h_metrics(struct st_call *c)
{
    struct st_sched_stats ss;
    struct st_pool_stats ps;
    struct st_http_stats hs;
    st_sched_stats(c->srv->sched, &ss);
    st_engine_pool_stats(c->srv->pool, &ps);
    for (int i = 0; i < ST_HTTP_CODES_TRACKED; i++)
        hs.responses[i] = atomic_load(&c->srv->responses[i]);
    hs.draining = st_server_draining(c->srv);
    struct st_resp_store_stats rs;
    st_resp_store_stats(c->srv->resp_store, &rs);
    hs.resp_stored = rs.entries;
    hs.resp_stored_bytes = rs.bytes;
    hs.resp_evicted = rs.evicted;
    struct st_metrics_models mm;
    if (st_metrics_models_take(c->srv->pool, &mm) != ST_OK)
        return st_reply_nomem(c);
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_metrics_render(&b, &ss, &ps, &hs, &mm);
    st_metrics_models_fini(&mm);
    if (rc != ST_OK) {
        st_buf_fini(&b);
        return st_reply_nomem(c);
    }
    return st_reply(c, 200, "text/plain; version=0.0.4; charset=utf-8", &b, NULL, NULL);
}

/* ?limit=N: 1..ACTIVITY_MAX; absent = ACTIVITY_MAX (the ring holds fewer). */
static bool parse_limit(const char *s, size_t *out)
{
    *out = ACTIVITY_MAX;
    if (!s)
        return true;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || v < 1)
        return false;
    *out = v > ACTIVITY_MAX ? ACTIVITY_MAX : (size_t)v;
    return true;
}

static enum st_status opt_ms(struct st_buf *b, const char *key, double v)
{
    enum st_status rc = st_buf_printf(b, ",\"%s\":", key);
    if (rc == ST_OK)
        rc = v < 0 ? st_buf_append(b, ST_LIT("null")) : st_json_num(b, v);
    return rc;
}

/* Record i of the st_activity array 'items' (an elem_writer). */
static enum st_status activity_obj(struct st_buf *b, struct st_server *srv, const void *items,
                                   size_t i)
{
    const struct st_activity *a = (const struct st_activity *)items + i;
    enum st_status rc = st_buf_printf(b, "{\"id\":%llu,\"request_id\":",
                                      (unsigned long long)a->id);
    if (rc == ST_OK)
        rc = st_json_cstr(b, a->request_id);
    if (rc == ST_OK)
        rc = st_buf_append(b, ST_LIT(",\"model\":"));
    if (rc == ST_OK)
        rc = st_json_cstr(b, st_engine_pool_model_name(srv->pool, a->model));
    if (rc == ST_OK)
        rc = st_buf_printf(b, ",\"engine\":%d,\"slot\":%d,\"serial_priority\":%d,"
                              "\"serial_band\":\"%s\",\"serial_score\":",
                           (int)a->engine, (int)a->slot, (int)a->priority, st_band_name(a->band));
    if (rc == ST_OK)
        rc = st_json_num(b, a->score);
    if (rc == ST_OK)
        rc = st_buf_append(b, ST_LIT(",\"serial_queue_wait_ms\":"));
    if (rc == ST_OK)
        rc = st_json_num(b, a->queue_wait_ms);
    if (rc == ST_OK)
        rc = st_buf_printf(b, ",\"prompt_tokens\":%lld,\"completion_tokens\":%lld,"
                              "\"give_ways\":%d,\"swapped\":%s,\"swap_from\":",
                           (long long)a->prompt_tokens, (long long)a->n_generated,
                           (int)a->give_ways, a->swapped ? "true" : "false");
    /* the model the engine had before this dispatch; null: no swap, or none */
    if (rc == ST_OK)
        rc = st_json_cstr(b, a->swapped && a->swap_from >= 0
                                 ? st_engine_pool_model_name(srv->pool, a->swap_from)
                                 : NULL);
    if (rc == ST_OK)
        rc = st_buf_append(b, ST_LIT(",\"load_ms\":"));
    if (rc == ST_OK)
        rc = st_json_num(b, a->load_ms);
    if (rc == ST_OK)
        rc = st_buf_printf(b, ",\"finished\":%s,\"outcome\":", a->finished ? "true" : "false");
    if (rc == ST_OK)
        rc = st_json_cstr(b, a->finished ? st_outcome_name(a->outcome) : NULL);
    if (rc == ST_OK)
        rc = opt_ms(b, "ttft_ms", a->ttft_ms);
    if (rc == ST_OK)
        rc = opt_ms(b, "total_ms", a->total_ms);
    if (rc == ST_OK)
        rc = st_buf_printf(b, ",\"mtp_drafted\":%lld,\"mtp_accepted\":%lld,"
                              "\"dispatched_unix_ms\":%lld}",
                           (long long)a->mtp_drafted, (long long)a->mtp_accepted,
                           (long long)a->dispatched_unix_ms);
    return rc;
}

enum st_route_result st_h_activity(struct st_call *c)
{
    size_t limit;
    if (!parse_limit(st_call_query(c, "limit"), &limit)) {
        struct st_api_error e;
        st_api_error_set(&e, ST_ERR_INVALID, "limit", NULL,
                         "Invalid value for 'limit': expected a positive integer.");
        return st_reply_error(c, &e);
    }
    struct st_activity *recs = malloc(limit * sizeof(*recs));
    if (!recs)
        return st_reply_nomem(c);
    size_t n = st_sched_activity(c->srv->sched, recs, limit);
    size_t kept = 0;   /* a key sees only its own requests (docs/SECURITY.md) */
    for (size_t i = 0; i < n; i++)
        if (st_auth_sees(c, st_owners_find(c->srv->owners, recs[i].request_id)))
            recs[kept++] = recs[i];
    n = kept;
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = json_array(&b, c->srv, recs, n, activity_obj);
    free(recs);
    return st_reply_json_built(c, rc, &b);
}

static const char *slot_state_name(enum st_slot_state s)
{
    switch (s) {
    case ST_SLOT_IDLE:     return "idle";
    case ST_SLOT_READING:  return "reading";
    case ST_SLOT_PARKED:   return "parked";
    case ST_SLOT_DECODING: return "decoding";
    case ST_SLOT_ADMITTED: return "admitted";
    }
    return "unknown";
}

/* Slot i of the st_slot_view array 'items' (an elem_writer). */
static enum st_status slot_obj(struct st_buf *b, struct st_server *srv, const void *items,
                               size_t i)
{
    const struct st_slot_view *v = (const struct st_slot_view *)items + i;
    bool busy = v->state != ST_SLOT_IDLE;
    enum st_status rc = st_buf_printf(b, "{\"id\":%d,\"engine\":%d,\"state\":\"%s\","
                                         "\"is_processing\":%s,\"request_id\":",
                                      (int)v->slot, (int)v->engine, slot_state_name(v->state),
                                      busy ? "true" : "false");
    if (rc == ST_OK)
        rc = st_json_cstr(b, busy && v->request_id[0] ? v->request_id : NULL);
    if (rc == ST_OK)
        rc = st_buf_printf(b, ",\"priority\":%d,\"band\":\"%s\",\"n_prompt\":%lld,"
                              "\"n_read\":%lld,\"n_generated\":%lld,\"give_ways\":%d,"
                              "\"n_cached\":%lld,\"n_ctx\":%lld,\"model\":",
                           (int)v->priority, st_band_name(v->band), (long long)v->n_prompt,
                           (long long)v->n_read, (long long)v->n_generated, (int)v->give_ways,
                           (long long)v->n_cached, (long long)v->n_ctx);
    /* the engine's loaded model; null while it has none (or is loading one) */
    if (rc == ST_OK)
        rc = st_json_cstr(b, v->model >= 0 ? st_engine_pool_model_name(srv->pool, v->model)
                                           : NULL);
    if (rc == ST_OK)
        rc = st_buf_append(b, ST_LIT("}"));
    return rc;
}

enum st_route_result st_h_slots(struct st_call *c)
{
    size_t total = st_engine_pool_slots(c->srv->pool, NULL, 0);
    struct st_slot_view *v = calloc(total ? total : 1, sizeof(*v));
    if (!v)
        return st_reply_nomem(c);
    size_t n = ST_MIN(total, st_engine_pool_slots(c->srv->pool, v, total));
    for (size_t i = 0; i < n; i++)   /* another key's request: the slot shows busy, no more */
        if (v[i].request_id[0] &&
            !st_auth_sees(c, st_owners_find(c->srv->owners, v[i].request_id))) {
            memset(v[i].request_id, 0, sizeof(v[i].request_id));
            v[i].priority = v[i].give_ways = 0;
            v[i].n_prompt = v[i].n_read = v[i].n_generated = v[i].n_cached = 0;
        }
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = json_array(&b, c->srv, v, n, slot_obj);
    free(v);
    return st_reply_json_built(c, rc, &b);
}
