/* score.c -- one row of logits on the host -> what it says about the
 * prompt token that follows it (prompt logprobs, docs/API.md "Scoring
 * prompts"), in the runner's struct.
 *
 * The arithmetic (and its SIMD) lives in the backend: st_score_row
 * (include/strata/backend.h), the row function of the CPU backend's score
 * op. The model runner scores on the backend (st_model_forward_score) and
 * uses this only where the logits are already on the host (a step with an
 * MTP layer, whose forward has no score variant); the tests use it as the
 * reference for whole requests.
 *
 * Thread: any (pure).
 */
#include "runner/runner.h"
#include "strata/backend.h"

_Static_assert(ST_RUNNER_SCORE_TOP <= ST_SCORE_MAX_TOP, "the backend scores every alternative");

void st_runner_score_row(const float *logits, int32_t n_vocab, int32_t next, int32_t n_top,
                         struct st_runner_score *out)
{
    float vals[1 + ST_RUNNER_SCORE_TOP];
    int32_t ids[1 + ST_RUNNER_SCORE_TOP];
    int32_t k = n_top < 0 ? 0 : n_top > ST_RUNNER_SCORE_TOP ? ST_RUNNER_SCORE_TOP : n_top;
    k = k > n_vocab ? n_vocab : k;
    st_score_row(logits, n_vocab, next, k, vals, ids);
    st_runner_score_from(vals, ids, k, out);
}

void st_runner_score_from(const float *vals, const int32_t *ids, int32_t k,
                          struct st_runner_score *out)
{
    out->logprob = vals[0];
    out->rank = ids[0];
    out->n_top = k;
    for (int32_t i = 0; i < k; i++) {
        out->top_id[i] = ids[1 + i];
        out->top_lp[i] = vals[1 + i];
    }
}
