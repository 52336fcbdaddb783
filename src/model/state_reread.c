/* state_reread.c -- a slot's accepted verify rows read into its restored
 * recurrent state again without the weights (st_model_state_keep /
 * st_model_state_reread, forward.h; docs/ENGINE.md "qwen35moe", "Drafts").
 *
 * A rejected draft leaves its rows in the slot's DeltaNet state, so the
 * runner restores the state saved before the verify step and reads the
 * accepted rows again (runner_rollback.c). Those rows' layer inputs were
 * all computed by the verify forward: what the state needs of them is each
 * DeltaNet layer's projections (mix, alpha, beta), which a forward of one
 * chunk of at most keep_cap rows writes straight into per-layer buffers
 * here instead of scratch (forward_hybrid.c input_of; no extra op, so a
 * backend graph of the step is unchanged). The re-read is then the conv
 * and the delta rule of each DeltaNet layer over those rows (2 ops a
 * layer) instead of a forward through every weight, which on the CPU cost
 * about as much as the verify step itself. The rows are the verify's own,
 * so the state equals the one that step would have left had the drafts
 * stopped there (the recurrence takes rows in order, one at a time).
 *
 * Layout: keep_mix [C3, keep_cap, Lr], keep_alpha / keep_beta [Hv,
 * keep_cap, Lr]; row i of the last forward at row i of each layer's slice.
 */
#include <stdlib.h>

#include "forward_internal.h"

enum st_status st_model_state_keep(struct st_model *m, int64_t rows, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    int64_t Lr = hp->n_recurrent;
    if (!m->loaded || Lr == 0 || rows <= 0 || m->keep_cap > 0)
        return !m->loaded || Lr == 0 ? st_err_set(err, ST_ERR_INVALID, "state keep: the model "
                                                  "has no recurrent layers loaded")
                                     : ST_OK;
    rows = ST_MIN(rows, (int64_t)m->p.max_rows);
    int64_t C3 = m->act.mix.ne[0], Hv = m->act.alpha.ne[0];
    int64_t ne_mix[ST_TENSOR_DIMS] = { C3, rows, Lr, 1 }, ne_g[ST_TENSOR_DIMS] = { Hv, rows, Lr, 1 };
    enum st_status rc = st_backend_alloc(m->be, ST_DTYPE_F32, ne_mix, &m->keep_mix, err);
    if (rc == ST_OK)
        rc = st_backend_alloc(m->be, ST_DTYPE_F32, ne_g, &m->keep_alpha, err);
    if (rc == ST_OK)
        rc = st_backend_alloc(m->be, ST_DTYPE_F32, ne_g, &m->keep_beta, err);
    m->kept_slot = rc == ST_OK ? malloc((size_t)rows * sizeof(*m->kept_slot)) : NULL;
    m->kept_pos = rc == ST_OK ? malloc((size_t)rows * sizeof(*m->kept_pos)) : NULL;
    if (rc == ST_OK && (!m->kept_slot || !m->kept_pos))
        rc = st_err_set(err, ST_ERR_NOMEM, "state keep: no memory for %lld rows",
                        (long long)rows);
    if (rc != ST_OK) {
        st_model_state_keep_release(m);
        return rc;
    }
    m->keep_cap = rows;
    m->kept_rows = 0;
    m->act_bytes += st_tensor_nbytes(&m->keep_mix) + 2 * st_tensor_nbytes(&m->keep_alpha);
    return ST_OK;
}

void st_model_state_keep_release(struct st_model *m)
{
    st_backend_release(m->be, &m->keep_mix);
    st_backend_release(m->be, &m->keep_alpha);
    st_backend_release(m->be, &m->keep_beta);
    free(m->kept_slot);
    free(m->kept_pos);
    m->kept_slot = NULL;
    m->kept_pos = NULL;
    m->keep_cap = m->kept_rows = 0;
}

void st_model_state_keep_rows(struct st_model *m, const struct st_model_batch *b, int64_t r0,
                              int64_t r1)
{
    bool keep = m->keep_cap > 0 && r0 == 0 && r1 == b->n_rows && r1 <= m->keep_cap;
    m->kept_rows = keep ? r1 : 0;
    for (int64_t i = 0; i < m->kept_rows; i++) {
        m->kept_slot[i] = b->slots[i];
        m->kept_pos[i] = b->pos[i];
    }
}

/* The first of the n kept rows of slot at positions from, from + 1, ..;
 * -1 when the last forward did not keep them all. */
static int64_t find_rows(const struct st_model *m, int32_t slot, int64_t from, int64_t n)
{
    for (int64_t i = 0; i + n <= m->kept_rows; i++) {
        if (m->kept_slot[i] != slot || m->kept_pos[i] != from)
            continue;
        for (int64_t j = 1; j < n; j++)
            if (m->kept_slot[i + j] != slot || m->kept_pos[i + j] != from + j)
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
        struct st_tensor mix = st_tensor_slice(&m->keep_mix, 2, w->state_index, 1);
        struct st_tensor alpha = st_tensor_slice(&m->keep_alpha, 2, w->state_index, 1);
        struct st_tensor beta = st_tensor_slice(&m->keep_beta, 2, w->state_index, 1);
        mix = st_tensor_slice(&mix, 1, i0, n);
        alpha = st_tensor_slice(&alpha, 1, i0, n);
        beta = st_tensor_slice(&beta, 1, i0, n);
        TRY(st_fwd_delta_rule(m, w, &mix, &alpha, &beta, &r.slot, &r.pos, &r.conv, &r.y, err));
    }
    return ST_OK;
}
