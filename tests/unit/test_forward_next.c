/* test_forward_next.c -- the hybrids (make-model's next-tiny: qwen35moe;
 * next80-tiny and next80-tiny-ssm-in: qwen3next; qwen35-tiny: qwen35): the
 * optimized forward on the CPU backend against the naive reference
 * (forward_ref_next.c, written from llama.cpp's graphs), and the recurrent
 * state's rules: a prompt read in one step equals the same prompt fed a
 * token at a time, slots do not see each other, position 0 starts afresh,
 * a verify step's rows re-read from its kept inputs after a restore; plus
 * the loader's errors for a malformed file.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "strata/forward.h"
#include "strata/gguf_write.h"
#include "strata/model_desc.h"
#include "strata/make_model.h"
#include "gguf_variant.h"
#include "support.h"

#define N_PROMPT 40   /* crosses the 16-row chunks the first test reads in */
#define N_DECODE 8
#define N_CTX 128

static const struct { const char *preset, *quant; } models[] = {
    { "next-tiny", "f32" },          { "next-tiny", "q8_0" },    { "next-tiny", "q4_k" },
    { "next80-tiny", "f32" },        { "next80-tiny", "q4_k" },  { "next80-tiny-ssm-in", "f32" },
    { "next80-tiny-ssm-in", "q8_0" }, { "qwen35-tiny", "f32" },  { "qwen35-tiny", "q4_k" },
};

static void make_preset(const char *path, const char *preset, const char *quant, uint64_t seed)
{
    struct st_make_model_opts o = { .out_path = path, .preset = preset, .quant = quant,
                                    .seed = seed };
    struct st_err err = { 0 };
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model %s %s: %s", preset, quant,
                  err.msg);
}

static void make(const char *path, const char *quant, uint64_t seed)
{
    make_preset(path, "next-tiny", quant, seed);
}

static struct st_model *load(const char *path, int32_t slots, int32_t max_rows)
{
    struct st_err err = { 0 };
    struct st_model *m = NULL;
    ck_assert_msg(st_model_open(path, &m, &err) == ST_OK, "open: %s", err.msg);
    struct st_model_params p = { .n_threads = 2, .n_slots = slots, .n_ctx = N_CTX,
                                 .max_rows = max_rows, .max_out = N_PROMPT };
    ck_assert_msg(st_model_load(m, &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    return m;
}

/* Read n tokens of slot s from position p0 with logits for every row. */
static const float *read_rows(struct st_model *m, const int32_t *tok, int64_t n, int32_t s,
                              int64_t p0)
{
    int32_t slots[N_PROMPT];
    int64_t pos[N_PROMPT], outs[N_PROMPT];
    for (int64_t i = 0; i < n; i++) {
        slots[i] = s;
        pos[i] = p0 + i;
        outs[i] = i;
    }
    struct st_model_batch b = { n, tok, slots, pos, n, outs };
    const float *logits = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_model_forward(m, &b, &logits, &err) == ST_OK, "forward: %s", err.msg);
    return logits;
}

/* Every row against the reference: f32 weights to float rounding, the
 * quantized types as test_forward_ref.c judges them (the fast path rounds
 * activations before each matmul; the emulating reference does too). */
START_TEST(test_next_matches_reference)
{
    const char *quant = models[_i].quant, *preset = models[_i].preset;
    char dir[256], path[320];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/next-%s.gguf", dir, quant);
    make_preset(path, preset, quant, 5);
    struct st_model *m = load(path, 1, 16);
    int64_t nv = st_model_hparams(m)->n_vocab;
    struct ref_model *r = ref_new(st_model_description(m), N_CTX, strcmp(quant, "f32") != 0);
    int32_t tok[N_PROMPT + N_DECODE];
    ref_tokens(11, tok, N_PROMPT, nv);
    const float *fast = read_rows(m, tok, N_PROMPT, 0, 0);
    float *ref = malloc((size_t)nv * sizeof(float));
    double worst = 1.0;
    int argmax_bad = 0, n = 0, close = 0;
    for (int64_t i = 0; i < N_PROMPT + N_DECODE; i++, n++) {
        if (i >= N_PROMPT) {
            tok[i] = ref_compare(ref, ref, nv, 0).argmax;
            fast = read_rows(m, &tok[i], 1, 0, i);
        }
        ref_step(r, tok[i], i, ref);
        struct ref_cmp c = ref_compare(ref, fast + (i < N_PROMPT ? i * nv : 0), nv, 0.001);
        worst = c.cos < worst ? c.cos : worst;
        argmax_bad += !c.argmax_ok;
        close += c.cos >= 0.999;
        if (strcmp(quant, "f32") == 0)
            ck_assert_msg(c.rel <= 1e-3, "%s %s row %lld: rel %g (cos %.7f)", preset, quant,
                          (long long)i, c.rel, c.cos);
    }
    fprintf(stderr, "forward_next %s %s: worst cos %.7f, %d/%d rows >= 0.999, argmax misses "
            "%d\n", preset, quant, worst, close, n, argmax_bad);
    ck_assert_msg(close * 5 >= n * 4, "%s %s: only %d of %d rows within cosine 0.999", preset,
                  quant, close, n);
    ck_assert_msg(argmax_bad <= 2, "%s %s: %d rows with another argmax", preset, quant,
                  argmax_bad);
    free(ref);
    ref_free(r);
    st_model_free(m);
    support_rmtree(dir);
}
END_TEST

static double max_rel(const float *a, const float *b, int64_t n)
{
    double mx = 0, scale = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        mx = d > mx ? d : mx;
        scale = fabs(a[i]) > scale ? fabs(a[i]) : scale;
    }
    return mx / scale;
}

/* The state carries across steps and restarts at position 0: slot 0 reads
 * the prompt in one step, slot 1 a token at a time (after an unrelated
 * sequence it then restarts), and slot 2 reads another prompt in between;
 * every row of slot 1 equals slot 0's. */
START_TEST(test_next_state_rules)
{
    char dir[256], path[320];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/next.gguf", dir);
    make(path, "f32", 3);
    struct st_model *m = load(path, 3, 64);
    int64_t nv = st_model_hparams(m)->n_vocab;
    int32_t tok[N_PROMPT], other[N_PROMPT];
    ref_tokens(21, tok, N_PROMPT, nv);
    ref_tokens(22, other, N_PROMPT, nv);
    float *whole = malloc((size_t)(N_PROMPT * nv) * sizeof(float));
    memcpy(whole, read_rows(m, tok, N_PROMPT, 0, 0), (size_t)(N_PROMPT * nv) * sizeof(float));
    (void)read_rows(m, other, 7, 1, 0);   /* slot 1 holds something else first */
    for (int64_t i = 0; i < N_PROMPT; i++) {
        if (i % 9 == 4)
            (void)read_rows(m, other + i % 20, 3, 2, i % 20);   /* a neighbour's step */
        const float *one = read_rows(m, &tok[i], 1, 1, i);
        double rel = max_rel(whole + i * nv, one, nv);
        ck_assert_msg(rel <= 1e-4, "row %lld: one step vs token at a time differ by %g",
                      (long long)i, rel);
    }
    free(whole);
    st_model_free(m);
    support_rmtree(dir);
}
END_TEST

/* A verify step's rows re-read from its kept DeltaNet inputs
 * (st_model_state_keep / st_model_state_reread, the rollback of MTP
 * drafts): slot 0 verifies 4 rows beside slot 1's 2, its state goes back
 * to before the step and takes the first 2 rows again; its next row then
 * equals that of a model that read only those 2. Rows the last forward did
 * not keep (another range, more rows, a forward above keep_cap) are
 * refused, changing nothing. */
START_TEST(test_next_state_reread)
{
    char dir[256], path[320];
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/next.gguf", dir);
    make(path, "f32", 3);
    struct st_model *a = load(path, 2, 64), *b = load(path, 2, 64);
    struct st_err err = { 0 };
    ck_assert_int_eq(st_model_state_keep(a, 8, &err), ST_OK);
    int64_t nv = st_model_hparams(a)->n_vocab;
    int32_t tok[32], other[16];
    ref_tokens(31, tok, 32, nv);
    ref_tokens(32, other, 16, nv);
    (void)read_rows(a, tok, 20, 0, 0);   /* 20 rows: above keep_cap, nothing kept */
    (void)read_rows(b, tok, 20, 0, 0);
    ck_assert_int_eq(st_model_state_reread(a, 0, 0, 1, &err), ST_ERR_UNSUPPORTED);
    ck_assert_int_eq(st_model_state_save(a, 0, &err), ST_OK);
    int32_t vt[6] = { tok[20], tok[21], tok[22], tok[23], other[0], other[1] };
    int32_t vs[6] = { 0, 0, 0, 0, 1, 1 };
    int64_t vp[6] = { 20, 21, 22, 23, 0, 1 }, outs[6] = { 0, 1, 2, 3, 4, 5 };
    struct st_model_batch verify = { 6, vt, vs, vp, 6, outs };
    ck_assert_int_eq(st_model_forward(a, &verify, NULL, &err), ST_OK);
    ck_assert_int_eq(st_model_state_restore(a, 0, &err), ST_OK);
    ck_assert_int_eq(st_model_state_reread(a, 0, 21, 4, &err), ST_ERR_UNSUPPORTED);
    ck_assert_int_eq(st_model_state_reread(a, 0, 20, 5, &err), ST_ERR_UNSUPPORTED);
    ck_assert_int_eq(st_model_state_reread(a, 1, 20, 1, &err), ST_ERR_UNSUPPORTED);
    ck_assert_msg(st_model_state_reread(a, 0, 20, 2, &err) == ST_OK, "%s", err.msg);
    (void)read_rows(b, tok + 20, 2, 0, 20);
    float *want = malloc((size_t)nv * sizeof(float));
    memcpy(want, read_rows(b, &tok[30], 1, 0, 22), (size_t)nv * sizeof(float));
    double rel = max_rel(want, read_rows(a, &tok[30], 1, 0, 22), nv);
    ck_assert_msg(rel <= 1e-4, "after the re-read: %g from the model that read 2 rows", rel);
    (void)read_rows(a, other + 2, 9, 1, 2);   /* 9 rows: above keep_cap */
    ck_assert_int_eq(st_model_state_reread(a, 1, 2, 1, &err), ST_ERR_UNSUPPORTED);
    free(want);
    st_model_free(a);
    st_model_free(b);
    support_rmtree(dir);
}
END_TEST

/* A made file's general.architecture and <prefix>* scalar keys and its
 * tensors copied to 'out', with u32 key 'set' replaced (NULL none) and
 * tensor 'skip' left out; the description's load status. */
static enum st_status variant_of(const char *src, const char *out, const char *prefix,
                                 const char *set, uint32_t v, const char *skip,
                                 struct st_err *err)
{
    gguf_variant_write(src, out, prefix, set, v, skip);
    struct st_gguf *g2;
    struct st_model_desc *d = NULL;
    ck_assert_int_eq(st_gguf_open(out, &g2, err), ST_OK);
    enum st_status rc = st_model_desc_load(g2, &d, err);
    if (rc == ST_OK) {   /* blocks 0-2 DeltaNet, 3 attention, from the interval */
        ck_assert(d->layers[0].recurrent && d->layers[2].recurrent && !d->layers[3].recurrent);
        ck_assert_int_eq(d->hp.n_recurrent, 3);
    }
    st_model_desc_free(d);
    st_gguf_close(g2);
    return rc;
}

static enum st_status variant(const char *src, const char *out, const char *set, uint32_t v,
                              const char *skip, struct st_err *err)
{
    return variant_of(src, out, "qwen35moe.", set, v, skip, err);
}

/* Keys that do not fit, and missing tensors, are refused naming them. */
START_TEST(test_next_refused_variants)
{
    static const struct { const char *key; uint32_t v; const char *skip, *msg; } cases[] = {
        { "qwen35moe.ssm.inner_size", 60, NULL, "ssm sizes are inconsistent" },
        { "qwen35moe.ssm.group_count", 3, NULL, "ssm sizes are inconsistent" },
        { "qwen35moe.ssm.conv_kernel", 1, NULL, "ssm sizes are inconsistent" },
        { "qwen35moe.full_attention_interval", 0, NULL, "full_attention_interval" },
        { NULL, 0, "blk.1.ssm_a", "'blk.1.ssm_a' is missing" },
        { NULL, 0, "blk.0.ssm_conv1d.weight", "'blk.0.ssm_conv1d.weight' is missing" },
        { NULL, 0, "blk.3.attn_q_norm.weight", "'blk.3.attn_q_norm.weight' is missing" },
        { NULL, 0, "blk.2.ffn_gate_inp_shexp.weight", "ffn_gate_inp_shexp.weight' is missing" },
    };
    char dir[256], path[320], bad[336];
    struct st_err err = { 0 };
    support_tmpdir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/next.gguf", dir);
    snprintf(bad, sizeof(bad), "%s/bad.gguf", dir);
    make(path, "q8_0", 1);
    ck_assert_msg(variant(path, bad, NULL, 0, NULL, &err) == ST_OK, "the copy: %s", err.msg);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        enum st_status rc = variant(path, bad, cases[c].key, cases[c].v, cases[c].skip, &err);
        ck_assert_int_eq(rc, ST_ERR_BAD_MODEL);
        ck_assert_msg(strstr(err.msg, cases[c].msg), "case %d: '%s' lacks '%s'", (int)c,
                      err.msg, cases[c].msg);
    }
    support_rmtree(dir);
}
END_TEST

/* qwen3next's and qwen35's own tensors and keys, refused naming them. */
START_TEST(test_nextfam_refused_variants)
{
    static const struct {
        const char *preset, *prefix, *key;
        uint32_t v;
        const char *skip, *msg;
    } cases[] = {
        { "next80-tiny", "qwen3next.", NULL, 0, "blk.1.ssm_ba.weight",
          "tensor 'blk.1.ssm_ba.weight' is missing" },
        { "next80-tiny", "qwen3next.", NULL, 0, "blk.0.attn_qkv.weight",
          "'blk.0.attn_qkv.weight' is missing (nor is there the older fused "
          "'blk.0.ssm_in.weight')" },
        { "next80-tiny", "qwen3next.", NULL, 0, "blk.2.attn_gate.weight",
          "'blk.2.attn_gate.weight' is missing" },
        { "next80-tiny", "qwen3next.", NULL, 0, "blk.0.ffn_gate_inp_shexp.weight",
          "'blk.0.ffn_gate_inp_shexp.weight' is missing" },
        { "next80-tiny", "qwen3next.", "qwen3next.ssm.time_step_rank", 3, NULL,
          "ssm sizes are inconsistent" },
        { "next80-tiny-ssm-in", "qwen3next.", NULL, 0, "blk.2.ssm_in.weight",
          "'blk.2.attn_qkv.weight' is missing (nor is there the older fused" },
        { "qwen35-tiny", "qwen35.", NULL, 0, "blk.1.ffn_up.weight",
          "tensor 'blk.1.ffn_up.weight' is missing" },
        { "qwen35-tiny", "qwen35.", NULL, 0, "blk.0.ssm_beta.weight",
          "tensor 'blk.0.ssm_beta.weight' is missing" },
        { "qwen35-tiny", "qwen35.", "qwen35.feed_forward_length", 0, NULL,
          "qwen35 needs feed_forward_length > 0" },
        { "qwen35-tiny", "qwen35.", "qwen35.expert_count", 4, NULL,
          "qwen35 is dense but expert_count is set" },
    };
    char dir[256], path[320], bad[336];
    struct st_err err = { 0 };
    support_tmpdir(dir, sizeof(dir));
    snprintf(bad, sizeof(bad), "%s/bad.gguf", dir);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        snprintf(path, sizeof(path), "%s/%s.gguf", dir, cases[c].preset);
        make_preset(path, cases[c].preset, "q8_0", 1);
        ck_assert_msg(variant_of(path, bad, cases[c].prefix, NULL, 0, NULL, &err) == ST_OK,
                      "the %s copy: %s", cases[c].preset, err.msg);
        enum st_status rc = variant_of(path, bad, cases[c].prefix, cases[c].key, cases[c].v,
                                       cases[c].skip, &err);
        ck_assert_int_eq(rc, ST_ERR_BAD_MODEL);
        ck_assert_msg(strstr(err.msg, cases[c].msg), "case %d: '%s' lacks '%s'", (int)c,
                      err.msg, cases[c].msg);
    }
    support_rmtree(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("forward_next");
    TCase *t = tcase_create("next");
    tcase_set_timeout(t, 300);
    tcase_add_loop_test(t, test_next_matches_reference, 0,
                        (int)(sizeof(models) / sizeof(models[0])));
    tcase_add_test(t, test_next_state_rules);
    tcase_add_test(t, test_next_state_reread);
    tcase_add_test(t, test_next_refused_variants);
    tcase_add_test(t, test_nextfam_refused_variants);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(suite(), CK_FORK);
}
