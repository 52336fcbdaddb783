/* cpu_ssm.c -- the CPU backend's recurrent ops (strata/backend_ssm.h):
 * Gated DeltaNet's conv1d and delta rule, and the sigmoid gate.
 *
 * Rows of one slot depend on each other through the state, so the work
 * is split across threads by what is independent: channels for the conv,
 * v heads for the delta rule; each thread walks the rows in order. The
 * delta rule's step reads each head's D x D matrix three times per row (M.k
 * and M.q as the kernels' f32 dot over eight rows a call, the decay and
 * rank-1 update between them). A run of at least CPU_DELTA_CHUNK_MIN rows
 * of one slot (a prompt read) goes through the chunked form instead
 * (cpu_delta_chunk.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "cpu_ssm.h"

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Every slot id in [0, n_slots). */
static enum st_status check_slots(const char *op, const struct st_tensor *slot, int64_t n_slots,
                                  struct st_err *err)
{
    const int32_t *s = slot->data;
    for (int64_t r = 0; r < slot->ne[0]; r++)
        if (s[r] < 0 || s[r] >= n_slots)
            return st_err_set(err, ST_ERR_INVALID, "%s: row %lld has slot %d of %lld", op,
                              (long long)r, (int)s[r], (long long)n_slots);
    return ST_OK;
}

/* ---- conv1d ------------------------------------------------------------ */

struct conv_job {
    float *out, *state;
    const float *x, *w;
    const int32_t *slot, *pos;
    int64_t C, K, n;
};

static void conv_channels(void *ctx, int64_t c0, int64_t c1)
{
    const struct conv_job *j = ctx;
    int64_t C = j->C, K = j->K;
    for (int64_t r = 0; r < j->n; r++) {
        float *st = j->state + (int64_t)j->slot[r] * (K - 1) * C;
        const float *x = j->x + r * C;
        for (int64_t c = c0; c < c1; c++) {
            if (j->pos[r] == 0)
                for (int64_t t = 0; t < K - 1; t++)
                    st[t * C + c] = 0.0f;
            const float *w = j->w + c * K;
            float acc = w[K - 1] * x[c];
            for (int64_t t = 0; t < K - 1; t++)
                acc += w[t] * st[t * C + c];
            j->out[r * C + c] = silu(acc);
            for (int64_t t = 0; t + 1 < K - 1; t++)
                st[t * C + c] = st[(t + 1) * C + c];
            st[(K - 2) * C + c] = x[c];
        }
    }
}

enum st_status cpu_op_ssm_conv(struct st_backend *be, ST_T out, ST_T x, ST_T w, ST_T state,
                               ST_T slot, ST_T pos, struct st_err *err)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    enum st_status rc = check_slots("ssm_conv", slot, state->ne[2], err);
    if (rc != ST_OK)
        return rc;
    struct conv_job j = { out->data, state->data, x->data, w->data, slot->data, pos->data,
                          x->ne[0], w->ne[0], x->ne[1] };
    cpu_parallel_rows(cb, j.C, j.n * j.K, conv_channels, &j);
    return ST_OK;
}

/* ---- delta rule -------------------------------------------------------- */

/* One row of head h on its matrix m (D x D, row j = m + j*D). */
static void delta_step(const struct delta_job *j, int64_t r, int64_t h, float *m, float *q,
                       float *k)
{
    int64_t d = j->d, c3 = (2 * j->hk + j->hv) * d;
    const float *v = j->qkv + r * c3 + 2 * j->hk * d + h * d;
    float log_decay, b, scale = 1.0f / sqrtf((float)d);
    cpu_delta_prep(j, r, h, q, k, &log_decay, &b);
    float decay = expf(log_decay);
    float *o = j->out + r * j->hv * d + h * d;
    if (j->dot) {
        /* three passes, the two products as the kernels' dot over eight
         * rows of m a call (o holds M.k until it holds the output) */
        for (int64_t row = 0; row < d; row += CPU_NX_MAX)
            j->dot(d, k, m + row * d, (size_t)d * sizeof(float),
                   d - row < CPU_NX_MAX ? (int)(d - row) : CPU_NX_MAX, o + row, 1);
        for (int64_t row_j = 0; row_j < d; row_j++) {
            float *mj = m + row_j * d, dj = (v[row_j] - decay * o[row_j]) * b;
            for (int64_t i = 0; i < d; i++)
                mj[i] = mj[i] * decay + k[i] * dj;
        }
        for (int64_t row = 0; row < d; row += CPU_NX_MAX)
            j->dot(d, q, m + row * d, (size_t)d * sizeof(float),
                   d - row < CPU_NX_MAX ? (int)(d - row) : CPU_NX_MAX, o + row, 1);
        for (int64_t i = 0; i < d; i++)
            o[i] *= scale;
        return;
    }
    for (int64_t row_j = 0; row_j < d; row_j++) {
        float *mj = m + row_j * d;
        float dj = (v[row_j] - decay * cpu_dot8(mj, k, d)) * b;
        for (int64_t i = 0; i < d; i++)
            mj[i] = mj[i] * decay + k[i] * dj;
        o[row_j] = cpu_dot8(mj, q, d) * scale;
    }
}

/* Rows from r on that continue r's slot: same slot, no restart after r. */
static int64_t run_length(const struct delta_job *j, int64_t r)
{
    int64_t e = r + 1;
    while (e < j->n && j->slot[e] == j->slot[r] && j->pos[e] != 0)
        e++;
    return e - r;
}

static void delta_heads(void *ctx, int64_t h0, int64_t h1)
{
    const struct delta_job *j = ctx;
    int64_t d = j->d;
    float q[1024], k[1024];   /* head_dim <= 1024, checked by the caller */
    /* the chunked form's scratch, this thread's own; without it (out of
     * memory) the recurrence gives the same result, slower */
    float *scratch = j->chunked ? malloc(cpu_delta_chunk_floats(d) * sizeof(float)) : NULL;
    for (int64_t r = 0; r < j->n;) {
        int64_t len = run_length(j, r);
        float *slot_state = j->state + (int64_t)j->slot[r] * j->hv * d * d;
        for (int64_t h = h0; h < h1; h++) {
            float *m = slot_state + h * d * d;
            if (j->pos[r] == 0)
                memset(m, 0, (size_t)(d * d) * sizeof(float));
            if (scratch && len >= CPU_DELTA_CHUNK_MIN) {
                for (int64_t c = 0; c < len; c += CPU_DELTA_CHUNK)
                    cpu_delta_chunk(j, r + c, len - c < CPU_DELTA_CHUNK ? len - c
                                    : CPU_DELTA_CHUNK, h, m, scratch);
            } else {
                for (int64_t t = 0; t < len; t++)
                    delta_step(j, r + t, h, m, q, k);
            }
        }
        r += len;
    }
    free(scratch);
}

/* True when some slot has a run long enough for the chunked form. */
static bool has_long_run(const struct delta_job *j)
{
    for (int64_t r = 0; r < j->n;) {
        int64_t len = run_length(j, r);
        if (len >= CPU_DELTA_CHUNK_MIN)
            return true;
        r += len;
    }
    return false;
}

enum st_status cpu_op_delta_net(struct st_backend *be, ST_T out, ST_T qkv, ST_T alpha,
                                ST_T beta, ST_T dt_bias, ST_T a, ST_T state, ST_T slot,
                                ST_T pos, const struct st_delta_net_params *p,
                                struct st_err *err)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    if (p->head_dim > 1024)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "delta_net: head width %d is above the "
                          "CPU backend's 1024", (int)p->head_dim);
    enum st_status rc = check_slots("delta_net", slot, state->ne[3], err);
    if (rc != ST_OK)
        return rc;
    struct delta_job j = { out->data, state->data, qkv->data, alpha->data, beta->data,
                           dt_bias->data, a->data, slot->data, pos->data, qkv->ne[1],
                           p->n_k_heads, p->n_v_heads, p->head_dim, p->eps, false,
                           p->v_grouped,
                           p->head_dim % 8 == 0 ? cb->kern->dot[ST_DTYPE_F32] : NULL };
    j.chunked = has_long_run(&j);
    cpu_parallel_rows(cb, j.hv, j.n * j.d * j.d * 4, delta_heads, &j);
    return ST_OK;
}

/* ---- sigmoid gate ------------------------------------------------------ */

struct gate_job {
    float *out;
    const float *x, *g;
    int64_t c, cg;
};

static void gate_rows(void *ctx, int64_t r0, int64_t r1)
{
    const struct gate_job *j = ctx;
    for (int64_t r = r0; r < r1; r++) {
        const float *g = j->g + r * j->cg;
        float one = j->cg == 1 ? sigmoid(g[0]) : 0.0f;
        for (int64_t c = 0; c < j->c; c++)
            j->out[r * j->c + c] = j->x[r * j->c + c] * (j->cg == 1 ? one : sigmoid(g[c]));
    }
}

enum st_status cpu_op_sigmoid_mul(struct st_backend *be, ST_T out, ST_T x, ST_T g,
                                  struct st_err *err)
{
    (void)err;
    struct gate_job j = { out->data, x->data, g->data, x->ne[0], g->ne[0] };
    cpu_parallel_rows((struct cpu_backend *)be, x->ne[1], j.c, gate_rows, &j);
    return ST_OK;
}
