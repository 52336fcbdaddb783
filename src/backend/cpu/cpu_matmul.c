/* cpu_matmul.c -- quantized matmul: y[n, O] = x[n, I] . W[O, I]^T.
 *
 * One parallel region per matmul: (1) the activation rows are quantized
 * to the weight type's dot type (ENGINE.md 2.11) into scratch: by the
 * caller before the region for a few rows (decode: no barrier), else by
 * every thread for its share, then a barrier; (2) threads claim chunks of
 * weight rows from an atomic counter (so a descheduled worker does not
 * hold up the others: the region is barrier-free for few rows and the
 * caller may close it alone) and, tile by tile, run each weight row
 * against groups of up to kern->nx activation rows (1-2 rows: CPU_NW
 * weight rows per kernel call). So the weights stream from memory once per
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
#define ROW_ALIGN 16   /* weight rows per chunk boundary (cache-line friendly outputs) */
#define CHUNKS_PER_THREAD 16   /* dynamic chunks: small enough to rebalance */
#define SMALL_BATCH 16 /* activation rows quantized by the caller before the region */

/* Software prefetch of the weight rows a few rows ahead: the hardware
 * prefetcher alone leaves single-core streaming from DRAM well below what
 * the memory can give. The hint matters more than the distance: on the
 * development VM (Sapphire Rapids) prefetchnta made decode 1.4x SLOWER
 * than no prefetch at all (the lines skip L2, and the prefetches held the
 * L1 fill buffers: perf put 65% of decode on the prefetch loop), while
 * prefetcht2 (into L2) made it 1.3-1.5x faster than none. */
#define PF_LOCALITY 1   /* __builtin_prefetch locality 1 = prefetcht2 */
#define PF_ROWS 4       /* one row per dot call (prompt reads) */

static inline void prefetch_row(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        __builtin_prefetch(p + i, 0, PF_LOCALITY);
}

/* Rows ahead on the decode path (CPU_NW rows per call), measured per type
 * with strata bench tg64 on the medium preset: the Q6_K head and the K /
 * IQ3_S layers did best at 8-16 rows (5-10 KB ahead; IQ3_S lost 12% at 4),
 * the Q8_0 head at 4 (3.3 KB; 8 cost 7%, 16 cost 13%). */
static int64_t pf_rows_few(enum st_dtype t)
{
    return t == ST_DTYPE_Q8_0 ? 4 : 8;
}

/* Decode shape (1-2 activation rows, up to k->dotw_nx[wtype] where the
 * dotw kernel takes more in one pass): CPU_NW weight rows per call when
 * the level has a dotw kernel (independent chains, less per-row work). */
static void rows_few(const struct cpu_kernels *k, enum st_dtype wtype, const char *w,
                     size_t w_stride, int64_t n_in, int64_t o0, int64_t o1, const void *xq,
                     size_t xq_stride, int64_t n_rows, float *y, size_t ys)
{
    cpu_dot_fn dot = k->dot[wtype];
    cpu_dotw_fn dotw = k->dotw[wtype];
    int64_t o = o0, pf = pf_rows_few(wtype);

    for (; o + CPU_NW <= o1; o += CPU_NW) {
        const char *wr = w + (size_t)o * w_stride;
        if (o + CPU_NW + pf <= o1)
            prefetch_row(wr + (size_t)pf * w_stride, CPU_NW * w_stride);
        dotw(n_in, wr, w_stride, xq, xq_stride, (int)n_rows, y + o, ys);
    }
    for (; o < o1; o++)
        dot(n_in, w + (size_t)o * w_stride, xq, xq_stride, (int)n_rows, y + o, ys);
}

void cpu_matmul_rows(const struct cpu_kernels *k, enum st_dtype wtype, const void *w,
                     size_t w_stride, int64_t n_in, int64_t o0, int64_t o1, const void *xq,
                     size_t xq_stride, int64_t n_rows, float *y, size_t ys)
{
    cpu_dot_fn dot = k->dot[wtype];
    int64_t tile = (int64_t)(TILE_BYTES / (w_stride ? w_stride : 1));
    int nx = k->nx;

    if (k->dotw[wtype] && n_rows <= (k->dotw_nx[wtype] ? k->dotw_nx[wtype] : 2)) {
        rows_few(k, wtype, w, w_stride, n_in, o0, o1, xq, xq_stride, n_rows, y, ys);
        return;
    }
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

int64_t cpu_chunk_rows(int64_t n, int nth)
{
    int64_t c = n / ((int64_t)nth * CHUNKS_PER_THREAD);
    c = (c + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN;
    return c < ROW_ALIGN ? ROW_ALIGN : c;
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
    bool                      quantized; /* xq already filled by the caller */
    int64_t                   chunk;     /* weight rows per claimed chunk */
    atomic_llong              next;      /* next chunk */
};

static void mm_quantize(struct mm_job *j, int64_t lo, int64_t hi)
{
    for (int64_t r = lo; r < hi; r++)
        cpu_quantize_act(j->k, j->dtype, j->x + r * j->n_in,
                         (char *)j->xq + (size_t)r * j->xq_stride, j->n_in);
}

static void mm_task(void *ctx, int ith, int nth)
{
    struct mm_job *j = ctx;
    size_t rb = st_tensor_row_bytes(j->w);

    if (!j->quantized) {
        int64_t lo, hi;
        cpu_split(j->n_rows, ith, nth, &lo, &hi);
        mm_quantize(j, lo, hi);
        cpu_pool_barrier(j->pool);
    }
    for (;;) {
        int64_t lo = cpu_claim(&j->next) * j->chunk;
        if (lo >= j->n_out)
            break;
        int64_t hi = lo + j->chunk < j->n_out ? lo + j->chunk : j->n_out;
        cpu_matmul_rows(j->k, j->w->type, j->w->data, rb, j->n_in, lo, hi, j->xq, j->xq_stride,
                        j->n_rows, j->y, (size_t)j->n_out);
    }
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
    job = (struct mm_job){ .pool = cb->pool, .k = cb->kern, .w = w, .dtype = dt, .x = x,
                           .n_rows = n_rows, .n_in = w->ne[0], .n_out = w->ne[1],
                           .xq_stride = st_dtype_row_bytes(dt, w->ne[0]), .y = y };
    job.xq = cpu_scratch(cb, job.xq_stride * (size_t)n_rows);
    if (!job.xq)
        return st_err_set(err, ST_ERR_NOMEM, "matmul: no scratch for %lld rows",
                          (long long)n_rows);
    if (job.n_out < 2 * ROW_ALIGN)
        nth = 1;
    job.chunk = cpu_chunk_rows(job.n_out, nth);
    atomic_init(&job.next, 0);
    if (n_rows <= SMALL_BATCH || nth == 1) {
        /* a few rows: quantize here, then a barrier-free region */
        mm_quantize(&job, 0, n_rows);
        job.quantized = true;
        cpu_pool_run_dyn(cb->pool, mm_task, &job, nth);
    } else {
        cpu_pool_run(cb->pool, mm_task, &job, nth);
    }
    return ST_OK;
}

enum st_status cpu_op_matmul(struct st_backend *be, ST_T out, ST_T x, ST_T w,
                             struct st_err *err)
{
    return cpu_matmul_f32((struct cpu_backend *)be, out->data, x->data, x->ne[1], w, err);
}

/* The reference of matmul3: the three matmuls, in order. */
enum st_status cpu_op_matmul3(struct st_backend *be, ST_T out0, ST_T out1, ST_T out2, ST_T x,
                              ST_T w0, ST_T w1, ST_T w2, struct st_err *err)
{
    enum st_status rc = cpu_op_matmul(be, out0, x, w0, err);
    if (rc == ST_OK)
        rc = cpu_op_matmul(be, out1, x, w1, err);
    return rc == ST_OK ? cpu_op_matmul(be, out2, x, w2, err) : rc;
}
