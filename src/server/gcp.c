/* gcp.c -- Vertex AI's custom-container contract, as llama-server has it
 * (docs/API.md "Vertex AI"): with AIP_MODE=PREDICTION in the environment,
 *
 *   POST $AIP_PREDICT_ROUTE (default /predict)
 *       {"instances":[{"@requestFormat":"chatCompletions", ...chat body}, ...]}
 *    -> {"predictions":[<each instance's answer, or its {"error":...}>]}
 *   GET  $AIP_HEALTH_ROUTE  the same as /health
 *   port $AIP_HTTP_PORT     over --port
 *
 * "@requestFormat" names a POST route: camelCase of its path without /v1
 * ("chatCompletions", "completions", "embeddings", "applyTemplate"; the
 * first route of the table with that name wins, so "completions" is
 * OpenAI's) or the path itself. Streaming is off for every instance.
 *
 * Each instance runs as a sub-call: a struct st_call without a connection
 * of its own (http/call.c), whose handler is the route's own, whose reply is
 * kept (http/reply.c) instead of sent, and whose generation wakes this call
 * instead of resuming a connection. This call waits (st_call_park_locked)
 * until every sub-call has its reply, then answers 200 with them in order.
 * When the connection ends first, the sub-calls are cancelled.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/log.h"
#include "server/daemon.h"
#include "server/openai/oai_json.h"

#define MAX_INSTANCES 128   /* llama-server's */

struct predict {
    int32_t n;
    struct st_call **kids;        /* [n]; NULL where the instance was refused at once */
    struct st_sub_reply *out;     /* [n] */
    bool *done;                   /* [n] */
    bool cancelled;               /* the client left: the sub-calls were cancelled */
};

static const struct st_route predict_route = { "/predict", "POST", st_h_predict, false, true,
                                               true, true, false };
static const struct st_route health_route = { "/health", "GET", st_h_health, false, false,
                                              false, false, false };

/* An AIP_* route: the variable's value with a leading '/' (NULL when unset
 * or empty and there is no default). */
static enum st_status route_env(const char *name, const char *dflt, char **out,
                                struct st_err *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        v = dflt;
    if (!v)
        return ST_OK;
    size_t n = strlen(v) + 2;
    if (!(*out = malloc(n)))
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    snprintf(*out, n, "%s%s", v[0] == '/' ? "" : "/", v);
    return ST_OK;
}

enum st_status st_gcp_init(struct st_server *srv, struct st_err *err)
{
    const char *mode = getenv("AIP_MODE");
    if (!mode || strcmp(mode, "PREDICTION") != 0)
        return ST_OK;
    enum st_status rc = route_env("AIP_PREDICT_ROUTE", "/predict", &srv->gcp_predict, err);
    if (rc == ST_OK)
        rc = route_env("AIP_HEALTH_ROUTE", NULL, &srv->gcp_health, err);
    if (rc != ST_OK)
        return rc;
    bool known;
    if (st_route_find(srv->gcp_predict, "POST", &known, NULL, 0) || known)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "AIP_PREDICT_ROUTE=%s is one of the "
                          "server's own routes", srv->gcp_predict);
    const char *port = getenv("AIP_HTTP_PORT");
    if (port && *port) {
        char *end;
        long p = strtol(port, &end, 10);
        if (*end || p < 0 || p > 65535)
            return st_err_set(err, ST_ERR_BAD_CONFIG, "AIP_HTTP_PORT=%s: expected a port "
                              "0..65535", port);
        if (p != srv->cfg.port)
            st_log(ST_LOG_WARN, "http", "Vertex AI: AIP_HTTP_PORT %ld replaces --port %u", p,
                   (unsigned)srv->cfg.port);
        srv->cfg.port = (uint16_t)p;
    }
    st_log(ST_LOG_INFO, "http", "Vertex AI (AIP_MODE=PREDICTION): POST %s%s%s",
           srv->gcp_predict, srv->gcp_health ? ", health at GET " : "",
           srv->gcp_health ? srv->gcp_health : "");
    return ST_OK;
}

const struct st_route *st_gcp_route(const struct st_server *srv, const char *path,
                                    const char *method)
{
    if (srv->gcp_predict && strcmp(path, srv->gcp_predict) == 0 && strcmp(method, "POST") == 0)
        return &predict_route;
    if (srv->gcp_health && strcmp(path, srv->gcp_health) == 0 &&
        (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
        return &health_route;
    return NULL;
}

/* llama-server's name for a path: "/v1/chat/completions" -> "chatCompletions". */
static void camel(const char *path, char *out, size_t cap)
{
    if (strncmp(path, "/v1/", 4) == 0)
        path += 3;
    if (*path == '/')
        path++;
    size_t n = 0;
    bool up = false;
    for (; *path && n + 1 < cap; path++) {
        if (*path == '/' || *path == '-' || *path == '_') {
            up = true;
            continue;
        }
        out[n++] = up ? (char)toupper((unsigned char)*path) : *path;
        up = false;
    }
    out[n] = '\0';
}

/* The POST route an instance's @requestFormat names, or NULL. */
static const struct st_route *format_route(const char *format)
{
    const struct st_route *r;
    char name[80];
    for (size_t i = 0; (r = st_route_at(i)) != NULL; i++) {
        if (r->prefix || strcmp(r->method, "POST") != 0)
            continue;
        camel(r->path, name, sizeof(name));
        if (strcmp(name, format) == 0 || strcmp(r->path, format) == 0)
            return r;
    }
    return NULL;
}

/* {"error":{...}} in OpenAI's shape as an instance's prediction: 'msg'
 * followed by 'arg' (at most 100 bytes of it). */
static void instance_error(struct st_sub_reply *out, const char *msg, const char *arg)
{
    struct st_api_error e;
    st_api_error_set(&e, ST_ERR_INVALID, NULL, NULL, "%s%.100s", msg, arg);
    out->status = 400;
    st_buf_reset(&out->body);
    if (st_api_error_json(&out->body, &e) != ST_OK)
        out->status = 0;
}

/* The sub-call for one instance: its route's handler on the instance's
 * body (without @requestFormat, "stream": false), borrowing this call's
 * connection, key and owner. NULL when out of memory. */
static struct st_call *sub_call(struct st_call *c, const struct st_route *route, cJSON *body,
                                struct st_sub_reply *out)
{
    char *text = cJSON_PrintUnformatted(body);
    struct st_call *k = text ? calloc(1, sizeof(*k)) : NULL;
    if (!k) {
        free(text);
        return NULL;
    }
    atomic_init(&k->refs, 1);
    k->srv = c->srv;
    k->mhd = c->mhd;
    k->route = route;
    k->method = route->method;
    k->url = route->path;
    k->key = c->key;
    k->start_ns = c->start_ns;
    k->fd = -1;
    k->phase = ST_CALL_BODY;
    k->parent = c;
    k->capture = out;
    st_request_id_pick(NULL, k->request_id, sizeof(k->request_id));
    st_buf_init(&k->body);
    pthread_mutex_init(&k->lock, NULL);
    if (st_buf_append(&k->body, text, strlen(text)) != ST_OK) {
        free(text);
        st_call_unref(k);
        return NULL;
    }
    free(text);
    if (c->key && c->srv->owners)
        st_owners_add(c->srv->owners, k->request_id, st_auth_owner(c));
    return k;
}

/* Start instance i: refused at once (its error kept), answered at once, or
 * waiting on its generation. False when out of memory. */
static bool start_instance(struct st_call *c, struct predict *p, int32_t i, cJSON *inst)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(inst, "@requestFormat");
    const struct st_route *route;
    p->done[i] = true;
    if (!cJSON_IsObject(inst)) {
        instance_error(&p->out[i], "each instance must be a JSON object", "");
        return true;
    }
    if (!cJSON_IsString(fmt)) {
        instance_error(&p->out[i], "each instance must include a string @requestFormat", "");
        return true;
    }
    if (!(route = format_route(fmt->valuestring))) {
        instance_error(&p->out[i], "no handler registered for @requestFormat: ",
                       fmt->valuestring);
        return true;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(inst, "@requestFormat");
    if (cJSON_HasObjectItem(inst, "stream"))
        cJSON_ReplaceItemInObjectCaseSensitive(inst, "stream", cJSON_CreateFalse());
    struct st_call *k = sub_call(c, route, inst, &p->out[i]);
    if (!k)
        return false;
    p->kids[i] = k;
    enum st_route_result r = route->fn(k);
    p->done[i] = r != ST_ROUTE_WAIT;
    return true;
}

/* {"predictions":[...]}: each kept reply as it is (JSON from our own
 * handlers), null for none. */
static enum st_route_result answer(struct st_call *c, struct predict *p)
{
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_buf_append(&b, "{\"predictions\":[", 16);
    for (int32_t i = 0; rc == ST_OK && i < p->n; i++) {
        const struct st_buf *o = &p->out[i].body;
        if (i > 0)
            rc = st_buf_append(&b, ",", 1);
        if (rc == ST_OK)
            rc = p->out[i].status && o->len ? st_buf_append(&b, o->data, o->len)
                                            : st_buf_append(&b, "null", 4);
    }
    if (rc == ST_OK)
        rc = st_buf_append(&b, "]}", 2);
    return st_reply_json_built(c, rc, &b);
}

/* c->resume: collect what the sub-calls have; wait again while one waits. */
static enum st_route_result predict_resume(struct st_call *c)
{
    struct predict *p = c->ext;
    pthread_mutex_lock(&c->lock);
    c->kicked = false;
    bool stopping = c->stopping;
    bool cancel = c->client_gone && !p->cancelled;   /* the watcher saw it leave */
    pthread_mutex_unlock(&c->lock);
    p->cancelled |= cancel;
    bool waiting = false;
    for (int32_t i = 0; i < p->n; i++) {
        struct st_call *k = p->kids[i];
        if (p->done[i])
            continue;
        if (cancel)
            st_gen_cancel_all(k);   /* its end wakes this call again */
        if (stopping) {
            pthread_mutex_lock(&k->lock);
            k->stopping = true;   /* its resume answers 503 */
            pthread_mutex_unlock(&k->lock);
        }
        enum st_route_result r = st_gen_resume(k);
        p->done[i] = r != ST_ROUTE_WAIT;
        waiting |= !p->done[i];
    }
    return waiting ? ST_ROUTE_WAIT : answer(c, p);
}

/* c->on_done: the connection ended; cancel and let go of every sub-call. */
static void predict_done(struct st_call *c)
{
    struct predict *p = c->ext;
    for (int32_t i = 0; p && p->kids && i < p->n; i++) {
        struct st_call *k = p->kids[i];
        if (!k)
            continue;
        pthread_mutex_lock(&k->lock);
        k->conn_done = true;   /* its engine events wake nobody now */
        k->parent = NULL;
        k->capture = NULL;
        pthread_mutex_unlock(&k->lock);
        st_gen_conn_done(k);
        st_call_unref(k);
    }
    for (int32_t i = 0; p && p->out && i < p->n; i++)
        st_buf_fini(&p->out[i].body);
    if (p) {
        free(p->kids);
        free(p->out);
        free(p->done);
        free(p);
    }
    c->ext = NULL;
}

enum st_route_result st_h_predict(struct st_call *c)
{
    struct st_api_error e;
    cJSON *root = NULL;
    if (st_oai_json_root(c->body.data, c->body.len, &root, &e) != ST_OK)
        return st_reply_error(c, &e);
    cJSON *inst = cJSON_GetObjectItemCaseSensitive(root, "instances");
    int n = cJSON_GetArraySize(inst);
    if (!cJSON_IsArray(inst) || n > MAX_INSTANCES) {
        cJSON_Delete(root);
        st_api_error_set(&e, ST_ERR_INVALID, "instances", NULL,
                         cJSON_IsArray(inst) ? "Invalid 'instances': at most %d of them."
                                             : "Invalid 'instances': expected an array "
                                               "(of at most %d).", MAX_INSTANCES);
        return st_reply_error(c, &e);
    }
    struct predict *p = calloc(1, sizeof(*p));
    if (p) {
        p->n = n;
        p->kids = calloc((size_t)n + 1, sizeof(*p->kids));
        p->out = calloc((size_t)n + 1, sizeof(*p->out));
        p->done = calloc((size_t)n + 1, sizeof(*p->done));
    }
    c->ext = p;
    c->on_done = predict_done;
    bool ok = p && p->kids && p->out && p->done;
    for (int32_t i = 0; ok && i < n; i++)
        st_buf_init(&p->out[i].body);
    for (int32_t i = 0; ok && i < n; i++)
        ok = start_instance(c, p, i, cJSON_GetArrayItem(inst, i));
    cJSON_Delete(root);
    if (!ok)
        return st_reply_nomem(c);   /* predict_done frees what was made */
    c->resume = predict_resume;
    return predict_resume(c);
}
