/* llama/llama.h -- llama-server's endpoints: POST /completion
 * (h_completion.c), GET /props (llama_props.c), POST /infill (h_infill.c;
 * their answers are gen/llama_json.c's, its FIM prompt gen/gen_fim.c's) and
 * POST /tokenize, /detokenize, /apply-template (h_text.c, bodies parsed by
 * oai_text.c), POST /slots/{id}?action= (h_slots.c).
 */
#ifndef STRATA_SERVER_LLAMA_LLAMA_H
#define STRATA_SERVER_LLAMA_LLAMA_H

#include "server/openai/oai.h"

#define ST_INFILL_MAX_EXTRA 1024 /* /infill input_extra chunks at most */

/* ---- POST /infill bodies (h_infill.c) ---- */

/* llama-server's infill fields; everything else of the body is in the
 * st_oai_request parsed beside it. All owned. */
struct st_infill_body {
    char   *input_prefix, *input_suffix, *prompt;   /* NULL: absent ("") */
    char   *repo_name, *filename;                   /* strata's: NULL = llama-server's */
    struct st_infill_chunk *extra;                  /* input_extra; texts owned */
    size_t  n_extra;
};
void st_infill_body_fini(struct st_infill_body *b);
/* Parse an /infill body: the common generation fields (st_oai_parse_common,
 * plus n_predict) into *oq, the infill fields into *b. 400s name the field.
 * On failure both are left empty (fini still safe). */
ST_MUST_CHECK
enum st_status st_infill_parse(const char *body, size_t len, struct st_oai_request *oq,
                               struct st_infill_body *b, struct st_api_error *e);

/* The llama-server style endpoints' bodies (h_text.c). Owned strings;
 * release with st_oai_text_request_fini(). */
struct st_oai_text_request {
    char    *model;            /* owned or NULL */
    char    *content;          /* /tokenize: owned */
    bool     add_special;      /* /tokenize: default false */
    bool     parse_special;    /* /tokenize: default true */
    bool     with_pieces;      /* /tokenize: default false */
    int32_t *tokens;           /* /detokenize: owned */
    size_t   n_tokens;
    struct st_chat_request chat;  /* /apply-template: normalised messages, tools,
                                   * kwargs; owned */
    bool     add_generation_prompt; /* /apply-template: default true */
};

enum st_oai_text_kind {
    ST_OAI_TOKENIZE,
    ST_OAI_DETOKENIZE,
    ST_OAI_APPLY_TEMPLATE,
};

void st_oai_text_request_fini(struct st_oai_text_request *r);
ST_MUST_CHECK
enum st_status st_oai_parse_text(enum st_oai_text_kind kind, const char *body, size_t len,
                                 struct st_oai_text_request *r, struct st_api_error *e);

/* ---- POST /completion bodies (completion_request.c) ---- */
/* Parse a /completion body into *oq: /v1/completions' fields plus
 * n_predict, n_probs, return_tokens, post_sampling_probs, n_cmpl, id_slot;
 * oq->llama.on (st_llama_settings then makes its generation_settings, once
 * the server's defaults are in). 400s name the field; on failure *oq is
 * left empty (fini still safe). */
ST_MUST_CHECK
enum st_status st_llama_completion_parse(const char *body, size_t len,
                                         struct st_oai_request *oq, struct st_api_error *e);
/* oq->llama.settings: the generation_settings object of oq's parameters;
 * with ignore_eos the model's end-of-generation ids eog[n_eog] are listed
 * in its logit_bias at -inf (null), as llama-server lists them. */
ST_MUST_CHECK enum st_status st_llama_settings(struct st_oai_request *oq, const int32_t *eog,
                                               size_t n_eog, struct st_api_error *e);

/* The generation_settings object of params p onto o (also /props'); eog:
 * the ids shown at -inf (ignore_eos), NULL for none. */
struct st_out;
void st_llama_settings_json(struct st_out *o, const struct st_gen_params *p,
                            const int32_t *eog, size_t n_eog, bool stream, int32_t n_probs,
                            bool post_sampling, bool cache_prompt);

/* Their answers, in llama-server's shape (llama_shape.c). */
extern const struct st_gen_shape st_llama_native_shape;

/* Handlers (h_infill.c, h_completion.c, llama_props.c, h_text.c). */
st_route_fn st_h_infill, st_h_completion, st_h_props, st_h_tokenize, st_h_detokenize,
    st_h_apply_template;
/* POST /slots/{id}?action=save|restore|erase (h_slots.c). */
st_route_fn st_h_slot_action;

#endif /* STRATA_SERVER_LLAMA_LLAMA_H */
