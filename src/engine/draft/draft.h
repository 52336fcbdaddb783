/* draft.h -- drafts: MTP and n-gram (mtp.c, ngram.c; their cost model in
 * spec_cost.h). Private to src/engine.
 *
 *   mtp.c      drafts (--batch-mtp, --spec ngram): the source and draft length per
 *              slot, the MTP draft call, the counters
 *   ngram.c    the n-gram (prompt-lookup) index of a slot's token history
 *   spec_cost.c what steps and draft calls cost, the draft lengths that pay
 *
 * Thread: the engine's own thread.
 */
#ifndef STRATA_ENGINE_DRAFT_H
#define STRATA_ENGINE_DRAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/runner.h"
#include "strata/err.h"

struct st_engine;
struct st_engine_pool;
struct st_engine_slot;

/* Where a slot's drafts come from (docs/ENGINE.md "N-gram drafts"). */
enum st_spec_src {
    ST_SPEC_MTP,     /* the runner's MTP layer (--batch-mtp) */
    ST_SPEC_NGRAM,   /* the slot's own history (--spec ngram) */
    ST_SPEC_SOURCES
};

/* One source's recent acceptance in one slot (mtp.c's policy). */
struct st_spec_est {
    double  hits, tries;         /* decayed accepted / verified draft positions */
    int32_t idle;                /* chances to draft not taken since the last probe */
    int32_t probe_every;         /* chances between probes while drafts do not pay */
    bool    probing;             /* this step's one draft is a probe */
};

/* A decoding slot's drafts and its recent acceptance, per source. */
struct st_mtp_slot {
    int32_t tokens[1 + ST_SPEC_MAX_DRAFT];   /* [last token, d_1 .. d_k]: the verify input */
    int32_t n_draft;             /* k for this step (0: a plain one-token decode) */
    enum st_spec_src src;        /* where this step's drafts came from */
    struct st_spec_est est[ST_SPEC_SOURCES];
    int64_t drafted, accepted;   /* the request's totals, both sources (activity record) */
    int32_t gap;                 /* positions decoded without the MTP upkeep since the last
                                  * step with it (at most ST_MTP_KEEP): the runner's MTP
                                  * layer catches them up on the next such step (step.c) */
};

/* The n-gram index of one slot (ngram.c): the most recent end position of
 * each n-gram of its history, n in [n_min, n_max]. Zero-initialised =
 * empty (drafts nothing); the table is kept across requests. */
#define ST_NGRAM_MAX_N 8
#define ST_NGRAM_MAX_BITS 20   /* table entries per n at most: 2^20 */
struct st_ngram {
    int32_t *table;       /* owned; (n_max - n_min + 1) << bits entries, per n an open-
                           * addressing table: end position + 1 of an n-gram, 0 = empty */
    size_t   cap;         /* entries allocated */
    size_t   fill[ST_NGRAM_MAX_N];   /* entries used, per n */
    int32_t  bits;        /* log2 of the entries per n */
    int32_t  n_min, n_max;
    int64_t  indexed;     /* the n-grams ending below this position are in the table */
};

/* A new history: size the table for n-grams of n_min..n_max tokens
 * (1 <= n_min <= n_max <= ST_NGRAM_MAX_N) and a context of n_ctx tokens
 * (entries per n: the power of two >= 2 * n_ctx, within 2^8 ..
 * 2^ST_NGRAM_MAX_BITS), and empty it. ST_ERR_INVALID (bad n), ST_ERR_NOMEM
 * (the caller then frees it: a zeroed index drafts nothing). */
enum st_status st_ngram_reset(struct st_ngram *g, int32_t n_min, int32_t n_max, int64_t n_ctx);
void st_ngram_fini(struct st_ngram *g);
/* hist[0..len): the history, which may only have grown at its end since
 * the last call (a shorter one restarts the index). Index the new
 * positions; find the most recent earlier occurrence of the last n tokens
 * for n = n_max down to n_min (the first n that has one wins); write the
 * 'max' tokens that follow it into out (past the history's end the copy
 * overlaps itself: a loop goes on around). Returns max, or 0 for no match;
 * *n_used (may be NULL) = the n matched, 0 for none. */
int32_t st_ngram_draft(struct st_ngram *g, const int32_t *hist, int64_t len, int32_t *out,
                       int32_t max, int32_t *n_used);

/* Test hook of a pool (tests only, set before the first step): draft the
 * full --mtp-draft every step (n-gram: the whole match, up to
 * --spec-draft, whenever there is one), and/or rewrite the drafts of
 * either source after they were made (force rejections). */
struct st_mtp_test {
    bool  fixed_length;
    void (*corrupt)(void *ctx, int32_t slot, int32_t *drafts, int32_t n);
    void *ctx;
    /* When set, the time (ns) the cost model learns instead of the clock's:
     * a decode step of 'rows' rows ('full': with the MTP upkeep), an MTP
     * draft call (spec_cost.c). */
    int64_t (*step_ns)(void *ctx, int32_t rows, bool full);
    int64_t (*draft_ns)(void *ctx, int32_t passes, int32_t slot_passes);
    /* When set and true, this step drafts nothing and skips the MTP upkeep
     * (a forced plain step; asked once per step with decoding slots). */
    bool (*force_plain)(void *ctx);
};

/* mtp.c (engine thread) */
/* A new request in the slot: no drafts, the prior acceptance estimates,
 * an empty n-gram index (when n-gram drafts are on). */
void st_engine_spec_reset(struct st_engine *e, struct st_engine_slot *sl);
/* Before the batch is built: every decoding slot that should draft gets
 * sl->mtp.n_draft drafts in sl->mtp.tokens[1..] and their source in
 * sl->mtp.src: n-gram drafts when its history has a match that pays, else
 * MTP drafts (one runner call for those slots); 0 when it should not, or
 * when MTP drafting failed (a warning, the step goes on without them). */
void st_engine_spec_draft(struct st_engine *e);
/* After a verify: 'drafted' drafts of source sl->mtp.src were checked,
 * 'accepted' kept: that source's estimate (the slot's own totals, which go
 * to the activity record, are counted by step.c as it goes). */
void st_engine_spec_learn(struct st_engine *e, struct st_engine_slot *sl, int32_t drafted,
                          int32_t accepted);
/* The pool's counters of source sl->mtp.src (/metrics): 'drafted' drafts
 * checked, 'accepted' kept, and a verify step when 'step'. step.c counts
 * as it goes, each before the token it lets out: a client that has its
 * reply finds its last step counted. */
void st_engine_spec_count(struct st_engine *e, const struct st_engine_slot *sl,
                          int32_t drafted, int32_t accepted, bool step);
/* After a model load: sets e->mtp_max and e->ngram_max; with --batch-mtp
 * says (WARN) when the model has no MTP layer. */
void st_engine_mtp_loaded(struct st_engine *e);
/* Install (a copy of) 'hook' on the pool; NULL removes it. Tests only. */
void st_engine_pool_mtp_test(struct st_engine_pool *p, const struct st_mtp_test *hook);

#endif /* STRATA_ENGINE_DRAFT_H */
