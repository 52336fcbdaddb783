/* fuzz_json.h -- the check the request fuzz targets (fuzz_oai_request.c,
 * fuzz_responses_request.c) make of the chat request an accepted request
 * hands on to the engine and the chat template (messages, tools, template
 * kwargs): the messages an array, the kwargs an object, the tools text
 * that parses. A failed check aborts, so libFuzzer reports the input.
 * Header-only (static inline); needs cJSON and src/ on the include path
 * (server/gen/request.h: struct st_oai_request). */
#ifndef STRATA_FUZZ_JSON_H
#define STRATA_FUZZ_JSON_H

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "server/gen/request.h"

/* s parses as JSON (NULL: nothing handed on, fine). */
static inline void fuzz_check_json(const char *s)
{
    if (!s)
        return;
    cJSON *j = cJSON_Parse(s);
    if (!j)
        abort();   /* we handed on JSON that does not parse */
    cJSON_Delete(j);
}

/* A chat request's parts have their shapes (messages NULL: none, fine). */
static inline void fuzz_check_chat(const struct st_chat_request *c)
{
    if ((c->messages && !cJSON_IsArray(c->messages)) || (c->kwargs && !cJSON_IsObject(c->kwargs)))
        abort();
    fuzz_check_json(c->tools);
}

/* Every part of an accepted request's chat request has its shape. */
static inline void fuzz_check_request_json(const struct st_oai_request *r)
{
    fuzz_check_chat(&r->chat);
}

#endif /* STRATA_FUZZ_JSON_H */
