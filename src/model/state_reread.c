/* state_reread.c -- a slot's accepted verify rows read into its restored
 * recurrent state again without the weights (st_model_state_keep /
 * st_model_state_reread, forward.h; docs/ENGINE.md "qwen35moe", "Drafts").
 *
 * A rejected draft leaves its rows in the slot's DeltaNet state, so the
 * runner restores the state saved before the verify step and reads the
 * accepted rows again (runner_rollback.c). Those rows' layer inputs were
 * all computed by the verify forward: what the state needs of them is each
 * DeltaNet layer's projections (mix, alpha, beta), which a forward of one
 * chunk of at most keep.cap rows writes straight into per-layer buffers
 * here instead of scratch (forward_hybrid.c input_of; no extra op, so a
 * backend graph of the step is unchanged). The re-read is then the conv
 * and the delta rule of each DeltaNet layer over those rows (2 ops a
 * layer) instead of a forward through every weight, which on the CPU cost
 * about as much as the verify step itself. The rows are the verify's own,
 * so the state equals the one that step would have left had the drafts
 * stopped there (the recurrence takes rows in order, one at a time).
 *
 * Layout (state_keep.h): mix [C3, cap, Lr], alpha / beta [Hv, cap, Lr];
 * row i of the last forward at row i of each layer's slice; forward.c
 * records which rows those are (their slots and positions).
 */
#include <stdlib.h>

#include "forward_internal.h"

enum st_status st_model_state_keep(struct st_model *m, int64_t rows, struct st_err *err)
{
    if (!m->loaded || m->desc->hp.n_recurrent == 0)
        return st_err_set(err, ST_ERR_INVALID, "state keep: no recurrent layers loaded");
    if (rows <= 0 || m->keep.cap > 0)
        return ST_OK;
    rows = ST_MIN(rows, (int64_t)m->p.max_rows);
    int64_t C3 = m->act.mix.ne[0], Hv = m->act.alpha.ne[0], Lr = m->desc->hp.n_recurrent;
    int64_t ne_mix[ST_TENSOR_DIMS] = { C3, rows, Lr, 1 };
    int64_t ne_g[ST_TENSOR_DIMS] = { Hv, rows, Lr, 1 };
    enum st_status rc = st_backend_alloc(m->be, ST_DTYPE_F32, ne_mix, &m->keep.mix, err);
    if (rc == ST_OK)
        rc = st_backend_alloc(m->be, ST_DTYPE_F32, ne_g, &m->keep.alpha, err);
    if (rc == ST_OK)
        rc = st_backend_alloc(m->be, ST_DTYPE_F32, ne_g, &m->keep.beta, err);
    m->keep.slot = rc == ST_OK ? malloc((size_t)rows * sizeof(*m->keep.slot)) : NULL;
    m->keep.pos = rc == ST_OK ? malloc((size_t)rows * sizeof(*m->keep.pos)) : NULL;
    if (rc == ST_OK && (!m->keep.slot || !m->keep.pos))
        rc = st_err_set(err, ST_ERR_NOMEM, "state keep: no memory for %lld rows",
                        (long long)rows);
    if (rc != ST_OK) {
        st_model_state_keep_release(m);
        return rc;
    }
    m->keep.cap = rows;
    m->keep.rows = 0;
    m->act_bytes += st_tensor_nbytes(&m->keep.mix) + 2 * st_tensor_nbytes(&m->keep.alpha);
    return ST_OK;
}

void st_model_state_keep_release(struct st_model *m)
{
    st_backend_release(m->be, &m->keep.mix);
    st_backend_release(m->be, &m->keep.alpha);
    st_backend_release(m->be, &m->keep.beta);
    free(m->keep.slot);
    free(m->keep.pos);
    m->keep.slot = NULL;
    m->keep.pos = NULL;
    m->keep.cap = m->keep.rows = 0;
}

/* The first of the n kept rows of slot at positions from, from + 1, ..;
 * -1 when the last forward did not keep them all. */
static int64_t find_rows(const struct st_model *m, int32_t slot, int64_t from, int64_t n)
{
    for (int64_t i = 0; i + n <= m->keep.rows; i++) {
        if (m->keep.slot[i] != slot || m->keep.pos[i] != from)
            continue;
        for (int64_t j = 1; j < n; j++)
            if (m->keep.slot[i + j] != slot || m->keep.pos[i + j] != from + j)
                return -1;
        return i;
    }
    return -1;
}

static enum st_status put_column(struct st_model *m, const struct st_tensor *t, int64_t n,
                                 int32_t first, int32_t step, struct st_err *err)
{
    for (int64_t i = 0; i < n; i++)
        m->i32_host[i] = first + step * (int32_t)i;
    return st_backend_write(m->be, t, 0, m->i32_host, (size_t)n * sizeof(int32_t), err);
}

enum st_status st_model_state_reread(struct st_model *m, int32_t slot, int64_t from, int64_t n,
                                     struct st_err *err)
{
    int64_t i0 = m->loaded && n > 0 ? find_rows(m, slot, from, n) : -1;
    if (i0 < 0)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "state re-read: the last forward did not "
                          "keep slot %d's rows at %lld..%lld", (int)slot, (long long)from,
                          (long long)(from + n));
    struct st_fwd_rows r;
    st_fwd_cut_rows(&m->act, n, &r);
    TRY(put_column(m, &r.slot, n, slot, 0, err));
    TRY(put_column(m, &r.pos, n, (int32_t)from, 1, err));
    for (int64_t l = 0; l < m->desc->hp.n_layer; l++) {
        const struct st_fwd_layer *w = &m->layers[l];
        if (w->state_index < 0)
            continue;
        struct st_tensor mix = st_tensor_slice(&m->keep.mix, 2, w->state_index, 1);
        struct st_tensor alpha = st_tensor_slice(&m->keep.alpha, 2, w->state_index, 1);
        struct st_tensor beta = st_tensor_slice(&m->keep.beta, 2, w->state_index, 1);
        mix = st_tensor_slice(&mix, 1, i0, n);
        alpha = st_tensor_slice(&alpha, 1, i0, n);
        beta = st_tensor_slice(&beta, 1, i0, n);
        TRY(st_fwd_delta_rule(m, w, &mix, &alpha, &beta, &r.slot, &r.pos, &r.conv, &r.y, err));
    }
    return ST_OK;
}
