/* gen/llama_json.h -- answers in llama-server's native /completion shape
 * (POST /completion, /infill; llama_json.c, docs/API.md "/completion"),
 * for their shape (llama/llama_shape.c) and chat's "__verbose". All run under
 * the call's lock.
 */
#ifndef STRATA_SERVER_GEN_LLAMA_JSON_H
#define STRATA_SERVER_GEN_LLAMA_JSON_H

#include "server/gen/gen.h"

/* A stream object for one token: {"index":i,"content":...,"tokens":[id],
 * "stop":false,...} with its completion_probabilities when asked. ev NULL:
 * text released at the end with no new token ("tokens":[]). */
ST_MUST_CHECK
enum st_status st_llama_chunk(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, const char *text, size_t len,
                              const struct st_event *ev);
/* A stream object while the prompt is read (return_progress): no text,
 * its "timings" (timings_per_token) and "prompt_progress". */
ST_MUST_CHECK
enum st_status st_llama_progress(struct st_buf *o, const struct st_gen *g,
                                 const struct st_gen_choice *ch, const struct st_gen_progress *p);
/* llama-server's stream extras added to the JSON object in o (its closing
 * brace replaced): "timings" when g->llama.timings_per_token (p NULL: the
 * generation's so far; else the prompt read's) and "prompt_progress" when
 * p is set; nothing else to add: o unchanged. */
ST_MUST_CHECK
enum st_status st_llama_extras(struct st_buf *o, const struct st_gen *g,
                               const struct st_gen_choice *ch, const struct st_gen_progress *p);
/* The same members onto o (each with its leading comma): for events
 * whose body is a member list (responses/responses_reply.c). */
struct st_out;
void st_llama_extra_members(struct st_out *o, const struct st_gen *g,
                            const struct st_gen_choice *ch, const struct st_gen_progress *p);
/* Non-stream: keep a new token's id and probabilities for the body. */
ST_MUST_CHECK
enum st_status st_llama_keep(const struct st_gen *g, struct st_gen_choice *ch,
                             const struct st_event *ev);
/* The last object of a stream (content "", stop true) or one choice's
 * whole result (its text as content). */
ST_MUST_CHECK
enum st_status st_llama_final(struct st_buf *o, const struct st_gen *g,
                              const struct st_gen_choice *ch, bool stream);
/* llama-server's "__verbose" member added to the OpenAI-shaped body in o
 * (its closing brace replaced): choice 0's result as st_llama_final's,
 * with "prompt", the rendered prompt (g->verbose_prompt). */
ST_MUST_CHECK enum st_status st_llama_verbose(struct st_buf *o, const struct st_gen *g);
/* The non-stream body: one result, or an array of them in choice order
 * when the request had several prompts. */
ST_MUST_CHECK enum st_status st_llama_body(struct st_buf *o, const struct st_gen *g);

#endif /* STRATA_SERVER_GEN_LLAMA_JSON_H */
