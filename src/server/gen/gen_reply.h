/* gen/gen_reply.h -- chat replies parsed into reasoning, content and tool
 * calls (gen_reply.c, docs/API.md), and the grammars and think blocks
 * that constrain them. gen.h includes it; gen_submit.c and gen.c use it.
 */
#ifndef STRATA_SERVER_GEN_GEN_REPLY_H
#define STRATA_SERVER_GEN_GEN_REPLY_H

#include "server/gen/oai_response.h"
#include "strata/think_block.h"

struct st_call;
struct st_gen;
struct st_gen_choice;

struct st_gen_reply;
/* Give every choice its parser when the request is a chat whose reply is
 * to be parsed (tools given and tool_choice not "none", or reasoning_format
 * deepseek); 'prompt' is the rendered prompt (does it open <think>?).
 * ST_ERR_NOMEM. Before submit: no lock needed. */
enum st_status st_gen_reply_setup(struct st_gen *g, const struct st_oai_request *oq,
                                  enum st_reasoning_format server_default, const char *prompt);
/* tool_choice "required" or a named function: the call grammar that
 * constrains the reply (include/strata/call_grammar.h) for the format the
 * parser will read from this prompt; *out NULL when nothing is enforced
 * (another tool_choice, no tools, an unknown name, ...: as before, never
 * an error). One reference, the caller's.
 * ST_ERR_NOMEM. */
struct st_call_grammar;
enum st_status st_gen_reply_calls(const struct st_oai_request *oq,
                                  enum st_reasoning_format server_default, const char *prompt,
                                  uint8_t think_vocab, struct st_call_grammar **out);
/* response_format json_object / json_schema on a chat: the think block
 * the reply may start with before the document (p->json_think and
 * json_think_tags; docs/API.md "Reasoning before a constrained answer"),
 * by the rule tool_choice's grammar uses; none for completions, without
 * a JSON mode, or with reasoning_format "none". think_vocab: struct
 * st_gen's (an optional block only for a model that has its tags as
 * tokens: a model that never thinks must not wander into one). */
void st_gen_reply_json_think(const struct st_oai_request *oq,
                             enum st_reasoning_format server_default, const char *prompt,
                             uint8_t think_vocab, struct st_gen_params *p);
/* The thinking budget's think block (docs/API.md "Thinking budget"): how
 * the reply may open it (ST_THINK_NONE: it cannot, the budget is ignored)
 * and its spelling (*tags), by the rule above; 'constrained': the reply
 * has a response_format or enforced tool_choice, whose grammar allows a
 * block only with reasoning split out. */
enum st_think_mode st_gen_reply_budget_think(const struct st_oai_request *oq,
                                             enum st_reasoning_format server_default,
                                             const char *prompt, uint8_t think_vocab,
                                             bool constrained, enum st_think_tags *tags);
void st_gen_reply_free(struct st_gen_reply *r);
/* A token's visible text (c->lock held): stream -> chunks on g->out with
 * the token's logprobs (lp, NULL: none); else accumulated. */
void st_gen_reply_token(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch,
                        const char *text, size_t len, const struct st_oai_logprob *lp);
/* End of generation: flush what the parser held (c->lock held). */
void st_gen_reply_end(struct st_call *c, struct st_gen *g, struct st_gen_choice *ch);
/* "tool_calls" when the choice made calls and stopped normally, else
 * OpenAI's reason for ch->finish. */
const char *st_gen_reply_finish_reason(const struct st_gen_choice *ch);
/* The parsed parts of a finished non-stream choice into 'out'. */
void st_gen_reply_fill(const struct st_gen_choice *ch, struct st_oai_choice *out);

#endif /* STRATA_SERVER_GEN_GEN_REPLY_H */
