/* model_desc.c -- hparams from the <arch>.* keys and the weight tensors of
 * every layer, each checked for presence, shape and type (docs/design/ENGINE.md 3.1,
 * 3.2 and 4.1). Defaults and required keys follow llama.cpp's loader.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "desc_internal.h"
#include "strata/backend.h"
#include "strata/quant.h"


const char *st_arch_name(enum st_arch a)
{
    switch (a) {
    case ST_ARCH_LLAMA:    return "llama";
    case ST_ARCH_QWEN3:    return "qwen3";
    case ST_ARCH_QWEN3MOE: return "qwen3moe";
    case ST_ARCH_GLM4MOE:  return "glm4moe";
    case ST_ARCH_QWEN35MOE: return "qwen35moe";
    case ST_ARCH_QWEN3NEXT: return "qwen3next";
    case ST_ARCH_QWEN35:    return "qwen35";
    }
    return "?";
}

static enum st_status key_float(struct st_desc_ctx *c, const char *suffix, bool required, float def,
                                float *out)
{
    char key[128];
    snprintf(key, sizeof(key), "%s.%s", c->arch, suffix);
    const struct st_gguf_kv *kv = st_gguf_find_kv(c->g, key);
    double v;
    if (!kv) {
        if (required)
            return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: missing required key '%s'", key);
        *out = def;
        return ST_OK;
    }
    if (!st_gguf_kv_f64(kv, &v) || !(v > 0))
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: key '%s' must be a positive number",
                          key);
    *out = (float)v;
    return ST_OK;
}

/* <arch>.<suffix> as a finite number, def when absent; *found says which. */
static enum st_status key_num(struct st_desc_ctx *c, const char *suffix, float def, float *out,
                              bool *found)
{
    char key[128];
    snprintf(key, sizeof(key), "%s.%s", c->arch, suffix);
    const struct st_gguf_kv *kv = st_gguf_find_kv(c->g, key);
    double v;
    *found = kv != NULL;
    *out = def;
    if (!kv)
        return ST_OK;
    if (!st_gguf_kv_f64(kv, &v) || !isfinite(v))
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: key '%s' must be a number", key);
    *out = (float)v;
    return ST_OK;
}

/* One row of a table of <arch>.* numbers read through key_num. */
struct num_key {
    const char *suffix;
    float       def;
    float      *out;
};

static enum st_status key_nums(struct st_desc_ctx *c, const struct num_key *keys, size_t n)
{
    bool found;
    for (size_t i = 0; i < n; i++)
        ST_TRY(key_num(c, keys[i].suffix, keys[i].def, keys[i].out, &found));
    return ST_OK;
}

/* YaRN's keys (llama.cpp's names); defaults are every published model's. */
static enum st_status read_yarn(struct st_desc_ctx *c, struct st_hparams *hp)
{
    float logmul, attn;
    const struct num_key nums[] = {
        { "rope.scaling.yarn_ext_factor", 1.0f, &hp->yarn_ext_factor },
        { "rope.scaling.yarn_beta_fast", 32.0f, &hp->yarn_beta_fast },
        { "rope.scaling.yarn_beta_slow", 1.0f, &hp->yarn_beta_slow },
        { "rope.scaling.attn_factor", 1.0f, &attn },
        /* NAN = absent (a present value must be finite): attn_factor then */
        { "rope.scaling.yarn_attn_factor", NAN, &hp->yarn_attn_factor },
        { "rope.scaling.yarn_log_multiplier", 0.0f, &logmul },
    };
    ST_TRY(st_desc_key_int(c, "rope.scaling.original_context_length", false, 0,
                           &hp->rope_n_ctx_orig));
    ST_TRY(key_nums(c, nums, ST_ARRAY_LEN(nums)));
    if (isnan(hp->yarn_attn_factor))
        hp->yarn_attn_factor = attn;
    if (logmul != 0.0f)      /* DeepSeek's mscale_all_dim: a different attention scale */
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %s.rope.scaling.yarn_log_multiplier "
                          "(%g) is not supported", c->arch, (double)logmul);
    if (!(hp->yarn_ext_factor >= 0.0f) || !(hp->yarn_attn_factor > 0.0f) ||
        !(hp->yarn_beta_fast > 0.0f) || !(hp->yarn_beta_slow > 0.0f))
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: yarn keys out of range (ext_factor "
                          "%g, attn_factor %g, beta_fast %g, beta_slow %g)",
                          (double)hp->yarn_ext_factor, (double)hp->yarn_attn_factor,
                          (double)hp->yarn_beta_fast, (double)hp->yarn_beta_slow);
    return ST_OK;
}

/* rope.scaling.*: the type and factor, yarn's keys; hp->rope follows. */
static enum st_status read_rope_scaling(struct st_desc_ctx *c, struct st_hparams *hp)
{
    char key[128];
    struct st_str type = { "none", 4 };
    bool found;
    snprintf(key, sizeof(key), "%s.rope.scaling.type", c->arch);
    const struct st_gguf_kv *kv = st_gguf_find_kv(c->g, key);
    hp->yarn_ext_factor = 1.0f;
    hp->yarn_attn_factor = 1.0f;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    if (kv && !st_gguf_kv_str(kv, &type))
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: key '%s' must be a string", key);
    enum st_status rc = ST_OK;
    hp->rope_factor = 0.0f;      /* 0 = none given */
    if (st_str_eq_c(type, "none")) {
        hp->rope_scaling = ST_ROPE_SCALING_NONE;
    } else if (st_str_eq_c(type, "linear")) {
        hp->rope_scaling = ST_ROPE_SCALING_LINEAR;
        rc = key_float(c, "rope.scaling.factor", true, 1.0f, &hp->rope_factor);
    } else if (st_str_eq_c(type, "yarn")) {
        hp->rope_scaling = ST_ROPE_SCALING_YARN;
        ST_TRY(key_num(c, "rope.scaling.factor", 1.0f, &hp->rope_factor, &found)); /* llama.cpp's */
        if (found && !(hp->rope_factor > 0.0f))
            return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: key '%s.rope.scaling.factor' "
                              "must be a positive number", c->arch);
        rc = read_yarn(c, hp);
    } else {
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: rope scaling '%.*s' is not supported",
                          (int)ST_MIN(type.len, 32), type.ptr);
    }
    if (rc != ST_OK)
        return rc;
    struct st_err e = { ST_OK, "" };
    if (st_hparams_rope_override(hp, NULL, &e) != ST_OK)
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %.200s", e.msg);
    return ST_OK;
}

/* The scaling, factor and original context after ov, checked. */
static enum st_status rope_choose(const struct st_hparams *hp, const struct st_rope_override *ov,
                                  enum st_rope_scaling *type, float *factor, int64_t *orig,
                                  struct st_err *err)
{
    bool ov_factor = ov && ov->factor != 0.0f;
    *type = ov && ov->scaling != ST_ROPE_SCALING_MODEL ? ov->scaling : hp->rope_scaling;
    *factor = ov_factor ? ov->factor : hp->rope_factor;
    *orig = ov && ov->n_ctx_orig != 0 ? ov->n_ctx_orig : hp->rope_n_ctx_orig;
    if (ov && ((int)ov->scaling < ST_ROPE_SCALING_MODEL || ov->scaling > ST_ROPE_SCALING_YARN))
        return st_err_set(err, ST_ERR_BAD_CONFIG, "rope scaling %d is not none, linear or yarn",
                          (int)ov->scaling);
    if (ov_factor && (!isfinite(ov->factor) || !(ov->factor > 0.0f)))
        return st_err_set(err, ST_ERR_BAD_CONFIG, "rope scale %g must be a number > 0",
                          (double)ov->factor);
    if (ov && ov->n_ctx_orig < 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "yarn original context %lld must be >= 1",
                          (long long)ov->n_ctx_orig);
    if (*type == ST_ROPE_SCALING_NONE && ov_factor)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "--rope-scale %g needs --rope-scaling linear "
                          "or yarn (the rope scaling is none)", (double)ov->factor);
    if (*type != ST_ROPE_SCALING_NONE && !(*factor > 0.0f))
        return st_err_set(err, ST_ERR_BAD_CONFIG, "rope scaling %s needs a factor: the model has "
                          "none, give --rope-scale N", st_rope_scaling_name(*type));
    if (*type == ST_ROPE_SCALING_YARN && *orig <= 0)
        *orig = hp->n_ctx_train;
    if (*type == ST_ROPE_SCALING_YARN && *orig <= 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "yarn needs the original context: the model "
                          "has none, give --yarn-orig-ctx N");
    return ST_OK;
}

enum st_status st_hparams_rope_override(struct st_hparams *hp, const struct st_rope_override *ov,
                                        struct st_err *err)
{
    enum st_rope_scaling type;
    float factor;
    int64_t orig;
    enum st_status rc = rope_choose(hp, ov, &type, &factor, &orig, err);
    if (rc != ST_OK)
        return rc;
    hp->rope_scaling = type;
    hp->rope_factor = factor;
    hp->rope_freq_scale = type == ST_ROPE_SCALING_NONE ? 1.0f : 1.0f / factor;
    hp->rope_n_ctx_orig = type == ST_ROPE_SCALING_YARN ? orig : 0;
    if (type == ST_ROPE_SCALING_YARN)
        hp->rope = st_rope_params_init((int32_t)hp->n_rot, hp->rope_freq_base,
                                       hp->rope_freq_scale, hp->yarn_ext_factor,
                                       hp->yarn_attn_factor, orig, hp->yarn_beta_fast,
                                       hp->yarn_beta_slow);
    else     /* none/linear: ext_factor 0, attn_factor 1 (the pre-YaRN op, bit for bit) */
        hp->rope = st_rope_params_init((int32_t)hp->n_rot, hp->rope_freq_base,
                                       hp->rope_freq_scale, 0.0f, 1.0f, 0, 0.0f, 0.0f);
    return ST_OK;
}

static enum st_status read_counts(struct st_desc_ctx *c, struct st_hparams *hp)
{
    int64_t block_count;
    const struct st_desc_int_key counts[] = {
        { "embedding_length", true, 0, &hp->n_embd },
        { "block_count", true, 0, &block_count },
        { "context_length", true, 0, &hp->n_ctx_train },
        { "nextn_predict_layers", false, 0, &hp->n_nextn },
        { "attention.head_count", true, 0, &hp->n_head },
    };
    ST_TRY(st_desc_key_ints(c, counts, ST_ARRAY_LEN(counts)));
    if (hp->n_embd == 0 || hp->n_head == 0 || block_count == 0 || hp->n_nextn >= block_count)
        return st_err_set(c->err, ST_ERR_BAD_MODEL,
                          "model: embedding_length %lld, head_count %lld, block_count %lld "
                          "(nextn %lld) are not usable", (long long)hp->n_embd,
                          (long long)hp->n_head, (long long)block_count, (long long)hp->n_nextn);
    if (block_count > st_gguf_n_tensors(c->g))   /* bounds the layer table by the file */
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: block_count %lld but only %lld tensors",
                          (long long)block_count, (long long)st_gguf_n_tensors(c->g));
    hp->n_layer = block_count - hp->n_nextn;
    const struct st_desc_int_key dims[] = {      /* n_head > 0 from here */
        { "attention.head_count_kv", false, hp->n_head, &hp->n_head_kv },
        { "attention.key_length", false, hp->n_embd / hp->n_head, &hp->head_dim_k },
        { "attention.value_length", false, hp->n_embd / hp->n_head, &hp->head_dim_v },
    };
    ST_TRY(st_desc_key_ints(c, dims, ST_ARRAY_LEN(dims)));
    /* its default is the key length just read */
    ST_TRY(st_desc_key_int(c, "rope.dimension_count", false, hp->head_dim_k, &hp->n_rot));
    if (hp->n_head_kv == 0 || hp->n_head % hp->n_head_kv != 0 || hp->head_dim_k == 0 ||
        hp->head_dim_v == 0 || hp->n_rot == 0 || hp->n_rot % 2 != 0 || hp->n_rot > hp->head_dim_k)
        return st_err_set(
            c->err, ST_ERR_BAD_MODEL,
            "model: heads %lld / kv heads %lld / head dims %lld,%lld / rope dims %lld "
            "are inconsistent",
            (long long)hp->n_head, (long long)hp->n_head_kv, (long long)hp->head_dim_k,
            (long long)hp->head_dim_v, (long long)hp->n_rot);
    /* llama, glm4moe and the hybrids rotate the first n_rot dims only (glm:
     * 64 of 128; Qwen3.5 and Qwen3-Next: 64 of 256) */
    if (hp->arch != ST_ARCH_LLAMA && hp->arch != ST_ARCH_GLM4MOE &&
        !st_arch_is_hybrid(hp->arch) && hp->n_rot != hp->head_dim_k)
        return st_err_set(c->err, ST_ERR_BAD_MODEL,
                          "model: %s needs rope.dimension_count == key_length", c->arch);
    return ST_OK;
}

/* <arch>.<suffix> as a bool (def when absent). */
static enum st_status key_bool(struct st_desc_ctx *c, const char *suffix, bool def, bool *out)
{
    char key[128];
    snprintf(key, sizeof(key), "%s.%s", c->arch, suffix);
    const struct st_gguf_kv *kv = st_gguf_find_kv(c->g, key);
    *out = def;
    if (kv && !st_gguf_kv_bool(kv, out))
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: key '%s' must be a bool", key);
    return ST_OK;
}

/* glm4moe's MoE keys (llama.cpp's loader: expert_gating_func defaults to
 * sigmoid, expert_weights_norm to false). Grouped routing (DeepSeek-V3's
 * n_group / topk_group) is refused: GLM-4.5 has one group. */
static enum st_status read_glm_moe(struct st_desc_ctx *c, struct st_hparams *hp)
{
    int64_t gating, groups, groups_used;
    float scale;
    bool found;
    const struct st_desc_int_key ints[] = {
        { "leading_dense_block_count", false, 0, &hp->n_dense_lead },
        { "expert_shared_count", false, 0, &hp->n_expert_shared },
        { "expert_gating_func", false, ST_MOE_GATING_SIGMOID, &gating },
        { "expert_group_count", false, 1, &groups },
        { "expert_group_used_count", false, 0, &groups_used },
    };
    ST_TRY(st_desc_key_ints(c, ints, ST_ARRAY_LEN(ints)));
    ST_TRY(key_bool(c, "expert_weights_norm", false, &hp->moe_norm));
    ST_TRY(key_num(c, "expert_weights_scale", 1.0f, &scale, &found));
    if (gating == 0)     /* llama.cpp's NONE: the architecture's default */
        gating = ST_MOE_GATING_SIGMOID;
    if (gating != ST_MOE_GATING_SOFTMAX && gating != ST_MOE_GATING_SIGMOID)
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %s.expert_gating_func %lld is not "
                          "supported (1 softmax, 2 sigmoid)", c->arch, (long long)gating);
    if (groups > 1 && groups_used != groups)   /* all groups used = no restriction */
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: grouped expert routing (%s."
                          "expert_group_count %lld, %lld used) is not supported", c->arch,
                          (long long)groups, (long long)groups_used);
    if (!(scale > 0.0f))
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %s.expert_weights_scale %g must be "
                          "> 0", c->arch, (double)scale);
    hp->moe_gating = (int32_t)gating;
    hp->moe_scale = scale;
    if (hp->n_dense_lead > hp->n_layer || (hp->n_dense_lead > 0 && hp->n_ff == 0))
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %lld leading dense layers of %lld "
                          "(feed_forward_length %lld) are not usable",
                          (long long)hp->n_dense_lead, (long long)hp->n_layer,
                          (long long)hp->n_ff);
    return ST_OK;
}

static enum st_status read_ffn(struct st_desc_ctx *c, struct st_hparams *hp)
{
    bool moe = hp->arch == ST_ARCH_QWEN3MOE || hp->arch == ST_ARCH_GLM4MOE ||
               hp->arch == ST_ARCH_QWEN35MOE || hp->arch == ST_ARCH_QWEN3NEXT;
    bool dense = hp->arch == ST_ARCH_QWEN3 || hp->arch == ST_ARCH_QWEN35;
    hp->moe_gating = ST_MOE_GATING_SOFTMAX;
    hp->moe_norm = true;
    hp->moe_scale = 1.0f;
    const struct st_desc_int_key sizes[] = {
        { "feed_forward_length", dense, 0, &hp->n_ff },
        { "expert_count", moe, 0, &hp->n_expert },
    };
    ST_TRY(st_desc_key_ints(c, sizes, ST_ARRAY_LEN(sizes)));
    if (dense && hp->n_expert > 0)
        return st_err_set(c->err, ST_ERR_BAD_MODEL,
                          "model: %s is dense but expert_count is set", c->arch);
    ST_TRY(st_desc_key_int(c, "expert_used_count", hp->n_expert > 0, 0, &hp->n_expert_used));
    if (hp->n_expert == 0) {
        if (moe || hp->n_ff == 0)
            return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %s needs %s > 0", c->arch,
                              moe ? "expert_count" : "feed_forward_length");
        return ST_OK;
    }
    if (hp->n_expert_used == 0 || hp->n_expert_used > hp->n_expert)
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: expert_used_count %lld not in 1..%lld",
                          (long long)hp->n_expert_used, (long long)hp->n_expert);
    ST_TRY(st_desc_key_int(c, "expert_feed_forward_length", false, hp->n_ff / hp->n_expert_used,
                           &hp->n_ff_exp));
    if (hp->n_ff_exp == 0)
        return st_err_set(c->err, ST_ERR_BAD_MODEL,
                          "model: missing %s.expert_feed_forward_length", c->arch);
    return hp->arch == ST_ARCH_GLM4MOE ? read_glm_moe(c, hp) : ST_OK;
}

static enum st_status read_hparams(struct st_desc_ctx *c, struct st_hparams *hp)
{
    hp->rope_neox = hp->arch != ST_ARCH_LLAMA;
    hp->qk_norm = hp->arch == ST_ARCH_QWEN3 || hp->arch == ST_ARCH_QWEN3MOE ||
                  st_arch_is_hybrid(hp->arch);
    /* glm4moe: GLM-4.5 (355B) has per-head q/k norms, 4.5-Air has none */
    if (hp->arch == ST_ARCH_GLM4MOE)
        hp->qk_norm = st_gguf_find_tensor(c->g, "blk.0.attn_q_norm.weight") != NULL;
    ST_TRY(read_counts(c, hp));
    ST_TRY(read_ffn(c, hp));
    ST_TRY(key_float(c, "attention.layer_norm_rms_epsilon", true, 0, &hp->rms_eps));
    ST_TRY(key_float(c, "rope.freq_base", false, 10000.0f, &hp->rope_freq_base));
    ST_TRY(read_rope_scaling(c, hp));
    return st_arch_is_hybrid(hp->arch) ? st_desc_read_hybrid(c, hp) : ST_OK;
}

/* ---- tensors ------------------------------------------------------------- */

static enum st_status bind_attn(struct st_desc_ctx *c, const struct st_hparams *hp, int64_t il,
                                struct st_layer_desc *L)
{
    int64_t E = hp->n_embd, D = hp->head_dim_k, Dv = hp->head_dim_v;
    int64_t H = hp->n_head, Hkv = hp->n_head_kv, Hq = H * (hp->attn_gate ? 2 : 1);
    bool glm = hp->arch == ST_ARCH_GLM4MOE, qk = hp->qk_norm;
    const enum st_desc_kind W = ST_DESC_WEIGHT, N = ST_DESC_NORM;
    const struct st_desc_tensor t[] = {
        { true, "attn_q.weight", W, true, E, Hq * D, 1, &L->wq },
        { true, "attn_k.weight", W, true, E, Hkv * D, 1, &L->wk },
        { true, "attn_v.weight", W, true, E, Hkv * Dv, 1, &L->wv },
        { true, "attn_output.weight", W, true, H * Dv, E, 1, &L->wo },
        { qk, "attn_q_norm.weight", N, true, D, 1, 1, &L->q_norm },
        { qk, "attn_k_norm.weight", N, true, D, 1, 1, &L->k_norm },
        { glm, "attn_q.bias", N, true, H * D, 1, 1, &L->bq },
        { glm, "attn_k.bias", N, true, Hkv * D, 1, 1, &L->bk },
        { glm, "attn_v.bias", N, true, Hkv * Dv, 1, 1, &L->bv },
    };
    ST_TRY(st_desc_bind_blk(c, il, "attn_norm", N, true, E, 1, 1, &L->attn_norm));
    if (L->recurrent)
        return st_desc_bind_recurrent(c, hp, il, L);
    return st_desc_bind_table(c, il, t, ST_ARRAY_LEN(t));
}

static enum st_status bind_ffn(struct st_desc_ctx *c, const struct st_hparams *hp, int64_t il,
                               struct st_layer_desc *L)
{
    int64_t E = hp->n_embd, X = hp->n_expert, F = hp->n_ff_exp, Fd = hp->n_ff;
    bool glm = hp->arch == ST_ARCH_GLM4MOE;
    /* llama.cpp's name for the FFN norm */
    bool post = glm || st_arch_is_hybrid(hp->arch);
    const enum st_desc_kind W = ST_DESC_WEIGHT, N = ST_DESC_NORM;
    const struct st_desc_tensor dense[] = {
        { true, "ffn_gate.weight", W, true, E, Fd, 1, &L->ffn_gate },
        { true, "ffn_up.weight", W, true, E, Fd, 1, &L->ffn_up },
        { true, "ffn_down.weight", W, true, Fd, E, 1, &L->ffn_down },
    };
    const struct st_desc_tensor experts[] = {
        { true, "ffn_gate_inp.weight", W, true, E, X, 1, &L->ffn_gate_inp },
        { true, "ffn_gate_exps.weight", W, true, E, F, X, &L->ffn_gate_exps },
        { true, "ffn_up_exps.weight", W, true, E, F, X, &L->ffn_up_exps },
        { true, "ffn_down_exps.weight", W, true, F, E, X, &L->ffn_down_exps },
        { glm, "exp_probs_b.bias", N, true, X, 1, 1, &L->exp_probs_b },
    };
    ST_TRY(st_desc_bind_blk(c, il, post ? "post_attention_norm" : "ffn_norm", N, true, E, 1, 1,
                            &L->ffn_norm));
    if (X == 0 || il < hp->n_dense_lead)
        return st_desc_bind_table(c, il, dense, ST_ARRAY_LEN(dense));
    ST_TRY(st_desc_bind_table(c, il, experts, ST_ARRAY_LEN(experts)));
    if (st_arch_is_hybrid(hp->arch))
        return st_desc_bind_gated_shexp(c, hp, il, L);
    int64_t Fs = F * hp->n_expert_shared;
    return glm && Fs > 0 ? st_desc_bind_shexp(c, il, E, Fs, L) : ST_OK;
}

static enum st_status bind_nextn(struct st_desc_ctx *c, const struct st_hparams *hp, int64_t il,
                                 struct st_layer_desc *L)
{
    int64_t E = hp->n_embd, V = hp->n_vocab;
    const enum st_desc_kind W = ST_DESC_WEIGHT, N = ST_DESC_NORM;
    const struct st_desc_tensor t[] = {
        { true, "nextn.eh_proj.weight", W, true, 2 * E, E, 1, &L->nextn_eh_proj },
        { true, "nextn.enorm.weight", N, true, E, 1, 1, &L->nextn_enorm },
        { true, "nextn.hnorm.weight", N, true, E, 1, 1, &L->nextn_hnorm },
        { true, "nextn.embed_tokens.weight", W, false, E, V, 1, &L->nextn_embed },
        { true, "nextn.shared_head_head.weight", W, false, E, V, 1, &L->nextn_head },
        { true, "nextn.shared_head_norm.weight", N, false, E, 1, 1, &L->nextn_head_norm },
    };
    return st_desc_bind_table(c, il, t, ST_ARRAY_LEN(t));
}

static enum st_status bind_globals(struct st_desc_ctx *c, struct st_model_desc *d)
{
    struct st_hparams *hp = &d->hp;
    const struct st_gguf_tensor *te = st_gguf_find_tensor(c->g, "token_embd.weight");
    if (!te)
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: tensor 'token_embd.weight' is missing");
    hp->n_vocab = te->ne[1];
    const struct st_desc_tensor t[] = {
        { true, "token_embd.weight", ST_DESC_WEIGHT, true, hp->n_embd, hp->n_vocab, 1,
          &d->tok_embd },
        { true, "output_norm.weight", ST_DESC_NORM, true, hp->n_embd, 1, 1, &d->output_norm },
        { true, "output.weight", ST_DESC_WEIGHT, false, hp->n_embd, hp->n_vocab, 1, &d->output },
    };
    ST_TRY(st_desc_bind_table(c, -1, t, ST_ARRAY_LEN(t)));
    hp->tied_output = d->output == NULL;
    if (!d->output)
        d->output = d->tok_embd;
    const struct st_gguf_kv *tok = st_gguf_find_kv(c->g, "tokenizer.ggml.tokens");
    if (tok && st_gguf_arr_n(tok) != (uint64_t)hp->n_vocab)
        return st_err_set(c->err, ST_ERR_BAD_MODEL,
                          "model: tokenizer has %llu tokens but token_embd.weight has %lld rows",
                          (unsigned long long)st_gguf_arr_n(tok), (long long)hp->n_vocab);
    return ST_OK;
}

static enum st_status read_arch(struct st_desc_ctx *c, struct st_hparams *hp, struct st_err *err)
{
    struct st_str a;
    const struct st_gguf_kv *kv = st_gguf_find_kv(c->g, "general.architecture");
    if (!kv || !st_gguf_kv_str(kv, &a))
        return st_err_set(err, ST_ERR_BAD_MODEL,
                          "model: key 'general.architecture' is missing or not a string");
    if (st_str_eq_c(a, "qwen3moe"))
        hp->arch = ST_ARCH_QWEN3MOE;
    else if (st_str_eq_c(a, "glm4moe"))
        hp->arch = ST_ARCH_GLM4MOE;
    else if (st_str_eq_c(a, "qwen3"))
        hp->arch = ST_ARCH_QWEN3;
    else if (st_str_eq_c(a, "llama"))
        hp->arch = ST_ARCH_LLAMA;
    else if (st_str_eq_c(a, "qwen35moe"))
        hp->arch = ST_ARCH_QWEN35MOE;
    else if (st_str_eq_c(a, "qwen3next"))
        hp->arch = ST_ARCH_QWEN3NEXT;
    else if (st_str_eq_c(a, "qwen35"))
        hp->arch = ST_ARCH_QWEN35;
    else
        return st_err_set(err, ST_ERR_BAD_MODEL, "model: architecture '%.*s' is not supported "
                          "(qwen3moe, qwen3, llama, glm4moe, qwen35moe, qwen3next, qwen35 are)",
                          (int)ST_MIN(a.len, 40), a.ptr);
    snprintf(hp->arch_name, sizeof(hp->arch_name), "%s", st_arch_name(hp->arch));
    c->arch = hp->arch_name;
    return ST_OK;
}

static enum st_status bind_layer(struct st_desc_ctx *c, struct st_model_desc *d, int64_t il)
{
    struct st_layer_desc *L = &d->layers[il];
    if (st_arch_is_hybrid(d->hp.arch))
        ST_TRY(st_desc_is_recurrent(c, &d->hp, il, &L->recurrent));
    ST_TRY(bind_attn(c, &d->hp, il, L));
    ST_TRY(bind_ffn(c, &d->hp, il, L));
    return il >= d->hp.n_layer ? bind_nextn(c, &d->hp, il, L) : ST_OK;
}

/* Fill d (zeroed, d->gguf set); on failure the caller frees it. */
static enum st_status describe(struct st_desc_ctx *c, struct st_model_desc *d)
{
    ST_TRY(read_arch(c, &d->hp, c->err));
    ST_TRY(read_hparams(c, &d->hp));
    ST_TRY(bind_globals(c, d));
    d->n_layers_all = d->hp.n_layer + d->hp.n_nextn;
    d->layers = calloc((size_t)d->n_layers_all, sizeof(*d->layers));
    if (!d->layers)
        return st_err_set(c->err, ST_ERR_NOMEM, "model: no memory for %lld layers",
                          (long long)d->n_layers_all);
    for (int64_t il = 0; il < d->n_layers_all; il++)
        ST_TRY(bind_layer(c, d, il));
    return ST_OK;
}

enum st_status st_model_desc_load(const struct st_gguf *g, struct st_model_desc **out,
                                  struct st_err *err)
{
    struct st_desc_ctx c = { g, NULL, err };
    struct st_model_desc *d = calloc(1, sizeof(*d));

    *out = NULL;
    if (!d)
        return st_err_set(err, ST_ERR_NOMEM, "model: no memory");
    d->gguf = g;
    enum st_status rc = describe(&c, d);
    if (rc != ST_OK) {
        st_model_desc_free(d);
        return rc;
    }
    *out = d;
    return ST_OK;
}

void st_model_desc_free(struct st_model_desc *d)
{
    if (!d)
        return;
    free(d->layers);
    free(d);
}
