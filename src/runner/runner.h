/* runner.h -- what an engine computes with: one model instance on one device.
 *
 * The engine loop (src/engine/step.c) only talks to this interface, so the
 * simulated runner (runner_sim.c, runner_sim.h) and the CPU/CUDA model
 * runner (runner_model.c, runner_model.h) plug in with no change to the
 * loop. A runner owns the model's text side (tokenizer,
 * pieces, chat template), its KV cache (one sequence per slot) and the
 * forward pass; the engine owns slots, sampling, stop strings and timing.
 *
 * Vtable in the Redis ConnectionType style: call sites use the static
 * inline wrappers below, never ->ops directly.
 *
 * Threads: load/unload/forward/kv_truncate/kv_copy/slot_save/slot_restore run on the engine's thread only.
 * tokenize, detokenize, token_piece, is_eog, eog_ids, n_vocab, fim_ids and
 * apply_template may run on any thread at any time (HTTP threads call them
 * while the engine steps): implementations keep them read-only.
 *
 * Several models (docs/MODELS.md): an engine makes a runner for a model
 * when it loads it (st_pool_runner_new in src/engine/runner_new.c, then load) and frees it when it
 * swaps or unloads. The pool also keeps one runner per model that is never
 * loaded and serves that model's text side, so the text operations above
 * must work right after the constructor, before load: a constructor may
 * read the file's metadata and vocabulary, but weights are read by load.
 * A constructor or load failure is the model's failure (marked failed, its
 * requests answered 503 with err's message), never a crash.
 */
#ifndef STRATA_RUNNER_H
#define STRATA_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "strata/chat.h"
#include "strata/chat_req.h"
#include "strata/clock.h"
#include "strata/draw.h"
#include "strata/err.h"
#include "strata/fim.h"
#include "strata/model_desc.h"
#include "runner/batch.h"
#include "runner/score.h"

struct st_runner;

/* Load progress, 0..1; called on the loading thread. */
typedef void st_runner_progress_fn(void *ctx, double fraction);

struct st_runner_ops {
    const char *name;   /* "sim", "cpu", "cuda" */

    /* Frees everything; NULL-safe through st_runner_free(). */
    void (*free)(struct st_runner *r);

    /* Load the weights (may take long; sim sleeps on 'clock'). */
    enum st_status (*load)(struct st_runner *r, const struct st_clock *clock,
                           st_runner_progress_fn *progress, void *ctx, struct st_err *err);
    void (*unload)(struct st_runner *r);

    int32_t (*n_vocab)(const struct st_runner *r);
    /* (optional: NULL = the runner cannot embed) Floats of a seq's 'embd':
     * the model's hidden size. Any thread, like n_vocab. */
    int32_t (*n_embd)(const struct st_runner *r);
    /* ids: returns owned int32_t[*n_ids] (free()); *ids may be NULL when *n_ids == 0. */
    enum st_status (*tokenize)(const struct st_runner *r, const char *text, size_t len,
                               bool add_special, bool parse_special, int32_t **ids,
                               size_t *n_ids, struct st_err *err);
    /* (optional: NULL = no bound) The most bytes of tokenize's input one token
     * stands for (strata/tokenizer.h st_tok_max_input_bytes); 0: no bound. */
    size_t (*max_token_bytes)(const struct st_runner *r);
    /* Returns owned NUL-terminated text (free()). */
    enum st_status (*detokenize)(const struct st_runner *r, const int32_t *ids, size_t n_ids,
                                 char **text, struct st_err *err);
    /* The bytes a token adds to generated text, copied into buf (at most cap bytes, not
     * NUL-terminated). Returns the piece's full length (> cap: truncated). */
    size_t (*token_piece)(const struct st_runner *r, int32_t token, char *buf, size_t cap);
    /* End of generation (eos, eot ...). */
    bool (*is_eog)(const struct st_runner *r, int32_t token);
    /* All end-of-generation ids, for masking them with ignore_eos (borrowed, static). */
    size_t (*eog_ids)(const struct st_runner *r, const int32_t **ids);
    /* (optional: NULL = none) The vocabulary's fill-in-the-middle token ids
     * (strata/fim.h; -1 where absent). */
    void (*fim_ids)(const struct st_runner *r, struct st_fim_ids *out);
    /* Render a chat request (strata/chat_req.h) into prompt text, ending
     * as 'ending' says (strata/chat.h); owned result. */
    enum st_status (*apply_template)(const struct st_runner *r,
                                     const struct st_chat_request *req,
                                     enum st_chat_ending ending, char **prompt,
                                     struct st_err *err);

    /* Run one step. Rows of seqs without 'sample' are left untouched; a READ
     * with 'score' fills its 'scores' whether or not it samples. */
    enum st_status (*forward)(struct st_runner *r, const struct st_runner_batch *batch,
                              struct st_runner_out *out, struct st_err *err);
    /* Keep only the first n_tokens of slot's KV (0: empty it): prefix reuse and rollback. */
    void (*kv_truncate)(struct st_runner *r, int32_t slot, int64_t n_tokens);
    /* (optional: NULL = kv_truncate keeps exactly min(n_tokens, what the slot holds))
     * How many tokens kv_truncate(slot, n_tokens) would leave: for a recurrent model the
     * slot's length when n_tokens reaches it, else the longest state checkpoint at or
     * below n_tokens, else 0 (runner_ckpt.c). The engine asks it of free slots, to choose
     * and bind a prefix it can keep (prefix.c). */
    int64_t (*kv_keep)(const struct st_runner *r, int32_t slot, int64_t n_tokens);
    /* (optional: NULL = none) State checkpoints slot holds now (each costs one slot's
     * recurrent state, state_tokens of KV memory): /slots and the KV usage. */
    int32_t (*n_checkpoints)(const struct st_runner *r, int32_t slot);
    /* (optional: NULL = the runner cannot copy; prefix sharing across slots, prefix.c)
     * Make positions [from, to) of slot dst's KV (with an MTP layer, its cache too) a
     * copy of slot src's; dst then holds 'to' tokens. The engine guarantees src != dst,
     * src's rows [0, to) are final and hold the ids dst has there, and dst holds
     * [0, from) already. On failure dst is cut back to 'from' (its KV past that is
     * unspecified). A real runner copies on its device; the sim charges time for the
     * copied tokens to its next forward (docs/BATCHING.md "Prefix reuse"). */
    enum st_status (*kv_copy)(struct st_runner *r, int32_t src, int32_t dst, int64_t from,
                              int64_t to, struct st_err *err);
    /* (optional: NULL = the runner cannot; POST /slots save/restore, engine/slot_op.c)
     * Write slot's first n_tokens KV rows (ids: their token ids), recurrent state and
     * state checkpoints to f (strata/slot_state.h); read such a file back into slot,
     * which then holds *n_tokens tokens (*ids owned) and the file's checkpoints (as
     * many as it keeps). On a failed restore the slot is empty. */
    enum st_status (*slot_save)(struct st_runner *r, int32_t slot, const int32_t *ids,
                                int64_t n_tokens, FILE *f, int64_t *n_bytes,
                                struct st_err *err);
    enum st_status (*slot_restore)(struct st_runner *r, int32_t slot, FILE *f, int32_t **ids,
                                   int64_t *n_tokens, int64_t *n_bytes, struct st_err *err);

    /* (MTP, optional: NULL = the runner has no MTP layer; the sim.) Draft tokens per slot
     * the loaded runner can make: 0 when its model has no MTP layer or 'mtp_draft' was 0
     * at load. A runner with MTP keeps its MTP cache in step through every forward. */
    int32_t (*mtp_max)(const struct st_runner *r);
    /* Draft for n slots together (distinct slots, each drafting from its cache's end). */
    enum st_status (*mtp_draft)(struct st_runner *r, struct st_runner_draft *d, int32_t n,
                                struct st_err *err);
};

struct st_runner {
    const struct st_runner_ops *ops;   /* first member */
    int32_t n_slots;                   /* KV sequences */
    int64_t n_ctx;                     /* tokens per slot */
    int32_t mtp_draft;                 /* (MTP) set before load: with --batch-mtp, draft up to
                                        * this many tokens (1..ST_RUNNER_MAX_DRAFT); 0 = off */
    int32_t spec_draft;                /* (n-gram) set before load: DECODE sequences may carry
                                        * up to this many drafts made by the engine (not by
                                        * the runner's MTP layer), 0..ST_SPEC_MAX_DRAFT; a
                                        * runner sizes its step for them. 0 = none */
    int32_t ctx_checkpoints;           /* set before load (--ctx-checkpoints): recurrent
                                        * models keep up to this many state checkpoints per
                                        * slot (0..ST_RUNNER_MAX_CKPT; 0 = none) */
    bool    recurrent;                 /* set by load: the model keeps per-slot recurrent
                                        * state (qwen35moe's DeltaNet layers), valid only at
                                        * the end of what a slot has read: kv_truncate below
                                        * that goes back to the longest state checkpoint at or
                                        * below the cut, else empties the slot (but for a cut
                                        * into the last verify step, which the runner undoes),
                                        * and nothing is copied across slots; the engine keeps
                                        * what kv_keep says a cut would leave */
    int64_t state_tokens;              /* set by load: a slot's recurrent state in tokens of
                                        * KV memory (0 without), so the KV usage a busy slot
                                        * reports counts its state too */
};

static inline void st_runner_free(struct st_runner *r)
{
    if (r)
        r->ops->free(r);
}
static inline enum st_status st_runner_load(struct st_runner *r, const struct st_clock *clock,
                                            st_runner_progress_fn *progress, void *ctx,
                                            struct st_err *err)
{
    return r->ops->load(r, clock, progress, ctx, err);
}
static inline void st_runner_unload(struct st_runner *r) { r->ops->unload(r); }
static inline int32_t st_runner_n_vocab(const struct st_runner *r) { return r->ops->n_vocab(r); }
static inline int32_t st_runner_n_embd(const struct st_runner *r)
{
    return r->ops->n_embd ? r->ops->n_embd(r) : 0;
}
static inline enum st_status st_runner_tokenize(const struct st_runner *r, const char *text,
                                                size_t len, bool add_special, bool parse_special,
                                                int32_t **ids, size_t *n_ids, struct st_err *err)
{
    return r->ops->tokenize(r, text, len, add_special, parse_special, ids, n_ids, err);
}
static inline size_t st_runner_max_token_bytes(const struct st_runner *r)
{
    return r->ops->max_token_bytes ? r->ops->max_token_bytes(r) : 0;
}
static inline enum st_status st_runner_detokenize(const struct st_runner *r, const int32_t *ids,
                                                  size_t n_ids, char **text, struct st_err *err)
{
    return r->ops->detokenize(r, ids, n_ids, text, err);
}
static inline size_t st_runner_token_piece(const struct st_runner *r, int32_t token, char *buf,
                                           size_t cap)
{
    return r->ops->token_piece(r, token, buf, cap);
}
static inline bool st_runner_is_eog(const struct st_runner *r, int32_t token)
{
    return r->ops->is_eog(r, token);
}
static inline size_t st_runner_eog_ids(const struct st_runner *r, const int32_t **ids)
{
    return r->ops->eog_ids(r, ids);
}
static inline void st_runner_fim_ids(const struct st_runner *r, struct st_fim_ids *out)
{
    st_fim_ids_none(out);
    if (r->ops->fim_ids)
        r->ops->fim_ids(r, out);
}
static inline enum st_status st_runner_apply_template(const struct st_runner *r,
                                                      const struct st_chat_request *req,
                                                      enum st_chat_ending ending,
                                                      char **prompt, struct st_err *err)
{
    return r->ops->apply_template(r, req, ending, prompt, err);
}
static inline enum st_status st_runner_forward(struct st_runner *r,
                                               const struct st_runner_batch *batch,
                                               struct st_runner_out *out, struct st_err *err)
{
    return r->ops->forward(r, batch, out, err);
}
static inline void st_runner_kv_truncate(struct st_runner *r, int32_t slot, int64_t n_tokens)
{
    r->ops->kv_truncate(r, slot, n_tokens);
}
/* What st_runner_kv_truncate(r, slot, n) would leave (runner.h kv_keep). */
static inline int64_t st_runner_kv_keep(const struct st_runner *r, int32_t slot, int64_t n)
{
    return r->ops->kv_keep ? r->ops->kv_keep(r, slot, n) : n;
}
static inline int32_t st_runner_n_checkpoints(const struct st_runner *r, int32_t slot)
{
    return r && r->ops->n_checkpoints ? r->ops->n_checkpoints(r, slot) : 0;
}
static inline enum st_status st_runner_kv_copy(struct st_runner *r, int32_t src, int32_t dst,
                                               int64_t from, int64_t to, struct st_err *err)
{
    if (!r->ops->kv_copy)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "runner %s cannot copy KV", r->ops->name);
    return r->ops->kv_copy(r, src, dst, from, to, err);
}
static inline bool st_runner_can_save_slots(const struct st_runner *r)
{
    return r->ops->slot_save && r->ops->slot_restore;
}
static inline enum st_status st_runner_slot_save(struct st_runner *r, int32_t slot,
                                                 const int32_t *ids, int64_t n_tokens,
                                                 FILE *f, int64_t *n_bytes, struct st_err *err)
{
    if (!r->ops->slot_save)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "the %s runner cannot save slots",
                          r->ops->name);
    return r->ops->slot_save(r, slot, ids, n_tokens, f, n_bytes, err);
}
static inline enum st_status st_runner_slot_restore(struct st_runner *r, int32_t slot, FILE *f,
                                                    int32_t **ids, int64_t *n_tokens,
                                                    int64_t *n_bytes, struct st_err *err)
{
    if (!r->ops->slot_restore)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "the %s runner cannot restore slots",
                          r->ops->name);
    return r->ops->slot_restore(r, slot, f, ids, n_tokens, n_bytes, err);
}
static inline int32_t st_runner_mtp_max(const struct st_runner *r)
{
    return r->ops->mtp_max ? r->ops->mtp_max(r) : 0;
}
static inline enum st_status st_runner_mtp_draft(struct st_runner *r, struct st_runner_draft *d,
                                                 int32_t n, struct st_err *err)
{
    if (!r->ops->mtp_draft)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "runner %s has no MTP layer", r->ops->name);
    return r->ops->mtp_draft(r, d, n, err);
}

#endif /* STRATA_RUNNER_H */
