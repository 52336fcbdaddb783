/* forward_ref_internal.h -- the reference model's state and the pieces
 * of forward_ref.c that forward_ref_next.c (the hybrid layers: qwen35moe,
 * qwen3next, qwen35) uses.
 */
#ifndef STRATA_TEST_FORWARD_REF_INTERNAL_H
#define STRATA_TEST_FORWARD_REF_INTERNAL_H

#include "forward_ref.h"

/* A dequantized matrix and the type it was stored as (which decides how
 * the fast path quantizes the activations it meets). */
struct ref_mat {
    float        *w;
    enum st_dtype type;
};

struct ref_layer {
    float *attn_norm, *q_norm, *k_norm, *ffn_norm;
    /* qwen35moe: wq is the query rows, wq_gate the output gate's (attn_q
     * split); a recurrent layer has the DeltaNet tensors instead */
    bool recurrent;
    struct ref_mat wq_gate, wqkv, wz, alpha, beta, ssm_out, shexp_gate;
    struct ref_mat ba, ssm_in;                     /* qwen3next's fused ones, as stored */
    float *conv1d, *dt_bias, *decay_a, *ssm_norm;
    float *bq, *bk, *bv;                           /* glm4moe's q/k/v biases, or NULL */
    struct ref_mat wq, wk, wv, wo;
    struct ref_mat gate, up, down;                 /* dense */
    struct ref_mat router, gate_e, up_e, down_e;   /* MoE */
    float *exp_b;                                  /* glm4moe: selection bias [X], or NULL */
    struct ref_mat gate_s, up_s, down_s;           /* glm4moe: shared expert, or NULL */
};

struct ref_model {
    struct st_hparams hp;
    int64_t n_ctx;
    bool emulate;                         /* quantize activations as the fast path does */
    float *emb, *onorm;
    struct ref_mat out;                   /* out.w == emb when tied */
    struct ref_layer *L;
    float *kc, *vc;                       /* [n_all][n_ctx][Hkv*D] */
    double route_gap;                     /* smallest top-k margin of the last step */
    /* (added for MTP) every block of the file, MTP ones last, and the
     * final state (after output_norm) of the last ref_step */
    int64_t n_all;                        /* n_layer + n_nextn */
    float *hid;                           /* [E] */
    struct ref_mat eh;                    /* nextn.eh_proj [2E -> E] of block n_layer */
    float *enorm, *hnorm, *mtp_hn;        /* mtp_hn: shared_head_norm or output_norm */
    float *mtp_emb;                       /* nextn.embed_tokens or token_embd */
    struct ref_mat mtp_out;               /* shared_head_head or the output head */
    /* qwen35moe: per-layer recurrent state of the one sequence */
    float *conv_state;                    /* [n_all][K-1][C3], oldest input first */
    double *delta_state;                  /* [n_all][Hv][Dv][Dv] */
};

float *ref_deq(const struct st_gguf_tensor *t);
struct ref_mat ref_mat_of(const struct st_gguf_tensor *t);
/* y = W x over the slab at element 'off' of m (activations rounded as the
 * fast path does when the model emulates it). */
void ref_matvec_at(const struct ref_model *r, struct ref_mat m, int64_t off, const float *x,
                   float *y, int64_t n_in, int64_t n_out);
void ref_matvec(const struct ref_model *r, struct ref_mat m, const float *x, float *y,
                int64_t n_in, int64_t n_out);
void ref_rmsnorm(float *out, const float *x, const float *g, int64_t n, float eps);
void ref_rope(float *x, int64_t n_head, const struct st_hparams *hp, int64_t pos);
/* Causal attention of q over layer l's cache (kv_layer's slice) up to pos. */
void ref_attention(struct ref_model *r, int64_t l, const float *q, int64_t pos, float *out);
float ref_silu(float g);
void ref_swiglu(const struct ref_model *r, const struct ref_mat *gate, const struct ref_mat *up,
                const struct ref_mat *down, int64_t x, const float *h, int64_t e, int64_t f,
                float *y);
void ref_moe(struct ref_model *r, const struct ref_layer *w, const float *h, float *y);

/* forward_ref_next.c: the hybrids. Load layer l's own tensors; run layer
 * l (DeltaNet or gated attention, then the routed and gated shared expert
 * or the dense FFN) on x at pos; free what load made. */
void ref_next_load(struct ref_model *r, const struct st_layer_desc *s, struct ref_layer *w);
void ref_next_layer(struct ref_model *r, int64_t l, float *x, int64_t pos);
void ref_next_free(struct ref_model *r, struct ref_layer *w);

#endif /* STRATA_TEST_FORWARD_REF_INTERNAL_H */
