/* h_render.c -- POST /v1/chat/completions/render and /v1/completions/render:
 * the token ids Strata would feed its engine (and its slot's cache) for the
 * same body on /v1/chat/completions or /v1/completions, generating nothing.
 * A router's precise prefix scorer hashes them (the llm-d EPP's
 * token-producer; docs/SCALE-OUT.md "Render").
 *
 * The body is parsed as the generation endpoint parses it (400s alike), the
 * prompt is built by the same code (gen_submit.c st_gen_prompt_tokens: the
 * chat template with tools, chat_template_kwargs and the thinking budget's
 * enable_thinking; the prompt text or the client's ids; "suffix" as a FIM
 * prompt) and tokenized as a generation's is. The answers follow vLLM's
 * render endpoints, the subset of its GenerateRequest a router reads:
 *
 *   chat:        {"request_id":"chatcmpl-ID","model":"NAME","token_ids":[...]}
 *   completions: [{"request_id":"cmpl-ID-0","model":"NAME","token_ids":[...]}, ...]
 *                one entry per prompt
 *
 * POST /v1/chat/completions/input_tokens (llama-server's, also without
 * /v1) counts the same prompt: {"input_tokens": N}.
 */
#include <stdio.h>

#include "server/openai/oai.h"

static void entry(struct st_out *o, const char *request_id, const char *model,
                  const struct st_request *req)
{
    st_out_text(o, "{");
    st_out_kv_str(o, "request_id", request_id);
    st_out_kv_str(o, "model", model);
    st_out_kv_raw(o, "token_ids", "[");
    for (int64_t i = 0; i < req->n_tokens; i++) {
        st_out_sep(o);
        st_out_json_i64(o, req->tokens[i]);
    }
    st_out_text(o, "]}");
}

/* Every prompt's ids into 'o' (completions: an array). */
static enum st_status render_all(struct st_call *c, const struct st_oai_request *oq,
                                 int32_t model, struct st_out *o, struct st_api_error *e)
{
    bool chat = oq->kind == ST_OAI_CHAT;
    size_t n = chat ? 1 : oq->n_prompts;
    const char *name = st_engine_pool_model_name(c->srv->pool, model);
    if (!chat)
        st_out_text(o, "[");
    for (size_t p = 0; p < n; p++) {
        struct st_request *req = st_request_new();
        if (!req)
            return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
        req->model = model;
        enum st_status rc = st_gen_prompt_tokens(c, oq, p, req, e);
        if (rc != ST_OK) {
            st_request_unref(req);
            return rc;
        }
        char id[96];
        if (chat)
            snprintf(id, sizeof(id), "chatcmpl-%s", c->request_id);
        else
            snprintf(id, sizeof(id), "cmpl-%s-%zu", c->request_id, p);
        if (p)
            st_out_text(o, ",");
        entry(o, id, name ? name : "", req);
        st_request_unref(req);
    }
    if (!chat)
        st_out_text(o, "]");
    return ST_OK;
}

/* The chat prompt's token count into 'o'. */
static enum st_status count_chat(struct st_call *c, const struct st_oai_request *oq,
                                 int32_t model, struct st_out *o, struct st_api_error *e)
{
    struct st_request *req = st_request_new();
    if (!req)
        return st_api_error_set(e, ST_ERR_NOMEM, NULL, NULL, "out of memory");
    req->model = model;
    enum st_status rc = st_gen_prompt_tokens(c, oq, 0, req, e);
    if (rc == ST_OK) {
        st_out_text(o, "{");
        st_out_kv_i64(o, "input_tokens", req->n_tokens);
        st_out_text(o, "}");
    }
    st_request_unref(req);
    return rc;
}

static enum st_route_result render(struct st_call *c, enum st_oai_kind kind, bool count)
{
    struct st_oai_request oq;
    struct st_api_error e;
    int32_t model;
    if (st_oai_parse(kind, c->body.data, c->body.len, &oq, &e) != ST_OK ||
        st_infill_suffix(c, &oq, &e) != ST_OK || st_oai_prefill(c, &oq, &e) != ST_OK ||
        st_gen_pick_model(c, oq.model, &model, &e) != ST_OK) {
        st_oai_request_fini(&oq);
        return st_reply_error(c, &e);
    }
    struct st_buf b;
    struct st_out o;
    st_buf_init(&b);
    st_out_init(&o, &b);
    enum st_status rc = count ? count_chat(c, &oq, model, &o, &e)
                              : render_all(c, &oq, model, &o, &e);
    st_oai_request_fini(&oq);
    if (rc != ST_OK) {
        st_buf_fini(&b);
        return st_reply_error(c, &e);
    }
    return st_reply_json_built(c, st_out_finish(&o), &b);
}

enum st_route_result st_h_chat_render(struct st_call *c)
{
    return render(c, ST_OAI_CHAT, false);
}

enum st_route_result st_h_chat_input_tokens(struct st_call *c)
{
    return render(c, ST_OAI_CHAT, true);
}

enum st_route_result st_h_completions_render(struct st_call *c)
{
    return render(c, ST_OAI_COMPLETION, false);
}
