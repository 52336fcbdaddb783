/* step.h -- the engine thread's work: one step (step.c), the model it has
 * loaded (swap.c), echo and prompt logprobs (prompt.c), embeddings
 * (embed.c). Private to src/engine; the types are pool.h's.
 *
 * Thread: the engine's own thread (or the test thread via
 * st_engine_pool_step).
 */
#ifndef STRATA_ENGINE_STEP_H
#define STRATA_ENGINE_STEP_H

#include "engine/pool.h"

/* step.c */
bool st_engine_step(struct st_engine *e);

/* prompt.c (engine thread): echo and prompt logprobs, docs/API.md
 * "Scoring prompts". A request with params.echo or prompt_logprobs gets
 * every prompt position once, in order, in PROMPT events (at most
 * ST_ENGINE_PTOK_BATCH tokens each) as its chunks are read. */
#define ST_ENGINE_PTOK_BATCH 16
/* A request that wants them enters slot 'sl': the scratch exists (allocated
 * on first use; ST_ERR_NOMEM) and reporting starts at position 0. */
enum st_status st_engine_prompt_start(struct st_engine *e, struct st_engine_slot *sl);
/* The READ q of sl's request is built: with prompt logprobs it is cut to
 * ST_RUNNER_SCORE_ROWS rows and scored (its 'sample' follows the cut). */
void st_engine_prompt_score(struct st_engine *e, const struct st_engine_slot *sl,
                            struct st_runner_seq *q);
/* After the forward of READ q (sl->n_past already past it): emit the
 * prompt positions it completes (their text, and their scores when q was
 * scored). Called before the chunk's first token is taken. */
void st_engine_prompt_emit(struct st_engine *e, struct st_engine_slot *sl,
                           const struct st_runner_seq *q);
/* Frees the scratch (engine teardown). */
void st_engine_prompt_fini(struct st_engine *e);
/* params.progress (return_progress): a PROGRESS event with the prompt
 * tokens in sl's KV (sl->n_past): called as the first chunk is built (the
 * cached prefix, nothing read yet) and after each chunk's forward. One
 * event per chunk: nothing slows the read. */
void st_engine_prompt_progress(struct st_engine_slot *sl);

/* embed.c (engine thread): embedding requests (params.embed, docs/ENGINE.md
 * "Embeddings"). The request's last READ chunk samples as any prompt does;
 * its seq asks the runner for the hidden row (runner.h 'embd'), and
 * instead of taking a token the request ends with EMBED + END. */
/* A request with params.embed enters slot 'sl': the scratch fits the
 * loaded runner's width. ST_ERR_UNSUPPORTED (a runner that cannot embed),
 * ST_ERR_NOMEM; the caller ends the request. */
enum st_status st_engine_embed_start(struct st_engine *e, struct st_engine_slot *sl,
                                     struct st_err *err);
/* The READ q of sl's request is built: its sampling chunk gets 'embd'. */
void st_engine_embed_seq(struct st_engine *e, const struct st_engine_slot *sl,
                         struct st_runner_seq *q);
/* After the forward of that chunk: normalize, emit EMBED, end the request
 * (STOP, completed). */
void st_engine_embed_finish(struct st_engine *e, struct st_engine_slot *sl, int64_t t_end);
/* Frees the scratch (engine teardown). */
void st_engine_embed_fini(struct st_engine *e);

/* swap.c (engine thread) */
/* Load the start-up model (first preload model it may serve); sets
 * started_up. Returns true when it loaded something (or tried). */
bool st_engine_start_up(struct st_engine *e);
/* The scheduler gave 'req' (job->swapped) to this engine: unload, load
 * req's model. False when the load failed: 'req' has been ended. */
bool st_engine_swap(struct st_engine *e, struct st_request *req);
/* Unload the model when the engine has been idle for the model's ttl.
 * Returns true when it unloaded. */
bool st_engine_ttl_check(struct st_engine *e);
/* Next clock time a ttl or back-off needs the engine; INT64_MAX none. */
int64_t st_engine_next_deadline(struct st_engine *e);
/* Unload whatever is loaded (shutdown; not counted). */
void st_engine_unload_quiet(struct st_engine *e);

/* slot_op.c: run the queued POST /slots actions (engine thread, between
 * steps); fail those still queued when the thread ends. */
void st_engine_slot_ops_run(struct st_engine *e);
void st_engine_slot_ops_fail(struct st_engine *e);

#endif /* STRATA_ENGINE_STEP_H */
