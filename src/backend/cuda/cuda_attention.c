/* cuda_attention.c -- the attention op of the CUDA backend: which of the
 * two kernels of kernels/attention*.cu a step takes, and how a decode
 * row's context is split (docs/CUDA.md "Attention").
 *
 * Steps of more than ATT_TILED_MIN_ROWS rows (prompt chunks) take the
 * tiled kernel when the shape and the device allow it (tensor cores,
 * sm_80+); the others, and every decode-shaped step, take the split
 * kernel: each row's positions 0..pos cut into n_split chunks on the
 * device, one block per (row, KV head, chunk), merged by log-sum-exp.
 * The device also decides, per row, how many chunks hold positions: the
 * others exit at once, and a row of one chunk skips the merge.
 *
 * Rows of at most cb->attn_short positions (ATT_SHORT_MAX unless
 * STRATA_CUDA_ATTN_SHORT says otherwise; decided on the device per row)
 * take the short path of the same launch: the row's blocks split its
 * query heads instead of its positions, so a young slot runs on n_head
 * blocks of 4 busy warps instead of n_kv blocks of one busy warp each.
 *
 * n_split fills the GPU about twice with blocks: 2 * SMs / (rows * KV
 * heads), at least 1, at most ATT_MAX_SPLIT and at most one chunk per
 * ATT_MIN_SPLIT_LEN positions of n_ctx. It depends on n_rows, n_ctx and
 * the device only, never on positions, so a captured graph (keyed by the
 * row count) stays valid as the slots grow.
 */
#include <errno.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include "strata/log.h"

/* Rows of up to this many positions take the short path: an estimate from
 * the work per warp (docs/CUDA.md "Attention"), to be set from attn_check's
 * A/B timings on the GPU. */
#define ATT_SHORT_MAX 256
#define ATT_MIN_SPLIT_LEN 64
#define ATT_MAX_SPLIT 128
#define ATT_TILED_MIN_ROWS 16

static int32_t attn_n_split(int64_t n_rows, int64_t n_ctx, int32_t n_kv, int n_sm)
{
    const int64_t blocks = n_rows * n_kv, want = 2 * (int64_t)(n_sm > 0 ? n_sm : 1);
    int64_t n = (want + blocks - 1) / blocks;
    const int64_t most = (n_ctx + ATT_MIN_SPLIT_LEN - 1) / ATT_MIN_SPLIT_LEN;

    if (n > most)
        n = most;
    if (n > ATT_MAX_SPLIT)
        n = ATT_MAX_SPLIT;
    return n < 1 ? 1 : (int32_t)n;
}

int32_t cuda_attn_short_max(int device)
{
    const char *v = getenv("STRATA_CUDA_ATTN_SHORT");
    int32_t n = ATT_SHORT_MAX;

    if (v && *v) {
        char *end;
        errno = 0;
        const long x = strtol(v, &end, 10);
        if (errno == 0 && *end == '\0' && x >= 0 && x <= 1 << 20)
            n = (int32_t)x;
        else
            st_log(ST_LOG_WARN, "cuda", "STRATA_CUDA_ATTN_SHORT=%s is not a count of "
                   "positions (0..1048576): using %d", v, n);
    }
    if (n > 0)
        st_log(ST_LOG_INFO, "cuda", "device %d: attention's short path for rows of <= %d "
               "positions (STRATA_CUDA_ATTN_SHORT)", device, n);
    else
        st_log(ST_LOG_INFO, "cuda", "device %d: attention's short path off "
               "(STRATA_CUDA_ATTN_SHORT=0)", device);
    return n;
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
        .scale = scale, .n_split = 1, .split_min = ATT_MIN_SPLIT_LEN,
        .short_max = cb->attn_short, .err_flag = cb->err_flag,
    };
    const int32_t group = n_head / n_head_kv;

    if (rc != ST_OK)
        return rc;
    a.kq8 = kcache->type == ST_DTYPE_Q8_0;
    a.vq8 = vcache->type == ST_DTYPE_Q8_0;
    if ((!a.kq8 && kcache->type != ST_DTYPE_F16) || (!a.vq8 && vcache->type != ST_DTYPE_F16))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "attention: the cuda backend's KV cache is "
                          "f16 or q8_0");
    if ((a.kq8 || a.vq8) && !st_kern_attn_q8_supported(a.head_dim))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "attention: a q8_0 KV cache on cuda needs a "
                          "head dim of 32, 64, 128 or 256 (got %d)", a.head_dim);
    if (!st_kern_attn_supported(a.head_dim, group))
        return st_err_set(err, ST_ERR_UNSUPPORTED,
                          "attention: cuda kernel needs head_dim <= 256 and <= 16 query heads "
                          "per KV head (got %d, %d)", a.head_dim, group);
    a.tiled = a.n_rows > ATT_TILED_MIN_ROWS &&
              st_kern_attn_tiled_supported(a.head_dim, group, cb->cc_major);
    if (!a.tiled) {
        void *part = NULL;
        a.n_split = attn_n_split(a.n_rows, a.n_ctx, n_head_kv, cb->n_sm);
        rc = cuda_scratch(cb, st_kern_attn_scratch_bytes(a.n_rows, n_head, a.head_dim,
                                                         a.n_split), &part, err);
        if (rc != ST_OK)
            return rc;
        a.part = part;
    }
    /* the q8_1 epilogue of the merge: the wo matmul then quantizes nothing */
    if (!a.tiled && cb->fuse && a.n_rows <= CUDA_MMV_MAX_ROWS && a.head_dim % 32 == 0) {
        rc = cuda_actq_buffer(cb, out->ne[0], a.n_rows, &a.q8, err);
        if (rc != ST_OK)
            return rc;
        a.q8_stride = st_kern_q8_1_row_bytes(out->ne[0]);
        cuda_actq_forget(cb);   /* actq is overwritten */
    }
    cuda_actq_wrote_t(cb, out);
    cuda_actq_wrote_t(cb, kcache);
    cuda_actq_wrote_t(cb, vcache);
    /* kv_write, then split + merge or one tiled launch */
    cuda_count(cb, cuda_row_chunks(a.n_rows) + (a.tiled ? 1 : 2));
    rc = ST_CUDA_LAUNCH(cb, st_kern_attention(&a, cb->stream), "attention", err);
    if (rc == ST_OK && a.q8)
        cuda_actq_set(cb, out->data, out->ne[0], a.n_rows);
    return rc;
}
