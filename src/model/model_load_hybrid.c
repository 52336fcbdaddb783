/* model_load_hybrid.c -- what a hybrid model (qwen35moe, qwen3next,
 * qwen35) adds to loading (model_load.c): each gated-attention layer's
 * attn_q split into its query and output-gate rows, each DeltaNet layer's
 * tensors (qwen3next's fused ssm_ba and ssm_in split the same way), the
 * shared expert's gate, and the per-slot recurrent state (docs/GGUF.md
 * "qwen35moe").
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

/* One part of a fused projection whose rows come in G groups: rows
 * [at, at + n) of group g go to rows [off + g*n, off + (g+1)*n) of *dst
 * (a tensor of 'rows' rows, allocated here unless already). */
struct part {
    struct st_tensor *dst;
    int64_t rows, at, n, off;
};

/* Copy each part of gt's groups into its own tensor, so every projection
 * is one plain matmul with contiguous output. */
static enum st_status split_rows(struct st_model *m, const struct st_gguf_tensor *gt,
                                 int64_t groups, const struct part *parts, size_t n_parts,
                                 struct st_err *err)
{
    enum st_status rc = ST_OK;
    int64_t per_group = gt->ne[1] / groups;
    size_t row = gt->nbytes / (size_t)gt->ne[1];   /* ne[2] == 1 (st_desc_bind) */
    const char *src = gt->data;
    for (size_t p = 0; p < n_parts && rc == ST_OK; p++) {
        const int64_t ne[ST_TENSOR_DIMS] = { gt->ne[0], parts[p].rows, 1, 1 };
        if (!parts[p].dst->data)
            rc = st_backend_alloc(m->be, gt->type, ne, parts[p].dst, err);
    }
    for (int64_t g = 0; g < groups && rc == ST_OK; g++)
        for (size_t p = 0; p < n_parts && rc == ST_OK; p++) {
            const struct part *q = &parts[p];
            rc = st_backend_write(m->be, q->dst, (size_t)(q->off + g * q->n) * row,
                                  src + (size_t)(g * per_group + q->at) * row,
                                  (size_t)q->n * row, err);
        }
    return rc;
}

/* attn_q holds, per head, D query rows then D gate rows. */
static enum st_status split_q(struct st_model *m, const struct st_gguf_tensor *gt,
                              struct st_fwd_layer *w, struct st_err *err)
{
    int64_t D = m->desc->hp.head_dim_k, H = m->desc->hp.n_head;
    const struct part parts[] = { { &w->wq, H * D, 0, D, 0 }, { &w->wq_gate, H * D, D, D, 0 } };
    return split_rows(m, gt, H, parts, ST_ARRAY_LEN(parts), err);
}

/* qwen3next's fused projections, per k head (HF's order, docs/GGUF.md
 * "qwen3next"): ssm_ba holds r = Hv/Hk beta rows then r alpha rows; the
 * older ssm_in holds Dk q rows, Dk k rows, r*Dv v rows and r*Dv z rows. */
static enum st_status split_fused(struct st_model *m, const struct st_layer_desc *d,
                                  struct st_fwd_layer *w, struct st_err *err)
{
    const struct st_ssm_hparams *s = &m->desc->hp.ssm;
    int64_t Hk = s->n_k_heads, Hv = s->n_v_heads, D = s->head_dim, r = Hv / Hk;
    int64_t Ck = Hk * D, Cv = s->d_inner, C3 = 2 * Ck + Cv;
    enum st_status rc = ST_OK;
    if (d->ssm_ba) {
        const struct part ba[] = { { &w->w_beta, Hv, 0, r, 0 }, { &w->w_alpha, Hv, r, r, 0 } };
        rc = split_rows(m, d->ssm_ba, Hk, ba, ST_ARRAY_LEN(ba), err);
    }
    if (rc == ST_OK && d->ssm_in) {
        const struct part in[] = {
            { &w->wqkv, C3, 0, D, 0 }, { &w->wqkv, C3, D, D, Ck },
            { &w->wqkv, C3, 2 * D, r * D, 2 * Ck }, { &w->wz, Cv, 2 * D + r * D, r * D, 0 },
        };
        rc = split_rows(m, d->ssm_in, Hk, in, ST_ARRAY_LEN(in), err);
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
    return rc == ST_OK ? split_fused(m, d, w, err) : rc;
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
