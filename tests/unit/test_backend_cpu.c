/* test_backend_cpu.c -- the op table on the CPU backend, public API only.
 *
 * Every op is compared with a naive implementation written here in the
 * most obvious way (dequantize everything with the quant.h reference,
 * compute in double). Matmul-like ops quantize the activations exactly as
 * the backend is specified to (docs/design/ENGINE.md 2.11), so their tolerance is
 * float rounding; a looser check against unquantized activations makes
 * sure the quantization is the right one. Also: the registry, tensor
 * memory (zero-copy wrap, slices), argument validation, and that results
 * do not depend on the thread count or on which rows share a batch (what
 * makes "-np 4" give each slot its solo tokens).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strata/backend.h"
#include "strata/quant.h"
#include "support.h"

/* Rope parameters without YaRN (ext_factor 0, attn_factor 1): what the op
 * took as loose floats before st_rope_params. */
#define ROPE(n_rot, base, scale) \
    (&(struct st_rope_params){ (n_rot), (base), (scale), 0.0f, 1.0f, 0.0f, 0.0f })

/* qwen3moe's routing: softmax, renormalized, unscaled. */
static const struct st_moe_route_params SOFTMAX_ROUTE = { ST_MOE_GATING_SOFTMAX, NULL, true, 1.0f };

static const enum st_dtype wtypes[] = {
    ST_DTYPE_F32, ST_DTYPE_F16, ST_DTYPE_BF16, ST_DTYPE_Q8_0, ST_DTYPE_Q4_0, ST_DTYPE_Q4_K,
    ST_DTYPE_Q5_K, ST_DTYPE_Q6_K, ST_DTYPE_IQ3_S, ST_DTYPE_IQ3_XXS, ST_DTYPE_IQ4_XS,
    ST_DTYPE_Q4_1, ST_DTYPE_Q5_0, ST_DTYPE_Q5_1, ST_DTYPE_Q2_K, ST_DTYPE_Q3_K,
};

static struct st_backend *be;

static void setup(void)
{
    struct st_backend_config cfg = { 3, 0 };   /* odd count: uneven splits */
    struct st_err err;
    ck_assert_int_eq(st_backend_open("cpu", &cfg, &be, &err), ST_OK);
}

static void teardown(void)
{
    st_backend_close(be);
    be = NULL;
}

static uint64_t seed_state;
static float rndf(void)
{
    uint64_t z = (seed_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)(z >> 40) / (float)(1 << 23) - 1.0f;   /* [-1, 1) */
}

static float *rand_floats(int64_t n, float scale)
{
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        v[i] = rndf() * scale;
    return v;
}

static struct st_tensor mk(enum st_dtype t, int64_t ne0, int64_t ne1, int64_t ne2)
{
    struct st_tensor out;
    struct st_err err;
    ck_assert_int_eq(st_backend_alloc(be, t, (int64_t[4]){ ne0, ne1, ne2, 1 }, &out, &err), ST_OK);
    return out;
}

static struct st_tensor mk_f32(const float *v, int64_t ne0, int64_t ne1)
{
    struct st_tensor t = mk(ST_DTYPE_F32, ne0, ne1, 1);
    ck_assert_int_eq(st_backend_write(be, &t, 0, v, st_tensor_nbytes(&t), NULL), ST_OK);
    return t;
}

static struct st_tensor mk_i32(const int32_t *v, int64_t n)
{
    struct st_tensor t = mk(ST_DTYPE_I32, n, 1, 1);
    ck_assert_int_eq(st_backend_write(be, &t, 0, v, (size_t)n * 4, NULL), ST_OK);
    return t;
}

static float *read_f32(const struct st_tensor *t)
{
    float *v = malloc(st_tensor_nbytes(t));
    ck_assert_int_eq(st_backend_read(be, t, 0, v, st_tensor_nbytes(t), NULL), ST_OK);
    return v;
}

/* Quantize rows of floats to 'type' (host bytes) and the float values the
 * quantized weights stand for. */
static void *quantize(enum st_dtype t, const float *src, int64_t n_in, int64_t rows,
                      float **deq)
{
    size_t rb = st_dtype_row_bytes(t, n_in);
    uint8_t *q = malloc(rb * (size_t)rows);
    *deq = malloc((size_t)(n_in * rows) * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        st_quantize_row(t, src + r * n_in, q + (size_t)r * rb, n_in);
        st_dequant_row(t, q + (size_t)r * rb, *deq + r * n_in, n_in);
    }
    return q;
}

static enum st_dtype act_type(enum st_dtype t)
{
    switch (t) {
    case ST_DTYPE_F32: case ST_DTYPE_F16: case ST_DTYPE_BF16: return t;
    case ST_DTYPE_Q8_0: case ST_DTYPE_Q4_0: case ST_DTYPE_Q4_1: case ST_DTYPE_Q5_0:
    case ST_DTYPE_Q5_1:
        return ST_DTYPE_Q8_0;
    default: return ST_DTYPE_Q8_K;
    }
}

/* x as the kernels see it: quantized to the dot type and back. */
static void act_roundtrip(enum st_dtype wt, const float *x, float *out, int64_t n)
{
    enum st_dtype at = act_type(wt);
    void *buf = malloc(st_dtype_row_bytes(at, n));
    if (at == ST_DTYPE_Q8_K)
        st_quantize_row_q8_k(x, buf, n);
    else if (at == ST_DTYPE_Q8_0)
        st_quantize_row_q8_0(x, buf, n);
    else
        st_quantize_row(at, x, buf, n);
    st_dequant_row(at, buf, out, n);
    free(buf);
}

/* ---- registry and memory ------------------------------------------------ */

START_TEST(test_backend_cpu_registry)
{
    struct st_backend *other;
    struct st_err err;
    ck_assert(st_backend_available("cpu"));
    ck_assert(!st_backend_available("nope"));
    ck_assert_int_eq(st_backend_check_ops("cpu", &err), ST_OK);
    ck_assert_int_eq(st_backend_open("nope", NULL, &other, &err), ST_ERR_UNSUPPORTED);
    ck_assert_ptr_null(other);
    ck_assert_ptr_nonnull(strstr(err.msg, "cpu"));     /* lists what is built */
    ck_assert_str_eq(st_backend_name(be), "cpu");
    ck_assert_ptr_nonnull(strstr(st_backend_describe(be), "3 threads"));
}
END_TEST

START_TEST(test_backend_cpu_tensor_memory)
{
    struct st_err err;
    struct st_tensor t = mk(ST_DTYPE_F32, 8, 4, 1), bad;
    float v[32], back[32];
    for (int i = 0; i < 32; i++)
        v[i] = (float)i;
    float *z = read_f32(&t);
    for (int i = 0; i < 32; i++)
        ck_assert(z[i] == 0.0f);                              /* zero-filled */
    free(z);
    ck_assert_int_eq(st_backend_write(be, &t, 0, v, sizeof(v), &err), ST_OK);
    ck_assert_int_eq(st_backend_write(be, &t, 4, v, sizeof(v), &err), ST_ERR_INVALID);
    struct st_tensor rows = st_tensor_slice(&t, 1, 2, 2);
    ck_assert_int_eq(rows.ne[1], 2);
    ck_assert_int_eq(st_backend_read(be, &rows, 0, back, 16 * sizeof(float), &err), ST_OK);
    ck_assert(back[0] == 16.0f && back[15] == 31.0f);
    struct st_tensor r2 = st_tensor_reshape(&t, (int64_t[4]){ 16, 2, 1, 1 });
    ck_assert_int_eq(st_tensor_nrows(&r2), 2);
    ck_assert_int_eq((int)st_tensor_row_bytes(&r2), 64);
    st_backend_release(be, &rows);                             /* views: no-op */
    st_backend_release(be, &t);
    ck_assert_ptr_null(t.data);

    /* weights are wrapped in place: same pointer, read-only */
    uint8_t host[144 * 2];
    memset(host, 7, sizeof(host));
    struct st_tensor w;
    ck_assert_int_eq(st_backend_wrap(be, ST_DTYPE_Q4_K, (int64_t[4]){ 256, 2, 1, 1 }, host,
                                     sizeof(host), &w, &err), ST_OK);
    ck_assert_ptr_eq(w.data, host);
    ck_assert_int_eq(st_backend_write(be, &w, 0, host, 4, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_wrap(be, ST_DTYPE_Q4_K, (int64_t[4]){ 256, 2, 1, 1 }, host, 100,
                                     &bad, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_alloc(be, ST_DTYPE_Q4_K, (int64_t[4]){ 100, 1, 1, 1 }, &bad, &err),
                     ST_ERR_INVALID);                          /* not whole blocks */
    ck_assert_int_eq(st_backend_alloc(be, ST_DTYPE_F32, (int64_t[4]){ 4, 0, 1, 1 }, &bad, &err),
                     ST_ERR_INVALID);
    st_backend_release(be, &w);
}
END_TEST

/* st_backend_copy: device-side copies between tensors and within one (KV
 * rows of one slot to another: prefix sharing), checked ranges. */
START_TEST(test_backend_cpu_copy)
{
    struct st_err err;
    /* an f16 "KV cache" [4, C = 6, S = 2]: row (s, p) at s * 6 + p */
    struct st_tensor kv = mk(ST_DTYPE_F16, 4, 6, 2), other = mk(ST_DTYPE_F32, 8, 2, 1);
    uint16_t v[48], back[48];
    for (int i = 0; i < 48; i++)
        v[i] = (uint16_t)(1000 + i);
    ck_assert_int_eq(st_backend_write(be, &kv, 0, v, sizeof(v), &err), ST_OK);
    const size_t row = st_tensor_row_bytes(&kv);   /* 8 bytes */
    ck_assert_uint_eq(row, 8);
    /* slot 0 rows [1, 4) -> slot 1 rows [1, 4) in the same tensor */
    ck_assert_int_eq(st_backend_copy(be, &kv, (6 + 1) * row, &kv, 1 * row, 3 * row, &err), ST_OK);
    ck_assert_int_eq(st_backend_read(be, &kv, 0, back, sizeof(back), &err), ST_OK);
    for (int i = 0; i < 48; i++) {
        int r = i / 4, col = i % 4;
        bool moved = r >= 7 && r < 10;
        uint16_t want = moved ? (uint16_t)(1000 + (r - 6) * 4 + col) : (uint16_t)(1000 + i);
        ck_assert_msg(back[i] == want, "element %d: %u, want %u", i, back[i], want);
    }
    /* between two tensors, through views */
    struct st_tensor r1 = st_tensor_slice(&other, 1, 1, 1);
    ck_assert_int_eq(st_backend_copy(be, &r1, 0, &kv, 0, 32, &err), ST_OK);
    uint16_t got[16];
    ck_assert_int_eq(st_backend_read(be, &other, 32, got, 32, &err), ST_OK);
    for (int i = 0; i < 16; i++)
        ck_assert_uint_eq(got[i], 1000 + i);
    /* n = 0 is a no-op; overlaps, out-of-range and read-only targets are refused */
    ck_assert_int_eq(st_backend_copy(be, &kv, 0, &kv, 0, 0, &err), ST_OK);
    ck_assert_int_eq(st_backend_copy(be, &kv, 8, &kv, 0, 16, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_copy(be, &kv, 0, &kv, 8, 16, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_copy(be, &kv, 0, &kv, 16, 16, &err), ST_OK);   /* adjacent */
    ck_assert_int_eq(st_backend_copy(be, &kv, 90, &kv, 0, 8, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_copy(be, &other, 0, &kv, 92, 8, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_copy(be, &r1, 0, &kv, 0, 40, &err), ST_ERR_INVALID);
    uint8_t host[64] = { 0 };
    struct st_tensor w;
    ck_assert_int_eq(st_backend_wrap(be, ST_DTYPE_F32, (int64_t[4]){ 16, 1, 1, 1 }, host,
                                     sizeof(host), &w, &err), ST_OK);
    ck_assert_int_eq(st_backend_copy(be, &w, 0, &kv, 0, 8, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_copy(be, &kv, 0, &w, 0, 8, &err), ST_OK);   /* from it: fine */
    st_backend_release(be, &w);
    st_backend_release(be, &kv);
    st_backend_release(be, &other);
}
END_TEST

/* ---- matmul ------------------------------------------------------------- */

/* y = x . W^T for one weight type, n rows, against double references. */
static void check_matmul(enum st_dtype t, int64_t n_in, int64_t n_out, int64_t n)
{
    float *wf = rand_floats(n_in * n_out, 0.5f), *wd, *x = rand_floats(n_in * n, 1.0f);
    float *xq = malloc((size_t)n_in * sizeof(float));
    void *wq = quantize(t, wf, n_in, n_out, &wd);
    struct st_tensor w, xt = mk_f32(x, n_in, n), y = mk(ST_DTYPE_F32, n_out, n, 1);
    struct st_err err;

    ck_assert_int_eq(st_backend_wrap(be, t, (int64_t[4]){ n_in, n_out, 1, 1 }, wq,
                                     st_dtype_row_bytes(t, n_in) * (size_t)n_out, &w, &err), ST_OK);
    ck_assert_int_eq(st_backend_matmul(be, &y, &xt, &w, &err), ST_OK);
    float *got = read_f32(&y);
    for (int64_t r = 0; r < n; r++) {
        act_roundtrip(t, x + r * n_in, xq, n_in);
        for (int64_t o = 0; o < n_out; o++) {
            double want = 0, exact = 0, mag = 0;
            for (int64_t i = 0; i < n_in; i++) {
                want += (double)wd[o * n_in + i] * xq[i];
                exact += (double)wd[o * n_in + i] * x[r * n_in + i];
                mag += fabs((double)wd[o * n_in + i] * x[r * n_in + i]);
            }
            double g = got[r * n_out + o];
            ck_assert_msg(fabs(g - want) <= 2e-4 * mag + 1e-5, "%s r%lld o%lld: %g vs %g",
                          st_dtype_info(t)->name, (long long)r, (long long)o, g, want);
            ck_assert_msg(fabs(g - exact) <= 2e-2 * mag + 1e-4, "%s: far from exact",
                          st_dtype_info(t)->name);
        }
    }
    free(got);
    st_backend_release(be, &w);
    st_backend_release(be, &xt);
    st_backend_release(be, &y);
    free(wf); free(wd); free(wq); free(x); free(xq);
}

START_TEST(test_backend_cpu_matmul_every_type)
{
    seed_state = 11;
    for (size_t i = 0; i < sizeof(wtypes) / sizeof(wtypes[0]); i++) {
        check_matmul(wtypes[i], 512, 37, 1);
        check_matmul(wtypes[i], 512, 37, 11);    /* groups of rows plus a remainder */
    }
}
END_TEST

/* Each row's result must not depend on the batch it is in or on the
 * thread count: bitwise, for every type. */
START_TEST(test_backend_cpu_matmul_batch_invariant)
{
    struct st_backend *one;
    struct st_backend_config cfg1 = { 1, 0 };
    struct st_err err;
    ck_assert_int_eq(st_backend_open("cpu", &cfg1, &one, &err), ST_OK);
    seed_state = 12;
    for (size_t ti = 0; ti < sizeof(wtypes) / sizeof(wtypes[0]); ti++) {
        enum st_dtype t = wtypes[ti];
        int64_t n_in = 256, n_out = 70, n = 9;
        float *wf = rand_floats(n_in * n_out, 0.5f), *wd, *x = rand_floats(n_in * n, 1.0f);
        void *wq = quantize(t, wf, n_in, n_out, &wd);
        size_t wb = st_dtype_row_bytes(t, n_in) * (size_t)n_out;
        struct st_tensor w, w1, xt = mk_f32(x, n_in, n), y = mk(ST_DTYPE_F32, n_out, n, 1);
        struct st_tensor x1, y1;
        ck_assert_int_eq(st_backend_wrap(be, t, (int64_t[4]){ n_in, n_out, 1, 1 }, wq, wb, &w, &err), ST_OK);
        ck_assert_int_eq(st_backend_wrap(one, t, (int64_t[4]){ n_in, n_out, 1, 1 }, wq, wb, &w1, &err), ST_OK);
        ck_assert_int_eq(st_backend_alloc(one, ST_DTYPE_F32, (int64_t[4]){ n_in, 1, 1, 1 }, &x1, &err), ST_OK);
        ck_assert_int_eq(st_backend_alloc(one, ST_DTYPE_F32, (int64_t[4]){ n_out, 1, 1, 1 }, &y1, &err), ST_OK);
        ck_assert_int_eq(st_backend_matmul(be, &y, &xt, &w, &err), ST_OK);
        float *all = read_f32(&y), solo[70];
        for (int64_t r = 0; r < n; r++) {
            ck_assert_int_eq(st_backend_write(one, &x1, 0, x + r * n_in, (size_t)n_in * 4, &err), ST_OK);
            ck_assert_int_eq(st_backend_matmul(one, &y1, &x1, &w1, &err), ST_OK);
            ck_assert_int_eq(st_backend_read(one, &y1, 0, solo, sizeof(solo), &err), ST_OK);
            ck_assert_msg(memcmp(solo, all + r * n_out, sizeof(solo)) == 0,
                          "%s: row %lld differs alone vs in a batch of %lld on 3 threads",
                          st_dtype_info(t)->name, (long long)r, (long long)n);
        }
        free(all);
        st_backend_release(be, &w); st_backend_release(be, &xt); st_backend_release(be, &y);
        st_backend_release(one, &w1); st_backend_release(one, &x1); st_backend_release(one, &y1);
        free(wf); free(wd); free(wq); free(x);
    }
    st_backend_close(one);
}
END_TEST

START_TEST(test_backend_cpu_matmul_rejects_bad_args)
{
    struct st_err err;
    struct st_tensor x = mk(ST_DTYPE_F32, 256, 2, 1), y = mk(ST_DTYPE_F32, 8, 2, 1);
    struct st_tensor w = mk(ST_DTYPE_Q4_K, 512, 8, 1), wk = mk(ST_DTYPE_Q8_K, 256, 8, 1);
    struct st_tensor y3 = mk(ST_DTYPE_F32, 8, 3, 1);
    ck_assert_int_eq(st_backend_matmul(be, &y, &x, &w, &err), ST_ERR_INVALID);   /* width */
    ck_assert_ptr_nonnull(strstr(err.msg, "matmul"));
    ck_assert_int_eq(st_backend_matmul(be, &y, &x, &wk, &err), ST_ERR_UNSUPPORTED);
    struct st_tensor w2 = st_tensor_slice(&w, 1, 0, 8);
    (void)w2;
    ck_assert_int_eq(st_backend_matmul(be, &y3, &x, &wk, &err), ST_ERR_INVALID); /* rows */
    ck_assert_int_eq(st_backend_matmul(be, &y, &x, NULL, &err), ST_ERR_INVALID);
    /* float rows the 8-wide kernels cannot read whole: refused, not read past */
    struct st_tensor x12 = mk(ST_DTYPE_F32, 12, 2, 1), w12 = mk(ST_DTYPE_F16, 12, 8, 1);
    ck_assert_int_eq(st_backend_matmul(be, &y, &x12, &w12, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "matmul: bad w"));
    st_backend_release(be, &x); st_backend_release(be, &y); st_backend_release(be, &w);
    st_backend_release(be, &wk); st_backend_release(be, &y3);
    st_backend_release(be, &x12); st_backend_release(be, &w12);
}
END_TEST

/* ---- embed, norm, element-wise, rope ------------------------------------ */

START_TEST(test_backend_cpu_embed)
{
    seed_state = 21;
    for (size_t ti = 0; ti < sizeof(wtypes) / sizeof(wtypes[0]); ti++) {
        enum st_dtype t = wtypes[ti];
        float *tf = rand_floats(256 * 10, 1.0f), *td;
        void *tq = quantize(t, tf, 256, 10, &td);
        struct st_tensor table, out = mk(ST_DTYPE_F32, 256, 4, 1);
        int32_t ids[4] = { 3, 0, 9, 3 }, badids[4] = { 3, 10, 0, 0 };
        struct st_tensor it = mk_i32(ids, 4), bt = mk_i32(badids, 4);
        struct st_err err;
        ck_assert_int_eq(st_backend_wrap(be, t, (int64_t[4]){ 256, 10, 1, 1 }, tq,
                                         st_dtype_row_bytes(t, 256) * 10, &table, &err), ST_OK);
        ck_assert_int_eq(st_backend_embed(be, &out, &table, &it, &err), ST_OK);
        float *got = read_f32(&out);
        for (int r = 0; r < 4; r++)
            ck_assert(memcmp(got + r * 256, td + ids[r] * 256, 256 * sizeof(float)) == 0);
        ck_assert_int_eq(st_backend_embed(be, &out, &table, &bt, &err), ST_ERR_INVALID);
        free(got); free(tf); free(td); free(tq);
        st_backend_release(be, &table); st_backend_release(be, &out);
        st_backend_release(be, &it); st_backend_release(be, &bt);
    }
}
END_TEST

static void check_norm(int64_t c, int64_t g, int64_t n, bool alias)
{
    float *x = rand_floats(c * n, 3.0f), *w = rand_floats(g, 1.0f);
    struct st_tensor xt = mk_f32(x, c, n), wt = mk_f32(w, g, 1), out = mk(ST_DTYPE_F32, c, n, 1);
    struct st_tensor wv = st_tensor_reshape(&wt, (int64_t[4]){ g, 1, 1, 1 });
    const struct st_tensor *o = alias ? &xt : &out;
    ck_assert_int_eq(st_backend_rms_norm(be, o, &xt, &wv, 1e-6f, NULL), ST_OK);
    float *got = read_f32(o);
    for (int64_t k = 0; k < c * n / g; k++) {
        double ss = 0;
        for (int64_t i = 0; i < g; i++)
            ss += (double)x[k * g + i] * x[k * g + i];
        double sc = 1.0 / sqrt(ss / (double)g + 1e-6);
        for (int64_t i = 0; i < g; i++)
            ck_assert(fabs(got[k * g + i] - x[k * g + i] * sc * w[i]) <= 1e-5 * (1 + fabs(x[k * g + i] * sc)));
    }
    free(got); free(x); free(w);
    st_backend_release(be, &xt); st_backend_release(be, &wt); st_backend_release(be, &out);
}

START_TEST(test_backend_cpu_rms_norm_row_and_head)
{
    seed_state = 31;
    check_norm(768, 768, 5, false);         /* per row */
    check_norm(256, 64, 5, false);          /* per head: 4 heads of 64 share one gain */
    check_norm(768, 768, 100, true);        /* big enough to split; in place */
    struct st_tensor x = mk(ST_DTYPE_F32, 100, 2, 1), w = mk(ST_DTYPE_F32, 64, 1, 1);
    ck_assert_int_eq(st_backend_rms_norm(be, &x, &x, &w, 1e-6f, NULL), ST_ERR_INVALID);
    st_backend_release(be, &x); st_backend_release(be, &w);
}
END_TEST

START_TEST(test_backend_cpu_add_and_silu_mul)
{
    seed_state = 41;
    float *a = rand_floats(300 * 7, 4.0f), *b = rand_floats(300 * 7, 2.0f);
    struct st_tensor at = mk_f32(a, 300, 7), bt = mk_f32(b, 300, 7), out = mk(ST_DTYPE_F32, 300, 7, 1);
    ck_assert_int_eq(st_backend_add(be, &out, &at, &bt, NULL), ST_OK);
    float *s = read_f32(&out);
    ck_assert_int_eq(st_backend_silu_mul(be, &out, &at, &bt, NULL), ST_OK);
    float *m = read_f32(&out);
    for (int i = 0; i < 300 * 7; i++) {
        ck_assert(s[i] == a[i] + b[i]);
        double want = a[i] / (1.0 + exp(-(double)a[i])) * b[i];
        ck_assert(fabs(m[i] - want) <= 1e-5 * (1 + fabs(want)));
    }
    free(a); free(b); free(s); free(m);
    st_backend_release(be, &at); st_backend_release(be, &bt); st_backend_release(be, &out);
}
END_TEST

static void check_rope(int32_t d, int32_t n_rot, int32_t heads)
{
    int32_t pos[3] = { 0, 5, 1000 };
    int64_t c = (int64_t)d * heads;
    float *x = rand_floats(c * 3, 1.0f);
    struct st_tensor xt = mk_f32(x, c, 3), pt = mk_i32(pos, 3), out = mk(ST_DTYPE_F32, c, 3, 1);
    ck_assert_int_eq(st_backend_rope(be, &out, &xt, &pt, d, ROPE(n_rot, 1e6f, 1.0f), NULL), ST_OK);
    float *got = read_f32(&out);
    for (int r = 0; r < 3; r++)
        for (int h = 0; h < heads; h++) {
            const float *xi = x + r * c + h * d;
            const float *g = got + r * c + h * d;
            for (int i = 0; i < d; i++) {
                double want = xi[i];
                if (i < n_rot) {
                    int k = i % (n_rot / 2);
                    double th = pos[r] * pow(1e6, -2.0 * k / n_rot);
                    want = i < n_rot / 2 ? xi[k] * cos(th) - xi[k + n_rot / 2] * sin(th)
                                         : xi[k] * sin(th) + xi[k + n_rot / 2] * cos(th);
                }
                ck_assert_msg(fabs(g[i] - want) <= 3e-4, "rope r%d h%d i%d: %g vs %g", r, h, i,
                              (double)g[i], want);
            }
        }
    free(x); free(got);
    st_backend_release(be, &xt); st_backend_release(be, &pt); st_backend_release(be, &out);
}

START_TEST(test_backend_cpu_rope_neox)
{
    seed_state = 51;
    check_rope(64, 64, 4);
    check_rope(128, 64, 2);     /* partial rotation: dims >= n_rot pass through */
}
END_TEST

/* YaRN in double, straight from the definition (rope.h's file comment):
 * the angle of pair k at position p and the cos/sin multiplier. */
static double yarn_theta(double p, int k, int n_rot, double base, double factor, double orig,
                         double *mscale)
{
    const double pi = 3.14159265358979323846;
    double lo = floor(n_rot * log(orig / (32.0 * 2 * pi)) / (2 * log(base)));
    double hi = ceil(n_rot * log(orig / (1.0 * 2 * pi)) / (2 * log(base)));
    lo = lo > 0 ? lo : 0;
    hi = hi < n_rot - 1 ? hi : n_rot - 1;
    double y = (k - lo) / (hi - lo > 0.001 ? hi - lo : 0.001);
    double ramp = 1.0 - (y < 0 ? 0 : y > 1 ? 1 : y);
    double extrap = p * pow(base, -2.0 * k / n_rot), interp = extrap / factor;
    *mscale = 1.0 + 0.1 * log(factor);
    return interp * (1.0 - ramp) + extrap * ramp;
}

/* The CPU rope under YaRN (factor 4 over 32768 trained positions, Qwen3's
 * recommendation) against the double reference, up to 131072. The float
 * angle pos * inv_freq carries a few ulp of |theta|, so the bound grows
 * with theta; in the ramp (where a wrong formula shows) theta is small. */
static void check_rope_yarn(int32_t d, int32_t n_rot, float base)
{
    enum { NP = 8 };
    int32_t pos[NP] = { 0, 1, 4095, 32767, 32768, 65537, 131071, 131072 };
    int64_t c = (int64_t)d * 2;
    float *x = rand_floats(c * NP, 1.0f);
    struct st_tensor xt = mk_f32(x, c, NP), pt = mk_i32(pos, NP), out = mk(ST_DTYPE_F32, c, NP, 1);
    struct st_rope_params rp = st_rope_params_init(n_rot, base, 0.25f, 1.0f, 1.0f, 32768, 32.0f,
                                                   1.0f);
    ck_assert_int_eq(st_backend_rope(be, &out, &xt, &pt, d, &rp, NULL), ST_OK);
    float *got = read_f32(&out);
    double worst_ramp = 0;
    for (int r = 0; r < NP; r++)
        for (int64_t i = 0; i < c; i++) {
            const float *xi = x + r * c + (i / d) * d;
            int j = (int)(i % d), k = j % (n_rot / 2), half = n_rot / 2;
            double ms = 1.0, want = xi[j], th = 0;
            if (j < n_rot) {
                th = yarn_theta(pos[r], k, n_rot, base, 4.0, 32768.0, &ms);
                want = j < half ? ms * (xi[k] * cos(th) - xi[k + half] * sin(th))
                                : ms * (xi[k] * sin(th) + xi[k + half] * cos(th));
            }
            double tol = 2.5 * (fabs(th) * 6e-7 + 1e-5), e = fabs(got[r * c + i] - want);
            ck_assert_msg(e <= tol, "yarn rope d%d n_rot %d pos %d dim %d: %.9g vs %.9g (tol %g)",
                          d, n_rot, pos[r], j, (double)got[r * c + i], want, tol);
            if (j < n_rot && k > rp.corr_low && k < rp.corr_high && e > worst_ramp)
                worst_ramp = e;
        }
    ck_assert_msg(worst_ramp < 1e-3, "ramp error %g", worst_ramp);
    free(x); free(got);
    st_backend_release(be, &xt); st_backend_release(be, &pt); st_backend_release(be, &out);
}

START_TEST(test_backend_cpu_rope_yarn_matches_double)
{
    seed_state = 57;
    /* the ramp ends of Qwen3's head: corr_dim(32) = 23.6, corr_dim(1) = 39.65 */
    struct st_rope_params q = st_rope_params_init(128, 1e6f, 0.25f, 1, 1, 32768, 32, 1);
    ck_assert(q.corr_low == 23.0f && q.corr_high == 40.0f);
    ck_assert(fabsf(st_rope_mscale(&q) - (float)(1.0 + 0.1 * log(4.0))) < 1e-6f);
    check_rope_yarn(128, 128, 1e6f);    /* Qwen3 */
    check_rope_yarn(128, 64, 1e4f);     /* partial rotation, another base */
    check_rope_yarn(64, 64, 5e5f);
}
END_TEST

/* Without YaRN the op computes exactly what it did before rope params
 * existed: inv = scale * powf(base, -2i/n_rot), theta = pos * inv, no
 * multiplier. Bit for bit, for no scaling and linear scaling. */
static void check_rope_bits(float scale)
{
    int32_t pos[4] = { 0, 3, 4097, 131072 };
    const int32_t d = 128, n_rot = 96;
    float *x = rand_floats(d * 4, 1.0f);
    struct st_tensor xt = mk_f32(x, d, 4), pt = mk_i32(pos, 4), out = mk(ST_DTYPE_F32, d, 4, 1);
    ck_assert_int_eq(st_backend_rope(be, &out, &xt, &pt, d, ROPE(n_rot, 1e6f, scale), NULL), ST_OK);
    float *got = read_f32(&out);
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < n_rot / 2; i++) {
            float inv = scale * powf(1e6f, -2.0f * (float)i / (float)n_rot);
            float th = (float)pos[r] * inv, cs = cosf(th), sn = sinf(th);
            float x0 = x[r * d + i], x1 = x[r * d + i + n_rot / 2];
            float y0 = x0 * cs - x1 * sn, y1 = x0 * sn + x1 * cs;
            ck_assert(memcmp(&y0, &got[r * d + i], 4) == 0);
            ck_assert(memcmp(&y1, &got[r * d + i + n_rot / 2], 4) == 0);
        }
    free(x); free(got);
    st_backend_release(be, &xt); st_backend_release(be, &pt); st_backend_release(be, &out);
}

START_TEST(test_backend_cpu_rope_none_linear_unchanged)
{
    seed_state = 59;
    check_rope_bits(1.0f);
    check_rope_bits(0.25f);
    /* a linear st_rope_params_init is the same bits as the literal */
    struct st_rope_params a = st_rope_params_init(64, 1e4f, 0.5f, 0, 1, 32768, 32, 1);
    ck_assert(a.ext_factor == 0 && a.corr_low == 0 && a.corr_high == 0 && st_rope_mscale(&a) == 1);
    for (int i = 0; i < 32; i++)
        ck_assert(st_rope_inv_freq(&a, i) == 0.5f * powf(1e4f, -2.0f * (float)i / 64.0f));
}
END_TEST

/* YaRN over an original context so short (or long) that the ramp's ends
 * cross: llama.cpp's clamps leave high < low, a step at low; the params
 * must still be ones the op takes, with the same ramp. */
START_TEST(test_backend_cpu_rope_yarn_crossed_ends)
{
    int32_t pos[1] = { 3 };
    float v[128] = { 0 };
    struct st_tensor xt = mk_f32(v, 128, 1), pt = mk_i32(pos, 1);
    /* orig 2: corr_dim(beta_slow) = -5.3 -> high -5 before the fix */
    struct st_rope_params a = st_rope_params_init(128, 1e6f, 0.25f, 1, 1, 2, 32, 1);
    /* orig 1e9 at base 10: corr_dim(beta_fast) = 26.8 -> low 26 > n_rot - 1 */
    struct st_rope_params b = st_rope_params_init(8, 10.0f, 0.25f, 1, 1, 1000000000, 32, 1);
    ck_assert(a.corr_low == 0.0f && a.corr_high == 0.0f);
    ck_assert(b.corr_low == 26.0f && b.corr_high == 26.0f);
    ck_assert_int_eq(st_backend_rope(be, &xt, &xt, &pt, 128, &a, NULL), ST_OK);
    ck_assert_int_eq(st_backend_rope(be, &xt, &xt, &pt, 8, &b, NULL), ST_OK);
    /* the step: pair 0 keeps its trained frequency, the rest interpolate */
    ck_assert(st_rope_inv_freq(&a, 0) == 1.0f);
    for (int i = 1; i < 64; i++)
        ck_assert(st_rope_inv_freq(&a, i) == 0.25f * powf(1e6f, -2.0f * (float)i / 128.0f));
    for (int i = 0; i < 4; i++)   /* every pair of b is below its low end: trained */
        ck_assert(st_rope_inv_freq(&b, i) == powf(10.0f, -2.0f * (float)i / 8.0f));
    st_backend_release(be, &xt); st_backend_release(be, &pt);
}
END_TEST

/* Rope parameters the op refuses: no struct, negative ext_factor, zero
 * attn_factor, a ramp running backwards, a non-finite base. */
START_TEST(test_backend_cpu_rope_bad_params)
{
    int32_t pos[1] = { 1 };
    float v[64] = { 0 };
    struct st_tensor xt = mk_f32(v, 64, 1), pt = mk_i32(pos, 1);
    struct st_rope_params ok = st_rope_params_init(64, 1e6f, 0.25f, 1, 1, 32768, 32, 1), b;
    ck_assert_int_eq(st_backend_rope(be, &xt, &xt, &pt, 64, &ok, NULL), ST_OK);
    ck_assert_int_eq(st_backend_rope(be, &xt, &xt, &pt, 64, NULL, NULL), ST_ERR_INVALID);
    b = ok; b.ext_factor = -1.0f;
    ck_assert_int_eq(st_backend_rope(be, &xt, &xt, &pt, 64, &b, NULL), ST_ERR_INVALID);
    b = ok; b.attn_factor = 0.0f;
    ck_assert_int_eq(st_backend_rope(be, &xt, &xt, &pt, 64, &b, NULL), ST_ERR_INVALID);
    b = ok; b.corr_high = b.corr_low - 1.0f;
    ck_assert_int_eq(st_backend_rope(be, &xt, &xt, &pt, 64, &b, NULL), ST_ERR_INVALID);
    b = ok; b.freq_base = INFINITY;
    ck_assert_int_eq(st_backend_rope(be, &xt, &xt, &pt, 64, &b, NULL), ST_ERR_INVALID);
    st_backend_release(be, &xt); st_backend_release(be, &pt);
}
END_TEST

/* ---- fused ops: exactly the compositions -------------------------------- */

/* add_rms_norm(h, x, o, w) against add(x, x, o) then rms_norm(h, x, w), bit
 * for bit, per row (g = c) and per group; h aliasing o is allowed. */
static void check_add_rms_norm(int64_t c, int64_t g, int64_t n, bool h_is_o)
{
    float *x = rand_floats(c * n, 3.0f), *o = rand_floats(c * n, 2.0f), *w = rand_floats(g, 1.0f);
    struct st_tensor x1 = mk_f32(x, c, n), o1 = mk_f32(o, c, n), h1 = mk(ST_DTYPE_F32, c, n, 1);
    struct st_tensor x2 = mk_f32(x, c, n), o2 = mk_f32(o, c, n), h2 = mk(ST_DTYPE_F32, c, n, 1);
    struct st_tensor wt = mk_f32(w, g, 1);
    struct st_tensor wv = st_tensor_reshape(&wt, (int64_t[4]){ g, 1, 1, 1 });
    ck_assert_int_eq(st_backend_add(be, &x1, &x1, &o1, NULL), ST_OK);
    ck_assert_int_eq(st_backend_rms_norm(be, &h1, &x1, &wv, 1e-6f, NULL), ST_OK);
    const struct st_tensor *h = h_is_o ? &o2 : &h2;
    ck_assert_int_eq(st_backend_add_rms_norm(be, h, &x2, &o2, &wv, 1e-6f, NULL), ST_OK);
    float *wx = read_f32(&x1), *wh = read_f32(&h1), *gx = read_f32(&x2), *gh = read_f32(h);
    ck_assert(memcmp(wx, gx, st_tensor_nbytes(&x1)) == 0);
    ck_assert(memcmp(wh, gh, st_tensor_nbytes(&h1)) == 0);
    for (int64_t i = 0; i < c * n; i++)
        ck_assert(gx[i] == x[i] + o[i]);     /* and the add really happened */
    free(x); free(o); free(w); free(wx); free(wh); free(gx); free(gh);
    st_backend_release(be, &x1); st_backend_release(be, &o1); st_backend_release(be, &h1);
    st_backend_release(be, &x2); st_backend_release(be, &o2); st_backend_release(be, &h2);
    st_backend_release(be, &wt);
}

/* matmul3 against the three matmuls, bit for bit (types may differ), and
 * the overlaps it refuses. */
START_TEST(test_backend_cpu_matmul3_is_the_composition)
{
    const enum st_dtype types[3] = { ST_DTYPE_Q4_K, ST_DTYPE_Q8_0, ST_DTYPE_F32 };
    const int64_t n_in = 256, n = 3, O[3] = { 64, 32, 48 };
    struct st_tensor w[3], y3[3], y1[3];
    void *wq[3];
    struct st_err err;

    seed_state = 53;
    float *x = rand_floats(n_in * n, 1.0f);
    struct st_tensor xt = mk_f32(x, n_in, n);
    for (int i = 0; i < 3; i++) {
        float *wf = rand_floats(n_in * O[i], 0.5f), *wd;
        wq[i] = quantize(types[i], wf, n_in, O[i], &wd);
        ck_assert_int_eq(st_backend_wrap(be, types[i], (int64_t[4]){ n_in, O[i], 1, 1 }, wq[i],
                                         st_dtype_row_bytes(types[i], n_in) * (size_t)O[i], &w[i],
                                         &err), ST_OK);
        y3[i] = mk(ST_DTYPE_F32, O[i], n, 1);
        y1[i] = mk(ST_DTYPE_F32, O[i], n, 1);
        free(wf);
        free(wd);
    }
    ck_assert_int_eq(st_backend_matmul3(be, &y3[0], &y3[1], &y3[2], &xt, &w[0], &w[1], &w[2],
                                        &err), ST_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(st_backend_matmul(be, &y1[i], &xt, &w[i], &err), ST_OK);
        float *a = read_f32(&y3[i]), *b = read_f32(&y1[i]);
        ck_assert(memcmp(a, b, st_tensor_nbytes(&y1[i])) == 0);
        free(a);
        free(b);
    }
    /* an output overlapping x or another output; a wrong width */
    struct st_tensor xo = mk(ST_DTYPE_F32, 64, n, 1);
    ck_assert_int_eq(st_backend_matmul3(be, &y3[0], &y3[1], &y3[0], &xt, &w[0], &w[1], &w[0],
                                        &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_matmul3(be, &y3[0], &y3[1], &y3[2], &y3[0], &w[0], &w[1], &w[2],
                                        &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_matmul3(be, &y3[0], &y3[1], &xo, &xt, &w[0], &w[1], &w[2], &err),
                     ST_ERR_INVALID);
    st_backend_release(be, &xo);
    for (int i = 0; i < 3; i++) {
        st_backend_release(be, &w[i]);
        st_backend_release(be, &y3[i]);
        st_backend_release(be, &y1[i]);
        free(wq[i]);
    }
    st_backend_release(be, &xt);
    free(x);
}
END_TEST

START_TEST(test_backend_cpu_add_rms_norm_is_the_composition)
{
    seed_state = 47;
    check_add_rms_norm(768, 768, 5, false);
    check_add_rms_norm(768, 768, 100, true);    /* split across threads; h aliases o */
    check_add_rms_norm(256, 64, 3, false);      /* groups */
    /* h may not alias x; w must divide the row */
    struct st_tensor x = mk(ST_DTYPE_F32, 64, 2, 1), o = mk(ST_DTYPE_F32, 64, 2, 1);
    struct st_tensor w = mk(ST_DTYPE_F32, 64, 1, 1), w3 = mk(ST_DTYPE_F32, 48, 1, 1);
    ck_assert_int_eq(st_backend_add_rms_norm(be, &x, &x, &o, &w, 1e-6f, NULL), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_add_rms_norm(be, &o, &x, &o, &w3, 1e-6f, NULL), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_add_rms_norm(be, &o, &x, &o, &w, 0.0f, NULL), ST_ERR_INVALID);
    st_backend_release(be, &x); st_backend_release(be, &o);
    st_backend_release(be, &w); st_backend_release(be, &w3);
}
END_TEST

/* rms_norm_rope(out, x, w, pos) against rms_norm then rope, bit for bit. */
static void check_norm_rope_p(int32_t d, const struct st_rope_params *rp, int32_t heads,
                              bool in_place)
{
    int32_t pos[3] = { 0, 7, 4000 };
    int64_t c = (int64_t)d * heads;
    float *x = rand_floats(c * 3, 2.0f), *w = rand_floats(d, 1.0f);
    struct st_tensor xt = mk_f32(x, c, 3), pt = mk_i32(pos, 3), wt = mk_f32(w, d, 1);
    struct st_tensor wv = st_tensor_reshape(&wt, (int64_t[4]){ d, 1, 1, 1 });
    struct st_tensor ref = mk(ST_DTYPE_F32, c, 3, 1), out = mk(ST_DTYPE_F32, c, 3, 1);
    ck_assert_int_eq(st_backend_rms_norm(be, &ref, &xt, &wv, 1e-6f, NULL), ST_OK);
    ck_assert_int_eq(st_backend_rope(be, &ref, &ref, &pt, d, rp, NULL), ST_OK);
    const struct st_tensor *o = in_place ? &xt : &out;
    ck_assert_int_eq(st_backend_rms_norm_rope(be, o, &xt, &wv, &pt, rp, 1e-6f, NULL), ST_OK);
    float *want = read_f32(&ref), *got = read_f32(o);
    ck_assert(memcmp(want, got, st_tensor_nbytes(&ref)) == 0);
    ck_assert(memcmp(x, got, st_tensor_nbytes(&ref)) != 0);
    free(x); free(w); free(want); free(got);
    st_backend_release(be, &xt); st_backend_release(be, &pt); st_backend_release(be, &wt);
    st_backend_release(be, &ref); st_backend_release(be, &out);
}

static void check_norm_rope(int32_t d, int32_t n_rot, int32_t heads, bool in_place)
{
    check_norm_rope_p(d, ROPE(n_rot, 1e6f, 0.5f), heads, in_place);
}

START_TEST(test_backend_cpu_rms_norm_rope_is_the_composition)
{
    seed_state = 53;
    check_norm_rope(128, 128, 4, false);   /* Qwen3's head */
    check_norm_rope(128, 64, 2, true);     /* partial rotation, in place */
    check_norm_rope(64, 64, 3, false);
    /* YaRN on (factor 4 over 32768): still exactly the composition */
    struct st_rope_params y = st_rope_params_init(128, 1e6f, 0.25f, 1, 1, 32768, 32, 1);
    check_norm_rope_p(128, &y, 4, false);
    y = st_rope_params_init(64, 1e6f, 0.25f, 1, 1, 32768, 32, 1);
    check_norm_rope_p(128, &y, 2, true);
    /* a negative position is rejected before anything is written */
    int32_t bad[2] = { 3, -1 };
    float ones[128];
    for (int i = 0; i < 128; i++)
        ones[i] = 1.0f;
    struct st_tensor x = mk_f32(ones, 128, 1), pt = mk_i32(bad, 2), w = mk_f32(ones, 64, 1);
    struct st_tensor x2 = mk(ST_DTYPE_F32, 64, 2, 1);
    struct st_tensor wv = st_tensor_reshape(&w, (int64_t[4]){ 64, 1, 1, 1 });
    struct st_tensor xv = st_tensor_reshape(&x, (int64_t[4]){ 64, 2, 1, 1 });
    ck_assert_int_eq(st_backend_rms_norm_rope(be, &xv, &xv, &wv, &pt, ROPE(64, 1e4f, 1.0f), 1e-6f,
                                              NULL), ST_ERR_INVALID);
    float *after = read_f32(&x);
    ck_assert(memcmp(after, ones, sizeof(ones)) == 0);
    /* n_rot above head_dim (= ne0(w)) */
    ck_assert_int_eq(st_backend_rms_norm_rope(be, &x2, &x2, &wv, &pt, ROPE(66, 1e4f, 1.0f), 1e-6f,
                                              NULL), ST_ERR_INVALID);
    free(after);
    st_backend_release(be, &x); st_backend_release(be, &pt); st_backend_release(be, &w);
    st_backend_release(be, &x2);
}
END_TEST

/* st_backend_stats counts op calls (replays included on devices); the CPU
 * launches no kernels. */
START_TEST(test_backend_cpu_stats_count_ops)
{
    struct st_backend_stats a, b;
    struct st_tensor x = mk(ST_DTYPE_F32, 64, 2, 1), o = mk(ST_DTYPE_F32, 64, 2, 1);
    struct st_tensor w = mk(ST_DTYPE_F32, 64, 1, 1);
    st_backend_stats(be, &a);
    ck_assert_int_eq(st_backend_add(be, &x, &x, &o, NULL), ST_OK);
    ck_assert_int_eq(st_backend_add_rms_norm(be, &o, &x, &o, &w, 1e-6f, NULL), ST_OK);
    ck_assert_int_eq(st_backend_add_rms_norm(be, &x, &x, &o, &w, 1e-6f, NULL), ST_ERR_INVALID);
    st_backend_stats(be, &b);
    ck_assert_uint_eq(b.ops - a.ops, 2);     /* rejected calls are not counted */
    ck_assert_uint_eq(b.kernels, 0);
    ck_assert_uint_eq(b.graph_replays, 0);
    st_backend_release(be, &x); st_backend_release(be, &o); st_backend_release(be, &w);
}
END_TEST

/* ---- attention ---------------------------------------------------------- */

#define A_SLOTS 3
#define A_CTX 16
#define A_HEADS 4
#define A_KV 2

struct attn_mirror {
    int d;
    float k[A_SLOTS][A_CTX][A_KV * 64], v[A_SLOTS][A_CTX][A_KV * 64];
};

/* One step: rows (slot, pos); checks the op against the mirror. */
static void attn_step(struct attn_mirror *m, const struct st_tensor *kc, const struct st_tensor *vc,
                      const int32_t *slot, const int32_t *pos, int n)
{
    int d = m->d, qw = A_HEADS * d, kw = A_KV * d;
    float *q = rand_floats(qw * n, 1.0f), *k = rand_floats(kw * n, 1.0f), *v = rand_floats(kw * n, 1.0f);
    struct st_tensor qt = mk_f32(q, qw, n), kt = mk_f32(k, kw, n), vt = mk_f32(v, kw, n);
    struct st_tensor st = mk_i32(slot, n), pt = mk_i32(pos, n), out = mk(ST_DTYPE_F32, qw, n, 1);
    float scale = 1.0f / sqrtf((float)d);
    struct st_err err;

    ck_assert_int_eq(st_backend_attention(be, &out, &qt, &kt, &vt, kc, vc, &st, &pt, A_HEADS, A_KV,
                                          scale, &err), ST_OK);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < kw; i++) {
            m->k[slot[r]][pos[r]][i] = st_fp16_to_f32(st_f32_to_fp16(k[r * kw + i]));
            m->v[slot[r]][pos[r]][i] = st_fp16_to_f32(st_f32_to_fp16(v[r * kw + i]));
        }
    float *got = read_f32(&out);
    for (int r = 0; r < n; r++)
        for (int h = 0; h < A_HEADS; h++) {
            int g = h / (A_HEADS / A_KV), s = slot[r];
            double sc[A_CTX], mx = -1e30, sum = 0;
            for (int t = 0; t <= pos[r]; t++) {
                double dot = 0;
                for (int i = 0; i < d; i++)
                    dot += (double)q[r * qw + h * d + i] * m->k[s][t][g * d + i];
                sc[t] = dot * scale;
                mx = sc[t] > mx ? sc[t] : mx;
            }
            for (int t = 0; t <= pos[r]; t++)
                sum += (sc[t] = exp(sc[t] - mx));
            for (int i = 0; i < d; i++) {
                double want = 0;
                for (int t = 0; t <= pos[r]; t++)
                    want += sc[t] / sum * m->v[s][t][g * d + i];
                ck_assert_msg(fabs(got[r * qw + h * d + i] - want) <= 1e-4,
                              "attention row %d head %d dim %d: %g vs %g", r, h, i,
                              (double)got[r * qw + h * d + i], want);
            }
        }
    free(q); free(k); free(v); free(got);
    st_backend_release(be, &qt); st_backend_release(be, &kt); st_backend_release(be, &vt);
    st_backend_release(be, &st); st_backend_release(be, &pt); st_backend_release(be, &out);
}

static void check_attention(int d)
{
    static struct attn_mirror m;
    struct st_tensor kc = mk(ST_DTYPE_F16, A_KV * d, A_CTX, A_SLOTS);
    struct st_tensor vc = mk(ST_DTYPE_F16, A_KV * d, A_CTX, A_SLOTS);
    /* step 1: slot 0 reads 5 tokens, slot 2 reads 3 (one causal chunk each) */
    int32_t s1[8] = { 0, 0, 0, 0, 0, 2, 2, 2 }, p1[8] = { 0, 1, 2, 3, 4, 0, 1, 2 };
    /* step 2: slot 0 and 2 decode, slot 1 starts */
    int32_t s2[3] = { 2, 1, 0 }, p2[3] = { 3, 0, 5 };
    /* step 3: slot 0 restarts from position 0 (reuse); stale positions unseen */
    int32_t s3[2] = { 0, 2 }, p3[2] = { 0, 4 };
    memset(&m, 0, sizeof(m));
    m.d = d;
    attn_step(&m, &kc, &vc, s1, p1, 8);
    attn_step(&m, &kc, &vc, s2, p2, 3);
    attn_step(&m, &kc, &vc, s3, p3, 2);
    /* the cache holds exactly the f16 of what was written */
    uint16_t h;
    ck_assert_int_eq(st_backend_read(be, &kc, ((size_t)(2 * A_CTX + 3) * A_KV * d + 1) * 2, &h, 2, NULL), ST_OK);
    ck_assert(st_fp16_to_f32(h) == m.k[2][3][1]);
    int32_t bad_pos[1] = { A_CTX }, bad_slot[1] = { 0 };
    struct st_tensor q = mk(ST_DTYPE_F32, A_HEADS * d, 1, 1), k = mk(ST_DTYPE_F32, A_KV * d, 1, 1);
    struct st_tensor bs = mk_i32(bad_slot, 1), bp = mk_i32(bad_pos, 1);
    struct st_err err;
    ck_assert_int_eq(st_backend_attention(be, &q, &q, &k, &k, &kc, &vc, &bs, &bp, A_HEADS, A_KV,
                                          0.1f, &err), ST_ERR_INVALID);
    ck_assert_int_eq(st_backend_attention(be, &q, &q, &k, &k, &kc, &vc, &bs, &bs, 3, A_KV, 0.1f,
                                          &err), ST_ERR_INVALID);
    st_backend_release(be, &q); st_backend_release(be, &k); st_backend_release(be, &bs);
    st_backend_release(be, &bp); st_backend_release(be, &kc); st_backend_release(be, &vc);
}

START_TEST(test_backend_cpu_attention_gqa_slots)
{
    seed_state = 61;
    check_attention(64);     /* SIMD path */
    check_attention(12);     /* head_dim not a multiple of 8: scalar path */
}
END_TEST

/* ---- MoE ---------------------------------------------------------------- */

START_TEST(test_backend_cpu_moe_route)
{
    enum { E = 64, X = 8, K = 3, N = 5 };
    seed_state = 71;
    float *x = rand_floats(E * N, 1.0f), *r = rand_floats(E * X, 1.0f);
    struct st_tensor xt = mk_f32(x, E, N), rt = mk_f32(r, E, X);
    struct st_tensor sel = mk(ST_DTYPE_I32, K, N, 1), wts = mk(ST_DTYPE_F32, K, N, 1);
    int32_t got_sel[K * N];
    ck_assert_int_eq(st_backend_moe_route(be, &sel, &wts, &xt, &rt, &SOFTMAX_ROUTE, NULL), ST_OK);
    ck_assert_int_eq(st_backend_read(be, &sel, 0, got_sel, sizeof(got_sel), NULL), ST_OK);
    float *got_w = read_f32(&wts);
    for (int n = 0; n < N; n++) {
        double lg[X], p[X], mx = -1e30, wsum = 0;
        bool used[X] = { false };
        for (int e = 0; e < X; e++) {
            lg[e] = 0;
            for (int i = 0; i < E; i++)
                lg[e] += (double)x[n * E + i] * r[e * E + i];
            mx = lg[e] > mx ? lg[e] : mx;
        }
        for (int e = 0; e < X; e++)
            p[e] = exp(lg[e] - mx);   /* renormalized over the top k below */
        int want[K];
        for (int j = 0; j < K; j++) {
            int b = -1;
            for (int e = 0; e < X; e++)
                if (!used[e] && (b < 0 || p[e] > p[b]))
                    b = e;
            used[b] = true;
            want[j] = b;
            wsum += p[b];
        }
        for (int j = 0; j < K; j++) {
            ck_assert_int_eq(got_sel[n * K + j], want[j]);
            ck_assert(fabs(got_w[n * K + j] - p[want[j]] / wsum) <= 1e-5);
        }
    }
    free(x); free(r); free(got_w);
    st_backend_release(be, &xt); st_backend_release(be, &rt);
    st_backend_release(be, &sel); st_backend_release(be, &wts);
}
END_TEST

/* Random expert weights: gate and up [E, F, X] in t_gu, down [F, E, X] in
 * t_down, wrapped as backend tensors; *d the dequantized copies the
 * reference uses. */
struct moe_weights {
    float *gf, *uf, *df, *gd, *ud, *dd;
    void *gq, *uq, *dq;
    struct st_tensor gt, ut, dt;
};

static void moe_weights_make(struct moe_weights *m, enum st_dtype t_gu, enum st_dtype t_down,
                             int E, int F, int X)
{
    struct st_err err;
    m->gf = rand_floats(E * F * X, 0.3f);
    m->uf = rand_floats(E * F * X, 0.3f);
    m->df = rand_floats(F * E * X, 0.3f);
    m->gq = quantize(t_gu, m->gf, E, F * X, &m->gd);
    m->uq = quantize(t_gu, m->uf, E, F * X, &m->ud);
    m->dq = quantize(t_down, m->df, F, E * X, &m->dd);
    ck_assert_int_eq(st_backend_wrap(be, t_gu, (int64_t[4]){ E, F, X, 1 }, m->gq,
                                     st_dtype_row_bytes(t_gu, E) * F * X, &m->gt, &err), ST_OK);
    ck_assert_int_eq(st_backend_wrap(be, t_gu, (int64_t[4]){ E, F, X, 1 }, m->uq,
                                     st_dtype_row_bytes(t_gu, E) * F * X, &m->ut, &err), ST_OK);
    ck_assert_int_eq(st_backend_wrap(be, t_down, (int64_t[4]){ F, E, X, 1 }, m->dq,
                                     st_dtype_row_bytes(t_down, F) * E * X, &m->dt, &err), ST_OK);
}

static void moe_weights_free(struct moe_weights *m)
{
    st_backend_release(be, &m->gt);
    st_backend_release(be, &m->ut);
    st_backend_release(be, &m->dt);
    free(m->gf); free(m->uf); free(m->df); free(m->gd); free(m->ud); free(m->dd);
    free(m->gq); free(m->uq); free(m->dq);
}

static void check_moe_ffn(enum st_dtype t_gu, enum st_dtype t_down)
{
    enum { E = 256, F = 256, X = 4, K = 2, N = 6 };
    struct moe_weights mw;
    moe_weights_make(&mw, t_gu, t_down, E, F, X);
    const float *gd = mw.gd, *ud = mw.ud, *dd = mw.dd;
    float *x = rand_floats(E * N, 1.0f);
    int32_t sel[K * N] = { 0, 3, 3, 0, 1, 1, 2, 3, 3, 2, 0, 2 };
    float w[K * N];
    struct st_tensor xt = mk_f32(x, E, N), out = mk(ST_DTYPE_F32, E, N, 1);
    struct st_err err;
    for (int i = 0; i < K * N; i++)
        w[i] = 0.25f + 0.05f * (float)i;
    struct st_tensor st = mk_i32(sel, K * N), wt = mk_f32(w, K, N);
    struct st_tensor sv = st_tensor_reshape(&st, (int64_t[4]){ K, N, 1, 1 });
    ck_assert_int_eq(st_backend_moe_ffn(be, &out, &xt, &sv, &wt, &mw.gt, &mw.ut, &mw.dt, &err),
                     ST_OK);
    float *got = read_f32(&out);
    static float xq[E], act[F], aq[F];
    for (int n = 0; n < N; n++) {
        double want[E] = { 0 }, mag[E] = { 0 };
        act_roundtrip(t_gu, x + n * E, xq, E);
        for (int j = 0; j < K; j++) {
            int e = sel[n * K + j];
            for (int f = 0; f < F; f++) {
                double g = 0, u = 0;
                for (int i = 0; i < E; i++) {
                    g += (double)gd[(e * F + f) * E + i] * xq[i];
                    u += (double)ud[(e * F + f) * E + i] * xq[i];
                }
                act[f] = (float)(g / (1.0 + exp(-g)) * u);
            }
            act_roundtrip(t_down, act, aq, F);
            for (int o = 0; o < E; o++) {
                double s = 0, m = 0;
                for (int f = 0; f < F; f++) {
                    s += (double)dd[(e * E + o) * F + f] * aq[f];
                    m += fabs((double)dd[(e * E + o) * F + f] * aq[f]);
                }
                want[o] += w[n * K + j] * s;
                mag[o] += w[n * K + j] * m;
            }
        }
        for (int o = 0; o < E; o++)
            ck_assert_msg(fabs(got[n * E + o] - want[o]) <= 3e-3 * mag[o] + 1e-5,
                          "moe %s/%s row %d out %d: %g vs %g", st_dtype_info(t_gu)->name,
                          st_dtype_info(t_down)->name, n, o, (double)got[n * E + o], want[o]);
    }
    free(got);
    free(x);
    moe_weights_free(&mw);
    st_backend_release(be, &xt); st_backend_release(be, &out); st_backend_release(be, &st);
    st_backend_release(be, &wt);
}

START_TEST(test_backend_cpu_moe_ffn_grouped)
{
    seed_state = 81;
    check_moe_ffn(ST_DTYPE_F32, ST_DTYPE_F32);
    check_moe_ffn(ST_DTYPE_Q4_K, ST_DTYPE_Q6_K);
    check_moe_ffn(ST_DTYPE_IQ3_S, ST_DTYPE_Q8_0);
    check_moe_ffn(ST_DTYPE_Q2_K, ST_DTYPE_Q3_K);
    check_moe_ffn(ST_DTYPE_Q4_1, ST_DTYPE_Q5_1);
    check_moe_ffn(ST_DTYPE_Q3_K, ST_DTYPE_Q5_0);
}
END_TEST

/* A prompt-sized call (moe_task, barriers) and single-row calls (the
 * barrier-free decode path) must give each row the same bits. */
static void check_moe_rows_alone(enum st_dtype t_gu, enum st_dtype t_down)
{
    enum { E = 256, F = 512, X = 6, K = 3, N = 20 };
    struct moe_weights m;
    moe_weights_make(&m, t_gu, t_down, E, F, X);
    float *x = rand_floats(E * N, 1.0f);
    int32_t sel[K * N];
    float w[K * N];
    struct st_tensor xt = mk_f32(x, E, N), out = mk(ST_DTYPE_F32, E, N, 1);
    struct st_err err;
    for (int i = 0; i < K * N; i++) {
        sel[i] = (i / K * 5 + i % K * 2) % X;   /* distinct within a row */
        w[i] = 0.2f + 0.03f * (float)(i % 7);
    }
    struct st_tensor st = mk_i32(sel, K * N), wt = mk_f32(w, K, N);
    struct st_tensor sv = st_tensor_reshape(&st, (int64_t[4]){ K, N, 1, 1 });
    ck_assert_int_eq(st_backend_moe_ffn(be, &out, &xt, &sv, &wt, &m.gt, &m.ut, &m.dt, &err),
                     ST_OK);
    float *all = read_f32(&out);
    for (int n = 0; n < N; n++) {
        struct st_tensor x1 = mk_f32(x + n * E, E, 1), o1 = mk(ST_DTYPE_F32, E, 1, 1);
        struct st_tensor s1 = mk_i32(sel + n * K, K), w1 = mk_f32(w + n * K, K, 1);
        struct st_tensor sv1 = st_tensor_reshape(&s1, (int64_t[4]){ K, 1, 1, 1 });
        ck_assert_int_eq(st_backend_moe_ffn(be, &o1, &x1, &sv1, &w1, &m.gt, &m.ut, &m.dt, &err),
                         ST_OK);
        float *one = read_f32(&o1);
        ck_assert_msg(memcmp(one, all + n * E, E * sizeof(float)) == 0,
                      "moe %s/%s row %d differs alone", st_dtype_info(t_gu)->name,
                      st_dtype_info(t_down)->name, n);
        free(one);
        st_backend_release(be, &x1); st_backend_release(be, &o1);
        st_backend_release(be, &s1); st_backend_release(be, &w1);
    }
    free(all);
    free(x);
    moe_weights_free(&m);
    st_backend_release(be, &xt); st_backend_release(be, &out); st_backend_release(be, &st);
    st_backend_release(be, &wt);
}

START_TEST(test_backend_cpu_moe_ffn_rows_alone)
{
    seed_state = 83;
    check_moe_rows_alone(ST_DTYPE_Q4_K, ST_DTYPE_Q6_K);
    check_moe_rows_alone(ST_DTYPE_IQ3_S, ST_DTYPE_Q8_0);
    check_moe_rows_alone(ST_DTYPE_Q2_K, ST_DTYPE_Q5_1);
}
END_TEST

static Suite *backend_cpu_suite(void)
{
    Suite *s = suite_create("backend_cpu");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_backend_cpu_registry);
    tcase_add_test(tc, test_backend_cpu_tensor_memory);
    tcase_add_test(tc, test_backend_cpu_copy);
    tcase_add_test(tc, test_backend_cpu_matmul_every_type);
    tcase_add_test(tc, test_backend_cpu_matmul_batch_invariant);
    tcase_add_test(tc, test_backend_cpu_matmul_rejects_bad_args);
    tcase_add_test(tc, test_backend_cpu_embed);
    tcase_add_test(tc, test_backend_cpu_rms_norm_row_and_head);
    tcase_add_test(tc, test_backend_cpu_add_and_silu_mul);
    tcase_add_test(tc, test_backend_cpu_rope_neox);
    tcase_add_test(tc, test_backend_cpu_rope_yarn_matches_double);
    tcase_add_test(tc, test_backend_cpu_rope_none_linear_unchanged);
    tcase_add_test(tc, test_backend_cpu_rope_bad_params);
    tcase_add_test(tc, test_backend_cpu_rope_yarn_crossed_ends);
    tcase_add_test(tc, test_backend_cpu_add_rms_norm_is_the_composition);
    tcase_add_test(tc, test_backend_cpu_matmul3_is_the_composition);
    tcase_add_test(tc, test_backend_cpu_rms_norm_rope_is_the_composition);
    tcase_add_test(tc, test_backend_cpu_stats_count_ops);
    tcase_add_test(tc, test_backend_cpu_attention_gqa_slots);
    tcase_add_test(tc, test_backend_cpu_moe_route);
    tcase_add_test(tc, test_backend_cpu_moe_ffn_grouped);
    tcase_add_test(tc, test_backend_cpu_moe_ffn_rows_alone);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(backend_cpu_suite(), CK_FORK);
}
