/* runner_model.c -- the runner that computes with a real model
 * (include/strata/forward.h) on a backend ("cpu" now, "cuda" later).
 *
 * st_runner_model_new opens the GGUF and builds the text side at once (so
 * the server can tokenize and render chats while the weights load);
 * load() puts the weights on the backend and allocates the KV cache.
 *
 * A step's batch maps to rows: the READ sequence gives one row per token
 * at positions pos .. pos+n-1 (logits for its last row only when it
 * samples), every DECODE sequence one row. The KV of a slot is whatever
 * was written at positions below its length; kv_truncate only lowers the
 * length (attention never reads above a row's position, so nothing is
 * cleared), and a forward refuses to read a slot at a position beyond
 * its length, which would see stale or empty cache.
 *
 * Scored reads (prompt logprobs, runner.h 'score'): a READ with 'score'
 * has logits at every row (at most ST_RUNNER_SCORE_ROWS; the logit
 * buffers are sized for them at load), each row is scored on the backend
 * right after the forward (st_model_forward_score, st_backend_score) and
 * only the scores come back, (1 + k) floats and ints per row; its sampling
 * row, when it samples, is its last and is read back too. With an MTP
 * layer (whose forward has no score variant) the rows are read back and
 * scored on the host (score.c, the same arithmetic).
 *
 * kv_copy (prefix sharing across slots, prefix.c) copies KV rows between
 * slots on the device (st_model_kv_copy, st_mtp_kv_copy): no compute.
 *
 * MTP (runner.h mtp_draft, include/strata/mtp.h): when base.mtp_draft > 0
 * at load and the model has an MTP layer, every forward is st_mtp_forward
 * (the main forward plus the MTP upkeep over the same rows) except one whose
 * seqs all say no_mtp_upkeep (st_mtp_skipped then drops the MTP states of
 * the positions it rewrites and keeps the new ones for the MTP layer's
 * catch-up), kv_truncate
 * also moves the MTP layer's carried state back, and a DECODE sequence
 * may carry drafts with logits at every row (all_logits). N-gram drafts
 * (base.spec_draft, docs/ENGINE.md "N-gram drafts") are made by the engine:
 * here they only size the step's rows; without an MTP layer their verify
 * is a plain st_model_forward.
 *
 * Embeddings (a READ with 'embd', runner.h): its sampling row is a logit
 * row as usual (the head runs on it: simpler than a row that skips it, and
 * one row of head per request is small next to reading the prompt); after
 * the forward the row's normed hidden state is read back
 * (st_model_hidden) and the logits are ignored by the engine. Such a step
 * is never a drawn one.
 *
 * Drawn steps: when every sampled sequence of a step may be drawn on the
 * backend (backend_draw: greedy, or top-k / top-p / min-p / temperature
 * without bias, penalties, masks or logprobs) and there is no MTP layer,
 * the tokens are drawn there (st_model_forward_draw): a GPU then copies
 * back one id per row instead of a row of logits (600 KB for a 152K
 * vocabulary).
 *
 * Threads: see runner.h (text ops any thread, the rest the engine's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_model.h"
#include "strata/backend.h"
#include "strata/engine.h"
#include "strata/log.h"
#include "strata/slot_state.h"

static void free_rows(struct model_runner *r)
{
    free(r->row_tok);
    free(r->row_slot);
    free(r->row_pos);
    free(r->out_rows);
    free(r->out_seq);
    free(r->draws);
    free(r->drawn);
    free(r->drafts);
    r->row_tok = r->row_slot = r->out_seq = r->drawn = NULL;
    r->row_pos = r->out_rows = NULL;
    r->draws = NULL;
    r->drafts = NULL;
}

/* Row arrays for steps whose DECODE sequences carry up to 'drafts' drafts
 * and whose READ may be scored (logits at each of its rows). */
static enum st_status alloc_rows(struct model_runner *r, int32_t drafts, struct st_err *err)
{
    size_t slots = (size_t)r->base.n_slots, per = 1 + (size_t)drafts;
    size_t read_outs = (size_t)ST_MAX(1, ST_MIN(r->ubatch, ST_RUNNER_SCORE_ROWS));
    size_t rows = (size_t)r->ubatch + slots * per, outs = slots * per + read_outs;
    free_rows(r);
    r->rows_cap = (int64_t)rows;
    r->outs_cap = (int64_t)outs;
    r->row_tok = malloc(rows * sizeof(*r->row_tok));
    r->row_slot = malloc(rows * sizeof(*r->row_slot));
    r->row_pos = malloc(rows * sizeof(*r->row_pos));
    r->out_rows = malloc(outs * sizeof(*r->out_rows));
    r->out_seq = malloc(outs * sizeof(*r->out_seq));
    r->draws = malloc(outs * sizeof(*r->draws));
    r->drawn = malloc(outs * sizeof(*r->drawn));
    r->drafts = calloc(slots, sizeof(*r->drafts));
    if (!r->row_tok || !r->row_slot || !r->row_pos || !r->out_rows || !r->out_seq ||
        !r->draws || !r->drawn || !r->drafts)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for a runner of %zu rows", rows);
    return ST_OK;
}

static void model_free(struct st_runner *base)
{
    struct model_runner *r = (struct model_runner *)base;
    st_mtp_free(r->mtp);
    st_chat_tmpl_fini(&r->tmpl);
    st_model_free(r->model);
    st_tok_free(r->tok);
    free(r->backend);
    free(r->kv_len);
    free(r->kv_high);
    free_rows(r);
    free(r);
}

/* A slot's recurrent state over the KV bytes of one token, rounded up. */
static int64_t state_tokens(const struct st_model *m, const struct st_runner *base)
{
    size_t state = st_model_state_bytes(m), kv = st_model_kv_bytes(m) - state;
    size_t per_token = kv / ((size_t)base->n_slots * (size_t)base->n_ctx);
    if (state == 0 || per_token == 0)
        return 0;
    size_t per_slot = state / (size_t)base->n_slots;
    return (int64_t)((per_slot + per_token - 1) / per_token);
}

static enum st_status model_load(struct st_runner *base, const struct st_clock *clock,
                                 st_runner_progress_fn *progress, void *ctx, struct st_err *err)
{
    struct model_runner *r = (struct model_runner *)base;
    (void)clock;
    base->recurrent = st_model_hparams(r->model)->n_recurrent > 0;
    int32_t drafts = base->mtp_draft > 0 && st_mtp_available(r->model)
                         ? ST_MIN(base->mtp_draft, ST_RUNNER_MAX_DRAFT) : 0;
    /* rows for the larger of the MTP drafts and the engine's n-gram drafts */
    int32_t spec = ST_MAX(0, ST_MIN(base->spec_draft, ST_SPEC_MAX_DRAFT));
    enum st_status rc = alloc_rows(r, ST_MAX(drafts, spec), err);
    if (rc != ST_OK)
        return rc;
    struct st_model_params p = {
        .backend = r->backend, .device = r->device, .n_threads = r->n_threads, .n_slots = base->n_slots,
        .n_ctx = base->n_ctx, .max_rows = (int32_t)r->rows_cap,
        .max_out = (int32_t)r->outs_cap, .type_k = r->type_k, .type_v = r->type_v,
        .kv_lazy = r->kv_lazy,
    };
    rc = st_model_load(r->model, &p, progress, ctx, err);
    if (rc == ST_OK)
        base->state_tokens = state_tokens(r->model, base);
    if (rc == ST_OK && base->recurrent && ST_MAX(drafts, spec) > 0)
        rc = st_runner_rollback_init(r, 1 + ST_MAX(drafts, spec), err);
    if (rc == ST_OK && base->recurrent && base->ctx_checkpoints > 0)
        rc = st_runner_ckpt_init(r, ST_MIN(base->ctx_checkpoints, ST_RUNNER_MAX_CKPT), err);
    if (rc == ST_OK && drafts > 0) {
        rc = st_mtp_new(r->model, drafts, &r->mtp, err);
        if (rc != ST_OK)
            st_model_unload(r->model);
    }
    return rc;
}

static void model_unload(struct st_runner *base)
{
    struct model_runner *r = (struct model_runner *)base;
    st_mtp_free(r->mtp);
    r->mtp = NULL;
    st_runner_rollback_free(r);
    st_runner_ckpt_free(r);
    st_model_unload(r->model);
}

static int32_t model_n_vocab(const struct st_runner *base)
{
    const struct model_runner *r = (const struct model_runner *)base;
    return (int32_t)st_model_hparams(r->model)->n_vocab;
}

/* Append the rows of seq q; note its logits row when it samples. */
static enum st_status add_seq(struct model_runner *r, const struct st_runner_seq *q, int32_t i,
                              int64_t *n, int64_t *n_out, struct st_err *err)
{
    const struct st_runner *b = &r->base;
    if (q->slot < 0 || q->slot >= b->n_slots || q->n_tokens < 1 || q->pos < 0)
        return st_err_set(err, ST_ERR_INTERNAL, "runner: bad sequence (slot %d, %lld tokens "
                          "at %lld)", (int)q->slot, (long long)q->n_tokens, (long long)q->pos);
    if (q->pos > r->kv_len[q->slot])
        return st_err_set(err, ST_ERR_INTERNAL, "runner: slot %d read at position %lld but "
                          "its cache holds %lld tokens", (int)q->slot, (long long)q->pos,
                          (long long)r->kv_len[q->slot]);
    if (b->recurrent && q->pos != 0 && q->pos != r->kv_len[q->slot])
        return st_err_set(err, ST_ERR_INTERNAL, "runner: slot %d read at position %lld but "
                          "its recurrent state is at %lld", (int)q->slot, (long long)q->pos,
                          (long long)r->kv_len[q->slot]);
    if (q->pos + q->n_tokens > b->n_ctx)
        return st_err_set(err, ST_ERR_TOO_LONG, "slot %d: %lld tokens at position %lld do not "
                          "fit the context of %lld", (int)q->slot, (long long)q->n_tokens,
                          (long long)q->pos, (long long)b->n_ctx);
    if (q->score && (q->kind != ST_SEQ_READ || q->n_tokens > ST_RUNNER_SCORE_ROWS ||
                     q->score_next < -1 || q->score_next >= model_n_vocab(b)))
        return st_err_set(err, ST_ERR_INTERNAL, "runner: bad scored read (%lld rows, next "
                          "token %d)", (long long)q->n_tokens, (int)q->score_next);
    int64_t outs = q->score ? q->n_tokens : !q->sample ? 0 : q->all_logits ? q->n_tokens : 1;
    if (*n + q->n_tokens > r->rows_cap || *n_out + outs > r->outs_cap)
        return st_err_set(err, ST_ERR_INTERNAL, "runner: step of more than %lld rows or %lld "
                          "logit rows", (long long)r->rows_cap, (long long)r->outs_cap);
    for (int64_t t = 0; t < q->n_tokens; t++, (*n)++) {
        r->row_tok[*n] = q->tokens[t];
        r->row_slot[*n] = q->slot;
        r->row_pos[*n] = q->pos + t;
    }
    for (int64_t j = outs; j > 0; j--) {   /* the last 'outs' rows, ascending */
        r->out_rows[*n_out] = *n - j;
        r->out_seq[(*n_out)++] = i;
    }
    return ST_OK;
}

/* The MTP layer of this forward: none when the runner has none, or when
 * every seq lets it skip the upkeep (runner.h no_mtp_upkeep). */
static struct st_mtp *step_mtp(const struct model_runner *r, const struct st_runner_batch *b)
{
    for (int32_t i = 0; r->mtp && i < b->n_seqs; i++)
        if (!b->seqs[i].no_mtp_upkeep)
            return r->mtp;
    return NULL;
}

/* Every logit row of the step may be drawn on the backend (and no MTP
 * layer, whose forward has no draw): only ids come back. */
static bool draws_only(const struct model_runner *r, const struct st_runner_batch *batch,
                       int64_t n_out)
{
    if (step_mtp(r, batch) || n_out == 0)
        return false;
    for (int32_t i = 0; i < batch->n_seqs; i++) {
        const struct st_runner_seq *q = &batch->seqs[i];
        if (q->score || q->embd || (q->sample && (q->all_logits || !q->backend_draw)))
            return false;
    }
    return true;
}

static enum st_status forward_drawn(struct model_runner *r, const struct st_runner_batch *batch,
                                    const struct st_model_batch *mb, struct st_runner_out *out,
                                    struct st_err *err)
{
    for (int64_t j = 0; j < mb->n_out; j++)
        r->draws[j] = batch->seqs[r->out_seq[j]].draw;   /* one logit row per drawn seq */
    enum st_status rc = st_model_forward_draw(r->model, mb, r->draws, r->drawn, err);
    for (int64_t j = 0; rc == ST_OK && j < mb->n_out; j++) {
        out->rows[r->out_seq[j]].logits = NULL;
        out->rows[r->out_seq[j]].token = r->drawn[j];
        out->rows[r->out_seq[j]].drawn = true;
    }
    return rc;
}

/* The token row j of a scored READ scores: the prompt token after it. */
static int32_t score_next(const struct st_runner_seq *q, int64_t j)
{
    return j + 1 < q->n_tokens ? q->tokens[j + 1] : q->score_next;
}

/* A scored READ on the host (MTP steps): row j's logits (rows[j * nv])
 * score the prompt token after it; only the scores are kept. */
static void score_rows(const struct st_runner_seq *q, const float *rows, int64_t nv)
{
    for (int64_t j = 0; j < q->n_tokens; j++) {
        int32_t next = score_next(q, j);
        if (next >= 0)
            st_runner_score_row(rows + j * nv, (int32_t)nv, next, q->score_top, &q->scores[j]);
    }
}

/* The scored seq of the step (at most one READ) and its first logit row. */
static int32_t scored_seq(const struct model_runner *r, const struct st_runner_batch *batch,
                          const struct st_model_batch *mb, int64_t *first)
{
    for (int64_t j = 0; j < mb->n_out; j++) {
        int32_t i = r->out_seq[j];
        if (batch->seqs[i].score) {
            *first = j;
            return i;
        }
    }
    return -1;
}

/* The forward with the scored READ's rows scored on the backend
 * (st_model_forward_score): (1 + k) floats and ints per row come back,
 * not the row; the other logit rows (and the READ's sampling row) as
 * st_model_forward gives them. */
static enum st_status forward_scored(struct model_runner *r, const struct st_runner_batch *batch,
                                     const struct st_model_batch *mb, const float **logits,
                                     struct st_err *err)
{
    _Static_assert(ST_RUNNER_SCORE_TOP <= ST_SCORE_MAX_TOP, "the backend scores them all");
    float vals[ST_RUNNER_SCORE_ROWS * (1 + ST_RUNNER_SCORE_TOP)];
    int32_t ids[ST_RUNNER_SCORE_ROWS * (1 + ST_RUNNER_SCORE_TOP)], next[ST_RUNNER_SCORE_ROWS];
    struct st_model_score s = { .vals = vals, .ids = ids, .next = next };
    int32_t i = scored_seq(r, batch, mb, &s.first);
    const struct st_runner_seq *q = &batch->seqs[i];
    int32_t nv = model_n_vocab(&r->base);
    s.n = q->n_tokens;
    s.k = ST_MIN(ST_MAX(q->score_top, 0), ST_MIN(ST_RUNNER_SCORE_TOP, nv));
    s.keep_last = q->sample;
    for (int64_t j = 0; j < s.n; j++)
        next[j] = score_next(q, j);
    enum st_status rc = st_model_forward_score(r->model, mb, &s, logits, err);
    for (int64_t j = 0; rc == ST_OK && j < s.n; j++)
        if (next[j] >= 0)
            st_runner_score_from(vals + j * (1 + s.k), ids + j * (1 + s.k), s.k, &q->scores[j]);
    return rc;
}

static enum st_status forward_logits(struct model_runner *r, const struct st_runner_batch *batch,
                                     const struct st_model_batch *mb, struct st_runner_out *out,
                                     struct st_err *err)
{
    const float *logits = NULL;
    int64_t first;
    struct st_mtp *mtp = step_mtp(r, batch);
    bool on_backend = !mtp && scored_seq(r, batch, mb, &first) >= 0;
    enum st_status rc = mtp           ? st_mtp_forward(mtp, mb, &logits, err)
                        : on_backend ? forward_scored(r, batch, mb, &logits, err)
                                     : st_model_forward(r->model, mb, &logits, err);
    if (rc != ST_OK)
        return rc;
    int64_t nv = st_model_hparams(r->model)->n_vocab;
    for (int64_t j = 0; j < mb->n_out; j++) {
        int32_t i = r->out_seq[j];
        if (j > 0 && i == r->out_seq[j - 1])
            continue;   /* an all_logits or scored seq: its rows follow its first one */
        const struct st_runner_seq *q = &batch->seqs[i];
        const float *row = logits + j * nv;
        if (q->score) {
            if (!on_backend)
                score_rows(q, row, nv);
            if (!q->sample)
                continue;
            row += (q->n_tokens - 1) * nv;   /* the sampling row is the chunk's last */
        }
        out->rows[i].logits = row;
        out->rows[i].token = -1;
        out->rows[i].drawn = false;
    }
    return ST_OK;
}

/* The hidden rows of the step's embedding seqs (the sampling row of each,
 * the last logit row of its seq) into their 'embd'. */
static enum st_status read_embeddings(struct model_runner *r, const struct st_runner_batch *batch,
                                      int64_t n_out, struct st_err *err)
{
    for (int64_t j = 0; j < n_out; j++) {
        const struct st_runner_seq *q = &batch->seqs[r->out_seq[j]];
        bool last = j + 1 == n_out || r->out_seq[j + 1] != r->out_seq[j];
        if (q->embd && q->sample && last) {
            enum st_status rc = st_model_hidden(r->model, j, q->embd, err);
            if (rc != ST_OK)
                return rc;
        }
    }
    return ST_OK;
}

/* 0 (cannot embed) for a model whose file asks for a pooling strata does
 * not do: its vectors would not be what the model was trained to give. */
static int32_t model_n_embd(const struct st_runner *base)
{
    const struct model_runner *r = (const struct model_runner *)base;
    return r->embd_ok ? (int32_t)st_model_hparams(r->model)->n_embd : 0;
}

/* llama.cpp's <arch>.pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank.
 * Absent (a chat model) or none: the last token's state is what an
 * embedding of a causal model means; last: Qwen3-Embedding's. */
static void read_pooling(struct model_runner *r, const char *path)
{
    static const char *const names[] = { "none", "mean", "cls", "last", "rank" };
    char key[64];
    snprintf(key, sizeof(key), "%s.pooling_type", st_model_hparams(r->model)->arch_name);
    const struct st_gguf_kv *kv = st_gguf_find_kv(st_model_gguf(r->model), key);
    int64_t v = 0;
    r->embd_ok = true;
    if (!kv || !st_gguf_kv_i64(kv, &v) || v == 0 || v == 3)
        return;
    r->embd_ok = false;
    st_log(ST_LOG_WARN, "engine", "%s: %s = %lld (%s): strata pools the last token only, so "
           "/v1/embeddings refuses this model", path, key, (long long)v,
           v > 0 && v < 5 ? names[v] : "unknown");
}

static enum st_status model_forward(struct st_runner *base, const struct st_runner_batch *batch,
                                    struct st_runner_out *out, struct st_err *err)
{
    struct model_runner *r = (struct model_runner *)base;
    int64_t n = 0, n_out = 0;
    if (batch->n_seqs > base->n_slots + 1)
        return st_err_set(err, ST_ERR_INTERNAL, "runner: %d sequences for %d slots",
                          (int)batch->n_seqs, (int)base->n_slots);
    for (int32_t i = 0; i < batch->n_seqs; i++)
        ST_TRY(add_seq(r, &batch->seqs[i], i, &n, &n_out, err));
    for (int32_t i = 0; r->kv_high && i < batch->n_seqs; i++) {   /* even if it fails */
        const struct st_runner_seq *q = &batch->seqs[i];
        r->kv_high[q->slot] = ST_MAX(r->kv_high[q->slot], q->pos + q->n_tokens);
    }
    struct st_model_batch mb = {n, r->row_tok, r->row_slot, r->row_pos, n_out, r->out_rows};
    if (r->saved_pos)
        ST_TRY(st_runner_rollback_mark(r, batch, err));
    if (r->n_ckpt > 0)
        st_runner_ckpt_before(r, batch);   /* a read from 0 voids the slot's checkpoints */
    ST_TRY(draws_only(r, batch, n_out) ? forward_drawn(r, batch, &mb, out, err)
                                       : forward_logits(r, batch, &mb, out, err));
    /* a forward without the upkeep: the MTP layer's states of those positions
     * go, and it keeps the new ones for its catch-up (mtp.h "Catch-up") */
    if (r->mtp && !step_mtp(r, batch))
        st_mtp_skipped(r->mtp, &mb);
    ST_TRY(read_embeddings(r, batch, n_out, err));
    if (r->n_ckpt > 0)
        st_runner_ckpt_after(r, batch);    /* the ends of the prompt chunks read */
    for (int32_t i = 0; i < batch->n_seqs; i++) {
        const struct st_runner_seq *q = &batch->seqs[i];
        r->kv_len[q->slot] = q->pos + q->n_tokens;
    }
    out->busy_ns = 0;
    return ST_OK;
}

/* (kv_lazy) Give back the memory the slot holds past kv_len: its cut tail
 * (docs/CLI.md --kv-unified). Whole pages only, so a cut of a few drafted
 * rows usually gives nothing back and costs no system call. */
static void give_back(struct model_runner *r, int32_t slot)
{
    if (!r->kv_high || r->kv_high[slot] <= r->kv_len[slot])
        return;
    st_model_kv_discard(r->model, slot, r->kv_len[slot], r->kv_high[slot]);
    if (r->mtp)
        st_mtp_kv_discard(r->mtp, slot, r->kv_len[slot], r->kv_high[slot]);
    r->kv_high[slot] = r->kv_len[slot];
}

static void model_kv_truncate(struct st_runner *base, int32_t slot, int64_t n_tokens)
{
    struct model_runner *r = (struct model_runner *)base;
    if (slot < 0 || slot >= base->n_slots)
        return;
    if (n_tokens < r->kv_len[slot]) {
        /* recurrent state stands for every token read: a cut into the last
         * verify step is undone (runner_rollback.c), any other goes back to
         * the longest state checkpoint at or below n (runner_ckpt.c), else
         * empties the slot */
        int64_t keep = !base->recurrent ? n_tokens
                       : r->saved_pos   ? st_runner_rollback_cut(r, slot, n_tokens)
                                        : 0;
        if (base->recurrent && keep <= 0 && r->n_ckpt > 0)
            keep = st_runner_ckpt_restore(r, slot, n_tokens);
        r->kv_len[slot] = keep < 0 ? 0 : keep;
        if (r->n_ckpt > 0)
            st_runner_ckpt_drop_above(r, slot, r->kv_len[slot]);
        if (r->mtp)
            st_mtp_truncate(r->mtp, slot, r->kv_len[slot]);
    }
    give_back(r, slot);
}

/* What model_kv_truncate(slot, n) would leave (no drafts pending: the
 * engine asks for free slots). */
static int64_t model_kv_keep(const struct st_runner *base, int32_t slot, int64_t n_tokens)
{
    const struct model_runner *r = (const struct model_runner *)base;
    if (slot < 0 || slot >= base->n_slots)
        return 0;
    int64_t len = r->kv_len[slot];
    if (n_tokens >= len || !base->recurrent)
        return ST_MAX(ST_MIN(n_tokens, len), (int64_t)0);
    int32_t k = r->n_ckpt > 0 ? st_runner_ckpt_best(r, slot, n_tokens) : -1;
    return k < 0 ? 0 : r->ckpt_pos[(size_t)slot * (size_t)r->n_ckpt + (size_t)k];
}

static int32_t model_n_checkpoints(const struct st_runner *base, int32_t slot)
{
    const struct model_runner *r = (const struct model_runner *)base;
    if (slot < 0 || slot >= base->n_slots || r->n_ckpt == 0)
        return 0;
    return st_runner_ckpt_count(r, slot);
}

static enum st_status model_kv_copy(struct st_runner *base, int32_t src, int32_t dst,
                                    int64_t from, int64_t to, struct st_err *err)
{
    struct model_runner *r = (struct model_runner *)base;
    bool slots_ok = src >= 0 && dst >= 0 && src < base->n_slots && dst < base->n_slots &&
                    src != dst;
    if (!slots_ok || from < 0 || to < from || r->kv_len[src] < to || r->kv_len[dst] < from)
        return st_err_set(err, ST_ERR_INTERNAL, "runner: kv copy of positions [%lld, %lld) "
                          "from slot %d to slot %d: %s", (long long)from, (long long)to,
                          (int)src, (int)dst, slots_ok ? "not in the caches" : "bad slots");
    model_kv_truncate(base, dst, from);   /* whatever dst held past 'from' goes */
    enum st_status rc = st_model_kv_copy(r->model, src, dst, from, to, err);
    if (rc == ST_OK && r->mtp)
        rc = st_mtp_kv_copy(r->mtp, src, dst, from, to, err);
    if (rc == ST_OK)
        r->kv_len[dst] = to;
    if (r->kv_high)
        r->kv_high[dst] = ST_MAX(r->kv_high[dst], to);   /* a failed copy wrote some of it */
    return rc;
}

static enum st_status model_slot_save(struct st_runner *base, int32_t slot, const int32_t *ids,
                                      int64_t n_tokens, FILE *f, int64_t *n_bytes,
                                      struct st_err *err)
{
    struct model_runner *r = (struct model_runner *)base;
    if (slot < 0 || slot >= base->n_slots || n_tokens > r->kv_len[slot] ||
        (base->recurrent && n_tokens != r->kv_len[slot]))
        return st_err_set(err, ST_ERR_INTERNAL, "runner: save of %lld tokens of slot %d",
                          (long long)n_tokens, (int)slot);
    const int64_t *pos = r->n_ckpt > 0 ? r->ckpt_pos + (size_t)slot * (size_t)r->n_ckpt : NULL;
    return st_model_slot_save(r->model, slot, ids, n_tokens, pos, f, n_bytes, err);
}

/* The MTP layer's cache of the slot is not in the file: it is cut to
 * nothing, which costs drafts (mtp.h), never the output. The file's state
 * checkpoints (recurrent models) become the slot's, so a prompt sharing
 * only part of the restored tokens resumes from the longest below it. */
static enum st_status model_slot_restore(struct st_runner *base, int32_t slot, FILE *f,
                                         int32_t **ids, int64_t *n_tokens, int64_t *n_bytes,
                                         struct st_err *err)
{
    struct model_runner *r = (struct model_runner *)base;
    if (slot < 0 || slot >= base->n_slots)
        return st_err_set(err, ST_ERR_INTERNAL, "runner: restore into slot %d", (int)slot);
    model_kv_truncate(base, slot, 0);
    r->kv_len[slot] = 0;
    if (r->mtp)
        st_mtp_truncate(r->mtp, slot, 0);
    int64_t pos[ST_RUNNER_MAX_CKPT];
    enum st_status rc = st_model_slot_restore(r->model, slot, f, ids, n_tokens,
                                              r->n_ckpt > 0 ? pos : NULL, n_bytes, err);
    if (r->kv_high)
        r->kv_high[slot] = r->base.n_ctx;   /* a failed restore may have written any of it */
    if (rc == ST_OK)
        r->kv_len[slot] = *n_tokens;
    for (int32_t k = 0; rc == ST_OK && k < r->n_ckpt; k++) {
        size_t idx = (size_t)slot * (size_t)r->n_ckpt + (size_t)k;
        r->ckpt_pos[idx] = pos[k];
        r->ckpt_used[idx] = pos[k] > 0 ? ++r->ckpt_tick : 0;
    }
    give_back(r, slot);
    return rc;
}

static int32_t model_mtp_max(const struct st_runner *base)
{
    const struct model_runner *r = (const struct model_runner *)base;
    return r->mtp ? ST_MIN(base->mtp_draft, ST_RUNNER_MAX_DRAFT) : 0;
}

static enum st_status model_mtp_draft(struct st_runner *base, struct st_runner_draft *d,
                                      int32_t n, struct st_err *err)
{
    struct model_runner *r = (struct model_runner *)base;
    if (!r->mtp)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "runner: no MTP layer loaded");
    if (n < 0 || n > base->n_slots)
        return st_err_set(err, ST_ERR_INTERNAL, "runner: %d draft requests", (int)n);
    for (int32_t i = 0; i < n; i++) {
        if (d[i].slot < 0 || d[i].slot >= base->n_slots || d[i].pos != r->kv_len[d[i].slot])
            return st_err_set(err, ST_ERR_INTERNAL, "runner: draft for slot %d at position "
                              "%lld, not at its cache's end", (int)d[i].slot,
                              (long long)d[i].pos);
        r->drafts[i] = (struct st_mtp_draft){ .slot = d[i].slot, .token = d[i].token,
                                              .pos = d[i].pos, .n_draft = d[i].n_draft,
                                              .out = d[i].out, .logits = NULL };
    }
    enum st_status rc = st_mtp_draft(r->mtp, r->drafts, n, err);
    for (int32_t i = 0; i < n; i++)
        d[i].n_draft = rc == ST_OK ? r->drafts[i].n_draft : 0;
    return rc;
}

static const struct st_runner_ops model_ops = {
    .name = "cpu",
    .free = model_free,
    .load = model_load,
    .unload = model_unload,
    .n_vocab = model_n_vocab,
    .n_embd = model_n_embd,
    .tokenize = st_runner_model_tokenize,
    .max_token_bytes = st_runner_model_max_token_bytes,
    .detokenize = st_runner_model_detokenize,
    .token_piece = st_runner_model_token_piece,
    .is_eog = st_runner_model_is_eog,
    .eog_ids = st_runner_model_eog_ids,
    .fim_ids = st_runner_model_fim_ids,
    .apply_template = st_runner_model_apply_template,
    .forward = model_forward,
    .kv_truncate = model_kv_truncate,
    .kv_keep = model_kv_keep,
    .n_checkpoints = model_n_checkpoints,
    .kv_copy = model_kv_copy,
    .slot_save = model_slot_save,
    .slot_restore = model_slot_restore,
    .mtp_max = model_mtp_max,
    .mtp_draft = model_mtp_draft,
};

/* The model opened (its n_ctx: n_ctx, else the trained one up to 4096),
 * the per-slot lengths and rows, the text side; model_free undoes them. */
static enum st_status open_model(struct model_runner *r, const char *gguf_path, int32_t n_slots,
                                 int64_t n_ctx, struct st_err *err)
{
    ST_TRY(st_model_open(gguf_path, &r->model, err));
    const struct st_hparams *hp = st_model_hparams(r->model);
    r->base.n_ctx = n_ctx > 0 ? n_ctx : ST_MIN(ST_MAX(hp->n_ctx_train, 1), 4096);
    r->kv_len = calloc((size_t)n_slots, sizeof(*r->kv_len));
    if (!r->kv_len)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the model runner");
    ST_TRY(alloc_rows(r, 0, err));
    ST_TRY(st_runner_model_text_init(r, err));
    read_pooling(r, gguf_path);
    return ST_OK;
}

enum st_status st_runner_model_new(const char *gguf_path, const char *backend_name,
                                   int32_t device, int32_t n_threads, int32_t n_slots, int64_t n_ctx,
                                   int32_t ubatch, struct st_runner **out, struct st_err *err)
{
    *out = NULL;
    if (!gguf_path || n_slots < 1 || ubatch < 1 || n_threads < 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "model runner: needs a model path, >= 1 "
                          "slot and ubatch >= 1 (got %d slots, ubatch %d)", (int)n_slots,
                          (int)ubatch);
    struct model_runner *r = calloc(1, sizeof(*r));
    if (!r || !(r->backend = strdup(backend_name ? backend_name : "cpu"))) {
        free(r);
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the model runner");
    }
    r->base.ops = &model_ops;
    r->base.n_slots = n_slots;
    r->device = device < 0 ? 0 : device;
    r->n_threads = n_threads;
    r->ubatch = ubatch;
    enum st_status rc = open_model(r, gguf_path, n_slots, n_ctx, err);
    if (rc != ST_OK) {
        model_free(&r->base);
        return rc;
    }
    *out = &r->base;
    return ST_OK;
}

struct st_rope_override st_model_config_rope(const struct st_model_config *m)
{
    return (struct st_rope_override){ m->rope_scaling, (float)m->rope_scale,
                                      m->yarn_orig_ctx };
}

enum st_status st_runner_model_new_cfg(const struct st_model_config *m, const char *backend_name,
                                       int32_t device, int32_t n_threads, int32_t ubatch,
                                       struct st_runner **out, struct st_err *err)
{
    enum st_status rc = st_runner_model_new(m->path, backend_name, device, n_threads,
                                            m->parallel, m->ctx_size, ubatch, out, err);
    if (rc != ST_OK)
        return rc;
    struct model_runner *r = (struct model_runner *)*out;
    r->type_k = m->cache_type_k;
    r->type_v = m->cache_type_v;
    if (m->kv_pool > 0) {   /* --kv-unified: each slot's region is the whole pool */
        r->kv_lazy = true;
        r->kv_high = calloc((size_t)m->parallel, sizeof(*r->kv_high));
        if (!r->kv_high) {
            st_runner_free(*out);
            *out = NULL;
            return st_err_set(err, ST_ERR_NOMEM, "no memory for the model runner");
        }
    }
    struct st_rope_override ov = st_model_config_rope(m);
    struct st_err e = { ST_OK, "" };
    rc = st_model_set_rope(r->model, &ov, &e);
    if (rc != ST_OK) {
        st_runner_free(*out);
        *out = NULL;
        return st_err_set(err, rc, "model '%s': %.200s", m->name ? m->name : "?", e.msg);
    }
    return ST_OK;      /* st_model_load warns about a context past the trained one */
}
