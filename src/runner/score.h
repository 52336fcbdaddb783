/* score.h -- prompt scoring in the runner interface: what one scored row
 * says, its bounds, and the host helpers of score.c. Included by
 * runner.h.
 */
#ifndef STRATA_RUNNER_SCORE_H
#define STRATA_RUNNER_SCORE_H

#include <stdint.h>

/* Prompt scoring (a request with prompt logprobs, docs/API.md "Scoring
 * prompts"): a READ with 'score' needs the logits of every row, so such a
 * chunk has at most ST_RUNNER_SCORE_ROWS rows (the engine cuts it there):
 * the runner holds that many rows of logits at once, never the prompt's. */
#define ST_RUNNER_SCORE_ROWS 64
#define ST_RUNNER_SCORE_TOP  20   /* alternatives per scored row, at most */

/* What one scored row says about the prompt token that follows it. */
struct st_runner_score {
    float   logprob;                        /* log-softmax of the raw logits at that token */
    int32_t rank;                           /* 1 + tokens with a strictly higher logit */
    int32_t n_top;                          /* the seq's score_top (at most n_vocab) */
    int32_t top_id[ST_RUNNER_SCORE_TOP];    /* most likely first; ties: the lower id */
    float   top_lp[ST_RUNNER_SCORE_TOP];
};

/* score.c: score one row of logits[n_vocab] for token 'next' (0 <= next <
 * n_vocab) with n_top (<= ST_RUNNER_SCORE_TOP) alternatives: the log-softmax
 * as the sampler computes generated tokens' logprobs, so a prompt token
 * scores what the same token would show when generated there. O(n_vocab).
 * The host form of the backend's score op (st_score_row, backend.h). */
void st_runner_score_row(const float *logits, int32_t n_vocab, int32_t next, int32_t n_top,
                         struct st_runner_score *out);
/* One row of st_backend_score's output (vals[1 + k], ids[1 + k]) as *out. */
void st_runner_score_from(const float *vals, const int32_t *ids, int32_t k,
                          struct st_runner_score *out);

#endif /* STRATA_RUNNER_SCORE_H */
