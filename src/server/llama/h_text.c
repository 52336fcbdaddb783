/* h_text.c -- llama-server compatible text endpoints:
 *
 *   POST /tokenize        -> {"tokens":[12,34]}
 *                            with_pieces: {"tokens":[{"id":12,"piece":"Hel"},...]}
 *                            (a piece that is not valid UTF-8 comes as a byte array)
 *   POST /detokenize      -> {"content":"..."}
 *   POST /apply-template  -> {"prompt":"..."}  (the chat template, generation prompt added;
 *                            --reasoning-budget 0 turns thinking off, as for chat)
 *
 * "model" picks the model (absent: the first); the bodies are parsed by
 * oai_text.c.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server/llama/llama.h"
#include "strata/mutf8.h"

static enum st_route_result parse_or_reply(struct st_call *c, enum st_oai_text_kind kind,
                                           struct st_oai_text_request *r, int32_t *model)
{
    struct st_api_error e;
    if (st_oai_parse_text(kind, c->body.data, c->body.len, r, &e) != ST_OK)
        return st_reply_error(c, &e);
    *model = st_engine_pool_pick_model(c->srv->pool, r->model);
    if (*model < 0) {
        st_api_error_set(&e, ST_ERR_NOT_FOUND, "model", "model_not_found",
                         "The model `%.120s` does not exist.", r->model ? r->model : "");
        st_oai_text_request_fini(r);
        return st_reply_error(c, &e);
    }
    return ST_ROUTE_WAIT;   /* "go on" */
}

static enum st_route_result engine_error(struct st_call *c, enum st_status rc,
                                         const struct st_err *err, const char *param)
{
    struct st_api_error e;
    st_api_error_set(&e, rc, param, NULL, "%s", err->msg[0] ? err->msg : st_status_msg(rc));
    return st_reply_error(c, &e);
}

/* {"id":..,"piece":..}: the piece as a string, or as bytes when it is not
 * valid UTF-8. A failed detokenize is recorded in o. */
static void piece_json(struct st_out *o, struct st_engine_pool *pool, int32_t model, int32_t id)
{
    if (!st_out_ok(o))
        return;
    char *piece = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_detokenize(pool, model, &id, 1, &piece, &err);
    if (rc != ST_OK) {
        st_out_check(o, rc);
        return;
    }
    size_t n = st_mutf8_decode(piece, strlen(piece));   /* U+0000 as its byte */
    st_out_text(o, "{");
    st_out_kv_i64(o, "id", id);
    st_out_key(o, "piece");
    if (st_json_utf8_valid(piece, n))
        st_out_json_str(o, piece, n);
    else
        st_out_json_bytes(o, piece, n);
    st_out_text(o, "}");
    free(piece);
}

static enum st_status tokens_json(struct st_buf *b, struct st_engine_pool *pool, int32_t model,
                                  const int32_t *ids, size_t n, bool pieces)
{
    struct st_out o;
    st_out_init(&o, b);
    st_out_text(&o, "{");
    st_out_kv_raw(&o, "tokens", "[");
    for (size_t i = 0; i < n; i++) {
        st_out_sep(&o);
        if (pieces)
            piece_json(&o, pool, model, ids[i]);
        else
            st_out_json_i64(&o, ids[i]);
    }
    st_out_text(&o, "]}");
    return st_out_finish(&o);
}

/* The most text /tokenize takes (more than any context holds), and with
 * pieces, whose answer is many times its input, a quarter of it: a big
 * body is refused before the tokenizer spends seconds on it
 * (docs/SECURITY.md "Connections"). */
#define TOKENIZE_MAX_BYTES ((size_t)1 << 20)
#define TOKENIZE_PIECES_MAX_BYTES ((size_t)256 << 10)

enum st_route_result st_h_tokenize(struct st_call *c)
{
    struct st_oai_text_request r;
    int32_t model = 0;
    enum st_route_result res = parse_or_reply(c, ST_OAI_TOKENIZE, &r, &model);
    if (res != ST_ROUTE_WAIT)
        return res;
    size_t max = r.with_pieces ? TOKENIZE_PIECES_MAX_BYTES : TOKENIZE_MAX_BYTES;
    if (strlen(r.content) > max) {
        struct st_api_error e;
        st_api_error_set(&e, ST_ERR_INVALID, "content", "content_too_large",
                         "/tokenize takes at most %zu bytes of content%s; this has %zu.", max,
                         r.with_pieces ? " with_pieces" : "", strlen(r.content));
        e.http = 413;
        st_oai_text_request_fini(&r);
        return st_reply_error(c, &e);
    }
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_tokenize(c->srv->pool, model, r.content,
                                                strlen(r.content), r.add_special,
                                                r.parse_special, &ids, &n, &err);
    if (rc != ST_OK) {
        st_oai_text_request_fini(&r);
        return engine_error(c, rc, &err, "content");
    }
    struct st_buf b;
    st_buf_init(&b);
    rc = tokens_json(&b, c->srv->pool, model, ids, n, r.with_pieces);
    free(ids);
    st_oai_text_request_fini(&r);
    return st_reply_json_built(c, rc, &b);
}

/* The answer to an engine call that made 'text' (owned, freed here when
 * the call succeeded): {"<key>": "<text>"}, or the call's error with
 * 'param' blamed. */
static enum st_route_result reply_text(struct st_call *c, enum st_status call_rc,
                                       const struct st_err *err, const char *param,
                                       const char *key, char *text)
{
    if (call_rc != ST_OK)
        return engine_error(c, call_rc, err, param);
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_text(&o, "{");
    st_out_kv_str(&o, key, text);
    st_out_text(&o, "}");
    enum st_status rc = st_out_finish(&o);
    free(text);
    return st_reply_json_built(c, rc, &b);
}

enum st_route_result st_h_detokenize(struct st_call *c)
{
    struct st_oai_text_request r;
    int32_t model = 0;
    enum st_route_result res = parse_or_reply(c, ST_OAI_DETOKENIZE, &r, &model);
    if (res != ST_ROUTE_WAIT)
        return res;
    char *text = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_engine_pool_detokenize(c->srv->pool, model, r.tokens, r.n_tokens,
                                                  &text, &err);
    st_oai_text_request_fini(&r);
    return reply_text(c, rc, &err, "tokens", "content", text);
}

enum st_route_result st_h_apply_template(struct st_call *c)
{
    struct st_oai_text_request r;
    int32_t model = 0;
    enum st_route_result res = parse_or_reply(c, ST_OAI_APPLY_TEMPLATE, &r, &model);
    if (res != ST_ROUTE_WAIT)
        return res;
    char *prompt = NULL;
    struct st_err err = { 0 };
    /* rendered as a chat request renders it: --reasoning-budget 0 turns thinking off */
    struct st_chat_request chat = r.chat;
    cJSON *kw = c->srv->cfg.reasoning_budget == 0 ? st_chat_request_kwargs_no_think(&r.chat)
                                                  : NULL;
    if (kw)
        chat.kwargs = kw;
    enum st_status rc = st_engine_pool_apply_template(
        c->srv->pool, model, &chat, r.add_generation_prompt ? ST_CHAT_END_GENERATE : ST_CHAT_END_TURN,
        &prompt, &err);
    cJSON_Delete(kw);
    st_oai_text_request_fini(&r);
    return reply_text(c, rc, &err, "messages", "prompt", prompt);
}
