/* cuda_ops.c -- the per-row and element-wise ops of the CUDA backend
 * (embed, rms_norm, add, silu_mul, rope) and attention.
 *
 * Shapes and dtypes were validated by backend.c (op_check.c) before these
 * run; what only the device can check (ids, slots, positions) is checked
 * by the kernels and reported at the next sync (kernels.h ST_KF_*). Each
 * op enqueues its launches on the backend's stream and returns.
 *
 * Attention split-K: chunks of split_len positions, at most ATT_MAX_SPLIT
 * of them, so a decode row at a long position is spread over many blocks;
 * a read chunk of more than ATT_SPLIT_ROWS rows already has a block per
 * (row, KV head) and uses one chunk. The split depends only on n_ctx and
 * the row count, never on positions, so captured graphs stay valid.
 */
#include "cuda_internal.h"

#define ATT_MIN_SPLIT_LEN 128
#define ATT_MAX_SPLIT 64
#define ATT_SPLIT_ROWS 64

static enum st_status launched(struct cuda_backend *cb, cudaError_t e, const char *what,
                               struct st_err *err)
{
    if (e == cudaErrorInvalidValue)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "cuda: %s: shape not supported by the kernel",
                          what);
    return cuda_status(cb, e, what, __FILE__, __LINE__, err);
}

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
    return launched(cb, st_kern_embed(out->data, table->data, (int)table->type,
                                      st_tensor_row_bytes(table), table->ne[1], ids->data,
                                      out->ne[1], out->ne[0], cb->err_flag, cb->stream),
                    "embed", err);
}

enum st_status cuda_op_rms_norm(struct st_backend *be, ST_T out, ST_T x, ST_T w, float eps,
                                struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);
    int64_t g = w->ne[0];

    if (rc != ST_OK)
        return rc;
    return launched(cb, st_kern_rms_norm(out->data, x->data, w->data, st_tensor_nelem(x) / g, g,
                                         eps, cb->stream), "rms_norm", err);
}

enum st_status cuda_op_add(struct st_backend *be, ST_T out, ST_T a, ST_T b, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    return launched(cb, st_kern_add(out->data, a->data, b->data, st_tensor_nelem(a), cb->stream),
                    "add", err);
}

enum st_status cuda_op_silu_mul(struct st_backend *be, ST_T out, ST_T gate, ST_T up,
                                struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    return launched(cb, st_kern_silu_mul(out->data, gate->data, up->data,
                                         st_tensor_nelem(gate), cb->stream), "silu_mul", err);
}

enum st_status cuda_op_rope(struct st_backend *be, ST_T out, ST_T x, ST_T pos, int32_t head_dim,
                            int32_t n_rot, float freq_base, float freq_scale, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    return launched(cb, st_kern_rope_neox(out->data, x->data, pos->data, x->ne[1], x->ne[0],
                                          head_dim, n_rot, freq_base, freq_scale, cb->err_flag,
                                          cb->stream), "rope", err);
}

/* Chunking of the positions: see the file comment. */
static void attn_split(int64_t n_rows, int64_t n_ctx, int32_t *n_split, int32_t *split_len)
{
    int64_t len = n_ctx, n = 1;

    if (n_rows <= ATT_SPLIT_ROWS) {
        len = (n_ctx + ATT_MAX_SPLIT - 1) / ATT_MAX_SPLIT;
        len = (len + 31) / 32 * 32;
        if (len < ATT_MIN_SPLIT_LEN)
            len = ATT_MIN_SPLIT_LEN;
        n = (n_ctx + len - 1) / len;
    }
    *n_split = (int32_t)n;
    *split_len = (int32_t)len;
}

enum st_status cuda_op_attention(struct st_backend *be, ST_T out, ST_T q, ST_T k, ST_T v,
                                 ST_T kcache, ST_T vcache, ST_T slot, ST_T pos, int32_t n_head,
                                 int32_t n_head_kv, float scale, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);
    struct st_kern_attn a = {
        .out = out->data, .q = q->data, .k = k->data, .v = v->data,
        .kc = kcache->data, .vc = vcache->data, .slot = slot->data, .pos = pos->data,
        .n_rows = q->ne[1], .n_ctx = kcache->ne[1], .n_slots = kcache->ne[2],
        .n_head = n_head, .n_kv = n_head_kv, .head_dim = (int32_t)(q->ne[0] / n_head),
        .scale = scale, .err_flag = cb->err_flag,
    };
    void *part = NULL;

    if (rc != ST_OK)
        return rc;
    if (!st_kern_attn_supported(a.head_dim, n_head / n_head_kv))
        return st_err_set(err, ST_ERR_UNSUPPORTED,
                          "attention: cuda kernel needs head_dim <= 256 and <= 16 query heads "
                          "per KV head (got %d, %d)", a.head_dim, n_head / n_head_kv);
    attn_split(a.n_rows, a.n_ctx, &a.n_split, &a.split_len);
    rc = cuda_scratch(cb, st_kern_attn_scratch_bytes(a.n_rows, n_head, a.head_dim, a.n_split),
                      &part, err);
    if (rc != ST_OK)
        return rc;
    a.part = part;
    return launched(cb, st_kern_attention(&a, cb->stream), "attention", err);
}
