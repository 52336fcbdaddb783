/* oai_fields.c -- typed, validating access to request fields (cJSON), and
 * the chat "messages" normaliser. See oai_json.h for the rules.
 *
 * Error messages follow OpenAI's wording where it has one, e.g.
 *   Invalid type for 'n': expected an integer, but got a string instead.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai_json.h"
#include "strata/mutf8.h"

static const char *type_name(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "null";
}

static enum st_status bad_type(struct st_api_error *e, const char *param, const char *want,
                               const cJSON *got)
{
    return st_api_error_set(e, ST_ERR_INVALID, param, NULL,
                            "Invalid type for '%s': expected %s, but got %s instead.", param,
                            want, type_name(got));
}

/* The body with \u0000 as C0 80 (strata/mutf8.h: cJSON's C strings would
 * end there); *copy: the rewritten text to free, NULL when body serves. */
static enum st_status nul_escapes(const char **body, size_t *len, char **copy,
                                  struct st_api_error *e)
{
    size_t bad, n;
    enum st_status rc = st_mutf8_json(*body, *len, copy, &n, &bad);
    if (rc == ST_ERR_INVALID)
        return st_api_error_set(e, rc, NULL, NULL,
                                "We could not parse the JSON body of your request: invalid "
                                "UTF-8 (the bytes C0 80) at byte %zu.", bad);
    if (rc != ST_OK)
        return st_api_error_set(e, rc, NULL, NULL, "out of memory reading the request body");
    if (*copy) {
        *body = *copy;
        *len = n;
    }
    return ST_OK;
}

/* The parsed body r (NULL: a syntax error at end) is one object and only
 * whitespace follows it; r is freed unless ST_OK. */
static enum st_status json_root_check(const char *body, size_t len, cJSON *r, const char *end,
                                      struct st_api_error *e)
{
    if (!r)
        return st_api_error_set(e, ST_ERR_INVALID, NULL, NULL,
                                "We could not parse the JSON body of your request: invalid "
                                "JSON near byte %zu.",
                                end && body ? (size_t)(end - body) : (size_t)0);
    /* only whitespace may follow the value */
    for (const char *p = end; p && p < body + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(r);
            return st_api_error_set(e, ST_ERR_INVALID, NULL, NULL,
                                    "We could not parse the JSON body of your request: "
                                    "unexpected data after the JSON value.");
        }
    }
    if (!cJSON_IsObject(r)) {
        cJSON_Delete(r);
        return st_api_error_set(e, ST_ERR_INVALID, NULL, NULL,
                                "The request body must be a JSON object.");
    }
    return ST_OK;
}

enum st_status st_oai_json_root(const char *body, size_t len, cJSON **root,
                                struct st_api_error *e)
{
    *root = NULL;
    const char *end = NULL;
    char *copy = NULL;
    body = body ? body : "";
    enum st_status rc = nul_escapes(&body, &len, &copy, e);
    if (rc != ST_OK)
        return rc;
    cJSON *r = cJSON_ParseWithLengthOpts(body, len, &end, false);
    rc = json_root_check(body, len, r, end, e);
    free(copy);
    if (rc == ST_OK)
        *root = r;
    return rc;
}

const cJSON *st_oai_field(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

void st_oai_delete_all(cJSON *obj, const char *key)
{
    cJSON *it = obj ? obj->child : NULL;
    while (it) {   /* one pass: a body may repeat a key many thousand times */
        cJSON *next = it->next;
        if (it->string && strcmp(it->string, key) == 0)
            cJSON_Delete(cJSON_DetachItemViaPointer(obj, it));
        it = next;
    }
}

enum st_status st_oai_get_bool(const cJSON *obj, const char *key, bool *out, bool *present,
                               struct st_api_error *e)
{
    const cJSON *v = st_oai_field(obj, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return ST_OK;
    if (!cJSON_IsBool(v))
        return bad_type(e, key, "a boolean", v);
    *out = cJSON_IsTrue(v);
    return ST_OK;
}

enum st_status st_oai_get_int(const cJSON *obj, const char *key, int64_t min, int64_t max,
                              int64_t *out, bool *present, struct st_api_error *e)
{
    const cJSON *v = st_oai_field(obj, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return ST_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        floor(v->valuedouble) != v->valuedouble)
        return bad_type(e, key, "an integer", v);
    double d = v->valuedouble;
    if (d < (double)min || d > (double)max)
        return st_api_error_set(e, ST_ERR_INVALID, key, NULL,
                                "Invalid value for '%s': %.0f is out of range (%lld to %lld).",
                                key, d, (long long)min, (long long)max);
    *out = (int64_t)d;
    return ST_OK;
}

enum st_status st_oai_get_num(const cJSON *obj, const char *key, double min, bool min_open,
                              double max, double *out, bool *present, struct st_api_error *e)
{
    const cJSON *v = st_oai_field(obj, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return ST_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return bad_type(e, key, "a number", v);
    double d = v->valuedouble;
    if (d < min || (min_open && d == min) || d > max)
        return st_api_error_set(e, ST_ERR_INVALID, key, NULL,
                                "Invalid value for '%s': %g is out of range (%s%g to %g).", key,
                                d, min_open ? "above " : "", min, max);
    *out = d;
    return ST_OK;
}

enum st_status st_oai_get_str(const cJSON *obj, const char *key, char **out,
                              struct st_api_error *e)
{
    const cJSON *v = st_oai_field(obj, key);
    if (!v)
        return ST_OK;
    if (!cJSON_IsString(v))
        return bad_type(e, key, "a string", v);
    char *s = st_str_dup(st_str_c(v->valuestring));
    if (!s)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    free(*out);
    *out = s;
    return ST_OK;
}

/* cJSON_PrintUnformatted into an owned malloc() string. */
static enum st_status print_owned(const cJSON *v, char **out, struct st_api_error *e)
{
    char *p = cJSON_PrintUnformatted(v);
    if (!p)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    char *s = st_str_dup(st_str_c(p));
    cJSON_free(p);
    if (!s)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    *out = s;
    return ST_OK;
}

enum st_status st_oai_get_raw(const cJSON *obj, const char *key, int type, char **out,
                              struct st_api_error *e)
{
    const cJSON *v = st_oai_field(obj, key);
    if (!v)
        return ST_OK;
    if ((v->type & 0xFF) != type)
        return bad_type(e, key, type == cJSON_Array ? "an array" : "an object", v);
    free(*out);
    *out = NULL;
    return print_owned(v, out, e);
}

enum st_status st_oai_get_tree(const cJSON *obj, const char *key, int type, cJSON **out,
                               struct st_api_error *e)
{
    const cJSON *v = st_oai_field(obj, key);
    if (!v)
        return ST_OK;
    if ((v->type & 0xFF) != type)
        return bad_type(e, key, type == cJSON_Array ? "an array" : "an object", v);
    cJSON *d = cJSON_Duplicate(v, true);
    if (!d)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    cJSON_Delete(*out);
    *out = d;
    return ST_OK;
}

enum st_status st_oai_tokens(const cJSON *arr, const char *param, int32_t **ids, size_t *n,
                             struct st_api_error *e)
{
    *ids = NULL;
    *n = 0;
    if (!cJSON_IsArray(arr))
        return bad_type(e, param, "an array of token ids", arr);
    size_t count = (size_t)cJSON_GetArraySize(arr);
    int32_t *v = malloc((count ? count : 1) * sizeof(*v));
    if (!v)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        double d = cJSON_IsNumber(it) ? it->valuedouble : -1.0;
        if (!cJSON_IsNumber(it) || floor(d) != d || d < 0 || d > INT32_MAX) {
            free(v);
            return st_api_error_set(e, ST_ERR_INVALID, param, NULL,
                                    "Invalid value for '%s': item %zu is not a token id (an "
                                    "integer from 0 to 2147483647).",
                                    param, i);
        }
        v[i++] = (int32_t)d;
    }
    *ids = v;
    *n = i;
    return ST_OK;
}

/* ---- messages -------------------------------------------------------- */

static bool role_known(const char *r)
{
    static const char *const roles[] = { "system", "developer", "user", "assistant", "tool",
                                         "function" };
    for (size_t i = 0; i < ST_ARRAY_LEN(roles); i++)
        if (strcmp(r, roles[i]) == 0)
            return true;
    return false;
}

/* Join the text parts of a content array into one string (owned); only
 * {"type":"text","text":"..."} parts are accepted. */
static enum st_status join_parts(const cJSON *parts, size_t mi, char **out,
                                 struct st_api_error *e)
{
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_buf_append(&b, ST_LIT(""));
    size_t pi = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, parts) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsObject(p) || !cJSON_IsString(type)) {
            rc = st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                  "Invalid content part messages[%zu].content[%zu]: expected "
                                  "an object with a 'type'.", mi, pi);
            break;
        }
        if (strcmp(type->valuestring, "text") != 0) {
            rc = st_api_error_set(e, ST_ERR_UNSUPPORTED, "messages", NULL,
                                  "Content part type '%.40s' (messages[%zu].content[%zu]) is "
                                  "not supported: this server takes text only.",
                                  type->valuestring, mi, pi);
            break;
        }
        if (!cJSON_IsString(text)) {
            rc = bad_type(e, "messages", "a string for a text part's 'text'", text);
            break;
        }
        if (rc == ST_OK)
            rc = st_buf_append(&b, text->valuestring, strlen(text->valuestring));
        if (rc != ST_OK) {
            st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
            break;
        }
        pi++;
    }
    if (rc != ST_OK) {
        st_buf_fini(&b);
        return rc;
    }
    *out = st_buf_steal(&b);
    return ST_OK;
}

/* Validate message mi in place and replace an array content by its text. */
static enum st_status check_message(cJSON *m, size_t mi, struct st_api_error *e)
{
    if (!cJSON_IsObject(m))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "Invalid type for 'messages[%zu]': expected an object, but got "
                                "%s instead.", mi, type_name(m));
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsString(role))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "Missing or invalid 'messages[%zu].role': expected a string.",
                                mi);
    if (!role_known(role->valuestring))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "Invalid value for 'messages[%zu].role': '%.40s' is not one of "
                                "system, developer, user, assistant, tool.",
                                mi, role->valuestring);
    cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!content || cJSON_IsNull(content) || cJSON_IsString(content))
        return ST_OK;   /* null is fine: an assistant turn that only calls tools */
    if (!cJSON_IsArray(content))
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "Invalid type for 'messages[%zu].content': expected a string or "
                                "an array of content parts, but got %s instead.",
                                mi, type_name(content));
    char *text = NULL;
    enum st_status rc = join_parts(content, mi, &text, e);
    if (rc != ST_OK)
        return rc;
    cJSON *s = cJSON_CreateString(text);
    free(text);
    if (!s || !cJSON_ReplaceItemInObjectCaseSensitive(m, "content", s)) {
        cJSON_Delete(s);
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    return ST_OK;
}

enum st_status st_oai_messages(const cJSON *obj, cJSON **out, struct st_api_error *e)
{
    const cJSON *msgs = st_oai_field(obj, "messages");
    if (!msgs)
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "Missing required parameter: 'messages'.");
    if (!cJSON_IsArray(msgs))
        return bad_type(e, "messages", "an array", msgs);
    if (cJSON_GetArraySize(msgs) == 0)
        return st_api_error_set(e, ST_ERR_INVALID, "messages", NULL,
                                "Invalid 'messages': empty array. Expected an array with "
                                "minimum length 1.");
    cJSON *copy = cJSON_Duplicate(msgs, true);
    if (!copy)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    enum st_status rc = ST_OK;
    size_t mi = 0;
    cJSON *m;
    cJSON_ArrayForEach(m, copy) {
        rc = check_message(m, mi++, e);
        if (rc != ST_OK)
            break;
    }
    if (rc != ST_OK) {
        cJSON_Delete(copy);
        return rc;
    }
    cJSON_Delete(*out);
    *out = copy;
    return ST_OK;
}
