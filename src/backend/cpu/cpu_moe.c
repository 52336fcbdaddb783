/* cpu_moe.c -- mixture-of-experts routing and the expert FFN on the CPU.
 *
 * Routing is a matmul with the (F32) router plus a per-row softmax or
 * sigmoid, an optionally biased top-k and the weight normalization
 * (tiny). The expert FFN groups the step's (row, expert) pairs by expert,
 * gathers each group's quantized activation rows into one contiguous
 * block, and runs every active expert's gate, up and down projections as
 * small batched matmuls inside ONE parallel region: each thread takes its
 * share of every expert's output rows, so a decode step streams each
 * chosen expert slab once, split across the threads, and the pool is
 * entered once per layer instead of three times per expert.
 *
 * Region phases (barriers between): quantize x rows -> gather pairs ->
 * gate and up -> SiLU-mul and quantize -> down -> weighted sum per row.
 * A few rows (decode) take a barrier-free variant instead: moe_few_rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---- MoE routing ------------------------------------------------------- */

/* One row: p = gating(logits) into p[X]; top-k of p + bias (ties to the
 * lower index) into sel; w = the chosen p, renormalized (clamped sum) when
 * rp->norm, times rp->scale when it is not 1. The softmax path with norm
 * and scale 1 is, operation for operation, the qwen3moe routing it was. */
static void route_row(const float *logits, int64_t n_exp, int64_t k,
                      const struct st_moe_route_params *rp, const float *bias, int32_t *sel,
                      float *wts, float *p)
{
    float wsum = 0.0f;
    if (rp->gating == ST_MOE_GATING_SIGMOID) {
        for (int64_t e = 0; e < n_exp; e++)
            p[e] = 1.0f / (1.0f + expf(-logits[e]));
    } else {
        float mx = logits[0], sum = 0.0f;
        for (int64_t e = 1; e < n_exp; e++)
            mx = logits[e] > mx ? logits[e] : mx;
        for (int64_t e = 0; e < n_exp; e++) {
            p[e] = expf(logits[e] - mx);
            sum += p[e];
        }
        for (int64_t e = 0; e < n_exp; e++)
            p[e] /= sum;
    }
    for (int64_t j = 0; j < k; j++) {
        int64_t best = -1;
        float best_v = 0.0f;
        for (int64_t e = 0; e < n_exp; e++) {
            bool taken = false;
            for (int64_t q = 0; q < j; q++)
                taken |= sel[q] == e;
            float v = bias ? p[e] + bias[e] : p[e];
            if (!taken && (best < 0 || v > best_v)) {
                best = e;
                best_v = v;
            }
        }
        sel[j] = (int32_t)best;
        wts[j] = p[best];
        wsum += p[best];
    }
    if (rp->norm) {
        if (wsum < 6.1035e-5f)
            wsum = 6.1035e-5f;
        for (int64_t j = 0; j < k; j++)
            wts[j] /= wsum;
    }
    if (rp->scale != 1.0f)
        for (int64_t j = 0; j < k; j++)
            wts[j] *= rp->scale;
}

enum st_status cpu_op_moe_route(struct st_backend *be, ST_T sel, ST_T weights, ST_T x,
                                ST_T router, const struct st_moe_route_params *rp,
                                struct st_err *err)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    int64_t n = x->ne[1], n_exp = router->ne[1], k = sel->ne[0];
    const float *bias = rp->bias ? rp->bias->data : NULL;
    /* not in the scratch: the router matmul quantizes x there */
    float *logits = malloc((size_t)(n * n_exp + n_exp) * sizeof(float));
    enum st_status rc;

    if (!logits)
        return st_err_set(err, ST_ERR_NOMEM, "moe_route: no memory for %lld logits",
                          (long long)(n * n_exp));
    rc = cpu_matmul_f32(cb, logits, x->data, n, router, err);
    if (rc == ST_OK)
        for (int64_t r = 0; r < n; r++)
            route_row(logits + r * n_exp, n_exp, k, rp, bias, (int32_t *)sel->data + r * k,
                      (float *)weights->data + r * k, logits + n * n_exp);
    free(logits);
    return rc;
}

/* ---- expert FFN -------------------------------------------------------- */

struct moe_job {
    struct cpu_pool          *pool;
    const struct cpu_kernels *k;
    const struct st_tensor   *gate, *up, *down;
    int64_t                   n, n_embd, n_ff, n_exp, n_used;
    const float              *x;
    float                    *out;
    const float              *wts;      /* [n_used, n] */
    const int32_t            *start;    /* [n_exp + 1]: pairs of expert e are [start[e], start[e+1]) */
    const int32_t            *pair_row; /* [n * n_used]: activation row of pair p */
    const int32_t            *pair_of;  /* [n * n_used]: pair of (row r, choice j) at r*n_used + j */
    enum st_dtype             dt_in, dt_down;   /* dot types of gate/up and of down */
    size_t                    xs_in, xs_down;   /* quantized row bytes */
    char                     *xq;       /* [n] rows of dt_in */
    char                     *xg;       /* [pairs] rows of dt_in, expert order */
    float                    *hg, *hu;  /* [pairs, n_ff] */
    char                     *aq;       /* [pairs] rows of n_ff in dt_down */
    float                    *yd;       /* [pairs, n_embd] */
};

static const char *slab(const struct st_tensor *t, int64_t e)
{
    return (const char *)t->data + (size_t)e * st_tensor_row_bytes(t) * (size_t)t->ne[1];
}

static void moe_ffn_pass(struct moe_job *j, int ith, int nth, int which)
{
    const struct st_tensor *w = which == 0 ? j->gate : which == 1 ? j->up : j->down;
    int64_t n_out = w->ne[1], n_in = w->ne[0], lo, hi;
    size_t rb = st_tensor_row_bytes(w);

    cpu_split(n_out, ith, nth, &lo, &hi);
    for (int64_t e = 0; e < j->n_exp && lo < hi; e++) {
        int64_t p0 = j->start[e], cnt = j->start[e + 1] - p0;
        if (cnt == 0)
            continue;
        if (which < 2)
            cpu_matmul_rows(j->k, w->type, slab(w, e), rb, n_in, lo, hi, j->xg + p0 * j->xs_in,
                            j->xs_in, cnt, (which == 0 ? j->hg : j->hu) + p0 * n_out,
                            (size_t)n_out);
        else
            cpu_matmul_rows(j->k, w->type, slab(w, e), rb, n_in, lo, hi,
                            j->aq + p0 * j->xs_down, j->xs_down, cnt, j->yd + p0 * n_out,
                            (size_t)n_out);
    }
}

static void moe_rows_quantize(const struct moe_job *j, int64_t lo, int64_t hi)
{
    for (int64_t r = lo; r < hi; r++)
        cpu_quantize_act(j->k, j->dt_in, j->x + r * j->n_embd, j->xq + r * j->xs_in, j->n_embd);
}

static void moe_gather(const struct moe_job *j, int64_t lo, int64_t hi)
{
    for (int64_t p = lo; p < hi; p++)
        memcpy(j->xg + p * j->xs_in, j->xq + j->pair_row[p] * j->xs_in, j->xs_in);
}

static void moe_silu_quantize(const struct moe_job *j, int64_t lo, int64_t hi)
{
    for (int64_t p = lo; p < hi; p++) {
        float *g = j->hg + p * j->n_ff;
        const float *u = j->hu + p * j->n_ff;
        for (int64_t i = 0; i < j->n_ff; i++)
            g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
        cpu_quantize_act(j->k, j->dt_down, g, j->aq + p * j->xs_down, j->n_ff);
    }
}

/* out rows [lo, hi) = the routing-weighted sum of their pairs' down rows. */
static void moe_combine(const struct moe_job *j, int64_t lo, int64_t hi)
{
    for (int64_t r = lo; r < hi; r++) {
        float *o = j->out + r * j->n_embd;
        memset(o, 0, (size_t)j->n_embd * sizeof(float));
        for (int64_t c = 0; c < j->n_used; c++) {
            float wt = j->wts[r * j->n_used + c];
            const float *yd = j->yd + (int64_t)j->pair_of[r * j->n_used + c] * j->n_embd;
            for (int64_t i = 0; i < j->n_embd; i++)
                o[i] += wt * yd[i];
        }
    }
}

static void moe_task(void *ctx, int ith, int nth)
{
    struct moe_job *j = ctx;
    int64_t pairs = j->n * j->n_used, lo, hi;

    cpu_split(j->n, ith, nth, &lo, &hi);
    moe_rows_quantize(j, lo, hi);
    cpu_pool_barrier(j->pool);
    cpu_split(pairs, ith, nth, &lo, &hi);
    moe_gather(j, lo, hi);
    cpu_pool_barrier(j->pool);
    moe_ffn_pass(j, ith, nth, 0);
    moe_ffn_pass(j, ith, nth, 1);
    cpu_pool_barrier(j->pool);
    moe_silu_quantize(j, lo, hi);
    cpu_pool_barrier(j->pool);
    moe_ffn_pass(j, ith, nth, 2);
    cpu_pool_barrier(j->pool);
    cpu_split(j->n, ith, nth, &lo, &hi);
    moe_combine(j, lo, hi);
}

/* ---- few rows: two barrier-free regions -------------------------------- */

/* At decode (a few rows) a layer's expert work is a handful of slabs, so
 * moe_task's static split and five barriers cost more than they save: a
 * thread that is late (still waking, or descheduled on a shared machine)
 * stalls the other at every barrier. Here the tiny steps (quantize,
 * gather, SiLU-mul and quantize, weighted sum) run on the calling thread
 * and the slab passes are two dynamic regions (cpu_pool_run_dyn) over
 * (expert, row chunk) items: gate and up of the same rows in one item,
 * down in the second region. Per row the arithmetic is moe_task's (the
 * same cpu_matmul_rows calls on the same gathered rows, the same SiLU, the
 * same quantizer and summation order), so the two paths agree bitwise. */

#define MOE_FEW_ROWS 16        /* rows up to which a step takes this path */
#define MOE_CHUNK_BYTES 32768  /* weight bytes per claimed item and matrix */

struct moe_few {
    struct moe_job *j;
    const int32_t  *act;       /* [n_act] experts with at least one pair */
    int64_t         n_act;
    bool            down;      /* this region: the down matmul, else gate and up */
    int64_t         n_rows;    /* output rows per expert of this region */
    int64_t         chunk, n_chunk;   /* output rows per item, items per expert */
    atomic_llong    next;
};

static int64_t few_chunk_rows(const struct st_tensor *w)
{
    int64_t rows = (int64_t)(MOE_CHUNK_BYTES / st_tensor_row_bytes(w)) / 16 * 16;
    return rows < 16 ? 16 : rows;
}

static void few_item(const struct moe_job *j, const struct st_tensor *w, int64_t e,
                     int64_t lo, int64_t hi, const char *xq, size_t xs, float *y)
{
    int64_t p0 = j->start[e], cnt = j->start[e + 1] - p0, n_out = w->ne[1];
    cpu_matmul_rows(j->k, w->type, slab(w, e), st_tensor_row_bytes(w), w->ne[0], lo, hi,
                    xq + p0 * xs, xs, cnt, y + p0 * n_out, (size_t)n_out);
}

static void few_task(void *ctx, int ith, int nth)
{
    struct moe_few *f = ctx;
    const struct moe_job *j = f->j;
    (void)ith; (void)nth;
    for (;;) {
        int64_t it = cpu_claim(&f->next);
        if (it >= f->n_act * f->n_chunk)
            break;
        int64_t e = f->act[it / f->n_chunk], lo = it % f->n_chunk * f->chunk;
        int64_t hi = lo + f->chunk < f->n_rows ? lo + f->chunk : f->n_rows;
        if (f->down) {
            few_item(j, j->down, e, lo, hi, j->aq, j->xs_down, j->yd);
        } else {
            few_item(j, j->gate, e, lo, hi, j->xg, j->xs_in, j->hg);
            few_item(j, j->up, e, lo, hi, j->xg, j->xs_in, j->hu);
        }
    }
}

/* One dynamic region over (active expert, chunk of w's output rows) items. */
static void few_region(struct cpu_backend *cb, struct moe_few *f, const struct st_tensor *w,
                       bool down)
{
    f->down = down;
    f->n_rows = w->ne[1];
    f->chunk = few_chunk_rows(w);
    f->n_chunk = (f->n_rows + f->chunk - 1) / f->chunk;
    atomic_store(&f->next, 0);
    cpu_pool_run_dyn(cb->pool, few_task, f, cb->n_threads);
}

/* act: scratch for n_exp experts (moe_group's fill array, free by now). */
static void moe_few_rows(struct cpu_backend *cb, struct moe_job *j, int32_t *act)
{
    int64_t pairs = j->n * j->n_used;
    struct moe_few f = { .j = j, .act = act };

    moe_rows_quantize(j, 0, j->n);
    moe_gather(j, 0, pairs);
    for (int64_t e = 0; e < j->n_exp; e++)
        if (j->start[e + 1] > j->start[e])
            act[f.n_act++] = (int32_t)e;
    atomic_init(&f.next, 0);
    few_region(cb, &f, j->gate, false);
    moe_silu_quantize(j, 0, pairs);
    few_region(cb, &f, j->down, true);
    moe_combine(j, 0, j->n);
}

/* Carve the scratch: index arrays, then the buffers, each 64-byte aligned. */
static enum st_status moe_layout(struct cpu_backend *cb, struct moe_job *j, int32_t **idx,
                                 struct st_err *err)
{
    int64_t pairs = j->n * j->n_used;
    size_t sz[7] = {
        (size_t)(j->n_exp + 1 + 2 * pairs + j->n_exp) * sizeof(int32_t),
        (size_t)j->n * j->xs_in, (size_t)pairs * j->xs_in,
        (size_t)(pairs * j->n_ff) * sizeof(float), (size_t)(pairs * j->n_ff) * sizeof(float),
        (size_t)pairs * j->xs_down, (size_t)(pairs * j->n_embd) * sizeof(float),
    };
    size_t total = 0, off[7];
    for (int i = 0; i < 7; i++) {
        off[i] = total;
        total += (sz[i] + 63) / 64 * 64;
    }
    char *s = cpu_scratch(cb, total);
    if (!s)
        return st_err_set(err, ST_ERR_NOMEM, "moe_ffn: no scratch for %lld rows",
                          (long long)j->n);
    *idx = (int32_t *)(void *)s;
    j->xq = s + off[1];
    j->xg = s + off[2];
    j->hg = (float *)(void *)(s + off[3]);
    j->hu = (float *)(void *)(s + off[4]);
    j->aq = s + off[5];
    j->yd = (float *)(void *)(s + off[6]);
    return ST_OK;
}

/* Counting sort of the (row, choice) pairs by expert. idx holds start
 * [n_exp+1], pair_row [pairs], pair_of [pairs], fill [n_exp]. */
static void moe_group(struct moe_job *j, int32_t *idx, const int32_t *sel)
{
    int64_t pairs = j->n * j->n_used;
    int32_t *start = idx, *pair_row = start + j->n_exp + 1, *pair_of = pair_row + pairs;
    int32_t *fill = pair_of + pairs;

    memset(start, 0, (size_t)(j->n_exp + 1) * sizeof(int32_t));
    for (int64_t p = 0; p < pairs; p++)
        start[sel[p] + 1]++;
    for (int64_t e = 0; e < j->n_exp; e++)
        start[e + 1] += start[e];
    memcpy(fill, start, (size_t)j->n_exp * sizeof(int32_t));
    for (int64_t p = 0; p < pairs; p++) {
        int32_t q = fill[sel[p]]++;
        pair_row[q] = (int32_t)(p / j->n_used);
        pair_of[p] = q;
    }
    j->start = start;
    j->pair_row = pair_row;
    j->pair_of = pair_of;
}

enum st_status cpu_op_moe_ffn(struct st_backend *be, ST_T out, ST_T x, ST_T sel, ST_T weights,
                              ST_T gate, ST_T up, ST_T down, struct st_err *err)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    const int32_t *s = sel->data;
    struct moe_job j = {
        .pool = cb->pool, .k = cb->kern, .gate = gate, .up = up, .down = down,
        .n = x->ne[1], .n_embd = x->ne[0], .n_ff = gate->ne[1], .n_exp = gate->ne[2],
        .n_used = sel->ne[0], .x = x->data, .out = out->data, .wts = weights->data,
        .dt_in = cpu_dot_type(gate->type), .dt_down = cpu_dot_type(down->type),
    };
    int32_t *idx = NULL;
    enum st_status rc;

    for (int64_t p = 0; p < st_tensor_nelem(sel); p++)
        if (s[p] < 0 || s[p] >= j.n_exp)
            return st_err_set(err, ST_ERR_INVALID, "moe_ffn: sel[%lld] = %d, %lld experts",
                              (long long)p, s[p], (long long)j.n_exp);
    if (j.dt_in == ST_DTYPE_COUNT_ || j.dt_down == ST_DTYPE_COUNT_ || !cb->kern->dot[gate->type] ||
        !cb->kern->dot[down->type])
        return st_err_set(err, ST_ERR_UNSUPPORTED, "moe_ffn: no cpu kernel for the expert types");
    if (cpu_dot_type(up->type) != j.dt_in || !cb->kern->dot[up->type])
        return st_err_set(err, ST_ERR_UNSUPPORTED,
                          "moe_ffn: gate and up must share an activation type");
    j.xs_in = st_dtype_row_bytes(j.dt_in, j.n_embd);
    j.xs_down = st_dtype_row_bytes(j.dt_down, j.n_ff);
    rc = moe_layout(cb, &j, &idx, err);
    if (rc != ST_OK)
        return rc;
    moe_group(&j, idx, s);
    if (j.n <= MOE_FEW_ROWS)
        moe_few_rows(cb, &j, idx + j.n_exp + 1 + 2 * j.n * j.n_used);
    else
        cpu_pool_run(cb->pool, moe_task, &j, cb->n_threads);
    return ST_OK;
}
