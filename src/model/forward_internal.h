/* forward_internal.h -- the loaded model's state, shared by model_load.c
 * (building and freeing it), forward.c (the layer program) and mtp.c
 * (which runs its nextn layer through forward.c's blocks).
 *
 * Shapes use the backend's notation: [a, b] = ne0 a (contiguous), b rows.
 * E = n_embd, H = n_head, Hkv = n_head_kv, D = head dim, X = experts,
 * k = experts per token, F = expert FFN width, Fd = dense FFN width,
 * Fs = shared expert width (glm4moe; the g/u buffers hold max(Fd, Fs)),
 * V = vocab, R = max_rows (rows per chunk), O = max_out (logit rows),
 * L = n_layer, C = n_ctx, S = n_slots.
 */
#ifndef STRATA_MODEL_FORWARD_INTERNAL_H
#define STRATA_MODEL_FORWARD_INTERNAL_H

#include "model/state_keep.h"
#include "strata/backend.h"
#include "strata/forward.h"

/* The layer program's files read as a list of ops (strata/status.h). */
#define TRY(call) ST_TRY(call)

/* One decoder block's weights as backend tensors (empty = absent). */
struct st_fwd_layer {
    struct st_tensor attn_norm;    /* f32 [E] */
    struct st_tensor wq;           /* any [E, H*D]  (permuted rows for llama) */
    struct st_tensor wk;           /* any [E, Hkv*D] (permuted rows for llama) */
    struct st_tensor wv;           /* any [E, Hkv*D] */
    struct st_tensor wo;           /* any [H*D, E] */
    struct st_tensor q_norm, k_norm;   /* f32 [D], qk_norm only */
    struct st_tensor bq, bk, bv;   /* f32 [H*D], [Hkv*D], [Hkv*D] biases (glm4moe), or empty */
    struct st_tensor ffn_norm;     /* f32 [E] */
    struct st_tensor ffn_gate, ffn_up;   /* dense: any [E, Fd] */
    struct st_tensor ffn_down;     /* dense: any [Fd, E] */
    struct st_tensor router;       /* MoE: any [E, X] (F32 in files) */
    struct st_tensor gate_exps;    /* MoE: any [E, F, X] */
    struct st_tensor up_exps;      /* MoE: any [E, F, X] */
    struct st_tensor down_exps;    /* MoE: any [F, E, X] */
    struct st_tensor exp_probs_b;  /* MoE: f32 [X] selection bias (glm4moe), or empty */
    struct st_tensor gate_shexp;   /* MoE: any [E, Fs] shared expert (glm4moe), or empty */
    struct st_tensor up_shexp;     /* MoE: any [E, Fs] */
    struct st_tensor down_shexp;   /* MoE: any [Fs, E] */
    /* hybrids (Ck = Hk*Dk, Cv = Hv*Dv of the DeltaNet heads, C3 = 2Ck + Cv): */
    struct st_tensor wq_gate;      /* gated attention: any [E, H*D], the output gate's rows
                                    * of attn_q (wq keeps the query's rows) */
    struct st_tensor shexp_gate;   /* any [E, 1]: the shared expert's sigmoid gate */
    struct st_tensor wqkv;         /* DeltaNet: any [E, C3] */
    struct st_tensor wz;           /* any [E, Cv] */
    struct st_tensor conv1d;       /* f32 [K, C3] */
    struct st_tensor dt_bias;      /* f32 [Hv] */
    struct st_tensor decay_a;      /* f32 [Hv], -exp(A_log) */
    struct st_tensor w_alpha;      /* any [E, Hv] */
    struct st_tensor w_beta;       /* any [E, Hv] */
    struct st_tensor ssm_norm;     /* f32 [Dv] */
    struct st_tensor ssm_out;      /* any [Cv, E] */
    int64_t kv_index;              /* attention layers: its slice of the KV cache */
    int64_t state_index;           /* DeltaNet layers: its slice of the recurrent state; -1 */
};

/* Every tensor of a layer, for the loaders' release loops. */
#define ST_FWD_LAYER_TENSORS(w)                                                             \
    &(w)->attn_norm, &(w)->wq, &(w)->wk, &(w)->wv, &(w)->wo, &(w)->q_norm, &(w)->k_norm,    \
    &(w)->bq, &(w)->bk, &(w)->bv, &(w)->ffn_norm, &(w)->ffn_gate, &(w)->ffn_up,             \
    &(w)->ffn_down, &(w)->router, &(w)->gate_exps, &(w)->up_exps, &(w)->down_exps,          \
    &(w)->exp_probs_b, &(w)->gate_shexp, &(w)->up_shexp, &(w)->down_shexp, &(w)->wq_gate,   \
    &(w)->shexp_gate, &(w)->wqkv, &(w)->wz, &(w)->conv1d, &(w)->dt_bias, &(w)->decay_a,     \
    &(w)->w_alpha, &(w)->w_beta, &(w)->ssm_norm, &(w)->ssm_out

/* Activation buffers, allocated once for R rows (O for the head). */
struct st_fwd_act {
    struct st_tensor x;        /* f32 [E, R]   the residual stream */
    struct st_tensor h;        /* f32 [E, R]   normed input of a sub-block */
    struct st_tensor q;        /* f32 [H*D, R] */
    struct st_tensor k;        /* f32 [Hkv*D, R] */
    struct st_tensor v;        /* f32 [Hkv*D, R] */
    struct st_tensor att;      /* f32 [H*D, R] attention output, heads concatenated */
    struct st_tensor o;        /* f32 [E, R]   sub-block output added to x */
    struct st_tensor g;        /* f32 [Fd, R]  dense FFN gate (then SwiGLU); max(Fd, Fs) */
    struct st_tensor u;        /* f32 [Fd, R]  dense FFN up */
    struct st_tensor so;       /* f32 [E, R]   shared expert output (glm4moe; else [1, R]) */
    struct st_tensor sel;      /* i32 [k, R]   selected experts */
    struct st_tensor wts;      /* f32 [k, R]   their weights */
    /* Per-row integers are stored as [1, R] so that rows [a, a+n) can be
     * cut with st_tensor_slice and seen as the [n] vectors the ops take
     * (st_fwd_column). */
    struct st_tensor ids;      /* i32 [1, R]   token ids */
    struct st_tensor pos;      /* i32 [1, R]   positions */
    struct st_tensor slot;     /* i32 [1, R]   slots */
    struct st_tensor gidx;     /* i32 [1, O]   rows of a chunk gathered for the head */
    struct st_tensor hout;     /* f32 [E, O]   final hidden state of the rows wanting logits */
    struct st_tensor logits;   /* f32 [V, O] */
    /* st_model_forward_draw: one entry per logit row */
    struct st_tensor draw_id;  /* i32 [1, O]   drawn token ids (out) */
    struct st_tensor draw_p;   /* i32 [ST_DRAW_WORDS, O]  struct st_draw records */
    /* st_model_forward_score: W = (1 + ST_SCORE_MAX_TOP) * O, viewed as [1 + K, n] */
    struct st_tensor score_next;  /* i32 [1, O]  the token each scored row scores */
    struct st_tensor score_vals;  /* f32 [1, W]  logprobs (out) */
    struct st_tensor score_ids;   /* i32 [1, W]  rank, then the best ids (out) */
    /* hybrids only ([1, R] elsewhere) */
    struct st_tensor qgate;    /* f32 [H*D, R]  gated attention's output gate */
    struct st_tensor sgate;    /* f32 [1, R]    the shared expert's gate */
    struct st_tensor mix;      /* f32 [C3, R]   DeltaNet: q, k, v before the conv */
    struct st_tensor conv;     /* f32 [C3, R]   after the conv and SiLU */
    struct st_tensor z;        /* f32 [Cv, R]   the output gate */
    struct st_tensor alpha;    /* f32 [Hv, R] */
    struct st_tensor beta;     /* f32 [Hv, R] */
    struct st_tensor y;        /* f32 [Cv, R]   the delta rule's output */
};

struct st_model {
    char                 *path;          /* owned */
    struct st_gguf       *gguf;          /* owned mapping */
    struct st_model_desc *desc;          /* owned; borrows gguf */
    int64_t               n_params;
    size_t                weight_bytes;

    /* valid while loaded */
    bool                   loaded;
    struct st_model_params p;            /* resolved */
    struct st_backend     *be;           /* owned */
    struct st_tensor       tok_embd;     /* any [E, V] */
    struct st_tensor       output_norm;  /* f32 [E] */
    struct st_tensor       output;       /* any [E, V]; unused when tied */
    bool                   tied;         /* the head is tok_embd */
    struct st_fwd_layer   *layers;       /* owned; n_layer (MTP blocks are not loaded) */
    struct st_tensor       kcache;       /* -ctk type [Hkv*D, C, S, La] (La: attn layers) */
    struct st_tensor       vcache;       /* --cache-type-v, the same shape */
    /* hybrids: per-slot recurrent state of its Lr DeltaNet layers, valid
     * at the end of what the slot has read (it cannot be cut back) */
    struct st_tensor       conv_state;   /* f32 [C3, K-1, S, Lr] */
    struct st_tensor       delta_state;  /* f32 [Dv, Dv, Hv, S*Lr] */
    struct st_tensor       conv_saved, delta_saved;   /* the same: st_model_state_save's
                                          * copies (allocated by its first call) */
    struct st_state_keep   keep;         /* st_model_state_keep's (state_keep.h) */
    struct st_state_ckpt  *ckpt;         /* owned [S * ckpt_per_slot] (state_ckpt.c) */
    int32_t                ckpt_per_slot;
    struct st_fwd_act      act;
    size_t                 kv_bytes, act_bytes;   /* kv_bytes counts the recurrent state */
    float                 *logits_host;  /* owned: float [O][V] */
    int64_t                last_n_out;   /* logit rows (normed rows in hout) of the last
                                          * forward's head: st_model_hidden */
    int32_t               *i32_host;     /* owned: int32 scratch [max(R, O)] */
};

/* state_ckpt.c: free every checkpoint (unload); slot's checkpoint k, allocated if need be */
void st_model_state_ckpt_release(struct st_model *m);
ST_MUST_CHECK enum st_status st_model_state_ckpt_tensors(struct st_model *m, int32_t slot,
    int32_t k, const struct st_tensor **conv, const struct st_tensor **delta, struct st_err *err);

/* Entries [start, start + n) of a [1, N] integer column as an [n] vector. */
struct st_tensor st_fwd_column(const struct st_tensor *t, int64_t start, int64_t n);

/* The activation buffers cut to the n rows of one pass (views, nothing
 * owned). The MTP passes point pos and slot at their own columns. */
struct st_fwd_rows {
    struct st_tensor x, h, q, k, v, att, o, g, u, so, sel, wts, ids, pos, slot;
    struct st_tensor qgate, sgate, mix, conv, z, alpha, beta, y;   /* hybrids */
};

void st_fwd_cut_rows(const struct st_fwd_act *a, int64_t n, struct st_fwd_rows *r);

/* Pieces of the layer program both blocks use (forward_parts.c). */
/* NEOX rope of t [heads*D, n] in place, after the per-head norm (qk_norm). */
ST_MUST_CHECK
enum st_status st_fwd_norm_rope(struct st_model *m, const struct st_tensor *t,
                                const struct st_tensor *norm, const struct st_fwd_rows *r,
                                struct st_err *err);
/* r->att = causal GQA attention of r->q over the slot's cache kc/vc, which
 * the op first extends with r->k and r->v. */
ST_MUST_CHECK
enum st_status st_fwd_attend(struct st_model *m, const struct st_tensor *kc,
                             const struct st_tensor *vc, const struct st_fwd_rows *r,
                             struct st_err *err);
/* x += o; h = rmsnorm(x) * next_norm when next_norm is given (fused). */
ST_MUST_CHECK
enum st_status st_fwd_residual(struct st_model *m, const struct st_fwd_rows *r,
                               const struct st_tensor *next_norm, struct st_err *err);
/* out = down(SiLU(h gate^T) * (h up^T)) through the g and u buffers. */
ST_MUST_CHECK
enum st_status st_fwd_swiglu(struct st_model *m, const struct st_tensor *out,
                             const struct st_tensor *gate, const struct st_tensor *up,
                             const struct st_tensor *down, const struct st_fwd_rows *r,
                             struct st_err *err);
/* r->o = the routed experts of r->h. */
ST_MUST_CHECK
enum st_status st_fwd_moe(struct st_model *m, const struct st_fwd_layer *w,
                          const struct st_fwd_rows *r, struct st_err *err);

/* forward_hybrid.c: one hybrid block over the rows of r (Gated DeltaNet
 * or gated attention over kc/vc, then the routed and the gated shared
 * expert), with st_fwd_layer_block's h_ready / next_norm contract; the MTP
 * layer runs its nextn block through it. */
ST_MUST_CHECK
enum st_status st_fwd_hybrid_block(struct st_model *m, const struct st_fwd_layer *w,
                                   const struct st_tensor *kc, const struct st_tensor *vc,
                                   const struct st_fwd_rows *r, bool h_ready,
                                   const struct st_tensor *next_norm, struct st_err *err);
/* The same for main layer w on its own slice of the model's KV cache. */
ST_MUST_CHECK
enum st_status st_fwd_hybrid_layer(struct st_model *m, const struct st_fwd_layer *w,
                                   const struct st_fwd_rows *r, bool h_ready,
                                   const struct st_tensor *next_norm, struct st_err *err);

/* model_load_hybrid.c: a hybrid layer's own weights (the split attn_q,
 * the DeltaNet tensors, the shared expert's gate): layer l of the main
 * model into m->layers[l], or (mtp) the nextn block d into *w. */
ST_MUST_CHECK
enum st_status st_fwd_load_hybrid(struct st_model *m, int64_t l, struct st_err *err);
ST_MUST_CHECK
enum st_status st_fwd_load_hybrid_block(struct st_model *m, const struct st_layer_desc *d,
                                        struct st_fwd_layer *w, struct st_err *err);

/* model_load_hybrid.c: the recurrent state of every slot (nothing for other
 * architectures); adds its bytes to kv_bytes. */
ST_MUST_CHECK
enum st_status st_fwd_alloc_state(struct st_model *m, struct st_err *err);


/* One decoder layer over the rows of r, shared by the main forward and
 * the MTP nextn layer: attention then FFN, each adding its output to r->x.
 * w: the layer's weights; kc, vc: its KV cache [Hkv*D, C, S, 1].
 * h_ready: r->h already holds rmsnorm(r->x) * w->attn_norm (the previous
 * layer's fused add+norm), so the first norm is skipped. next_norm: when
 * not NULL, the last residual add also leaves r->h = rmsnorm(r->x) *
 * next_norm (st_backend_add_rms_norm); NULL: a plain add, r->h is left
 * holding the FFN's input. */
ST_MUST_CHECK
enum st_status st_fwd_layer_block(struct st_model *m, const struct st_fwd_layer *w,
                                  const struct st_tensor *kc, const struct st_tensor *vc,
                                  const struct st_fwd_rows *r, bool h_ready,
                                  const struct st_tensor *next_norm, struct st_err *err);

/* Only the part of the attention block that reaches the cache: k and v of
 * every row are written to kc, vc; r->x is left as it was, r->att holds
 * garbage (the attention op runs on whatever q the buffer holds, as the op
 * table has no write-only KV op). */
ST_MUST_CHECK
enum st_status st_fwd_attn_kv_only(struct st_model *m, const struct st_fwd_layer *w,
                                   const struct st_tensor *kc, const struct st_tensor *vc,
                                   const struct st_fwd_rows *r, struct st_err *err);

/* Run rows [r0, r1) of b through every layer (r1 - r0 <= R), then gather
 * the final hidden state of the rows of out_rows[o0, o1) (all inside the
 * chunk) into hout rows [o0, o1). */
ST_MUST_CHECK
enum st_status st_fwd_chunk(struct st_model *m, const struct st_model_batch *b, int64_t r0,
                            int64_t r1, int64_t o0, int64_t o1, struct st_err *err);

/* What runs after each chunk of st_fwd_chunks over the same rows (the MTP
 * layer's upkeep), or NULL. */
typedef enum st_status st_fwd_after_fn(void *ctx, const struct st_model_batch *b, int64_t r0,
                                       int64_t r1, struct st_err *err);

/* The whole batch through st_fwd_chunk in chunks of at most R rows, each
 * followed by after(ctx, ...); every logit row ends up in hout. */
ST_MUST_CHECK
enum st_status st_fwd_chunks(struct st_model *m, const struct st_model_batch *b,
                             st_fwd_after_fn *after, void *ctx, struct st_err *err);

/* Final norm and the output head over hout rows [0, n_out): logits. */
ST_MUST_CHECK
enum st_status st_fwd_head(struct st_model *m, int64_t n_out, struct st_err *err);

/* ---- the pieces of st_fwd_chunk / st_fwd_head, for graph brackets -------
 * A backend graph (docs/CUDA.md) must see every host->device write before
 * st_backend_graph_begin and only ops inside; these split a chunk and the
 * head into writes, ops and the read-back. */

/* Steps of at most this many rows (decode, MTP verify, MTP drafts) run as
 * a backend graph; prompt chunks have many shapes and run eagerly. */
#define ST_FWD_GRAPH_ROWS 16
/* Graph keys: what runs (one key space per pass) and the shape, which fixes
 * every tensor view and scalar the ops see (rows, logit rows < 2^20). */
#define ST_FWD_GRAPH_FORWARD 0u
#define ST_FWD_GRAPH_MTP_VERIFY 1u
#define ST_FWD_GRAPH_MTP_DRAFT 2u
#define ST_FWD_GRAPH_KEY(kind, n, n_out) \
    (1u + (uint64_t)(n) + ((uint64_t)(n_out) << 20) + ((uint64_t)(kind) << 40))

/* The writes of st_fwd_chunk (ids, positions, slots, gather indices). */
ST_MUST_CHECK
enum st_status st_fwd_chunk_inputs(struct st_model *m, const struct st_model_batch *b,
                                   int64_t r0, int64_t r1, int64_t o0, int64_t o1,
                                   const struct st_fwd_rows *r, struct st_err *err);
/* The ops of st_fwd_chunk (inputs already written). */
ST_MUST_CHECK
enum st_status st_fwd_chunk_ops(struct st_model *m, const struct st_fwd_rows *r, int64_t o0,
                                int64_t o1, struct st_err *err);
/* The ops of st_fwd_head; st_fwd_read_logits reads them into logits_host. */
ST_MUST_CHECK
enum st_status st_fwd_head_ops(struct st_model *m, int64_t n_out, struct st_err *err);
ST_MUST_CHECK
enum st_status st_fwd_read_logits(struct st_model *m, int64_t n_out, struct st_err *err);

#endif /* STRATA_MODEL_FORWARD_INTERNAL_H */
