/* runner_rollback.c -- drafts on a model with recurrent state (qwen35moe):
 * the state stands for every token read and cannot be cut back, so before a
 * step in which a slot verifies drafts its state is saved (st_model_state_save),
 * and when the engine then cuts the slot back into that step (some drafts
 * rejected) the state is restored and the accepted tokens are read again:
 * by the DeltaNet layers' recurrent ops alone from the inputs the verify
 * forward kept (st_model_state_reread, state_reread.c), or, when that
 * forward kept none (it also read a prompt chunk), by a forward without
 * logits, which rewrites the attention layers' KV of those positions with
 * the same values. The MTP layer's cache of them stays (its own cut,
 * st_mtp_truncate, keeps what lies below). docs/ENGINE.md "qwen35moe".
 *
 * Threads: the engine's (with the runner's forward and kv_truncate).
 */
#include <stdlib.h>
#include <string.h>

#include "runner/runner_model.h"
#include "strata/log.h"

enum st_status st_runner_rollback_init(struct model_runner *r, int32_t max_tokens,
                                       struct st_err *err)
{
    size_t slots = (size_t)r->base.n_slots;
    r->saved_cap = max_tokens;
    r->saved_pos = malloc(slots * sizeof(*r->saved_pos));
    r->saved_n = calloc(slots, sizeof(*r->saved_n));
    r->saved_tok = malloc(slots * (size_t)max_tokens * sizeof(*r->saved_tok));
    if (!r->saved_pos || !r->saved_n || !r->saved_tok)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for draft rollback of %zu slots", slots);
    for (size_t s = 0; s < slots; s++)
        r->saved_pos[s] = -1;
    /* a verify step of every slot at once keeps its DeltaNet inputs */
    return st_model_state_keep(r->model, (int64_t)slots * max_tokens, err);
}

void st_runner_rollback_free(struct model_runner *r)
{
    free(r->saved_pos);
    free(r->saved_n);
    free(r->saved_tok);
    r->saved_pos = NULL;
    r->saved_n = NULL;
    r->saved_tok = NULL;
}

enum st_status st_runner_rollback_mark(struct model_runner *r,
                                       const struct st_runner_batch *batch, struct st_err *err)
{
    for (int32_t i = 0; i < batch->n_seqs; i++) {
        const struct st_runner_seq *q = &batch->seqs[i];
        bool drafts = q->kind == ST_SEQ_DECODE && q->n_tokens > 1;
        r->saved_pos[q->slot] = -1;
        if (!drafts)
            continue;
        if (q->n_tokens > r->saved_cap)
            return st_err_set(err, ST_ERR_INTERNAL, "runner: %lld tokens to verify, room for %d",
                              (long long)q->n_tokens, (int)r->saved_cap);
        enum st_status rc = st_model_state_save(r->model, q->slot, err);
        if (rc != ST_OK)
            return rc;
        r->saved_pos[q->slot] = q->pos;
        r->saved_n[q->slot] = (int32_t)q->n_tokens;
        memcpy(r->saved_tok + (size_t)q->slot * (size_t)r->saved_cap, q->tokens,
               (size_t)q->n_tokens * sizeof(*q->tokens));
    }
    return ST_OK;
}

/* Restore slot's saved state (at 'from') and read tokens [from, n) again:
 * from the verify forward's kept DeltaNet inputs when it kept them (the
 * recurrent ops alone), else with a forward. */
static enum st_status replay(struct model_runner *r, int32_t slot, int64_t from, int64_t n,
                             struct st_err *err)
{
    int64_t rows = n - from;
    enum st_status rc = st_model_state_restore(r->model, slot, err);
    if (rc != ST_OK || rows == 0)
        return rc;
    struct st_err miss = { 0 };
    rc = st_model_state_reread(r->model, slot, from, rows, &miss);
    if (rc != ST_ERR_UNSUPPORTED) {
        if (rc != ST_OK)
            *err = miss;
        return rc;
    }
    for (int64_t i = 0; i < rows; i++) {
        r->row_tok[i] = r->saved_tok[(size_t)slot * (size_t)r->saved_cap + (size_t)i];
        r->row_slot[i] = slot;
        r->row_pos[i] = from + i;
    }
    struct st_model_batch mb = { rows, r->row_tok, r->row_slot, r->row_pos, 0, r->out_rows };
    return st_model_forward(r->model, &mb, NULL, err);
}

int64_t st_runner_rollback_cut(struct model_runner *r, int32_t slot, int64_t n)
{
    int64_t from = r->saved_pos[slot], len = r->kv_len[slot];
    r->saved_pos[slot] = -1;
    if (n <= 0 || from < 0 || n < from || len != from + r->saved_n[slot])
        return 0;   /* not inside the last verify step: the slot starts again */
    struct st_err err = { 0 };
    if (replay(r, slot, from, n, &err) != ST_OK) {
        st_log(ST_LOG_ERROR, "runner", "slot %d: restoring its state at position %lld failed "
               "(%s): the slot starts again", (int)slot, (long long)n, err.msg);
        return 0;
    }
    return n;
}
