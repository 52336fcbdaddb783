/* embed.c -- embedding requests (params.embed; POST /v1/embeddings,
 * docs/ENGINE.md "Embeddings").
 *
 * An embedding request is a request that reads its prompt and generates
 * nothing: it goes through the same scheduler, slots, chunked reads,
 * priorities and prefix reuse as any other. Its last READ chunk "samples"
 * as usual (so the runner makes a logit row for its last prompt row); the
 * seq also carries the engine's scratch 'embd' (runner.h), which the runner
 * fills with that row's final hidden state after output_norm (the vector
 * the LM head sees). Instead of taking a token the engine then
 * L2-normalizes the vector, emits it in one ST_EVENT_EMBED and ends the
 * request (STOP, 0 generated tokens).
 *
 * Pooling is "last" (the last prompt token's state: Qwen3-Embedding's,
 * and the only kind a cached prefix does not spoil, since cached rows are
 * never recomputed). The KV it wrote stays with the slot for prefix reuse
 * like any finished request's.
 *
 * Thread: the engine's own thread.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/step.h"

enum st_status st_engine_embed_start(struct st_engine *e, struct st_engine_slot *sl,
                                     struct st_err *err)
{
    (void)sl;
    int32_t n = st_runner_n_embd(e->runner);
    if (n <= 0)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "this model's runner (%s) cannot make "
                          "embeddings", e->runner->ops->name);
    if (n <= e->embd_cap)
        return ST_OK;
    float *b = realloc(e->embd, (size_t)n * sizeof(*b));
    if (!b)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for an embedding of %d floats", (int)n);
    e->embd = b;
    e->embd_cap = n;
    return ST_OK;
}

void st_engine_embed_seq(struct st_engine *e, const struct st_engine_slot *sl,
                         struct st_runner_seq *q)
{
    if (sl->req->params.embed && q->sample)
        q->embd = e->embd;
}

/* Unit length (L2); a zero vector stays zero. Sum in double: n_embd is in
 * the thousands and the entries of a hidden state differ in scale. */
static void l2_normalize(float *v, int32_t n)
{
    double ss = 0.0;
    for (int32_t i = 0; i < n; i++)
        ss += (double)v[i] * (double)v[i];
    if (ss <= 0.0)
        return;
    double inv = 1.0 / sqrt(ss);
    for (int32_t i = 0; i < n; i++)
        v[i] = (float)((double)v[i] * inv);
}

void st_engine_embed_finish(struct st_engine *e, struct st_engine_slot *sl, int64_t t_end)
{
    struct st_request *req = sl->req;
    int32_t n = st_runner_n_embd(e->runner);
    l2_normalize(e->embd, n);
    if (req->first_token_ns == 0)
        req->first_token_ns = t_end;   /* the scheduler's report: when the answer came */
    struct st_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = ST_EVENT_EMBED;
    ev.text = "";
    ev.token = -1;
    ev.embd = e->embd;
    ev.n_embd = n;
    ev.n_prompt = req->n_tokens;
    ev.n_cached = req->n_cached;
    if (req->emit)
        req->emit(req->emit_ctx, &ev);
    st_engine_end_slot(e, sl, ST_FINISH_STOP, ST_OK, NULL, ST_OUTCOME_COMPLETED);
}

void st_engine_embed_fini(struct st_engine *e)
{
    free(e->embd);
    e->embd = NULL;
    e->embd_cap = 0;
}
