/* cuda_ssm.c -- the CUDA backend's optional recurrent ops
 * (strata/backend_ssm.h; kernels in kernels/ssm.cu): the conv1d and the
 * delta rule of Gated DeltaNet layers, and the sigmoid gate.
 *
 * Shapes were checked by backend.c (op_check_ssm.c). Slots and positions
 * stay on the device (graph capture reads nothing on the host): a slot out
 * of range is flagged by the kernel and reported at the next sync. Each op
 * is one launch; its writes (out, and the state) go to cuda_fuse.c's q8_1
 * record like every op's.
 */
#include "cuda_internal.h"

enum st_status cuda_op_ssm_conv(struct st_backend *be, ST_T out, ST_T x, ST_T w, ST_T state,
                                ST_T slot, ST_T pos, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_actq_wrote_t(cb, out);
    cuda_actq_wrote_t(cb, state);
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb, st_kern_ssm_conv(out->data, state->data, x->data, w->data,
                                               slot->data, pos->data, x->ne[0], (int)w->ne[0],
                                               x->ne[1], state->ne[2], cb->err_flag, cb->stream),
                          "ssm_conv", err);
}

enum st_status cuda_op_delta_net(struct st_backend *be, ST_T out, ST_T qkv, ST_T alpha,
                                 ST_T beta, ST_T dt_bias, ST_T a, ST_T state, ST_T slot,
                                 ST_T pos, const struct st_delta_net_params *p,
                                 struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    if (p->head_dim > 256)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "delta_net: head width %d is above the "
                          "CUDA backend's 256", (int)p->head_dim);
    const struct st_kern_delta_net k = {
        .out = out->data, .state = state->data, .qkv = qkv->data, .alpha = alpha->data,
        .beta = beta->data, .dt_bias = dt_bias->data, .a = a->data, .slot = slot->data,
        .pos = pos->data, .n = qkv->ne[1], .n_slots = state->ne[3],
        .n_k_heads = p->n_k_heads, .n_v_heads = p->n_v_heads, .head_dim = p->head_dim,
        .eps = p->eps, .err_flag = cb->err_flag, .recurrent = cb->delta_recurrent,
        .v_grouped = p->v_grouped,
    };
    cuda_actq_wrote_t(cb, out);
    cuda_actq_wrote_t(cb, state);
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb, st_kern_delta_net(&k, cb->stream), "delta_net", err);
}

enum st_status cuda_op_sigmoid_mul(struct st_backend *be, ST_T out, ST_T x, ST_T g,
                                   struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_actq_wrote_t(cb, out);
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb, st_kern_sigmoid_mul(out->data, x->data, g->data, x->ne[0],
                                                  g->ne[0], x->ne[1], cb->stream),
                          "sigmoid_mul", err);
}
