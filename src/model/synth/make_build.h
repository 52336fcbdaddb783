/* make_build.h -- the synthetic-model writer's presets and tensor list
 * (make_model.c), shared with make_next.c (the qwen35moe presets' layers
 * and keys). Private to src/model/synth.
 */
#ifndef STRATA_MODEL_SYNTH_MAKE_BUILD_H
#define STRATA_MODEL_SYNTH_MAKE_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/dtype.h"
#include "strata/gguf_write.h"

struct preset {
    const char *name;
    int64_t E, L, H, Hkv, D, X, k, F, ctx;
    bool tied;
    bool mtp_demo;   /* an MTP block that agrees with the model on purpose (see below) */
    int64_t n_vocab; /* pad the built-in vocabulary to this many rows (0 = as built) */
    /* glm4moe presets only (zero for qwen3moe): */
    bool glm;        /* general.architecture glm4moe; always one nextn block */
    int64_t dense;   /* leading dense layers, FFN width Fd */
    int64_t Fd;
    int64_t shexp;   /* shared experts (width F * shexp) */
    int64_t n_rot;   /* partial rope: rotated dims of each head */
    float scale;     /* expert_weights_scale (routed_scaling_factor) */
    /* qwen35moe presets only (NULL elsewhere): */
    const struct next_shape *next;
};

/* A hybrid preset's architecture, Gated DeltaNet and shared-expert sizes
 * (H, Hkv, D and n_rot of struct preset are its gated attention's; every
 * full_attention_interval-th layer is attention; X == 0 in the preset
 * makes the FFN dense, qwen35's). */
struct next_shape {
    int64_t Hk, Hv, Ds;   /* q/k heads, v heads, head width (ssm.state_size) */
    int64_t K;            /* conv taps */
    int64_t Fs;           /* shared expert width (0: dense FFN) */
    int64_t interval;     /* full_attention_interval */
    const char *arch;     /* "qwen35moe", "qwen3next" (fused ssm_ba, grouped v) or "qwen35" */
    bool ssm_in;          /* qwen3next's older fused ssm_in instead of attn_qkv + attn_gate */
};

enum role { R_EMBD, R_OUTPUT, R_ATTN, R_ATTN_V, R_ATTN_OUT, R_FFN, R_FFN_DOWN, R_ROUTER,
            R_NORM, R_BIAS,
            R_F32,      /* F32 random of sigma 1/sqrt(ne0): the conv taps */
            R_DECAY };  /* F32 in [-2.5, -0.5]: ssm_a = -exp(A_log) */

/* llama-quantize's per-tensor mixes (llama_tensor_get_type) we reproduce. */
enum mix { MIX_NONE, MIX_Q4_K_M, MIX_Q2_K, MIX_Q2_K_S, MIX_Q3_K_M, MIX_Q3_K_L };

struct plan {
    enum st_dtype base;      /* --quant */
    enum mix      mix;
    uint32_t      ftype;     /* llama_ftype for general.file_type */
    int64_t       gqa;       /* n_head / n_head_kv (the Q2_K attn_v rule) */
};

enum gen_kind {
    GEN_RANDOM,              /* random weights of standard deviation sigma */
    GEN_ONES,                /* F32 gains of exactly 1 (mtp-demo's enorm) */
    GEN_EYE_LEFT,            /* float rows: row o = e_o over the first half (mtp-demo eh_proj) */
    GEN_DECAY,               /* F32 -(0.5 + |random|), clamped at -2.5 (ssm_a) */
};

struct gen {                 /* one tensor's generator (fill callback ctx) */
    uint64_t      state;
    enum st_dtype type;
    int64_t       ne0;
    float         sigma;
    bool          norm;      /* F32 gains: 1 + uniform noise */
    enum gen_kind kind;
};

struct build {
    const struct preset *p;
    struct plan          plan;
    int64_t              n_vocab;
    int64_t              n_blocks;  /* main layers + MTP block */
    struct st_gguf_writer *w;
    struct gen          *gens;      /* owned; one per tensor */
    int64_t              n_gens, cap_gens;
    uint64_t             seed;
};

/* Add tensor 'name' with ne (n_dims of them) in the role's type. */
void st_mm_add(struct build *b, const char *name, enum role r, int64_t il, int n_dims,
               int64_t ne0, int64_t ne1, int64_t ne2);
/* blk.<il>.<what>.weight (R_BIAS: .bias) through st_mm_add. */
void st_mm_add_blk(struct build *b, int64_t il, const char *what, enum role r, int n_dims,
                   int64_t ne0, int64_t ne1, int64_t ne2);

/* make_next.c: layer il of a hybrid preset (Gated DeltaNet or gated
 * attention, routed experts and the gated shared expert or a dense FFN;
 * the nextn block when il == L), and the <arch>.* keys beyond the common
 * ones. */
void st_mm_add_next_block(struct build *b, int64_t il);
void st_mm_add_next_keys(struct build *b);

#endif /* STRATA_MODEL_SYNTH_MAKE_BUILD_H */
