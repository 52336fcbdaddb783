/* mtp_draft.c -- st_mtp_draft: greedy chained drafts with the nextn block
 * (docs/design/ENGINE.md 4.2/4.3), every drafting slot in the same batched step.
 *
 * Step j (0 <= j < the longest request) has one row per slot still
 * drafting: token t_n (j = 0) or d_j, at position pos + j, with h = the
 * slot's carried main state (j = 0) or the block's own head-normed output
 * of step j - 1 (dbuf). Its logits (head . rmsnorm(h') * head_norm) are
 * read back and the argmax (ties to the lower id) is d_{j+1}. llama.cpp
 * takes the top of a top-k 10 candidate list, which is the same token.
 * A drafting slot whose last positions were decoded without the upkeep is
 * caught up first (mtp_catch.c: one kv-only pass for all such slots), so
 * it drafts in this call from the state and cache continuous upkeep gives.
 */
#include <string.h>

#include "mtp_internal.h"

static enum st_status check_drafts(struct st_mtp *t, const struct st_mtp_draft *d, int32_t n,
                                   struct st_err *err)
{
    if (n < 0 || n > t->S)
        return st_err_set(err, ST_ERR_INVALID, "MTP draft: %d requests for %lld slots",
                          (int)n, (long long)t->S);
    memset(t->mark, 0, (size_t)t->S * sizeof(int32_t));
    for (int32_t i = 0; i < n; i++) {
        const struct st_mtp_draft *q = &d[i];
        bool ok = q->slot >= 0 && q->slot < t->S && q->token >= 0 && q->token < t->V &&
                  q->pos >= 0 && q->n_draft >= 0 && q->n_draft <= t->max_draft &&
                  q->pos + q->n_draft <= t->m->p.n_ctx && (q->n_draft == 0 || q->out);
        if (!ok || t->mark[q->slot])
            return st_err_set(err, ST_ERR_INVALID, "MTP draft: request %d (slot %d, token %d, "
                              "%d drafts at position %lld) is out of range or repeats a slot",
                              (int)i, (int)q->slot, (int)q->token, (int)q->n_draft,
                              (long long)q->pos);
        t->mark[q->slot] = 1;
    }
    return ST_OK;
}

static int32_t argmax(const float *x, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        b = x[i] > x[b] ? i : b;
    return (int32_t)b;
}

/* Rows of step j; returns how many. drow[i] becomes request i's row. */
static int64_t step_rows(struct st_mtp *t, const struct st_mtp_draft *d, int32_t n, int32_t j)
{
    int64_t rows = 0;
    for (int32_t i = 0; i < n; i++) {
        if (t->dwant[i] <= j)
            continue;
        t->dtok[rows] = j == 0 ? d[i].token : d[i].out[j - 1];
        t->dslot[rows] = d[i].slot;
        t->dpos[rows] = d[i].pos + j;
        if (j > 0)
            t->hrow_host[rows] = t->drow[i];            /* its row of step j - 1 in dbuf */
        else
            t->hrow_host[rows] = d[i].pos > 0 ? d[i].slot : (int32_t)t->S;
        t->drow[i] = (int32_t)rows++;
    }
    return rows;
}

static enum st_status draft_step(struct st_mtp *t, struct st_mtp_draft *d, int32_t n, int32_t j,
                                 struct st_err *err)
{
    struct st_model *m = t->m;
    int64_t rows = step_rows(t, d, n, j);
    if (rows == 0)
        return ST_OK;
    struct st_tensor hn = st_tensor_slice(&t->dbuf, 1, 0, rows);
    struct st_tensor x = st_tensor_slice(&m->act.x, 1, 0, rows);
    struct st_tensor lg = st_tensor_slice(&t->logits, 1, 0, rows);
    /* Writes first, then the ops as one backend graph for a few rows
     * (docs/CUDA.md): the key is the row count and the h table (hbuf for
     * the first step, dbuf after), which fix every view the ops see. */
    bool graph = rows <= ST_FWD_GRAPH_ROWS, replayed = false;
    TRY(st_mtp_rows_write(t, rows, t->dtok, t->dslot, t->dpos, t->hrow_host, err));
    if (graph)
        TRY(st_backend_graph_begin(m->be, ST_FWD_GRAPH_KEY(ST_FWD_GRAPH_MTP_DRAFT, rows, j == 0),
                                   &replayed, err));
    if (!replayed) {
        TRY(st_mtp_rows_ops(t, rows, j == 0 ? &t->hbuf : &t->dbuf, false, err));
        TRY(st_backend_rms_norm(m->be, &hn, &x, t->head_norm, m->desc->hp.rms_eps, err));
        TRY(st_backend_matmul(m->be, &lg, &hn, t->head, err));
        if (graph)
            TRY(st_backend_graph_end(m->be, err));
    }
    TRY(st_backend_read(m->be, &lg, 0, t->logits_host, st_tensor_nbytes(&lg), err));
    for (int32_t i = 0; i < n; i++) {
        if (t->dwant[i] <= j)
            continue;
        const float *row = t->logits_host + (size_t)t->drow[i] * (size_t)t->V;
        d[i].out[j] = argmax(row, t->V);
        if (d[i].logits)
            memcpy(d[i].logits + (size_t)j * (size_t)t->V, row, (size_t)t->V * sizeof(float));
        d[i].n_draft = j + 1;
    }
    return ST_OK;
}

enum st_status st_mtp_draft(struct st_mtp *t, struct st_mtp_draft *d, int32_t n,
                            struct st_err *err)
{
    int32_t m = 0;
    TRY(check_drafts(t, d, n, err));
    for (int32_t i = 0; i < n; i++) {   /* skipped positions first */
        if (d[i].n_draft == 0)
            continue;
        t->dslot[m] = d[i].slot;
        t->dpos[m++] = d[i].pos;
    }
    TRY(st_mtp_catch_up(t, t->dslot, t->dpos, m, err));
    int32_t most = 0;
    for (int32_t i = 0; i < n; i++) {
        bool carried = d[i].pos == 0 || t->carry_pos[d[i].slot] == d[i].pos - 1;
        t->dwant[i] = carried ? d[i].n_draft : 0;
        d[i].n_draft = 0;
        most = ST_MAX(most, t->dwant[i]);
    }
    for (int32_t j = 0; j < most; j++)
        TRY(draft_step(t, d, n, j, err));
    return ST_OK;
}
