/* openai/oai_json.h -- typed, validating field access over a cJSON tree, for the
 * request parsers only (oai_request.c, oai_text.c, oai_fields.c).
 *
 * cJSON rules (docs/design/STYLE.md b.5.8): cJSON_Parse* returns an owned tree freed
 * with cJSON_Delete(root); an item added to a parent is owned by it;
 * cJSON_Print* returns a buffer freed with cJSON_free. The parsers copy
 * what they need into owned C data and delete the tree before returning:
 * no cJSON pointer outlives the function that parsed it, and none crosses
 * into the rest of the server but a chat request's messages and
 * chat_template_kwargs (strata/chat_req.h), which the engine renders.
 *
 * Every getter treats JSON null like an absent field (OpenAI clients send
 * "stop": null and the like) and returns ST_OK leaving *out unchanged when
 * the field is absent; a wrong type or range is ST_ERR_INVALID with the
 * parameter named in 'e'.
 */
#ifndef STRATA_SERVER_OAI_JSON_H
#define STRATA_SERVER_OAI_JSON_H

#include <cjson/cJSON.h>

#include "server/openai/oai.h"

/* Parse a whole body into an object (400 for bad JSON, trailing bytes or
 * a non-object). Returns the owned root in *root. */
ST_MUST_CHECK enum st_status st_oai_json_root(const char *body, size_t len, cJSON **root,
                                              struct st_api_error *e);
/* The field, or NULL when absent or null. */
const cJSON *st_oai_field(const cJSON *obj, const char *key);
/* Remove every member named 'key' (a repeated key too: lookups see the
 * first, so deleting only that one would bring a hidden value to light). */
void st_oai_delete_all(cJSON *obj, const char *key);

ST_MUST_CHECK enum st_status st_oai_get_bool(const cJSON *obj, const char *key, bool *out,
                                             bool *present, struct st_api_error *e);
/* An integral number in [min, max]. */
ST_MUST_CHECK enum st_status st_oai_get_int(const cJSON *obj, const char *key, int64_t min,
                                            int64_t max, int64_t *out, bool *present,
                                            struct st_api_error *e);
/* A finite number in [min, max] ('min_open': min itself excluded). */
ST_MUST_CHECK enum st_status st_oai_get_num(const cJSON *obj, const char *key, double min,
                                            bool min_open, double max, double *out,
                                            bool *present, struct st_api_error *e);
/* A string, copied (owned) into *out (freed first if set). */
ST_MUST_CHECK enum st_status st_oai_get_str(const cJSON *obj, const char *key, char **out,
                                            struct st_api_error *e);
/* An object or array of the given cJSON type, re-serialised (owned). */
ST_MUST_CHECK enum st_status st_oai_get_raw(const cJSON *obj, const char *key, int type,
                                            char **out, struct st_api_error *e);
/* The same, duplicated as a tree (owned; *out deleted first if set). */
ST_MUST_CHECK enum st_status st_oai_get_tree(const cJSON *obj, const char *key, int type,
                                             cJSON **out, struct st_api_error *e);
/* An array of token ids (integers in 0..INT32_MAX); 'param' names it. */
ST_MUST_CHECK enum st_status st_oai_tokens(const cJSON *arr, const char *param, int32_t **ids,
                                           size_t *n, struct st_api_error *e);
/* "messages": a non-empty array of {role, content}; text parts joined.
 * The normalised array (owned; *out deleted first if set): every content a
 * string or null. */
ST_MUST_CHECK enum st_status st_oai_messages(const cJSON *obj, cJSON **out,
                                             struct st_api_error *e);
/* The names a 400 gives the chat fields whose name differs in the API a
 * body was translated from (translate.h): errors are named at their
 * source, in the client's terms. */
struct st_oai_names {
    const char *stop;          /* "stop" */
    const char *format;        /* "response_format": its param and name in messages */
    const char *schema;        /* "response_format.json_schema": where its members are */
    const char *json_format;   /* "a JSON 'response_format' or 'json_schema'" */
    const char *forced_calls;  /* "'tool_choice' \"required\" or a named function" */
    bool schema_name_required; /* the json_schema's "name" must be there (Responses, as
                                * OpenAI's); chat lets it out, as llama-server */
};
/* The chat API's own names. */
extern const struct st_oai_names st_oai_chat_names;

/* st_oai_parse on a parsed body (borrowed), its 400s named by 'names'. */
ST_MUST_CHECK enum st_status st_oai_parse_tree(enum st_oai_kind kind, const cJSON *root,
                                               const struct st_oai_names *names,
                                               struct st_oai_request *r,
                                               struct st_api_error *e);
/* (oai_sampling.c) presence/frequency/repeat penalties, repeat_last_n,
 * logit_bias (owned into p->logit_bias), response_format and grammar of a
 * body; logit_bias entries keyed by text go to *bias_text ([[text, bias],
 * ...], owned; created when the first comes). */
ST_MUST_CHECK enum st_status st_oai_parse_penalties(const cJSON *root,
                                                    const struct st_oai_names *names,
                                                    struct st_gen_params *p,
                                                    cJSON **bias_text,
                                                    struct st_api_error *e);

/* tool_choice, parallel_tool_calls and reasoning_format of a chat body
 * (oai_tools.c); tool_choice "none" drops r->chat.tools. */
ST_MUST_CHECK enum st_status st_oai_parse_tool_fields(const cJSON *root,
                                                      struct st_oai_request *r,
                                                      struct st_api_error *e);

#endif /* STRATA_SERVER_OAI_JSON_H */
