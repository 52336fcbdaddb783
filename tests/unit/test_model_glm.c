/* test_model_glm.c -- glm4moe files: make-model's glm-tiny preset (keys,
 * tensors, GLM's tokenizer metadata) read back through the model
 * description, and the variants strata refuses at load (grouped routing,
 * an unknown gating function, missing GLM tensors), built by copying the
 * glm-tiny file with one key changed or one tensor left out.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/backend.h"
#include "strata/gguf.h"
#include "strata/gguf_write.h"
#include "strata/make_model.h"
#include "strata/model_desc.h"
#include "gguf_variant.h"
#include "support.h"

static char tmpdir[256];
static char path[512], path2[512];

static void setup(void)
{
    support_tmpdir(tmpdir, sizeof(tmpdir));
    snprintf(path, sizeof(path), "%s/glm.gguf", tmpdir);
    snprintf(path2, sizeof(path2), "%s/glm-variant.gguf", tmpdir);
    struct st_make_model_opts o = { .out_path = path, .preset = "glm-tiny", .seed = 5 };
    struct st_err err = { 0 };
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model: %s", err.msg);
}

static void teardown(void)
{
    support_rmtree(tmpdir);
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

static uint32_t u32_key(const struct st_gguf *g, const char *key)
{
    uint32_t v = 0;
    struct st_err err = { 0 };
    ck_assert_msg(st_gguf_get_u32(g, key, &v, &err) == ST_OK, "%s: %s", key, err.msg);
    return v;
}

START_TEST(test_model_glm_tiny_hparams)
{
    struct st_gguf *g;
    struct st_model_desc *d;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_gguf_open(path, &g, &err), ST_OK);
    ck_assert_msg(st_model_desc_load(g, &d, &err) == ST_OK, "desc: %s", err.msg);
    const struct st_hparams *h = &d->hp;
    ck_assert_int_eq(h->arch, ST_ARCH_GLM4MOE);
    ck_assert_str_eq(h->arch_name, "glm4moe");
    ck_assert_int_eq(h->n_layer, 3);
    ck_assert_int_eq(h->n_nextn, 1);
    ck_assert_int_eq(d->n_layers_all, 4);
    ck_assert_int_eq(h->head_dim_k, 16);
    ck_assert_int_eq(h->n_rot, 8);                 /* partial rope: half of each head */
    ck_assert_int_eq(h->rope.n_rot, 8);            /* ... and what the rope op gets */
    ck_assert_int_eq(h->n_dense_lead, 1);
    ck_assert_int_eq(h->n_ff, 96);
    ck_assert_int_eq(h->n_expert, 8);
    ck_assert_int_eq(h->n_expert_used, 2);
    ck_assert_int_eq(h->n_ff_exp, 32);
    ck_assert_int_eq(h->n_expert_shared, 1);
    ck_assert_int_eq(h->moe_gating, ST_MOE_GATING_SIGMOID);
    ck_assert(h->moe_norm);
    ck_assert(h->moe_scale == 2.5f);
    ck_assert(h->rope_neox && !h->qk_norm && !h->tied_output);
    /* layer 0 dense, the rest (the nextn block included) MoE + shared expert */
    const struct st_layer_desc *L0 = &d->layers[0];
    ck_assert(L0->ffn_gate && L0->ffn_up && L0->ffn_down && !L0->ffn_gate_inp);
    ck_assert(!L0->exp_probs_b && !L0->ffn_gate_shexp);
    ck_assert_int_eq(L0->ffn_gate->ne[1], 96);
    for (int il = 0; il < 4; il++) {
        const struct st_layer_desc *L = &d->layers[il];
        ck_assert(L->bq && L->bk && L->bv && L->ffn_norm && !L->q_norm);
        ck_assert_int_eq(L->bq->ne[0], 64);
        ck_assert_int_eq(L->bk->ne[0], 32);
        ck_assert_int_eq(L->bq->type, ST_DTYPE_F32);
        if (il == 0)
            continue;
        ck_assert(L->ffn_gate_inp && L->ffn_gate_exps && L->exp_probs_b);
        ck_assert_int_eq(L->exp_probs_b->ne[0], 8);
        ck_assert(L->ffn_gate_shexp && L->ffn_up_shexp && L->ffn_down_shexp);
        ck_assert_int_eq(L->ffn_gate_shexp->ne[1], 32);
        ck_assert_ptr_null(L->ffn_gate);
    }
    const struct st_layer_desc *N = &d->layers[3];
    ck_assert(N->nextn_eh_proj && N->nextn_enorm && N->nextn_hnorm && N->nextn_head_norm);
    ck_assert(!N->nextn_embed && !N->nextn_head);   /* fall back to the model's */
    ck_assert_int_eq(u32_key(g, "glm4moe.block_count"), 4);
    ck_assert_int_eq(u32_key(g, "glm4moe.expert_gating_func"), 2);
    st_model_desc_free(d);
    st_gguf_close(g);
}
END_TEST

START_TEST(test_model_glm_tiny_tokenizer)
{
    struct st_gguf *g;
    struct st_err err = { 0 };
    struct st_str s;
    bool add_bos = true;
    ck_assert_int_eq(st_gguf_open(path, &g, &err), ST_OK);
    ck_assert_int_eq(st_gguf_get_str(g, "tokenizer.ggml.pre", &s, &err), ST_OK);
    ck_assert(st_str_eq_c(s, "glm4"));
    static const char *const control[] = { "[gMASK]", "<sop>", "<|system|>", "<|user|>",
                                           "<|assistant|>", "<|observation|>",
                                           "<|endoftext|>" };
    static const char *const user[] = { "<think>", "</think>", "<tool_call>", "</tool_call>",
                                        "<arg_key>", "</arg_key>", "<arg_value>",
                                        "</arg_value>", "<tool_response>",
                                        "</tool_response>" };
    for (size_t i = 0; i < sizeof(control) / sizeof(control[0]); i++) {
        ck_assert_msg(token_id(g, control[i]) >= 256, "%s missing", control[i]);
        ck_assert_int_eq(token_type(g, token_id(g, control[i])), 3);
    }
    for (size_t i = 0; i < sizeof(user) / sizeof(user[0]); i++) {
        ck_assert_msg(token_id(g, user[i]) >= 256, "%s missing", user[i]);
        ck_assert_int_eq(token_type(g, token_id(g, user[i])), 4);
    }
    ck_assert_int_eq(token_id(g, "<|im_start|>"), -1);   /* no ChatML */
    ck_assert_int_eq((int32_t)u32_key(g, "tokenizer.ggml.bos_token_id"), token_id(g, "[gMASK]"));
    ck_assert_int_eq((int32_t)u32_key(g, "tokenizer.ggml.eos_token_id"),
                     token_id(g, "<|endoftext|>"));
    ck_assert_int_eq((int32_t)u32_key(g, "tokenizer.ggml.padding_token_id"),
                     token_id(g, "<|endoftext|>"));
    ck_assert_int_eq((int32_t)u32_key(g, "tokenizer.ggml.unknown_token_id"),
                     token_id(g, "<|endoftext|>"));
    ck_assert_int_eq((int32_t)u32_key(g, "tokenizer.ggml.eot_token_id"), token_id(g, "<|user|>"));
    ck_assert_int_eq((int32_t)u32_key(g, "tokenizer.ggml.eom_token_id"),
                     token_id(g, "<|observation|>"));
    ck_assert_int_eq(st_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos, &err), ST_OK);
    ck_assert(!add_bos);
    ck_assert_int_eq(st_gguf_get_str(g, "tokenizer.chat_template", &s, &err), ST_OK);
    ck_assert_ptr_nonnull(memmem(s.ptr, s.len, "[gMASK]<sop>", 12));
    ck_assert_ptr_nonnull(memmem(s.ptr, s.len, "<|assistant|>", 13));
    ck_assert_uint_eq(st_gguf_arr_n(st_gguf_find_kv(g, "tokenizer.ggml.tokens")) % 64, 0);
    st_gguf_close(g);
}
END_TEST

/* ---- refused variants ------------------------------------------------------ */

/* The glm-tiny file's general.architecture and glm4moe.* keys (tokenizer
 * left out: the description does not need it) and its tensors, copied to
 * path2, with key 'set' (a u32, added or replaced; NULL none) and without
 * tensor 'skip'; then the description's load status and message. */
static enum st_status variant(const char *set, uint32_t v, const char *skip, struct st_err *err)
{
    gguf_variant_write(path, path2, "glm4moe.", set, v, skip);
    struct st_gguf *g2;
    struct st_model_desc *d = NULL;
    ck_assert_int_eq(st_gguf_open(path2, &g2, err), ST_OK);
    enum st_status rc = st_model_desc_load(g2, &d, err);
    st_model_desc_free(d);
    st_gguf_close(g2);
    return rc;
}

static void expect_refused(const char *set, uint32_t v, const char *skip, const char *needle)
{
    struct st_err err = { 0 };
    ck_assert_int_eq(variant(set, v, skip, &err), ST_ERR_BAD_MODEL);
    ck_assert_msg(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
}

START_TEST(test_model_glm_variants)
{
    struct st_err err = { 0 };
    /* the copy itself loads, and one group (GLM-4.5's n_group = 1) is fine */
    ck_assert_msg(variant(NULL, 0, NULL, &err) == ST_OK, "%s", err.msg);
    ck_assert_msg(variant("glm4moe.expert_group_count", 1, NULL, &err) == ST_OK, "%s", err.msg);
    expect_refused("glm4moe.expert_group_count", 8, NULL, "grouped expert routing");
    expect_refused("glm4moe.expert_gating_func", 3, NULL, "expert_gating_func 3");
    expect_refused("glm4moe.leading_dense_block_count", 4, NULL, "leading dense layers");
    expect_refused(NULL, 0, "blk.2.exp_probs_b.bias", "'blk.2.exp_probs_b.bias' is missing");
    expect_refused(NULL, 0, "blk.0.attn_k.bias", "'blk.0.attn_k.bias' is missing");
    expect_refused(NULL, 0, "blk.1.ffn_down_shexp.weight",
                   "'blk.1.ffn_down_shexp.weight' is missing");
    expect_refused(NULL, 0, "blk.0.post_attention_norm.weight",
                   "'blk.0.post_attention_norm.weight' is missing");
    expect_refused(NULL, 0, "blk.0.ffn_up.weight", "'blk.0.ffn_up.weight' is missing");
}
END_TEST

static Suite *model_glm_suite(void)
{
    Suite *s = suite_create("model_glm");
    TCase *tc = tcase_create("glm4moe");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_model_glm_tiny_hparams);
    tcase_add_test(tc, test_model_glm_tiny_tokenizer);
    tcase_add_test(tc, test_model_glm_variants);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(model_glm_suite(), CK_FORK);
}
