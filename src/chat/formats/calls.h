/* chat/formats/calls.h -- the reply hooks of the formats whose tool calls
 * are tagged bodies (Qwen3-Coder, GLM-4.5): the reply parser
 * (reply/parse.c) reads a call body with them, and the call grammar
 * (grammar/call_grammar_xml.c) shares their typing rules, so that every
 * call it lets the model write parses into arguments valid against the
 * tool's schema.
 */
#ifndef STRATA_CHAT_FORMATS_CALLS_H
#define STRATA_CHAT_FORMATS_CALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "strata/str.h"

/* ---- qwen3coder.c: a Qwen3-Coder call body ---- */
/* body: the text between "<tool_call>" and "</tool_call>"; tools: the
 * request's tools JSON (ptr NULL = none) for parameter types. Appends the
 * name, then the arguments as a JSON object, to 'out' (*name_len: where
 * the name ends). false when the body is malformed (or out of memory). */
bool st_chat_qwen3coder_call(struct st_str body, struct st_str tools, struct st_buf *out,
                             size_t *name_len);
/* The parser's typing rule for one parameter (also the call grammar's):
 * 'type' is properties[key].type of the tool; true when a value is taken
 * as JSON text (a type name other than "string", or a list without
 * "string"), false when it stays a raw string. */
bool st_chat_qwen3coder_typed_json(struct st_str type);

/* ---- glm45.c: a GLM-4.5 call body ---- */
/* body: the text between "<tool_call>" and "</tool_call>"
 * ("NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n..."); as
 * st_chat_qwen3coder_call. */
bool st_chat_glm45_call(struct st_str body, struct st_str tools, struct st_buf *out,
                        size_t *name_len);
/* The GLM typing rule (also the call grammar's for glm): a value stays raw
 * text when its parameter's 'type' (ptr NULL: none found) is "string" or a
 * list holding it; any other value is read as JSON when it parses as one. */
bool st_chat_glm45_raw(struct st_str type);

/* ---- call_body.c ---- */
/* The schema type of parameter 'key' of tool 'name' in tools (a JSON array
 * of OpenAI tools, or bare function objects): properties[key].type of the
 * first tool of that name; false when there is none. */
bool st_chat_param_type(struct st_str tools, struct st_str name, struct st_str key,
                        struct st_str *type);

#endif /* STRATA_CHAT_FORMATS_CALLS_H */
