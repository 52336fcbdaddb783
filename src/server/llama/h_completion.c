/* h_completion.c -- POST /completion and /completions: llama-server's
 * native completion endpoint (docs/API.md "/completion").
 *
 * The body (completion_request.c) is /v1/completions' plus llama-server's
 * own fields; only the answer differs (llama_shape.c, gen/llama_json.c): content, tokens,
 * stop_type, generation_settings, timings, completion_probabilities.
 */
#include <stdlib.h>

#include "server/gen/gen_vocab.h"
#include "server/llama/llama.h"

/* generation_settings as the request will run: the server's defaults in,
 * and with ignore_eos its model's end-of-generation ids. A model that
 * cannot be named or read is left to st_gen_start to answer. */
static enum st_status settle(struct st_call *c, struct st_oai_request *oq,
                             struct st_api_error *e)
{
    int32_t *eog = NULL;
    size_t n_eog = 0;
    st_gen_server_defaults(c, oq);
    if (oq->params.ignore_eos) {
        int32_t model;
        struct st_api_error ignored;
        struct st_err err = { 0 };
        if (st_gen_pick_model(c, oq->model, &model, &ignored) == ST_OK &&
            st_engine_pool_eog_ids(c->srv->pool, model, &eog, &n_eog, &err) != ST_OK)
            n_eog = 0;
    }
    enum st_status rc = st_llama_settings(oq, eog, n_eog, e);
    free(eog);
    return rc;
}

enum st_route_result st_h_completion(struct st_call *c)
{
    struct st_oai_request oq;
    struct st_api_error e;
    if (st_llama_completion_parse(c->body.data, c->body.len, &oq, &e) != ST_OK) {
        st_gen_log_refused(c, &e);
        return st_reply_error(c, &e);
    }
    if (settle(c, &oq, &e) != ST_OK) {
        st_oai_request_fini(&oq);
        return st_reply_error(c, &e);
    }
    enum st_route_result r = st_gen_start(c, &oq, &st_llama_native_shape);
    st_oai_request_fini(&oq);
    return r;
}
