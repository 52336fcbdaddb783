/* runner_sim.h -- the simulated runner (runner_sim.c): a time model and
 * made-up tokens instead of a model (docs/SIM.md).
 */
#ifndef STRATA_RUNNER_SIM_H
#define STRATA_RUNNER_SIM_H

#include "runner/runner.h"

struct st_sim_config;

/* Token ids of the sim: 0 = end of generation; generated word k ("tokk")
 * = ST_SIM_GEN_BASE + k; any other prompt word hashes into 1..BASE-1.
 * Its fill-in-the-middle tokens (docs/SIM.md) are the six ids just below
 * the generated words: pre, suf, mid, pad, rep, sep = BASE-6 .. BASE-1. */
#define ST_SIM_EOG      0
#define ST_SIM_GEN_BASE (INT32_C(1) << 24)
#define ST_SIM_FIM_BASE (ST_SIM_GEN_BASE - 6)
/* Width of the sim's embeddings: a made-up, deterministic function of the
 * last prompt token and its position (docs/SIM.md). */
#define ST_SIM_EMBD 64

/* A runner with the time model of 'cfg' (copied) for n_slots slots of n_ctx
 * tokens. Returns owned; free with st_runner_free(). */
enum st_status st_runner_sim_new(const struct st_sim_config *cfg, int32_t n_slots, int64_t n_ctx,
                                 struct st_runner **out, struct st_err *err);

/* The sim's made-up embedding (before the engine's L2 normalization) of a
 * prompt whose last token is 'token' at position 'pos': ST_SIM_EMBD floats
 * into out. Pure; the tests' reference. */
void st_runner_sim_embd(int32_t token, int64_t pos, float *out);

/* Make every load of this sim runner fail (after its load time) with
 * ST_ERR_IO and 'reason' (copied): the sim's stand-in for a missing file,
 * a bad GGUF or no memory, for the multi-model tests (model path
 * "fail:REASON"). The text side keeps working. */
void st_runner_sim_fail_loads(struct st_runner *r, const char *reason);

/* Make this sim runner generate exactly 'text' (copied; replaces
 * cfg->reply): model path "reply:TEXT" (docs/SIM.md). ST_ERR_NOMEM. */
enum st_status st_runner_sim_set_reply(struct st_runner *r, const char *text,
                                       struct st_err *err);

#endif /* STRATA_RUNNER_SIM_H */
