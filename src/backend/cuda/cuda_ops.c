/* cuda_ops.c -- the per-row and element-wise ops of the CUDA backend
 * (embed, rms_norm, add, silu_mul, rope, and the fused add_rms_norm and
 * rms_norm_rope). Attention is cuda_attention.c.
 *
 * Every op first tells cuda_fuse.c which bytes it writes (the q8_1
 * record), and counts the kernels it enqueues. Fused (STRATA_CUDA_FUSE
 * not 0): a per-row norm of <= 16 rows also writes the q8_1 of its output
 * (the next matmul launches no quantize), add_rms_norm and rms_norm_rope
 * are one kernel each; unfused they are the two launches of the plain
 * ops.
 *
 * Shapes and dtypes were validated by backend.c (op_check.c) before these
 * run; what only the device can check (ids, slots, positions) is checked
 * by the kernels and reported at the next sync (kernels.h ST_KF_*). Each
 * op enqueues its launches on the backend's stream and returns.
 */
#include "cuda_internal.h"

enum st_status cuda_op_embed(struct st_backend *be, ST_T out, ST_T table, ST_T ids,
                             struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    if (!st_kern_dequant_supported(table->type) || out->ne[0] % 32 != 0)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "embed: cuda has no kernel for %s rows of %lld",
                          cuda_type_name(table->type), (long long)out->ne[0]);
    cuda_actq_wrote_t(cb, out);
    cuda_count(cb, cuda_row_chunks(out->ne[1]));
    return ST_CUDA_LAUNCH(cb, st_kern_embed(out->data, table->data, (int)table->type,
                                            st_tensor_row_bytes(table), table->ne[1], ids->data,
                                            out->ne[1], out->ne[0], cb->err_flag, cb->stream),
                          "embed", err);
}

/* The q8_1 epilogue's target for a norm of x [E, n] over groups of g:
 * actq when fusion is on, the norm is per row (g = E, a multiple of 32)
 * and the rows are few enough for the dp4a matmuls; else NULL. */
static enum st_status epilogue_target(struct cuda_backend *cb, ST_T x, int64_t g, void **q,
                                      struct st_err *err)
{
    *q = NULL;
    if (!cb->fuse || g != x->ne[0] || g % 32 != 0 || x->ne[1] > CUDA_MMV_MAX_ROWS)
        return ST_OK;
    return cuda_actq_buffer(cb, g, x->ne[1], q, err);
}

/* out = rmsnorm(x (+ add)) * w: one launch, with the q8_1 epilogue when
 * it applies (then actq holds out's rows and the record says so). */
static enum st_status norm_into(struct cuda_backend *cb, ST_T out, ST_T x, ST_T add, ST_T w,
                                float eps, const char *what, struct st_err *err)
{
    const int64_t g = w->ne[0];
    void *q = NULL;
    enum st_status rc = epilogue_target(cb, x, g, &q, err);

    if (rc != ST_OK)
        return rc;
    cuda_actq_wrote_t(cb, out);
    if (add)
        cuda_actq_wrote_t(cb, x);
    if (q)
        cuda_actq_forget(cb);   /* actq is overwritten: nothing old stays valid */
    rc = ST_CUDA_LAUNCH(cb,
                        st_kern_rms_norm_ex(out->data, x->data, add ? add->data : NULL, w->data,
                                            st_tensor_nelem(x) / g, g, eps, q,
                                            st_kern_q8_1_row_bytes(g), cb->stream),
                        what, err);
    if (rc != ST_OK)
        return rc;
    cuda_count(cb, 1);
    if (q)   /* the next matmul of out finds its q8_1 rows (counted there) */
        cuda_actq_set(cb, out->data, g, x->ne[1]);
    return ST_OK;
}

enum st_status cuda_op_rms_norm(struct st_backend *be, ST_T out, ST_T x, ST_T w, float eps,
                                struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    return rc != ST_OK ? rc : norm_into(cb, out, x, NULL, w, eps, "rms_norm", err);
}

static enum st_status add_launch(struct cuda_backend *cb, ST_T out, ST_T a, ST_T b,
                                 struct st_err *err)
{
    cuda_actq_wrote_t(cb, out);
    cuda_count(cb, 1);
    if (b->ne[1] != a->ne[1])      /* one row added to every row (a bias) */
        return ST_CUDA_LAUNCH(cb, st_kern_add_row(out->data, a->data, b->data, a->ne[0], a->ne[1],
                                                  cb->stream), "add", err);
    return ST_CUDA_LAUNCH(cb,
                          st_kern_add(out->data, a->data, b->data, st_tensor_nelem(a), cb->stream),
                          "add", err);
}

enum st_status cuda_op_add(struct st_backend *be, ST_T out, ST_T a, ST_T b, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    return rc != ST_OK ? rc : add_launch(cb, out, a, b, err);
}

/* x += o; h = rmsnorm(x) * w: one kernel (with the q8_1 epilogue) when
 * fused, else the add and the norm as two launches. */
enum st_status cuda_op_add_rms_norm(struct st_backend *be, ST_T h, ST_T x, ST_T o, ST_T w,
                                    float eps, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    if (cb->fuse)
        return norm_into(cb, h, x, o, w, eps, "add_rms_norm", err);
    rc = add_launch(cb, x, x, o, err);
    return rc != ST_OK ? rc : norm_into(cb, h, x, NULL, w, eps, "rms_norm", err);
}

enum st_status cuda_op_silu_mul(struct st_backend *be, ST_T out, ST_T gate, ST_T up,
                                struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_actq_wrote_t(cb, out);
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb, st_kern_silu_mul(out->data, gate->data, up->data,
                                               st_tensor_nelem(gate), cb->stream), "silu_mul", err);
}

static enum st_status rope_launch(struct cuda_backend *cb, ST_T out, ST_T x, ST_T pos,
                                  int32_t head_dim, const struct st_rope_params *rope,
                                  struct st_err *err)
{
    cuda_actq_wrote_t(cb, out);
    cuda_count(cb, cuda_row_chunks(x->ne[1]));
    return ST_CUDA_LAUNCH(cb, st_kern_rope_neox(out->data, x->data, pos->data, x->ne[1], x->ne[0],
                                                head_dim, rope, cb->err_flag, cb->stream), "rope",
                          err);
}

enum st_status cuda_op_rope(struct st_backend *be, ST_T out, ST_T x, ST_T pos, int32_t head_dim,
                            const struct st_rope_params *rope, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    return rc != ST_OK ? rc : rope_launch(cb, out, x, pos, head_dim, rope, err);
}

/* Per-head norm + rope: one kernel when fused (head_dim <= 256), else
 * the two launches. */
enum st_status cuda_op_rms_norm_rope(struct st_backend *be, ST_T out, ST_T x, ST_T w, ST_T pos,
                                     const struct st_rope_params *rope, float eps,
                                     struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);
    const int32_t d = (int32_t)w->ne[0];

    if (rc != ST_OK)
        return rc;
    if (!cb->fuse || d > 256) {
        rc = norm_into(cb, out, x, NULL, w, eps, "rms_norm", err);
        return rc != ST_OK ? rc : rope_launch(cb, out, out, pos, d, rope, err);
    }
    cuda_actq_wrote_t(cb, out);
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb,
                          st_kern_rms_norm_rope(out->data, x->data, w->data, pos->data, x->ne[1],
                                                x->ne[0], d, rope, eps, cb->err_flag, cb->stream),
                          "rms_norm_rope", err);
}
