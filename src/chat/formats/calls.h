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
#include <stdint.h>

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

/* ---- the call grammar's hooks: how each format writes a call ---- */
/* tool_choice "required" / a named function (grammar/call_grammar.c)
 * lets the model write exactly the calls the reply parser reads:
 * OPEN? PRE_HEAD NAME PRE_TAIL ARGS POST, calls joined by SEP, CLOSE after
 * the last. Each format file defines its frame (qwen3.c: Hermes). */
struct st_chat_lit {
    const char *s;
    uint32_t n;
};
#define ST_CHAT_LIT(s) { s, sizeof(s) - 1 }

/* A body of tagged key/value pairs instead of JSON arguments (Qwen3-Coder's
 * parameter blocks, GLM-4.5's pairs). A name ends at sep.s[0], a JSON value
 * at vend.s[0], a raw value at LEAD VCLOSE. */
struct st_chat_call_tags {
    struct st_chat_lit open;        /* a key's block opens */
    struct st_chat_lit end;         /* the body ends */
    struct st_chat_lit sep;         /* from the key's end to the value */
    struct st_chat_lit vclose;      /* the value's close */
    struct st_chat_lit vend;        /* LEAD VCLOSE "\n": from the value's end to the
                                     * next OPEN / END */
    char lead;                      /* raw: the byte the format writes before VCLOSE; 0: none */
};

struct st_chat_call_frame {
    const char *open;               /* before the first call's PRE only */
    const char *pre_head, *pre_tail;/* around the function's name */
    const char *post, *sep, *close;
    bool square_think;              /* [THINK] .. [/THINK], else <think> .. </think> */
    bool single;                    /* one call at most (the parser reads one) */
    const char *name_refused;       /* bytes a name may not hold besides quotes,
                                     * backslashes and control bytes */
    bool name_no_brace;             /* '{' may not start a name (read as a JSON call) */
};

extern const struct st_chat_call_frame st_chat_qwen3_call_frame;       /* Hermes JSON */
extern const struct st_chat_call_frame st_chat_llama31_call_frame;     /* bare JSON */
extern const struct st_chat_call_frame st_chat_mistral11_call_frame;   /* [TOOL_CALLS]NAME[ARGS] */
extern const struct st_chat_call_frame st_chat_mistral7_call_frame;    /* [TOOL_CALLS][{..}, ..] */
extern const struct st_chat_call_frame st_chat_qwen3coder_call_frame;  /* <function=NAME> */
extern const struct st_chat_call_frame st_chat_glm45_call_frame;       /* <tool_call>NAME */
extern const struct st_chat_call_tags st_chat_qwen3coder_call_tags;
extern const struct st_chat_call_tags st_chat_glm45_call_tags;

#endif /* STRATA_CHAT_FORMATS_CALLS_H */
