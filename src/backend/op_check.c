/* op_check.c -- shape and dtype validation of every op (see op_check.h).
 *
 * "Activation" tensors are 2-D: ne[2] = ne[3] = 1, rows along ne[1].
 * Stacked expert weights are 3-D with ne[3] = 1; KV caches are 3-D views
 * of one layer.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "op_check.h"
#include "strata/quant.h"

enum st_status st_op_bad(struct st_err *err, const char *op, const char *what,
                          const struct st_tensor *t)
{
    if (!t)
        return st_err_set(err, ST_ERR_INVALID, "%s: %s is NULL", op, what);
    return st_err_set(err, ST_ERR_INVALID, "%s: bad %s (type %u, ne %lld x %lld x %lld x %lld)",
                      op, what, (unsigned)t->type, (long long)t->ne[0], (long long)t->ne[1],
                      (long long)t->ne[2], (long long)t->ne[3]);
}

/* t exists on backend be, has 'type' (or any type when type < 0) and is
 * at most 'dims'-dimensional. */
bool st_op_ok(struct st_backend *be, const struct st_tensor *t, int type, int dims)
{
    if (!t || t->be != be || !t->data)
        return false;
    if (type >= 0 && t->type != (enum st_dtype)type)
        return false;
    for (int d = dims; d < ST_TENSOR_DIMS; d++)
        if (t->ne[d] != 1)
            return false;
    return true;
}

/* A weight matrix whose rows the dot kernels can read: the x86 float
 * kernels (F32, F16, BF16) take 8 elements at a time with no tail, so
 * their rows (and the activations') must be whole 8s; quantized rows are
 * whole blocks by construction (st_backend_alloc). */
static bool dot_rows(const struct st_tensor *w)
{
    bool fl = w->type == ST_DTYPE_F32 || w->type == ST_DTYPE_F16 || w->type == ST_DTYPE_BF16;
    return !fl || w->ne[0] % 8 == 0;
}

#define F32 ((int)ST_DTYPE_F32)
#define I32 ((int)ST_DTYPE_I32)
#define F16 ((int)ST_DTYPE_F16)
#define ANY (-1)

enum st_status st_check_embed(struct st_backend *be, ST_T out, ST_T table, ST_T ids,
                              struct st_err *err)
{
    if (!st_op_ok(be, out, F32, 2))
        return st_op_bad(err, "embed", "out", out);
    if (!st_op_ok(be, table, ANY, 2) || table->ne[0] != out->ne[0])
        return st_op_bad(err, "embed", "table", table);
    if (!st_op_ok(be, ids, I32, 1) || ids->ne[0] != out->ne[1])
        return st_op_bad(err, "embed", "ids", ids);
    return ST_OK;
}

enum st_status st_check_rms_norm(struct st_backend *be, ST_T out, ST_T x, ST_T w, float eps,
                                 struct st_err *err)
{
    if (!st_op_ok(be, x, F32, 2))
        return st_op_bad(err, "rms_norm", "x", x);
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != x->ne[0] || out->ne[1] != x->ne[1])
        return st_op_bad(err, "rms_norm", "out", out);
    if (!st_op_ok(be, w, F32, 1) || x->ne[0] % w->ne[0] != 0)
        return st_op_bad(err, "rms_norm", "w", w);
    if (!(eps > 0.0f))
        return st_err_set(err, ST_ERR_INVALID, "rms_norm: eps %g must be > 0", (double)eps);
    return ST_OK;
}

enum st_status st_check_matmul(struct st_backend *be, ST_T out, ST_T x, ST_T w,
                               struct st_err *err)
{
    if (!st_op_ok(be, x, F32, 2))
        return st_op_bad(err, "matmul", "x", x);
    if (!st_op_ok(be, w, ANY, 2) || w->ne[0] != x->ne[0] || !dot_rows(w))
        return st_op_bad(err, "matmul", "w", w);
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != w->ne[1] || out->ne[1] != x->ne[1])
        return st_op_bad(err, "matmul", "out", out);
    return ST_OK;
}

static bool overlap(const struct st_tensor *a, const struct st_tensor *b)
{
    const uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
    return a0 < b0 + st_tensor_nbytes(b) && b0 < a0 + st_tensor_nbytes(a);
}

enum st_status st_check_matmul3(struct st_backend *be, ST_T out0, ST_T out1, ST_T out2, ST_T x,
                                ST_T w0, ST_T w1, ST_T w2, struct st_err *err)
{
    ST_T outs[3] = { out0, out1, out2 };
    ST_T ws[3] = { w0, w1, w2 };

    for (int i = 0; i < 3; i++) {
        enum st_status rc = st_check_matmul(be, outs[i], x, ws[i], err);
        if (rc != ST_OK)
            return rc;
        if (overlap(outs[i], x))
            return st_op_bad(err, "matmul3", "out (overlaps x)", outs[i]);
        for (int j = 0; j < i; j++)
            if (overlap(outs[i], outs[j]))
                return st_op_bad(err, "matmul3", "out (overlaps another out)", outs[i]);
    }
    return ST_OK;
}

static enum st_status check_same3(struct st_backend *be, const char *op, ST_T out, ST_T a,
                                  ST_T b, struct st_err *err)
{
    if (!st_op_ok(be, a, F32, 2))
        return st_op_bad(err, op, "first input", a);
    if (!st_op_ok(be, b, F32, 2) || b->ne[0] != a->ne[0] || b->ne[1] != a->ne[1])
        return st_op_bad(err, op, "second input", b);
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != a->ne[0] || out->ne[1] != a->ne[1])
        return st_op_bad(err, op, "out", out);
    return ST_OK;
}

enum st_status st_check_add(struct st_backend *be, ST_T out, ST_T a, ST_T b,
                            struct st_err *err)
{
    /* b as one row [C, 1] broadcast over a's rows (a bias) */
    if (st_op_ok(be, b, F32, 2) && st_op_ok(be, a, F32, 2) && b->ne[1] == 1 && a->ne[1] != 1 &&
        b->ne[0] == a->ne[0]) {
        if (!st_op_ok(be, out, F32, 2) || out->ne[0] != a->ne[0] || out->ne[1] != a->ne[1])
            return st_op_bad(err, "add", "out", out);
        if (out->data == b->data)
            return st_op_bad(err, "add", "out (aliases the bias row)", out);
        return ST_OK;
    }
    return check_same3(be, "add", out, a, b, err);
}

enum st_status st_check_silu_mul(struct st_backend *be, ST_T out, ST_T gate, ST_T up,
                                 struct st_err *err)
{
    return check_same3(be, "silu_mul", out, gate, up, err);
}

/* The rope parameters alone: finite, in range, ramp ends ordered. */
static bool rope_params_ok(const struct st_rope_params *r, int32_t head_dim)
{
    return r->n_rot > 0 && r->n_rot % 2 == 0 && r->n_rot <= head_dim &&
           isfinite(r->freq_base) && r->freq_base > 0.0f && isfinite(r->freq_scale) &&
           r->freq_scale > 0.0f && isfinite(r->ext_factor) && r->ext_factor >= 0.0f &&
           isfinite(r->attn_factor) && r->attn_factor > 0.0f && isfinite(r->corr_low) &&
           isfinite(r->corr_high) && r->corr_low >= 0.0f && r->corr_high >= r->corr_low;
}

enum st_status st_check_rope(struct st_backend *be, ST_T out, ST_T x, ST_T pos,
                             int32_t head_dim, const struct st_rope_params *rope,
                             struct st_err *err)
{
    if (!rope)
        return st_err_set(err, ST_ERR_INVALID, "rope: no rope parameters");
    if (!st_op_ok(be, x, F32, 2))
        return st_op_bad(err, "rope", "x", x);
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != x->ne[0] || out->ne[1] != x->ne[1])
        return st_op_bad(err, "rope", "out", out);
    if (!st_op_ok(be, pos, I32, 1) || pos->ne[0] != x->ne[1])
        return st_op_bad(err, "rope", "pos", pos);
    if (head_dim <= 0 || x->ne[0] % head_dim != 0 || !rope_params_ok(rope, head_dim))
        return st_err_set(err, ST_ERR_INVALID,
                          "rope: head_dim %d, n_rot %d, base %g, scale %g, ext %g, attn %g, "
                          "ramp %g..%g do not fit a row of %lld",
                          head_dim, rope->n_rot, (double)rope->freq_base,
                          (double)rope->freq_scale, (double)rope->ext_factor,
                          (double)rope->attn_factor, (double)rope->corr_low,
                          (double)rope->corr_high, (long long)x->ne[0]);
    return ST_OK;
}

/* A KV cache is F16, or Q8_0 with every head on whole blocks of 32; F32
 * and BF16 on the cpu backend only (its kernels: cpu_attn_kern.c). */
static bool kv_type_ok(struct st_backend *be, const struct st_tensor *c, int64_t d)
{
    if (c->type == ST_DTYPE_F32 || c->type == ST_DTYPE_BF16)
        return strcmp(be->ops->name, "cpu") == 0;
    return c->type == ST_DTYPE_F16 || (c->type == ST_DTYPE_Q8_0 && d % ST_QK == 0);
}

enum st_status st_check_attention(struct st_backend *be, ST_T out, ST_T q, ST_T k, ST_T v,
                                  ST_T kcache, ST_T vcache, ST_T slot, ST_T pos,
                                  int32_t n_head, int32_t n_head_kv, float scale,
                                  struct st_err *err)
{
    int64_t n;

    if (n_head <= 0 || n_head_kv <= 0 || n_head % n_head_kv != 0)
        return st_err_set(err, ST_ERR_INVALID, "attention: %d heads over %d KV heads",
                          n_head, n_head_kv);
    if (!st_op_ok(be, q, F32, 2) || q->ne[0] % n_head != 0)
        return st_op_bad(err, "attention", "q", q);
    n = q->ne[1];
    int64_t d = q->ne[0] / n_head;
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != q->ne[0] || out->ne[1] != n)
        return st_op_bad(err, "attention", "out", out);
    if (!st_op_ok(be, k, F32, 2) || k->ne[0] != d * n_head_kv || k->ne[1] != n)
        return st_op_bad(err, "attention", "k", k);
    if (!st_op_ok(be, v, F32, 2) || v->ne[0] != k->ne[0] || v->ne[1] != n)
        return st_op_bad(err, "attention", "v", v);
    if (!st_op_ok(be, kcache, ANY, 3) || !kv_type_ok(be, kcache, d) || kcache->ne[0] != k->ne[0])
        return st_op_bad(err, "attention", "kcache", kcache);
    if (!st_op_ok(be, vcache, ANY, 3) || !kv_type_ok(be, vcache, d) || vcache->ne[0] != k->ne[0] ||
        vcache->ne[1] != kcache->ne[1] || vcache->ne[2] != kcache->ne[2])
        return st_op_bad(err, "attention", "vcache", vcache);
    if (!st_op_ok(be, slot, I32, 1) || slot->ne[0] != n)
        return st_op_bad(err, "attention", "slot", slot);
    if (!st_op_ok(be, pos, I32, 1) || pos->ne[0] != n)
        return st_op_bad(err, "attention", "pos", pos);
    if (!(scale > 0.0f))
        return st_err_set(err, ST_ERR_INVALID, "attention: scale %g", (double)scale);
    return ST_OK;
}

enum st_status st_check_add_rms_norm(struct st_backend *be, ST_T h, ST_T x, ST_T o, ST_T w,
                                     float eps, struct st_err *err)
{
    enum st_status rc = check_same3(be, "add_rms_norm", h, x, o, err);
    if (rc != ST_OK)
        return rc;
    if (h->data == x->data)
        return st_op_bad(err, "add_rms_norm", "h (aliases x)", h);
    if (!st_op_ok(be, w, F32, 1) || x->ne[0] % w->ne[0] != 0)
        return st_op_bad(err, "add_rms_norm", "w", w);
    if (!(eps > 0.0f))
        return st_err_set(err, ST_ERR_INVALID, "add_rms_norm: eps %g must be > 0", (double)eps);
    return ST_OK;
}

enum st_status st_check_rms_norm_rope(struct st_backend *be, ST_T out, ST_T x, ST_T w, ST_T pos,
                                      const struct st_rope_params *rope, float eps,
                                      struct st_err *err)
{
    if (!st_op_ok(be, w, F32, 1) || w->ne[0] > INT32_MAX)
        return st_op_bad(err, "rms_norm_rope", "w", w);
    enum st_status rc = st_check_rms_norm(be, out, x, w, eps, err);
    if (rc == ST_OK)
        rc = st_check_rope(be, out, out, pos, (int32_t)w->ne[0], rope, err);
    return rc;
}

enum st_status st_check_moe_route(struct st_backend *be, ST_T sel, ST_T weights, ST_T x,
                                  ST_T router, const struct st_moe_route_params *rp,
                                  struct st_err *err)
{
    if (!rp)
        return st_err_set(err, ST_ERR_INVALID, "moe_route: no routing parameters");
    if (rp->gating != ST_MOE_GATING_SOFTMAX && rp->gating != ST_MOE_GATING_SIGMOID)
        return st_err_set(err, ST_ERR_INVALID, "moe_route: gating %d is not softmax (1) or "
                          "sigmoid (2)", (int)rp->gating);
    if (!isfinite(rp->scale) || !(rp->scale > 0.0f))
        return st_err_set(err, ST_ERR_INVALID, "moe_route: scale %g must be a number > 0",
                          (double)rp->scale);
    if (!st_op_ok(be, x, F32, 2))
        return st_op_bad(err, "moe_route", "x", x);
    if (!st_op_ok(be, router, ANY, 2) || router->ne[0] != x->ne[0] || !dot_rows(router))
        return st_op_bad(err, "moe_route", "router", router);
    if (!st_op_ok(be, sel, I32, 2) || sel->ne[1] != x->ne[1] || sel->ne[0] > router->ne[1])
        return st_op_bad(err, "moe_route", "sel", sel);
    if (!st_op_ok(be, weights, F32, 2) || weights->ne[0] != sel->ne[0] ||
        weights->ne[1] != x->ne[1])
        return st_op_bad(err, "moe_route", "weights", weights);
    if (rp->bias && (!st_op_ok(be, rp->bias, F32, 1) || rp->bias->ne[0] != router->ne[1]))
        return st_op_bad(err, "moe_route", "bias", rp->bias);
    return ST_OK;
}

enum st_status st_check_moe_ffn(struct st_backend *be, ST_T out, ST_T x, ST_T sel,
                                ST_T weights, ST_T gate, ST_T up, ST_T down,
                                struct st_err *err)
{
    if (!st_op_ok(be, x, F32, 2))
        return st_op_bad(err, "moe_ffn", "x", x);
    if (!st_op_ok(be, out, F32, 2) || out->ne[0] != x->ne[0] || out->ne[1] != x->ne[1] ||
        out->data == x->data)
        return st_op_bad(err, "moe_ffn", "out", out);
    if (!st_op_ok(be, sel, I32, 2) || sel->ne[1] != x->ne[1])
        return st_op_bad(err, "moe_ffn", "sel", sel);
    if (!st_op_ok(be, weights, F32, 2) || weights->ne[0] != sel->ne[0] ||
        weights->ne[1] != x->ne[1])
        return st_op_bad(err, "moe_ffn", "weights", weights);
    if (!st_op_ok(be, gate, ANY, 3) || gate->ne[0] != x->ne[0] || !dot_rows(gate))
        return st_op_bad(err, "moe_ffn", "gate", gate);
    if (!st_op_ok(be, up, ANY, 3) || up->ne[0] != gate->ne[0] || up->ne[1] != gate->ne[1] ||
        up->ne[2] != gate->ne[2])
        return st_op_bad(err, "moe_ffn", "up", up);
    if (!st_op_ok(be, down, ANY, 3) || down->ne[0] != gate->ne[1] || down->ne[1] != x->ne[0] ||
        down->ne[2] != gate->ne[2] || !dot_rows(down))
        return st_op_bad(err, "moe_ffn", "down", down);
    return ST_OK;
}
