/* cuda_matmul3.c -- matmul3 (an attention layer's wq, wk, wv of one x) on
 * CUDA.
 *
 * A decode step's wk and wv are 512 x 2048 at the a3b shape: alone each
 * fills 128 blocks, fewer than the SMs, and reaches a few percent of the
 * bandwidth. With fusion on, a decode-sized step (<= CUDA_MMV_MAX_ROWS
 * rows) whose three weights share a quantized type takes x's q8_1 rows
 * once (usually the norm's epilogue left them: no launch at all) and ONE
 * multi-mode mmv launch (kernels/mmvq.cu) whose grid holds the blocks of
 * all three matrices. Otherwise (STRATA_CUDA_FUSE=0, float or mixed
 * types, prompt chunks) it is the three matmuls of cuda_op_matmul, in
 * order. Both give the same bits: in a multi launch each matrix's outputs
 * are those of a launch of that matrix alone.
 */
#include "cuda_internal.h"

static bool one_launch(const struct cuda_backend *cb, ST_T x, ST_T const *ws)
{
    const int64_t n = x->ne[1], I = x->ne[0];
    const int type = (int)ws[0]->type;

    if (!cb->fuse || n > CUDA_MMV_MAX_ROWS || !st_kern_mmv_quantized(type) ||
        !st_kern_mmv_supported(type, I) || I > 0x7fffffff)
        return false;
    for (int i = 0; i < 3; i++)
        if ((int)ws[i]->type != type || ws[i]->ne[1] > 0x7fffffff)
            return false;
    return true;
}

enum st_status cuda_op_matmul3(struct st_backend *be, ST_T out0, ST_T out1, ST_T out2, ST_T x,
                               ST_T w0, ST_T w1, ST_T w2, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);
    ST_T outs[3] = { out0, out1, out2 };
    ST_T ws[3] = { w0, w1, w2 };

    if (rc != ST_OK)
        return rc;
    if (!one_launch(cb, x, ws)) {
        for (int i = 0; i < 3 && rc == ST_OK; i++) {
            cuda_actq_wrote_t(cb, outs[i]);
            rc = cuda_matmul_raw(cb, outs[i]->data, x->data, x->ne[1], ws[i], err);
        }
        return rc;
    }
    struct st_kern_mmv_args a = {
        .type = (int)w0->type, .w = w0->data, .w_row_bytes = st_tensor_row_bytes(w0),
        .n_in = x->ne[0], .n_out = w0->ne[1], .y = out0->data, .y_stride = w0->ne[1],
        .n_rows = x->ne[1], .n_parts = 3,
        .part_w = { w1->data, w2->data }, .part_n_out = { w1->ne[1], w2->ne[1] },
        .part_y = { out1->data, out2->data }, .part_y_stride = { w1->ne[1], w2->ne[1] },
    };
    for (int i = 0; i < 3; i++)
        cuda_actq_wrote_t(cb, outs[i]);
    /* the q8_1 rows of x: reused when actq holds them (the norm's epilogue) */
    rc = cuda_actq_quantize(cb, x->data, a.n_in, x->ne[1], &a.x, &a.x_stride, err);
    if (rc != ST_OK)
        return rc;
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb, st_kern_mmv(&a, cb->stream), "mmv (matmul3)", err);
}
