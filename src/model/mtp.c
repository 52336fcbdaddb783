/* mtp.c -- the MTP passes of include/strata/mtp.h, written against the op
 * table like forward.c:
 *
 *   st_mtp_rows_*   (mtp_rows.c) the nextn block over n rows (shared by both
 *                   passes):
 *                     esrc[0,n)  = rmsnorm(embed[ids]) * enorm          [E, n]
 *                     esrc[n,2n) = rmsnorm(htable[hrows]) * hnorm       [E, n]
 *                     cat        = rows interleaved e0 h0 e1 h1 ...     [E, 2n] = [2E, n]
 *                     x          = cat . eh_proj^T                      [E, n]
 *                     x          = decoder layer (attention on the MTP KV cache, MoE)
 *                   The concatenation is a row gather (embed over an f32
 *                   buffer): [E, 2n] seen as [2E, n] puts e_i in the first E
 *                   columns of row i and h_i in the next E, so eh_proj is
 *                   used in place with the file's column order.
 *   upkeep          after each chunk of the main forward: the chunk's final
 *                   states go through output_norm into hbuf, every row takes
 *                   the state of its predecessor, the block writes the MTP
 *                   KV of every row (and nothing else: st_fwd_attn_kv_only), and
 *                   each slot carries its last state.
 *   st_mtp_draft    chained greedy drafting from the carried states.
 *
 * Every op call covers all the rows of a pass (all slots together); the
 * carried states move with single-row adds (out may alias the inputs of
 * add), a few per step.
 */
#include <string.h>

#include "mtp_internal.h"
#include "strata/log.h"

/* ---- carried states ----------------------------------------------------- */

/* hbuf row 'dst' = hbuf row 'src' (+ the zero row: add may alias). */
static enum st_status copy_hrow(struct st_mtp *t, int64_t dst, int64_t src, struct st_err *err)
{
    struct st_tensor d = st_tensor_slice(&t->hbuf, 1, dst, 1);
    struct st_tensor s = st_tensor_slice(&t->hbuf, 1, src, 1);
    struct st_tensor z = st_tensor_slice(&t->hbuf, 1, t->S, 1);
    return st_backend_add(t->m->be, &d, &s, &z, err);
}

/* The h row of a row of slot s at position p whose predecessor is not in
 * the chunk: the slot's carried state when it is for p - 1, else zeros. */
static int32_t carried_row(const struct st_mtp *t, int32_t s, int64_t p)
{
    if (p > 0 && t->carry_pos[s] == p - 1)
        return s;
    if (p > 0)
        st_log(ST_LOG_DEBUG, "model", "MTP: slot %d at position %lld has no carried state "
               "(it has %lld): zero hidden input", (int)s, (long long)p,
               (long long)t->carry_pos[s]);
    return (int32_t)t->S;
}

/* The MTP upkeep over rows [r0, r1) of b, right after the main forward
 * of that chunk left its final states in act.x, in three parts so that a
 * verify step can run the middle one inside a graph (st_mtp_forward):
 * upkeep_write (host bookkeeping and every write), upkeep_ops (the ops,
 * fixed by the row count) and upkeep_carry (each slot's carried state:
 * copies whose rows depend on the batch, so never inside a graph). */
static enum st_status upkeep_write(struct st_mtp *t, const struct st_model_batch *b, int64_t r0,
                                   int64_t r1, struct st_err *err)
{
    int64_t n = r1 - r0, S = t->S;
    for (int64_t i = 0; i < n; i++) {
        int32_t s = b->slots[r0 + i];
        int64_t p = b->pos[r0 + i];
        bool prev = i > 0 && b->slots[r0 + i - 1] == s && b->pos[r0 + i - 1] == p - 1;
        t->hrow_host[i] = prev ? (int32_t)(S + i) : carried_row(t, s, p);
        t->chunk_slot[i] = s;
        t->chunk_pos[i] = p;
    }
    t->chunk_n = n;
    return st_mtp_rows_write(t, n, b->tokens + r0, b->slots + r0, b->pos + r0, t->hrow_host,
                             err);
}

static enum st_status upkeep_ops(struct st_mtp *t, int64_t n, struct st_err *err)
{
    struct st_model *m = t->m;
    struct st_tensor hm = st_tensor_slice(&t->hbuf, 1, t->S + 1, n);
    struct st_tensor x = st_tensor_slice(&m->act.x, 1, 0, n);
    TRY(st_backend_rms_norm(m->be, &hm, &x, &m->output_norm, m->desc->hp.rms_eps, err));
    return st_mtp_rows_ops(t, n, &t->hbuf, true, err);
}

/* Each slot of the last upkeep chunk carries the state of its last row. */
static enum st_status upkeep_carry(struct st_mtp *t, struct st_err *err)
{
    enum st_status rc = ST_OK;
    memset(t->mark, 0, (size_t)t->S * sizeof(int32_t));
    for (int64_t i = t->chunk_n - 1; i >= 0 && rc == ST_OK; i--) {
        int32_t s = t->chunk_slot[i];
        if (t->mark[s])
            continue;
        t->mark[s] = 1;
        rc = copy_hrow(t, s, t->S + 1 + i, err);
        t->carry_pos[s] = rc == ST_OK ? t->chunk_pos[i] : -1;
    }
    return rc;
}

/* st_fwd_after_fn: the upkeep after each chunk of the main forward. */
static enum st_status upkeep(void *ctx, const struct st_model_batch *b, int64_t r0, int64_t r1,
                             struct st_err *err)
{
    struct st_mtp *t = ctx;
    TRY(upkeep_write(t, b, r0, r1, err));
    TRY(upkeep_ops(t, r1 - r0, err));
    return upkeep_carry(t, err);
}

/* A verify-sized step (one chunk of <= ST_FWD_GRAPH_ROWS rows) as one
 * backend graph, like forward.c's forward_graphed: every write first (the
 * main chunk's and the upkeep's), then the chunk, the upkeep ops and the
 * head inside the bracket; the carried-state copies after it (their rows
 * depend on the batch; they touch only hbuf, which the head does not read),
 * then the logits are read. */
static enum st_status forward_graphed(struct st_mtp *t, const struct st_model_batch *b,
                                      struct st_err *err)
{
    struct st_model *m = t->m;
    int64_t n = b->n_rows, n_out = b->n_out;
    struct st_fwd_rows r;
    bool replayed = false;
    st_fwd_cut_rows(&m->act, n, &r);
    TRY(st_fwd_chunk_inputs(m, b, 0, n, 0, n_out, &r, err));
    TRY(upkeep_write(t, b, 0, n, err));
    TRY(st_backend_graph_begin(m->be, ST_FWD_GRAPH_KEY(ST_FWD_GRAPH_MTP_VERIFY, n, n_out),
                               &replayed, err));
    if (!replayed) {
        TRY(st_fwd_chunk_ops(m, &r, 0, n_out, err));
        TRY(upkeep_ops(t, n, err));
        if (n_out > 0)
            TRY(st_fwd_head_ops(m, n_out, err));
        TRY(st_backend_graph_end(m->be, err));
    }
    TRY(upkeep_carry(t, err));
    return n_out > 0 ? st_fwd_read_logits(m, n_out, err) : ST_OK;
}

/* The checks of st_model_forward that the chunk loop below relies on
 * (st_fwd_chunk trusts its batch; the backend checks ids and positions
 * against the tensors, not against the slot count). */
static enum st_status check_batch(const struct st_mtp *t, const struct st_model_batch *b,
                                  struct st_err *err)
{
    const struct st_model *m = t->m;
    if (b->n_rows < 0 || b->n_out < 0 || b->n_out > m->p.max_out || b->n_out > b->n_rows)
        return st_err_set(err, ST_ERR_INVALID, "MTP forward: %lld rows, %lld logit rows (at "
                          "most %d)", (long long)b->n_rows, (long long)b->n_out,
                          (int)m->p.max_out);
    for (int64_t i = 0; i < b->n_rows; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= t->V || b->slots[i] < 0 ||
            b->slots[i] >= t->S || b->pos[i] < 0 || b->pos[i] >= m->p.n_ctx)
            return st_err_set(err, ST_ERR_INVALID, "MTP forward: row %lld (token %d, slot "
                              "%d, position %lld) is out of range", (long long)i,
                              (int)b->tokens[i], (int)b->slots[i], (long long)b->pos[i]);
    }
    for (int64_t j = 0; j < b->n_out; j++) {
        if (b->out_rows[j] < 0 || b->out_rows[j] >= b->n_rows ||
            (j > 0 && b->out_rows[j] <= b->out_rows[j - 1]))
            return st_err_set(err, ST_ERR_INVALID, "MTP forward: logit row %lld (= row %lld) "
                              "is out of range or not ascending", (long long)j,
                              (long long)b->out_rows[j]);
    }
    return ST_OK;
}

/* Before a forward with the upkeep: each slot of b keeps its stash below
 * its first row only, is caught up to that row when the stash ends there
 * (mtp_catch.c), and keeps no stash after (the upkeep covers what follows;
 * what was not caught up cannot be later). Scratch: mark, dslot, dpos. */
static enum st_status catch_batch(struct st_mtp *t, const struct st_model_batch *b,
                                  struct st_err *err)
{
    int32_t n = 0;
    memset(t->mark, 0, (size_t)t->S * sizeof(int32_t));
    for (int64_t r = 0; r < b->n_rows; r++) {
        int32_t s = b->slots[r];
        if (t->mark[s]) {
            t->dpos[t->mark[s] - 1] = ST_MIN(t->dpos[t->mark[s] - 1], b->pos[r]);
            continue;
        }
        t->mark[s] = ++n;
        t->dslot[n - 1] = s;
        t->dpos[n - 1] = b->pos[r];
    }
    for (int32_t i = 0; i < n; i++)
        st_mtp_stash_cut(t, t->dslot[i], t->dpos[i]);
    enum st_status rc = st_mtp_catch_up(t, t->dslot, t->dpos, n, err);
    for (int32_t i = 0; i < n; i++)
        st_mtp_stash_cut(t, t->dslot[i], 0);
    return rc;
}

enum st_status st_mtp_forward(struct st_mtp *t, const struct st_model_batch *b,
                              const float **logits, struct st_err *err)
{
    struct st_model *m = t->m;
    if (logits)
        *logits = NULL;
    if (!m->loaded)
        return st_err_set(err, ST_ERR_LOADING, "model %s is not loaded", m->path);
    TRY(check_batch(t, b, err));
    TRY(catch_batch(t, b, err));
    if (b->n_rows > 0 && b->n_rows <= ST_FWD_GRAPH_ROWS && b->n_rows <= m->p.max_rows) {
        TRY(forward_graphed(t, b, err));   /* the head included */
    } else {
        TRY(st_fwd_chunks(m, b, upkeep, t, err));
        if (b->n_out > 0)
            TRY(st_fwd_head(m, b->n_out, err));
    }
    if (logits && b->n_out > 0)
        *logits = m->logits_host;
    return ST_OK;
}

void st_mtp_truncate(struct st_mtp *t, int32_t slot, int64_t n_tokens)
{
    if (slot < 0 || slot >= t->S)
        return;
    st_mtp_stash_cut(t, slot, n_tokens);
    int64_t want = n_tokens - 1, have = t->carry_pos[slot];
    if (want < 0 || (have >= 0 && want >= have)) {
        t->carry_pos[slot] = want < 0 ? -1 : have;
        return;
    }
    t->carry_pos[slot] = -1;
    for (int64_t i = 0; i < t->chunk_n; i++) {
        if (t->chunk_slot[i] != slot || t->chunk_pos[i] != want)
            continue;
        struct st_err err = { 0 };
        if (copy_hrow(t, slot, t->S + 1 + i, &err) == ST_OK)
            t->carry_pos[slot] = want;
        else
            st_log(ST_LOG_WARN, "model", "MTP: slot %d keeps no state after a cut to %lld "
                   "tokens: %s", (int)slot, (long long)n_tokens, err.msg);
        return;
    }
}
