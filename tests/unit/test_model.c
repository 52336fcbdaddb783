/* test_model.c -- model description and make-model: synthetic models load
 * (every preset feature, quant types, MTP, tokenizer keys, determinism),
 * imported tokenizers, and load errors for missing or misshapen tensors
 * and keys (files built here with the writer, all-zero weights).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/cli.h"
#include "strata/gguf.h"
#include "strata/gguf_write.h"
#include "strata/make_model.h"
#include "strata/model_desc.h"
#include "strata/quant.h"
#include "support.h"

static char tmpdir[256];
static char path[512];

static void setup(void)
{
    support_tmpdir(tmpdir, sizeof(tmpdir));
    snprintf(path, sizeof(path), "%s/m.gguf", tmpdir);
}

static void teardown(void)
{
    support_rmtree(tmpdir);
}

/* make-model with the given options, then open + describe. */
static void make_and_load(struct st_make_model_opts o, struct st_gguf **g,
                          struct st_model_desc **d)
{
    struct st_err err = { 0 };
    o.out_path = path;
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model: %s", err.msg);
    ck_assert_msg(st_gguf_open(path, g, &err) == ST_OK, "open: %s", err.msg);
    ck_assert_msg(st_model_desc_load(*g, d, &err) == ST_OK, "desc: %s", err.msg);
}

static int32_t token_id(const struct st_gguf *g, const char *text)
{
    const struct st_gguf_kv *tok = st_gguf_find_kv(g, "tokenizer.ggml.tokens");
    struct st_str s;
    for (uint64_t i = 0; i < st_gguf_arr_n(tok); i++)
        if (st_gguf_arr_str(tok, i, &s) && st_str_eq_c(s, text))
            return (int32_t)i;
    return -1;
}

static int64_t token_type(const struct st_gguf *g, int32_t id)
{
    int64_t t = -1;
    st_gguf_arr_i64(st_gguf_find_kv(g, "tokenizer.ggml.token_type"), (uint64_t)id, &t);
    return t;
}

/* ---- make-model ------------------------------------------------------------- */

START_TEST(test_model_tiny_loads)
{
    struct st_gguf *g;
    struct st_model_desc *d;
    make_and_load((struct st_make_model_opts){ .preset = "tiny", .seed = 7 }, &g, &d);
    const struct st_hparams *h = &d->hp;
    ck_assert_int_eq(h->arch, ST_ARCH_QWEN3MOE);
    ck_assert_int_eq(h->n_embd, 64);
    ck_assert_int_eq(h->n_layer, 2);
    ck_assert_int_eq(h->n_nextn, 0);
    ck_assert_int_eq(h->n_head, 4);
    ck_assert_int_eq(h->n_head_kv, 2);
    ck_assert_int_eq(h->head_dim_k, 16);
    ck_assert_int_eq(h->n_expert, 4);
    ck_assert_int_eq(h->n_expert_used, 2);
    ck_assert_int_eq(h->n_ff_exp, 64);
    ck_assert_int_eq(h->n_ctx_train, 2048);
    ck_assert(h->tied_output && h->qk_norm && h->rope_neox);
    ck_assert(h->rms_eps == 1e-6f && h->rope_freq_base == 1e6f);
    ck_assert_int_eq(h->n_vocab % 64, 0);
    ck_assert_ptr_eq(d->output, d->tok_embd);
    for (int il = 0; il < 2; il++) {
        const struct st_layer_desc *L = &d->layers[il];
        ck_assert(L->wq && L->wk && L->wv && L->wo && L->q_norm && L->k_norm);
        ck_assert(L->ffn_gate_inp && L->ffn_gate_exps && L->ffn_up_exps && L->ffn_down_exps);
        ck_assert_ptr_null(L->ffn_gate);
        ck_assert_int_eq(L->wq->type, ST_DTYPE_Q8_0);
        ck_assert_int_eq(L->ffn_gate_inp->type, ST_DTYPE_F32);
        ck_assert_int_eq(L->ffn_down_exps->ne[0], 64);
        ck_assert_int_eq(L->ffn_down_exps->ne[2], 4);
    }
    ck_assert(st_gguf_is_strict_layout(g));
    st_model_desc_free(d);
    st_gguf_close(g);
}
END_TEST

START_TEST(test_model_tokenizer_keys)
{
    struct st_gguf *g;
    struct st_model_desc *d;
    struct st_err err = { 0 };
    struct st_str s;
    uint32_t bos, eos, pad;
    bool add_bos = true;
    make_and_load((struct st_make_model_opts){ 0 }, &g, &d);
    ck_assert_int_eq(st_gguf_get_str(g, "tokenizer.ggml.model", &s, &err), ST_OK);
    ck_assert(st_str_eq_c(s, "gpt2"));
    ck_assert_int_eq(st_gguf_get_str(g, "tokenizer.ggml.pre", &s, &err), ST_OK);
    ck_assert(st_str_eq_c(s, "qwen2"));
    ck_assert_int_eq(st_gguf_arr_type(st_gguf_find_kv(g, "tokenizer.ggml.token_type")), ST_GGUF_I32);
    ck_assert_uint_eq(st_gguf_arr_n(st_gguf_find_kv(g, "tokenizer.ggml.token_type")),
                      (uint64_t)d->hp.n_vocab);
    const struct st_gguf_kv *merges = st_gguf_find_kv(g, "tokenizer.ggml.merges");
    ck_assert_uint_ge(st_gguf_arr_n(merges), 200);
    ck_assert(st_gguf_arr_str(merges, 0, &s) && memchr(s.ptr, ' ', s.len));
    ck_assert_int_eq(token_id(g, "\xc4\xa0"), 32);       /* byte ' ' is 'Ġ' */
    ck_assert_int_eq(token_id(g, "A"), 65);
    ck_assert_int_ge(token_id(g, "\xc4\xa0the"), 256);   /* a learned merge */
    ck_assert_int_eq(st_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos, &err), ST_OK);
    ck_assert_int_eq(st_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos, &err), ST_OK);
    ck_assert_int_eq(st_gguf_get_u32(g, "tokenizer.ggml.padding_token_id", &pad, &err), ST_OK);
    ck_assert_int_eq((int32_t)bos, token_id(g, "<|endoftext|>"));
    ck_assert_int_eq((int32_t)eos, token_id(g, "<|im_end|>"));
    ck_assert_int_eq(pad, bos);
    ck_assert_int_eq(st_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos, &err), ST_OK);
    ck_assert(!add_bos);
    ck_assert_int_eq(token_type(g, token_id(g, "<|im_start|>")), 3);
    ck_assert_int_eq(token_type(g, token_id(g, "<think>")), 4);
    ck_assert_int_eq(token_type(g, token_id(g, "</think>")), 4);
    ck_assert_int_eq(token_type(g, 65), 1);
    ck_assert_int_eq(token_type(g, (int32_t)d->hp.n_vocab - 1), 5);   /* padding */
    ck_assert_int_eq(st_gguf_get_str(g, "tokenizer.chat_template", &s, &err), ST_OK);
    ck_assert_ptr_nonnull(memmem(s.ptr, s.len, "<|im_start|>", 12));
    st_model_desc_free(d);
    st_gguf_close(g);
}
END_TEST

START_TEST(test_model_same_seed_same_bytes)
{
    struct st_err err = { 0 };
    char p2[600], p3[600];
    snprintf(p2, sizeof(p2), "%s/b.gguf", tmpdir);
    snprintf(p3, sizeof(p3), "%s/c.gguf", tmpdir);
    struct st_make_model_opts o = { .out_path = path, .seed = 5, .quant = "q4_0" };
    ck_assert_int_eq(st_make_model(&o, &err), ST_OK);
    o.out_path = p2;
    ck_assert_int_eq(st_make_model(&o, &err), ST_OK);
    o.out_path = p3;
    o.seed = 6;
    ck_assert_int_eq(st_make_model(&o, &err), ST_OK);
    struct st_gguf *a, *b, *c;
    ck_assert_int_eq(st_gguf_open(path, &a, &err), ST_OK);
    ck_assert_int_eq(st_gguf_open(p2, &b, &err), ST_OK);
    ck_assert_int_eq(st_gguf_open(p3, &c, &err), ST_OK);
    ck_assert_uint_eq(st_gguf_file_size(a), st_gguf_file_size(b));
    const struct st_gguf_tensor *ta = st_gguf_find_tensor(a, "blk.1.ffn_up_exps.weight");
    const struct st_gguf_tensor *tb = st_gguf_find_tensor(b, "blk.1.ffn_up_exps.weight");
    const struct st_gguf_tensor *tc = st_gguf_find_tensor(c, "blk.1.ffn_up_exps.weight");
    ck_assert_int_eq(memcmp(ta->data, tb->data, ta->nbytes), 0);
    ck_assert_int_ne(memcmp(ta->data, tc->data, ta->nbytes), 0);
    st_gguf_close(a);
    st_gguf_close(b);
    st_gguf_close(c);
}
END_TEST

/* Dequantized weights of every type have mean ~0 and std ~1/sqrt(fan_in). */
START_TEST(test_model_every_quant_type_is_sane)
{
    static const struct { const char *q; enum st_dtype gate, down, out; } cases[] = {
        { "f32", ST_DTYPE_F32, ST_DTYPE_F32, ST_DTYPE_F32 },
        { "f16", ST_DTYPE_F16, ST_DTYPE_F16, ST_DTYPE_F16 },
        { "bf16", ST_DTYPE_BF16, ST_DTYPE_BF16, ST_DTYPE_BF16 },
        { "q8_0", ST_DTYPE_Q8_0, ST_DTYPE_Q8_0, ST_DTYPE_Q8_0 },
        { "q4_0", ST_DTYPE_Q4_0, ST_DTYPE_Q4_0, ST_DTYPE_Q6_K },
        /* small: ffn_down_exps rows are 128 wide -> 32-element fallback */
        { "q4_k", ST_DTYPE_Q4_K, ST_DTYPE_Q4_0, ST_DTYPE_Q6_K },
        { "q5_k", ST_DTYPE_Q5_K, ST_DTYPE_Q8_0, ST_DTYPE_Q6_K },
        { "q6_k", ST_DTYPE_Q6_K, ST_DTYPE_Q8_0, ST_DTYPE_Q6_K },
        { "iq3_s", ST_DTYPE_IQ3_S, ST_DTYPE_Q4_0, ST_DTYPE_Q6_K },
        { "IQ3_XXS", ST_DTYPE_IQ3_XXS, ST_DTYPE_Q4_0, ST_DTYPE_Q6_K },
        { "iq4_xs", ST_DTYPE_IQ4_XS, ST_DTYPE_Q4_0, ST_DTYPE_Q6_K },
        { "q4_1", ST_DTYPE_Q4_1, ST_DTYPE_Q4_1, ST_DTYPE_Q6_K },
        { "q5_0", ST_DTYPE_Q5_0, ST_DTYPE_Q5_0, ST_DTYPE_Q6_K },
        { "Q5_1", ST_DTYPE_Q5_1, ST_DTYPE_Q5_1, ST_DTYPE_Q6_K },
        { "q3_k", ST_DTYPE_Q3_K, ST_DTYPE_Q4_0, ST_DTYPE_Q6_K },
        /* the Q2_K mix: ffn_down wants Q3_K, 128 wide -> Q4_0 */
        { "q2_k", ST_DTYPE_Q2_K, ST_DTYPE_Q4_0, ST_DTYPE_Q6_K },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct st_gguf *g;
        struct st_model_desc *d;
        make_and_load((struct st_make_model_opts){ .preset = "small", .quant = cases[c].q },
                      &g, &d);
        const struct st_gguf_tensor *t = d->layers[1].ffn_gate_exps;
        ck_assert_msg(t->type == cases[c].gate, "%s: gate type %d", cases[c].q, t->type);
        ck_assert_int_eq(d->layers[1].ffn_down_exps->type, cases[c].down);
        ck_assert_int_eq(d->output->type, cases[c].out);
        ck_assert(!d->hp.tied_output);
        /* 64 rows of 256 */
        float *x = malloc(sizeof(float) * 256 * 64);
        st_dequant_row(t->type, t->data, x, 256 * 64);
        double s = 0, ss = 0;
        for (int i = 0; i < 256 * 64; i++) {
            ck_assert(isfinite(x[i]));
            s += x[i];
            ss += (double)x[i] * x[i];
        }
        double mean = s / (256 * 64), sd = sqrt(ss / (256 * 64) - mean * mean);
        ck_assert_msg(fabs(mean) < 0.01 && sd > 0.5 / 16 && sd < 2.0 / 16,
                      "%s: mean %g sd %g (want ~%g)", cases[c].q, mean, sd, 1.0 / 16);
        free(x);
        const float *gain = d->layers[0].attn_norm->data;
        ck_assert(gain[0] >= 0.8f && gain[0] <= 1.2f && gain[0] != gain[1]);
        st_model_desc_free(d);
        st_gguf_close(g);
    }
}
END_TEST

/* llama-quantize's Q2_K / Q3_K_M / Q3_K_L / Q2_K_S rules on the small
 * preset (4 layers, gqa 8/2 = 4, attn_v and attn_output 256 wide). */
START_TEST(test_model_low_bit_mixes)
{
    static const struct {
        const char *q;
        uint32_t ftype;
        enum st_dtype wq, wv0, wv2, wo;
    } cases[] = {
        { "q2_k", 10, ST_DTYPE_Q2_K, ST_DTYPE_Q4_K, ST_DTYPE_Q4_K, ST_DTYPE_Q3_K },
        { "q2_k_s", 21, ST_DTYPE_Q2_K, ST_DTYPE_Q4_K, ST_DTYPE_Q4_K, ST_DTYPE_Q2_K },
        { "q3_k_s", 11, ST_DTYPE_Q3_K, ST_DTYPE_Q3_K, ST_DTYPE_Q3_K, ST_DTYPE_Q3_K },
        { "q3_k_m", 12, ST_DTYPE_Q3_K, ST_DTYPE_Q5_K, ST_DTYPE_Q4_K, ST_DTYPE_Q4_K },
        { "q3_k_l", 13, ST_DTYPE_Q3_K, ST_DTYPE_Q5_K, ST_DTYPE_Q5_K, ST_DTYPE_Q5_K },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct st_gguf *g;
        struct st_model_desc *d;
        struct st_err err = { 0 };
        uint32_t ft;
        make_and_load((struct st_make_model_opts){ .preset = "small", .quant = cases[c].q },
                      &g, &d);
        ck_assert_int_eq(st_gguf_get_u32(g, "general.file_type", &ft, &err), ST_OK);
        ck_assert_uint_eq(ft, cases[c].ftype);
        ck_assert_msg(d->layers[1].wq->type == cases[c].wq, "%s wq", cases[c].q);
        ck_assert_msg(d->layers[0].wv->type == cases[c].wv0, "%s wv0", cases[c].q);
        ck_assert_msg(d->layers[2].wv->type == cases[c].wv2, "%s wv2", cases[c].q);
        ck_assert_msg(d->layers[3].wo->type == cases[c].wo, "%s wo", cases[c].q);
        ck_assert_int_eq(d->layers[1].ffn_gate_exps->type, cases[c].wq);
        ck_assert_int_eq(d->output->type, ST_DTYPE_Q6_K);
        st_model_desc_free(d);
        st_gguf_close(g);
    }
}
END_TEST

/* Its speed is no test's business (a loaded machine, ASan): the tcase
 * timeout only bounds a hang. */
START_TEST(test_model_medium_q4_k_m)
{
    struct st_gguf *g;
    struct st_model_desc *d;
    make_and_load((struct st_make_model_opts){ .preset = "medium", .quant = "q4_k_m" }, &g, &d);
    const struct st_hparams *h = &d->hp;
    ck_assert(h->n_embd == 768 && h->n_layer == 12 && h->n_head == 16 && h->n_head_kv == 4);
    ck_assert(h->head_dim_k == 64 && h->n_expert == 16 && h->n_expert_used == 4);
    ck_assert(h->n_ff_exp == 256 && !h->tied_output);
    /* Q4_K_M: use_more_bits layers (0, 3, 6, 9, 10, 11 of 12) get Q6_K */
    ck_assert_int_eq(d->layers[0].wv->type, ST_DTYPE_Q6_K);
    ck_assert_int_eq(d->layers[1].wv->type, ST_DTYPE_Q4_K);
    ck_assert_int_eq(d->layers[3].ffn_down_exps->type, ST_DTYPE_Q6_K);
    ck_assert_int_eq(d->layers[4].ffn_down_exps->type, ST_DTYPE_Q4_K);
    ck_assert_int_eq(d->layers[4].wq->type, ST_DTYPE_Q4_K);
    ck_assert_int_eq(d->output->type, ST_DTYPE_Q6_K);
    uint32_t ft;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_gguf_get_u32(g, "general.file_type", &ft, &err), ST_OK);
    ck_assert_uint_eq(ft, 15);
    st_model_desc_free(d);
    st_gguf_close(g);
}
END_TEST

START_TEST(test_model_mtp_block)
{
    struct st_gguf *g;
    struct st_model_desc *d;
    struct st_err err = { 0 };
    uint32_t bc;
    make_and_load((struct st_make_model_opts){ .mtp = true }, &g, &d);
    ck_assert_int_eq(st_gguf_get_u32(g, "qwen3moe.block_count", &bc, &err), ST_OK);
    ck_assert_uint_eq(bc, 3);
    ck_assert_int_eq(d->hp.n_layer, 2);
    ck_assert_int_eq(d->hp.n_nextn, 1);
    ck_assert_int_eq(d->n_layers_all, 3);
    const struct st_layer_desc *m = &d->layers[2];
    ck_assert_ptr_nonnull(m->nextn_eh_proj);
    ck_assert(m->nextn_eh_proj->ne[0] == 128 && m->nextn_eh_proj->ne[1] == 64);
    ck_assert(m->nextn_enorm && m->nextn_hnorm && m->ffn_down_exps && m->wq);
    ck_assert_ptr_null(m->nextn_embed);                  /* optional: falls back */
    ck_assert_ptr_null(d->layers[1].nextn_eh_proj);
    st_model_desc_free(d);
    st_gguf_close(g);
}
END_TEST

/* next-mtp-demo: a qwen35moe with its nextn block built to agree (the
 * fills make_tensors.c documents): eh_proj [I | 0] in F16, enorm ones, the
 * block's head norm the model's output_norm bit for bit. */
START_TEST(test_model_next_mtp_demo)
{
    struct st_gguf *g;
    struct st_model_desc *d;
    make_and_load((struct st_make_model_opts){ .preset = "next-mtp-demo" }, &g, &d);
    ck_assert_int_eq(d->hp.n_layer, 8);
    ck_assert_int_eq(d->hp.n_recurrent, 6);
    ck_assert_int_eq(d->hp.n_nextn, 1);
    const struct st_layer_desc *m = &d->layers[8];
    ck_assert_ptr_nonnull(m->nextn_eh_proj);
    ck_assert_int_eq(m->nextn_eh_proj->type, ST_DTYPE_F16);
    const uint16_t *eh = m->nextn_eh_proj->data;            /* row o: e_o, then zeros */
    ck_assert_uint_eq(eh[0], 0x3c00);
    ck_assert_uint_eq(eh[1], 0);
    ck_assert_uint_eq(eh[1024 + 1], 0x3c00);
    ck_assert_uint_eq(eh[1024 + 512 + 1], 0);
    const float *en = m->nextn_enorm->data;
    ck_assert(en[0] == 1.0f && en[511] == 1.0f);
    ck_assert_ptr_nonnull(m->nextn_head_norm);
    ck_assert(memcmp(m->nextn_head_norm->data, d->output_norm->data, 512 * sizeof(float)) == 0);
    st_model_desc_free(d);
    st_gguf_close(g);
}
END_TEST

static void write_text(const char *dir, const char *name, const char *text)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(test_model_imports_hf_tokenizer)
{
    struct st_gguf *g;
    struct st_model_desc *d;
    struct st_err err = { 0 };
    struct st_str s;
    uint32_t eos, bos;
    char tok[600];
    write_text(tmpdir, "tokenizer.json",
               "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, "
               "\"\\u0120\": 3, \"\\u0120ab\": 4, \"c\": 6},"
               " \"merges\": [\"a b\", [\"\\u0120\", \"ab\"]]},"
               " \"added_tokens\": [{\"id\": 7, \"content\": \"<|im_end|>\", \"special\": true},"
               " {\"id\": 8, \"content\": \"<think>\", \"special\": false},"
               " {\"id\": 9, \"content\": \"<|endoftext|>\", \"special\": false}]}");
    write_text(tmpdir, "tokenizer_config.json",
               "{\"chat_template\": \"{{ messages }}custom\", \"eos_token\": {\"content\": "
               "\"<|im_end|>\"}, \"bos_token\": null, \"add_bos_token\": false}");
    snprintf(tok, sizeof(tok), "%s/tokenizer.json", tmpdir);
    make_and_load((struct st_make_model_opts){ .vocab_path = tok, .n_vocab = 16 }, &g, &d);
    ck_assert_int_eq(d->hp.n_vocab, 16);
    ck_assert_int_eq(token_id(g, "\xc4\xa0" "ab"), 4);
    ck_assert(st_gguf_arr_str(st_gguf_find_kv(g, "tokenizer.ggml.tokens"), 5, &s) &&
              st_str_eq_c(s, "[PAD5]"));                 /* a hole */
    ck_assert_int_eq(token_type(g, 5), 5);
    ck_assert_int_eq(token_type(g, 2), 1);
    ck_assert_int_eq(token_type(g, 7), 3);
    ck_assert_int_eq(token_type(g, 8), 4);
    ck_assert_int_eq(token_type(g, 9), 3);               /* <|...|> looks like control */
    const struct st_gguf_kv *m = st_gguf_find_kv(g, "tokenizer.ggml.merges");
    ck_assert_uint_eq(st_gguf_arr_n(m), 2);
    ck_assert(st_gguf_arr_str(m, 1, &s) && st_str_eq_c(s, "\xc4\xa0 ab"));
    ck_assert_int_eq(st_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos, &err), ST_OK);
    ck_assert_uint_eq(eos, 7);
    ck_assert_int_eq(st_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos, &err), ST_OK);
    ck_assert_uint_eq(bos, 9);
    ck_assert_int_eq(st_gguf_get_str(g, "tokenizer.chat_template", &s, &err), ST_OK);
    ck_assert(st_str_eq_c(s, "{{ messages }}custom"));
    st_model_desc_free(d);
    st_gguf_close(g);
}
END_TEST

/* The real Qwen3 tokenizer that tokenizer_ref installs in the build tree
 * (its own ctest entry, model_real_tokenizer: skipped without it). */
START_TEST(test_model_imports_real_qwen3_tokenizer)
{
    const char *tok = support_qwen3_tokenizer();
    ck_assert_msg(tok != NULL, "no real Qwen3 tokenizer.json in the build tree");
    struct st_gguf *g;
    struct st_model_desc *d;
    struct st_err err = { 0 };
    uint32_t eos, bos;
    make_and_load((struct st_make_model_opts){ .vocab_path = tok, .quant = "q4_0" }, &g, &d);
    ck_assert_int_eq(d->hp.n_vocab, 151936);
    ck_assert_int_eq(token_id(g, "<|im_end|>"), 151645);
    ck_assert_int_eq(token_type(g, 151645), 3);
    ck_assert_int_eq(token_type(g, 151667), 4);          /* <think> */
    ck_assert_int_eq(token_type(g, 151935), 5);
    ck_assert_int_eq(st_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos, &err), ST_OK);
    ck_assert_uint_eq(eos, 151645);
    ck_assert_int_eq(st_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos, &err), ST_OK);
    ck_assert_uint_eq(bos, 151643);
    ck_assert_uint_eq(st_gguf_arr_n(st_gguf_find_kv(g, "tokenizer.ggml.merges")), 151387);
    st_model_desc_free(d);
    st_gguf_close(g);
}
END_TEST

START_TEST(test_model_make_model_rejects_bad_options)
{
    struct st_err err = { 0 };
    struct st_make_model_opts o = { .out_path = path, .preset = "huge" };
    ck_assert_int_eq(st_make_model(&o, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "huge"));
    o = (struct st_make_model_opts){ .out_path = path, .quant = "q2_k_xl" };
    ck_assert_int_eq(st_make_model(&o, &err), ST_ERR_INVALID);
    o = (struct st_make_model_opts){ .out_path = path, .vocab_path = "/nonexistent/t.json" };
    ck_assert_int_eq(st_make_model(&o, &err), ST_ERR_IO);
    struct stat sb;
    ck_assert_int_ne(stat(path, &sb), 0);
}
END_TEST

START_TEST(test_model_cli_make_and_inspect)
{
    char *mk[] = { "make-model", path, "--preset", "tiny", "--quant", "q8_0", "--seed", "3", NULL };
    char *bad[] = { "make-model", path, "--bogus", NULL };
    char *insp[] = { "inspect", path, "--no-tensors", NULL };
    char *insp_bad[] = { "inspect", "/nonexistent.gguf", NULL };
    ck_assert_int_eq(st_cli_make_model(8, mk), 0);
    ck_assert_int_eq(st_cli_make_model(3, bad), 2);
    ck_assert_int_eq(st_cli_inspect(3, insp), 0);
    ck_assert_int_eq(st_cli_inspect(2, insp_bad), 1);
    ck_assert_int_eq(st_cli_inspect(1, insp), 2);
}
END_TEST

/* ---- load errors (files built with the writer) ------------------------------ */

struct spec {
    const char *arch;       /* general.architecture */
    const char *skip;       /* tensor to leave out */
    const char *reshape;    /* tensor whose ne1 gets +1 */
    const char *f16_norm;   /* norm written as F16 */
    const char *no_key;     /* key to leave out (suffix after "<arch>.") */
    int         n_tokens;   /* tokenizer.ggml.tokens count (0 = none) */
    bool        untied;
    void      (*extra)(struct st_gguf_writer *w, const char *arch);   /* more keys */
    struct st_hparams *hp_out;                                         /* the result */
};

static uint8_t zeros[1 << 16];

static void tensor(struct st_gguf_writer *w, const struct spec *sp, const char *name,
                   bool norm, int n_dims, int64_t ne0, int64_t ne1, int64_t ne2)
{
    if (sp->skip && strcmp(name, sp->skip) == 0)
        return;
    if (sp->reshape && strcmp(name, sp->reshape) == 0)
        ne1 += 1, n_dims = n_dims < 2 ? 2 : n_dims;
    enum st_dtype t = norm ? (sp->f16_norm && strcmp(name, sp->f16_norm) == 0 ? ST_DTYPE_F16
                                                                              : ST_DTYPE_F32)
                           : ST_DTYPE_Q8_0;
    st_gguf_writer_add_tensor(w, name, t, n_dims, (int64_t[]){ ne0, ne1, ne2 }, zeros);
}

static void key(struct st_gguf_writer *w, const struct spec *sp, const char *suffix, uint32_t v)
{
    char k[128];
    if (sp->no_key && strcmp(sp->no_key, suffix) == 0)
        return;
    snprintf(k, sizeof(k), "%s.%s", sp->arch, suffix);
    st_gguf_writer_set_u32(w, k, v);
}

/* E 32, 2 layers, 2 heads / 1 kv of 32, vocab 64; MoE (4 experts top-2,
 * ffn 32) unless arch is qwen3 / llama (dense ffn 64). */
static enum st_status build_and_load(const struct spec *sp, struct st_err *err)
{
    bool moe = strcmp(sp->arch, "qwen3moe") == 0, qk = strcmp(sp->arch, "llama") != 0;
    struct st_gguf_writer *w = st_gguf_writer_new(0);
    char k[128], n[96];
    st_gguf_writer_set_str(w, "general.architecture", sp->arch);
    key(w, sp, "embedding_length", 32);
    key(w, sp, "block_count", 2);
    key(w, sp, "context_length", 256);
    key(w, sp, "attention.head_count", 2);
    key(w, sp, "attention.head_count_kv", 1);
    key(w, sp, "feed_forward_length", 64);
    if (moe) {
        key(w, sp, "expert_count", 4);
        key(w, sp, "expert_used_count", 2);
        key(w, sp, "expert_feed_forward_length", 32);
    }
    snprintf(k, sizeof(k), "%s.attention.layer_norm_rms_epsilon", sp->arch);
    if (!(sp->no_key && strstr(k, sp->no_key)))
        st_gguf_writer_set_f32(w, k, 1e-6f);
    if (sp->n_tokens) {
        const char **toks = calloc((size_t)sp->n_tokens, sizeof(*toks));
        for (int i = 0; i < sp->n_tokens; i++)
            toks[i] = "t";
        st_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, (size_t)sp->n_tokens);
        free(toks);
    }
    if (sp->extra)
        sp->extra(w, sp->arch);
    tensor(w, sp, "token_embd.weight", false, 2, 32, 64, 1);
    tensor(w, sp, "output_norm.weight", true, 1, 32, 1, 1);
    if (sp->untied)
        tensor(w, sp, "output.weight", false, 2, 32, 64, 1);
    for (int il = 0; il < 2; il++) {
#define T(what, norm, nd, a, b, c) \
        snprintf(n, sizeof(n), "blk.%d.%s.weight", il, what), tensor(w, sp, n, norm, nd, a, b, c)
        T("attn_norm", true, 1, 32, 1, 1);
        T("attn_q", false, 2, 32, 32, 1);
        T("attn_k", false, 2, 32, 16, 1);
        T("attn_v", false, 2, 32, 16, 1);
        T("attn_output", false, 2, 32, 32, 1);
        if (qk) {
            T("attn_q_norm", true, 1, 16, 1, 1);
            T("attn_k_norm", true, 1, 16, 1, 1);
        }
        T("ffn_norm", true, 1, 32, 1, 1);
        if (moe) {
            T("ffn_gate_inp", true, 2, 32, 4, 1);
            T("ffn_gate_exps", false, 3, 32, 32, 4);
            T("ffn_up_exps", false, 3, 32, 32, 4);
            T("ffn_down_exps", false, 3, 32, 32, 4);
        } else {
            T("ffn_gate", false, 2, 32, 64, 1);
            T("ffn_up", false, 2, 32, 64, 1);
            T("ffn_down", false, 2, 64, 32, 1);
        }
#undef T
    }
    enum st_status rc = st_gguf_writer_write(w, path, err);
    st_gguf_writer_free(w);
    ck_assert_int_eq(rc, ST_OK);
    struct st_gguf *g = NULL;
    struct st_model_desc *d = NULL;
    ck_assert_int_eq(st_gguf_open(path, &g, err), ST_OK);
    rc = st_model_desc_load(g, &d, err);
    if (rc == ST_OK) {
        ck_assert_int_eq(d->hp.head_dim_k, 16);          /* E / H */
        ck_assert(d->hp.tied_output == !sp->untied);
        if (sp->hp_out)
            *sp->hp_out = d->hp;
    } else {
        ck_assert_ptr_null(d);
    }
    st_model_desc_free(d);
    st_gguf_close(g);
    return rc;
}

static void expect_load_error(struct spec sp, const char *needle)
{
    struct st_err err = { 0 };
    ck_assert_int_eq(build_and_load(&sp, &err), ST_ERR_BAD_MODEL);
    ck_assert_msg(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
}

START_TEST(test_model_handmade_files_load)
{
    struct st_err err = { 0 };
    struct spec moe = { .arch = "qwen3moe", .n_tokens = 64 };
    struct spec dense = { .arch = "qwen3", .untied = true };
    struct spec llama = { .arch = "llama" };
    ck_assert_msg(build_and_load(&moe, &err) == ST_OK, "%s", err.msg);
    ck_assert_msg(build_and_load(&dense, &err) == ST_OK, "%s", err.msg);
    ck_assert_msg(build_and_load(&llama, &err) == ST_OK, "%s", err.msg);
}
END_TEST

START_TEST(test_model_missing_tensor_is_named)
{
    expect_load_error((struct spec){ .arch = "qwen3moe", .skip = "blk.1.ffn_up_exps.weight" },
                      "'blk.1.ffn_up_exps.weight' is missing");
    expect_load_error((struct spec){ .arch = "qwen3", .skip = "blk.0.attn_k_norm.weight" },
                      "'blk.0.attn_k_norm.weight' is missing");
    expect_load_error((struct spec){ .arch = "qwen3moe", .skip = "token_embd.weight" },
                      "token_embd.weight");
}
END_TEST

START_TEST(test_model_wrong_shape_is_named)
{
    expect_load_error((struct spec){ .arch = "qwen3moe", .reshape = "blk.0.attn_k.weight" },
                      "'blk.0.attn_k.weight' has shape [32, 17, 1, 1], expected [32, 16, 1, 1]");
    expect_load_error((struct spec){ .arch = "qwen3moe", .reshape = "output_norm.weight" },
                      "output_norm.weight");
    expect_load_error((struct spec){ .arch = "qwen3moe", .f16_norm = "blk.1.ffn_norm.weight" },
                      "norms must be F32");
}
END_TEST

START_TEST(test_model_missing_key_is_named)
{
    expect_load_error((struct spec){ .arch = "qwen3moe", .no_key = "embedding_length" },
                      "qwen3moe.embedding_length");
    expect_load_error((struct spec){ .arch = "qwen3moe", .no_key = "expert_count" },
                      "qwen3moe.expert_count");
    expect_load_error((struct spec){ .arch = "qwen3", .no_key = "layer_norm_rms_epsilon" },
                      "layer_norm_rms_epsilon");
    expect_load_error((struct spec){ .arch = "mamba" }, "'mamba' is not supported");
    expect_load_error((struct spec){ .arch = "qwen3moe", .n_tokens = 63 }, "63 tokens");
}
END_TEST

/* ---- rope scaling keys ------------------------------------------------------ */

static void set_key_str(struct st_gguf_writer *w, const char *arch, const char *suf, const char *v)
{
    char k[128];
    snprintf(k, sizeof(k), "%s.%s", arch, suf);
    st_gguf_writer_set_str(w, k, v);
}

static void set_key_f32(struct st_gguf_writer *w, const char *arch, const char *suf, float v)
{
    char k[128];
    snprintf(k, sizeof(k), "%s.%s", arch, suf);
    st_gguf_writer_set_f32(w, k, v);
}

/* Qwen3's recommended YaRN, as a converter writes it. */
static void yarn_keys(struct st_gguf_writer *w, const char *arch)
{
    set_key_str(w, arch, "rope.scaling.type", "yarn");
    set_key_f32(w, arch, "rope.scaling.factor", 4.0f);
    char k[128];
    snprintf(k, sizeof(k), "%s.rope.scaling.original_context_length", arch);
    st_gguf_writer_set_u32(w, k, 32768);
}

static void yarn_tuned_keys(struct st_gguf_writer *w, const char *arch)
{
    set_key_str(w, arch, "rope.scaling.type", "yarn");
    set_key_f32(w, arch, "rope.scaling.factor", 2.0f);
    set_key_f32(w, arch, "rope.scaling.attn_factor", 0.875f);
    set_key_f32(w, arch, "rope.scaling.yarn_beta_fast", 16.0f);
    set_key_f32(w, arch, "rope.scaling.yarn_beta_slow", 2.0f);
}

static void linear_keys(struct st_gguf_writer *w, const char *arch)
{
    set_key_str(w, arch, "rope.scaling.type", "linear");
    set_key_f32(w, arch, "rope.scaling.factor", 2.0f);
}

static void ntk_keys(struct st_gguf_writer *w, const char *arch)
{
    set_key_str(w, arch, "rope.scaling.type", "ntk");
}

static void logmul_keys(struct st_gguf_writer *w, const char *arch)
{
    yarn_keys(w, arch);
    set_key_f32(w, arch, "rope.scaling.yarn_log_multiplier", 0.1f);
}

START_TEST(test_model_reads_yarn_keys)
{
    struct st_err err = { 0 };
    struct st_hparams hp;
    struct spec sp = { .arch = "qwen3", .extra = yarn_keys, .hp_out = &hp };
    ck_assert_msg(build_and_load(&sp, &err) == ST_OK, "%s", err.msg);
    ck_assert_int_eq(hp.rope_scaling, ST_ROPE_SCALING_YARN);
    ck_assert(hp.rope_factor == 4.0f && hp.rope_freq_scale == 0.25f);
    ck_assert_int_eq(hp.rope_n_ctx_orig, 32768);
    /* head 16, base 10000: corr_dim(32) = 4.42, corr_dim(1) = 7.43 */
    ck_assert(hp.rope.n_rot == 16 && hp.rope.ext_factor == 1.0f && hp.rope.attn_factor == 1.0f);
    ck_assert(hp.rope.corr_low == 4.0f && hp.rope.corr_high == 8.0f);
    ck_assert(hp.rope.freq_scale == 0.25f && hp.rope.freq_base == 10000.0f);

    /* betas and attn_factor from the file; no original length: context_length */
    sp.extra = yarn_tuned_keys;
    ck_assert_msg(build_and_load(&sp, &err) == ST_OK, "%s", err.msg);
    ck_assert(hp.yarn_beta_fast == 16.0f && hp.yarn_beta_slow == 2.0f);
    ck_assert(hp.rope.attn_factor == 0.875f && hp.rope_n_ctx_orig == 256);
    struct st_rope_params want = st_rope_params_init(16, 10000.0f, 0.5f, 1.0f, 0.875f, 256,
                                                     16.0f, 2.0f);
    ck_assert(memcmp(&want, &hp.rope, sizeof(want)) == 0);

    /* linear: the pre-YaRN parameters (ext_factor 0, no multiplier) */
    sp.extra = linear_keys;
    ck_assert_msg(build_and_load(&sp, &err) == ST_OK, "%s", err.msg);
    ck_assert(hp.rope_scaling == ST_ROPE_SCALING_LINEAR && hp.rope_freq_scale == 0.5f);
    ck_assert(hp.rope.ext_factor == 0.0f && hp.rope.attn_factor == 1.0f &&
              hp.rope.freq_scale == 0.5f && hp.rope_n_ctx_orig == 0);

    /* none (no keys) */
    sp.extra = NULL;
    ck_assert_msg(build_and_load(&sp, &err) == ST_OK, "%s", err.msg);
    ck_assert(hp.rope_scaling == ST_ROPE_SCALING_NONE && hp.rope.freq_scale == 1.0f &&
              hp.rope.ext_factor == 0.0f);

    expect_load_error((struct spec){ .arch = "qwen3", .extra = ntk_keys },
                      "rope scaling 'ntk' is not supported");
    expect_load_error((struct spec){ .arch = "qwen3", .extra = logmul_keys },
                      "yarn_log_multiplier");
}
END_TEST

/* --rope-scaling / --rope-scale / --yarn-orig-ctx over the file's. */
START_TEST(test_model_rope_override)
{
    struct st_err err = { 0 };
    struct st_hparams hp, before;
    struct spec sp = { .arch = "qwen3", .hp_out = &hp };
    ck_assert_msg(build_and_load(&sp, &err) == ST_OK, "%s", err.msg);
    before = hp;
    ck_assert_int_eq(st_hparams_rope_override(&hp, &(struct st_rope_override){ ST_ROPE_SCALING_MODEL, 0, 0 }, &err),
                     ST_OK);
    ck_assert(memcmp(&before.rope, &hp.rope, sizeof(hp.rope)) == 0);
    /* yarn on a file without scaling: factor and original length from flags */
    ck_assert_int_eq(st_hparams_rope_override(&hp, &(struct st_rope_override){
                         ST_ROPE_SCALING_YARN, 4.0f, 32768 }, &err), ST_OK);
    struct st_rope_params want = st_rope_params_init(16, 10000.0f, 0.25f, 1, 1, 32768, 32, 1);
    ck_assert(memcmp(&want, &hp.rope, sizeof(want)) == 0);
    ck_assert_int_eq(hp.rope_scaling, ST_ROPE_SCALING_YARN);
    /* the errors leave hp as it was */
    struct st_hparams keep = hp;
    const struct { struct st_rope_override ov; const char *needle; } bad[] = {
        { { ST_ROPE_SCALING_NONE, 4.0f, 0 }, "--rope-scale 4 needs --rope-scaling" },
        { { ST_ROPE_SCALING_MODEL, -2.0f, 0 }, "rope scale -2" },
        { { ST_ROPE_SCALING_MODEL, INFINITY, 0 }, "rope scale inf" },
        { { 7, 0, 0 }, "rope scaling 7" },
        { { ST_ROPE_SCALING_MODEL, 0, -5 }, "original context -5" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(st_hparams_rope_override(&hp, &bad[i].ov, &err), ST_ERR_BAD_CONFIG);
        ck_assert_msg(strstr(err.msg, bad[i].needle), "'%s' lacks '%s'", err.msg, bad[i].needle);
        ck_assert(memcmp(&keep, &hp, sizeof(hp)) == 0);
    }
    /* linear or yarn with no factor anywhere */
    ck_assert_int_eq(st_hparams_rope_override(&before, &(struct st_rope_override){
                         ST_ROPE_SCALING_LINEAR, 0, 0 }, &err), ST_ERR_BAD_CONFIG);
    ck_assert_msg(strstr(err.msg, "needs a factor"), "%s", err.msg);
    /* yarn with no original length: context_length */
    ck_assert_int_eq(st_hparams_rope_override(&before, &(struct st_rope_override){
                         ST_ROPE_SCALING_YARN, 2.0f, 0 }, &err), ST_OK);
    ck_assert_int_eq(before.rope_n_ctx_orig, 256);
    ck_assert_str_eq(st_rope_scaling_name(ST_ROPE_SCALING_YARN), "yarn");
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *mm = tcase_create("make_model");
    TCase *desc = tcase_create("desc");

    tcase_add_checked_fixture(mm, setup, teardown);
    tcase_add_checked_fixture(desc, setup, teardown);
    tcase_set_timeout(mm, 60);
    tcase_add_test(mm, test_model_tiny_loads);
    tcase_add_test(mm, test_model_tokenizer_keys);
    tcase_add_test(mm, test_model_same_seed_same_bytes);
    tcase_add_test(mm, test_model_every_quant_type_is_sane);
    tcase_add_test(mm, test_model_low_bit_mixes);
    tcase_add_test(mm, test_model_medium_q4_k_m);
    tcase_add_test(mm, test_model_mtp_block);
    tcase_add_test(mm, test_model_next_mtp_demo);
    tcase_add_test(mm, test_model_imports_hf_tokenizer);
    tcase_add_test(mm, test_model_make_model_rejects_bad_options);
    tcase_add_test(mm, test_model_cli_make_and_inspect);
    tcase_add_test(desc, test_model_handmade_files_load);
    tcase_add_test(desc, test_model_missing_tensor_is_named);
    tcase_add_test(desc, test_model_wrong_shape_is_named);
    tcase_add_test(desc, test_model_missing_key_is_named);
    tcase_add_test(desc, test_model_reads_yarn_keys);
    tcase_add_test(desc, test_model_rope_override);
    suite_add_tcase(s, mm);
    suite_add_tcase(s, desc);
    TCase *real = tcase_create("real_tokenizer");
    tcase_add_checked_fixture(real, setup, teardown);
    tcase_set_timeout(real, 60);
    tcase_set_tags(real, "real_tokenizer");
    tcase_add_test(real, test_model_imports_real_qwen3_tokenizer);
    suite_add_tcase(s, real);
    return s;
}

int main(void)
{
    if (support_input_missing("real_tokenizer", support_qwen3_tokenizer() != NULL,
                              "no real Qwen3 tokenizer.json (the tokenizer_ref set-up, npm)"))
        return 77;
    return support_run_suite(model_suite(), CK_FORK);
}
