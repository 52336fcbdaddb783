/* mtp_internal.h -- the MTP object of include/strata/mtp.h, shared by
 * mtp_load.c (building and freeing it) and mtp.c (the upkeep and draft
 * passes).
 *
 * Shapes in the backend's notation ([a, b] = b rows of a elements):
 * E = n_embd, V = vocab, S = n_slots, R = the model's max_rows, C = n_ctx,
 * Hkv*D = one KV row.
 */
#ifndef STRATA_MODEL_MTP_INTERNAL_H
#define STRATA_MODEL_MTP_INTERNAL_H

#include "forward_internal.h"
#include "strata/mtp.h"

struct st_mtp {
    struct st_model *m;              /* borrowed: loaded, outlives this object */
    int32_t          max_draft;
    int64_t          E, V, S, R;

    /* the nextn block (layer n_layer of the file), wrapped in place */
    struct st_fwd_layer w;           /* its decoder layer */
    struct st_tensor eh_proj;        /* any [2E, E]: input [enorm(emb); hnorm(h)] */
    struct st_tensor enorm, hnorm;   /* f32 [E] */
    struct st_tensor own_embed;      /* any [E, V] nextn.embed_tokens, or empty */
    struct st_tensor own_head;       /* any [E, V] nextn.shared_head_head, or empty */
    struct st_tensor own_head_norm;  /* f32 [E] nextn.shared_head_norm, or empty */
    const struct st_tensor *embed;   /* own_embed or the model's token_embd */
    const struct st_tensor *head;    /* own_head, or the model's output (token_embd tied) */
    const struct st_tensor *head_norm; /* own_head_norm or output_norm */

    struct st_tensor kcache, vcache; /* f16 [Hkv*D, C, S, 1] */

    /* hbuf rows: [0, S) the carried main state of each slot, S a row of
     * zeros (never written: the h of position 0), [S+1, S+1+R) the main
     * state (after output_norm) of the rows of the last upkeep chunk,
     * [S+1+R, S+1+R+S*K) the stash (mtp_catch.c): K rows per slot. */
    struct st_tensor hbuf;           /* f32 [E, S + 1 + R + S*K] */
    struct st_tensor dbuf;           /* f32 [E, S] block output after head_norm, per draft row */
    struct st_tensor esrc;           /* f32 [E, 2R]: rows [0,n) enorm(emb), [n,2n) hnorm(h) */
    struct st_tensor cat;            /* f32 [2E, R]: the eh_proj input, interleaved from esrc */
    struct st_tensor ids, pos, slot; /* i32 [1, R] */
    struct st_tensor hidx;           /* i32 [1, R]: the h row of each row */
    struct st_tensor cidx;           /* i32 [1, 2R]: 0, n, 1, n+1, ... (the interleave) */
    struct st_tensor logits;         /* f32 [V, S] draft logits */
    float           *logits_host;    /* owned: float [S][V] */
    int32_t         *i32_host;       /* owned: int32 [2R] upload scratch */

    int64_t         *carry_pos;      /* owned [S]: position of hbuf row s; -1 none */
    int32_t         *chunk_slot;     /* owned [R]: slot of each row of the last upkeep chunk */
    int64_t         *chunk_pos;      /* owned [R]: position of each row of the last chunk */
    int64_t          chunk_n;        /* rows of the last chunk (drafts leave it alone) */
    int32_t         *hrow_host;      /* owned [R]: the h row of each row of a pass */
    /* draft scratch, one entry per request or per row of a draft step: owned [S] */
    int32_t         *dtok, *dslot, *drow, *dwant, *mark;
    int64_t         *dpos;

    /* The stash (mtp_catch.c): slot s keeps the main states (after
     * output_norm) and tokens of positions [stash_lo[s], stash_hi[s]) that
     * forwards without the upkeep computed and no upkeep has covered since
     * (at most K, the latest; -1/-1: none). Position p sits at hbuf row
     * S+1+R + s*K + p%K and stash_tok[s*K + p%K]. */
    int64_t          K;              /* ST_MTP_KEEP */
    int64_t         *stash_lo, *stash_hi;   /* owned [S] */
    int32_t         *stash_tok;      /* owned [S*K] */
    int32_t         *ctok, *cslot;   /* owned [R]: the rows of one catch-up pass */
    int64_t         *cpos;           /* owned [R] */
    uint64_t         caught;         /* rows caught up so far */

    size_t kv_bytes, act_bytes;
};

/* (mtp_rows.c) Run the MTP block over n rows (n <= R), in two halves so that a graph
 * bracket (docs/CUDA.md) can sit between them: st_mtp_rows_write uploads
 * every row integer of the pass (tokens/slots/pos as in a model batch, h
 * row i = row hrows[i] of the h table), st_mtp_rows_ops runs the ops with
 * 'htable' (hbuf or dbuf). Writes the MTP KV cache at (slot, pos) of every
 * row; the block output is left in the model's act.x rows [0, n), unless
 * kv_only: then only the cache is written (the upkeep) and act.x holds the
 * block's input. */
ST_MUST_CHECK
enum st_status st_mtp_rows_write(struct st_mtp *t, int64_t n, const int32_t *tokens,
                                 const int32_t *slots, const int64_t *pos,
                                 const int32_t *hrows, struct st_err *err);
ST_MUST_CHECK
enum st_status st_mtp_rows_ops(struct st_mtp *t, int64_t n, const struct st_tensor *htable,
                               bool kv_only, struct st_err *err);

/* ---- the stash and the catch-up (mtp_catch.c) ----------------------------- */

/* Before a pass whose first row of slot slots[i] is at position next[i]
 * (n pairs, slots distinct): every such slot whose stash ends at next[i]
 * and that carries no state for next[i] - 1 gets its skipped positions
 * written to the MTP cache (one kv-only pass over all of them, in chunks
 * of R rows) and carries the stashed state of next[i] - 1. Uses act.x and
 * hrow_host: call it before the pass's own writes. */
ST_MUST_CHECK
enum st_status st_mtp_catch_up(struct st_mtp *t, const int32_t *slots, const int64_t *next,
                               int32_t n, struct st_err *err);
/* Slot s's stash keeps positions below p only (p <= 0: nothing). */
void st_mtp_stash_cut(struct st_mtp *t, int32_t s, int64_t p);

#endif /* STRATA_MODEL_MTP_INTERNAL_H */
