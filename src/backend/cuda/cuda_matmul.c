/* cuda_matmul.c -- matmul, MoE routing and the MoE expert FFN on CUDA.
 *
 * matmul y[n, O] = x[n, I] . W^T:
 *   n <= CUDA_MMV_MAX_ROWS (decode, MTP verify): quantized weights take
 *     q8_1 activations (one quantize launch, then the dp4a kernel of
 *     mmvq.cu, which streams every weight row once for all rows); F32/F16/
 *     BF16 weights are dotted with the f32 rows directly.
 *   larger n (a prompt chunk): the weights are dequantized to fp16 in slabs
 *     of at most CUDA_GEMM_SLAB_ELEMS elements, x is converted to fp16
 *     once, and cuBLAS computes each slab (fp32 accumulation, fp32 out).
 *     F32 weights go to cublasSgemm without conversion.
 *   The activation quantization differs from the CPU backend's (q8_1 with
 *   32-element blocks, or fp16, instead of Q8_K), so results agree to
 *   quantization noise, not bit for bit (docs/CUDA.md has the tolerances).
 *
 * moe_ffn per call (n rows, k experts each, P = n*k pairs, X experts):
 *   1. moe_group: counting sort of the pairs by expert -> groups,
 *      pair_row (activation row of each sorted pair), pair_of. With fusion
 *      on, moe_route of a decode step (<= CUDA_MOE_GRP_PAIRS pairs) does
 *      this in its own launch into moe_grp (cuda_moe_rec), and moe_ffn of
 *      the same sel uses that.
 *   2. x quantized once per row (q8_1), not once per pair.
 *   3. gate and up in ONE grouped launch (grid.y = group): each weight row
 *      of the expert is read once for all of its pairs; the kernel stores
 *      SiLU(gate) * up directly. (Different gate/up types: two launches +
 *      silu_mul.)
 *   4. that activation is quantized per pair, then down in one grouped
 *      launch, then a weighted sum per row.
 *   The grid covers min(X, P) groups; groups past the live count exit.
 *   Nothing depends on host-side knowledge of the routing, so the whole
 *   layer can be captured in a CUDA graph.
 */
#include <string.h>

#include "cuda_internal.h"

static enum st_status no_kernel(const char *op, const struct st_tensor *w, struct st_err *err)
{
    return st_err_set(err, ST_ERR_UNSUPPORTED, "%s: cuda has no kernel for %s rows of %lld", op,
                      cuda_type_name(w->type), (long long)w->ne[0]);
}

/* The dp4a / float path for n <= CUDA_MMV_MAX_ROWS. */
static enum st_status matmul_mmv(struct cuda_backend *cb, float *y, const float *x, int64_t n,
                                 const struct st_tensor *w, struct st_err *err)
{
    struct st_kern_mmv_args a = {
        .type = (int)w->type, .w = w->data, .w_row_bytes = st_tensor_row_bytes(w),
        .n_in = w->ne[0], .n_out = w->ne[1], .x = x, .x_stride = (size_t)w->ne[0] * 4,
        .y = y, .y_stride = w->ne[1], .n_rows = n,
    };
    enum st_status rc;

    if (st_kern_mmv_quantized(a.type) && n <= CUDA_MMV_MAX_ROWS) {
        /* the q8_1 rows of x: reused when actq already holds them */
        rc = cuda_actq_quantize(cb, x, a.n_in, n, &a.x, &a.x_stride, err);
        if (rc != ST_OK)
            return rc;
    } else if (st_kern_mmv_quantized(a.type)) {
        void *xq;
        a.x_stride = st_kern_q8_1_row_bytes(a.n_in);
        rc = cuda_scratch(cb, a.x_stride * (size_t)n, &xq, err);
        if (rc != ST_OK)
            return rc;
        rc = ST_CUDA_LAUNCH(cb, st_kern_quantize_q8_1(xq, a.x_stride, x, a.n_in, n, cb->stream),
                            "quantize_q8_1", err);
        if (rc != ST_OK)
            return rc;
        cuda_count(cb, cuda_row_chunks(n));
        a.x = xq;
    }
    cuda_count(cb, 1);
    return ST_CUDA_LAUNCH(cb, st_kern_mmv(&a, cb->stream), "mmv", err);
}

/* The cuBLAS path: fp16 slabs of W times fp16 x, fp32 accumulate. */
static enum st_status matmul_gemm(struct cuda_backend *cb, float *y, const float *x, int64_t n,
                                  const struct st_tensor *w, struct st_err *err)
{
    const int64_t I = w->ne[0], O = w->ne[1];
    const float one = 1.0f, zero = 0.0f;
    enum st_status rc;

    cuda_count(cb, 1);   /* the Sgemm, or the fp16 conversion of x */
    if (w->type == ST_DTYPE_F32)
        return ST_CUBLAS(cb, cublasSgemm(cb->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)O, (int)n,
                                         (int)I, &one, w->data, (int)I, x, (int)I, &zero, y,
                                         (int)O), err);
    int64_t slab = (int64_t)(CUDA_GEMM_SLAB_ELEMS / (size_t)I);
    if (slab < 1)
        slab = 1;
    if (slab > O)
        slab = O;
    size_t sizes[2] = { (size_t)(n * I) * 2, (size_t)(slab * I) * 2 };
    void *parts[2];
    rc = cuda_scratch_parts(cb, 2, sizes, parts, err);
    if (rc != ST_OK)
        return rc;
    rc = ST_CUDA_LAUNCH(cb, st_kern_f32_to_f16(parts[0], x, n * I, cb->stream), "f32_to_f16", err);
    for (int64_t o0 = 0; o0 < O && rc == ST_OK; o0 += slab) {
        int64_t rows = O - o0 < slab ? O - o0 : slab;
        cuda_count(cb, 2);   /* dequantize the slab, then its GEMM */
        const char *slab_w = (const char *)w->data + (size_t)o0 * st_tensor_row_bytes(w);
        rc = ST_CUDA_LAUNCH(cb, st_kern_dequant_f16(parts[1], slab_w, (int)w->type,
                                                    st_tensor_row_bytes(w), rows, I, cb->stream),
                            "dequant_f16", err);
        if (rc == ST_OK)
            rc = ST_CUBLAS(cb, cublasGemmEx(cb->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)n,
                                            (int)I, &one, parts[1], CUDA_R_16F, (int)I, parts[0],
                                            CUDA_R_16F, (int)I, &zero, y + o0, CUDA_R_32F,
                                            (int)O, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                           err);
    }
    return rc;
}

enum st_status cuda_matmul_raw(struct cuda_backend *cb, float *y, const float *x, int64_t n,
                               const struct st_tensor *w, struct st_err *err)
{
    bool mmv_ok = st_kern_mmv_supported((int)w->type, w->ne[0]);
    bool gemm_ok = w->type == ST_DTYPE_F32 ||
                   (st_kern_dequant_supported((int)w->type) && w->ne[0] % 32 == 0);

    if (w->ne[0] > 0x7fffffff || w->ne[1] > 0x7fffffff || n > 0x7fffffff)
        return no_kernel("matmul", w, err);
    if (mmv_ok && (n <= CUDA_MMV_MAX_ROWS || !gemm_ok))
        return matmul_mmv(cb, y, x, n, w, err);
    if (gemm_ok)
        return matmul_gemm(cb, y, x, n, w, err);
    return no_kernel("matmul", w, err);
}

enum st_status cuda_op_matmul(struct st_backend *be, ST_T out, ST_T x, ST_T w,
                              struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_actq_wrote_t(cb, out);
    return cuda_matmul_raw(cb, out->data, x->data, x->ne[1], w, err);
}

enum st_status cuda_op_moe_route(struct st_backend *be, ST_T sel, ST_T weights, ST_T x,
                                 ST_T router, const struct st_moe_route_params *rp,
                                 struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    int64_t n = x->ne[1], n_exp = router->ne[1];
    enum st_status rc = cuda_enter(cb, err);
    float *logits;

    if (rc != ST_OK)
        return rc;
    if (n_exp > 1024 || sel->ne[0] > 32)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "moe_route: cuda handles up to 1024 experts "
                          "and 32 per token (got %lld, %lld)", (long long)n_exp,
                          (long long)sel->ne[0]);
    /* the logits sit in the second scratch: the router matmul uses the
     * first (a persistent buffer, not cudaMallocAsync: nothing is
     * allocated inside a captured graph) */
    cuda_actq_wrote_t(cb, sel);
    cuda_actq_wrote_t(cb, weights);
    rc = cuda_aux(cb, (size_t)(n * n_exp) * sizeof(float), (void **)&logits, err);
    if (rc != ST_OK)
        return rc;
    rc = cuda_matmul_raw(cb, logits, x->data, n, router, err);
    if (rc != ST_OK)
        return rc;
    cuda_count(cb, 1);
    const int64_t k = sel->ne[0], P = n * k;
    if (cb->fuse && n <= CUDA_MMV_MAX_ROWS && P <= CUDA_MOE_GRP_PAIRS &&
        n_exp <= ST_KERN_MOE_RG_MAX_EXP) {
        /* a decode step: the grouping of moe_ffn in the same launch */
        struct st_kern_moe_route_group a = {
            .sel = sel->data, .wts = weights->data, .logits = logits, .n_rows = n,
            .n_exp = (int32_t)n_exp, .k = (int32_t)k,
            .sigmoid = rp->gating == ST_MOE_GATING_SIGMOID, .norm = rp->norm,
            .bias = rp->bias ? rp->bias->data : NULL, .scale = rp->scale,
            .groups = cb->moe_grp, .pair_row = cb->moe_grp + 2 + 2 * CUDA_MOE_GRP_PAIRS,
            .pair_of = cb->moe_grp + 2 + 3 * CUDA_MOE_GRP_PAIRS,
            .max_groups = (int32_t)(n_exp < P ? n_exp : P), .err_flag = cb->err_flag,
        };
        rc = ST_CUDA_LAUNCH(cb, st_kern_moe_route_group(&a, cb->stream), "moe_route", err);
        if (rc == ST_OK)
            cb->moe_rec = (struct cuda_moe_rec){ sel->data, n, k, n_exp };
        return rc;
    }
    return ST_CUDA_LAUNCH(cb,
                          st_kern_moe_route(sel->data, weights->data, logits, n, (int32_t)n_exp,
                                            (int32_t)sel->ne[0],
                                            rp->gating == ST_MOE_GATING_SIGMOID,
                                            rp->bias ? rp->bias->data : NULL, rp->norm,
                                            rp->scale, cb->stream),
                          "moe_route", err);
}

struct moe_bufs {
    int32_t *groups, *pair_row, *pair_of;
    void *xq;       /* [n] q8_1 rows of E (quantized gate/up) */
    float *act;     /* [P, F] SiLU(gate) * up */
    float *up;      /* [P, F] up, when gate and up types differ */
    void *aq;       /* [P] q8_1 rows of F (quantized down) */
    float *yd;      /* [P, E] expert outputs */
    size_t xs, as;  /* row strides of xq and aq */
    int64_t n, P, G;   /* tokens, (token, expert) pairs, expert groups launched */
    int64_t E, F;      /* model width, FFN width */
};

static enum st_status moe_carve(struct cuda_backend *cb, int64_t n, int64_t P, int64_t G,
                                int64_t E, int64_t F, bool split_up, struct moe_bufs *b,
                                struct st_err *err)
{
    *b = (struct moe_bufs){ .n = n, .P = P, .G = G, .E = E, .F = F };
    b->xs = st_kern_q8_1_row_bytes(E);
    b->as = st_kern_q8_1_row_bytes(F);
    size_t sizes[8] = {
        (size_t)(2 + 2 * G) * 4, (size_t)P * 4, (size_t)P * 4, b->xs * (size_t)n,
        (size_t)(P * F) * 4, split_up ? (size_t)(P * F) * 4 : 0, b->as * (size_t)P,
        (size_t)(P * E) * 4,
    };
    void *p[8];
    enum st_status rc = cuda_scratch_parts(cb, 8, sizes, p, err);
    if (rc != ST_OK)
        return rc;
    b->groups = p[0];
    b->pair_row = p[1];
    b->pair_of = p[2];
    b->xq = p[3];
    b->act = p[4];
    b->up = split_up ? p[5] : NULL;
    b->aq = p[6];
    b->yd = p[7];
    return ST_OK;
}

/* One grouped launch over the experts of w (slab per expert). */
static enum st_status moe_mmv(struct cuda_backend *cb, const struct st_tensor *w,
                              const struct st_tensor *w2, const void *x, size_t xs,
                              const int32_t *x_rows, float *y, const struct moe_bufs *b,
                              int64_t G, struct st_err *err)
{
    struct st_kern_mmv_args a = {
        .type = (int)w->type, .w = w->data, .w2 = w2 ? w2->data : NULL,
        .w_row_bytes = st_tensor_row_bytes(w),
        .w_slab_bytes = st_tensor_row_bytes(w) * (size_t)w->ne[1],
        .n_in = w->ne[0], .n_out = w->ne[1], .x = x, .x_stride = xs, .y = y,
        .y_stride = w->ne[1], .groups = b->groups, .max_groups = (int32_t)G, .x_rows = x_rows,
        .n_rows = b->n,   /* a group (expert) has at most one pair per token */
    };
    return ST_CUDA_LAUNCH(cb, st_kern_mmv(&a, cb->stream), "moe mmv", err);
}

/* Activation rows for weight type t: q8_1 in 'q' (quantized from x) or x.
 * q == NULL: x is the op's input of <= CUDA_MMV_MAX_ROWS rows, quantized
 * into actq or found there (the norm epilogue or an earlier matmul). */
static enum st_status moe_act(struct cuda_backend *cb, enum st_dtype t, const float *x,
                              int64_t rows, int64_t width, void *q, size_t qs, const void **out,
                              size_t *stride, struct st_err *err)
{
    if (!st_kern_mmv_quantized((int)t)) {
        *out = x;
        *stride = (size_t)width * 4;
        return ST_OK;
    }
    if (q == NULL)   /* the FFN's input x: actq (reused when it holds x already) */
        return cuda_actq_quantize(cb, x, width, rows, out, stride, err);
    *out = q;
    *stride = qs;
    cuda_count(cb, cuda_row_chunks(rows));
    return ST_CUDA_LAUNCH(cb, st_kern_quantize_q8_1(q, qs, x, width, rows, cb->stream),
                          "quantize_q8_1", err);
}

/* gate and up of different types: two products, then SwiGLU into b->act.
 * xa, xs: the activation rows the gate product takes (moe_act). */
static enum st_status moe_gate_up_split(struct cuda_backend *cb, ST_T x, ST_T gate, ST_T up,
                                        const struct moe_bufs *b, const void *xa, size_t xs,
                                        struct st_err *err)
{
    enum st_status rc;

    cuda_count(cb, 3);   /* gate, up, silu_mul */
    rc = moe_mmv(cb, gate, NULL, xa, xs, b->pair_row, b->act, b, b->G, err);
    if (rc != ST_OK)
        return rc;
    if (st_kern_mmv_quantized((int)up->type) != st_kern_mmv_quantized((int)gate->type)) {
        rc = moe_act(cb, up->type, x->data, b->n, b->E, b->xq, b->xs, &xa, &xs, err);
        if (rc != ST_OK)
            return rc;
    }
    rc = moe_mmv(cb, up, NULL, xa, xs, b->pair_row, b->up, b, b->G, err);
    if (rc != ST_OK)
        return rc;
    return ST_CUDA_LAUNCH(cb, st_kern_silu_mul(b->act, b->act, b->up, b->P * b->F, cb->stream),
                          "silu_mul", err);
}

enum st_status cuda_op_moe_ffn(struct st_backend *be, ST_T out, ST_T x, ST_T sel, ST_T weights,
                               ST_T gate, ST_T up, ST_T down, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    const int64_t n = x->ne[1], k = sel->ne[0], P = n * k, X = gate->ne[2];
    const int64_t E = x->ne[0], F = gate->ne[1], G = X < P ? X : P;
    const bool fused = gate->type == up->type;
    enum st_status rc = cuda_enter(cb, err);
    struct moe_bufs b;
    const void *xa, *aa;
    size_t xs, as;

    if (rc != ST_OK)
        return rc;
    if (!st_kern_mmv_supported((int)gate->type, E) || !st_kern_mmv_supported((int)up->type, E))
        return no_kernel("moe_ffn", gate, err);
    if (!st_kern_mmv_supported((int)down->type, F))
        return no_kernel("moe_ffn", down, err);
    if (X > 1024 || G > 65535 || P > 0x7fffffff)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "moe_ffn: %lld experts, %lld pairs",
                          (long long)X, (long long)P);
    /* actq first: growing it (first run of a shape only) syncs the stream */
    const bool x_actq = n <= CUDA_MMV_MAX_ROWS;
    void *xq_actq = NULL;
    if (x_actq && (st_kern_mmv_quantized((int)gate->type) ||
                   st_kern_mmv_quantized((int)up->type))) {
        rc = cuda_actq_buffer(cb, E, n, &xq_actq, err);
        if (rc != ST_OK)
            return rc;
    }
    rc = moe_carve(cb, n, P, G, E, F, !fused, &b, err);
    if (rc != ST_OK)
        return rc;
    if (x_actq)
        b.xq = NULL;
    cuda_actq_wrote_t(cb, out);
    /* moe_route grouped this sel already (fusion on, a decode step) */
    const struct cuda_moe_rec *mr = &cb->moe_rec;
    const bool grouped = mr->sel == sel->data && mr->n == n && mr->k == k && mr->n_exp == X;
    cuda_count(cb, grouped ? 2 : 3);   /* (group,) down, combine */
    if (grouped) {
        b.groups = cb->moe_grp;
        b.pair_row = cb->moe_grp + 2 + 2 * CUDA_MOE_GRP_PAIRS;
        b.pair_of = cb->moe_grp + 2 + 3 * CUDA_MOE_GRP_PAIRS;
    } else {
        rc = ST_CUDA_LAUNCH(cb, st_kern_moe_group(b.groups, b.pair_row, b.pair_of, sel->data, n,
                                                  (int32_t)k, (int32_t)X, (int32_t)G,
                                                  cb->err_flag, cb->stream), "moe_group", err);
        if (rc != ST_OK)
            return rc;
    }
    rc = moe_act(cb, gate->type, x->data, n, E, b.xq, b.xs, &xa, &xs, err);
    if (rc != ST_OK)
        return rc;
    if (fused) {
        cuda_count(cb, 1);
        rc = moe_mmv(cb, gate, up, xa, xs, b.pair_row, b.act, &b, G, err);
    } else {
        rc = moe_gate_up_split(cb, x, gate, up, &b, xa, xs, err);
    }
    if (rc != ST_OK)
        return rc;
    rc = moe_act(cb, down->type, b.act, P, F, b.aq, b.as, &aa, &as, err);
    if (rc != ST_OK)
        return rc;
    rc = moe_mmv(cb, down, NULL, aa, as, NULL, b.yd, &b, G, err);
    if (rc != ST_OK)
        return rc;
    return ST_CUDA_LAUNCH(cb, st_kern_moe_combine(out->data, b.yd, weights->data, b.pair_of, n,
                                                  (int32_t)k, E, cb->stream), "moe_combine", err);
}
