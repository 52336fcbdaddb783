/* reply.c -- queueing a response with the headers every response carries:
 * Content-Type, x-request-id (and request-id, where the Anthropic SDKs read
 * it: Anthropic routes and requests with anthropic-version), the CORS headers when the request's Origin
 * is allowed (cors.c; errors, streams and 404s included), and where they
 * apply Retry-After (429, 503) or Allow (405). Bodies are handed to
 * libmicrohttpd, which frees them. OPTIONS preflights are answered here
 * too (200 as llama-server, not counted in /metrics).
 *
 * Thread: MHD only (libmicrohttpd allows MHD_queue_response from the
 * access handler).
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/http.h"

static void count_status(struct st_server *srv, unsigned status)
{
    int i = 0;
    while (i < ST_HTTP_CODES_TRACKED - 1 && st_http_codes[i] != (int)status)
        i++;
    atomic_fetch_add(&srv->responses[i], 1);
}

bool st_route_anthropic(const struct st_route *r)
{
    return r && r->anthropic;
}

/* A client of Anthropic's API: one of its routes, or a shared one (GET
 * /v1/models) called by an Anthropic SDK, which always sends the version. */
bool st_call_anthropic(struct st_call *c)
{
    return st_route_anthropic(c->route) || st_call_header(c, "anthropic-version") != NULL;
}

static void add_request_id(struct st_call *c, struct MHD_Response *r)
{
    MHD_add_response_header(r, "x-request-id", c->request_id);
    if (st_call_anthropic(c))
        MHD_add_response_header(r, "request-id", c->request_id);
}

/* Access-Control-Allow-Origin (+ Expose-Headers) for an allowed Origin;
 * Vary: Origin whenever the answer depends on it. True when allowed. An
 * origin echoed from the list may send credentials (as llama-server);
 * "*" never comes with them (browsers refuse the pair). */
static bool add_cors(struct st_call *c, struct MHD_Response *r)
{
    bool vary;
    const char *allow = st_cors_allow(&c->srv->cors, st_call_header(c, "Origin"), &vary);
    if (vary)
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
    if (!allow)
        return false;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, allow);
    MHD_add_response_header(r, "Access-Control-Expose-Headers", ST_CORS_EXPOSE_HEADERS);
    if (strcmp(allow, "*") != 0)
        MHD_add_response_header(r, "Access-Control-Allow-Credentials", "true");
    return true;
}

/* Queue r (released here) as the call's response with 'status', counted
 * in /metrics; the call moves to 'phase'. */
static enum st_route_result queue(struct st_call *c, struct MHD_Response *r, unsigned status,
                                  enum st_call_phase phase)
{
    enum MHD_Result ok = MHD_queue_response(c->mhd, status, r);
    MHD_destroy_response(r);
    c->phase = phase;
    count_status(c->srv, status);
    return ok == MHD_YES ? ST_ROUTE_DONE : ST_ROUTE_FAIL;
}

/* A sub-call (../gcp.c) keeps its reply for its parent: 'data' copied
 * (NULL: a stream, which a sub-call never asks for, is a 500). */
static enum st_route_result capture(struct st_call *c, unsigned status, const void *data,
                                    size_t len)
{
    struct st_sub_reply *out = c->capture;
    c->phase = ST_CALL_REPLIED;
    st_buf_reset(&out->body);
    out->status = data ? status : 500;
    if (!data)
        return ST_ROUTE_DONE;
    return st_buf_append(&out->body, data, len) == ST_OK ? ST_ROUTE_DONE : ST_ROUTE_FAIL;
}

enum st_route_result st_reply(struct st_call *c, unsigned status, const char *ctype,
                              struct st_buf *body, const char *hname, const char *hvalue)
{
    if (c->capture) {
        enum st_route_result r = capture(c, status, body->data ? body->data : "", body->len);
        st_buf_fini(body);
        return r;
    }
    size_t len = body->len;
    char *data = st_buf_steal(body);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return ST_ROUTE_FAIL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    add_request_id(c, r);
    add_cors(c, r);
    if (hname && hvalue)
        MHD_add_response_header(r, hname, hvalue);
    return queue(c, r, status, ST_CALL_REPLIED);
}

enum st_route_result st_reply_json(struct st_call *c, unsigned status, struct st_buf *body)
{
    return st_reply(c, status, "application/json", body, NULL, NULL);
}

enum st_route_result st_reply_json_built(struct st_call *c, enum st_status rc,
                                         struct st_buf *body)
{
    if (rc != ST_OK) {
        st_buf_fini(body);
        return st_reply_nomem(c);
    }
    return st_reply_json(c, 200, body);
}

enum st_route_result st_reply_error(struct st_call *c, const struct st_api_error *e)
{
    struct st_api_error loading;
    if (e->status == ST_ERR_LOADING && !e->code[0]) {
        /* a path that did not say why: docs/API.md promises a code and a retry */
        loading = *e;
        snprintf(loading.code, sizeof(loading.code), "model_load_failed");
        loading.retry_after_s = ST_MAX(1, loading.retry_after_s);
        e = &loading;
    }
    struct st_buf body;
    st_buf_init(&body);
    enum st_status rc = st_call_anthropic(c) ? st_anthropic_error_json(&body, e)
                                                     : st_api_error_json(&body, e);
    if (rc != ST_OK) {
        st_buf_fini(&body);
        return st_reply_nomem(c);
    }
    char retry[16];
    snprintf(retry, sizeof(retry), "%d", e->retry_after_s);
    return st_reply(c, (unsigned)st_api_error_http(e), "application/json", &body,
                    e->retry_after_s > 0 ? MHD_HTTP_HEADER_RETRY_AFTER : NULL, retry);
}

enum st_route_result st_reply_nomem(struct st_call *c)
{
    static const char msg[] = "{\"error\":{\"message\":\"out of memory\",\"type\":"
                              "\"server_error\",\"param\":null,\"code\":null}}";
    static const char amsg[] = "{\"type\":\"error\",\"error\":{\"type\":\"api_error\","
                               "\"message\":\"out of memory\"}}";
    bool a = st_call_anthropic(c);
    if (c->capture)
        return capture(c, 500, a ? amsg : msg, a ? sizeof(amsg) - 1 : sizeof(msg) - 1);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        a ? sizeof(amsg) - 1 : sizeof(msg) - 1, a ? (void *)amsg : (void *)msg,
        MHD_RESPMEM_PERSISTENT);
    if (!r)
        return ST_ROUTE_FAIL;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    add_request_id(c, r);
    add_cors(c, r);
    return queue(c, r, 500, ST_CALL_REPLIED);
}

enum st_route_result st_reply_static(struct st_call *c, unsigned status, const char *ctype,
                                     const void *data, size_t len, const char *const *hdrs)
{
    if (c->capture)
        return capture(c, status, data ? data : "", len);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return ST_ROUTE_FAIL;
    if (ctype)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, "x-request-id", c->request_id);
    for (size_t i = 0; hdrs && hdrs[i] && hdrs[i + 1]; i += 2)
        MHD_add_response_header(r, hdrs[i], hdrs[i + 1]);
    return queue(c, r, status, ST_CALL_REPLIED);
}

enum st_route_result st_reply_stream(struct st_call *c, st_reply_reader_fn *read)
{
    if (c->capture)
        return capture(c, 500, NULL, 0);
    /* 8 KiB blocks: well inside MHD's per-connection memory pool */
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192,
                                                               read, c, NULL);
    if (!r)
        return ST_ROUTE_FAIL;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");   /* nginx: do not buffer */
    add_request_id(c, r);
    add_cors(c, r);
    return queue(c, r, 200, ST_CALL_STREAM);
}

enum st_route_result st_reply_preflight(struct st_call *c, const char *allow)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return ST_ROUTE_FAIL;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    add_request_id(c, r);
    if (add_cors(c, r)) {
        const char *want = st_call_header(c, "Access-Control-Request-Headers");
        MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_METHODS,
                                ST_CORS_ALLOW_METHODS);
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                st_cors_request_headers_ok(want) ? want
                                                                 : ST_CORS_ALLOW_HEADERS);
        MHD_add_response_header(r, "Access-Control-Max-Age", ST_CORS_MAX_AGE);
    }
    enum MHD_Result ok = MHD_queue_response(c->mhd, 200, r);
    MHD_destroy_response(r);
    c->phase = ST_CALL_REPLIED;   /* not counted: a preflight is not an API request */
    return ok == MHD_YES ? ST_ROUTE_DONE : ST_ROUTE_FAIL;
}
