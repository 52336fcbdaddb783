/* cpu_score.c -- the optional score op of the table on the CPU
 * (backend.h st_backend_score) and its row function st_score_row, the
 * reference the CUDA kernel (kernels/score.cu) is tested against.
 *
 * One row of logits -> what it says about the token 'next': its logprob
 * (the log-partition over max-shifted logits, as the host sampler computes
 * a generated token's, to ~1e-6), its rank (1 + tokens strictly above it)
 * and the K best tokens with their logprobs. This runs for every prompt
 * row of a scored read (docs/API.md "Scoring prompts"), so the partition
 * uses a float exp (cpu_vmath.h: Cephes expf polynomial; AVX2 when the CPU
 * has it) rather than libm's double exp, which alone took ~1.4 ms per
 * 152K-token row; with AVX2 a row takes ~0.1 ms. Rows are spread over the pool.
 *
 * NaN (backend.h): exp counts a NaN logit as ~0 (it clamps to exp(-87),
 * as -inf does), the max ignores it, and in the rank and the top list it
 * ranks below every number (strata/draw.h st_draw_before).
 *
 * Thread: st_score_row any (pure); the op as every op.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "cpu_vmath.h"
#include "strata/draw.h"

/* The largest non-NaN logit of [from, n) or 'mx' (-inf when all are NaN). */
static float row_max(const float *logits, int64_t from, int64_t n, float mx)
{
    for (int64_t i = from; i < n; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    return mx;
}

/* sum exp(logits[i] - mx), i in [from, n): float terms summed in blocks of
 * 1024 into a double, so the sum keeps ~1e-7 relative precision. */
static double sum_exp(const float *logits, int64_t from, int64_t n, float mx)
{
    double total = 0.0;
    for (int64_t i0 = from; i0 < n; i0 += 1024) {
        int64_t i1 = i0 + 1024 < n ? i0 + 1024 : n;
        float acc = 0.0f;
        for (int64_t i = i0; i < i1; i++)
            acc += cpu_exp_neg(logits[i] - mx);
        total += acc;
    }
    return total;
}

/* Tokens ranking strictly before a token of logit x: a larger logit, or
 * any number when x is NaN. */
static int64_t count_above(const float *logits, int64_t from, int64_t n, float x)
{
    int64_t above = 0;
    if (x != x) {
        for (int64_t t = from; t < n; t++)
            above += logits[t] == logits[t];
        return above;
    }
    for (int64_t t = from; t < n; t++)
        above += logits[t] > x;
    return above;
}

/* Put token t into the full sorted list ids[0..k), dropping the last. */
static void insert(const float *logits, int32_t k, int32_t *ids, int32_t t)
{
    int32_t at = k - 1;
    while (at > 0 && st_draw_before(logits[t], t, logits[ids[at - 1]], ids[at - 1])) {
        ids[at] = ids[at - 1];
        at--;
    }
    ids[at] = t;
}

/* Would token t (above every id in the full list) enter it? */
static bool enters(const float *logits, int32_t t, float kth)
{
    return kth != kth ? logits[t] == logits[t] : logits[t] > kth;
}

/* The k best ids of [0, n) (0 < k <= n), most likely first, by insertion
 * into a sorted list of k: once it is full, a token goes in only above the
 * k-th (a tie keeps the lower id, which came first), one comparison for
 * most tokens. */
static void best_k(const float *logits, int64_t n, int32_t k, int32_t *ids)
{
    for (int32_t t = 0; t < k; t++) {
        ids[t] = t;
        insert(logits, t + 1, ids, t);
    }
    for (int64_t t = k; t < n; t++)
        if (enters(logits, (int32_t)t, logits[ids[k - 1]]))
            insert(logits, k, ids, (int32_t)t);
}

/* best_k from token 'from' on, the list ids[0..k) already full. */
static void best_k_tail(const float *logits, int64_t from, int64_t n, int32_t k, int32_t *ids)
{
    for (int64_t t = from; t < n; t++)
        if (enters(logits, (int32_t)t, logits[ids[k - 1]]))
            insert(logits, k, ids, (int32_t)t);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))

/* The same partition, eight lanes at a time (the scalar code does the
 * tail): the same polynomial, so both paths agree to float rounding. */
AVX2 static double log_partition_avx2(const float *logits, int64_t n_vocab)
{
    int64_t n8 = n_vocab & ~(int64_t)7;
    __m256 vmx = _mm256_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n8; i += 8)   /* a NaN load yields vmx (max takes the 2nd) */
        vmx = _mm256_max_ps(_mm256_loadu_ps(logits + i), vmx);
    float lanes[8];
    _mm256_storeu_ps(lanes, vmx);
    float mx = row_max(logits, n8, n_vocab, row_max(lanes, 0, 8, -INFINITY));
    vmx = _mm256_set1_ps(mx);
    double total = 0.0;
    for (int64_t i0 = 0; i0 < n8; i0 += 1024) {
        int64_t i1 = i0 + 1024 < n8 ? i0 + 1024 : n8;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t i = i0; i < i1; i += 8)
            acc = _mm256_add_ps(acc,
                                cpu_exp_neg8(_mm256_sub_ps(_mm256_loadu_ps(logits + i), vmx)));
        total += cpu_hsum8(acc);
    }
    return log(total + sum_exp(logits, n8, n_vocab, mx)) + mx;
}

AVX2 static int64_t count_above_avx2(const float *logits, int64_t n, float x)
{
    if (x != x)
        return count_above(logits, 0, n, x);
    int64_t n8 = n & ~(int64_t)7, above = 0;
    __m256 vx = _mm256_set1_ps(x);
    for (int64_t i = 0; i < n8; i += 8) {
        int m = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(logits + i), vx, _CMP_GT_OQ));
        above += __builtin_popcount((unsigned)m);
    }
    return above + count_above(logits, n8, n, x);
}

/* Lanes of v that would enter a list whose k-th logit is kth. */
AVX2 static int enter_mask(__m256 v, float kth)
{
    __m256 m = kth != kth ? _mm256_cmp_ps(v, v, _CMP_ORD_Q)
                          : _mm256_cmp_ps(v, _mm256_set1_ps(kth), _CMP_GT_OQ);
    return _mm256_movemask_ps(m);
}

/* best_k, skipping blocks of eight with no logit that would enter. */
AVX2 static void best_k_avx2(const float *logits, int64_t n_vocab, int32_t k, int32_t *ids)
{
    int64_t n8 = n_vocab & ~(int64_t)7, first = (k + 7) & ~7;
    if (first >= n8) {
        best_k(logits, n_vocab, k, ids);
        return;
    }
    best_k(logits, first, k, ids);   /* the list is full from here */
    for (int64_t i = first; i < n8; i += 8) {
        int m = enter_mask(_mm256_loadu_ps(logits + i), logits[ids[k - 1]]);
        for (; m; m &= m - 1) {
            int32_t t = (int32_t)i + __builtin_ctz((unsigned)m);
            if (enters(logits, t, logits[ids[k - 1]]))   /* kth may have risen in the block */
                insert(logits, k, ids, t);
        }
    }
    best_k_tail(logits, n8, n_vocab, k, ids);
}
#endif

static bool have_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    /* cached; implies fma. STRATA_CPU_ISA=scalar (nx 1) takes the scalar path. */
    return cpu_has_avx2_f16c() && cpu_kernels_best()->nx > 1;
#else
    return false;
#endif
}

/* log(sum(exp(logits - max))) + max. The host sampler computes the same
 * in double with libm's exp; this agrees with it to ~1e-6. */
static double log_partition(const float *logits, int64_t n_vocab, bool avx2)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2)
        return log_partition_avx2(logits, n_vocab);
#endif
    (void)avx2;
    float mx = row_max(logits, 0, n_vocab, -INFINITY);
    return log(sum_exp(logits, 0, n_vocab, mx)) + mx;
}

void st_score_row(const float *logits, int64_t n_vocab, int32_t next, int32_t k, float *vals,
                  int32_t *ids)
{
    bool avx2 = have_avx2();
    double logz = log_partition(logits, n_vocab, avx2);
    vals[0] = 0.0f;
    ids[0] = 0;
    if (next >= 0) {
        float x = logits[next];
#if defined(__x86_64__) && defined(__GNUC__)
        int64_t above = avx2 ? count_above_avx2(logits, n_vocab, x)
                             : count_above(logits, 0, n_vocab, x);
#else
        int64_t above = count_above(logits, 0, n_vocab, x);
#endif
        vals[0] = (float)((double)x - logz);
        ids[0] = (int32_t)(1 + above);
    }
    if (k <= 0)
        return;
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2)
        best_k_avx2(logits, n_vocab, k, ids + 1);
    else
        best_k(logits, n_vocab, k, ids + 1);
#else
    best_k(logits, n_vocab, k, ids + 1);
#endif
    for (int32_t i = 1; i <= k; i++)
        vals[i] = (float)((double)logits[ids[i]] - logz);
}

struct score_job {
    const float   *logits;
    const int32_t *next;
    float         *vals;
    int32_t       *ids;
    int64_t        V;
    int32_t        k;
};

static void score_rows(void *ctx, int64_t r0, int64_t r1)
{
    const struct score_job *j = ctx;
    const int64_t w = 1 + j->k;
    for (int64_t r = r0; r < r1; r++)
        st_score_row(j->logits + r * j->V, j->V, j->next[r], j->k, j->vals + r * w,
                     j->ids + r * w);
}

enum st_status cpu_op_score(struct st_backend *be, ST_T vals, ST_T ids, ST_T logits, ST_T next,
                            struct st_err *err)
{
    const int64_t V = logits->ne[0], n = logits->ne[1];
    const int32_t *nx = next->data;
    for (int64_t r = 0; r < n; r++)
        if (nx[r] < -1 || nx[r] >= V)
            return st_err_set(err, ST_ERR_INVALID, "score: next[%lld] = %d is outside [-1, %lld)",
                              (long long)r, nx[r], (long long)V);
    struct score_job job = { logits->data, nx, vals->data, ids->data, V,
                             (int32_t)(vals->ne[0] - 1) };
    cpu_parallel_rows((struct cpu_backend *)be, n, 3 * V, score_rows, &job);
    return ST_OK;
}
