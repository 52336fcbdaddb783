/* op_check_ssm.c -- shape and dtype validation of the optional recurrent
 * ops (strata/backend_ssm.h), shared by every backend like op_check.c.
 */
#include "op_check.h"

#define F32 ((int)ST_DTYPE_F32)
#define I32 ((int)ST_DTYPE_I32)

/* slot and pos: i32 [n]. */
static enum st_status check_rows(struct st_backend *be, const char *op, ST_T slot, ST_T pos,
                                 int64_t n, struct st_err *err)
{
    if (!st_op_ok(be, slot, I32, 1) || slot->ne[0] != n)
        return st_op_bad(err, op, "slot", slot);
    if (!st_op_ok(be, pos, I32, 1) || pos->ne[0] != n)
        return st_op_bad(err, op, "pos", pos);
    return ST_OK;
}

enum st_status st_check_ssm_conv(struct st_backend *be, ST_T out, ST_T x, ST_T w, ST_T state,
                                 ST_T slot, ST_T pos, struct st_err *err)
{
    if (!st_op_ok(be, x, F32, 2))
        return st_op_bad(err, "ssm_conv", "x", x);
    int64_t C = x->ne[0], n = x->ne[1];
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != C || out->ne[1] != n || out->data == x->data)
        return st_op_bad(err, "ssm_conv", "out", out);
    if (!st_op_ok(be, w, F32, 2) || w->ne[0] < 2 || w->ne[1] != C)
        return st_op_bad(err, "ssm_conv", "w", w);
    if (!st_op_ok(be, state, F32, 3) || state->ne[0] != C || state->ne[1] != w->ne[0] - 1)
        return st_op_bad(err, "ssm_conv", "state", state);
    return check_rows(be, "ssm_conv", slot, pos, n, err);
}

enum st_status st_check_delta_net(struct st_backend *be, ST_T out, ST_T qkv, ST_T alpha,
                                  ST_T beta, ST_T dt_bias, ST_T a, ST_T state, ST_T slot,
                                  ST_T pos, const struct st_delta_net_params *p,
                                  struct st_err *err)
{
    if (!p || p->n_k_heads < 1 || p->n_v_heads < 1 || p->n_v_heads % p->n_k_heads != 0 ||
        p->head_dim < 1 || !(p->eps > 0.0f))
        return st_err_set(err, ST_ERR_INVALID, "delta_net: heads %d/%d of %d, eps %g are not "
                          "usable", p ? (int)p->n_k_heads : 0, p ? (int)p->n_v_heads : 0,
                          p ? (int)p->head_dim : 0, p ? (double)p->eps : 0.0);
    int64_t D = p->head_dim, Hv = p->n_v_heads, C3 = (2 * p->n_k_heads + Hv) * D;
    if (!st_op_ok(be, qkv, F32, 2) || qkv->ne[0] != C3)
        return st_op_bad(err, "delta_net", "qkv", qkv);
    int64_t n = qkv->ne[1];
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != Hv * D || out->ne[1] != n ||
        out->data == qkv->data)
        return st_op_bad(err, "delta_net", "out", out);
    if (!st_op_ok(be, alpha, F32, 2) || alpha->ne[0] != Hv || alpha->ne[1] != n)
        return st_op_bad(err, "delta_net", "alpha", alpha);
    if (!st_op_ok(be, beta, F32, 2) || beta->ne[0] != Hv || beta->ne[1] != n)
        return st_op_bad(err, "delta_net", "beta", beta);
    if (!st_op_ok(be, dt_bias, F32, 1) || dt_bias->ne[0] != Hv)
        return st_op_bad(err, "delta_net", "dt_bias", dt_bias);
    if (!st_op_ok(be, a, F32, 1) || a->ne[0] != Hv)
        return st_op_bad(err, "delta_net", "a", a);
    if (!st_op_ok(be, state, F32, 4) || state->ne[0] != D || state->ne[1] != D ||
        state->ne[2] != Hv)
        return st_op_bad(err, "delta_net", "state", state);
    return check_rows(be, "delta_net", slot, pos, n, err);
}

enum st_status st_check_sigmoid_mul(struct st_backend *be, ST_T out, ST_T x, ST_T g,
                                    struct st_err *err)
{
    if (!st_op_ok(be, x, F32, 2))
        return st_op_bad(err, "sigmoid_mul", "x", x);
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != x->ne[0] || out->ne[1] != x->ne[1])
        return st_op_bad(err, "sigmoid_mul", "out", out);
    if (!st_op_ok(be, g, F32, 2) || (g->ne[0] != x->ne[0] && g->ne[0] != 1) ||
        g->ne[1] != x->ne[1])
        return st_op_bad(err, "sigmoid_mul", "g", g);
    return ST_OK;
}
