/* daemon.h -- private to the files of src/server itself, the top of the
 * server module: the libmicrohttpd daemon (http.c) and its listening
 * sockets (listen.c), the route table (routes.c), the disconnect watcher
 * (watch.c), drain (drain.c), the read-only endpoints (h_info.c) and
 * Vertex AI's predict route (gcp.c). Below it, one folder per concern:
 *   http/       what every exchange uses: errors, JSON and SSE output,
 *               auth, ids, CORS, metrics text, calls, replies
 *   gen/        one call's generation: requests, engine events, results;
 *               the answer shapes it writes itself (OpenAI chat and
 *               completions, /infill, embeddings)
 *   openai/     /v1/chat/completions, /v1/completions, /v1/embeddings and
 *               their body parsers; translate.c for the APIs onto chat
 *   responses/  /v1/responses and the stored responses
 *   anthropic/  /v1/messages
 *   llama/      llama-server's /infill, /tokenize, /detokenize,
 *               /apply-template
 *   state/      the --state-dir SQLite database and its activity table
 *               (state.c here wires them in)
 *   webui/      the dashboard's embedded files and their handler (/, /ui/)
 * Dependencies point down: this folder -> the endpoints' folders ->
 * openai/ -> gen/ -> http/ (scripts/check_layout.py).
 */
#ifndef STRATA_SERVER_DAEMON_H
#define STRATA_SERVER_DAEMON_H

#include <microhttpd.h>

#include "server/anthropic/anthropic.h"
#include "server/llama/llama.h"
#include "server/openai/oai.h"
#include "server/responses/responses.h"

/* The route for (path, method). NULL with *path_known set when the path
 * exists under other methods (405; 'allow' gets "GET, HEAD" etc.). */
const struct st_route *st_route_find(const char *path, const char *method, bool *path_known,
                                     char *allow, size_t allow_cap);
/* The i-th route of the table, NULL past the last. */
const struct st_route *st_route_at(size_t i);
/* Handlers (h_info.c). */
st_route_fn st_h_models, st_h_model_one, st_h_health, st_h_metrics, st_h_activity, st_h_slots;

/* ---- Vertex AI's routes (gcp.c) ---------------------------------------- */

/* With AIP_MODE=PREDICTION: the predict and health routes from
 * AIP_PREDICT_ROUTE (default /predict) and AIP_HEALTH_ROUTE, and
 * AIP_HTTP_PORT over --port. Nothing otherwise. ST_ERR_BAD_CONFIG for a
 * predict route the table has, or a bad port. */
ST_MUST_CHECK enum st_status st_gcp_init(struct st_server *srv, struct st_err *err);
/* The Vertex AI route for (path, method), or NULL (off, or another path). */
const struct st_route *st_gcp_route(const struct st_server *srv, const char *path,
                                    const char *method);
/* POST predict: {"instances":[...]} -> {"predictions":[...]}. */
st_route_fn st_h_predict;

/* ---- the listening daemons (listen.c) ---------------------------------- */

/* What every daemon calls back (http.c's). */
struct st_listen_cbs {
    MHD_AccessHandlerCallback access;
    MHD_RequestCompletedCallback completed;
    MHD_LogCallback log;
};

/* One daemon per address of srv->host (comma-separated, llama-server's
 * --host list) into srv->mhd[], all on one port (srv->port: --port, or the
 * one the first address picked for --port 0). ST_ERR_BAD_CONFIG for an
 * address that does not resolve, ST_ERR_IO when one cannot bind; the
 * daemons already started are left for st_listen_stop. */
ST_MUST_CHECK enum st_status st_listen_start(struct st_server *srv, const struct st_listen_cbs *cb,
                                             struct st_err *err);
/* Stop every daemon (after the calls were resumed: st_server_free). */
void st_listen_stop(struct st_server *srv);
/* Free the address list. */
void st_listen_fini(struct st_server *srv);

/* ---- the disconnect watcher (watch.c) -------------------------------- */

/* While a connection is suspended libmicrohttpd does not notice the client
 * leaving; the watcher polls suspended sockets for a hang-up and cancels
 * their requests (so a queued request leaves the queue at once). */
ST_MUST_CHECK enum st_status st_watch_start(struct st_server *srv, struct st_err *err);
void st_watch_stop(struct st_server *srv);

/* ---- memory given back when idle (idle.c) ------------------------------ */

#define ST_IDLE_TICKS     10    /* watcher ticks (100 ms) of quiet before a trim */
#define ST_IDLE_GAP_TICKS 100   /* ... and at least this many since the last trim */

/* The watcher's own: ticks and what the last trim saw. Zeroed at start. */
struct st_idle {
    uint64_t ticks;          /* st_idle_should_trim calls */
    uint64_t trimmed_work;   /* 'work' at the last trim */
    uint64_t trimmed_tick;   /* 'ticks' then */
    uint64_t trims;
    int32_t  quiet_ticks;    /* quiet ticks in a row */
};
/* One tick: 'quiet' (nothing waiting or running, no call live) and 'work'
 * (a value that changes with every response and connection); true when the allocator should give memory
 * back now: ST_IDLE_TICKS quiet ticks in a row after work the last trim
 * did not see, and ST_IDLE_GAP_TICKS since it. Pure. */
bool st_idle_should_trim(struct st_idle *s, bool quiet, uint64_t work);
/* The watcher's tick (watch.c): malloc_trim(0) when st_idle_should_trim
 * says so, logged at debug with the RSS before and after. */
void st_idle_tick(struct st_server *srv, struct st_idle *s);

/* ---- what --state-dir keeps (state.c) ---------------------------------- */

/* With cfg.state_dir: open its database (state/state_db.h), tag the keys
 * (srv->key_owners), keep the stored responses there (srv->resp_store)
 * and the activity log (the scheduler's finished records, written by a
 * thread of its own). Without: nothing. ST_ERR_IO with a one-line reason
 * (corrupt, unwritable), ST_ERR_NOMEM. */
ST_MUST_CHECK enum st_status st_state_start(struct st_server *srv, struct st_err *err);
/* Write what is queued, unhook, close. Safe when never started. */
void st_state_stop(struct st_server *srv);
/* The kept activity records with an id below 'before' that the call may
 * see, the newest 'max', appended to out oldest first, comma-separated;
 * *n how many (0 without --state-dir). */
ST_MUST_CHECK enum st_status st_state_activity(struct st_call *c, uint64_t before, size_t max,
                                               struct st_buf *out, size_t *n);
/* One activity record as /api/activity shows it (activity_json.c). */
void st_activity_json(struct st_out *o, struct st_server *srv, const struct st_activity *a);
/* ---- connection limits (limits.c) ------------------------------------ */

/* Descriptors kept for the server's own files and sockets, and the
 * connections past --max-connections kept for /health and /metrics. */
#define ST_FD_RESERVE 64
#define ST_PROBE_RESERVE 16

/* MHD_OPTION_NOTIFY_CONNECTION: counts srv->open_conns (cls: the server). */
void st_conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                    enum MHD_ConnectionNotificationCode toe);
/* Raise the descriptor limit, fit --max-connections under it (a log line
 * when lowered) into srv->conn_cap; returns libmicrohttpd's hard limit. */
unsigned st_conn_fit(struct st_server *srv);
/* libmicrohttpd's per-address hard limit: --max-connections-per-ip plus
 * the probes' reserve; 0 (no limit) when the option is off. */
unsigned st_conn_per_ip_limit(const struct st_server *srv);
/* Past --max-connections, or its address past --max-connections-per-ip:
 * is this call (its route found, or none) to be refused? When so, 'e' is
 * the 503 too_many_connections (Retry-After: 1) it gets. */
bool st_conn_refuse(struct st_call *c, struct st_api_error *e);

/* ---- each open connection (conns.c) ---------------------------------- */

/* The table of open connections (srv->conns); NULL on OOM. */
struct st_conn_table *st_conns_new(void);
void st_conns_free(struct st_conn_table *t);
/* From st_conn_notify: a connection opens (its record into
 * *socket_context, counted under its address) or closes. */
void st_conns_open(struct st_server *srv, struct MHD_Connection *conn, void **socket_context);
void st_conns_close(struct st_server *srv, void **socket_context);
/* A request's headers are complete (its first access call); a request is
 * done (its completion), so the next one's headers are timed from now. */
void st_conns_headers_in(struct st_server *srv, struct MHD_Connection *conn);
void st_conns_request_done(struct st_server *srv, struct MHD_Connection *conn);
/* Open connections from this connection's address (itself included). */
int32_t st_conns_of_addr(struct st_server *srv, struct MHD_Connection *conn);
/* The watcher's pass: cut every connection whose request headers are not
 * complete --header-timeout seconds after its clock started. */
void st_conns_sweep(struct st_server *srv);

#endif /* STRATA_SERVER_DAEMON_H */
