/* http/http.h -- what every part of the server uses of one HTTP exchange.
 *
 * Pieces (this folder; none of them calls into a generation or an endpoint):
 *   errors.c     st_status -> HTTP status + OpenAI error type; error bodies
 *                (OpenAI's and Anthropic's)
 *   sse.c        Server-Sent Events framing
 *   auth.c       API keys, x-request-id, the owner of stored responses
 *   random_id.c  random bytes and hex ids (requests, tool calls, responses)
 *   etag.c       If-None-Match against an ETag (the dashboard's 304s)
 *   cors.c       which origins get CORS headers (--cors-origins; access.h)
 *   owners.c     which API key made which request (/api/activity, /slots)
 *   guard.c      checks before any route: the Host header (--allowed-hosts,
 *                against DNS rebinding) and a POST body's Content-Type
 *   metrics.c    Prometheus text rendering from plain stats structs (metrics.h)
 *   call.c       one HTTP exchange: references, resume, headers, query
 *   reply.c      queueing a response with the common headers
 * The daemon that creates calls and finds their routes is ../http.c and
 * ../routes.c (../daemon.h); a call's generation is gen/ (gen/gen.h).
 *
 * Everything here that does not touch libmicrohttpd is unit-tested without
 * a network (tests/unit/test_server.c).
 */
#ifndef STRATA_SERVER_HTTP_HTTP_H
#define STRATA_SERVER_HTTP_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "strata/engine.h"
#include "strata/json_out.h"
#include "strata/out.h"
#include "strata/sched.h"
#include "strata/server.h"
#include "strata/str.h"
#include "server/http/access.h"   /* CORS, Host and Content-Type checks, request owners */
#include "server/http/metrics.h"

/* A string literal and its length, for st_buf_append. */
#define ST_LIT(s) (s), (sizeof(s) - 1)

/* ---- errors (errors.c) ---------------------------------------------- */

/* An error as the client will see it: {"error":{message,type,param,code}}. */
struct st_api_error {
    enum st_status status;      /* decides the HTTP status and 'type' */
    int  http;                  /* 0 = from status; else overrides it */
    char message[256];
    char param[64];             /* "" = null */
    char code[40];              /* "" = null */
    int  retry_after_s;         /* > 0: send Retry-After (429, 503) */
    int64_t n_prompt_tokens;    /* context_length_exceeded: the prompt's tokens and a */
    int64_t n_ctx;              /* slot's context, sent as llama-server does; 0: left out */
};

/* HTTP status for a status code. A switch without default: -Wswitch flags
 * a status added to status.h without a mapping here. */
int st_server_http_status(enum st_status s);
/* OpenAI error "type" ("invalid_request_error", ...); static storage. */
const char *st_server_error_type(enum st_status s);

/* Fill 'e' (status, message, optional param and code). Returns e->status. */
enum st_status st_api_error_set(struct st_api_error *e, enum st_status s, const char *param,
                                const char *code, const char *fmt, ...) ST_PRINTF(5, 6);
/* Seconds as a whole number for Retry-After and "retry_in_s": rounded up,
 * 0 for s <= 0 (or NaN), at most one day. */
int st_retry_seconds(double s);
/* The HTTP status 'e' will be sent with. */
int st_api_error_http(const struct st_api_error *e);
/* Append {"error":{...}} to 'out'. */
ST_MUST_CHECK enum st_status st_api_error_json(struct st_buf *out, const struct st_api_error *e);

/* Anthropic's error body: {"type":"error","error":{"type":..,"message":..}}
 * (errors.c; the type from the HTTP status st_api_error_http gives). */
ST_MUST_CHECK enum st_status st_anthropic_error_json(struct st_buf *out,
                                                     const struct st_api_error *e);
const char *st_anthropic_error_type(int http);
/* Does route r answer in Anthropic's shapes (errors included)? Its
 * 'anthropic' flag (reply.c); false for NULL. */
struct st_route;
bool st_route_anthropic(const struct st_route *r);
/* The call comes from an Anthropic client (its route or anthropic-version). */
struct st_call;
bool st_call_anthropic(struct st_call *c);

/* ---- SSE (sse.c) ------------------------------------------------------ */

/* "data: <json>\n\n". 'json' must not contain a newline (our JSON never
 * does: strings escape it); ST_ERR_INVALID if it does. */
ST_MUST_CHECK enum st_status st_sse_data(struct st_buf *out, const char *json, size_t len);
/* "data: [DONE]\n\n" */
ST_MUST_CHECK enum st_status st_sse_done(struct st_buf *out);
/* ": <text>\n\n" -- a comment line, ignored by clients (keep-alive). */
ST_MUST_CHECK enum st_status st_sse_comment(struct st_buf *out, const char *text);

/* ---- auth and ids (auth.c) -------------------------------------------- */

/* The key an Authorization header value ("Bearer KEY") names, or NULL.
 * Comparison is constant-time per key. 'value' may be NULL. */
const struct st_api_key *st_auth_find(const struct st_api_key *keys, size_t n_keys,
                                      const char *value);
/* The same for an x-api-key header value (the key alone). */
const struct st_api_key *st_auth_find_plain(const struct st_api_key *keys, size_t n_keys,
                                            const char *value);
/* A client's X-Request-Id is echoed when it is 1..40 bytes of
 * [A-Za-z0-9._:-]; else a fresh "req-<24 hex>" is written. 'out' >= 48 bytes. */
void st_request_id_pick(const char *client_value, char *out, size_t cap);
bool st_request_id_sane(const char *v);

/* Does an If-None-Match value ("\"a\", W/\"b\"" or "*") name 'etag' (quoted,
 * "\"x\"")? Weak comparison, as for GET (etag.c). Either may be NULL: false. */
bool st_etag_match(const char *if_none_match, const char *etag);

/* n random bytes for a made-up id (random_id.c): unique, not secret. */
void st_random_id_bytes(unsigned char *out, size_t n);
/* prefix, then n_bytes (at most 32) random bytes as lowercase hex, cut to
 * fit cap (NUL included). */
void st_random_hex_id(char *out, size_t cap, const char *prefix, size_t n_bytes);


/* ---- routes (the table: ../routes.c) ---------------------------------- */

struct st_call;

/* A handler runs once the body is complete. It queues a response
 * (st_reply_*) and returns ST_ROUTE_DONE, or arranges to be resumed
 * (generation) and returns ST_ROUTE_WAIT; ST_ROUTE_FAIL closes the
 * connection (could not even queue an error). */
enum st_route_result {
    ST_ROUTE_DONE,
    ST_ROUTE_WAIT,
    ST_ROUTE_FAIL,
};

typedef enum st_route_result st_route_fn(struct st_call *c);

struct st_route {
    const char  *path;
    const char  *method;        /* "GET" routes also answer HEAD */
    st_route_fn *fn;
    bool         prefix;        /* path is a prefix ("/v1/models/") */
    bool         auth;          /* needs an API key when keys are configured */
    bool         body;          /* reads a request body */
    bool         work;          /* starts a generation: refused while draining */
    bool         anthropic;     /* answers in Anthropic's shapes, errors included */
};

/* ---- the server and one HTTP exchange (../http.c, call.c) ------------ */

struct st_gen;
struct st_resp_store;

#define ST_LISTEN_MAX 8   /* --host addresses */

struct st_server {
    struct st_server_config cfg;        /* keys deep-copied into 'keys' */
    struct st_api_key *keys;            /* owned copies */
    char *host;                         /* owned copy */
    struct st_cors cors;                /* parsed cfg.cors_origins (cfg's pointer unused) */
    struct st_hosts hosts;              /* parsed cfg.allowed_hosts (cfg's pointer unused) */
    char *metrics_key;                  /* owned copy of cfg.metrics_key, or NULL */
    char *slot_save_path;               /* owned copy of cfg.slot_save_path, or NULL */
    struct st_owners *owners;           /* with keys: who made which request; else NULL */
    struct st_engine_pool *pool;        /* borrowed */
    struct st_sched *sched;             /* borrowed */
    struct MHD_Daemon *mhd[ST_LISTEN_MAX];   /* one per --host address (../listen.c) */
    char *listen[ST_LISTEN_MAX];        /* owned: those addresses */
    size_t n_listen;
    uint16_t port;
    int64_t created;                    /* unix seconds at start (/v1/models) */
    atomic_bool stopping;
    atomic_bool draining;               /* drain.c: new generations refused */
    atomic_int open_conns;              /* connections open now (limits.c) */
    int conn_cap;                       /* --max-connections, fitted to the fd limit */
    struct st_conn_table *conns;        /* each open connection (../conns.c) */
    atomic_uint_fast64_t responses[ST_HTTP_CODES_TRACKED];
    struct st_resp_store *resp_store;   /* one reference; NULL: storing off
                                         * (responses/responses_store.h) */
    uint64_t *key_owners;               /* [n_keys]: each key's owner tag (auth.c) */
    struct st_keeper *keeper;           /* --state-dir's activity log (../state.c) or NULL */
    char *gcp_predict;                  /* Vertex AI's predict route (AIP_MODE=PREDICTION,
                                         * ../gcp.c), owned; NULL: off */
    char *gcp_health;                   /* its health route, owned; NULL: only /health */

    pthread_mutex_t calls_lock;         /* guards the list of live calls */
    struct st_call *calls;              /* every call from creation to completion */
    pthread_t watcher;                  /* watch.c */
    bool watcher_running;
    bool watch_init;                    /* watch_lock and watch_cond exist */
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_cond;
};

enum st_call_phase {
    ST_CALL_BODY,         /* reading the body */
    ST_CALL_WAIT,         /* handler ran; suspended until the generation is ready */
    ST_CALL_STREAM,       /* SSE response queued; the content reader drains gen->out */
    ST_CALL_REPLIED,      /* a complete response was queued */
};

/* One HTTP request/response exchange (MHD's *con_cls). Reference counted:
 * one reference for the MHD side, dropped in the completion callback, and
 * one per engine request (dropped from that request's on_free), so the
 * emit callback can never touch freed memory, whichever ends first. */
struct st_call {
    atomic_int refs;
    struct st_server *srv;              /* borrowed; only touched on MHD threads */
    struct MHD_Connection *mhd;         /* valid until conn_done */
    const struct st_route *route;
    const char *method;                 /* borrowed from MHD for the call */
    const char *url;
    char request_id[48];
    const struct st_api_key *key;       /* matched API key (in srv->keys) or NULL */
    struct st_buf body;                 /* request body, bytes */
    bool body_too_large;
    int64_t start_ns;                   /* real clock */
    enum st_call_phase phase;
    int fd;                             /* the socket, for the watcher */

    pthread_mutex_t lock;               /* guards everything below */
    bool suspended;                     /* MHD connection suspended by us */
    uint64_t suspend_gen;               /* +1 per suspend (watcher checks it) */
    bool conn_done;                     /* completion callback ran: mhd is gone */
    bool stopping;                      /* server shutdown: answer 503 / end */
    bool client_gone;                   /* the watcher saw the peer close */
    bool half_closed;                   /* ... or shut its write side only (watch.c) */
    struct st_gen *gen;                 /* generation state or NULL (gen.c) */
    bool kicked;                        /* a sub-call has news for this call (../gcp.c) */
    struct st_call *parent;             /* a sub-call: the call it works for, whose
                                         * connection it borrows; NULL once that ends */
    struct st_sub_reply *capture;       /* a sub-call's reply lands here, not on the wire */

    /* set by a handler that drives sub-calls (../gcp.c), NULL otherwise: */
    st_route_fn *resume;                /* run when resumed, instead of gen's */
    void (*on_done)(struct st_call *c); /* the connection ended: let the sub-calls go */
    void *ext;                          /* that handler's state */

    struct st_call *prev, *next;        /* srv->calls; under srv->calls_lock */
};

/* A sub-call's reply as its handler queued it (reply.c): status and body. */
struct st_sub_reply {
    unsigned status;        /* 0: none came (the handler failed) */
    struct st_buf body;
};

/* A reference more (st_call_unref, gen/gen.h, drops one). */
void st_call_ref(struct st_call *c);
/* Resume if we suspended it (any thread, c->lock held); a sub-call wakes
 * its parent instead (locks the parent: child before parent). */
void st_call_resume_locked(struct st_call *c);
/* Suspend a call driven by c->resume until a sub-call wakes it (c->lock
 * held). False when there is news already, or it is stopping or gone. */
bool st_call_park_locked(struct st_call *c);

/* A request header (case-insensitive) or NULL. MHD thread only. */
const char *st_call_header(struct st_call *c, const char *name);
/* A query argument or NULL. MHD thread only. */
const char *st_call_query(struct st_call *c, const char *name);
/* The owner of the stored responses a call makes and may see
 * (responses/responses_store.h; auth.c): 0 without API keys, else its
 * key's tag in srv->key_owners (1 + its index; with --state-dir a tag that
 * is the same after a restart, state/state_db.h). */
uint64_t st_auth_owner(const struct st_call *c);
/* May the call's key see a request of 'owner' (st_owners_find)? Always
 * without keys and for admin keys; else only its own. */
bool st_auth_sees(const struct st_call *c, uint64_t owner);
/* ---- replies (reply.c) -------------------------------------------------- */

/* Queue 'body' (taken: freed in every case) with status, content type,
 * x-request-id and, when given, one extra header. */
enum st_route_result st_reply(struct st_call *c, unsigned status, const char *ctype,
                              struct st_buf *body, const char *hname, const char *hvalue);
enum st_route_result st_reply_json(struct st_call *c, unsigned status, struct st_buf *body);
/* 200 with the JSON 'body' when building it went well (rc == ST_OK), else
 * the OOM reply; body is taken in both cases. */
enum st_route_result st_reply_json_built(struct st_call *c, enum st_status rc,
                                         struct st_buf *body);
enum st_route_result st_reply_error(struct st_call *c, const struct st_api_error *e);
/* An OOM while building a body: a static 500 body. */
enum st_route_result st_reply_nomem(struct st_call *c);
/* 'data' (static storage: not copied, never freed) with status, content
 * type (NULL: none, as for a 304) and the extra headers 'hdrs': name, value,
 * name, value, ..., NULL. No CORS headers: for the dashboard's own files. */
enum st_route_result st_reply_static(struct st_call *c, unsigned status, const char *ctype,
                                     const void *data, size_t len, const char *const *hdrs);
/* OPTIONS on a known path: 204 with Allow ('allow': the path's methods)
 * and, for an allowed Origin, the CORS preflight headers. Not counted in
 * /metrics, no API key needed. */
enum st_route_result st_reply_preflight(struct st_call *c, const char *allow);
/* The SSE response whose content 'read' (libmicrohttpd's content reader:
 * gen/gen.c's st_gen_read, which drains c->gen) produces, with cls c. */
typedef ssize_t st_reply_reader_fn(void *cls, uint64_t pos, char *buf, size_t max);
enum st_route_result st_reply_stream(struct st_call *c, st_reply_reader_fn *read);

#endif /* STRATA_SERVER_HTTP_HTTP_H */
