/* http.c -- the libmicrohttpd daemon: one epoll thread per worker (a small
 * pool, MHD_OPTION_THREAD_POOL_SIZE), never a thread per connection.
 *
 * libmicrohttpd rules we rely on (docs/design/STYLE.md b.5.8):
 *   - The access handler is called several times per request with the same
 *     *con_cls: first with it NULL (we allocate the struct st_call there and
 *     run the checks that need only the headers: route, auth, the declared
 *     body size), then once per piece of the body, then once with
 *     *upload_data_size == 0 (the handler runs).
 *   - A handler that must wait for the engine suspends the connection
 *     (MHD_ALLOW_SUSPEND_RESUME); the engine's emit resumes it and MHD calls
 *     the access handler again (non-stream, or the first event of a stream)
 *     or the content reader (the stream after its headers).
 *   - The struct st_call is released only from MHD_OPTION_NOTIFY_COMPLETED,
 *     and only as a reference: engine requests may still hold it.
 *   - MHD does not see a suspended client leave; watch.c does.
 *   - MHD_stop_daemon must not find a suspended connection: shutdown
 *     resumes every one first (st_server_free).
 */
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/log.h"
#include "server/daemon.h"
#include "server/responses/responses_store.h"
#include "strata/defaults.h"

void st_server_config_defaults(struct st_server_config *c)
{
    memset(c, 0, sizeof(*c));
    c->host = ST_DEFAULT_HOST;
    c->port = ST_DEFAULT_PORT;
    c->body_limit = ST_DEFAULT_BODY_LIMIT;
    c->priority_order = ST_PRIORITY_HIGH_FIRST;
    c->http_threads = ST_DEFAULT_HTTP_THREADS;
    c->activity_log_lines = 1;
    c->cors_origins = ST_DEFAULT_CORS_ORIGINS;
    c->sse_keepalive_s = ST_DEFAULT_SSE_KEEPALIVE_S;
    c->responses_store_bytes = (size_t)ST_DEFAULT_RESPONSES_MB << 20;
    c->state_max_rows = ST_DEFAULT_STATE_MAX_ROWS;
    c->max_connections = ST_DEFAULT_MAX_CONNECTIONS;
    c->max_connections_per_ip = 0;
    c->timeout_s = ST_DEFAULT_TIMEOUT_S;
    c->header_timeout_s = ST_DEFAULT_HEADER_TIMEOUT_S;
    c->stream_buffer = ST_DEFAULT_STREAM_BUFFER;
    c->reasoning_budget = -1;
    c->n_predict = -1;
    c->temp = ST_DEFAULT_TEMPERATURE;
    c->seed = ST_DEFAULT_SEED;
    c->webui = true;
    c->slots = true;
    c->prefill_assistant = true;
}

/* ---- calls ----------------------------------------------------------- */

static struct st_call *call_new(struct st_server *srv, struct MHD_Connection *conn)
{
    struct st_call *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    atomic_init(&c->refs, 1);
    c->srv = srv;
    c->mhd = conn;
    c->start_ns = st_clock_now(st_clock_real());
    st_buf_init(&c->body);
    pthread_mutex_init(&c->lock, NULL);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = ci ? ci->connect_fd : -1;
    st_request_id_pick(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id"),
                       c->request_id, sizeof(c->request_id));
    pthread_mutex_lock(&srv->calls_lock);
    c->next = srv->calls;
    if (srv->calls)
        srv->calls->prev = c;
    srv->calls = c;
    pthread_mutex_unlock(&srv->calls_lock);
    return c;
}


/* ---- the access handler ---------------------------------------------- */

static enum MHD_Result to_mhd(enum st_route_result r)
{
    return r == ST_ROUTE_FAIL ? MHD_NO : MHD_YES;
}

/* 'allow' lists the path's own methods; OPTIONS (preflight) goes with every path. */
static enum st_route_result reply_405(struct st_call *c, const char *allow)
{
    struct st_api_error e;
    struct st_buf body;
    st_api_error_set(&e, ST_ERR_INVALID, NULL, "method_not_allowed",
                     "Method %.16s is not allowed on %.100s; use %s.", c->method, c->url, allow);
    char with_options[80];
    snprintf(with_options, sizeof(with_options), "%s, OPTIONS", allow);
    e.http = 405;
    st_buf_init(&body);
    if (st_api_error_json(&body, &e) != ST_OK) {
        st_buf_fini(&body);
        return st_reply_nomem(c);
    }
    return st_reply(c, 405, "application/json", &body, MHD_HTTP_HEADER_ALLOW, with_options);
}

static enum st_route_result not_found(struct st_call *c)
{
    struct st_api_error e;
    st_api_error_set(&e, ST_ERR_NOT_FOUND, NULL, "not_found", "Invalid URL (%.16s %.100s).",
                     c->method, c->url);
    return st_reply_error(c, &e);
}

/* OPTIONS (a CORS preflight, or a plain one) on a known path: answered
 * without auth, as browsers send preflights without credentials. */
static enum st_route_result preflight(struct st_call *c)
{
    bool known;
    char allow[64];
    (void)st_route_find(c->url, c->method, &known, allow, sizeof(allow));
    char with_options[80];
    snprintf(with_options, sizeof(with_options), "%s, OPTIONS", allow);
    return st_reply_preflight(c, with_options);
}

/* Answered once the request is complete, like a route: a reply queued
 * before that (in first_call) makes libmicrohttpd close the connection. */
static const struct st_route options_route = { "*", "OPTIONS", preflight, false, false, false,
                                               false, false };

static enum st_route_result options_call(struct st_call *c)
{
    bool known;
    char allow[64];
    if (st_route_find(c->url, c->method, &known, allow, sizeof(allow)) || !known)
        return not_found(c);
    c->route = &options_route;
    return ST_ROUTE_DONE;
}

/* Does the call carry the --metrics-key (a scraper's own, for /metrics
 * only)? Compared in constant time, as API keys are. */
static bool metrics_key_ok(struct st_call *c)
{
    if (!c->srv->metrics_key || !c->srv->metrics_key[0])
        return false;
    struct st_api_key k = { .name = "metrics", .key = c->srv->metrics_key };
    return st_auth_find(&k, 1, st_call_header(c, MHD_HTTP_HEADER_AUTHORIZATION)) != NULL ||
           st_auth_find_plain(&k, 1, st_call_header(c, "x-api-key")) != NULL;
}

/* Checks that need only the request line and headers; a response queued
 * here (before the body) makes MHD skip the body and close afterwards. */
static enum st_route_result first_call(struct st_call *c)
{
    struct st_api_error e;
    bool known = false;
    char allow[64];
    if (!st_hosts_allow(&c->srv->hosts, st_call_header(c, MHD_HTTP_HEADER_HOST))) {
        st_api_error_set(&e, ST_ERR_INVALID, NULL, "host_not_allowed",
                         "The Host header names a host this server does not serve; add it "
                         "to --allowed-hosts.");
        e.http = 403;
        return st_reply_error(c, &e);
    }
    if (strcmp(c->method, MHD_HTTP_METHOD_OPTIONS) == 0)
        return options_call(c);
    c->route = st_gcp_route(c->srv, c->url, c->method);   /* Vertex AI's, when on */
    if (!c->route)
        c->route = st_route_find(c->url, c->method, &known, allow, sizeof(allow));
    if (!c->route && known)
        return reply_405(c, allow);
    if (!c->route)
        return not_found(c);
    if (st_conn_refuse(c, &e))
        return st_reply_error(c, &e);
    if (c->route->auth && c->srv->cfg.n_keys > 0) {
        c->key = st_auth_find(c->srv->keys, c->srv->cfg.n_keys,
                              st_call_header(c, MHD_HTTP_HEADER_AUTHORIZATION));
        if (!c->key)   /* Anthropic's SDKs send the key alone in x-api-key */
            c->key = st_auth_find_plain(c->srv->keys, c->srv->cfg.n_keys,
                                        st_call_header(c, "x-api-key"));
        bool metrics_scrape = !c->key && c->route->fn == st_h_metrics && metrics_key_ok(c);
        if (!c->key && !metrics_scrape) {
            st_api_error_set(&e, ST_ERR_AUTH, NULL, "invalid_api_key",
                             "Incorrect or missing API key: send Authorization: Bearer KEY "
                             "(or x-api-key: KEY).");
            return st_reply_error(c, &e);
        }
    }
    if (c->route->body && strcmp(c->method, MHD_HTTP_METHOD_POST) == 0 &&
        !st_content_type_json(st_call_header(c, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        st_api_error_set(&e, ST_ERR_INVALID, NULL, "unsupported_media_type",
                         "The request body must be JSON: send Content-Type: "
                         "application/json.");
        e.http = 415;
        return st_reply_error(c, &e);
    }
    if (c->route->work && c->key)   /* /api/activity, /slots show it to this key only */
        st_owners_add(c->srv->owners, c->request_id, st_auth_owner(c));
    if (c->route->work && st_server_draining(c->srv)) {
        st_api_error_set(&e, ST_ERR_SHUTDOWN, NULL, "shutting_down",
                         "The server is shutting down.");
        e.retry_after_s = 1;
        return st_reply_error(c, &e);
    }
    const char *cl = st_call_header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > c->srv->cfg.body_limit) {
        st_api_error_set(&e, ST_ERR_INVALID, NULL, "body_too_large",
                         "The request body is larger than the limit of %zu bytes "
                         "(--body-limit).", c->srv->cfg.body_limit);
        e.http = 413;
        return st_reply_error(c, &e);
    }
    return ST_ROUTE_DONE;
}

/* A piece of the body: kept until it passes the limit, then dropped (the
 * 413 goes out once the upload ends; memory stays bounded either way). */
static void take_body(struct st_call *c, const char *data, size_t n)
{
    if (!c->route->body || c->body_too_large)
        return;
    if (c->body.len + n > c->srv->cfg.body_limit || st_buf_append(&c->body, data, n) != ST_OK) {
        c->body_too_large = true;
        st_buf_fini(&c->body);
    }
}

/* The call's next step once woken: its generation's, or that of the
 * handler driving sub-calls (gcp.c). */
static enum st_route_result resume(struct st_call *c)
{
    return c->resume ? c->resume(c) : st_gen_resume(c);
}

/* Suspend until the generation is ready, or go on at once if it is. */
static enum MHD_Result wait_or_resume(struct st_call *c, enum st_route_result r)
{
    while (r == ST_ROUTE_WAIT) {
        c->phase = ST_CALL_WAIT;
        pthread_mutex_lock(&c->lock);
        bool suspended = c->resume ? st_call_park_locked(c) : st_call_suspend_locked(c);
        pthread_mutex_unlock(&c->lock);
        if (suspended)
            return MHD_YES;
        r = resume(c);
    }
    return to_mhd(r);
}

static enum MHD_Result run_handler(struct st_call *c)
{
    if (c->body_too_large) {
        struct st_api_error e;
        st_api_error_set(&e, ST_ERR_INVALID, NULL, "body_too_large",
                         "The request body is larger than the limit of %zu bytes "
                         "(--body-limit).", c->srv->cfg.body_limit);
        e.http = 413;
        return to_mhd(st_reply_error(c, &e));
    }
    return wait_or_resume(c, c->route->fn(c));
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    struct st_server *srv = cls;
    struct st_call *c = *con_cls;
    (void)version;
    if (!c) {
        st_conns_headers_in(srv, conn);   /* the header deadline is met */
        c = call_new(srv, conn);
        if (!c)
            return MHD_NO;
        *con_cls = c;
        c->url = url;
        c->method = method;
        return to_mhd(first_call(c));
    }
    c->url = url;
    c->method = method;
    switch (c->phase) {
    case ST_CALL_BODY:
        if (*upload_data_size) {
            take_body(c, upload_data, *upload_data_size);
            *upload_data_size = 0;
            return MHD_YES;
        }
        return run_handler(c);
    case ST_CALL_WAIT:
        return wait_or_resume(c, resume(c));
    case ST_CALL_STREAM:
    case ST_CALL_REPLIED:
        *upload_data_size = 0;   /* a response is queued: drop whatever still comes */
        return MHD_YES;
    }
    return MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct st_server *srv = cls;
    struct st_call *c = *con_cls;
    st_conns_request_done(srv, conn);   /* a keep-alive's next headers are timed anew */
    if (!c)
        return;
    *con_cls = NULL;
    pthread_mutex_lock(&srv->calls_lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&srv->calls_lock);
    pthread_mutex_lock(&c->lock);
    c->conn_done = true;
    c->suspended = false;
    pthread_mutex_unlock(&c->lock);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        st_log(ST_LOG_DEBUG, "http", "request %s ended early (libmicrohttpd code %d)",
               c->request_id, (int)toe);
    if (c->on_done)
        c->on_done(c);       /* its sub-calls (gcp.c) */
    st_gen_conn_done(c);     /* cancels what still runs: the client is gone */
    st_call_unref(c);
}

/* ---- the daemon -------------------------------------------------------- */

/* libmicrohttpd's messages, through our log (printf-style: 'fmt' is MHD's). */
static void mhd_log(void *cls, const char *fmt, va_list ap) ST_PRINTF(2, 0);
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    st_log(ST_LOG_WARN, "http", "libmicrohttpd: %s", msg);
}

static enum st_status copy_config(struct st_server *srv, const struct st_server_config *cfg,
                                  struct st_err *err)
{
    srv->cfg = *cfg;
    srv->host = st_str_dup(st_str_c(cfg->host ? cfg->host : "127.0.0.1"));
    if (!srv->host)
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    srv->cfg.host = srv->host;
    if (srv->cfg.body_limit == 0)
        srv->cfg.body_limit = (size_t)8 << 20;
    if (srv->cfg.http_threads < 1)
        srv->cfg.http_threads = 1;
    if (srv->cfg.sse_keepalive_s < 0)
        srv->cfg.sse_keepalive_s = 0;
    if (srv->cfg.timeout_s <= 0)
        srv->cfg.timeout_s = 60;
    enum st_status rc = st_cors_init(&srv->cors, cfg->cors_origins, err);
    srv->cfg.cors_origins = NULL;       /* borrowed from the caller: use srv->cors */
    if (rc != ST_OK)
        return rc;
    rc = st_hosts_init(&srv->hosts, cfg->allowed_hosts, srv->host, err);
    srv->cfg.allowed_hosts = NULL;      /* borrowed: use srv->hosts */
    if (rc != ST_OK)
        return rc;
    bool kept = cfg->state_dir && cfg->state_dir[0];   /* then state.c opens the store */
    if (cfg->responses_store_bytes && !kept &&
        st_resp_store_new(cfg->responses_store_bytes, &srv->resp_store) != ST_OK)
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    if (cfg->metrics_key && !(srv->metrics_key = st_str_dup(st_str_c(cfg->metrics_key))))
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    srv->cfg.metrics_key = NULL;        /* borrowed: use srv->metrics_key */
    if (cfg->slot_save_path &&
        !(srv->slot_save_path = st_str_dup(st_str_c(cfg->slot_save_path))))
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    srv->cfg.slot_save_path = NULL;     /* borrowed: use srv->slot_save_path */
    if (cfg->n_keys == 0)
        return ST_OK;
    if (!(srv->owners = st_owners_new()))
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    srv->keys = calloc(cfg->n_keys, sizeof(*srv->keys));
    srv->key_owners = calloc(cfg->n_keys, sizeof(*srv->key_owners));
    if (!srv->keys || !srv->key_owners)
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    for (size_t i = 0; i < cfg->n_keys; i++) {
        srv->key_owners[i] = i + 1;   /* state.c tags them anew with --state-dir */
        srv->keys[i] = cfg->keys[i];
        srv->keys[i].name = st_str_dup(st_str_c(cfg->keys[i].name ? cfg->keys[i].name : ""));
        srv->keys[i].key = st_str_dup(st_str_c(cfg->keys[i].key ? cfg->keys[i].key : ""));
        if (!srv->keys[i].name || !srv->keys[i].key)
            return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    }
    srv->cfg.keys = srv->keys;
    return ST_OK;
}

enum st_status st_server_start(const struct st_server_config *cfg, struct st_engine_pool *pool,
                               struct st_sched *sched, struct st_server **out,
                               struct st_err *err)
{
    *out = NULL;
    struct st_server *srv = calloc(1, sizeof(*srv));
    if (!srv)
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    srv->pool = pool;
    srv->sched = sched;
    srv->created = st_unix_seconds();
    atomic_init(&srv->stopping, false);
    atomic_init(&srv->open_conns, 0);
    for (int i = 0; i < ST_HTTP_CODES_TRACKED; i++)
        atomic_init(&srv->responses[i], 0);
    pthread_mutex_init(&srv->calls_lock, NULL);
    srv->conns = st_conns_new();
    if (!srv->conns) {
        pthread_mutex_destroy(&srv->calls_lock);
        free(srv);
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    }
    enum st_status rc = copy_config(srv, cfg, err);
    if (rc == ST_OK)
        rc = st_gcp_init(srv, err);
    if (rc == ST_OK)
        rc = st_state_start(srv, err);
    static const struct st_listen_cbs cbs = { on_access, on_completed, mhd_log };
    if (rc == ST_OK)
        rc = st_listen_start(srv, &cbs, err);
    if (rc == ST_OK)
        rc = st_watch_start(srv, err);
    if (rc != ST_OK) {
        st_server_free(srv);
        return rc;
    }
    *out = srv;
    return ST_OK;
}

uint16_t st_server_port(const struct st_server *srv)
{
    return srv->port;
}

/* Mark every live call stopping and resume the suspended ones, so
 * MHD_stop_daemon finds none suspended; what still runs is cancelled by
 * the completion callbacks that follow. */
static void stop_calls(struct st_server *srv)
{
    pthread_mutex_lock(&srv->calls_lock);
    for (struct st_call *c = srv->calls; c; c = c->next) {
        pthread_mutex_lock(&c->lock);
        c->stopping = true;
        st_call_resume_locked(c);
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&srv->calls_lock);
}

void st_server_free(struct st_server *srv)
{
    if (!srv)
        return;
    atomic_store(&srv->stopping, true);
    st_watch_stop(srv);
    stop_calls(srv);
    st_listen_stop(srv);
    st_conns_free(srv->conns);
    st_state_stop(srv);
    for (size_t i = 0; srv->keys && i < srv->cfg.n_keys; i++) {
        free(srv->keys[i].name);
        free(srv->keys[i].key);
    }
    free(srv->keys);
    free(srv->key_owners);
    free(srv->host);
    st_listen_fini(srv);
    st_cors_fini(&srv->cors);
    st_hosts_fini(&srv->hosts);
    free(srv->metrics_key);
    free(srv->slot_save_path);
    free(srv->gcp_predict);
    free(srv->gcp_health);
    st_owners_free(srv->owners);
    st_resp_store_unref(srv->resp_store);   /* responses still running hold their own */
    pthread_mutex_destroy(&srv->calls_lock);
    free(srv);
}
