/* test_forward_ref.c -- the optimized forward (src/model/forward.c on the
 * CPU backend) against the naive scalar reference (forward_ref.c), at every
 * weight type make-model writes, and for dense qwen3 and llama files.
 *
 * A ~20-token prompt is read in one forward with logits for every row,
 * then several decode steps follow one row at a time (each feeding the
 * reference's argmax, so both paths see the same tokens). Every row's
 * logits are compared: cosine similarity, max abs difference relative to
 * the logits' scale, and the argmax (equal unless the reference's top two
 * are a near tie). The fast path quantizes activations (Q8_0 / Q8_K /
 * F16 / BF16, ENGINE.md 2.11) and keeps an F16 KV cache, so the bounds
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

/* Bounds against the emulating reference (activations rounded as the fast
 * path does): only summation order differs. The measured worst cases on
 * the small preset are printed on stderr; these bounds leave a margin of
 * about 10x. */
struct bounds {
    const char *quant;
    double cos;    /* minimum cosine similarity over all rows */
    double rel;    /* maximum (max |diff|) / (max |ref|) over all rows */
};

static const struct bounds types[] = {
    { "f32", 0.99999, 0.005 },  { "f16", 0.99999, 0.005 },  { "bf16", 0.99999, 0.005 },
    { "q8_0", 0.99999, 0.005 }, { "q4_0", 0.99999, 0.005 }, { "q4_k", 0.99999, 0.005 },
    { "q5_k", 0.99999, 0.005 }, { "q6_k", 0.99999, 0.005 }, { "iq3_s", 0.99999, 0.005 },
    { "iq3_xxs", 0.99999, 0.005 }, { "iq4_xs", 0.99999, 0.005 },
};

/* Open and load 'path' for one slot with logits for up to 32 rows. */
static struct st_model *load(const char *path)
{
    struct st_err err = { 0 };
    struct st_model *m = NULL;
    ck_assert_msg(st_model_open(path, &m, &err) == ST_OK, "open: %s", err.msg);
    struct st_model_params p = { .n_threads = 2, .n_slots = 1, .n_ctx = 64, .max_out = 32 };
    ck_assert_msg(st_model_load(m, &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    return m;
}

struct worst {
    double cos, rel;
    int    argmax_bad;
    int    n_close;    /* rows with cosine >= 0.999 */
};

static void check_row(const float *ref, const float *fast, int64_t nv, struct worst *w)
{
    struct ref_cmp c = ref_compare(ref, fast, nv, 0.001);
    w->cos = c.cos < w->cos ? c.cos : w->cos;
    w->rel = c.rel > w->rel ? c.rel : w->rel;
    w->argmax_bad += !c.argmax_ok;
    w->n_close += c.cos >= 0.999;
}

/* The prompt in one forward (all rows' logits), then N_DECODE steps fed
 * with the reference's argmax. */
static struct worst compare_model(const char *path, bool emulate)
{
    struct st_model *m = load(path);
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
    struct worst w = { 1.0, 0.0, 0, 0 };
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
    return w;
}

static void make(const char *path, const char *preset, const char *quant)
{
    struct st_make_model_opts o = { .out_path = path, .preset = preset, .quant = quant,
                                    .seed = 5 };
    struct st_err err = { 0 };
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model %s: %s", quant, err.msg);
}

/* Every weight type on the small preset (E 256: the K and IQ types are
 * used for most matrices; the 128-wide expert down falls back to a
 * 32-element type; the head is Q6_K for the quantized types). */
START_TEST(test_forward_matches_reference_every_type)
{
    const struct bounds *bd = &types[_i];
    char dir[256], path[320];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/small-%s.gguf", dir, bd->quant);
    make(path, "small", bd->quant);
    struct worst w = compare_model(path, true);
    struct worst p = compare_model(path, false);
    fprintf(stderr, "forward_ref %-8s emulating: min cos %.8f, max rel %.6f, argmax misses %d; "
            "pure f32: min cos %.6f, %d/%d rows cos >= 0.999, argmax misses %d\n", bd->quant,
            w.cos, w.rel, w.argmax_bad, p.cos, p.n_close, N_ROWS, p.argmax_bad);
    ck_assert_msg(w.cos >= bd->cos, "%s: cosine %.8f < %.8f", bd->quant, w.cos, bd->cos);
    ck_assert_msg(w.rel <= bd->rel, "%s: max rel diff %.6f > %.6f", bd->quant, w.rel, bd->rel);
    ck_assert_msg(w.argmax_bad == 0, "%s: %d rows with a different argmax", bd->quant,
                  w.argmax_bad);
    /* Against pure f32 math, rows whose MoE choice flipped on a near tie
     * differ; most rows must still agree closely. */
    ck_assert_msg(p.n_close >= N_ROWS / 2, "%s: only %d of %d rows within cos 0.999 of the "
                  "f32 reference", bd->quant, p.n_close, N_ROWS);
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
    fprintf(stderr, "forward_ref q8_0 tiny: min cos %.8f, max rel %.6f\n", w.cos, w.rel);
    ck_assert(w.cos >= 0.99999 && w.rel <= 0.005 && w.argmax_bad == 0);
    support_rmtree(dir);
}
END_TEST

/* Dense architectures: qwen3 (QK-norm, NEOX) and llama (no QK-norm,
 * adjacent-pair rope, here over the first n_rot = 8 of 16 dims). Dense
 * models have no discrete choices, so the pure f32 reference must match
 * closely too. */
static void dense_case(const char *arch, enum st_dtype type, int64_t n_rot)
{
    char dir[256], path[320];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/%s.gguf", dir, arch);
    ck_assert(ref_write_dense(path, arch, type, n_rot, 3));
    struct worst w = compare_model(path, true);
    struct worst p = compare_model(path, false);
    fprintf(stderr, "forward_ref %s type %d n_rot %d: emulating cos %.8f rel %.6f; pure cos "
            "%.6f rel %.5f\n", arch, (int)type, (int)n_rot, w.cos, w.rel, p.cos, p.rel);
    ck_assert_msg(w.cos >= 0.99999 && w.rel <= 0.005 && w.argmax_bad == 0,
                  "%s: cos %.8f rel %.6f argmax misses %d", arch, w.cos, w.rel, w.argmax_bad);
    ck_assert_msg(p.cos >= 0.999 && p.rel <= 0.05 && p.argmax_bad == 0,
                  "%s pure: cos %.6f rel %.5f argmax misses %d", arch, p.cos, p.rel,
                  p.argmax_bad);
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(forward_ref_suite(), CK_FORK);
}
