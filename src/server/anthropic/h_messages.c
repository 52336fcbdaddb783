/* h_messages.c -- POST /v1/messages (Anthropic's Messages API, stateless)
 * and POST /v1/messages/count_tokens. The body becomes the chat request it
 * means (messages_request.c), which runs on the chat generation path
 * (gen_submit.c, gen.c) -- priority (body and X-LlamaSwap-Priority),
 * scheduling, tools, the reasoning split, the thinking budget,
 * cancellation and metrics as for chat -- and is answered in Anthropic's
 * shapes (messages_reply.c). Errors on these routes use Anthropic's error
 * body (routes.c marks them 'anthropic'; reply.c asks st_route_anthropic).
 */
#include <stdlib.h>
#include <string.h>

#include "server/anthropic/anthropic.h"

enum st_route_result st_h_messages(struct st_call *c)
{
    struct st_oai_request oq;
    struct st_api_error e;
    if (st_msg_parse(c->body.data, c->body.len, &oq, &e) != ST_OK) {
        st_gen_log_refused(c, &e);
        st_oai_request_fini(&oq);
        return st_reply_error(c, &e);
    }
    struct st_gen_shape *shape = st_msg_shape_new();
    if (!shape) {
        st_oai_request_fini(&oq);
        return st_reply_nomem(c);
    }
    enum st_route_result r = st_gen_start(c, &oq, shape);
    st_oai_request_fini(&oq);
    return r;
}

/* The rendered prompt's token count: the chat template with the tools,
 * tokenized as a generation's prompt is; nothing is generated. */
static enum st_status count(struct st_call *c, const struct st_oai_request *oq, int64_t *n,
                            struct st_api_error *e)
{
    struct st_engine_pool *pool = c->srv->pool;
    int32_t model = st_engine_pool_pick_model(pool, oq->model);
    if (model < 0)
        return st_api_error_set(e, ST_ERR_NOT_FOUND, "model", "model_not_found",
                                "The model `%.120s` does not exist.",
                                oq->model ? oq->model : "");
    char *prompt = NULL;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_apply_template(pool, model, &oq->chat,
                                                      st_oai_chat_ending(oq), &prompt, &err);
    if (rc == ST_OK)
        rc = st_engine_pool_tokenize(pool, model, prompt, strlen(prompt), false, true, &ids,
                                     &n_ids, &err);
    free(prompt);
    free(ids);
    if (rc != ST_OK)
        return st_api_error_set(e, rc, "messages", NULL, "%s",
                                err.msg[0] ? err.msg : st_status_msg(rc));
    *n = (int64_t)n_ids;
    return ST_OK;
}

enum st_route_result st_h_count_tokens(struct st_call *c)
{
    struct st_oai_request oq;
    struct st_api_error e;
    int64_t n = 0;
    /* count_tokens takes no max_tokens: the body is parsed as a message
     * request that does not require one */
    enum st_status rc = st_msg_parse_count(c->body.data, c->body.len, &oq, &e);
    if (rc == ST_OK)
        rc = count(c, &oq, &n, &e);
    st_oai_request_fini(&oq);
    if (rc != ST_OK)
        return st_reply_error(c, &e);
    struct st_buf b;
    st_buf_init(&b);
    rc = st_buf_printf(&b, "{\"input_tokens\":%lld}", (long long)n);
    return st_reply_json_built(c, rc, &b);
}
