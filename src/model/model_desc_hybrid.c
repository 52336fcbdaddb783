/* model_desc_hybrid.c -- the hybrid architectures' own keys and tensors
 * (qwen35moe, qwen3next, qwen35; llama.cpp's names): the Gated DeltaNet
 * sizes (ssm.*), which layers are recurrent, the fused q/k/v and z
 * projections, the conv taps, the decay and gate parameters, and the
 * sigmoid-gated shared expert of the MoE ones. docs/GGUF.md "qwen35moe",
 * "qwen3next" and "qwen35" have the layouts.
 */
#include <stdio.h>

#include "desc_internal.h"

static enum st_status read_ssm(struct st_desc_ctx *c, struct st_ssm_hparams *s)
{
    const struct st_desc_int_key keys[] = {
        { "ssm.conv_kernel", true, 0, &s->conv_kernel },
        { "ssm.inner_size", true, 0, &s->d_inner },
        { "ssm.state_size", true, 0, &s->head_dim },
        { "ssm.time_step_rank", true, 0, &s->n_v_heads },
        { "ssm.group_count", true, 0, &s->n_k_heads },
    };
    ST_TRY(st_desc_key_ints(c, keys, ST_ARRAY_LEN(keys)));
    bool ok = s->conv_kernel >= 2 && s->head_dim > 0 && s->n_k_heads > 0 &&
              s->n_v_heads % s->n_k_heads == 0 && s->n_v_heads > 0 &&
              s->d_inner == s->n_v_heads * s->head_dim;
    if (!ok)
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %s.ssm sizes are inconsistent "
                          "(conv_kernel %lld, inner_size %lld, state_size %lld, time_step_rank "
                          "%lld, group_count %lld): expected conv_kernel >= 2 and inner_size = "
                          "time_step_rank x state_size, a multiple of group_count heads",
                          c->arch, (long long)s->conv_kernel, (long long)s->d_inner,
                          (long long)s->head_dim, (long long)s->n_v_heads,
                          (long long)s->n_k_heads);
    return ST_OK;
}

enum st_status st_desc_read_hybrid(struct st_desc_ctx *c, struct st_hparams *hp)
{
    ST_TRY(read_ssm(c, &hp->ssm));
    hp->ssm.v_grouped = hp->arch == ST_ARCH_QWEN3NEXT;
    if (hp->n_expert > 0) {   /* qwen35 is dense: no shared expert */
        ST_TRY(st_desc_key_int(c, "expert_shared_feed_forward_length", false, hp->n_ff,
                               &hp->n_ff_shexp));
        if (hp->n_ff_shexp == 0)
            return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %s needs "
                              "expert_shared_feed_forward_length > 0", c->arch);
    }
    hp->attn_gate = true;
    hp->n_recurrent = 0;
    for (int64_t il = 0; il < hp->n_layer; il++) {
        bool rec = false;
        ST_TRY(st_desc_is_recurrent(c, hp, il, &rec));
        hp->n_recurrent += rec;
    }
    return ST_OK;
}

/* Entry il of <arch>.attention.recurrent_layers (bools, or integers 0/1). */
static enum st_status recurrent_entry(struct st_desc_ctx *c, const struct st_gguf_kv *kv,
                                      int64_t il, bool *out)
{
    int64_t v = 0;
    if (!st_gguf_arr_i64(kv, (uint64_t)il, &v))
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %s.attention.recurrent_layers has "
                          "no bool or integer entry for layer %lld", c->arch, (long long)il);
    *out = v != 0;
    return ST_OK;
}

enum st_status st_desc_is_recurrent(struct st_desc_ctx *c, const struct st_hparams *hp,
                                    int64_t il, bool *out)
{
    char key[128];
    *out = false;
    if (il >= hp->n_layer)
        return ST_OK;   /* the MTP block is full attention */
    snprintf(key, sizeof(key), "%s.attention.recurrent_layers", c->arch);
    const struct st_gguf_kv *kv = st_gguf_find_kv(c->g, key);
    if (kv)
        return recurrent_entry(c, kv, il, out);
    int64_t every;
    enum st_status rc = st_desc_key_int(c, "full_attention_interval", false, 4, &every);
    if (rc != ST_OK)
        return rc;
    if (every < 1)
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: %s.full_attention_interval must "
                          "be >= 1", c->arch);
    *out = (il + 1) % every != 0;
    return ST_OK;
}

/* The q/k/v and z projections: attn_qkv and attn_gate, or (qwen3next
 * files converted before llama.cpp split it) the fused ssm_in. */
static enum st_status bind_qkvz(struct st_desc_ctx *c, const struct st_hparams *hp, int64_t il,
                                struct st_layer_desc *L)
{
    int64_t E = hp->n_embd, Cv = hp->ssm.d_inner, Ck = hp->ssm.n_k_heads * hp->ssm.head_dim;
    char name[96];
    snprintf(name, sizeof(name), "blk.%lld.attn_qkv.weight", (long long)il);
    if (hp->arch == ST_ARCH_QWEN3NEXT && !st_gguf_find_tensor(c->g, name)) {
        snprintf(name, sizeof(name), "blk.%lld.ssm_in.weight", (long long)il);
        if (!st_gguf_find_tensor(c->g, name))
            return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: tensor 'blk.%lld.attn_qkv."
                              "weight' is missing (nor is there the older fused '%s')",
                              (long long)il, name);
        return st_desc_bind(c, name, ST_DESC_WEIGHT, true, E, 2 * Ck + 2 * Cv, 1, &L->ssm_in);
    }
    const struct st_desc_tensor t[] = {
        { true, "attn_qkv.weight", ST_DESC_WEIGHT, true, E, 2 * Ck + Cv, 1, &L->wqkv },
        { true, "attn_gate.weight", ST_DESC_WEIGHT, true, E, Cv, 1, &L->wz },
    };
    return st_desc_bind_table(c, il, t, ST_ARRAY_LEN(t));
}

enum st_status st_desc_bind_recurrent(struct st_desc_ctx *c, const struct st_hparams *hp,
                                      int64_t il, struct st_layer_desc *L)
{
    const struct st_ssm_hparams *s = &hp->ssm;
    int64_t E = hp->n_embd, Hv = s->n_v_heads, Cv = s->d_inner;
    int64_t conv = 2 * s->n_k_heads * s->head_dim + Cv;
    /* beta and alpha: ssm_beta and ssm_alpha, or qwen3next's fused ssm_ba */
    bool ba = hp->arch == ST_ARCH_QWEN3NEXT;
    const enum st_desc_kind W = ST_DESC_WEIGHT, N = ST_DESC_NORM;
    const struct st_desc_tensor head[] = {
        { true, "ssm_dt.bias", N, true, Hv, 1, 1, &L->ssm_dt },
        { true, "ssm_a", N, true, Hv, 1, 1, &L->ssm_a },
    };
    const struct st_desc_tensor tail[] = {
        { true, "ssm_conv1d.weight", N, true, s->conv_kernel, conv, 1, &L->ssm_conv1d },
        { ba, "ssm_ba.weight", W, true, E, 2 * Hv, 1, &L->ssm_ba },
        { !ba, "ssm_alpha.weight", W, true, E, Hv, 1, &L->ssm_alpha },
        { !ba, "ssm_beta.weight", W, true, E, Hv, 1, &L->ssm_beta },
        { true, "ssm_norm.weight", N, true, s->head_dim, 1, 1, &L->ssm_norm },
        { true, "ssm_out.weight", W, true, Cv, E, 1, &L->ssm_out },
    };
    ST_TRY(st_desc_bind_table(c, il, head, ST_ARRAY_LEN(head)));
    ST_TRY(bind_qkvz(c, hp, il, L));
    return st_desc_bind_table(c, il, tail, ST_ARRAY_LEN(tail));
}

enum st_status st_desc_bind_gated_shexp(struct st_desc_ctx *c, const struct st_hparams *hp,
                                        int64_t il, struct st_layer_desc *L)
{
    int64_t E = hp->n_embd, Fs = hp->n_ff_shexp;
    ST_TRY(st_desc_bind_blk(c, il, "ffn_gate_inp_shexp", ST_DESC_WEIGHT, true, E, 1, 1,
                            &L->ffn_gate_inp_shexp));
    return st_desc_bind_shexp(c, il, E, Fs, L);
}
