/* forward_hybrid.c -- the hybrid layer program (qwen35moe, qwen3next and
 * qwen35; llama.cpp's graphs are the reference), written once against the
 * op table; the variants differ in data only (qwen3next's fused ssm_ba
 * is split at load and its v heads are grouped, qwen35's FFN is dense):
 *
 *   h = rmsnorm(x) * attn_norm
 *   Gated DeltaNet layer (three of every four):
 *     mix = h Wqkv^T;  z = h Wz^T;  alpha = h Walpha^T;  beta = h Wbeta^T
 *     conv = SiLU(causal conv1d of mix over the slot's last K-1 inputs)
 *     y = delta rule over the slot's state (q, k l2-normed; decay from
 *         alpha, dt_bias and A; beta gated)          (backend_ssm.h)
 *     o = (rmsnorm(y per head) * ssm_norm * SiLU(z)) Wout^T
 *   gated attention layer (the fourth):
 *     q = h Wq^T, gate = h Wq_gate^T (attn_q's two halves, split at load)
 *     k, v as qwen3; per-head q/k norm; partial NEOX rope; attention
 *     o = (att * sigmoid(gate)) Wo^T
 *   x += o;  h = rmsnorm(x) * post_attention_norm
 *   o = routed experts(h) + sigmoid(h . w_shexp_gate) * shared expert(h)
 *       (qwen35: o = the dense SwiGLU FFN(h))
 *   x += o
 *
 * The recurrent ops start a slot's state afresh at position 0 and carry
 * it otherwise, so a slot's rows must continue exactly where its state
 * ends (the runner refuses anything else: runner_model.c).
 */
#include "forward_internal.h"
#include "strata/backend_ssm.h"

/* The slot-major view of layer w's slice of a per-layer state tensor. */
static struct st_tensor state_of(const struct st_tensor *t, int64_t index, int64_t per_layer)
{
    return st_tensor_slice(t, 3, index * per_layer, per_layer);
}

enum st_status st_fwd_delta_rule(struct st_model *m, const struct st_fwd_layer *w,
                                 const struct st_tensor *mix, const struct st_tensor *alpha,
                                 const struct st_tensor *beta, const struct st_tensor *slot,
                                 const struct st_tensor *pos, const struct st_tensor *conv,
                                 const struct st_tensor *y, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    int64_t S = m->p.n_slots;
    struct st_tensor conv_state = state_of(&m->conv_state, w->state_index, 1);
    struct st_tensor delta_state = state_of(&m->delta_state, w->state_index, S);
    const struct st_delta_net_params dp = {
        .n_k_heads = (int32_t)hp->ssm.n_k_heads,
        .n_v_heads = (int32_t)hp->ssm.n_v_heads,
        .head_dim = (int32_t)hp->ssm.head_dim,
        .eps = hp->rms_eps,
        .v_grouped = hp->ssm.v_grouped,
    };
    TRY(st_backend_ssm_conv(m->be, conv, mix, &w->conv1d, &conv_state, slot, pos, err));
    return st_backend_delta_net(m->be, y, conv, alpha, beta, &w->dt_bias, &w->decay_a,
                                &delta_state, slot, pos, &dp, err);
}

/* The buffer the projections of layer w's n rows go to: the kept inputs
 * (st_model_state_keep) when the forward keeps them, else scratch. Which
 * one depends on the row count alone, so a backend graph of a shape stays
 * right on replay. */
static struct st_tensor input_of(const struct st_model *m, const struct st_fwd_layer *w,
                                 const struct st_tensor *keep, const struct st_tensor *scratch)
{
    if (m->keep.rows == 0 || m->keep.rows != scratch->ne[1])
        return *scratch;
    struct st_tensor layer = st_tensor_slice(keep, 2, w->state_index, 1);
    return st_tensor_slice(&layer, 1, 0, m->keep.rows);
}

static enum st_status delta_net(struct st_model *m, const struct st_fwd_layer *w,
                                const struct st_fwd_rows *r, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    struct st_backend *be = m->be;
    struct st_tensor mix = input_of(m, w, &m->keep.mix, &r->mix);
    struct st_tensor alpha = input_of(m, w, &m->keep.alpha, &r->alpha);
    struct st_tensor beta = input_of(m, w, &m->keep.beta, &r->beta);
    TRY(st_backend_matmul(be, &mix, &r->h, &w->wqkv, err));
    TRY(st_backend_matmul(be, &r->z, &r->h, &w->wz, err));
    TRY(st_backend_matmul(be, &alpha, &r->h, &w->w_alpha, err));
    TRY(st_backend_matmul(be, &beta, &r->h, &w->w_beta, err));
    TRY(st_fwd_delta_rule(m, w, &mix, &alpha, &beta, &r->slot, &r->pos, &r->conv, &r->y, err));
    /* the gated norm: rmsnorm per head (groups of Dv) times SiLU(z) */
    TRY(st_backend_rms_norm(be, &r->y, &r->y, &w->ssm_norm, hp->rms_eps, err));
    TRY(st_backend_silu_mul(be, &r->y, &r->z, &r->y, err));
    return st_backend_matmul(be, &r->o, &r->y, &w->ssm_out, err);
}

static enum st_status gated_attention(struct st_model *m, const struct st_fwd_layer *w,
                                      const struct st_tensor *kc, const struct st_tensor *vc,
                                      const struct st_fwd_rows *r, struct st_err *err)
{
    struct st_backend *be = m->be;
    TRY(st_backend_matmul(be, &r->k, &r->h, &w->wk, err));
    TRY(st_backend_matmul(be, &r->v, &r->h, &w->wv, err));
    TRY(st_fwd_norm_rope(m, &r->k, &w->k_norm, r, err));
    TRY(st_backend_matmul(be, &r->q, &r->h, &w->wq, err));
    TRY(st_backend_matmul(be, &r->qgate, &r->h, &w->wq_gate, err));
    TRY(st_fwd_norm_rope(m, &r->q, &w->q_norm, r, err));
    TRY(st_fwd_attend(m, kc, vc, r, err));
    TRY(st_backend_sigmoid_mul(be, &r->att, &r->att, &r->qgate, err));
    return st_backend_matmul(be, &r->o, &r->att, &w->wo, err);
}

/* o = routed experts + sigmoid(h . shexp_gate) * shared expert, or
 * qwen35's dense FFN (no router). */
static enum st_status gated_ffn(struct st_model *m, const struct st_fwd_layer *w,
                                const struct st_fwd_rows *r, struct st_err *err)
{
    struct st_backend *be = m->be;
    if (!w->router.data)
        return st_fwd_swiglu(m, &r->o, &w->ffn_gate, &w->ffn_up, &w->ffn_down, r, err);
    TRY(st_fwd_moe(m, w, r, err));
    TRY(st_fwd_swiglu(m, &r->so, &w->gate_shexp, &w->up_shexp, &w->down_shexp, r, err));
    TRY(st_backend_matmul(be, &r->sgate, &r->h, &w->shexp_gate, err));
    TRY(st_backend_sigmoid_mul(be, &r->so, &r->so, &r->sgate, err));
    return st_backend_add(be, &r->o, &r->o, &r->so, err);
}

enum st_status st_fwd_hybrid_block(struct st_model *m, const struct st_fwd_layer *w,
                                   const struct st_tensor *kc, const struct st_tensor *vc,
                                   const struct st_fwd_rows *r, bool h_ready,
                                   const struct st_tensor *next_norm, struct st_err *err)
{
    if (!h_ready)
        TRY(st_backend_rms_norm(m->be, &r->h, &r->x, &w->attn_norm, m->desc->hp.rms_eps, err));
    TRY(w->state_index >= 0 ? delta_net(m, w, r, err) : gated_attention(m, w, kc, vc, r, err));
    TRY(st_fwd_residual(m, r, &w->ffn_norm, err));   /* x += o; h = post_attention_norm(x) */
    TRY(gated_ffn(m, w, r, err));
    return st_fwd_residual(m, r, next_norm, err);
}

enum st_status st_fwd_hybrid_layer(struct st_model *m, const struct st_fwd_layer *w,
                                   const struct st_fwd_rows *r, bool h_ready,
                                   const struct st_tensor *next_norm, struct st_err *err)
{
    struct st_tensor kc = { 0 }, vc = { 0 };
    if (w->kv_index >= 0) {
        kc = st_tensor_slice(&m->kcache, 3, w->kv_index, 1);
        vc = st_tensor_slice(&m->vcache, 3, w->kv_index, 1);
    }
    return st_fwd_hybrid_block(m, w, &kc, &vc, r, h_ready, next_norm, err);
}
