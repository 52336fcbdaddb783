/* llama_shape.c -- the answers of POST /completion and /infill in
 * llama-server's native shape, as a generation shape (gen/gen_shape.h);
 * the objects themselves are gen/llama_json.c's.
 *
 * Stream: one "data: {...}" object per generated token (its id and
 * probabilities even when its text is held back), the choice's last one
 * with "stop": true, or an error object when it failed after the stream
 * began (or the server cut the stream); no [DONE], as llama-server's
 * non-OpenAI endpoints. With return_progress, objects with
 * "prompt_progress" while the prompt is read; with timings_per_token,
 * "timings" in every object. Body: one result, or an array of them (several
 * prompts).
 */
#include "server/gen/llama_json.h"
#include "server/llama/llama.h"

struct text_arg {
    const struct st_gen_token *t;
    bool fresh;
};

static enum st_status c_text(struct st_buf *o, const struct st_gen *g,
                             const struct st_gen_choice *ch, const void *arg)
{
    const struct text_arg *a = arg;
    return st_llama_chunk(o, g, ch, a->t->text, a->t->len, a->fresh ? a->t->ev : NULL);
}

static enum st_status c_final(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const void *arg)
{
    (void)arg;
    return st_llama_final(o, g, ch, true);
}

static enum st_status c_progress(struct st_buf *o, const struct st_gen *g,
                                 const struct st_gen_choice *ch, const void *arg)
{
    return st_llama_progress(o, g, ch, arg);
}

static enum st_status c_error(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const void *arg)
{
    (void)g;
    (void)ch;
    return st_api_error_json(o, arg);
}

/* The text released just before END comes with the end-of-generation
 * token, which n_generated does not count and the answer leaves out. */
static bool fresh_token(struct st_gen_choice *ch)
{
    bool fresh = ch->n_generated > ch->n_llama_tokens;
    ch->n_llama_tokens = ch->n_generated;
    return fresh;
}

static void text(struct st_gen *g, struct st_gen_choice *ch, const struct st_gen_token *t)
{
    struct text_arg a = { t, fresh_token(ch) };
    st_gen_put_chunk(g, ch, c_text, &a);
    ch->produced = true;
}

/* Never called: /completion replies are not parsed (a completion request). */
static void delta(struct st_gen *g, struct st_gen_choice *ch, const struct st_oai_delta *d,
                  const struct st_oai_logprob *lp)
{
    (void)g;
    (void)ch;
    (void)d;
    (void)lp;
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
        st_gen_put_chunk(g, ch, c_final, NULL);
}

static void keep(struct st_gen *g, struct st_gen_choice *ch, const struct st_gen_token *t)
{
    bool fresh = fresh_token(ch);
    if (st_buf_append(&ch->text, t->text, t->len) != ST_OK ||
        (fresh && st_llama_keep(g, ch, t->ev) != ST_OK))
        g->broken = true;
}

static enum st_status body(struct st_buf *out, const struct st_gen *g,
                           const struct st_oai_choice *c, const struct st_oai_usage *u,
                           int64_t reasoning_tokens)
{
    (void)c;
    (void)u;
    (void)reasoning_tokens;
    return st_llama_body(out, g);
}

const struct st_gen_shape st_llama_native_shape = {
    .id_prefix = "cmpl-",
    .stream_text = text, .stream_delta = delta, .stream_progress = progress,
    .stream_end = end,
    .keep_token = keep, .body = body,
};
