/* responses_get.c -- the stored responses over HTTP (docs/API.md "Stored
 * responses"), from the response store (responses_store.h):
 *   GET    /v1/responses/{id}              the response object as it was answered
 *   GET    /v1/responses/{id}/input_items  its input items, a list object
 *   DELETE /v1/responses/{id}              {"id","object":"response","deleted":true}
 * (also without /v1). An id the store does not hold for the caller's API
 * key (never stored, evicted, deleted, storing off, another key's) is a
 * 404 in OpenAI's shape, the same whichever it is.
 *
 * input_items takes OpenAI's query parameters: order (asc | desc, default
 * desc: the newest item first), limit (1..100, default 20) and after (an
 * item id: the page starts after it); has_more says whether items remain.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server/responses/responses.h"
#include "strata/mutf8.h"

#define ITEMS_LIMIT_DEFAULT 20
#define ITEMS_LIMIT_MAX 100

/* The id and what follows it ("" or "/input_items") of a /v1/responses/...
 * path; false when the path has another shape (404). */
static bool split_path(const char *url, char *id, size_t cap, bool *items)
{
    const char *p = strncmp(url, "/v1/", 4) == 0 ? url + 3 : url;
    p += strlen("/responses/");
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    *items = slash != NULL;
    if (n == 0 || n >= cap || (slash && strcmp(slash, "/input_items") != 0))
        return false;
    memcpy(id, p, n);
    id[n] = '\0';
    return true;
}

static enum st_route_result not_found(struct st_call *c, const char *id)
{
    struct st_api_error e;
    st_api_error_set(&e, ST_ERR_NOT_FOUND, NULL, NULL, "Response with id '%.100s' not found.",
                     id);
    return st_reply_error(c, &e);
}

static enum st_route_result bad_path(struct st_call *c)
{
    struct st_api_error e;
    st_api_error_set(&e, ST_ERR_NOT_FOUND, NULL, "not_found", "Invalid URL (%.16s %.100s).",
                     c->method, c->url);
    return st_reply_error(c, &e);
}

static enum st_route_result reply_text(struct st_call *c, const char *json)
{
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_buf_append(&b, json, strlen(json));
    return st_reply_json_built(c, rc, &b);
}

/* ---- input_items ---------------------------------------------------------- */

struct page {
    bool desc;
    int limit;
    const char *after;   /* NULL: from the first */
};

static enum st_status page_args(struct st_call *c, struct page *p, struct st_api_error *e)
{
    const char *order = st_call_query(c, "order");
    const char *limit = st_call_query(c, "limit");
    p->desc = true;
    p->limit = ITEMS_LIMIT_DEFAULT;
    p->after = st_call_query(c, "after");
    if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0)
        return st_api_error_set(e, ST_ERR_INVALID, "order", NULL,
                                "Invalid 'order': expected \"asc\" or \"desc\".");
    p->desc = !order || strcmp(order, "desc") == 0;
    if (limit) {
        char *end = NULL;
        long v = strtol(limit, &end, 10);
        if (!*limit || *end || v < 1 || v > ITEMS_LIMIT_MAX)
            return st_api_error_set(e, ST_ERR_INVALID, "limit", NULL,
                                    "Invalid 'limit': expected an integer 1..%d.",
                                    ITEMS_LIMIT_MAX);
        p->limit = (int)v;
    }
    if (p->after && !*p->after)
        p->after = NULL;
    return ST_OK;
}

static const char *item_id(const cJSON *it)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
    return cJSON_IsString(id) ? id->valuestring : NULL;
}

/* The position (in 'order') where the page starts: after 'after'. */
static enum st_status page_start(const cJSON *items, int n, const struct page *p, int *start,
                                 struct st_api_error *e)
{
    *start = 0;
    if (!p->after)
        return ST_OK;
    for (int k = 0; k < n; k++) {
        int i = p->desc ? n - 1 - k : k;
        const char *id = item_id(cJSON_GetArrayItem(items, i));
        if (id && strcmp(id, p->after) == 0) {
            *start = k + 1;
            return ST_OK;
        }
    }
    return st_api_error_set(e, ST_ERR_INVALID, "after", NULL,
                            "Invalid 'after': no input item with id '%.100s'.", p->after);
}

/* {"object":"list","data":[..],"first_id","last_id","has_more"} of a page. */
static enum st_status items_page(const char *input, const struct page *p, char **out,
                                 struct st_api_error *e)
{
    cJSON *items = cJSON_Parse(input);
    cJSON *list = cJSON_CreateObject();
    cJSON *data = list ? cJSON_AddArrayToObject(list, "data") : NULL;
    int n = cJSON_GetArraySize(items), start = 0;
    enum st_status rc = items && data && cJSON_AddStringToObject(list, "object", "list")
                            ? page_start(items, n, p, &start, e)
                            : st_tr_nomem(e);
    int end = start + p->limit < n ? start + p->limit : n;
    for (int k = start; rc == ST_OK && k < end; k++) {
        const cJSON *it = cJSON_GetArrayItem(items, p->desc ? n - 1 - k : k);
        cJSON *d = cJSON_Duplicate(it, true);
        if (!d || !cJSON_AddItemToArray(data, d)) {
            cJSON_Delete(d);
            rc = st_tr_nomem(e);
        }
    }
    const cJSON *first = cJSON_GetArrayItem(data, 0);
    const cJSON *last = cJSON_GetArrayItem(data, cJSON_GetArraySize(data) - 1);
    if (rc == ST_OK &&
        !((first && item_id(first) ? cJSON_AddStringToObject(list, "first_id", item_id(first))
                                   : cJSON_AddNullToObject(list, "first_id")) &&
          (last && item_id(last) ? cJSON_AddStringToObject(list, "last_id", item_id(last))
                                 : cJSON_AddNullToObject(list, "last_id")) &&
          cJSON_AddBoolToObject(list, "has_more", end < n)))
        rc = st_tr_nomem(e);
    char *text = rc == ST_OK ? cJSON_PrintUnformatted(list) : NULL;
    if (rc == ST_OK && !(text && (*out = st_mutf8_json_escape(text, strlen(text)))))
        rc = st_tr_nomem(e);   /* U+0000 of stored input as \u0000 */
    cJSON_free(text);
    cJSON_Delete(items);
    cJSON_Delete(list);
    return rc;
}

static enum st_route_result input_items(struct st_call *c, const char *id)
{
    struct st_api_error e;
    struct page p;
    if (page_args(c, &p, &e) != ST_OK)
        return st_reply_error(c, &e);
    char *input = NULL, *page = NULL;
    enum st_status rc =
        st_resp_store_get(c->srv->resp_store, st_auth_owner(c), id, &input, NULL, NULL);
    if (rc == ST_ERR_NOT_FOUND)
        return not_found(c, id);
    if (rc != ST_OK)
        return st_reply_nomem(c);
    rc = items_page(input, &p, &page, &e);
    free(input);
    enum st_route_result r = rc == ST_OK ? reply_text(c, page) : st_reply_error(c, &e);
    free(page);
    return r;
}

/* ---- the handlers ------------------------------------------------------------- */

enum st_route_result st_h_response_get(struct st_call *c)
{
    char id[128];
    bool items = false;
    if (!split_path(c->url, id, sizeof(id), &items))
        return bad_path(c);
    if (items)
        return input_items(c, id);
    char *obj = NULL;
    enum st_status rc =
        st_resp_store_get(c->srv->resp_store, st_auth_owner(c), id, NULL, NULL, &obj);
    if (rc == ST_ERR_NOT_FOUND)
        return not_found(c, id);
    if (rc != ST_OK)
        return st_reply_nomem(c);
    enum st_route_result r = reply_text(c, obj);
    free(obj);
    return r;
}

enum st_route_result st_h_response_delete(struct st_call *c)
{
    char id[128];
    bool items = false;
    if (!split_path(c->url, id, sizeof(id), &items) || items)
        return bad_path(c);
    if (st_resp_store_delete(c->srv->resp_store, st_auth_owner(c), id) != ST_OK)
        return not_found(c, id);
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_text(&o, "{");
    st_out_kv_str(&o, "id", id);
    st_out_kv_str(&o, "object", "response");
    st_out_kv_bool(&o, "deleted", true);
    st_out_text(&o, "}");
    return st_reply_json_built(c, st_out_finish(&o), &b);
}
