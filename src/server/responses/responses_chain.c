/* responses_chain.c -- the stateful part of a POST /v1/responses body
 * (docs/API.md "Stored responses"): 'store' and 'previous_response_id'
 * against the response store (responses_store.h).
 *
 * previous_response_id names a stored response of the caller's (its API
 * key's: another key's is as unknown); its conversation -- its
 * stored input items (which already begin with its own predecessors'
 * items) and then its output items -- is put before this request's input,
 * and the translation onto chat (responses_request.c) reads the whole
 * list as if the client had sent it. The earlier requests' instructions
 * are not carried over (OpenAI's documented behaviour): only items are.
 * Reasoning items of an earlier output go through as any reasoning input
 * item does (dropped by the translation).
 *
 * When the response is to be stored, the same list (this request's string
 * input as one {type:"message", role:"user", content:[{type:"input_text",
 * text}]} item) is what its entry keeps as "input", every item given an
 * "id" when it had none (msg_..., fc_..., fco_..., rs_..., item_...) or
 * when an earlier item has the same one, so GET
 * /v1/responses/{id}/input_items can page by id, and every message in
 * OpenAI's item shape: "type":"message", a string content as one
 * input_text part (output_text for the assistant's). The translation
 * reads that shape as the same message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"
#include "server/responses/responses.h"

static const char *id_prefix(const cJSON *item)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(item, "type");
    const char *type = cJSON_IsString(t) ? t->valuestring : "message";
    if (strcmp(type, "message") == 0)
        return "msg_";
    if (strcmp(type, "function_call") == 0)
        return "fc_";
    if (strcmp(type, "function_call_output") == 0)
        return "fco_";
    if (strcmp(type, "reasoning") == 0)
        return "rs_";
    return "item_";
}

/* [{type, text}]: a text as a one-part content list. */
static cJSON *text_parts(const char *type, const char *text)
{
    cJSON *parts = cJSON_CreateArray();
    cJSON *p = cJSON_CreateObject();
    if (!parts || !p || !cJSON_AddItemToArray(parts, p)) {
        cJSON_Delete(parts);
        cJSON_Delete(p);
        return NULL;
    }
    if (!cJSON_AddStringToObject(p, "type", type) || !cJSON_AddStringToObject(p, "text", text)) {
        cJSON_Delete(parts);
        return NULL;
    }
    return parts;
}

/* A message item (type "message" or none) in OpenAI's item shape, as
 * input_items lists it: "type":"message" and a content list. */
static bool message_shape(cJSON *it)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "type");
    if (t && !(cJSON_IsString(t) && strcmp(t->valuestring, "message") == 0))
        return true;
    if (!t && !cJSON_AddStringToObject(it, "type", "message"))
        return false;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
    if (!cJSON_IsString(c))
        return true;
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
    bool out = cJSON_IsString(role) && strcmp(role->valuestring, "assistant") == 0;
    cJSON *parts = text_parts(out ? "output_text" : "input_text", c->valuestring);
    if (parts && cJSON_ReplaceItemInObjectCaseSensitive(it, "content", parts))
        return true;
    cJSON_Delete(parts);
    return false;
}

/* Every object item without a string "id" gets one; messages get their
 * item shape. */
static bool give_ids(cJSON *items)
{
    cJSON *it;
    cJSON_ArrayForEach(it, items) {
        if (cJSON_IsObject(it) && !message_shape(it))
            return false;
        if (!cJSON_IsObject(it) || cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "id")))
            continue;
        char id[40];
        st_random_hex_id(id, sizeof(id), id_prefix(it), 12);
        st_oai_delete_all(it, "id");
        if (!cJSON_AddStringToObject(it, "id", id))
            return false;
    }
    return true;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One id, one item, as OpenAI requires ("Duplicate item found with id
 * ..."): an item sent twice, or an item of the previous response sent
 * again with previous_response_id, would be rendered twice, and
 * input_items' 'after' would be ambiguous. Sorting finds a repeat in
 * O(n log n). */
static enum st_status unique_ids(const cJSON *items, struct st_api_error *e)
{
    size_t n = (size_t)cJSON_GetArraySize(items), k = 0;
    if (n < 2)
        return ST_OK;
    const char **v = calloc(n, sizeof(*v));
    if (!v)
        return st_tr_nomem(e);
    const cJSON *it;
    cJSON_ArrayForEach(it, items) {
        const cJSON *id = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "id") : NULL;
        if (cJSON_IsString(id))
            v[k++] = id->valuestring;
    }
    qsort(v, k, sizeof(*v), by_id);
    enum st_status rc = ST_OK;
    for (size_t j = 1; j < k && rc == ST_OK; j++)
        if (strcmp(v[j], v[j - 1]) == 0)
            rc = st_api_error_set(e, ST_ERR_INVALID, "input", NULL,
                                  "Duplicate item found with id '%.100s' (an item sent twice, "
                                  "or again with previous_response_id, which already carries "
                                  "it).", v[j]);
    free(v);
    return rc;
}

/* A string input as the message item it means. */
static cJSON *string_item(const char *text)
{
    cJSON *m = cJSON_CreateObject();
    cJSON *parts = text_parts("input_text", text);
    bool ok = m && parts && cJSON_AddStringToObject(m, "type", "message") &&
              cJSON_AddStringToObject(m, "role", "user") &&
              cJSON_AddItemToObject(m, "content", parts);
    if (!ok) {
        if (!m || !cJSON_GetObjectItemCaseSensitive(m, "content"))
            cJSON_Delete(parts);
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

/* Append copies of a JSON array text's items (one we stored: an array). */
static bool append_text(cJSON *all, const char *json)
{
    cJSON *arr = cJSON_Parse(json);
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return false;
    }
    while (cJSON_GetArraySize(arr) > 0)
        cJSON_AddItemToArray(all, cJSON_DetachItemFromArray(arr, 0));
    cJSON_Delete(arr);
    return true;
}

/* The stored conversation of owner's 'prev' into 'all'; 404 when there is
 * none, another owner's alike. */
static enum st_status append_previous(cJSON *all, struct st_resp_store *store, uint64_t owner,
                                      const char *prev, struct st_api_error *e)
{
    char *in = NULL, *out = NULL;
    enum st_status rc = st_resp_store_get(store, owner, prev, &in, &out, NULL);
    if (rc == ST_ERR_NOT_FOUND)
        return st_api_error_set(e, ST_ERR_NOT_FOUND, "previous_response_id", NULL,
                                "Previous response with id '%.100s' not found.", prev);
    if (rc == ST_OK && !(append_text(all, in) && append_text(all, out)))
        rc = ST_ERR_NOMEM;
    free(in);
    free(out);
    return rc == ST_OK ? ST_OK : st_tr_nomem(e);
}

/* This request's input (checked: a string or an array) appended to 'all'. */
static enum st_status append_input(cJSON *all, const cJSON *in, struct st_api_error *e)
{
    if (cJSON_IsString(in)) {
        cJSON *m = string_item(in->valuestring);
        return m && cJSON_AddItemToArray(all, m) ? ST_OK : st_tr_nomem(e);
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, in) {
        cJSON *d = cJSON_Duplicate(it, true);
        if (!d || !cJSON_AddItemToArray(all, d)) {
            cJSON_Delete(d);
            return st_tr_nomem(e);
        }
    }
    return ST_OK;
}

/* 'store' (a boolean, default true) and 'previous_response_id' (a string). */
static enum st_status check_fields(const cJSON *root, bool *store, const char **prev,
                                   struct st_api_error *e)
{
    *store = true;
    *prev = NULL;
    enum st_status rc = st_oai_get_bool(root, "store", store, NULL, e);
    if (rc != ST_OK)
        return rc;
    const cJSON *p = st_oai_field(root, "previous_response_id");
    if (p && (!cJSON_IsString(p) || !p->valuestring[0]))
        return st_tr_bad(e, "previous_response_id",
                         "Invalid type for 'previous_response_id': expected a response id "
                         "(a non-empty string).");
    *prev = p ? p->valuestring : NULL;
    const cJSON *in = st_oai_field(root, "input");
    if (!in)
        return st_tr_bad(e, "input", "Missing required parameter: 'input'.");
    if (!cJSON_IsString(in) && !cJSON_IsArray(in))
        return st_tr_bad(e, "input", "Invalid type for 'input': expected a string or an array "
                                     "of input items.");
    return ST_OK;
}

/* The input list (previous conversation + this input) as a root whose
 * "input" is that list: *expanded (owned). */
static enum st_status expand(const cJSON *root, struct st_resp_store *store, uint64_t owner,
                             const char *prev, cJSON **expanded, struct st_api_error *e)
{
    cJSON *x = cJSON_Duplicate(root, true);
    cJSON *all = cJSON_CreateArray();
    if (!x || !all) {
        cJSON_Delete(x);
        cJSON_Delete(all);
        return st_tr_nomem(e);
    }
    const cJSON *in = st_oai_field(root, "input");
    enum st_status rc = prev ? append_previous(all, store, owner, prev, e) : ST_OK;
    if (rc == ST_OK && in)
        rc = append_input(all, in, e);
    st_oai_delete_all(x, "input");
    if (rc == ST_OK && !cJSON_AddItemToObject(x, "input", all))
        rc = st_tr_nomem(e);
    else if (rc != ST_OK)
        cJSON_Delete(all);
    if (rc != ST_OK) {
        cJSON_Delete(x);
        return rc;
    }
    *expanded = x;
    return ST_OK;
}

enum st_status st_resp_chain(const cJSON *root, struct st_resp_store *store, uint64_t owner,
                             bool *do_store, cJSON **expanded, char **items, struct st_api_error *e)
{
    const char *prev = NULL;
    bool want = true;
    *do_store = false;
    *expanded = NULL;
    *items = NULL;
    enum st_status rc = check_fields(root, &want, &prev, e);
    if (rc != ST_OK)
        return rc;
    *do_store = want && store != NULL;
    if (!prev && !*do_store)   /* nothing to expand, nothing to keep: the body as it is */
        return unique_ids(st_oai_field(root, "input"), e);
    rc = expand(root, store, owner, prev, expanded, e);
    if (rc == ST_OK)
        rc = unique_ids(cJSON_GetObjectItemCaseSensitive(*expanded, "input"), e);
    if (rc == ST_OK && *do_store) {
        cJSON *all = cJSON_GetObjectItemCaseSensitive(*expanded, "input");
        char *p = give_ids(all) ? cJSON_PrintUnformatted(all) : NULL;
        *items = p ? st_str_dup(st_str_c(p)) : NULL;
        cJSON_free(p);
        if (!*items)
            rc = st_tr_nomem(e);
    }
    if (rc != ST_OK || !prev) {   /* storing only: the body is translated as sent */
        cJSON_Delete(*expanded);
        *expanded = NULL;
    }
    return rc;
}
