/* cpu_attention_plain.c -- the per-row attention path (before tiling),
 * kept as the baseline STRATA_CPU_ATTN=plain selects (cpu_attention.c).
 *
 * Causal GQA attention over the per-slot KV cache (F16, Q8_0, F32 or BF16).
 *
 * Layout: cpu_attn_op.h. A row of any type but F16 is turned into floats first
 * (cpu_attn_kern.h) and dotted in plain scalar float: this path is the
 * reference the tiled one is measured against, not a fast one.
 *
 * One parallel region: every thread first writes its share of the step's
 * new k/v rows into the cache, then after a barrier takes its share
 * of the (row, KV head) work items. For one item the key and value rows
 * are read once for all the query heads that share that KV head (GQA),
 * scores are kept for the whole 0..pos range (per-thread scratch of
 * group * n_ctx floats) and soft-maxed in float like ggml's CPU path.
 *
 * A few rows (decode) skip the barrier: the caller writes their k/v rows,
 * then the items are claimed dynamically (attn_dyn_task).
 *
 * The inner loops (q.k over a group of heads, p.v accumulation) have an
 * AVX2+F16C version picked at run time and a scalar one.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "cpu_attn_kern.h"
#include "cpu_attn_op.h"
#include "cpu_vmath.h"

typedef void (*qk_fn)(const float *q, int gq, int d, const uint16_t *k, float scale,
                      float *s, size_t s_stride);
typedef void (*av_fn)(const float *p, size_t p_stride, int gq, int d, const uint16_t *v,
                      float *o);
/* s[h * s_stride] = scale * q_h . k for the gq heads (q rows of d floats). */
static void qk_scalar(const float *q, int gq, int d, const uint16_t *k, float scale, float *s,
                      size_t s_stride)
{
    float kf[ATTN_D_MAX];
    for (int i = 0; i < d; i++)
        kf[i] = cpu_h2f(k[i]);
    for (int h = 0; h < gq; h++) {
        float acc = 0.0f;
        for (int i = 0; i < d; i++)
            acc += q[h * d + i] * kf[i];
        s[(size_t)h * s_stride] = acc * scale;
    }
}

/* o_h += p[h * p_stride] * v for the gq heads. */
static void av_scalar(const float *p, size_t p_stride, int gq, int d, const uint16_t *v,
                      float *o)
{
    float vf[ATTN_D_MAX];
    for (int i = 0; i < d; i++)
        vf[i] = cpu_h2f(v[i]);
    for (int h = 0; h < gq; h++) {
        float w = p[(size_t)h * p_stride];
        for (int i = 0; i < d; i++)
            o[h * d + i] += w * vf[i];
    }
}

/* qk_scalar / av_scalar over a row already in floats (a Q8_0, F32 or BF16
 * cache's). */
static void qk_f32(const float *q, int gq, int d, const float *kf, float scale, float *s,
                   size_t s_stride)
{
    for (int h = 0; h < gq; h++) {
        float acc = 0.0f;
        for (int i = 0; i < d; i++)
            acc += q[h * d + i] * kf[i];
        s[(size_t)h * s_stride] = acc * scale;
    }
}

static void av_f32(const float *p, size_t p_stride, int gq, int d, const float *vf, float *o)
{
    for (int h = 0; h < gq; h++) {
        float w = p[(size_t)h * p_stride];
        for (int i = 0; i < d; i++)
            o[h * d + i] += w * vf[i];
    }
}

#if defined(__x86_64__)
#include <immintrin.h>
#define AT __attribute__((target("avx2,fma,f16c")))

static AT void qk_avx2(const float *q, int gq, int d, const uint16_t *k, float scale, float *s,
                       size_t s_stride)
{
    if (d % 8 != 0) {
        qk_scalar(q, gq, d, k, scale, s, s_stride);
        return;
    }
    for (int h = 0; h < gq; h++) {
        __m256 acc = _mm256_setzero_ps();
        for (int i = 0; i < d; i += 8) {
            __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i)));
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * d + i), kv, acc);
        }
        s[(size_t)h * s_stride] = cpu_hsum8(acc) * scale;
    }
}

static AT void av_avx2(const float *p, size_t p_stride, int gq, int d, const uint16_t *v,
                       float *o)
{
    if (d % 8 != 0) {
        av_scalar(p, p_stride, gq, d, v, o);
        return;
    }
    for (int i = 0; i < d; i += 8) {
        __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i)));
        for (int h = 0; h < gq; h++) {
            float *oh = o + h * d + i;
            __m256 w = _mm256_set1_ps(p[(size_t)h * p_stride]);
            _mm256_storeu_ps(oh, _mm256_fmadd_ps(w, vv, _mm256_loadu_ps(oh)));
        }
    }
}

#endif

struct attn_job {
    struct cpu_pool *pool;
    const float     *q, *k, *v;
    float           *out;
    char            *kc, *vc;
    size_t           krow, vrow;    /* bytes per (slot, position) row */
    size_t           khead, vhead;  /* bytes per KV head in a row */
    const struct attn_kv_io *kio, *vio;   /* the cache rows' store and load */
    bool             kq8, vq8;      /* not F16 rows: loaded to floats first */
    const int32_t   *slot, *pos;
    int64_t          n, n_head, n_kv, d, n_ctx;
    float            scale;
    float           *scores;    /* [nth][gq * n_ctx] */
    qk_fn            qk;
    av_fn            av;
    atomic_llong     next;      /* next item (attn_dyn_task) */
};

static void kv_write(const struct attn_job *j, int64_t r)
{
    int64_t w = j->n_kv * j->d;
    size_t at = (size_t)j->slot[r] * (size_t)j->n_ctx + (size_t)j->pos[r];
    j->kio->store(j->k + r * w, j->kc + at * j->krow, w);
    j->vio->store(j->v + r * w, j->vc + at * j->vrow, w);
}

/* Attention of row r's query heads of KV head g. */
static void attn_item(const struct attn_job *j, int64_t r, int64_t g, float *sc)
{
    int gq = (int)(j->n_head / j->n_kv), d = (int)j->d;
    int64_t p = j->pos[r];
    size_t row0 = (size_t)j->slot[r] * (size_t)j->n_ctx;
    const char *kb = j->kc + row0 * j->krow + (size_t)g * j->khead;
    const char *vb = j->vc + row0 * j->vrow + (size_t)g * j->vhead;
    const float *q = j->q + r * j->n_head * d + g * gq * d;
    float *o = j->out + r * j->n_head * d + g * gq * d;
    float rowf[ATTN_D_MAX];

    for (int64_t t = 0; t <= p; t++) {
        const char *kr = kb + (size_t)t * j->krow;
        if (j->kq8) {
            j->kio->load(kr, 0, 1, d, rowf);
            qk_f32(q, gq, d, rowf, j->scale, sc + t, (size_t)j->n_ctx);
        } else {
            j->qk(q, gq, d, (const uint16_t *)(const void *)kr, j->scale, sc + t,
                  (size_t)j->n_ctx);
        }
    }
    for (int h = 0; h < gq; h++) {
        float *s = sc + (size_t)h * (size_t)j->n_ctx, mx = -FLT_MAX, sum = 0.0f;
        for (int64_t t = 0; t <= p; t++)
            mx = s[t] > mx ? s[t] : mx;
        for (int64_t t = 0; t <= p; t++) {
            s[t] = expf(s[t] - mx);
            sum += s[t];
        }
        for (int64_t t = 0; t <= p; t++)
            s[t] /= sum;
    }
    memset(o, 0, (size_t)gq * (size_t)d * sizeof(float));
    for (int64_t t = 0; t <= p; t++) {
        const char *vr = vb + (size_t)t * j->vrow;
        if (j->vq8) {
            j->vio->load(vr, 0, 1, d, rowf);
            av_f32(sc + t, (size_t)j->n_ctx, gq, d, rowf, o);
        } else {
            j->av(sc + t, (size_t)j->n_ctx, gq, d, (const uint16_t *)(const void *)vr, o);
        }
    }
}

static void attn_task(void *ctx, int ith, int nth)
{
    struct attn_job *j = ctx;
    int64_t lo, hi, gq = j->n_head / j->n_kv;
    float *sc = j->scores + (size_t)ith * (size_t)(gq * j->n_ctx);

    cpu_split(j->n, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++)
        kv_write(j, r);
    cpu_pool_barrier(j->pool);
    cpu_split(j->n * j->n_kv, ith, nth, &lo, &hi);
    for (int64_t it = lo; it < hi; it++)
        attn_item(j, it / j->n_kv, it % j->n_kv, sc);
}

/* Few rows (decode): the caller has written the k/v rows; the (row, KV
 * head) items are claimed one at a time, so the region needs no barrier
 * and the caller may close it alone (cpu_pool_run_dyn). Same per-item
 * arithmetic as attn_task. */
static void attn_dyn_task(void *ctx, int ith, int nth)
{
    struct attn_job *j = ctx;
    int64_t gq = j->n_head / j->n_kv;
    float *sc = j->scores + (size_t)ith * (size_t)(gq * j->n_ctx);

    (void)nth;
    for (;;) {
        int64_t it = cpu_claim(&j->next);
        if (it >= j->n * j->n_kv)
            break;
        attn_item(j, it / j->n_kv, it % j->n_kv, sc);
    }
}

static void pick_kernels(struct attn_job *j)
{
    j->qk = qk_scalar;
    j->av = av_scalar;
#if defined(__x86_64__)
    if (cpu_has_avx2_f16c()) {   /* cached: this runs once per layer per step */
        j->qk = qk_avx2;
        j->av = av_avx2;
    }
#endif
}

enum st_status cpu_attention_plain(struct st_backend *be, ST_T out, ST_T q, ST_T k, ST_T v,
                                ST_T kcache, ST_T vcache, ST_T slot, ST_T pos, int32_t n_head,
                                int32_t n_head_kv, float scale, struct st_err *err)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    struct attn_job j = {
        .pool = cb->pool, .q = q->data, .k = k->data, .v = v->data, .out = out->data,
        .kc = kcache->data, .vc = vcache->data, .slot = slot->data, .pos = pos->data,
        .n = q->ne[1], .n_head = n_head, .n_kv = n_head_kv, .d = q->ne[0] / n_head,
        .n_ctx = kcache->ne[1], .scale = scale,
    };
    int nth = cb->n_threads;

    enum st_status rc = cpu_attn_check(q, kcache, slot, pos, n_head, n_head_kv, err);
    if (rc != ST_OK)
        return rc;
    j.scores = cpu_scratch(cb, (size_t)nth * (size_t)(n_head / n_head_kv) * (size_t)j.n_ctx *
                                   sizeof(float));
    if (!j.scores)
        return st_err_set(err, ST_ERR_NOMEM, "attention: no scratch for %lld positions",
                          (long long)j.n_ctx);
    pick_kernels(&j);
    j.krow = st_tensor_row_bytes(kcache);
    j.vrow = st_tensor_row_bytes(vcache);
    j.khead = st_dtype_row_bytes(kcache->type, j.d);
    j.vhead = st_dtype_row_bytes(vcache->type, j.d);
    j.kio = cpu_attn_kv_io(kcache->type, (int)j.d);
    j.vio = cpu_attn_kv_io(vcache->type, (int)j.d);
    j.kq8 = kcache->type != ST_DTYPE_F16;
    j.vq8 = vcache->type != ST_DTYPE_F16;
    if (!j.kio || !j.vio)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "attention: KV cache types %d/%d at head_dim "
                          "%lld (f16, f32, bf16, or q8_0 at a multiple of 32)", (int)kcache->type,
                          (int)vcache->type, (long long)j.d);
    if (j.n * j.n_kv < 2)
        nth = 1;
    if (j.n <= ATTN_FEW_ROWS) {
        for (int64_t r = 0; r < j.n; r++)
            kv_write(&j, r);
        if (cpu_attn_work(j.pos, j.n, j.n_head, j.d) < ATTN_PAR_MIN_WORK)
            nth = 1;
        atomic_init(&j.next, 0);
        cpu_pool_run_dyn(cb->pool, attn_dyn_task, &j, nth);
    } else {
        cpu_pool_run(cb->pool, attn_task, &j, nth);
    }
    return ST_OK;
}
