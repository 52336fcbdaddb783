/* h_responses.c -- POST /v1/responses (OpenAI's Responses API): the body,
 * with the conversation of its previous_response_id before its input
 * (responses_chain.c), becomes the chat request it means
 * (responses_request.c), which
 * runs on the chat generation path (gen_submit.c, gen.c) -- priority,
 * scheduling, tools, the reasoning split, json_schema, cancellation and
 * metrics as for chat -- and is answered in the Responses shapes
 * (responses_reply.c), which also keeps it in the server's response store
 * unless the body said store: false (GET and DELETE: responses_get.c).
 * A body that does not parse is answered 400 (404 for an unknown
 * previous_response_id) and logged as one request line like any other
 * completion request.
 */
#include <stdlib.h>

#include "server/responses/responses.h"

enum st_route_result st_h_responses(struct st_call *c)
{
    struct st_oai_request oq;
    struct st_api_error e;
    struct st_resp_parsed rp;
    uint64_t owner = st_auth_owner(c);   /* its key's responses only */
    if (st_resp_parse_stored(c->body.data, c->body.len, c->srv->resp_store, owner, &oq, &rp,
                             &e) != ST_OK) {
        st_gen_log_refused(c, &e);
        st_oai_request_fini(&oq);
        return st_reply_error(c, &e);
    }
    /* takes echo and input */
    struct st_gen_shape *resp = st_resp_new_stored(rp.echo, rp.store ? c->srv->resp_store : NULL,
                                                   owner, rp.input);
    if (!resp) {
        st_oai_request_fini(&oq);
        return st_reply_nomem(c);
    }
    enum st_route_result r = st_gen_start(c, &oq, resp);
    st_oai_request_fini(&oq);
    return r;
}
