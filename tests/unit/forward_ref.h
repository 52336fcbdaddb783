/* forward_ref.h -- a naive scalar reference forward for the model tests,
 * and small helpers to make test models and compare logits.
 *
 * The reference is written straight from docs/design/ENGINE.md 3.3 and shares no code
 * with src/model/forward.c or the backend: every weight is dequantized to
 * f32 once with st_dequant_row, all sums are plain loops accumulated in
 * double, activations are never quantized, the KV cache is f32, and
 * llama's rope is computed on adjacent pairs (the engine permutes rows
 * instead). One sequence, one token at a time. Slow and obviously right.
 */
#ifndef STRATA_TEST_FORWARD_REF_H
#define STRATA_TEST_FORWARD_REF_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/dtype.h"
#include "strata/gguf.h"
#include "strata/model_desc.h"

struct ref_model;

/* Dequantize every weight of 'd' (borrowed for the call); n_ctx positions
 * of KV. Returns owned (ref_free).
 *
 * emulate = false: pure f32 math. emulate = true: the activations entering
 * each matmul are rounded through the type the fast path quantizes them to
 * (docs/design/ENGINE.md 2.11, with the scalar quantizers of quant.h) and k/v through
 * f16, so the two paths differ only by float summation order and every
 * discrete choice (MoE top-k, argmax) comes out the same. Quantized-
 * activation noise flips near-tied expert choices of random-weight models,
 * which makes the pure comparison a statistical one. */
struct ref_model *ref_new(const struct st_model_desc *d, int64_t n_ctx, bool emulate);
void ref_free(struct ref_model *r);

/* Feed 'token' at position 'pos' (must be the next one: 0, 1, 2 ...) and
 * write the n_vocab logits. */
void ref_step(struct ref_model *r, int32_t token, int64_t pos, float *logits);

/* (MTP) The final state after output_norm of the last ref_step: h_p,
 * the vector the head saw. Borrowed, [n_embd], overwritten by ref_step. */
const float *ref_hidden(const struct ref_model *r);

/* (MTP) The model's first nextn block at position 'pos' (docs/design/ENGINE.md 4.2):
 * token t_p with h_prev = h_{p-1} (NULL: zeros), on the block's own f32
 * KV cache (positions 0..pos-1 of it must have been fed). Writes the
 * block's output after the head norm (h_out [n_embd], what the next draft
 * step takes) and the logits for t_{p+1}. Needs a model with n_nextn > 0. */
void ref_mtp_step(struct ref_model *r, int32_t token, const float *h_prev, int64_t pos,
                  float *h_out, float *logits);

/* The smallest router-logit margin between a chosen expert and an
 * unchosen one over all layers of the last ref_step (INFINITY for dense
 * models): below ~0.05, activation quantization may flip the choice. */
double ref_route_gap(const struct ref_model *r);

/* How close two logit rows are. */
struct ref_cmp {
    double cos;        /* cosine similarity */
    double rel;        /* max |a - b| / max |a| */
    bool   argmax_ok;  /* same argmax, or the fast one is within 'tie' of the top */
    int32_t argmax;    /* argmax of the reference row */
};

/* tie: logit gap (relative to max |ref|) under which two tokens count as a tie. */
struct ref_cmp ref_compare(const float *ref, const float *fast, int64_t n, double tie);

/* A dense test model (llama or qwen3) with random weights of 'type' (norms
 * f32): E 64, 2 layers, 4 heads of 16 (2 kv heads), n_rot 'n_rot', FFN 96,
 * vocab 128. Written to 'path'. Returns false (with a message on stderr)
 * on failure. */
bool ref_write_dense(const char *path, const char *arch, enum st_dtype type, int64_t n_rot,
                     uint64_t seed);

/* Deterministic pseudo-random token ids in [0, n_vocab). */
void ref_tokens(uint64_t seed, int32_t *out, int64_t n, int64_t n_vocab);

#endif /* STRATA_TEST_FORWARD_REF_H */
