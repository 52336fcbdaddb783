/* gen/gen_vocab.h -- what a request asks of its model's vocabulary and
 * chat template before it is submitted (gen_vocab.c), and the server's
 * sampling defaults (gen_submit.c). gen_submit.c, gen_fim.c and
 * llama/h_completion.c use it. MHD thread, no lock held.
 */
#ifndef STRATA_SERVER_GEN_GEN_VOCAB_H
#define STRATA_SERVER_GEN_GEN_VOCAB_H

#include "server/gen/gen.h"

/* logit_bias ids must be tokens of the model: a 400 naming logit_bias
 * otherwise, as OpenAI. */
enum st_status st_gen_check_bias(struct st_call *c, const struct st_oai_request *oq,
                                 int32_t model, struct st_api_error *e);
/* llama-server's text-keyed logit_bias (oq->bias_text): every token of
 * each text gets its bias, added to oq->params.logit_bias (a 400 past
 * ST_MAX_LOGIT_BIAS tokens). */
enum st_status st_gen_bias_text(struct st_call *c, struct st_oai_request *oq, int32_t model,
                                struct st_api_error *e);
/* The server's --temp and --seed into a request that sent no temperature /
 * seed (st_gen_start does it; idempotent, for a caller that shows the
 * settings first). */
void st_gen_server_defaults(const struct st_call *c, struct st_oai_request *oq);
/* llama-server's mixed prompts (oq->prompts[i].mixed): each string
 * tokenized (special tokens parsed; BOS only when the sequence starts with
 * a string, as a text prompt gets it) between the ids, into the prompt's
 * tokens. */
enum st_status st_gen_mixed_prompts(struct st_call *c, struct st_oai_request *oq, int32_t model,
                                    struct st_api_error *e);
/* The think tags the model has as tokens (struct st_gen think_vocab). */
uint8_t st_gen_think_vocab(struct st_call *c, int32_t model);
/* Whether the model's template writes a think block (judged for ChatML
 * templates only; true otherwise). */
bool st_gen_template_thinks(struct st_call *c, int32_t model);

#endif /* STRATA_SERVER_GEN_GEN_VOCAB_H */
