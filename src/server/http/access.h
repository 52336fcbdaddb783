/* http/access.h -- who may reach the server and see what: the CORS origins
 * (cors.c), the Host and Content-Type checks made before any route
 * (guard.c), and which API key made which request (owners.c). Part of
 * http.h, which includes it; docs/SECURITY.md.
 */
#ifndef STRATA_SERVER_HTTP_ACCESS_H
#define STRATA_SERVER_HTTP_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/err.h"

/* ---- CORS (cors.c) ----------------------------------------------------- */

enum st_cors_mode {
    ST_CORS_OFF,      /* "none" (or empty): no CORS headers */
    ST_CORS_ANY,      /* "*": Access-Control-Allow-Origin: * */
    ST_CORS_LIST,     /* listed origins ("localhost": the loopback ones, the
                       * default), echoed, with Vary: Origin */
};

struct st_cors {
    enum st_cors_mode mode;
    char *list;       /* LIST: owned, "a,b,c" without blanks */
};

/* Parse --cors-origins ("localhost", "*", "none", or comma-separated
 * origins, "localhost" among them for http(s)://localhost, 127.0.0.1 and
 * [::1] on any port).
 * ST_ERR_BAD_CONFIG for an empty entry, a blank inside one, or "*" among
 * others; ST_ERR_NOMEM. Release with st_cors_fini (safe when zeroed). */
ST_MUST_CHECK enum st_status st_cors_init(struct st_cors *c, const char *spec,
                                          struct st_err *err);
void st_cors_fini(struct st_cors *c);
/* The Access-Control-Allow-Origin value for a request's Origin header
 * (NULL: send none; else "*" or 'origin' itself); *vary: send
 * "Vary: Origin" (the answer depends on Origin: list mode), even when NULL. */
const char *st_cors_allow(const struct st_cors *c, const char *origin, bool *vary);
/* True when an Access-Control-Request-Headers value may be echoed as is:
 * 1..512 bytes of header-name characters, commas and spaces. */
bool st_cors_request_headers_ok(const char *v);

/* ---- Host and Content-Type checks (guard.c) ------------------------------ */

/* The Host names a request may carry (--allowed-hosts, docs/SECURITY.md):
 * always localhost, 127.0.0.1, ::1 and any IP literal (DNS rebinding
 * needs a name), the bound host unless it is a wildcard address, and the
 * listed names; "*" = any Host. */
struct st_hosts {
    bool any;
    char *list;       /* owned, "a,b,c" lowercase without blanks or ports; may be NULL */
};

/* Parse 'spec' (NULL, "" = none listed; "*"; or comma-separated names) and
 * add each address of 'bound' (--host, comma-separated) but 0.0.0.0 and
 * ::. ST_ERR_BAD_CONFIG for a bad name; ST_ERR_NOMEM. Release with st_hosts_fini (safe when zeroed). */
ST_MUST_CHECK enum st_status st_hosts_init(struct st_hosts *h, const char *spec,
                                           const char *bound, struct st_err *err);
void st_hosts_fini(struct st_hosts *h);
/* May a request with this Host header value (port included) be served?
 * A request without Host (HTTP/1.0, not a browser) may. */
bool st_hosts_allow(const struct st_hosts *h, const char *host_header);
/* Is 'ctype' (a Content-Type header value, may be NULL) application/json,
 * parameters (charset) allowed? */
bool st_content_type_json(const char *ctype);

/* ---- request owners (owners.c) ------------------------------------------ */

/* The API key (its st_auth_owner) that made each of the newest requests,
 * by request id. Thread-safe. */
struct st_owners;
/* An id two keys used: shown to neither (admins see everything). */
#define ST_OWNER_AMBIGUOUS UINT64_MAX
struct st_owners *st_owners_new(void);   /* NULL: out of memory */
void st_owners_free(struct st_owners *o);   /* NULL: no-op */
/* Remember that 'owner' (> 0) made 'request_id'; the oldest is forgotten. */
void st_owners_add(struct st_owners *o, const char *request_id, uint64_t owner);
/* The owner of 'request_id': 0 when unknown, ST_OWNER_AMBIGUOUS when two
 * keys used the id. */
uint64_t st_owners_find(struct st_owners *o, const char *request_id);

/* What a preflight answers (reply.c). */
#define ST_CORS_ALLOW_METHODS "GET, POST, DELETE, OPTIONS"
#define ST_CORS_ALLOW_HEADERS "Authorization, Content-Type, X-LlamaSwap-Priority, X-Request-Id"
#define ST_CORS_EXPOSE_HEADERS "x-request-id, request-id, Retry-After"
#define ST_CORS_MAX_AGE "7200"   /* seconds; Chromium caps it at 2 h */

#endif /* STRATA_SERVER_HTTP_ACCESS_H */
