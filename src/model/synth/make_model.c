/* make_model.c -- st_make_model: a synthetic qwen3moe GGUF (random weights,
 * real tokenizer, ChatML template), written with the GGUF writer; or, with
 * a glm-* preset, a glm4moe one (GLM-4.5's layout: leading dense layers,
 * q/k/v biases, sigmoid routing with a selection bias and a routed scale,
 * a shared expert, partial rope, one nextn block; GLM's special tokens and
 * a GLM-style template; docs/GGUF.md "glm4moe"); or, with a next-* preset,
 * a qwen35moe one (its blocks in make_next.c). Each tensor's type and
 * generator: make_tensors.c.
 *
 * Shapes per docs/design/ENGINE.md 3.2, ne0 innermost: a matrix with y = W x has
 * ne = (in, out); experts are (in, out, X). Weights have standard
 * deviation 1/sqrt(fan_in) so activations stay near unit scale; norm gains
 * are uniform in [0.8, 1.2] (not exactly 1, so an engine that forgets a
 * gain is caught by a reference comparison). Tensor data is generated
 * while the file is written (fill callbacks), block by block.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/synth/make_build.h"
#include "model/synth/synth.h"
#include "strata/make_model.h"
#include "strata/quant.h"
#include "strata/xalloc.h"

/* qwen35moe shapes: next-tiny for tests; next-medium for CPU benchmarks;
 * next-a3b is Qwen3.5-35B-A3B's published shape (40 layers, 256 experts
 * top-8 of width 512 plus a shared one, 16 q / 2 kv heads of 256 with 64
 * rotated dims; DeltaNet 16 q/k and 32 v heads of 128) for the GPU */
static const struct next_shape next_tiny = { 2, 4, 16, 4, 32, 4, "qwen35moe", false };
static const struct next_shape next_medium = { 4, 8, 64, 4, 256, 4, "qwen35moe", false };
static const struct next_shape next_a3b = { 16, 32, 128, 4, 512, 4, "qwen35moe", false };
/* qwen3next (Qwen3-Next-80B-A3B's layout: fused ssm_ba, v heads grouped by
 * k head, plain rope): next80-tiny for tests, next80-tiny-ssm-in
 * the same in the older converter's fused ssm_in, next80-a3b the published
 * shape (48 layers, 512 experts top-10 of width 512 plus a shared one, 16 q /
 * 2 kv heads of 256 with 64 rotated dims; DeltaNet 16 q/k and 32 v heads of
 * 128). qwen35 (dense Qwen3.5): qwen35-tiny. */
static const struct next_shape next80_tiny = { 2, 4, 16, 4, 32, 4, "qwen3next", false };
static const struct next_shape next80_ssm_in = { 2, 4, 16, 4, 32, 4, "qwen3next", true };
static const struct next_shape next80_a3b = { 16, 32, 128, 4, 512, 4, "qwen3next", false };
static const struct next_shape qwen35_tiny = { 2, 4, 16, 4, 0, 4, "qwen35", false };
/* next-mtp-demo: mtp-demo's size in the Next family (DeltaNet 4 q/k and 8 v
 * heads of 64, a shared expert as wide as the routed ones), built to agree */
static const struct next_shape next_mtp_demo = { 4, 8, 64, 4, 512, 4, "qwen35moe", false };

static const struct preset presets[] = {
    { "tiny", 64, 2, 4, 2, 16, 4, 2, 64, 2048, true, false, 0, false, 0, 0, 0, 0, 0.0f, NULL },
    { "small", 256, 4, 8, 2, 32, 8, 2, 128, 4096, false, false, 0, false, 0, 0, 0, 0, 0.0f, NULL },
    { "medium", 768, 12, 16, 4, 64, 16, 4, 256, 8192, false, false, 0, false, 0, 0, 0, 0, 0.0f,
      NULL },
    { "mtp-demo", 512, 8, 8, 2, 64, 4, 2, 512, 4096, false, true, 0, false, 0, 0, 0, 0, 0.0f,
      NULL },
    /* a3b: the real Qwen3-30B-A3B shape (docs/design/ENGINE.md 3.2) with random weights, for
     * measuring the GPU engine (~17 GB at Q4_K); the vocabulary is padded to
     * Qwen's 151,936 rows so the head and embedding have their real size */
    { "a3b", 2048, 48, 32, 4, 128, 128, 8, 768, 40960, false, false, 151936, false, 0, 0, 0, 0,
      0.0f, NULL },
    /* glm-tiny: GLM-4.5-Air's layout at toy size (1 dense + 2 MoE layers, 8
     * experts top-2 with a shared one, rope over half of each head, routed
     * scale 2.5, one nextn block) */
    { "glm-tiny", 64, 3, 4, 2, 16, 8, 2, 32, 2048, false, false, 0, true, 1, 96, 1, 8, 2.5f, NULL },
    { .name = "next-tiny", .E = 64, .L = 4, .H = 4, .Hkv = 2, .D = 16, .X = 4, .k = 2, .F = 32,
      .ctx = 2048, .n_rot = 8, .next = &next_tiny },
    { .name = "next-medium", .E = 768, .L = 12, .H = 8, .Hkv = 2, .D = 128, .X = 16, .k = 4,
      .F = 256, .ctx = 8192, .n_rot = 32, .next = &next_medium },
    { .name = "next-a3b", .E = 2048, .L = 40, .H = 16, .Hkv = 2, .D = 256, .X = 256, .k = 8,
      .F = 512, .ctx = 262144, .n_vocab = 248320, .n_rot = 64, .next = &next_a3b },
    { .name = "next80-tiny", .E = 64, .L = 4, .H = 4, .Hkv = 2, .D = 16, .X = 4, .k = 2, .F = 32,
      .ctx = 2048, .n_rot = 8, .next = &next80_tiny },
    { .name = "next80-tiny-ssm-in", .E = 64, .L = 4, .H = 4, .Hkv = 2, .D = 16, .X = 4, .k = 2,
      .F = 32, .ctx = 2048, .n_rot = 8, .next = &next80_ssm_in },
    { .name = "next80-a3b", .E = 2048, .L = 48, .H = 16, .Hkv = 2, .D = 256, .X = 512, .k = 10,
      .F = 512, .ctx = 262144, .n_vocab = 151936, .n_rot = 64, .next = &next80_a3b },
    { .name = "next-mtp-demo", .E = 512, .L = 8, .H = 8, .Hkv = 2, .D = 64, .X = 4, .k = 2,
      .F = 512, .ctx = 4096, .mtp_demo = true, .n_rot = 32, .next = &next_mtp_demo },
    { .name = "qwen35-tiny", .E = 64, .L = 4, .H = 4, .Hkv = 2, .D = 16, .X = 0, .k = 0, .F = 96,
      .ctx = 2048, .n_rot = 8, .next = &qwen35_tiny },
};

/* Pad v with unused "[PADn]" tokens up to n rows (the a3b preset). */
static void pad_vocab(struct st_mm_vocab *v, int64_t n)
{
    if (n <= v->n)
        return;
    v->tokens = st_xrealloc(v->tokens, (size_t)n * sizeof(*v->tokens));
    v->types = st_xrealloc(v->types, (size_t)n * sizeof(*v->types));
    for (; v->n < n; v->n++) {
        char pad[32];
        snprintf(pad, sizeof(pad), "[PAD%lld]", (long long)v->n);
        v->tokens[v->n] = st_xstrdup(pad);
        v->types[v->n] = 5;
    }
}

static const struct {
    const char *name;
    enum st_dtype t;
    uint32_t ftype;
    enum mix mix;
} quants[] = {
    { "f32", ST_DTYPE_F32, 0, MIX_NONE },        { "f16", ST_DTYPE_F16, 1, MIX_NONE },
    { "bf16", ST_DTYPE_BF16, 32, MIX_NONE },     { "q8_0", ST_DTYPE_Q8_0, 7, MIX_NONE },
    { "q4_0", ST_DTYPE_Q4_0, 2, MIX_NONE },      { "q4_1", ST_DTYPE_Q4_1, 3, MIX_NONE },
    { "q5_0", ST_DTYPE_Q5_0, 8, MIX_NONE },      { "q5_1", ST_DTYPE_Q5_1, 9, MIX_NONE },
    { "q2_k", ST_DTYPE_Q2_K, 10, MIX_Q2_K },     { "q2_k_s", ST_DTYPE_Q2_K, 21, MIX_Q2_K_S },
    { "q3_k", ST_DTYPE_Q3_K, 11, MIX_NONE },     { "q3_k_s", ST_DTYPE_Q3_K, 11, MIX_NONE },
    { "q3_k_m", ST_DTYPE_Q3_K, 12, MIX_Q3_K_M }, { "q3_k_l", ST_DTYPE_Q3_K, 13, MIX_Q3_K_L },
    { "q4_k", ST_DTYPE_Q4_K, 14, MIX_NONE },     { "q4_k_s", ST_DTYPE_Q4_K, 14, MIX_NONE },
    { "q4_k_m", ST_DTYPE_Q4_K, 15, MIX_Q4_K_M }, { "q5_k", ST_DTYPE_Q5_K, 16, MIX_NONE },
    { "q6_k", ST_DTYPE_Q6_K, 18, MIX_NONE },     { "iq3_xxs", ST_DTYPE_IQ3_XXS, 23, MIX_NONE },
    { "iq3_s", ST_DTYPE_IQ3_S, 26, MIX_NONE },   { "iq4_xs", ST_DTYPE_IQ4_XS, 30, MIX_NONE },
};

static bool parse_quant(const char *s, struct plan *out)
{
    for (size_t i = 0; i < ST_ARRAY_LEN(quants); i++) {
        if (strcasecmp(s, quants[i].name) == 0) {
            out->base = quants[i].t;
            out->ftype = quants[i].ftype;
            out->mix = quants[i].mix;
            return true;
        }
    }
    return false;
}

/* glm4moe's blocks (llama.cpp's names): post_attention_norm for the FFN
 * norm, q/k/v biases, no q/k norms (as GLM-4.5-Air), dense FFN on the
 * leading layers, then router + exp_probs_b + experts + shared expert. */
static void add_glm_block(struct build *b, int64_t il)
{
    const struct preset *p = b->p;
    int64_t E = p->E, HD = p->H * p->D, KD = p->Hkv * p->D, Fs = p->F * p->shexp;
    st_mm_add_blk(b, il, "attn_norm", R_NORM, 1, E, 1, 1);
    st_mm_add_blk(b, il, "attn_q", R_ATTN, 2, E, HD, 1);
    st_mm_add_blk(b, il, "attn_q", R_BIAS, 1, HD, 1, 1);
    st_mm_add_blk(b, il, "attn_k", R_ATTN, 2, E, KD, 1);
    st_mm_add_blk(b, il, "attn_k", R_BIAS, 1, KD, 1, 1);
    st_mm_add_blk(b, il, "attn_v", R_ATTN_V, 2, E, KD, 1);
    st_mm_add_blk(b, il, "attn_v", R_BIAS, 1, KD, 1, 1);
    st_mm_add_blk(b, il, "attn_output", R_ATTN_OUT, 2, HD, E, 1);
    st_mm_add_blk(b, il, "post_attention_norm", R_NORM, 1, E, 1, 1);
    if (il < p->dense) {
        st_mm_add_blk(b, il, "ffn_gate", R_FFN, 2, E, p->Fd, 1);
        st_mm_add_blk(b, il, "ffn_up", R_FFN, 2, E, p->Fd, 1);
        st_mm_add_blk(b, il, "ffn_down", R_FFN_DOWN, 2, p->Fd, E, 1);
        return;
    }
    st_mm_add_blk(b, il, "ffn_gate_inp", R_ROUTER, 2, E, p->X, 1);
    st_mm_add_blk(b, il, "exp_probs_b", R_BIAS, 1, p->X, 1, 1);
    st_mm_add_blk(b, il, "ffn_gate_exps", R_FFN, 3, E, p->F, p->X);
    st_mm_add_blk(b, il, "ffn_up_exps", R_FFN, 3, E, p->F, p->X);
    st_mm_add_blk(b, il, "ffn_down_exps", R_FFN_DOWN, 3, p->F, E, p->X);
    st_mm_add_blk(b, il, "ffn_gate_shexp", R_FFN, 2, E, Fs, 1);
    st_mm_add_blk(b, il, "ffn_up_shexp", R_FFN, 2, E, Fs, 1);
    st_mm_add_blk(b, il, "ffn_down_shexp", R_FFN_DOWN, 2, Fs, E, 1);
}

static void add_tensors(struct build *b)
{
    const struct preset *p = b->p;
    int64_t E = p->E, HD = p->H * p->D, KD = p->Hkv * p->D;
    st_mm_add(b, "token_embd.weight", R_EMBD, 0, 2, E, b->n_vocab, 1);
    st_mm_add(b, "output_norm.weight", R_NORM, 0, 1, E, 1, 1);
    if (!p->tied)
        st_mm_add(b, "output.weight", R_OUTPUT, 0, 2, E, b->n_vocab, 1);
    for (int64_t il = 0; il < b->n_blocks && p->next; il++)
        st_mm_add_next_block(b, il);
    for (int64_t il = 0; il < b->n_blocks && p->glm; il++) {
        add_glm_block(b, il);
        if (il == p->L) {                        /* GLM's nextn block: own head norm */
            st_mm_add_blk(b, il, "nextn.eh_proj", R_ATTN, 2, 2 * E, E, 1);
            st_mm_add_blk(b, il, "nextn.enorm", R_NORM, 1, E, 1, 1);
            st_mm_add_blk(b, il, "nextn.hnorm", R_NORM, 1, E, 1, 1);
            st_mm_add_blk(b, il, "nextn.shared_head_norm", R_NORM, 1, E, 1, 1);
        }
    }
    for (int64_t il = 0; il < b->n_blocks && !p->glm && !p->next; il++) {
        st_mm_add_blk(b, il, "attn_norm", R_NORM, 1, E, 1, 1);
        st_mm_add_blk(b, il, "attn_q", R_ATTN, 2, E, HD, 1);
        st_mm_add_blk(b, il, "attn_k", R_ATTN, 2, E, KD, 1);
        st_mm_add_blk(b, il, "attn_v", R_ATTN_V, 2, E, KD, 1);
        st_mm_add_blk(b, il, "attn_output", R_ATTN_OUT, 2, HD, E, 1);
        st_mm_add_blk(b, il, "attn_q_norm", R_NORM, 1, p->D, 1, 1);
        st_mm_add_blk(b, il, "attn_k_norm", R_NORM, 1, p->D, 1, 1);
        st_mm_add_blk(b, il, "ffn_norm", R_NORM, 1, E, 1, 1);
        st_mm_add_blk(b, il, "ffn_gate_inp", R_ROUTER, 2, E, p->X, 1);
        st_mm_add_blk(b, il, "ffn_gate_exps", R_FFN, 3, E, p->F, p->X);
        st_mm_add_blk(b, il, "ffn_up_exps", R_FFN, 3, E, p->F, p->X);
        st_mm_add_blk(b, il, "ffn_down_exps", R_FFN_DOWN, 3, p->F, E, p->X);
        if (il == p->L) {                        /* the MTP block (docs/design/ENGINE.md 4.1) */
            st_mm_add_blk(b, il, "nextn.eh_proj", R_ATTN, 2, 2 * E, E, 1);
            st_mm_add_blk(b, il, "nextn.enorm", R_NORM, 1, E, 1, 1);
            st_mm_add_blk(b, il, "nextn.hnorm", R_NORM, 1, E, 1, 1);
        }
    }
}

/* glm4moe's own keys (llama.cpp's names; GLM-4.5's values where they
 * are fixed: sigmoid gating, normalized top-k). */
static void add_glm_keys(struct build *b)
{
    struct st_gguf_writer *w = b->w;
    const struct preset *p = b->p;
    st_gguf_writer_set_u32(w, "glm4moe.rope.dimension_count", (uint32_t)p->n_rot);
    st_gguf_writer_set_u32(w, "glm4moe.leading_dense_block_count", (uint32_t)p->dense);
    st_gguf_writer_set_u32(w, "glm4moe.expert_shared_count", (uint32_t)p->shexp);
    st_gguf_writer_set_f32(w, "glm4moe.expert_weights_scale", p->scale);
    st_gguf_writer_set_bool(w, "glm4moe.expert_weights_norm", true);
    st_gguf_writer_set_u32(w, "glm4moe.expert_gating_func", 2);   /* sigmoid */
}

static void add_keys(struct build *b, const struct st_make_model_opts *o)
{
    struct st_gguf_writer *w = b->w;
    const struct preset *p = b->p;
    const char *arch = p->glm ? "glm4moe" : p->next ? p->next->arch : "qwen3moe";
    char name[64], key[96];
#define KEY(suffix) (snprintf(key, sizeof(key), "%s.%s", arch, suffix), key)
    snprintf(name, sizeof(name), "strata-synthetic-%s", p->name);
    st_gguf_writer_set_str(w, "general.architecture", arch);
    st_gguf_writer_set_str(w, "general.type", "model");
    st_gguf_writer_set_str(w, "general.name", name);
    char desc[192] = "strata make-model: random weights, its text is noise";
    if (p->mtp_demo)
        snprintf(desc, sizeof(desc), "strata make-model %s: near-random weights built so MTP "
                 "drafts mostly agree (measures the mechanism); its text is noise", p->name);
    st_gguf_writer_set_str(w, "general.description", desc);
    st_gguf_writer_set_u32(w, "general.quantization_version", 2);
    st_gguf_writer_set_u32(w, "general.file_type", b->plan.ftype);
    st_gguf_writer_set_str(w, "strata.make_model.preset", p->name);
    st_gguf_writer_set_u64(w, "strata.make_model.seed", o->seed);
    st_gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)p->ctx);
    st_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)p->E);
    st_gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)b->n_blocks);
    st_gguf_writer_set_u32(w, KEY("feed_forward_length"),
                           (uint32_t)(p->glm ? p->Fd : p->X == 0 ? p->F : p->F * p->k));
    st_gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)p->H);
    st_gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)p->Hkv);
    st_gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)p->D);
    st_gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)p->D);
    st_gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), p->glm ? 1e-5f : 1e-6f);
    st_gguf_writer_set_f32(w, KEY("rope.freq_base"), 1000000.0f);
    if (p->X > 0) {   /* qwen35 is dense */
        st_gguf_writer_set_u32(w, KEY("expert_count"), (uint32_t)p->X);
        st_gguf_writer_set_u32(w, KEY("expert_used_count"), (uint32_t)p->k);
        st_gguf_writer_set_u32(w, KEY("expert_feed_forward_length"), (uint32_t)p->F);
    }
    if (b->n_blocks > p->L)
        st_gguf_writer_set_u32(w, KEY("nextn_predict_layers"), 1);
#undef KEY
    if (p->glm)
        add_glm_keys(b);
    if (p->next)
        st_mm_add_next_keys(b);
}

static enum st_status check_opts(const struct st_make_model_opts *o, struct build *b,
                                 struct st_err *err)
{
    const char *preset = o->preset ? o->preset : "tiny";
    const char *quant = o->quant ? o->quant : "q8_0";
    if (!o->out_path || !*o->out_path)
        return st_err_set(err, ST_ERR_INVALID, "make-model: no output path");
    for (size_t i = 0; i < ST_ARRAY_LEN(presets) && !b->p; i++) {
        if (strcasecmp(preset, presets[i].name) == 0)
            b->p = &presets[i];
    }
    if (!b->p)
        return st_err_set(err, ST_ERR_INVALID,
                          "make-model: unknown preset '%s' (tiny, small, medium, mtp-demo, a3b, "
                          "glm-tiny, next-tiny, next-medium, next-a3b, next80-tiny, "
                          "next80-tiny-ssm-in, next80-a3b, next-mtp-demo, qwen35-tiny)",
                          preset);
    if (!parse_quant(quant, &b->plan))
        return st_err_set(err, ST_ERR_INVALID, "make-model: unknown quant type '%s' (f32 f16 "
                          "bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q2_k_s q3_k q3_k_m q3_k_l q4_k "
                          "q4_k_m q5_k q6_k iq3_s iq3_xxs iq4_xs)", quant);
    b->plan.gqa = b->p->H / b->p->Hkv;
    if (o->n_vocab < 0 || (o->n_vocab > 0 && !o->vocab_path))
        return st_err_set(err, ST_ERR_INVALID, "make-model: --n-vocab needs --vocab");
    return ST_OK;
}

enum st_status st_make_model(const struct st_make_model_opts *o, struct st_err *err)
{
    struct build b = { 0 };
    struct st_mm_vocab v = { 0 };
    enum st_status rc = check_opts(o, &b, err);
    if (rc != ST_OK)
        return rc;
    b.seed = o->seed;
    /* mtp-demo, next-mtp-demo and the glm presets imply --mtp */
    b.n_blocks = b.p->L + (o->mtp || b.p->mtp_demo || b.p->glm ? 1 : 0);
    rc = o->vocab_path ? st_mm_vocab_import(&v, o->vocab_path, o->n_vocab, err)
         : b.p->glm    ? st_mm_vocab_glm(&v, err)
                       : st_mm_vocab_builtin(&v, !o->no_fim, err);
    if (rc != ST_OK)
        return rc;
    if (!v.chat_template)
        v.chat_template = st_xstrdup(st_mm_chatml_template());
    if (!o->vocab_path)
        pad_vocab(&v, b.p->n_vocab);
    b.n_vocab = v.n;
    b.w = st_gguf_writer_new(0);
    b.cap_gens = 3 + 22 * b.n_blocks;
    b.gens = st_xcalloc((size_t)b.cap_gens, sizeof(*b.gens));
    add_keys(&b, o);
    rc = st_mm_vocab_write_kv(&v, b.w, err);
    if (rc == ST_OK) {
        add_tensors(&b);
        rc = st_gguf_writer_write(b.w, o->out_path, err);
    }
    st_gguf_writer_free(b.w);
    free(b.gens);
    st_mm_vocab_free(&v);
    return rc;
}
