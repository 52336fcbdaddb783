/* desc_internal.h -- the key readers and tensor binders of model_desc.c,
 * shared with model_desc_hybrid.c (the hybrids' Gated DeltaNet layers).
 * Private to src/model.
 */
#ifndef STRATA_MODEL_DESC_INTERNAL_H
#define STRATA_MODEL_DESC_INTERNAL_H

#include "strata/model_desc.h"

struct st_desc_ctx {
    const struct st_gguf *g;
    const char           *arch;   /* the <arch>. prefix of every key */
    struct st_err        *err;
};

/* What a tensor must be: an F32 vector (norm gains, biases, small
 * parameters) or a weight of any type strata computes on. */
enum st_desc_kind { ST_DESC_NORM, ST_DESC_WEIGHT };

/* <arch>.<suffix> as an integer >= 0, def when absent (unless required). */
ST_MUST_CHECK
enum st_status st_desc_key_int(struct st_desc_ctx *c, const char *suffix, bool required,
                               int64_t def, int64_t *out);

/* Tensor 'name' checked for kind and shape (ne0, ne1, ne2, 1); absent and
 * not required leaves *out NULL. */
ST_MUST_CHECK
enum st_status st_desc_bind(struct st_desc_ctx *c, const char *name, enum st_desc_kind k,
                            bool required, int64_t ne0, int64_t ne1, int64_t ne2,
                            const struct st_gguf_tensor **out);

/* blk.<il>.<what>.weight through st_desc_bind. */
ST_MUST_CHECK
enum st_status st_desc_bind_blk(struct st_desc_ctx *c, int64_t il, const char *what,
                                enum st_desc_kind k, bool required, int64_t ne0, int64_t ne1,
                                int64_t ne2, const struct st_gguf_tensor **out);

/* One row of a key table: <arch>.<suffix> into *out through st_desc_key_int. */
struct st_desc_int_key {
    const char *suffix;
    bool        required;
    int64_t     def;
    int64_t    *out;
};

/* Read keys[0..n) in order; the first failure stops the run. */
ST_MUST_CHECK
enum st_status st_desc_key_ints(struct st_desc_ctx *c, const struct st_desc_int_key *keys,
                                size_t n);

/* One row of a tensor table: tensor blk.<il>.<name> (or <name> when il < 0)
 * bound through st_desc_bind when 'when' holds; rows that do not apply
 * leave *out as it was. */
struct st_desc_tensor {
    bool                          when;
    const char                   *name;   /* "attn_q.weight", "attn_q.bias", "ssm_a" */
    enum st_desc_kind             kind;
    bool                          required;
    int64_t                       ne0, ne1, ne2;
    const struct st_gguf_tensor **out;
};

/* Bind t[0..n) of layer il (il < 0: whole names) in order; the first
 * failure stops the run, so the error names the first bad row. */
ST_MUST_CHECK
enum st_status st_desc_bind_table(struct st_desc_ctx *c, int64_t il,
                                  const struct st_desc_tensor *t, size_t n);

/* The shared expert's ffn_{gate,up,down}_shexp of layer il, width Fs. */
ST_MUST_CHECK
enum st_status st_desc_bind_shexp(struct st_desc_ctx *c, int64_t il, int64_t E, int64_t Fs,
                                  struct st_layer_desc *L);

/* model_desc_hybrid.c: the ssm.* keys, the shared expert's width (MoE
 * ones) and the recurrent-layer count of a hybrid (st_arch_is_hybrid). */
ST_MUST_CHECK
enum st_status st_desc_read_hybrid(struct st_desc_ctx *c, struct st_hparams *hp);

/* Whether main layer il of a hybrid is Gated DeltaNet:
 * <arch>.attention.recurrent_layers when present (one entry per block),
 * else every layer but each full_attention_interval-th (default 4).
 * MTP blocks never are. */
ST_MUST_CHECK
enum st_status st_desc_is_recurrent(struct st_desc_ctx *c, const struct st_hparams *hp,
                                    int64_t il, bool *out);

/* The Gated DeltaNet tensors of layer il (attn_norm is bound by the caller;
 * qwen3next: ssm_ba for alpha and beta, ssm_in when attn_qkv is absent). */
ST_MUST_CHECK
enum st_status st_desc_bind_recurrent(struct st_desc_ctx *c, const struct st_hparams *hp,
                                      int64_t il, struct st_layer_desc *L);

/* The sigmoid-gated shared expert of layer il (qwen35moe, qwen3next). */
ST_MUST_CHECK
enum st_status st_desc_bind_gated_shexp(struct st_desc_ctx *c, const struct st_hparams *hp,
                                        int64_t il, struct st_layer_desc *L);

#endif /* STRATA_MODEL_DESC_INTERNAL_H */
