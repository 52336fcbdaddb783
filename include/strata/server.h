/* server.h -- the OpenAI-compatible HTTP server (libmicrohttpd).
 *
 * Routes, request parsing, SSE streaming, errors in the OpenAI shape, auth,
 * /metrics. The server owns no engine: it is handed the pool and the
 * scheduler, both borrowed and outliving it.
 */
#ifndef STRATA_SERVER_H
#define STRATA_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/engine.h"
#include "strata/err.h"
#include "strata/sched.h"

struct st_api_key {
    char   *name;               /* owned; shown in logs, never the key */
    char   *key;                /* owned */
    bool    has_default_priority;
    int32_t default_priority;
    bool    has_max_priority;
    int32_t max_priority;
    bool    admin;              /* sees every key's requests on /api/activity and /slots */
};

/* --reasoning-format (docs/API.md "Tool calls and reasoning"): chat
 * replies' <think> blocks go to message.reasoning_content (deepseek, the
 * default, as llama-server) or stay in the content (none). */
enum st_reasoning_format {
    ST_REASONING_DEEPSEEK,
    ST_REASONING_NONE,
};

struct st_server_config {
    const char *host;                 /* borrowed; default "127.0.0.1"; comma-separated:
                                       * listen on each */
    uint16_t    port;                 /* 0 = pick a free port */
    size_t      body_limit;           /* bytes; default 8 MiB */
    const struct st_api_key *keys;    /* borrowed; n_keys of them; none = open */
    size_t      n_keys;
    enum st_priority_order priority_order;
    int32_t     http_threads;         /* libmicrohttpd worker threads (default 2) */
    int32_t     activity_log_lines;   /* log one line per dispatch (default on) */
    enum st_reasoning_format reasoning_format;   /* default deepseek */
    int32_t     reasoning_budget;     /* chat: thinking budget when a request sends none
                                       * (docs/API.md "Thinking budget"); -1 = none (default) */
    int32_t     n_predict;            /* max tokens when a request sets none; -1 = no cap */
    float       temp;                 /* temperature when a request sends none (default 0.8) */
    int64_t     seed;                 /* seed when a request sends none; -1 = random (default) */
    /* CORS (docs/API.md): comma-separated origins ("https://a.example"),
     * "localhost" = the loopback origins (the default), "*" = any, NULL,
     * "" or "none" = no CORS headers. Borrowed; the server keeps a copy. */
    const char *cors_origins;
    /* Host names served besides loopback names, IP literals and the bound
     * host (docs/SECURITY.md): comma-separated, "*" = any; NULL = none.
     * Borrowed; the server keeps a copy. */
    const char *allowed_hosts;
    /* With keys set, /metrics needs one of them or this key (a scraper's
     * own, docs/SECURITY.md); NULL = the API keys only. Borrowed; copied. */
    const char *metrics_key;
    /* POST /slots/{id}?action=save|restore: the directory of the slot
     * files; NULL = those actions are refused. Borrowed; copied. */
    const char *slot_save_path;
    /* Streams: the 200 headers and an SSE comment line go out once a
     * stream has sent nothing for this many seconds (queue wait, long
     * prompt read); 0 = never. Default 15. */
    int32_t     sse_keepalive_s;
    /* /v1/responses: the byte budget of the stored responses (GET
     * /v1/responses/{id}, previous_response_id; least recently used
     * evicted); 0 = nothing stored. Default 64 MiB. */
    size_t      responses_store_bytes;
    /* --state-dir: keep the stored responses and the activity log in
     * DIR/strata.db (SQLite) so they survive a restart; NULL or "" (the
     * default): in memory. Borrowed. state_max_rows: rows of each kept
     * at most (the oldest pruned). */
    const char *state_dir;
    int64_t     state_max_rows;
    /* Connections (docs/SECURITY.md "Connections"): served at most (past
     * it 503; /health and /metrics keep a reserve; lowered to fit the
     * descriptor limit), and the idle timeout in seconds. 0: 1024, 60. */
    int32_t     max_connections;
    int32_t     timeout_s;
    /* Connections one client address may hold, past it 503 as past
     * max_connections (0: no per-address cap, the default); seconds a
     * request's headers may take in all, from the connection's start or
     * its previous request's end, before the connection is cut (0: no
     * deadline; default 30). */
    int32_t     max_connections_per_ip;
    int32_t     header_timeout_s;
    /* Back-pressure: SSE bytes a stream holds for a client that does not
     * read before the server cuts it (cancelled, slot freed); 0 = no bound.
     * Default 2 MiB. */
    size_t      stream_buffer;
    /* Each model's configured priority (docs/design/SCHEDULER.md section 2), indexed
     * like the pool's models; borrowed. NULL, or a model past
     * n_model_priority, counts as 0. */
    const int32_t *model_priority;
    size_t      n_model_priority;
    /* Serve the dashboard at / (docs/DASHBOARD.md); false: 404. Default true. */
    bool        webui;
    /* Serve GET /slots; false: 501 (llama-server's --no-slots). Default true. */
    bool        slots;
    /* Chat: a body whose last message is an assistant's, without
     * continue_final_message, continues it (llama-server's
     * --prefill-assistant). Default true. */
    bool        prefill_assistant;
};

void st_server_config_defaults(struct st_server_config *c);

struct st_server;

/* Bind and start serving. 'pool' and 'sched' are borrowed. Returns owned;
 * stop and free with st_server_free(). */
ST_MUST_CHECK
enum st_status st_server_start(const struct st_server_config *cfg, struct st_engine_pool *pool,
                               struct st_sched *sched, struct st_server **out,
                               struct st_err *err);

/* The port actually bound (useful with port 0). */
uint16_t st_server_port(const struct st_server *srv);
/* The i-th address listened on (--host is a comma-separated list), NULL
 * past the last. Borrowed. */
const char *st_server_address(const struct st_server *srv, size_t i);

/* Graceful shutdown, step 1: refuse new generations (503 "The server is
 * shutting down.", and /health 503) while the requests already in go on.
 * Thread-safe; cannot be undone. */
void st_server_drain(struct st_server *srv);
bool st_server_draining(const struct st_server *srv);

/* Requests still in progress: open HTTP exchanges, or jobs the scheduler
 * still holds (waiting or running), whichever is more. 0 = drained. */
int64_t st_server_in_progress(struct st_server *srv);

/* Stop accepting, end open streams, free. NULL is a no-op. */
void st_server_free(struct st_server *srv);

#endif /* STRATA_SERVER_H */
