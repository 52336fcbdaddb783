/* forward_parts.c -- the pieces of the layer program that more than one
 * block uses: forward.c's decoder layer, forward_hybrid.c's qwen35moe
 * layer and (through them) the MTP layer: the q/k norm and rope, the
 * attention call, the fused residual, the SwiGLU FFN and the routed
 * experts.
 */
#include <math.h>

#include "forward_internal.h"

/* The first w * n floats of an f32 buffer seen as [w, n] (the g and u
 * buffers serve the dense FFN and the shared expert, of different widths). */
static struct st_tensor width_view(const struct st_tensor *t, int64_t w, int64_t n)
{
    const int64_t flat[ST_TENSOR_DIMS] = { 1, st_tensor_nelem(t), 1, 1 };
    const int64_t ne[ST_TENSOR_DIMS] = { w, n, 1, 1 };
    struct st_tensor f = st_tensor_reshape(t, flat);
    struct st_tensor v = st_tensor_slice(&f, 1, 0, w * n);
    return st_tensor_reshape(&v, ne);
}

/* NEOX rope of t [heads*D, n] in place at each row's position, after the
 * per-head norm (qwen3*: one fused op, exactly rms_norm then rope). */
enum st_status st_fwd_norm_rope(struct st_model *m, const struct st_tensor *t,
                                const struct st_tensor *norm, const struct st_fwd_rows *r,
                                struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    if (hp->qk_norm)
        return st_backend_rms_norm_rope(m->be, t, t, norm, &r->pos, &hp->rope, hp->rms_eps,
                                        err);
    return st_backend_rope(m->be, t, t, &r->pos, (int32_t)hp->head_dim_k, &hp->rope, err);
}

/* att = causal GQA attention of q over the slot's cache, which the op
 * first extends with k and v. */
enum st_status st_fwd_attend(struct st_model *m, const struct st_tensor *kc,
                             const struct st_tensor *vc, const struct st_fwd_rows *r,
                             struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    float scale = 1.0f / sqrtf((float)hp->head_dim_k);
    return st_backend_attention(m->be, &r->att, &r->q, &r->k, &r->v, kc, vc, &r->slot,
                                &r->pos, (int32_t)hp->n_head, (int32_t)hp->n_head_kv, scale,
                                err);
}

/* x += o, and h = rmsnorm(x) * next_norm when next_norm is given (one
 * fused op: what the next sub-block would compute first). */
enum st_status st_fwd_residual(struct st_model *m, const struct st_fwd_rows *r,
                               const struct st_tensor *next_norm, struct st_err *err)
{
    if (next_norm)
        return st_backend_add_rms_norm(m->be, &r->h, &r->x, &r->o, next_norm,
                                       m->desc->hp.rms_eps, err);
    return st_backend_add(m->be, &r->x, &r->x, &r->o, err);
}

/* out = down(SiLU(h gate^T) * (h up^T)): a dense SwiGLU FFN of width
 * ne1(gate), through the g and u buffers. */
enum st_status st_fwd_swiglu(struct st_model *m, const struct st_tensor *out,
                             const struct st_tensor *gate, const struct st_tensor *up,
                             const struct st_tensor *down, const struct st_fwd_rows *r,
                             struct st_err *err)
{
    int64_t n = r->h.ne[1];
    struct st_tensor g = width_view(&m->act.g, gate->ne[1], n);
    struct st_tensor u = width_view(&m->act.u, gate->ne[1], n);
    TRY(st_backend_matmul(m->be, &g, &r->h, gate, err));
    TRY(st_backend_matmul(m->be, &u, &r->h, up, err));
    TRY(st_backend_silu_mul(m->be, &g, &g, &u, err));
    return st_backend_matmul(m->be, out, &g, down, err);
}

enum st_status st_fwd_moe(struct st_model *m, const struct st_fwd_layer *w,
                          const struct st_fwd_rows *r, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    struct st_backend *be = m->be;
    const struct st_moe_route_params rp = {
        .gating = (enum st_moe_gating)hp->moe_gating,
        .bias = w->exp_probs_b.data ? &w->exp_probs_b : NULL,
        .norm = hp->moe_norm,
        .scale = hp->moe_scale,
    };
    TRY(st_backend_moe_route(be, &r->sel, &r->wts, &r->h, &w->router, &rp, err));
    return st_backend_moe_ffn(be, &r->o, &r->h, &r->sel, &r->wts, &w->gate_exps, &w->up_exps,
                              &w->down_exps, err);
}
