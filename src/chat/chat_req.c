/* chat_req.c -- struct st_chat_request: init, fini and the JSON-text entry
 * the CLI and tests use (include/strata/chat_req.h). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "strata/chat_req.h"
#include "strata/str.h"

void st_chat_request_init(struct st_chat_request *r)
{
    memset(r, 0, sizeof(*r));
}

void st_chat_request_fini(struct st_chat_request *r)
{
    cJSON_Delete(r->messages);
    free(r->tools);
    cJSON_Delete(r->kwargs);
    memset(r, 0, sizeof(*r));
}

enum st_status st_chat_request_parse(struct st_chat_request *r, const char *messages_json,
                                     const char *tools_json, const char *kwargs_json,
                                     struct st_err *err)
{
    st_chat_request_init(r);
    r->messages = cJSON_Parse(messages_json ? messages_json : "");
    if (!cJSON_IsArray(r->messages)) {
        st_chat_request_fini(r);
        return st_err_set(err, ST_ERR_INVALID, "'messages' must be a JSON array");
    }
    if (tools_json && !(r->tools = st_str_dup(st_str_c(tools_json)))) {
        st_chat_request_fini(r);
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the tools");
    }
    r->kwargs = kwargs_json ? cJSON_Parse(kwargs_json) : NULL;
    if (r->kwargs && !cJSON_IsObject(r->kwargs)) {
        cJSON_Delete(r->kwargs);
        r->kwargs = NULL;
    }
    return ST_OK;
}

const cJSON *st_chat_request_kwarg(const struct st_chat_request *r, const char *key)
{
    return r->kwargs ? cJSON_GetObjectItemCaseSensitive(r->kwargs, key) : NULL;
}

cJSON *st_chat_request_kwargs_no_think(const struct st_chat_request *r)
{
    if (st_chat_request_kwarg(r, "enable_thinking"))
        return NULL;
    cJSON *kw = r->kwargs ? cJSON_Duplicate(r->kwargs, true) : cJSON_CreateObject();
    if (kw && !cJSON_AddFalseToObject(kw, "enable_thinking")) {
        cJSON_Delete(kw);
        kw = NULL;
    }
    return kw;
}
