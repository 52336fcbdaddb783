/* runner/batch.h -- what one forward call of a runner (runner.h) takes and
 * gives back: the batch of sequences (a READ chunk, the DECODE rows with
 * their drafts, scoring and embedding requests), the rows out, and the MTP
 * draft request.
 */
#ifndef STRATA_RUNNER_BATCH_H
#define STRATA_RUNNER_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/draw.h"
#include "runner/score.h"

enum st_runner_seq_kind {
    ST_SEQ_READ,     /* a chunk of the lines holder's prompt (<= ubatch tokens) */
    ST_SEQ_DECODE,   /* one token of a decoding slot (with MTP: + its drafts) */
};

#define ST_RUNNER_MAX_CKPT 64   /* state checkpoints per slot, at most (--ctx-checkpoints) */
#define ST_RUNNER_MAX_DRAFT 4   /* MTP draft tokens per slot and step, at most (--mtp-draft) */

#define ST_SPEC_MAX_DRAFT 16    /* drafts one DECODE may carry from any source, at most
                                 * (n-gram: --spec-draft; MTP: <= ST_RUNNER_MAX_DRAFT) */

/* One sequence of a batch: consecutive tokens of one slot. */
struct st_runner_seq {
    enum st_runner_seq_kind kind;
    int32_t        slot;         /* 0..n_slots-1 */
    const int32_t *tokens;       /* borrowed for the call; n_tokens ids */
    int64_t        n_tokens;     /* READ: 1..ubatch; DECODE: 1, or 1 + drafts (all_logits) */
    int64_t        pos;          /* position of tokens[0] = tokens already in the slot's KV */
    bool           sample;       /* a next token is wanted after the last row */
    bool           ignore_eos;   /* sim: keep emitting words past its completion length */
    int64_t        n_generated;  /* completion tokens of the request so far */
    bool           all_logits;   /* (MTP) a DECODE verifying drafts: tokens = [last sampled,
                                  * d_1 .. d_k]; logits wanted at every row (with 'sample') */
    bool           backend_draw; /* the next token needs only the chain of strata/draw.h
                                  * (st_sampler_backend_draw): the runner may draw it on
                                  * the backend by 'draw' and return it as 'token' with
                                  * logits NULL */
    struct st_draw draw;
    /* READ scoring (prompt logprobs): row j scores the prompt token after it,
     * tokens[j + 1], the last row 'score_next'; n_tokens <= ST_RUNNER_SCORE_ROWS.
     * Filled right after the forward; the logits are not kept. */
    bool           score;
    int32_t        score_next;   /* the prompt token after the chunk; -1: the chunk ends the
                                  * prompt and its last row scores nothing */
    int32_t        score_top;    /* alternatives per row, 0..ST_RUNNER_SCORE_TOP */
    struct st_runner_score *scores;   /* caller-owned [n_tokens]: row j -> scores[j] */
    /* Embedding (a READ with 'sample' whose request has params.embed): the
     * final hidden state of the chunk's last row after output_norm (the
     * vector the head sees; not normalized further) is written here,
     * caller-owned [st_runner_n_embd]. The row's logits are computed as for
     * any sampling row and may be ignored. NULL: none. */
    float         *embd;
    /* (MTP) the engine drafts nothing from this DECODE's state (drafting does
     * not pay now, docs/ENGINE.md "Draft length: cost-aware"). When every seq
     * of a batch says so, a runner with an MTP layer may skip its upkeep for
     * that forward: its MTP cache then misses those positions (zeros or
     * older rows there: the drafts made later attend to them, the output
     * never does) and the slots carry no state, so they draft nothing until
     * a forward with the upkeep. */
    bool           no_mtp_upkeep;
};

/* At most one READ sequence, then the DECODE sequences. */
struct st_runner_batch {
    const struct st_runner_seq *seqs;   /* borrowed; n_seqs of them */
    int32_t n_seqs;
};

/* What a sequence with 'sample' set gives back. */
struct st_runner_row {
    const float *logits;   /* float[n_vocab], runner-owned, valid until the next forward;
                            * NULL: 'token' is forced (the sim runner) or was drawn on
                            * the backend (backend_draw). With the seq's
                            * all_logits: n_tokens rows, row j at logits + j * n_vocab */
    int32_t      token;    /* the forced token when logits == NULL */
    bool         drawn;    /* 'token' was drawn on the backend (backend_draw), not forced */
};

struct st_runner_out {
    struct st_runner_row *rows;   /* caller-owned, one per seq (rows[i] for seqs[i]) */
    int64_t busy_ns;              /* simulated device time of this step, ns (sim); 0 for a
                                   * real runner, whose forward takes the time itself */
};

/* (MTP) One slot's draft request: the runner's MTP layer chains greedy
 * drafts from the slot's last sampled token (include/strata/mtp.h). */
struct st_runner_draft {
    int32_t  slot;
    int32_t  token;      /* the last sampled token, fed next at 'pos' */
    int64_t  pos;        /* = tokens in the slot's KV */
    int32_t  n_draft;    /* in: wanted (<= mtp_max); out: made (0 when the runner has no
                          * state for the slot yet) */
    int32_t *out;        /* caller's [n_draft]: d_1 .. */
};

#endif /* STRATA_RUNNER_BATCH_H */
