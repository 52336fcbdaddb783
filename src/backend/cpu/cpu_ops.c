/* cpu_ops.c -- the element-wise and per-row ops of the CPU backend:
 * embedding lookup, RMSNorm (per row or per head), residual add, SwiGLU's
 * SiLU-mul and NEOX RoPE.
 *
 * These touch a few KB per row, so at decode (1-4 rows) they run on the
 * calling thread; only a prompt chunk is big enough to split across the
 * pool (cpu_parallel_rows decides). Shapes are validated before dispatch
 * (../check.c); integer inputs (ids, positions) are checked here because
 * only the backend can read them.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"

#define PAR_MIN_WORK 32768   /* elements below which a dispatch costs more than it saves */

struct rows_job {
    cpu_rows_fn fn;
    void       *ctx;
    int64_t     n;
};

static void rows_task(void *ctx, int ith, int nth)
{
    struct rows_job *job = ctx;
    int64_t lo, hi;
    cpu_split(job->n, ith, nth, &lo, &hi);
    if (lo < hi)
        job->fn(job->ctx, lo, hi);
}

void cpu_parallel_rows(struct cpu_backend *cb, int64_t n_rows, int64_t work_per_row,
                       cpu_rows_fn fn, void *ctx)
{
    struct rows_job job = { fn, ctx, n_rows };
    int nth = cb->n_threads;

    if (n_rows * work_per_row < PAR_MIN_WORK || n_rows < 2)
        nth = 1;
    if (nth > n_rows)
        nth = (int)n_rows;
    cpu_pool_run(cb->pool, rows_task, &job, nth);
}

static const int32_t *i32_data(const struct st_tensor *t)
{
    return (const int32_t *)t->data;
}

static enum st_status check_i32_range(const struct st_tensor *t, int64_t lim, const char *op,
                                      const char *what, struct st_err *err)
{
    const int32_t *v = i32_data(t);
    for (int64_t i = 0; i < st_tensor_nelem(t); i++)
        if (v[i] < 0 || v[i] >= lim)
            return st_err_set(err, ST_ERR_INVALID, "%s: %s[%lld] = %d is outside [0, %lld)", op,
                              what, (long long)i, v[i], (long long)lim);
    return ST_OK;
}

/* ---- embed -------------------------------------------------------------- */

struct embed_ctx {
    const struct st_tensor *out, *table, *ids;
};

static void embed_rows(void *ctxp, int64_t r0, int64_t r1)
{
    const struct embed_ctx *c = ctxp;
    size_t rb = st_tensor_row_bytes(c->table);
    int64_t e = c->out->ne[0];
    for (int64_t r = r0; r < r1; r++) {
        const char *src = (const char *)c->table->data + (size_t)i32_data(c->ids)[r] * rb;
        st_dequant_row(c->table->type, src, (float *)c->out->data + r * e, e);
    }
}

enum st_status cpu_op_embed(struct st_backend *be, ST_T out, ST_T table, ST_T ids,
                            struct st_err *err)
{
    struct embed_ctx c = { out, table, ids };
    enum st_status rc = check_i32_range(ids, table->ne[1], "embed", "ids", err);

    if (rc != ST_OK)
        return rc;
    if (!st_quant_supported(table->type))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "embed: no dequantizer for type %u",
                          (unsigned)table->type);
    cpu_parallel_rows((struct cpu_backend *)be, out->ne[1], out->ne[0] * 4, embed_rows, &c);
    return ST_OK;
}

/* ---- rms_norm ----------------------------------------------------------- */

struct norm_ctx {
    float *out;
    const float *x, *w;
    int64_t g;      /* group size */
    float eps;
};

static void norm_rows(void *ctxp, int64_t r0, int64_t r1)
{
    const struct norm_ctx *c = ctxp;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = c->x + r * c->g;
        float *y = c->out + r * c->g;
        double sum = 0.0;
        for (int64_t i = 0; i < c->g; i++)
            sum += (double)x[i] * (double)x[i];
        float scale = 1.0f / sqrtf((float)(sum / (double)c->g) + c->eps);
        for (int64_t i = 0; i < c->g; i++)
            y[i] = x[i] * scale * c->w[i];
    }
}

enum st_status cpu_op_rms_norm(struct st_backend *be, ST_T out, ST_T x, ST_T w, float eps,
                               struct st_err *err)
{
    struct norm_ctx c = { out->data, x->data, w->data, w->ne[0], eps };
    (void)err;
    /* Groups are contiguous, so a [C, n] tensor is (C/G)*n groups of G. */
    cpu_parallel_rows((struct cpu_backend *)be, st_tensor_nelem(x) / c.g, c.g, norm_rows, &c);
    return ST_OK;
}

/* ---- add, silu_mul ------------------------------------------------------ */

struct ew_ctx {
    float *out;
    const float *a, *b;
    int64_t width;
    bool b_row;      /* add: b is one row added to every row (a bias) */
};

static void add_rows(void *ctxp, int64_t r0, int64_t r1)
{
    const struct ew_ctx *c = ctxp;
    if (c->b_row) {
        for (int64_t r = r0; r < r1; r++)
            for (int64_t i = 0; i < c->width; i++)
                c->out[r * c->width + i] = c->a[r * c->width + i] + c->b[i];
        return;
    }
    for (int64_t i = r0 * c->width; i < r1 * c->width; i++)
        c->out[i] = c->a[i] + c->b[i];
}

static void silu_mul_rows(void *ctxp, int64_t r0, int64_t r1)
{
    const struct ew_ctx *c = ctxp;
    for (int64_t i = r0 * c->width; i < r1 * c->width; i++) {
        float g = c->a[i];
        c->out[i] = g / (1.0f + expf(-g)) * c->b[i];
    }
}

enum st_status cpu_op_add(struct st_backend *be, ST_T out, ST_T a, ST_T b, struct st_err *err)
{
    struct ew_ctx c = { out->data, a->data, b->data, a->ne[0], b->ne[1] != a->ne[1] };
    (void)err;
    cpu_parallel_rows((struct cpu_backend *)be, a->ne[1], a->ne[0], add_rows, &c);
    return ST_OK;
}

enum st_status cpu_op_silu_mul(struct st_backend *be, ST_T out, ST_T gate, ST_T up,
                               struct st_err *err)
{
    struct ew_ctx c = { out->data, gate->data, up->data, gate->ne[0], false };
    (void)err;
    cpu_parallel_rows((struct cpu_backend *)be, gate->ne[1], gate->ne[0] * 8, silu_mul_rows, &c);
    return ST_OK;
}

/* ---- rope (NEOX) -------------------------------------------------------- */

struct rope_ctx {
    float *out;
    const float *x;
    const int32_t *pos;
    int64_t width;
    int32_t head_dim, n_rot;
    const float *inv_freq;  /* [n_rot/2]: st_rope_inv_freq (freq_scale * base^(-2i/n_rot)
                             * without YaRN) */
    float mscale;           /* cos/sin multiplier: st_rope_mscale (1 without YaRN) */
};

static void rope_rows(void *ctxp, int64_t r0, int64_t r1)
{
    const struct rope_ctx *c = ctxp;
    int half = c->n_rot / 2;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = c->x + r * c->width;
        float *y = c->out + r * c->width;
        float p = (float)c->pos[r];
        for (int i = 0; i < half; i++) {
            float theta = p * c->inv_freq[i];
            float cs = cosf(theta) * c->mscale, sn = sinf(theta) * c->mscale;
            for (int64_t h = 0; h < c->width; h += c->head_dim) {
                float x0 = x[h + i], x1 = x[h + i + half];
                y[h + i] = x0 * cs - x1 * sn;
                y[h + i + half] = x0 * sn + x1 * cs;
            }
        }
        if (y != x)
            for (int64_t h = 0; h < c->width; h += c->head_dim)
                memcpy(y + h + c->n_rot, x + h + c->n_rot,
                       (size_t)(c->head_dim - c->n_rot) * sizeof(float));
    }
}

/* The per-pair frequencies come from strata/rope.h (one formula for every
 * scaling); x * 1.0f is exact, so mscale 1 leaves none/linear bit for bit. */
enum st_status cpu_op_rope(struct st_backend *be, ST_T out, ST_T x, ST_T pos, int32_t head_dim,
                           const struct st_rope_params *rope, struct st_err *err)
{
    float inv_freq[512];
    int32_t n_rot = rope->n_rot;
    struct rope_ctx c = { out->data, x->data, pos->data, x->ne[0], head_dim, n_rot, inv_freq,
                          st_rope_mscale(rope) };
    enum st_status rc = check_i32_range(pos, INT32_MAX, "rope", "pos", err);

    if (rc != ST_OK)
        return rc;
    if (n_rot / 2 > (int32_t)ST_ARRAY_LEN(inv_freq))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "rope: n_rot %d is above 1024", n_rot);
    for (int i = 0; i < n_rot / 2; i++)
        inv_freq[i] = st_rope_inv_freq(rope, i);
    cpu_parallel_rows((struct cpu_backend *)be, x->ne[1], x->ne[0] * 4, rope_rows, &c);
    return ST_OK;
}

/* ---- fused ops: the exact compositions ---------------------------------- */

/* x += o; h = rmsnorm(x) * w: the two ops in order, so the CPU result is
 * bit for bit that of add then rms_norm (the forward tests compare exact
 * values). A device backend runs one kernel. */
enum st_status cpu_op_add_rms_norm(struct st_backend *be, ST_T h, ST_T x, ST_T o, ST_T w,
                                   float eps, struct st_err *err)
{
    enum st_status rc = cpu_op_add(be, x, x, o, err);
    return rc != ST_OK ? rc : cpu_op_rms_norm(be, h, x, w, eps, err);
}

/* Per-head rmsnorm then NEOX rope. Positions are checked before the norm
 * writes anything, so a bad position leaves out untouched. */
enum st_status cpu_op_rms_norm_rope(struct st_backend *be, ST_T out, ST_T x, ST_T w, ST_T pos,
                                    const struct st_rope_params *rope, float eps,
                                    struct st_err *err)
{
    ST_TRY(check_i32_range(pos, INT32_MAX, "rope", "pos", err));
    ST_TRY(cpu_op_rms_norm(be, out, x, w, eps, err));
    return cpu_op_rope(be, out, out, pos, (int32_t)w->ne[0], rope, err);
}
