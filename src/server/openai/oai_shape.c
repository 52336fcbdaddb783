/* oai_shape.c -- the answers of POST /v1/chat/completions, /v1/completions
 * and /v1/embeddings as generation shapes (gen/gen_shape.h); the wire
 * renderers are gen/oai_response.c's (chunks, bodies) and
 * gen/embeddings_reply.c's.
 *
 * Stream (both): "data: {chunk}" events, one per choice event, choices
 * told apart by "index":
 *   chat          the role chunk first ({"role":"assistant","content":null}),
 *                 then text or parsed deltas, each with its token's logprobs
 *   completions   the echoed prompt's chunk first (echo), then text chunks
 *   then per choice its finish_reason chunk, or an error object when it
 *   failed after the stream began (or the server cut the stream); after
 *   the last choice the usage chunk (stream_options.include_usage; not
 *   after a cut) and "data: [DONE]" (not after a cut: the stream ends at
 *   its error event, so that a client does not take it as whole).
 * llama-server's extras: with return_progress, while the prompt is read,
 * chunks with "prompt_progress" (chat: role deltas; completions: empty
 * text); with timings_per_token "timings" on every chunk but the role
 * chunk (gen/llama_json.c renders both).
 * Body: one "chat.completion" / "text_completion" object with every
 * choice, and llama-server's "__verbose" when asked.
 */
#include "server/gen/llama_json.h"
#include "server/openai/oai.h"

/* llama-server's timings_per_token: "timings" on every chunk but the role
 * chunk (rc: the chunk's rendering). */
static enum st_status extras(struct st_buf *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, enum st_status rc)
{
    return rc == ST_OK ? st_llama_extras(o, g, ch, NULL) : rc;
}

static enum st_status c_role(struct st_buf *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, const void *arg)
{
    struct st_oai_meta m = st_gen_meta(g);
    (void)arg;
    return st_oai_chunk_role(o, &m, ch->index);
}

static enum st_status c_text(struct st_buf *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, const void *arg)
{
    const struct st_gen_token *t = arg;
    struct st_oai_meta m = st_gen_meta(g);
    return extras(o, g, ch, st_oai_chunk_text(o, &m, ch->index, t->text, t->len, t->lp));
}

struct delta_arg {
    const struct st_oai_delta *d;
    const struct st_oai_logprob *lp;
};

static enum st_status c_delta(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const void *arg)
{
    const struct delta_arg *a = arg;
    struct st_oai_meta m = st_gen_meta(g);
    return extras(o, g, ch, st_oai_chunk_delta(o, &m, ch->index, a->d, a->lp));
}

struct echo_arg {
    const struct st_buf *text;
    const struct st_oai_lp_acc *lp;   /* NULL: "logprobs": null */
};

static enum st_status c_echo(struct st_buf *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, const void *arg)
{
    const struct echo_arg *a = arg;
    struct st_oai_meta m = st_gen_meta(g);
    return extras(o, g, ch,
                  st_oai_chunk_text_acc(o, &m, ch->index, a->text->data ? a->text->data : "",
                                        a->text->len, a->lp));
}

static enum st_status c_finish(struct st_buf *o, const struct st_gen *g,
                               const struct st_gen_choice *ch, const void *arg)
{
    struct st_oai_meta m = st_gen_meta(g);
    (void)arg;
    return extras(o, g, ch, st_oai_chunk_finish_reason(o, &m, ch->index,
                                                       st_gen_reply_finish_reason(ch)));
}

static enum st_status c_error(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const void *arg)
{
    (void)g;
    (void)ch;
    return st_api_error_json(o, arg);
}

static enum st_status c_usage(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const void *arg)
{
    struct st_oai_meta m = st_gen_meta(g);
    return extras(o, g, ch, st_oai_chunk_usage(o, &m, arg));
}

/* While the prompt is read (return_progress): chat's role delta, or an
 * empty text, with "prompt_progress" (as llama-server's). */
static enum st_status c_progress(struct st_buf *o, const struct st_gen *g,
                                 const struct st_gen_choice *ch, const void *arg)
{
    struct st_oai_meta m = st_gen_meta(g);
    enum st_status rc = m.kind == ST_OAI_CHAT ? st_oai_chunk_role(o, &m, ch->index)
                                              : st_oai_chunk_text(o, &m, ch->index, "", 0, NULL);
    return rc == ST_OK ? st_llama_extras(o, g, ch, arg) : rc;
}

/* ---- hooks ------------------------------------------------------------------ */

static void role_first(struct st_gen *g, struct st_gen_choice *ch)
{
    st_gen_put_chunk(g, ch, c_role, NULL);
}

/* A token's text, or an empty one that carries its logprobs. */
static void text(struct st_gen *g, struct st_gen_choice *ch, const struct st_gen_token *t)
{
    if (!t->len && !t->lp)
        return;
    st_gen_put_chunk(g, ch, c_text, t);
    ch->produced = true;
}

static void delta(struct st_gen *g, struct st_gen_choice *ch, const struct st_oai_delta *d,
                  const struct st_oai_logprob *lp)
{
    struct delta_arg a = { d, lp };
    st_gen_put_chunk(g, ch, c_delta, &a);
    ch->produced = true;
}

static void echo(struct st_gen *g, struct st_gen_choice *ch, const struct st_buf *t,
                 const struct st_oai_lp_acc *lp)
{
    struct echo_arg a = { t, lp };
    st_gen_put_chunk(g, ch, c_echo, &a);
}

static void progress(struct st_gen *g, struct st_gen_choice *ch,
                     const struct st_gen_progress *p)
{
    st_gen_put_chunk(g, ch, c_progress, p);
}

static void end(struct st_gen *g, struct st_gen_choice *ch, const struct st_api_error *err,
                const struct st_oai_usage *u)
{
    (void)u;
    if (err)
        st_gen_put_chunk(g, ch, c_error, err);
    else
        st_gen_put_chunk(g, ch, c_finish, NULL);
}

static void close_stream(struct st_gen *g)
{
    if (g->include_usage && !g->cut) {
        struct st_oai_usage u = st_gen_usage(g);
        st_gen_put_chunk(g, &g->choices[0], c_usage, &u);
    }
    /* a cut stream ends at its error: [DONE] would tell a client that
     * reads on that the answer is whole */
    if (!g->cut && !g->broken && st_sse_done(&g->out) != ST_OK)
        g->broken = true;
}

static enum st_status body(struct st_buf *out, const struct st_gen *g,
                           const struct st_oai_choice *c, const struct st_oai_usage *u,
                           int64_t reasoning_tokens)
{
    struct st_oai_meta m = st_gen_meta(g);
    (void)reasoning_tokens;   /* in u */
    enum st_status rc = st_oai_body(out, &m, c, (size_t)g->n_choices, u);
    if (rc == ST_OK && g->verbose_prompt)
        rc = st_llama_verbose(out, g);
    return rc;
}

const struct st_gen_shape st_oai_chat_shape = {
    .id_prefix = "chatcmpl-", .verbose = true,
    .stream_begin = role_first, .stream_text = text, .stream_delta = delta,
    .stream_progress = progress, .stream_end = end, .stream_close = close_stream,
    .keep_token = st_gen_keep_token, .body = body,
};

const struct st_gen_shape st_oai_text_shape = {
    .id_prefix = "cmpl-", .verbose = true,
    .stream_text = text, .stream_delta = delta, .stream_prompt = echo,
    .stream_progress = progress, .stream_end = end, .stream_close = close_stream,
    .keep_token = st_gen_keep_token, .body = body,
};

/* ---- /v1/embeddings (never streamed) ---------------------------------------- */

static enum st_status embed_body(struct st_buf *out, const struct st_gen *g,
                                 const struct st_oai_choice *c, const struct st_oai_usage *u,
                                 int64_t reasoning_tokens)
{
    (void)c;
    (void)u;
    (void)reasoning_tokens;
    return st_embed_gen_body(out, g);
}

const struct st_gen_shape st_oai_embed_shape = {
    .id_prefix = "embd-", .stream_text = text, .stream_delta = delta, .stream_end = end,
    .keep_token = st_gen_keep_token, .body = embed_body,
};
