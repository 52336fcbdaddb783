/* prompt.c -- echo and prompt logprobs: the prompt's tokens reported back
 * to the request (docs/API.md "Scoring prompts", docs/ENGINE.md); and
 * how far its read has come (params.progress: return_progress).
 *
 * A request with params.echo gets the text of every prompt token; with
 * params.prompt_logprobs also each token's logprob under the tokens before
 * it, its rank and the best alternatives. The logprob of the token at
 * position p comes from the logits of row p - 1, so:
 *
 *   - a scored READ wants logits at every row (runner.h 'score'); the
 *     runner scores each row right after the forward and keeps only the
 *     scores, so at most ST_RUNNER_SCORE_ROWS rows of logits exist at once
 *     (a scored chunk is cut to that many rows, whatever the ubatch);
 *   - row j of chunk [a, b) scores position a + j + 1: the chunk's last row
 *     scores the first token of the next chunk ('score_next'), so after a
 *     scored chunk positions up to b (inclusive, when b < n_prompt) are
 *     reported, and position 0 has no logprob;
 *   - a cached position's logits are gone, so its score cannot be read
 *     from the KV; the slot keeps the scores its scored reads computed
 *     instead (prefix.c "scores"), and such a request reuses a cached
 *     prefix [0, k) only when positions 1..k all have kept scores with
 *     enough alternatives: they are reported from there with the first
 *     chunk (whose first row, k, scores k + 1 onwards), and every scored
 *     chunk's rows are kept there for later requests.
 * Echo without logprobs needs no logits: positions [0, b) are reported
 * after each chunk (a cached prefix is reported with the first chunk).
 *
 * Thread: the engine's own thread.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/step.h"

_Static_assert(ST_RUNNER_SCORE_TOP == ST_MAX_TOP_LOGPROBS, "one bound for alternatives");

enum st_status st_engine_prompt_start(struct st_engine *e, struct st_engine_slot *sl)
{
    sl->echo_next = 0;
    if (!e->ptoks)
        e->ptoks = calloc(ST_ENGINE_PTOK_BATCH, sizeof(*e->ptoks));
    if (!e->scores)
        e->scores = calloc(ST_RUNNER_SCORE_ROWS, sizeof(*e->scores));
    return e->ptoks && e->scores ? ST_OK : ST_ERR_NOMEM;
}

void st_engine_prompt_score(struct st_engine *e, const struct st_engine_slot *sl,
                            struct st_runner_seq *q)
{
    const struct st_request *req = sl->req;
    if (!req->params.prompt_logprobs)
        return;
    int64_t left = req->n_tokens - q->pos;
    q->n_tokens = ST_MIN(q->n_tokens, (int64_t)ST_RUNNER_SCORE_ROWS);
    q->sample = q->n_tokens == left;
    q->score = true;
    q->score_next = q->sample ? -1 : req->tokens[q->pos + q->n_tokens];
    q->score_top = st_engine_prompt_top(req);
    q->scores = e->scores;
}

/* The token's text: its generated-text piece, or for a special token (no
 * piece) the name the detokenizer shows, so echoed chat markup reads back. */
static void token_text(struct st_engine *e, int32_t token, struct st_prompt_token *t)
{
    size_t len = st_runner_token_piece(e->runner, token, t->text, sizeof(t->text));
    t->n_text = (int32_t)ST_MIN(len, sizeof(t->text));
    if (len > 0)
        return;
    char *s = NULL;
    struct st_err err = { 0 };
    if (st_runner_detokenize(e->runner, &token, 1, &s, &err) == ST_OK && s) {
        size_t n = ST_MIN(strlen(s), sizeof(t->text));
        memcpy(t->text, s, n);
        t->n_text = (int32_t)n;
    }
    free(s);
}

static void copy_score(struct st_engine *e, const struct st_runner_score *sc,
                       struct st_prompt_token *t)
{
    t->has_logprob = true;
    t->logprob = sc->logprob;
    t->rank = sc->rank;
    t->n_top = ST_MIN(sc->n_top, ST_MAX_TOP_LOGPROBS);
    for (int32_t i = 0; i < t->n_top; i++) {
        struct st_top_logprob *o = &t->top[i];
        o->token = sc->top_id[i];
        o->logprob = sc->top_lp[i];
        size_t len = st_runner_token_piece(e->runner, o->token, o->bytes, sizeof(o->bytes));
        o->n_bytes = (int32_t)ST_MIN(len, sizeof(o->bytes));
    }
}

static void emit_run(const struct st_engine_slot *sl, const struct st_prompt_token *t,
                     int32_t n)
{
    struct st_request *req = sl->req;
    struct st_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = ST_EVENT_PROMPT;
    ev.ptok = t;
    ev.n_ptok = n;
    ev.text = "";
    ev.token = -1;
    ev.n_prompt = req->n_tokens;
    ev.n_cached = req->n_cached;
    if (req->emit)
        req->emit(req->emit_ctx, &ev);
}

void st_engine_prompt_progress(struct st_engine_slot *sl)
{
    struct st_request *req = sl->req;
    struct st_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = ST_EVENT_PROGRESS;
    ev.text = "";
    ev.token = -1;
    ev.n_prompt = req->n_tokens;
    ev.n_cached = req->n_cached;
    ev.n_read = sl->n_past;
    sl->progress_begun = true;
    if (req->emit)
        req->emit(req->emit_ctx, &ev);
}

void st_engine_prompt_emit(struct st_engine *e, struct st_engine_slot *sl,
                           const struct st_runner_seq *q)
{
    const struct st_request *req = sl->req;
    int64_t a = q->pos, b = q->pos + q->n_tokens;
    int64_t end = q->score ? ST_MIN(b + 1, req->n_tokens) : b;
    int32_t k = 0;
    if (q->score)
        st_engine_prefix_keep_scores(sl, q);   /* for the next request sharing them */
    for (int64_t p = sl->echo_next; p < end; p++) {
        struct st_prompt_token *t = &e->ptoks[k];
        t->pos = p;
        t->token = req->tokens[p];
        t->has_logprob = false;
        t->logprob = 0.0f;
        t->rank = 0;
        t->n_top = 0;
        token_text(e, t->token, t);
        /* row p - 1 scored position p; a row before this chunk is in the
         * cached prefix, whose scores the slot kept (prefix.c chose the
         * prefix so that they are there) */
        struct st_runner_score kept;
        if (q->score && p >= 1 && p - 1 >= a)
            copy_score(e, &q->scores[p - 1 - a], t);
        else if (q->score && p >= 1 && st_engine_prefix_score(sl, p, q->score_top, &kept))
            copy_score(e, &kept, t);
        if (++k == ST_ENGINE_PTOK_BATCH) {
            emit_run(sl, e->ptoks, k);
            k = 0;
        }
    }
    if (k > 0)
        emit_run(sl, e->ptoks, k);
    sl->echo_next = ST_MAX(sl->echo_next, end);
}

void st_engine_prompt_fini(struct st_engine *e)
{
    free(e->ptoks);
    free(e->scores);
    e->ptoks = NULL;
    e->scores = NULL;
}
