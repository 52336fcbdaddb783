/* h_completions.c -- POST /v1/chat/completions and POST /v1/completions:
 * parse the body (oai_request.c), then hand over to the generation
 * (gen_submit.c), whose answer oai_shape.c writes. With OpenAI's legacy "suffix" the prompts become the
 * model's fill-in-the-middle prompts first (gen/gen_fim.c). A body that
 * does not parse is answered 400 and logged as one request line like any
 * other completion request.
 */
#include "server/openai/oai.h"

static enum st_route_result completion(struct st_call *c, enum st_oai_kind kind)
{
    struct st_oai_request oq;
    struct st_api_error e;
    if (st_oai_parse(kind, c->body.data, c->body.len, &oq, &e) != ST_OK ||
        st_infill_suffix(c, &oq, &e) != ST_OK ||   /* "suffix": a FIM prompt */
        st_oai_prefill(c, &oq, &e) != ST_OK) {
        st_gen_log_refused(c, &e);
        st_oai_request_fini(&oq);
        return st_reply_error(c, &e);
    }
    enum st_route_result r = st_gen_start(c, &oq, kind == ST_OAI_CHAT ? &st_oai_chat_shape
                                                                      : &st_oai_text_shape);
    st_oai_request_fini(&oq);
    return r;
}

enum st_route_result st_h_chat(struct st_call *c)
{
    return completion(c, ST_OAI_CHAT);
}

enum st_route_result st_h_completions(struct st_call *c)
{
    return completion(c, ST_OAI_COMPLETION);
}
