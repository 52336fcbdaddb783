/* h_info.c -- the read-only endpoints:
 *
 *   GET /v1/models        {"object":"list","data":[{"id","object":"model","created",
 *                          "owned_by":"strata","strata":{"backend","state","ctx_size",
 *                          "aliases","engines"[,"reason","retry_in_s"]}}]}
 *   GET /v1/models/{id}   one of those (by name or alias), or 404 model_not_found
 *                         Both in Anthropic's shape for an Anthropic SDK (the
 *                         anthropic-version header): {"data":[{"type":"model","id",
 *                         "display_name","created_at"}],"first_id","last_id","has_more"}
 *   GET /health           200 {"status":"ok"}; 503 (OpenAI error shape) while loading,
 *                         while draining for a shutdown, and while no model can serve
 *                         (every one failed to load: model_load_failed, the reason)
 *   GET /metrics          Prometheus text 0.0.4 (metrics.c)
 *   GET /api/activity     the scheduler's dispatch records, newest last; ?limit=N
 *   GET /slots            every engine's slots: state, request, priority, progress,
 *                         the engine's model and its context per slot, the drafts
 *                         its last step checked
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/log.h"
#include "server/daemon.h"
#include "server/responses/responses_store.h"

#define ACTIVITY_MAX 10000

/* Writes element i of the caller's array 'items' as JSON. */
typedef void (*elem_writer)(struct st_out *o, struct st_server *srv, const void *items,
                            size_t i);

/* The JSON array [put(0),put(1),...] of n elements. */
static void json_array(struct st_out *o, struct st_server *srv, const void *items, size_t n,
                       elem_writer put)
{
    st_out_text(o, "[");
    for (size_t i = 0; i < n; i++) {
        st_out_sep(o);
        put(o, srv, items, i);
    }
    st_out_text(o, "]");
}

/* "aliases":[...],"engines":[...] of the strata object. */
static void model_lists(struct st_out *o, struct st_server *srv, int32_t m,
                        const struct st_model_status *st)
{
    int32_t n_alias = 0;
    const char *const *aliases = st_engine_pool_model_aliases(srv->pool, m, &n_alias);
    st_out_kv_raw(o, "aliases", "[");
    for (int32_t i = 0; i < n_alias; i++) {
        st_out_sep(o);
        st_out_json_cstr(o, aliases[i]);
    }
    st_out_text(o, "]");
    st_out_kv_raw(o, "engines", "[");
    for (int32_t i = 0; i < st->n_engines; i++) {
        st_out_sep(o);
        st_out_json_i64(o, st->engines[i]);
    }
    st_out_text(o, "]");
}

/* llama-server's "aliases" (every id the model answers to, its own first)
 * and "tags" (--tags). */
static void llama_names(struct st_out *o, struct st_server *srv, int32_t m)
{
    int32_t n = 0;
    const char *const *v = st_engine_pool_model_aliases(srv->pool, m, &n);
    st_out_kv_raw(o, "aliases", "[");
    st_out_json_cstr(o, st_engine_pool_model_name(srv->pool, m));
    for (int32_t i = 0; i < n; i++) {
        st_out_sep(o);
        st_out_json_cstr(o, v[i]);
    }
    st_out_text(o, "]");
    v = st_engine_pool_model_tags(srv->pool, m, &n);
    st_out_kv_raw(o, "tags", "[");
    for (int32_t i = 0; i < n; i++) {
        st_out_sep(o);
        st_out_json_cstr(o, v[i]);
    }
    st_out_text(o, "]");
}

/* One model: OpenAI's fields, llama-server's aliases and tags, then ours
 * under "strata": backend, state (unloaded, loading, loaded, failed),
 * ctx_size, aliases, the engines that have it (or are loading it); a failed
 * model adds the reason and the seconds until a request may try the load
 * again. */
static void model_obj(struct st_out *o, struct st_server *srv, int32_t m)
{
    struct st_model_status st;
    st_engine_pool_model_status(srv->pool, m, &st);
    const char *backend = st_engine_pool_backend_name(srv->pool, m);
    st_out_text(o, "{");
    st_out_kv_str(o, "id", st_engine_pool_model_name(srv->pool, m));
    st_out_kv_str(o, "object", "model");
    st_out_kv_i64(o, "created", srv->created);
    st_out_kv_str(o, "owned_by", "strata");
    llama_names(o, srv, m);
    st_out_kv_raw(o, "strata", "{");
    st_out_kv_str(o, "backend", backend ? backend : "unknown");
    st_out_kv_str(o, "state", st_model_state_name(st.state));
    st_out_kv_i64(o, "ctx_size", st_engine_pool_ctx_size(srv->pool, m));
    model_lists(o, srv, m, &st);
    if (st.state == ST_MODEL_FAILED) {
        st_out_kv_str(o, "reason", st.reason);
        st_out_kv_i64(o, "retry_in_s", st_retry_seconds(st.retry_in_s));
    }
    st_out_text(o, "}}");
}

/* The models are numbered: no items array. */
static void model_at(struct st_out *o, struct st_server *srv, const void *items, size_t i)
{
    (void)items;
    model_obj(o, srv, (int32_t)i);
}

/* Anthropic's model object: type, id, display_name, created_at (RFC 3339). */
static void anthropic_model_obj(struct st_out *o, struct st_server *srv, int32_t m)
{
    char when[32] = "1970-01-01T00:00:00Z";
    time_t t = (time_t)srv->created;
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    st_out_text(o, "{");
    st_out_kv_str(o, "type", "model");
    st_out_kv_str(o, "id", st_engine_pool_model_name(srv->pool, m));
    st_out_kv_str(o, "display_name", st_engine_pool_model_name(srv->pool, m));
    st_out_kv_str(o, "created_at", when);
    st_out_text(o, "}");
}

static void anthropic_model_at(struct st_out *o, struct st_server *srv, const void *items,
                               size_t i)
{
    (void)items;
    anthropic_model_obj(o, srv, (int32_t)i);
}

/* Anthropic's page: every model at once, so has_more is false. */
static void anthropic_models(struct st_out *o, struct st_server *srv, int32_t n)
{
    st_out_text(o, "{\"data\":");
    json_array(o, srv, NULL, (size_t)n, anthropic_model_at);
    if (n > 0) {
        st_out_kv_str(o, "first_id", st_engine_pool_model_name(srv->pool, 0));
        st_out_kv_str(o, "last_id", st_engine_pool_model_name(srv->pool, n - 1));
    } else {
        st_out_kv_raw(o, "first_id", "null");
        st_out_kv_raw(o, "last_id", "null");
    }
    st_out_kv_raw(o, "has_more", "false");
    st_out_text(o, "}");
}

enum st_route_result st_h_models(struct st_call *c)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    int32_t n = st_engine_pool_n_models(c->srv->pool);
    if (st_call_anthropic(c)) {
        anthropic_models(&o, c->srv, n);
        return st_reply_json_built(c, st_out_finish(&o), &b);
    }
    st_out_text(&o, "{\"object\":\"list\",\"data\":");
    json_array(&o, c->srv, NULL, (size_t)n, model_at);
    st_out_text(&o, "}");
    return st_reply_json_built(c, st_out_finish(&o), &b);
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
    struct st_out o;
    st_out_init(&o, &b);
    if (st_call_anthropic(c))
        anthropic_model_obj(&o, c->srv, m);
    else
        model_obj(&o, c->srv, m);
    return st_reply_json_built(c, st_out_finish(&o), &b);
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
    if (st_metrics_models_take(c->srv->pool, c->srv->sched, &mm) != ST_OK)
        return st_reply_nomem(c);
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_metrics_render(&b, &ss, &ps, &hs, &mm);
    st_metrics_models_fini(&mm);
    if (rc != ST_OK) {
        st_buf_fini(&b);
        return st_reply_nomem(c);
    }
    /* llama-server's header: the unix second the server started */
    char start[24];
    snprintf(start, sizeof(start), "%lld", (long long)c->srv->created);
    return st_reply(c, 200, "text/plain; version=0.0.4; charset=utf-8", &b,
                    "Process-Start-Time-Unix", start);
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

/* Record i of the st_activity array 'items' (an elem_writer). */
static void activity_obj(struct st_out *o, struct st_server *srv, const void *items, size_t i)
{
    st_activity_json(o, srv, (const struct st_activity *)items + i);
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
    uint64_t first_live = n > 0 ? recs[0].id : UINT64_MAX;
    size_t kept = 0;   /* a key sees only its own requests (docs/SECURITY.md) */
    for (size_t i = 0; i < n; i++)
        if (st_auth_sees(c, st_owners_find(c->srv->owners, recs[i].request_id)))
            recs[kept++] = recs[i];
    n = kept;
    /* --state-dir: the older records (earlier runs, or out of the ring) first */
    struct st_buf older;
    st_buf_init(&older);
    size_t n_older = 0;
    enum st_status rc = st_state_activity(c, first_live, limit - n, &older, &n_older);
    if (rc != ST_OK) {
        st_log(ST_LOG_WARN, "state", "/api/activity: the kept records cannot be read: %s",
               st_status_msg(rc));
        n_older = 0;
    }
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    if (n_older == 0) {
        json_array(&o, c->srv, recs, n, activity_obj);
    } else {
        st_out_text(&o, "[");
        st_out_raw(&o, older.data, older.len);
        for (size_t i = 0; i < n; i++) {
            st_out_sep(&o);
            activity_obj(&o, c->srv, recs, i);
        }
        st_out_text(&o, "]");
    }
    st_buf_fini(&older);
    free(recs);
    return st_reply_json_built(c, st_out_finish(&o), &b);
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
static void slot_obj(struct st_out *o, struct st_server *srv, const void *items, size_t i)
{
    const struct st_slot_view *v = (const struct st_slot_view *)items + i;
    bool busy = v->state != ST_SLOT_IDLE;
    st_out_text(o, "{");
    st_out_kv_i64(o, "id", v->slot);
    st_out_kv_i64(o, "engine", v->engine);
    st_out_kv_str(o, "state", slot_state_name(v->state));
    st_out_kv_bool(o, "is_processing", busy);
    st_out_kv_str(o, "request_id", busy && v->request_id[0] ? v->request_id : NULL);
    st_out_kv_i64(o, "priority", v->priority);
    st_out_kv_str(o, "band", st_band_name(v->band));
    st_out_kv_i64(o, "n_prompt", v->n_prompt);
    st_out_kv_i64(o, "n_read", v->n_read);
    st_out_kv_i64(o, "n_generated", v->n_generated);
    st_out_kv_i64(o, "give_ways", v->give_ways);
    st_out_kv_i64(o, "n_cached", v->n_cached);
    st_out_kv_i64(o, "n_ctx", v->n_ctx);
    st_out_kv_i64(o, "n_checkpoints", v->n_checkpoints);   /* recurrent state checkpoints */
    st_out_kv_i64(o, "n_kv", v->n_kv);   /* KV tokens held now (--kv-unified: of the pool) */
    /* (KV events on) the full blocks announced, and the last one's engine
     * key as a decimal string (a JSON number would lose bits) */
    st_out_kv_i64(o, "kv_blocks", v->kv_blocks);
    char key[24];
    snprintf(key, sizeof(key), "%llu", (unsigned long long)v->kv_last_block);
    st_out_kv_str(o, "kv_last_block", v->kv_blocks > 0 ? key : NULL);
    st_out_kv_i64(o, "n_draft", v->n_draft);
    /* the engine's loaded model; null while it has none (or is loading one) */
    st_out_kv_str(o, "model", v->model >= 0 ? st_engine_pool_model_name(srv->pool, v->model)
                                            : NULL);
    st_out_text(o, "}");
}

enum st_route_result st_h_slots(struct st_call *c)
{
    if (!c->srv->cfg.slots) {   /* --no-slots: llama-server's answer */
        struct st_api_error e;
        (void)st_api_error_set(&e, ST_ERR_UNSUPPORTED, NULL, NULL, "This server does not "
                               "support slots endpoint. Start it with `--slots`");
        e.http = 501;
        return st_reply_error(c, &e);
    }
    size_t total = st_engine_pool_slots(c->srv->pool, NULL, 0);
    struct st_slot_view *v = calloc(total ? total : 1, sizeof(*v));
    if (!v)
        return st_reply_nomem(c);
    size_t n = ST_MIN(total, st_engine_pool_slots(c->srv->pool, v, total));
    for (size_t i = 0; i < n; i++)   /* another key's request: the slot shows busy, no more */
        if (v[i].request_id[0] &&
            !st_auth_sees(c, st_owners_find(c->srv->owners, v[i].request_id))) {
            memset(v[i].request_id, 0, sizeof(v[i].request_id));
            v[i].priority = v[i].give_ways = v[i].n_draft = 0;
            v[i].n_prompt = v[i].n_read = v[i].n_generated = v[i].n_cached = v[i].n_kv = 0;
            v[i].kv_blocks = 0;
            v[i].kv_last_block = 0;
        }
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    json_array(&o, c->srv, v, n, slot_obj);
    free(v);
    return st_reply_json_built(c, st_out_finish(&o), &b);
}
