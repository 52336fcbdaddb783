/* forward.h -- a model ready to compute: the GGUF mapping, its weights on a
 * backend, the per-slot KV cache, and the layer program over a batch of rows.
 *
 * One struct st_model is one model instance on one device. It is built in
 * two steps so the text side is usable before the weights are:
 *
 *   st_model_open()    maps the GGUF and binds its description (cheap);
 *   st_model_load()    opens the backend, makes a backend tensor of every
 *                      weight (on the CPU: wrapped in place in the mmap, no
 *                      copy, so RSS is about file size + KV), allocates the
 *                      F16 KV cache (n_layer x n_slots x n_ctx) and the
 *                      activation buffers, and logs progress and memory;
 *   st_model_forward() runs rows through every layer and returns logits;
 *   st_model_forward_draw() draws the greedy or top-k token of each logit
 *                      row on the backend instead, so a device returns ids,
 *                      not rows of logits.
 *
 * Architectures (model_desc.h): qwen3moe (MoE, per-head QK-norm, NEOX
 * rope), qwen3 (dense, QK-norm, NEOX rope) and llama (dense or Mixtral
 * MoE, no QK-norm, normal rope). The op table has NEOX rope only; llama's
 * adjacent-pair rope is obtained by permuting the rows of attn_q and
 * attn_k once at load (pair (2i, 2i+1) moves to (i, i + n_rot/2)), which
 * leaves every q.k product unchanged. Those two matrices are therefore
 * copied for llama; every other weight is used in place.
 *
 * Rows. A forward takes n rows, row r = (token, slot, position). Rows of
 * one slot must come in increasing position order, and a slot's rows must
 * continue its cache: position p may be read only after positions 0..p-1
 * of that slot were written (by this call or an earlier one). Positions
 * above p are never read, so a slot is reset or rolled back by simply
 * writing from an earlier position again. A batch longer than the
 * activation buffers (max_rows) is run in consecutive chunks.
 *
 * Ownership: st_model_open returns an owned model (st_model_free). The
 * logits a forward returns are model-owned and valid until the next
 * forward, st_model_unload or st_model_free.
 *
 * Threads: open/load/forward/unload/free on one thread at a time (the
 * engine thread). The accessors of the GGUF, description and hparams may
 * be called from any thread once open returned (read-only).
 */
#ifndef STRATA_FORWARD_H
#define STRATA_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/draw.h"
#include "strata/err.h"
#include "strata/gguf.h"
#include "strata/kv_type.h"
#include "strata/model_desc.h"

struct st_model;        /* opaque */
struct st_backend;

struct st_model_params {
    const char *backend;    /* "cpu" or "cuda" (NULL = "cpu") */
    int32_t     device;     /* device index for a GPU backend (cuda:N); ignored by "cpu" */
    int32_t     n_threads;  /* CPU worker threads including the caller; 0 = online cores */
    int32_t     n_slots;    /* KV sequences, >= 1 */
    int64_t     n_ctx;      /* tokens per slot; 0 = min(context_length, 4096) */
    int32_t     max_rows;   /* rows per forward chunk (activation buffers); 0 = 512 + n_slots */
    int32_t     max_out;    /* rows whose logits one forward may return; 0 = n_slots + 1 */
    enum st_kv_type type_k; /* KV cache element types (--cache-type-k / -v); zero: F16. */
    enum st_kv_type type_v; /* Q8_0 needs a head dim that is a multiple of 32 (on cuda:
                             * 32, 64, 128 or 256); F32 and BF16 are cpu only */
    bool        kv_lazy;    /* the unified KV pool (--kv-unified): the KV cache is reserved,
                             * committed as rows are written, and st_model_kv_discard gives
                             * a slot's tail back (st_backend_alloc_lazy; cpu only) */
};

/* Load progress, 0..1, called on the loading thread. */
typedef void st_model_progress_fn(void *ctx, double fraction);

/* Map 'path' and bind its tensors (st_gguf_open + st_model_desc_load).
 * Nothing is computed or allocated on a device yet. ST_ERR_IO,
 * ST_ERR_BAD_GGUF, ST_ERR_BAD_MODEL, ST_ERR_NOMEM. On success *out is owned. */
ST_MUST_CHECK
enum st_status st_model_open(const char *path, struct st_model **out, struct st_err *err);

/* Open the backend and make the weights, KV cache and buffers ('p' is
 * copied; progress may be NULL). Loading twice without st_model_unload is
 * ST_ERR_INVALID. ST_ERR_UNSUPPORTED (backend not built, a weight type or
 * shape the backend cannot run), ST_ERR_NOMEM / ST_ERR_DEVICE_OOM. A
 * failed load leaves the model unloaded. */
ST_MUST_CHECK
enum st_status st_model_load(struct st_model *m, const struct st_model_params *p,
                             st_model_progress_fn *progress, void *ctx, struct st_err *err);

/* Release the backend tensors and close the backend; the GGUF stays open.
 * A no-op when not loaded. */
void st_model_unload(struct st_model *m);

/* Unload and unmap. NULL is a no-op. */
void st_model_free(struct st_model *m);

/* One forward over n_rows rows (see "Rows" above). out_rows: n_out row
 * indices in strictly ascending order whose logits are wanted (n_out <=
 * max_out; may be 0). */
struct st_model_batch {
    int64_t        n_rows;
    const int32_t *tokens;    /* [n_rows], 0 <= id < n_vocab */
    const int32_t *slots;     /* [n_rows], 0 <= slot < n_slots */
    const int64_t *pos;       /* [n_rows], 0 <= pos < n_ctx */
    int64_t        n_out;
    const int64_t *out_rows;  /* [n_out] */
};

/* Run the batch. On success *logits (when n_out > 0) points at n_out rows
 * of n_vocab floats, row j for out_rows[j]: model-owned, valid until the
 * next forward. ST_ERR_INVALID for a batch that breaks the rules above
 * (message names the row), ST_ERR_LOADING when not loaded, or what the
 * backend reports. */
ST_MUST_CHECK
enum st_status st_model_forward(struct st_model *m, const struct st_model_batch *b,
                                const float **logits, struct st_err *err);

/* st_model_forward, but the token of logit row j (out_rows[j]) is drawn on
 * the backend by draw[j] (include/strata/draw.h, st_backend_sample) and written to ids[j]
 * (caller-owned, n_out entries); no logits come back. The same rules and errors. */
ST_MUST_CHECK
enum st_status st_model_forward_draw(struct st_model *m, const struct st_model_batch *b,
                                     const struct st_draw *draw, int32_t *ids,
                                     struct st_err *err);

/* After a forward (st_model_forward, _draw, _score, or st_mtp_forward)
 * that returned logit rows: the final hidden state of logit row j (the row
 * out_rows[j]) after output_norm, i.e. the vector the LM head multiplied,
 * as n_embd floats into 'out' (caller-owned). The head ran on it anyway:
 * its logits are simply not needed by an embedding. Valid until the next
 * forward. ST_ERR_INVALID for j outside the last forward's logit rows,
 * ST_ERR_LOADING when not loaded, or what the backend reports. */
ST_MUST_CHECK
enum st_status st_model_hidden(struct st_model *m, int64_t j, float *out, struct st_err *err);

/* Make positions [from, to) of slot dst's KV cache (every layer, K and V)
 * a copy of slot src's (device-side copies, no compute): prefix sharing
 * across slots. The caller guarantees src's rows [0, to) are written and
 * hold the same token ids dst will have there, and dst's rows [0, from)
 * hold them already; afterwards dst may be read from position 'to' on.
 * ST_ERR_INVALID for src == dst or slots / positions out of range,
 * ST_ERR_LOADING when not loaded, or what the backend reports (dst's rows
 * [from, to) are then unspecified). */
ST_MUST_CHECK
enum st_status st_model_kv_copy(struct st_model *m, int32_t src, int32_t dst, int64_t from,
                                int64_t to, struct st_err *err);

/* Logit rows scored on the backend (st_backend_score: prompt logprobs),
 * so only (1 + k) floats and ints per row come back instead of the row. */
struct st_model_score {
    int64_t        first;      /* logit row (index into out_rows) of the first scored row */
    int64_t        n;          /* scored rows: first .. first + n - 1, n >= 1 */
    int32_t        k;          /* alternatives per row, 0..ST_SCORE_MAX_TOP (<= n_vocab) */
    const int32_t *next;       /* [n]: the token row j scores, -1 = none (top list only) */
    bool           keep_last;  /* also read the last scored row's logits (it samples) */
    float         *vals;       /* [n * (1 + k)] out, caller-owned: row j at j * (1 + k) */
    int32_t       *ids;        /* [n * (1 + k)] out: as st_backend_score's vals and ids */
};

/* st_model_forward, but the logit rows of 's' are scored on the backend
 * (vals/ids as st_backend_score) and not read back, except the last when
 * keep_last. *logits (may be NULL) then holds every other logit row at its
 * place (row j at j * n_vocab); the skipped rows' contents are unspecified.
 * The same rules and errors, and ST_ERR_INVALID for rows of 's' outside
 * [0, n_out) or k out of range. */
ST_MUST_CHECK
enum st_status st_model_forward_score(struct st_model *m, const struct st_model_batch *b,
                                      const struct st_model_score *s, const float **logits,
                                      struct st_err *err);

/* Serving-time rope scaling over the file's (--rope-scaling, --rope-scale,
 * --yarn-orig-ctx): st_hparams_rope_override on the model's hparams. Call
 * between st_model_open and the first forward, from the thread that owns
 * the model. Errors: ST_ERR_BAD_CONFIG (hparams unchanged). */
ST_MUST_CHECK
enum st_status st_model_set_rope(struct st_model *m, const struct st_rope_override *ov,
                                 struct st_err *err);

/* ---- facts (any thread once open returned) ---------------------------- */

const struct st_gguf *st_model_gguf(const struct st_model *m);            /* borrowed */
const struct st_model_desc *st_model_description(const struct st_model *m); /* borrowed */
const struct st_hparams *st_model_hparams(const struct st_model *m);      /* borrowed */
const char *st_model_path(const struct st_model *m);                      /* borrowed */
bool st_model_loaded(const struct st_model *m);

/* Parameters in the weights of the main layers + embeddings + head (MTP
 * blocks excluded), and the bytes those weights take in the file. */
int64_t st_model_n_params(const struct st_model *m);
size_t st_model_weight_bytes(const struct st_model *m);

/* After load (0 before): the resolved parameters, the backend (borrowed),
 * and the KV cache and activation buffer sizes in bytes. */
const struct st_model_params *st_model_params_of(const struct st_model *m);
struct st_backend *st_model_backend(const struct st_model *m);
size_t st_model_kv_bytes(const struct st_model *m);
/* (kv_lazy) Give back the memory of positions [from, to) of slot's KV in
 * every layer (whole pages only; st_backend_discard): a slot cut or
 * emptied stops costing memory. A no-op without kv_lazy or when not
 * loaded. Returns the bytes given back. */
size_t st_model_kv_discard(struct st_model *m, int32_t slot, int64_t from, int64_t to);
/* Bytes of the KV cache (K and V) that are committed memory now: with
 * kv_lazy what slots wrote and still hold, else the whole cache. */
size_t st_model_kv_resident(const struct st_model *m);
/* (models with recurrent layers: st_model_hparams(m)->n_recurrent > 0)
 * Copy slot's recurrent state of every layer aside, or back from there
 * (one saved copy per slot; the first save allocates room for all of
 * them, counted in st_model_kv_bytes). The runner saves before a step
 * that verifies drafts and restores when some are rejected. */
ST_MUST_CHECK
enum st_status st_model_state_save(struct st_model *m, int32_t slot, struct st_err *err);
ST_MUST_CHECK
enum st_status st_model_state_restore(struct st_model *m, int32_t slot, struct st_err *err);
/* (recurrent models) From now on every forward that is one chunk of at
 * most 'rows' rows (clipped to max_rows; a decode or verify step) keeps
 * its DeltaNet layers' inputs (f32, C3 + 2 Hv per row and layer, counted
 * in st_model_act_bytes), so that after st_model_state_restore(slot) the
 * slot's rows of that forward at positions [from, from + n) can be read
 * into the state again by the recurrent ops alone (st_model_state_reread:
 * no weights). ST_ERR_UNSUPPORTED from reread when the last forward did
 * not keep those rows (nothing changed: the caller reads the tokens
 * again with a forward). A second keep is a no-op. */
ST_MUST_CHECK
enum st_status st_model_state_keep(struct st_model *m, int64_t rows, struct st_err *err);
ST_MUST_CHECK
enum st_status st_model_state_reread(struct st_model *m, int32_t slot, int64_t from, int64_t n,
                                     struct st_err *err);

/* (recurrent models) Checkpoints of slots' recurrent state: reserve makes
 * room for per_slot of them in every slot (host bookkeeping only; any
 * earlier ones go); put copies slot's state of every layer into its
 * checkpoint k (device memory taken by the first put of that k, counted
 * in st_model_kv_bytes until unload), get copies it back. Which position a
 * checkpoint stands for is the caller's (runner_ckpt.c). */
ST_MUST_CHECK
enum st_status st_model_state_ckpt_reserve(struct st_model *m, int32_t per_slot,
                                           struct st_err *err);
ST_MUST_CHECK
enum st_status st_model_state_ckpt_put(struct st_model *m, int32_t slot, int32_t k,
                                       struct st_err *err);
ST_MUST_CHECK
enum st_status st_model_state_ckpt_get(struct st_model *m, int32_t slot, int32_t k,
                                       struct st_err *err);

/* The part of st_model_kv_bytes that is per-slot recurrent state
 * (qwen35moe's DeltaNet layers; 0 for other architectures). */
size_t st_model_state_bytes(const struct st_model *m);
size_t st_model_act_bytes(const struct st_model *m);

#endif /* STRATA_FORWARD_H */
