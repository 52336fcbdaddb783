/* kv_compare.h -- one model file loaded twice, with a base KV cache type
 * (F16, or F32 as the most exact) and another (strata/kv_type.h), fed the
 * same tokens: how far apart their
 * logits are and how often their greedy choices agree. Shared by the
 * bench tool (bench_kv_types.c, the figures of docs/ENGINE.md "KV cache
 * types") and the unit test (test_kv_types.c). Header-only.
 *
 * A prompt of n_prompt pseudo-random ids is read in chunks of KVC_CHUNK
 * rows, the logits of every position compared (teacher-forced: both see
 * the same ids, so one near tie does not derail the rest); then each model
 * decodes n_gen tokens greedily on its own and the run of equal tokens
 * from the start is counted.
 */
#ifndef STRATA_BENCH_KV_COMPARE_H
#define STRATA_BENCH_KV_COMPARE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/forward.h"

#define KVC_CHUNK 64
#define KVC_CLEAR 0.5   /* a "clear" top-1: this far above the runner-up (F16 logits) */

struct kv_compare {
    int64_t n_pos;         /* prompt positions compared */
    int64_t top1_same;     /* of them, how many have the same argmax */
    double  max_diff;      /* largest |logit difference| over all of them */
    double  mean_diff;     /* mean |logit difference| */
    double  mean_abs;      /* mean |logit| of the F16 run (the scale of the above) */
    double  mean_margin;   /* mean gap between the F16 run's two highest logits */
    int64_t n_clear;       /* positions where that gap is >= KVC_CLEAR */
    int64_t clear_same;    /* of them, how many have the same argmax */
    int64_t n_gen;         /* greedy tokens decoded by each */
    int64_t greedy_same;   /* the leading run of them that is equal */
};

static int kvc_argmax(const float *x, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return (int)b;
}

/* The gap between the two highest of x[0..n). */
static double kvc_margin(const float *x, int64_t n)
{
    double a = -INFINITY, b = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] > a) {
            b = a;
            a = x[i];
        } else if (x[i] > b) {
            b = x[i];
        }
    }
    return n > 1 ? a - b : 0;
}

static struct st_model *kvc_load(const char *path, enum st_kv_type tk, enum st_kv_type tv,
                                 int threads, int64_t n_ctx, struct st_err *err)
{
    struct st_model *m = NULL;
    if (st_model_open(path, &m, err) != ST_OK)
        return NULL;
    struct st_model_params p = { .backend = "cpu", .n_threads = threads, .n_slots = 1,
                                 .n_ctx = n_ctx, .max_rows = KVC_CHUNK, .max_out = KVC_CHUNK,
                                 .type_k = tk, .type_v = tv };
    if (st_model_load(m, &p, NULL, NULL, err) != ST_OK) {
        st_model_free(m);
        return NULL;
    }
    return m;
}

/* Rows [p0, p0 + n) of ids into m, logits of all of them; NULL on error. */
static const float *kvc_forward(struct st_model *m, const int32_t *ids, int64_t p0, int64_t n,
                                struct st_err *err)
{
    int32_t slot[KVC_CHUNK] = { 0 };
    int64_t pos[KVC_CHUNK], out[KVC_CHUNK];
    for (int64_t i = 0; i < n; i++) {
        pos[i] = p0 + i;
        out[i] = i;
    }
    struct st_model_batch b = { .n_rows = n, .tokens = ids + p0, .slots = slot, .pos = pos,
                                .n_out = n, .out_rows = out };
    const float *lg = NULL;
    return st_model_forward(m, &b, &lg, err) == ST_OK ? lg : NULL;
}

/* (bk, bv) against (tk, tv); "F16" in the fields above means the base.
 * 0, or -1 with err set. */
static int kv_compare_base(const char *path, enum st_kv_type bk, enum st_kv_type bv,
                           enum st_kv_type tk, enum st_kv_type tv, int64_t n_prompt,
                           int64_t n_gen, int threads, struct kv_compare *c, struct st_err *err)
{
    memset(c, 0, sizeof(*c));
    int64_t total = n_prompt + n_gen;
    struct st_model *a = kvc_load(path, bk, bv, threads, total, err);
    struct st_model *q = a ? kvc_load(path, tk, tv, threads, total, err) : NULL;
    int32_t *ids = malloc((size_t)total * sizeof(int32_t) * 2);
    int rc = a && q && ids ? 0 : -1;
    int64_t nv = a ? st_model_hparams(a)->n_vocab : 1;
    uint64_t s = 0x243f6a8885a308d3ull;
    for (int64_t i = 0; ids && i < n_prompt; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((s >> 33) % (uint64_t)nv);
    }
    double sum = 0, sum_abs = 0;
    for (int64_t p0 = 0; rc == 0 && p0 < n_prompt; p0 += KVC_CHUNK) {
        int64_t n = n_prompt - p0 < KVC_CHUNK ? n_prompt - p0 : KVC_CHUNK;
        const float *la = kvc_forward(a, ids, p0, n, err);
        /* the model keeps its logits until its next forward: copy a's */
        float *copy = la ? malloc((size_t)(n * nv) * sizeof(float)) : NULL;
        if (copy)
            memcpy(copy, la, (size_t)(n * nv) * sizeof(float));
        const float *lq = copy ? kvc_forward(q, ids, p0, n, err) : NULL;
        if (!lq) {
            free(copy);
            rc = -1;
            break;
        }
        for (int64_t r = 0; r < n; r++) {
            const float *x = copy + r * nv, *y = lq + r * nv;
            for (int64_t i = 0; i < nv; i++) {
                double d = fabs((double)x[i] - (double)y[i]);
                c->max_diff = d > c->max_diff ? d : c->max_diff;
                sum += d;
                sum_abs += fabs((double)x[i]);
            }
            bool same = kvc_argmax(x, nv) == kvc_argmax(y, nv);
            double gap = kvc_margin(x, nv);
            c->top1_same += same;
            c->mean_margin += gap;
            c->n_clear += gap >= KVC_CLEAR;
            c->clear_same += gap >= KVC_CLEAR && same;
            c->n_pos++;
        }
        free(copy);
    }
    if (rc == 0 && c->n_pos > 0) {
        c->mean_diff = sum / (double)(c->n_pos * nv);
        c->mean_abs = sum_abs / (double)(c->n_pos * nv);
        c->mean_margin /= (double)c->n_pos;
    }
    /* greedy: each model from the prompt's last logits, on its own */
    int32_t *ga = ids, *gq = ids ? ids + total : NULL;
    if (rc == 0 && n_gen > 0) {
        memcpy(gq, ga, (size_t)n_prompt * sizeof(int32_t));
        const float *la = kvc_forward(a, ga, n_prompt - 1, 1, err);
        int next_a = la ? kvc_argmax(la, nv) : 0;
        const float *lq = la ? kvc_forward(q, gq, n_prompt - 1, 1, err) : NULL;
        int next_q = lq ? kvc_argmax(lq, nv) : 0;
        rc = lq ? 0 : -1;
        bool same = true;
        for (int64_t i = 0; rc == 0 && i < n_gen; i++) {
            int64_t p = n_prompt + i;
            ga[p] = next_a;
            gq[p] = next_q;
            same = same && next_a == next_q;
            c->greedy_same += same;
            c->n_gen++;
            if (i + 1 == n_gen)
                break;
            la = kvc_forward(a, ga, p, 1, err);
            next_a = la ? kvc_argmax(la, nv) : 0;
            lq = la ? kvc_forward(q, gq, p, 1, err) : NULL;
            next_q = lq ? kvc_argmax(lq, nv) : 0;
            rc = lq ? 0 : -1;
        }
    }
    free(ids);
    st_model_free(a);
    st_model_free(q);
    return rc;
}

/* F16/F16 against (tk, tv). */
static inline int kv_compare_run(const char *path, enum st_kv_type tk, enum st_kv_type tv,
                                 int64_t n_prompt, int64_t n_gen, int threads, struct kv_compare *c,
                                 struct st_err *err)
{
    return kv_compare_base(path, ST_KV_F16, ST_KV_F16, tk, tv, n_prompt, n_gen, threads, c, err);
}

#endif /* STRATA_BENCH_KV_COMPARE_H */
