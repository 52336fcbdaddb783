/* fuzz_json.h -- the check the request fuzz targets (fuzz_oai_request.c,
 * fuzz_responses_request.c) make of the JSON an accepted request hands on
 * to the engine and the chat template (messages, tools, template kwargs):
 * it parses. A failed check aborts, so libFuzzer reports the input.
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

/* Every JSON text of an accepted request parses. */
static inline void fuzz_check_request_json(const struct st_oai_request *r)
{
    fuzz_check_json(r->messages_json);
    fuzz_check_json(r->tools_json);
    fuzz_check_json(r->kwargs_json);
}

#endif /* STRATA_FUZZ_JSON_H */
