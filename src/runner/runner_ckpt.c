/* runner_ckpt.c -- state checkpoints of a model with recurrent state
 * (qwen35moe): a slot's DeltaNet state stands for every token it read and
 * cannot be cut back, so the runner keeps copies of it at the ends of the
 * prompt chunks the slot reads (st_model_state_ckpt_put), at most n_ckpt
 * per slot (--ctx-checkpoints). kv_truncate to n below the slot's length
 * then restores the longest checkpoint at or below n and leaves the slot
 * there: a prompt that shares a system prompt with what the slot read last
 * reads only from that checkpoint on (docs/ENGINE.md "Slots with recurrent
 * state"). The attention layers' KV below it is the same tokens' and stays.
 *
 * Not at the end of a prompt's last chunk (the READ that samples): that
 * chunk starts near the prompt's end (the engine cuts one that would hold
 * more than 64 tokens 8 short of the end, prefix.h ST_PREFIX_CKPT_TAIL),
 * which serves the same prompt again (it may keep at most n_prompt - 1
 * tokens) and a next turn whose template rewrites the assistant's opening
 * tokens; one at the very end would add only those few tokens.
 *
 * Validity: a checkpoint at p stands for the slot's tokens [0, p); it is
 * dropped as soon as the slot may hold other tokens below p: a cut to
 * below p, a read that restarts at 0.
 *
 * Which to keep when all n_ckpt are taken: the new one (the end of what
 * was just read) always; of the older ones the one whose loss leaves the
 * smallest gap between its neighbours (the one below, or 0, and the one
 * above, or the new one), ties to the least recently put or restored. A
 * long prompt thus keeps checkpoints spread over it, denser towards its
 * end (e.g. 3 over a 4000-token prompt in 512-token chunks: 1024, 2048,
 * 3992), instead of only its last chunks: a later prompt sharing just its
 * system prompt still finds one below that prompt's end.
 *
 * Threads: the engine's (with the runner's forward and kv_truncate).
 */
#include <stdlib.h>

#include "runner/runner_model.h"
#include "strata/log.h"

enum st_status st_runner_ckpt_init(struct model_runner *r, int32_t n, struct st_err *err)
{
    size_t all = (size_t)r->base.n_slots * (size_t)n;
    r->ckpt_pos = malloc(all * sizeof(*r->ckpt_pos));
    r->ckpt_used = calloc(all, sizeof(*r->ckpt_used));
    if (!r->ckpt_pos || !r->ckpt_used) {
        st_runner_ckpt_free(r);
        return st_err_set(err, ST_ERR_NOMEM, "no memory for %zu state checkpoints", all);
    }
    for (size_t i = 0; i < all; i++)
        r->ckpt_pos[i] = -1;
    enum st_status rc = st_model_state_ckpt_reserve(r->model, n, err);
    if (rc != ST_OK) {
        st_runner_ckpt_free(r);
        return rc;
    }
    r->n_ckpt = n;
    r->ckpt_tick = 0;
    return ST_OK;
}

void st_runner_ckpt_free(struct model_runner *r)
{
    free(r->ckpt_pos);
    free(r->ckpt_used);
    r->ckpt_pos = NULL;
    r->ckpt_used = NULL;
    r->n_ckpt = 0;
}

void st_runner_ckpt_drop_above(struct model_runner *r, int32_t slot, int64_t n)
{
    int64_t *pos = r->ckpt_pos + (size_t)slot * (size_t)r->n_ckpt;
    for (int32_t k = 0; k < r->n_ckpt; k++)
        if (pos[k] > n)
            pos[k] = -1;
}

int32_t st_runner_ckpt_count(const struct model_runner *r, int32_t slot)
{
    const int64_t *pos = r->ckpt_pos + (size_t)slot * (size_t)r->n_ckpt;
    int32_t c = 0;
    for (int32_t k = 0; k < r->n_ckpt; k++)
        c += pos[k] > 0;
    return c;
}

int32_t st_runner_ckpt_best(const struct model_runner *r, int32_t slot, int64_t n)
{
    const int64_t *pos = r->ckpt_pos + (size_t)slot * (size_t)r->n_ckpt;
    int32_t best = -1;
    for (int32_t k = 0; k < r->n_ckpt; k++)
        if (pos[k] > 0 && pos[k] <= n && (best < 0 || pos[k] > pos[best]))
            best = k;
    return best;
}

/* Where slot's new checkpoint at 'at' goes: a free entry, else the one
 * the file comment's rule gives up. */
static int32_t victim(const struct model_runner *r, int32_t slot, int64_t at)
{
    const int64_t *pos = r->ckpt_pos + (size_t)slot * (size_t)r->n_ckpt;
    const uint64_t *used = r->ckpt_used + (size_t)slot * (size_t)r->n_ckpt;
    int32_t best = -1;
    int64_t best_gap = 0;
    for (int32_t k = 0; k < r->n_ckpt; k++) {
        if (pos[k] <= 0)
            return k;
        int64_t below = 0, above = at;
        for (int32_t j = 0; j < r->n_ckpt; j++) {
            if (pos[j] > 0 && pos[j] < pos[k])
                below = below > pos[j] ? below : pos[j];
            if (pos[j] > pos[k])
                above = above < pos[j] ? above : pos[j];
        }
        int64_t gap = above - below;
        if (best < 0 || gap < best_gap || (gap == best_gap && used[k] < used[best])) {
            best = k;
            best_gap = gap;
        }
    }
    return best;
}

void st_runner_ckpt_before(struct model_runner *r, const struct st_runner_batch *batch)
{
    for (int32_t i = 0; i < batch->n_seqs; i++)
        st_runner_ckpt_drop_above(r, batch->seqs[i].slot, batch->seqs[i].pos);
}

void st_runner_ckpt_after(struct model_runner *r, const struct st_runner_batch *batch)
{
    for (int32_t i = 0; i < batch->n_seqs; i++) {
        const struct st_runner_seq *q = &batch->seqs[i];
        int64_t at = q->pos + q->n_tokens;   /* above every checkpoint (ckpt_before) */
        if (q->kind != ST_SEQ_READ || q->sample)
            continue;
        int32_t k = victim(r, q->slot, at);
        size_t idx = (size_t)q->slot * (size_t)r->n_ckpt + (size_t)k;
        struct st_err err = { 0 };
        r->ckpt_pos[idx] = -1;   /* overwritten below: void until the copy is done */
        if (st_model_state_ckpt_put(r->model, q->slot, k, &err) != ST_OK) {
            st_log(ST_LOG_WARN, "runner", "slot %d: no state checkpoint at position %lld (%s)",
                   (int)q->slot, (long long)at, err.msg);
            continue;
        }
        r->ckpt_pos[idx] = at;
        r->ckpt_used[idx] = ++r->ckpt_tick;
    }
}

int64_t st_runner_ckpt_restore(struct model_runner *r, int32_t slot, int64_t n)
{
    int32_t k = st_runner_ckpt_best(r, slot, n);
    if (k < 0)
        return 0;
    size_t idx = (size_t)slot * (size_t)r->n_ckpt + (size_t)k;
    struct st_err err = { 0 };
    if (st_model_state_ckpt_get(r->model, slot, k, &err) != ST_OK) {
        st_log(ST_LOG_ERROR, "runner", "slot %d: restoring its state checkpoint at position "
               "%lld failed (%s): the slot starts again", (int)slot,
               (long long)r->ckpt_pos[idx], err.msg);
        return 0;
    }
    r->ckpt_used[idx] = ++r->ckpt_tick;
    return r->ckpt_pos[idx];
}
