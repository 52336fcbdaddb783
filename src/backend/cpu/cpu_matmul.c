/* cpu_matmul.c -- quantized matmul: y[n, O] = x[n, I] . W[O, I]^T.
 *
 * One parallel region per matmul: (1) every thread quantizes its share of
 * the activation rows to the weight type's dot type (ENGINE.md 2.11) into
 * scratch; barrier; (2) every thread takes a contiguous range of weight
 * rows and, tile by tile, runs each weight row against groups of up to
 * kern->nx activation rows. So the weights stream from memory once per
 * step whatever the batch, and each decoded block serves nx rows: that is
 * why four slots decode faster together than one after another.
 *
 * Tiles: a tile is as many weight rows as fit in about 32 KB, so while the
 * activation groups cycle over it the tile stays in L1/L2.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define TILE_BYTES (32 * 1024)
#define ROW_ALIGN 16   /* weight rows per thread boundary (cache-line friendly) */

/* Software prefetch of the weight row PF_ROWS ahead on the first pass over
 * a tile: the hardware prefetcher alone leaves single-core streaming from
 * DRAM well below what the memory can give. */
#define PF_ROWS 4

static inline void prefetch_row(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        __builtin_prefetch(p + i, 0, 0);
}

void cpu_matmul_rows(const struct cpu_kernels *k, enum st_dtype wtype, const void *w,
                     size_t w_stride, int64_t n_in, int64_t o0, int64_t o1, const void *xq,
                     size_t xq_stride, int64_t n_rows, float *y, size_t ys)
{
    cpu_dot_fn dot = k->dot[wtype];
    int64_t tile = (int64_t)(TILE_BYTES / (w_stride ? w_stride : 1));
    int nx = k->nx;

    if (tile < 1)
        tile = 1;
    if (n_rows <= nx)
        tile = o1 - o0;      /* one activation group: just stream the rows */
    for (int64_t t0 = o0; t0 < o1; t0 += tile) {
        int64_t t1 = t0 + tile < o1 ? t0 + tile : o1;
        for (int64_t r = 0; r < n_rows; r += nx) {
            int cnt = (int)(n_rows - r < nx ? n_rows - r : nx);
            const char *xr = (const char *)xq + (size_t)r * xq_stride;
            float *yr = y + (size_t)r * ys;
            for (int64_t o = t0; o < t1; o++) {
                const char *wr = (const char *)w + (size_t)o * w_stride;
                if (r == 0 && o + PF_ROWS < o1)
                    prefetch_row(wr + PF_ROWS * w_stride, w_stride);
                dot(n_in, wr, xr, xq_stride, cnt, yr + o, ys);
            }
        }
    }
}

/* Range [lo, hi) of 'n' weight rows for thread ith, on ROW_ALIGN bounds. */
static void split_rows(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi)
{
    int64_t blocks = (n + ROW_ALIGN - 1) / ROW_ALIGN;
    cpu_split(blocks, ith, nth, lo, hi);
    *lo *= ROW_ALIGN;
    *hi *= ROW_ALIGN;
    if (*hi > n)
        *hi = n;
    if (*lo > n)
        *lo = n;
}

struct mm_job {
    struct cpu_pool          *pool;
    const struct cpu_kernels *k;
    const struct st_tensor   *w;
    enum st_dtype             dtype;   /* dot type */
    const float              *x;
    int64_t                   n_rows, n_in, n_out;
    void                     *xq;
    size_t                    xq_stride;
    float                    *y;
};

static void mm_task(void *ctx, int ith, int nth)
{
    struct mm_job *j = ctx;
    int64_t lo, hi;

    cpu_split(j->n_rows, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++)
        cpu_quantize_act(j->k, j->dtype, j->x + r * j->n_in, (char *)j->xq + (size_t)r * j->xq_stride,
                         j->n_in);
    cpu_pool_barrier(j->pool);
    split_rows(j->n_out, ith, nth, &lo, &hi);
    if (lo < hi)
        cpu_matmul_rows(j->k, j->w->type, j->w->data, st_tensor_row_bytes(j->w), j->n_in, lo, hi,
                        j->xq, j->xq_stride, j->n_rows, j->y, (size_t)j->n_out);
}

static enum st_status unsupported(const char *op, enum st_dtype t, struct st_err *err)
{
    const struct st_dtype_info *info = st_dtype_info((uint32_t)t);
    return st_err_set(err, ST_ERR_UNSUPPORTED, "%s: the cpu backend has no kernel for %s", op,
                      info ? info->name : "this type");
}

enum st_status cpu_matmul_f32(struct cpu_backend *cb, float *y, const float *x,
                                 int64_t n_rows, const struct st_tensor *w, struct st_err *err)
{
    enum st_dtype dt = cpu_dot_type(w->type);
    struct mm_job job;
    int nth = cb->n_threads;

    if (dt == ST_DTYPE_COUNT_ || !cb->kern->dot[w->type])
        return unsupported("matmul", w->type, err);
    job = (struct mm_job){ cb->pool, cb->kern, w, dt, x, n_rows, w->ne[0], w->ne[1], NULL,
                           st_dtype_row_bytes(dt, w->ne[0]), y };
    job.xq = cpu_scratch(cb, job.xq_stride * (size_t)n_rows);
    if (!job.xq)
        return st_err_set(err, ST_ERR_NOMEM, "matmul: no scratch for %lld rows",
                          (long long)n_rows);
    if (job.n_out < 2 * ROW_ALIGN)
        nth = 1;
    cpu_pool_run(cb->pool, mm_task, &job, nth);
    return ST_OK;
}

enum st_status cpu_op_matmul(struct st_backend *be, ST_T out, ST_T x, ST_T w,
                             struct st_err *err)
{
    return cpu_matmul_f32((struct cpu_backend *)be, out->data, x->data, x->ne[1], w, err);
}
