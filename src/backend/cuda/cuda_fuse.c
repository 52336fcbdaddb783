/* cuda_fuse.c -- the CUDA backend's fusion switch, its launch counters and
 * the record of what the q8_1 activation buffer holds.
 *
 * A decode layer is microseconds of memory traffic per kernel, so the
 * number of launches decides its speed (docs/CUDA.md "Launches per
 * layer"). Three things here cut them:
 *
 * Quantized-activation reuse. The dp4a matmuls take q8_1 activations. The
 * q8_1 rows of one activation x live in 'actq' with a record (x's device
 * address, cols, rows). A matmul of the same x finds the record and skips
 * its quantize launch: h is quantized once for wk, wv, wq (and for the
 * MoE FFN after the router), not once per matmul. The record is dropped
 * whenever anything may write x's bytes: every op's outputs (checked by
 * address range), st_backend_write/copy, release, and graph_begin/end.
 * The decision depends only on the sequence of ops and their tensors,
 * never on data, so an eager run, its capture and its replays launch the
 * same kernels. actq is written only by the quantize/epilogue that sets
 * the record, so its contents are those the record describes.
 *
 * The norm epilogue (cuda_ops.c): a per-row RMSNorm of <= 16 rows also
 * writes the q8_1 of its output into actq and records it, so the matmul
 * after a norm launches no quantize at all.
 *
 * Counters: every launcher call adds the kernels it enqueues
 * (cuda_count); graph_begin/end record a captured step's kernels and ops,
 * and each replay adds them, so st_backend_stats() counts what the GPU
 * ran, replays included.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "strata/log.h"

void cuda_fuse_init(struct cuda_backend *cb)
{
    const char *v = getenv("STRATA_CUDA_FUSE");
    cb->fuse = !(v && strcmp(v, "0") == 0);
    st_log(ST_LOG_INFO, "cuda", "device %d: kernel fusion %s (STRATA_CUDA_FUSE)", cb->device,
           cb->fuse ? "on" : "off");
}

void cuda_actq_forget(struct cuda_backend *cb)
{
    memset(&cb->actq_rec, 0, sizeof(cb->actq_rec));
}

void cuda_actq_wrote(struct cuda_backend *cb, const void *p, size_t n)
{
    const struct cuda_actq_rec *r = &cb->actq_rec;
    const struct cuda_moe_rec *m = &cb->moe_rec;
    if (m->sel && p) {          /* the routing's sel: its groups go stale */
        uintptr_t a = (uintptr_t)m->sel, b = a + (size_t)(m->n * m->k) * sizeof(int32_t);
        if ((uintptr_t)p < b && a < (uintptr_t)p + n)
            cuda_moe_forget(cb);
    }
    if (!r->x || !p)
        return;
    uintptr_t a = (uintptr_t)r->x, b = a + (size_t)(r->cols * r->rows) * sizeof(float);
    uintptr_t c = (uintptr_t)p, d = c + n;
    if (c < b && a < d)
        cuda_actq_forget(cb);
}

enum st_status cuda_actq_buffer(struct cuda_backend *cb, int64_t cols, int64_t rows, void **out,
                                struct st_err *err)
{
    size_t want = st_kern_q8_1_row_bytes(cols) * (size_t)rows;
    if (want > cb->actq_size) {
        /* contents are lost (and graphs dropped) by the growth; size for a
         * whole decode batch at once so it grows rarely */
        size_t full = st_kern_q8_1_row_bytes(cols) * CUDA_MMV_MAX_ROWS;
        cuda_actq_forget(cb);
        enum st_status rc = cuda_grow(cb, &cb->actq, &cb->actq_size, want > full ? want : full,
                                      "q8_1 activation buffer", err);
        if (rc != ST_OK)
            return rc;
    }
    *out = cb->actq;
    return ST_OK;
}

void cuda_actq_set(struct cuda_backend *cb, const void *x, int64_t cols, int64_t rows)
{
    if (!cb->fuse) {
        cuda_actq_forget(cb);
        return;
    }
    cb->actq_rec.x = x;
    cb->actq_rec.cols = cols;
    cb->actq_rec.rows = rows;
}

enum st_status cuda_actq_quantize(struct cuda_backend *cb, const float *x, int64_t cols,
                                  int64_t rows, const void **q, size_t *stride,
                                  struct st_err *err)
{
    const struct cuda_actq_rec *r = &cb->actq_rec;
    void *buf;

    *stride = st_kern_q8_1_row_bytes(cols);
    if (cb->fuse && r->x == (const void *)x && r->cols == cols && rows <= r->rows) {
        *q = cb->actq;
        cb->quant_skipped++;
        return ST_OK;
    }
    enum st_status rc = cuda_actq_buffer(cb, cols, rows, &buf, err);
    if (rc != ST_OK)
        return rc;
    cuda_actq_forget(cb);   /* actq is overwritten */
    rc = ST_CUDA_LAUNCH(cb, st_kern_quantize_q8_1(buf, *stride, x, cols, rows, cb->stream),
                        "quantize_q8_1", err);
    if (rc != ST_OK)
        return rc;
    cuda_count(cb, cuda_row_chunks(rows));
    cuda_actq_set(cb, x, cols, rows);
    *q = buf;
    return ST_OK;
}

void cuda_stats(const struct st_backend *be, struct st_backend_stats *out)
{
    const struct cuda_backend *cb = (const struct cuda_backend *)(const void *)be;
    out->kernels = cb->kernels;
    out->quant_skipped = cb->quant_skipped;
    out->graph_replays = cb->graph_replays;
}

void cuda_log_step(struct cuda_backend *cb, const char *how, uint64_t kernels, uint64_t ops)
{
    if (st_log_enabled(ST_LOG_DEBUG))
        st_log(ST_LOG_DEBUG, "cuda", "device %d: step %s: %llu kernels, %llu ops (fusion %s)",
               cb->device, how, (unsigned long long)kernels, (unsigned long long)ops,
               cb->fuse ? "on" : "off");
}
