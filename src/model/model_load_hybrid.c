/* model_load_hybrid.c -- what a qwen35moe adds to loading (model_load.c):
 * each gated-attention layer's attn_q split into its query and output-gate
 * rows, each DeltaNet layer's tensors, the shared expert's gate, and the
 * per-slot recurrent state (docs/GGUF.md "qwen35moe").
 */
#include <stdio.h>

#include "forward_internal.h"
#include "strata/backend_ssm.h"

static enum st_status wrap(struct st_model *m, const struct st_gguf_tensor *gt,
                           struct st_tensor *out, struct st_err *err)
{
    if (!gt)
        return ST_OK;
    return st_backend_wrap(m->be, gt->type, gt->ne, gt->data, gt->nbytes, out, err);
}

/* attn_q holds, per head, D query rows then D gate rows: copy the query
 * rows into w->wq and the gate rows into w->wq_gate, so each projection is
 * one plain matmul with contiguous output. */
static enum st_status split_q(struct st_model *m, const struct st_gguf_tensor *gt,
                              struct st_fwd_layer *w, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    int64_t D = hp->head_dim_k, H = hp->n_head;
    const int64_t ne[ST_TENSOR_DIMS] = { gt->ne[0], H * D, 1, 1 };
    enum st_status rc = st_backend_alloc(m->be, gt->type, ne, &w->wq, err);
    if (rc == ST_OK)
        rc = st_backend_alloc(m->be, gt->type, ne, &w->wq_gate, err);
    size_t row = st_tensor_row_bytes(&w->wq), block = (size_t)D * row;
    const char *src = gt->data;
    for (int64_t h = 0; h < H && rc == ST_OK; h++) {
        rc = st_backend_write(m->be, &w->wq, (size_t)h * block, src + 2 * h * block, block, err);
        if (rc == ST_OK)
            rc = st_backend_write(m->be, &w->wq_gate, (size_t)h * block,
                                  src + (2 * h + 1) * block, block, err);
    }
    return rc;
}

enum st_status st_fwd_load_hybrid(struct st_model *m, int64_t l, struct st_err *err)
{
    const struct st_model_desc *desc = m->desc;
    const struct st_layer_desc *d = &desc->layers[l];
    struct st_fwd_layer *w = &m->layers[l];
    int64_t before = 0;
    for (int64_t i = 0; i < l; i++)
        before += desc->layers[i].recurrent == d->recurrent;
    w->kv_index = d->recurrent ? -1 : before;
    w->state_index = d->recurrent ? before : -1;
    return st_fwd_load_hybrid_block(m, d, w, err);
}

enum st_status st_fwd_load_hybrid_block(struct st_model *m, const struct st_layer_desc *d,
                                        struct st_fwd_layer *w, struct st_err *err)
{
    enum st_status rc = wrap(m, d->ffn_gate_inp_shexp, &w->shexp_gate, err);
    if (rc == ST_OK && !d->recurrent)
        return split_q(m, d->wq, w, err);
    const struct { const struct st_gguf_tensor *g; struct st_tensor *t; } all[] = {
        { d->wqkv, &w->wqkv }, { d->wz, &w->wz }, { d->ssm_conv1d, &w->conv1d },
        { d->ssm_dt, &w->dt_bias }, { d->ssm_a, &w->decay_a }, { d->ssm_alpha, &w->w_alpha },
        { d->ssm_beta, &w->w_beta }, { d->ssm_norm, &w->ssm_norm }, { d->ssm_out, &w->ssm_out },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(all) && rc == ST_OK; i++)
        rc = wrap(m, all[i].g, all[i].t, err);
    return rc;
}

enum st_status st_fwd_alloc_state(struct st_model *m, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    const struct st_ssm_hparams *s = &hp->ssm;
    int64_t Lr = hp->n_recurrent, S = m->p.n_slots;
    if (Lr == 0)
        return ST_OK;
    if (!st_backend_has_ssm(m->be))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "%s: %s's recurrent layers need ops the %s "
                          "backend does not have yet (docs/ENGINE.md \"qwen35moe\")", m->path,
                          hp->arch_name, st_backend_name(m->be));
    int64_t C3 = 2 * s->n_k_heads * s->head_dim + s->d_inner;
    const int64_t conv[ST_TENSOR_DIMS] = { C3, s->conv_kernel - 1, S, Lr };
    const int64_t delta[ST_TENSOR_DIMS] = { s->head_dim, s->head_dim, s->n_v_heads, S * Lr };
    enum st_status rc = st_backend_alloc(m->be, ST_DTYPE_F32, conv, &m->conv_state, err);
    if (rc == ST_OK)
        rc = st_backend_alloc(m->be, ST_DTYPE_F32, delta, &m->delta_state, err);
    if (rc != ST_OK) {
        char why[sizeof(err->msg)];
        snprintf(why, sizeof(why), "%s", err->msg);
        return st_err_set(err, rc, "recurrent state of %lld slots x %lld layers: %s",
                          (long long)S, (long long)Lr, why);
    }
    m->kv_bytes += st_tensor_nbytes(&m->conv_state) + st_tensor_nbytes(&m->delta_state);
    return ST_OK;
}
