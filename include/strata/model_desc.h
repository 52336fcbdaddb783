/* model_desc.h -- what a GGUF holds, in the engine's terms: hyper-
 * parameters from the <arch>.* keys and every weight tensor of every
 * layer, looked up by its GGUF name and checked against the hparams
 * (docs/design/ENGINE.md section 3; MTP blocks per section 4).
 *
 * Architectures: qwen3moe (MoE, QK-norm, NEOX rope), qwen3 (dense,
 * QK-norm, NEOX rope), llama (dense or Mixtral-style MoE, no QK-norm,
 * normal rope), glm4moe (GLM-4.5 / 4.5-Air: leading dense layers, then
 * MoE with sigmoid routing, a selection bias and a shared expert; q/k/v
 * biases, optional QK-norm, partial NEOX rope; docs/GGUF.md "glm4moe"),
 * qwen35moe (Qwen3.5-MoE: three of four layers Gated DeltaNet linear
 * attention with per-slot recurrent state, the fourth gated full attention
 * with partial NEOX rope; routed experts plus a sigmoid-gated shared
 * expert; docs/GGUF.md "qwen35moe"), qwen3next (Qwen3-Next: the same with
 * fused beta/alpha and v heads grouped by k head; "qwen3next") and qwen35
 * (dense Qwen3.5: the same layers, a dense FFN; "qwen35").
 * A missing or misshapen tensor, a missing required key or a tensor type
 * strata cannot compute on is an ST_ERR_BAD_MODEL load error naming the
 * key or tensor.
 *
 * Ownership: st_model_desc_load returns an owned description that borrows
 * the st_gguf (every tensor pointer points into it): free the description
 * with st_model_desc_free before st_gguf_close.
 *
 * Tensor shapes use ggml order, ne[0] innermost: a matrix W with y = W x
 * has ne = (in, out); expert tensors are (in, out, n_expert) with expert e
 * the e-th slab of ne0*ne1 elements.
 */
#ifndef STRATA_MODEL_DESC_H
#define STRATA_MODEL_DESC_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/err.h"
#include "strata/gguf.h"
#include "strata/rope.h"

enum st_arch {
    ST_ARCH_LLAMA,
    ST_ARCH_QWEN3,
    ST_ARCH_QWEN3MOE,
    ST_ARCH_GLM4MOE,
    ST_ARCH_QWEN35MOE,
    ST_ARCH_QWEN3NEXT,   /* Qwen3-Next: qwen35moe's layers, fused ssm_ba, grouped v heads */
    ST_ARCH_QWEN35,      /* dense Qwen3.5: qwen35moe's layers with a dense FFN */
};

/* The hybrid (Gated DeltaNet + gated attention) architectures. */
static inline bool st_arch_is_hybrid(enum st_arch a)
{
    return a == ST_ARCH_QWEN35MOE || a == ST_ARCH_QWEN3NEXT || a == ST_ARCH_QWEN35;
}

/* Gated DeltaNet sizes (qwen35moe's <arch>.ssm.* keys). */
struct st_ssm_hparams {
    int64_t conv_kernel;   /* K: ssm.conv_kernel, taps of the causal conv1d */
    int64_t d_inner;       /* ssm.inner_size = n_v_heads * head_dim */
    int64_t head_dim;      /* ssm.state_size: one head's k and v width */
    int64_t n_v_heads;     /* ssm.time_step_rank */
    int64_t n_k_heads;     /* ssm.group_count (q and k heads) */
    bool    v_grouped;     /* v head h reads q/k head h / (n_v/n_k) (qwen3next: HF's order);
                            * else h mod n_k (qwen35*: llama.cpp's converter tiles them) */
};

struct st_hparams {
    enum st_arch arch;
    char     arch_name[32];    /* general.architecture, e.g. "qwen3moe" */
    int64_t  n_vocab;          /* rows of token_embd */
    int64_t  n_embd;           /* E: embedding_length */
    int64_t  n_layer;          /* main decoder layers (block_count - n_nextn) */
    int64_t n_nextn; /* nextn_predict_layers (MTP blocks after the main ones), 0 if none */
    int64_t  n_ctx_train;      /* context_length */
    int64_t  n_ff;             /* feed_forward_length (dense FFN width; 0 if absent in a MoE) */
    int64_t  n_head;           /* H: attention.head_count */
    int64_t  n_head_kv;        /* Hkv: attention.head_count_kv (default H) */
    int64_t  head_dim_k;       /* D: attention.key_length (default E/H) */
    int64_t  head_dim_v;       /* attention.value_length (default E/H) */
    int64_t  n_rot;            /* rope.dimension_count (default head_dim_k) */
    int64_t  n_expert;         /* X: expert_count (0 = dense) */
    int64_t  n_expert_used;    /* k: expert_used_count */
    int64_t  n_ff_exp;         /* F: expert_feed_forward_length (default n_ff / k) */
    int64_t  n_dense_lead;     /* leading_dense_block_count (glm4moe): layers [0, n) have
                                * the dense FFN (n_ff), the rest MoE; 0 elsewhere */
    int64_t  n_expert_shared;  /* expert_shared_count (glm4moe): shared expert width is
                                * n_ff_exp * this; 0 = no shared expert */
    int32_t  moe_gating;       /* enum st_moe_gating (backend.h): expert_gating_func;
                                * softmax (1) for qwen3moe / Mixtral */
    bool     moe_norm;         /* expert_weights_norm: renormalize the top-k weights
                                * (always true for qwen3moe / Mixtral) */
    float    moe_scale;        /* expert_weights_scale (routed_scaling_factor); 1 = none */
    float    rms_eps;          /* attention.layer_norm_rms_epsilon */
    float    rope_freq_base;   /* rope.freq_base (default 10000) */
    float    rope_freq_scale;  /* 1 / rope_factor under linear or yarn scaling, else 1 */
    enum st_rope_scaling rope_scaling;  /* rope.scaling.type (or --rope-scaling) */
    float    rope_factor;      /* rope.scaling.factor (or --rope-scale); 0 = none given
                                * (yarn without the key: 1, as llama.cpp) */
    int64_t  rope_n_ctx_orig;  /* yarn: rope.scaling.original_context_length (or
                                * --yarn-orig-ctx; default n_ctx_train); 0 otherwise */
    float    yarn_ext_factor;  /* rope.scaling.yarn_ext_factor (default 1) */
    float    yarn_attn_factor; /* rope.scaling.yarn_attn_factor, else .attn_factor (default 1) */
    float    yarn_beta_fast;   /* rope.scaling.yarn_beta_fast (default 32) */
    float    yarn_beta_slow;   /* rope.scaling.yarn_beta_slow (default 1) */
    struct st_rope_params rope;  /* what the layer program passes to the rope ops, derived
                                  * from the fields above (st_hparams_rope_override) */
    bool     rope_neox;        /* NEOX pairing (i, i + n_rot/2): qwen3*; false for llama */
    bool     qk_norm;          /* per-head RMSNorm of q and k before rope (qwen3*; glm4moe
                                * when blk.0.attn_q_norm is present) */
    bool     tied_output;      /* no output.weight: the LM head is token_embd */
    /* hybrid architectures only (st_arch_is_hybrid; zero elsewhere) */
    struct st_ssm_hparams ssm;
    int64_t  n_ff_shexp;       /* expert_shared_feed_forward_length: shared expert width */
    int64_t  n_recurrent;      /* main layers that are Gated DeltaNet */
    bool     attn_gate;        /* attn_q is [E, 2*H*D]: per head D query rows then D rows
                                * of an output gate (sigmoid, applied before attn_output) */
};

/* One decoder block. Pointers borrow from the st_gguf; NULL = absent. */
struct st_layer_desc {
    const struct st_gguf_tensor *attn_norm;      /* (E) F32 */
    const struct st_gguf_tensor *wq;             /* (E, H*D) */
    const struct st_gguf_tensor *wk;             /* (E, Hkv*D) */
    const struct st_gguf_tensor *wv;             /* (E, Hkv*Dv) */
    const struct st_gguf_tensor *wo;             /* (H*Dv, E) */
    const struct st_gguf_tensor *q_norm;         /* (D) F32, qk_norm only */
    const struct st_gguf_tensor *k_norm;         /* (D) F32, qk_norm only */
    const struct st_gguf_tensor *bq;             /* (H*D) F32 attn_q.bias, glm4moe (or NULL) */
    const struct st_gguf_tensor *bk;             /* (Hkv*D) F32 attn_k.bias */
    const struct st_gguf_tensor *bv;             /* (Hkv*Dv) F32 attn_v.bias */
    const struct st_gguf_tensor *ffn_norm;       /* (E) F32; glm4moe: post_attention_norm */
    /* dense FFN (n_expert == 0, or a glm4moe leading dense layer) */
    const struct st_gguf_tensor *ffn_gate;       /* (E, n_ff) */
    const struct st_gguf_tensor *ffn_up;         /* (E, n_ff) */
    const struct st_gguf_tensor *ffn_down;       /* (n_ff, E) */
    /* MoE FFN (n_expert > 0 and not a leading dense layer) */
    const struct st_gguf_tensor *ffn_gate_inp;   /* router (E, X) */
    const struct st_gguf_tensor *ffn_gate_exps;  /* (E, F, X) */
    const struct st_gguf_tensor *ffn_up_exps;    /* (E, F, X) */
    const struct st_gguf_tensor *ffn_down_exps;  /* (F, E, X) */
    const struct st_gguf_tensor *exp_probs_b;    /* (X) F32 selection bias, glm4moe */
    const struct st_gguf_tensor *ffn_gate_shexp; /* (E, Fs) shared expert, glm4moe */
    const struct st_gguf_tensor *ffn_up_shexp;   /* (E, Fs) */
    const struct st_gguf_tensor *ffn_down_shexp; /* (Fs, E) */
    /* qwen35moe: a Gated DeltaNet layer has these instead of wq/wk/wv/wo/q_norm/k_norm
     * (Ck = n_k_heads * head_dim, Cv = n_v_heads * head_dim, Hv = n_v_heads) */
    bool recurrent;
    const struct st_gguf_tensor *wqkv;           /* attn_qkv (E, 2Ck + Cv) */
    const struct st_gguf_tensor *wz;             /* attn_gate (E, Cv): the output gate z */
    const struct st_gguf_tensor *ssm_conv1d;     /* (K, 2Ck + Cv) F32 */
    const struct st_gguf_tensor *ssm_dt;         /* ssm_dt.bias (Hv) F32 */
    const struct st_gguf_tensor *ssm_a;          /* ssm_a (Hv) F32: -exp(A_log) */
    const struct st_gguf_tensor *ssm_alpha;      /* (E, Hv) */
    const struct st_gguf_tensor *ssm_beta;       /* (E, Hv) */
    const struct st_gguf_tensor *ssm_ba;         /* qwen3next instead of alpha and beta: (E, 2Hv),
                                                  * per k head Hv/Hk beta rows then Hv/Hk alpha */
    const struct st_gguf_tensor *ssm_in;         /* qwen3next's older files instead of wqkv and
                                                  * wz: (E, 2Ck + 2Cv), per k head q, k, v, z */
    const struct st_gguf_tensor *ssm_norm;       /* (head_dim) F32 */
    const struct st_gguf_tensor *ssm_out;        /* (Cv, E) */
    const struct st_gguf_tensor *ffn_gate_inp_shexp; /* (E) the shared expert's gate */
    /* MTP ("nextn") block only: layers n_layer .. n_layer + n_nextn - 1 */
    const struct st_gguf_tensor *nextn_eh_proj;  /* (2E, E): input [enorm(emb); hnorm(h)] */
    const struct st_gguf_tensor *nextn_enorm;    /* (E) F32 */
    const struct st_gguf_tensor *nextn_hnorm;    /* (E) F32 */
    const struct st_gguf_tensor *nextn_embed;    /* (E, V) optional: else token_embd */
    const struct st_gguf_tensor *nextn_head;     /* (E, V) optional: else output */
    const struct st_gguf_tensor *nextn_head_norm;/* (E) optional: else output_norm */
};

struct st_model_desc {
    struct st_hparams            hp;
    const struct st_gguf        *gguf;          /* borrowed */
    const struct st_gguf_tensor *tok_embd;      /* (E, V) */
    const struct st_gguf_tensor *output_norm;   /* (E) F32 */
    const struct st_gguf_tensor *output;        /* (E, V); == tok_embd when tied */
    int64_t                      n_layers_all;  /* n_layer + n_nextn */
    struct st_layer_desc        *layers;        /* owned, n_layers_all; MTP blocks last */
};

/* Read hparams and bind every tensor of the architecture named by
 * general.architecture. ST_ERR_BAD_MODEL (missing key/tensor, wrong
 * shape or type, unknown architecture), ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_model_desc_load(const struct st_gguf *g, struct st_model_desc **out,
                                  struct st_err *err);

/* NULL is a no-op. */
void st_model_desc_free(struct st_model_desc *d);

/* Serving-time rope overrides (llama-server's --rope-scaling, --rope-scale,
 * --yarn-orig-ctx); each field left at its "file" value keeps the GGUF's. */
struct st_rope_override {
    enum st_rope_scaling scaling;  /* MODEL = the file's */
    float   factor;      /* 0 = the file's rope.scaling.factor; else > 0 */
    int64_t n_ctx_orig;  /* 0 = the file's (yarn); else > 0 */
};

/* Applies ov (NULL = none) to hp's rope fields and recomputes hp->rope.
 * Errors (ST_ERR_BAD_CONFIG, hp untouched): scaling out of range, a
 * factor <= 0 or non-finite, yarn or linear without any factor, a factor
 * with scaling none, yarn's original context < 1. */
ST_MUST_CHECK
enum st_status st_hparams_rope_override(struct st_hparams *hp, const struct st_rope_override *ov,
                                        struct st_err *err);

/* "qwen3moe" etc. */
const char *st_arch_name(enum st_arch a);

#endif /* STRATA_MODEL_DESC_H */
