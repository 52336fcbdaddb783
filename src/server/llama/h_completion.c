/* h_completion.c -- POST /completion and /completions: llama-server's
 * native completion endpoint (docs/API.md "/completion").
 *
 * The body (completion_request.c) is /v1/completions' plus llama-server's
 * own fields; only the answer differs (llama_shape.c, gen/llama_json.c): content, tokens,
 * stop_type, generation_settings, timings, completion_probabilities.
 */
#include "server/llama/llama.h"

enum st_route_result st_h_completion(struct st_call *c)
{
    struct st_oai_request oq;
    struct st_api_error e;
    if (st_llama_completion_parse(c->body.data, c->body.len, &oq, &e) != ST_OK) {
        st_gen_log_refused(c, &e);
        return st_reply_error(c, &e);
    }
    enum st_route_result r = st_gen_start(c, &oq, &st_llama_native_shape);
    st_oai_request_fini(&oq);
    return r;
}
