/* h_slots.c -- llama-server's POST /slots/{id}?action=save|restore|erase
 * (docs/API.md "/slots").
 *
 * save writes slot {id}'s prompt cache (the token ids its KV keeps, their
 * KV rows, a recurrent model's state) to --slot-save-path/FILENAME; restore
 * reads such a file back into the idle slot, so the next request that
 * starts with those tokens reads only the rest; erase empties the cache.
 * The work is the engine's (strata/slot_action.h): this thread waits for
 * it. {id} is the slot's index in GET /slots. Without --slot-save-path,
 * save and restore answer 501 as llama-server does; erase needs no file
 * and always runs. A file name is one plain name inside that directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/daemon.h"
#include "server/llama/llama.h"
#include "server/openai/oai_json.h"
#include "strata/slot_action.h"

#define SLOT_FILENAME_MAX 200

/* One plain file name: no directory part, not hidden (so never "." or
 * ".."), no control bytes; NULL when fine, else why not. */
static const char *filename_problem(const char *name)
{
    size_t n = strlen(name);
    if (n == 0)
        return "is empty";
    if (n > SLOT_FILENAME_MAX)
        return "is too long";
    if (name[0] == '.')
        return "starts with a dot";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch == '/' || ch == '\\')
            return "has a path separator";
        if (ch < 0x20 || ch == 0x7f)
            return "has a control character";
    }
    return NULL;
}

/* {id} of "/slots/{id}": a decimal slot index; -1 when it is not one. */
static int32_t slot_id(const char *url)
{
    const char *s = url + strlen("/slots/");
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' && v <= INT32_MAX ? (int32_t)v : -1;
}

static enum st_route_result refuse(struct st_call *c, int http, enum st_status s,
                                   const char *param, const char *msg)
{
    struct st_api_error e;
    (void)st_api_error_set(&e, s, param, NULL, "%s", msg);
    e.http = http;
    return st_reply_error(c, &e);
}

/* The body's "filename", checked; NULL after replying. */
static char *body_filename(struct st_call *c, enum st_route_result *r)
{
    struct st_api_error e;
    cJSON *root = NULL;
    if (st_oai_json_root(c->body.data, c->body.len, &root, &e) != ST_OK) {
        *r = st_reply_error(c, &e);
        return NULL;
    }
    const cJSON *f = st_oai_field(root, "filename");
    char *name = NULL;
    const char *bad = !cJSON_IsString(f) ? "must be a string" : filename_problem(f->valuestring);
    if (bad) {
        char msg[96];
        snprintf(msg, sizeof(msg), "'filename' %s (one plain file name in --slot-save-path)",
                 bad);
        *r = refuse(c, 400, ST_ERR_INVALID, "filename", msg);
    }
    else if (!(name = strdup(f->valuestring)))
        *r = st_reply_nomem(c);
    cJSON_Delete(root);
    return name;
}

static enum st_route_result reply_done(struct st_call *c, int32_t id, enum st_slot_action a,
                                       const char *name, const struct st_slot_action_result *res)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_text(&o, "{");
    st_out_kv_i64(&o, "id_slot", id);
    if (a == ST_SLOT_ACTION_ERASE) {
        st_out_kv_i64(&o, "n_erased", res->n_tokens);
    } else {
        bool save = a == ST_SLOT_ACTION_SAVE;
        st_out_kv_str(&o, "filename", name);
        st_out_kv_i64(&o, save ? "n_saved" : "n_restored", res->n_tokens);
        st_out_kv_i64(&o, save ? "n_written" : "n_read", res->n_bytes);
        st_out_key(&o, "timings");
        st_out_text(&o, "{");
        st_out_kv_num(&o, save ? "save_ms" : "restore_ms", res->ms);
        st_out_text(&o, "}");
    }
    st_out_text(&o, "}");
    return st_reply_json_built(c, st_out_finish(&o), &b);
}

static enum st_route_result reply_failed(struct st_call *c, enum st_status rc,
                                         const struct st_err *err,
                                         const struct st_slot_action_result *res)
{
    struct st_api_error e;
    (void)st_api_error_set(&e, rc, NULL, NULL, "%s", err->msg);
    if (res->busy)
        e.http = 409;
    else if (rc == ST_ERR_UNSUPPORTED)
        e.http = 501;
    else if (rc == ST_ERR_NOT_FOUND)
        e.http = 404;
    return st_reply_error(c, &e);
}

enum st_route_result st_h_slot_action(struct st_call *c)
{
    struct st_server *srv = c->srv;
    int32_t id = slot_id(c->url);
    if (id < 0)
        return refuse(c, 400, ST_ERR_INVALID, NULL, "the slot id in /slots/{id} must be a "
                      "number");
    const char *action = st_call_query(c, "action");
    enum st_slot_action a;
    if (action && strcmp(action, "save") == 0)
        a = ST_SLOT_ACTION_SAVE;
    else if (action && strcmp(action, "restore") == 0)
        a = ST_SLOT_ACTION_RESTORE;
    else if (action && strcmp(action, "erase") == 0)
        a = ST_SLOT_ACTION_ERASE;
    else
        return refuse(c, 400, ST_ERR_INVALID, "action", "Invalid action: 'action' must be "
                      "save, restore or erase");
    char *name = NULL, *path = NULL;
    if (a != ST_SLOT_ACTION_ERASE) {
        if (!srv->slot_save_path || !srv->slot_save_path[0])
            return refuse(c, 501, ST_ERR_UNSUPPORTED, NULL, "This server does not support "
                          "slots action: start it with --slot-save-path DIR");
        enum st_route_result r;
        if (!(name = body_filename(c, &r)))
            return r;
        size_t n = strlen(srv->slot_save_path) + strlen(name) + 2;
        if (!(path = malloc(n))) {
            free(name);
            return st_reply_nomem(c);
        }
        snprintf(path, n, "%s/%s", srv->slot_save_path, name);
    }
    struct st_slot_action_result res;
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_slot_action(srv->pool, id, a, path, &res, &err);
    enum st_route_result r = rc == ST_OK ? reply_done(c, id, a, name, &res)
                                         : reply_failed(c, rc, &err, &res);
    free(path);
    free(name);
    return r;
}
