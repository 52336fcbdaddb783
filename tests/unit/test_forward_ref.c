/* test_forward_ref.c -- the optimized forward (src/model/forward.c on the
 * CPU backend) against the naive scalar reference (forward_ref.c), at every
 * weight type make-model writes, for dense qwen3 and llama files, and for
 * glm4moe (make-model's glm-tiny) at a few types.
 *
 * A ~20-token prompt is read in one forward with logits for every row,
 * then several decode steps follow one row at a time (each feeding the
 * reference's argmax, so both paths see the same tokens). Every row's
 * logits are compared: cosine similarity, max abs difference relative to
 * the logits' scale, and the argmax (equal unless the reference's top two
 * are a near tie). The fast path quantizes activations (Q8_0 / Q8_K /
 * F16 / BF16, docs/design/ENGINE.md 2.11) and keeps an F16 KV cache, so the bounds
 * depend on the type; F32 weights must match almost exactly.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "strata/forward.h"
#include "strata/make_model.h"
#include "support.h"

#define N_PROMPT 20
#define N_DECODE 6
#define N_ROWS (N_PROMPT + N_DECODE)

/* How the comparison is judged. Against the emulating reference the two
 * paths differ only by float summation order and libm (a few ulp), yet a
 * random-weight model is chaotic at a few places: an activation sitting on
 * a rounding boundary of its Q8/BF16 grid, or two experts with nearly equal
 * router logits, tips the other way; that row, and through its k/v the
 * later rows, then move by up to the quantization noise (a flipped expert
 * moves a row a lot). Measured on these files (stderr): before the first
 * flip rows agree to ~1e-7, a flip costs ~1e-4 in cosine, an expert flip
 * up to ~0.05. A wiring bug (a missing gain, a wrong rope pair, a wrong
 * GQA head) moves every row by more than that. So: the median row agrees
 * to cosine 0.9995 and 80% of rows to 0.999, the argmax agrees on all but
 * two rows, and against pure f32 math the median row is within 0.995. */
static const char *const types[] = {
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "iq3_s", "iq3_xxs", "iq4_xs",
    "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q3_k_m",
};

/* The weights seed of a type's file. 5 for the original types. The low-bit
 * types added later use 7: with seed 5 the q3_k file has a router near-tie
 * at row 2 (one expert flips between Q8_K-rounded and f32 activations, and
 * through the KV cache every later row moves: median cosine vs f32 0.980)
 * and q2_k one a little later; the emulating comparison is exact on both
 * all the same. Measured over seeds 1-7, such an early flip hits any type
 * now and then (iq3_s at seed 3: 0.987; q3_k_m at seed 6: 0.991). */
static uint64_t seed_of(const char *quant)
{
    static const char *const late[] = { "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q3_k_m" };
    for (size_t i = 0; i < sizeof(late) / sizeof(late[0]); i++)
        if (strcmp(quant, late[i]) == 0)
            return 7;
    return 5;
}

/* Open and load 'path' for one slot with logits for up to 32 rows, with
 * the rope override rope (NULL = the file's). */
static struct st_model *load(const char *path, const struct st_rope_override *rope)
{
    struct st_err err = { 0 };
    struct st_model *m = NULL;
    ck_assert_msg(st_model_open(path, &m, &err) == ST_OK, "open: %s", err.msg);
    if (rope)
        ck_assert_msg(st_model_set_rope(m, rope, &err) == ST_OK, "rope: %s", err.msg);
    struct st_model_params p = { .n_threads = 2, .n_slots = 1, .n_ctx = 64, .max_out = 32 };
    ck_assert_msg(st_model_load(m, &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    return m;
}

/* Per-row agreement over the N_ROWS rows of one comparison. */
struct worst {
    double cos, rel;       /* worst row */
    double rel_med;        /* median row's rel */
    double cos_med;        /* median row's cosine */
    int    argmax_bad;     /* rows whose argmax differs (not a near tie) */
    int    n_exact;        /* rows with rel <= 1e-3 */
    int    n;
    double rels[N_ROWS], coss[N_ROWS];
};

static void check_row(const float *ref, const float *fast, int64_t nv, struct worst *w)
{
    struct ref_cmp c = ref_compare(ref, fast, nv, 0.001);
    if (getenv("FWD_DEBUG"))
        fprintf(stderr, "  row %d cos %.8f rel %.6f\n", w->n, c.cos, c.rel);
    w->cos = c.cos < w->cos ? c.cos : w->cos;
    w->rel = c.rel > w->rel ? c.rel : w->rel;
    w->argmax_bad += !c.argmax_ok;
    w->n_exact += c.rel <= 1e-3;
    w->rels[w->n] = c.rel;
    w->coss[w->n++] = c.cos;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void finish(struct worst *w)
{
    qsort(w->rels, (size_t)w->n, sizeof(double), cmp_double);
    qsort(w->coss, (size_t)w->n, sizeof(double), cmp_double);
    w->rel_med = w->rels[w->n / 2];
    w->cos_med = w->coss[w->n / 2];
}

static void judge(const char *what, const struct worst *w, const struct worst *p)
{
    int close = 0;
    for (int i = 0; i < w->n; i++)
        close += w->coss[i] >= 0.999;
    fprintf(stderr, "forward_ref %-17s emulating: %2d/%d rows rel <= 1e-3, median cos %.7f, "
            "worst %.6f, argmax misses %d | pure f32: median cos %.6f, worst %.6f, argmax "
            "misses %d\n", what, w->n_exact, w->n, w->cos_med, w->cos, w->argmax_bad,
            p->cos_med, p->cos, p->argmax_bad);
    ck_assert_msg(w->cos_med >= 0.9995, "%s: median cosine %.7f", what, w->cos_med);
    ck_assert_msg(close * 5 >= w->n * 4, "%s: only %d of %d rows within cosine 0.999", what,
                  close, w->n);
    ck_assert_msg(w->argmax_bad <= 2, "%s: %d rows with another argmax", what, w->argmax_bad);
    ck_assert_msg(p->cos_med >= 0.995, "%s: median cosine vs f32 math %.6f", what, p->cos_med);
}

/* The prompt in one forward (all rows' logits), then N_DECODE steps fed
 * with the reference's argmax. */
static struct worst compare_model_rope(const char *path, bool emulate,
                                       const struct st_rope_override *rope)
{
    struct st_model *m = load(path, rope);
    int64_t nv = st_model_hparams(m)->n_vocab;
    struct ref_model *r = ref_new(st_model_description(m), 64, emulate);
    int32_t tok[N_ROWS], slots[N_PROMPT] = { 0 };
    int64_t pos[N_PROMPT], outs[N_PROMPT];
    ref_tokens(11, tok, N_PROMPT, nv);
    for (int64_t i = 0; i < N_PROMPT; i++)
        pos[i] = outs[i] = i;
    struct st_model_batch b = { N_PROMPT, tok, slots, pos, N_PROMPT, outs };
    const float *fast = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_model_forward(m, &b, &fast, &err) == ST_OK, "forward: %s", err.msg);
    float *ref = malloc((size_t)nv * sizeof(float));
    struct worst w = { .cos = 1.0 };
    for (int64_t i = 0; i < N_PROMPT; i++) {
        ref_step(r, tok[i], i, ref);
        check_row(ref, fast + i * nv, nv, &w);
    }
    for (int64_t s = 0; s < N_DECODE; s++) {
        int64_t p = N_PROMPT + s, zero = 0;
        tok[p] = ref_compare(ref, ref, nv, 0).argmax;
        struct st_model_batch d = { 1, &tok[p], slots, &p, 1, &zero };
        ck_assert_msg(st_model_forward(m, &d, &fast, &err) == ST_OK, "decode: %s", err.msg);
        ref_step(r, tok[p], p, ref);
        check_row(ref, fast, nv, &w);
    }
    free(ref);
    ref_free(r);
    st_model_free(m);
    finish(&w);
    return w;
}

static struct worst compare_model(const char *path, bool emulate)
{
    return compare_model_rope(path, emulate, NULL);
}

static void make(const char *path, const char *preset, const char *quant)
{
    struct st_make_model_opts o = { .out_path = path, .preset = preset, .quant = quant,
                                    .seed = seed_of(quant) };
    struct st_err err = { 0 };
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model %s: %s", quant, err.msg);
}

/* Every weight type on the small preset (E 256: the K and IQ types are
 * used for most matrices; the 128-wide expert down falls back to a
 * 32-element type; the head is Q6_K for the quantized types). */
START_TEST(test_forward_matches_reference_every_type)
{
    const char *quant = types[_i];
    char dir[256], path[320], what[32];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/small-%s.gguf", dir, quant);
    make(path, "small", quant);
    struct worst w = compare_model(path, true);
    struct worst p = compare_model(path, false);
    snprintf(what, sizeof(what), "small %s", quant);
    judge(what, &w, &p);
    support_rmtree(dir);
}
END_TEST

/* The tiny preset (tied output, E 64: 32-element types only) at q8_0. */
START_TEST(test_forward_matches_reference_tiny_tied)
{
    char dir[256], path[320];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/tiny.gguf", dir);
    make(path, "tiny", "q8_0");
    struct worst w = compare_model(path, true);
    struct worst p = compare_model(path, false);
    judge("tiny q8_0", &w, &p);
    support_rmtree(dir);
}
END_TEST

/* Dense architectures: qwen3 (QK-norm, NEOX) and llama (no QK-norm,
 * adjacent-pair rope, here over the first n_rot = 8 of 16 dims). Dense
 * models have no discrete choices, so the pure f32 reference must match
 * closely too. */
static void dense_case(const char *arch, enum st_dtype type, int64_t n_rot)
{
    char dir[256], path[320], what[48];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/%s.gguf", dir, arch);
    ck_assert(ref_write_dense(path, arch, type, n_rot, 3));
    struct worst w = compare_model(path, true);
    struct worst p = compare_model(path, false);
    snprintf(what, sizeof(what), "%s %s rot %d", arch, type == ST_DTYPE_F32 ? "f32" : "q8_0",
             (int)n_rot);
    judge(what, &w, &p);
    /* No discrete choices in a dense model: every row stays close. */
    ck_assert_msg(p.cos >= 0.995 && p.argmax_bad <= 1, "%s: worst cos vs f32 %.6f", what,
                  p.cos);
    support_rmtree(dir);
}

START_TEST(test_forward_matches_reference_qwen3_dense)
{
    dense_case("qwen3", ST_DTYPE_F32, 16);
    dense_case("qwen3", ST_DTYPE_Q8_0, 16);
}
END_TEST

START_TEST(test_forward_matches_reference_llama)
{
    dense_case("llama", ST_DTYPE_F32, 8);
    dense_case("llama", ST_DTYPE_Q8_0, 16);
}
END_TEST

/* YaRN end to end (--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx
 * 4096 over a file without scaling): qwen3 (NEOX, fused norm + rope) and
 * llama (adjacent pairs, rows permuted at load) against the reference's
 * double YaRN. With n_rot 16 and base 1e4 the ramp runs over pairs 2..6,
 * so every kind of pair is in play. */
START_TEST(test_forward_matches_reference_yarn)
{
    static const char *const archs[] = { "qwen3", "llama" };
    const struct st_rope_override yarn = { ST_ROPE_SCALING_YARN, 4.0f, 4096 };
    for (int a = 0; a < 2; a++) {
        char dir[256], path[320], what[48];
        support_tmpdir(dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s/%s.gguf", dir, archs[a]);
        ck_assert(ref_write_dense(path, archs[a], ST_DTYPE_F32, 16, 3));
        struct st_model *m = load(path, &yarn);
        const struct st_rope_params *rp = &st_model_hparams(m)->rope;
        ck_assert(rp->ext_factor == 1.0f && rp->corr_low == 2.0f && rp->corr_high == 6.0f);
        st_model_free(m);
        struct worst w = compare_model_rope(path, true, &yarn);
        struct worst p = compare_model_rope(path, false, &yarn);
        snprintf(what, sizeof(what), "%s yarn", archs[a]);
        judge(what, &w, &p);
        ck_assert_msg(p.cos >= 0.995 && p.argmax_bad <= 1, "%s: worst cos vs f32 %.6f", what,
                      p.cos);
        support_rmtree(dir);
    }
}
END_TEST

/* glm4moe (glm-tiny: a dense first layer, then MoE with sigmoid routing,
 * a selection bias, routed scale 2.5 and a shared expert; q/k/v biases;
 * NEOX rope over 8 of 16 dims) at a few types. E 64 leaves the K types
 * no whole block per row, so the 32-element and float types are the ones
 * the file can hold. */
static const char *const glm_types[] = { "f32", "bf16", "q8_0", "q4_0" };

START_TEST(test_forward_matches_reference_glm4moe)
{
    const char *quant = glm_types[_i];
    char dir[256], path[320], what[32];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/glm-%s.gguf", dir, quant);
    make(path, "glm-tiny", quant);
    struct worst w = compare_model(path, true);
    struct worst p = compare_model(path, false);
    snprintf(what, sizeof(what), "glm-tiny %s", quant);
    judge(what, &w, &p);
    support_rmtree(dir);
}
END_TEST

static Suite *forward_ref_suite(void)
{
    Suite *s = suite_create("forward_ref");
    TCase *tc = tcase_create("reference");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_forward_matches_reference_every_type, 0,
                        (int)(sizeof(types) / sizeof(types[0])));
    tcase_add_test(tc, test_forward_matches_reference_tiny_tied);
    tcase_add_test(tc, test_forward_matches_reference_qwen3_dense);
    tcase_add_test(tc, test_forward_matches_reference_llama);
    tcase_add_test(tc, test_forward_matches_reference_yarn);
    tcase_add_loop_test(tc, test_forward_matches_reference_glm4moe, 0,
                        (int)(sizeof(glm_types) / sizeof(glm_types[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(forward_ref_suite(), CK_FORK);
}
