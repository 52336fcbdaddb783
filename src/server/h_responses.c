/* h_responses.c -- POST /v1/responses (OpenAI's Responses API, stateless):
 * the body becomes the chat request it means (responses_request.c), which
 * runs on the chat generation path (gen_submit.c, gen.c) -- priority,
 * scheduling, tools, the reasoning split, json_schema, cancellation and
 * metrics as for chat -- and is answered in the Responses shapes
 * (responses_reply.c). A body that does not parse is answered 400 and
 * logged as one request line like any other completion request.
 */
#include <stdlib.h>

#include "gen.h"

enum st_route_result st_h_responses(struct st_call *c)
{
    struct st_oai_request oq;
    struct st_api_error e;
    char *echo = NULL;
    if (st_resp_parse(c->body.data, c->body.len, &oq, &echo, &e) != ST_OK) {
        st_gen_log_refused(c, &e);
        st_oai_request_fini(&oq);
        return st_reply_error(c, &e);
    }
    struct st_gen_shape *resp = st_resp_new(echo);   /* takes echo */
    if (!resp) {
        st_oai_request_fini(&oq);
        return st_reply_nomem(c);
    }
    enum st_route_result r = st_gen_start_shaped(c, &oq, resp);
    st_oai_request_fini(&oq);
    return r;
}
