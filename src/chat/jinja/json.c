/* json.c -- a render's variables from the request's JSON: objects become
 * dicts (key order kept), arrays lists, numbers ints when they are whole.
 */
#include <math.h>
#include <string.h>

#include "chat/jinja/internal.h"

enum st_status jv_from_json(struct jarena *a, const cJSON *j, struct jv *out, int depth)
{
    const cJSON *c;

    if (depth > 64)
        return ST_ERR_INVALID;
    if (cJSON_IsNull(j) || !j) {
        *out = jv_none();
    } else if (cJSON_IsBool(j)) {
        *out = jv_bool(cJSON_IsTrue(j));
    } else if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        *out = (d == floor(d) && fabs(d) < 9.0e15) ? jv_int((int64_t)d) : jv_float(d);
    } else if (cJSON_IsString(j)) {
        const char *s = j->valuestring ? j->valuestring : "";
        size_t n = strlen(s);
        char *p = ja_strdup(a, s, n);
        if (!p)
            return ST_ERR_NOMEM;
        *out = jv_str((struct st_str){ p, n });
    } else if (cJSON_IsArray(j)) {
        struct jlist *l = jv_list_new(a, (size_t)cJSON_GetArraySize(j));
        if (!l)
            return ST_ERR_NOMEM;
        out->kind = JV_LIST;
        out->u.l = l;
        for (c = j->child; c; c = c->next) {
            struct jv v;
            TRY(jv_from_json(a, c, &v, depth + 1));
            TRY(jv_list_push(a, l, v));
        }
    } else if (cJSON_IsObject(j)) {
        struct jdict *d = jv_dict_new(a, (size_t)cJSON_GetArraySize(j));
        if (!d)
            return ST_ERR_NOMEM;
        out->kind = JV_DICT;
        out->u.d = d;
        for (c = j->child; c; c = c->next) {
            struct jv v;
            const char *k = c->string ? c->string : "";
            char *kp = ja_strdup(a, k, strlen(k));
            if (!kp)
                return ST_ERR_NOMEM;
            TRY(jv_from_json(a, c, &v, depth + 1));
            TRY(jv_dict_set(a, d, (struct st_str){ kp, strlen(k) }, v));
        }
    } else {
        *out = jv_none();
    }
    return ST_OK;
}
