/* mtp.h -- multi-token prediction with a model's own MTP ("nextn") block
 * (docs/design/ENGINE.md section 4), on top of a loaded struct st_model.
 *
 * The MTP block is one more decoder layer (attention + MoE, same type as
 * the main layers) with its own KV cache, fed at position p with the
 * token t_p and the main model's final hidden state h_{p-1} (after
 * output_norm, the vector the LM head sees):
 *
 *   u    = eh_proj . [ rmsnorm(embed(t_p)) * enorm ; rmsnorm(h_{p-1}) * hnorm ]
 *          (embedding first, hidden second: the order in the weights)
 *   h'   = block(u) at position p, on the MTP KV cache
 *   hn'  = rmsnorm(h') * head_norm            (fallback output_norm)
 *   logits for t_{p+1} = head . hn'           (fallback output / token_embd)
 *
 * Two passes use it:
 *   st_mtp_forward  the main forward plus the MTP "upkeep" over the same
 *                   rows (prompt reads included): row k of a slot gets
 *                   h of the row before it (or the state carried from the
 *                   slot's previous forward), so the MTP cache stays in
 *                   step with the main one;
 *   st_mtp_draft    from a slot's last sampled token t_n at position n and
 *                   h_{n-1}, chain the block greedily: step i feeds
 *                   (d_i, the block's own hn' of step i-1) at n+i.
 *
 * Carried state. For every slot the object keeps the main model's hidden
 * state at the slot's last position (the "carry"). After a forward it is
 * the state of the slot's last row; st_mtp_truncate moves it back to the
 * position before the cut when the last forward computed that position
 * (the rollback of rejected drafts), else forgets it: the next row then
 * sees a zero hidden state (harmless for the output, which the main model
 * alone decides; only that one MTP cache row is off) and the slot drafts
 * nothing until a forward has set it again (or a catch-up, below).
 *
 * Catch-up. A forward without the upkeep (st_mtp_skipped) keeps, per
 * slot, the main state and token of its positions: up to ST_MTP_KEEP
 * consecutive ones, the latest. The slot's next st_mtp_draft or
 * st_mtp_forward at the position after them first writes their MTP cache
 * rows exactly as the upkeep would have (one kv-only pass of the block for
 * every such slot together) and carries the kept state of the last one, so
 * the slot drafts at once, from a cache as if no upkeep had been skipped.
 * Of a longer stretch the rows before the kept ones (and the first kept
 * one) stay as they were: stale rows the drafts attend to, never the
 * output. A cut (st_mtp_truncate) or copy (st_mtp_kv_copy) drops the kept
 * positions it rewrites.
 *
 * Ownership: st_mtp_new returns an owned object that borrows the loaded
 * model (its backend, weights and activation buffers): free it with
 * st_mtp_free before st_model_unload / st_model_free.
 *
 * Threads: the model's thread (the engine thread), like st_model_forward.
 */
#ifndef STRATA_MTP_H
#define STRATA_MTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/err.h"
#include "strata/forward.h"

#define ST_MTP_MAX_DRAFT 4   /* --mtp-draft upper bound */
/* Positions per slot whose main state is kept from forwards without the
 * upkeep, for the catch-up (see "Catch-up"): n_slots x 64 x n_embd f32 on
 * the backend (128 KiB per slot at n_embd 512, 1.75 MiB at 7168). */
#define ST_MTP_KEEP 64

struct st_mtp;   /* opaque */

/* True when the model's file has an MTP block strata can run (n_nextn > 0
 * and a NEOX-rope architecture). Any thread once the model is open. */
bool st_mtp_available(const struct st_model *m);

/* Bind the first nextn block of loaded model m (weights used in place),
 * allocate its F16 KV cache (n_slots x n_ctx, like one main layer) and
 * buffers for drafts of up to max_draft tokens (1..ST_MTP_MAX_DRAFT).
 * ST_ERR_UNSUPPORTED when !st_mtp_available(m) (message says why),
 * ST_ERR_LOADING when m is not loaded, ST_ERR_INVALID for max_draft,
 * ST_ERR_NOMEM / ST_ERR_DEVICE_OOM. *out is owned (st_mtp_free). */
ST_MUST_CHECK
enum st_status st_mtp_new(struct st_model *m, int32_t max_draft, struct st_mtp **out,
                          struct st_err *err);

/* NULL is a no-op. Must run before the model is unloaded. */
void st_mtp_free(struct st_mtp *t);

/* st_model_forward (same rules, same logits) followed, chunk by chunk, by
 * the MTP upkeep over every row of the batch. */
ST_MUST_CHECK
enum st_status st_mtp_forward(struct st_mtp *t, const struct st_model_batch *b,
                              const float **logits, struct st_err *err);

/* Slot 'slot' keeps only its first n_tokens positions (both caches): move
 * the carried state to position n_tokens - 1 (see "Carried state"). */
void st_mtp_truncate(struct st_mtp *t, int32_t slot, int64_t n_tokens);
/* (kv_lazy, kv_trim.c) Give back the memory of positions [from, to) of
 * slot's MTP cache, as st_model_kv_discard does for the main one. */
size_t st_mtp_kv_discard(struct st_mtp *t, int32_t slot, int64_t from, int64_t to);

/* The main model ran b alone (st_model_forward or st_model_forward_draw,
 * the runner skipped the upkeep, runner.h no_mtp_upkeep): call it right
 * after that forward succeeded, before any other forward. The MTP cache
 * misses b's positions, so each slot of b forgets its carry and the last
 * upkeep's rows at or after the first position b wrote for it (they were
 * for the tokens there before), and keeps the main state and token of
 * each of b's logit rows for the catch-up (see "Catch-up"). */
void st_mtp_skipped(struct st_mtp *t, const struct st_model_batch *b);

/* Rows the catch-up has written so far (see "Catch-up"). */
uint64_t st_mtp_caught(const struct st_mtp *t);

/* st_model_kv_copy for the MTP layer's cache: positions [from, to) of
 * slot dst become slot src's, and dst carries src's state at to - 1 when
 * this object still has it (src's carry, or a row of the last forward),
 * else none (see "Carried state"). Same arguments and errors. */
ST_MUST_CHECK
enum st_status st_mtp_kv_copy(struct st_mtp *t, int32_t src, int32_t dst, int64_t from,
                              int64_t to, struct st_err *err);

/* One slot's draft request. 'token' is the last sampled token, to be fed
 * at 'pos' (= the slot's cache length, > 0 after a prompt read). */
struct st_mtp_draft {
    int32_t  slot;
    int32_t  token;
    int64_t  pos;
    int32_t  n_draft;   /* in: wanted (0..max_draft, pos + n_draft <= n_ctx);
                         * out: made (0 when the slot has no carried state) */
    int32_t *out;       /* caller's [n_draft]: greedy draft tokens d_1 .. */
    float   *logits;    /* NULL, or caller's [n_draft][n_vocab]: the MTP logits of each step */
};

/* Draft for n slots together (one batched MTP step per draft position;
 * slots drop out as their n_draft is reached), after catching up every
 * drafting slot that needs it (see "Catch-up"). Writes the MTP cache at
 * pos .. pos+n_draft-1 of each slot; the next st_mtp_forward over those
 * positions rewrites them. ST_ERR_INVALID for a bad request (message
 * names it), or what the backend reports. */
ST_MUST_CHECK
enum st_status st_mtp_draft(struct st_mtp *t, struct st_mtp_draft *d, int32_t n,
                            struct st_err *err);

/* Bytes of the MTP KV cache and of its buffers. */
size_t st_mtp_kv_bytes(const struct st_mtp *t);
size_t st_mtp_act_bytes(const struct st_mtp *t);

#endif /* STRATA_MTP_H */
