/* reply/internal.h -- the tagged tool call bodies (xml.c) that the reply
 * parser (parse.c) reads, and their typing rules, which the call grammar
 * (grammar/call_grammar_xml.c) shares.
 */
#ifndef STRATA_REPLY_INTERNAL_H
#define STRATA_REPLY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "strata/str.h"

/* ---- xml.c: a Qwen3-Coder call body (parse.c) ---- */
/* body: the text between "<tool_call>" and "</tool_call>"; tools: the
 * request's tools JSON (ptr NULL = none) for parameter types. Appends the
 * name, then the arguments as a JSON object, to 'out' (*name_len: where
 * the name ends). false when the body is malformed (or out of memory). */
bool st_reply_xml_call(struct st_str body, struct st_str tools, struct st_buf *out,
                       size_t *name_len);
/* The parser's typing rule for one parameter (also the call grammar's,
 * grammar/call_grammar_xml.c): 'type' is properties[key].type of the tool; true
 * when a value is taken as JSON text (a type name other than "string", or
 * a list without "string"), false when it stays a raw string. */
bool st_reply_xml_typed_json(struct st_str type);
/* The schema type of parameter 'key' of tool 'name' in tools (a JSON array
 * of OpenAI tools, or bare function objects): properties[key].type of the
 * first tool of that name; false when there is none. */
bool st_reply_param_type(struct st_str tools, struct st_str name, struct st_str key,
                         struct st_str *type);

/* ---- xml.c: a GLM-4.5 call body (parse.c) ---- */
/* body: the text between "<tool_call>" and "</tool_call>"
 * ("NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n..."); as
 * st_reply_xml_call. */
bool st_reply_glm_call(struct st_str body, struct st_str tools, struct st_buf *out,
                       size_t *name_len);
/* The GLM typing rule (also grammar/call_grammar_xml.c's for glm): a value stays raw text
 * when its parameter's 'type' (ptr NULL: none found) is "string" or a list
 * holding it; any other value is read as JSON when it parses as one. */
bool st_reply_glm_raw(struct st_str type);

#endif /* STRATA_REPLY_INTERNAL_H */
