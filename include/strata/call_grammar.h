/* call_grammar.h -- tool_choice "required" and a named function (docs/API.md
 * "Tool calls and reasoning"): a reply that must be one or more tool calls
 * in the model's own call format, validated one byte at a time for
 * constrained sampling, like json_schema.h (which it wraps for the
 * arguments).
 *
 * The text it accepts, for the formats of reply_parse.h:
 *
 *   [think] OPEN CALL (SEP CALL)* CLOSE          CALL = PRE(name) ARGS POST
 *
 *   format      PRE(name)                               POST              SEP  OPEN/CLOSE
 *   hermes      <tool_call>\n{"name": "X", "arguments":  }\n</tool_call>  ws   -
 *               (Qwen3, Qwen2.5, Hermes)
 *   llama       {"name": "X", "parameters":              }                 (one call only)
 *   mistral11   [TOOL_CALLS]X[ARGS]                      -                 ws   -
 *   mistral7    {"name": "X", "arguments":               }                 ,ws  [TOOL_CALLS][ / ]
 *   xml         <tool_call>\n<function=X>\n             \n</tool_call>     ws   -
 *               (Qwen3-Coder: ARGS is PARAM* "</function>", below)
 *   glm         <tool_call>X\n                          -                 ws   -
 *               (GLM-4.5: ARGS is PAIR* "</tool_call>", below)
 *
 * xml's ARGS (call_grammar_xml.c; what chat/formats/qwen3coder.c parses back):
 *
 *   PARAM = "<parameter=" KEY ">\n" VALUE "\n</parameter>\n"
 *
 * glm's ARGS (call_grammar_xml.c with GLM's tags; what chat/formats/glm45.c parses
 * back):
 *
 *   PAIR = "<arg_key>" KEY "</arg_key>\n<arg_value>" VALUE "</arg_value>\n"
 *
 * with KEY as below, VALUE raw text (exact, never holding "</arg_value>")
 * whose JSON string is valid where the property's "type" is a string type,
 * else JSON text valid against it (also for other names' values: the
 * parser reads a value without a string type as JSON).
 *
 * KEY one of the schema's properties, each at most once, every required
 * one before "</function>" (glm: "</tool_call>"); another name only where additionalProperties
 * is not false (no blanks, '<', '>', quotes or backslashes; repeats of
 * such a name are not detected). VALUE as the parser types it: JSON text
 * valid against the property's schema where its "type" is not a string
 * type (chat/formats/qwen3coder.c's rule), else raw text whose JSON string is valid
 * against it (an enum of strings holds), never containing "</parameter>"
 * or "</tool_call>" (the parser would cut the value there). A tool whose parameters cannot
 * be written so (a required key with blanks or escapes, a string-typed
 * key whose schema admits no string, an enum value holding
 * "</parameter>") gets a free body up to "</function>" (a fallback).
 *
 * ARGS is a JSON document valid against X's "parameters" schema (compiled
 * with json_schema.h; a schema it refuses, or none, becomes {"type":
 * "object"}: any object). With a named function X is that function; for
 * "required" it is any of the tools (their PREs are matched side by side
 * until the name decides). No whitespace inside PRE / POST but what they
 * spell, none before ARGS; at most ST_JSON_SCHEMA_MAX_WS blanks in a row
 * where blanks may come (before the first call, after "</think>", between
 * calls, after the last one).
 *
 * think: the reply may open with THINK_OPEN, free text, THINK_CLOSE
 * ("<think>" / "</think>"; "[THINK]" / "[/THINK]" for Mistral, and either
 * with think_either: Magistral 2506 / 2507) before the first call
 * (ST_CALL_THINK_OPTIONAL), or starts inside that block because the
 * prompt opened it (ST_CALL_THINK_OPEN).
 *
 * The text is complete after a call (and CLOSE); with 'parallel' more calls
 * may follow, otherwise nothing but blanks (any number: st_call_done; the
 * sampler offers them only when end of generation is banned).
 *
 * Ownership: a grammar is immutable and reference counted (atomic: the HTTP
 * thread compiles, engine threads read); a state borrows it.
 */
#ifndef STRATA_CALL_GRAMMAR_H
#define STRATA_CALL_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/err.h"
#include "strata/json_schema.h"

#define ST_CALL_MAX_TOOLS 63        /* tools a grammar can tell apart (bit 63: think) */
#define ST_CALL_MAX_NAME  256       /* bytes of a function name */

enum st_call_format {
    ST_CALL_HERMES,                 /* Qwen3 / Qwen2.5 / Hermes <tool_call> JSON */
    ST_CALL_LLAMA,                  /* Llama 3.1+ bare JSON */
    ST_CALL_MISTRAL11,              /* [TOOL_CALLS]NAME[ARGS]{...} */
    ST_CALL_MISTRAL7,               /* [TOOL_CALLS][{"name": .., "arguments": ..}, ..] */
    ST_CALL_XML,                    /* Qwen3-Coder <tool_call><function=NAME><parameter=..> */
    ST_CALL_GLM,                    /* GLM-4.5 <tool_call>NAME\n<arg_key>..<arg_value>.. */
};

enum st_call_think {
    ST_CALL_THINK_NONE,             /* the calls come first */
    ST_CALL_THINK_OPTIONAL,         /* an optional think block first */
    ST_CALL_THINK_OPEN,             /* the reply starts inside the think block */
};

struct st_call_spec {
    enum st_call_format format;
    enum st_call_think  think;
    bool        parallel;           /* more than one call may come */
    const char *tools_json;         /* the request's "tools" array (OpenAI shape); borrowed */
    size_t      tools_len;
    const char *name;               /* NUL-terminated function name; NULL: any tool */
    bool        think_either;       /* OPTIONAL think: "<think>" or "[THINK]", the one
                                     * written decides its close (Mistral formats only) */
};

struct st_call_grammar;

/* Compile spec into *out (one reference, the caller's). ST_ERR_NOT_FOUND:
 * the named function is not among the tools (or no tool can be called:
 * a name with quotes, control bytes or, for mistral11, blanks or
 * brackets, for xml and glm blanks or angle brackets, for glm a leading
 * '{'); ST_ERR_UNSUPPORTED: more than ST_CALL_MAX_TOOLS tools for
 * "required"; ST_ERR_INVALID: tools_json is not an array; ST_ERR_NOMEM.
 * *n_fallback (optional): tools whose parameters became "any object". */
enum st_status st_call_grammar_compile(const struct st_call_spec *spec,
                                       struct st_call_grammar **out, int32_t *n_fallback,
                                       struct st_err *err);
void st_call_grammar_ref(struct st_call_grammar *g);
/* Drop a reference; the last one frees. NULL is a no-op. */
void st_call_grammar_unref(struct st_call_grammar *g);
/* Tools the grammar can call (tests). */
int32_t st_call_grammar_n_tools(const struct st_call_grammar *g);

/* Caller-owned value; the schema state is last so a copy outside the
 * arguments moves only the header. */
struct st_call_state {
    const struct st_call_grammar *g;    /* borrowed */
    uint8_t  phase;                     /* call_grammar.c enum phase */
    uint8_t  set;                       /* literal set being matched (enum lset) */
    uint8_t  ws;                        /* blanks in a row */
    bool     complete;                  /* the text so far is a whole reply */
    int32_t  tool;                      /* ARGS: whose arguments */
    uint32_t pos;                       /* bytes of the literal(s) matched */
    uint64_t alive;                     /* literals of the set still matching */
    int32_t  n_calls;                   /* calls completed */
    uint8_t  ttags;                     /* think block's spelling (enum st_think_tags) */
    /* xml body (call_grammar_xml.c) */
    uint8_t  xphase;                    /* enum xphase */
    uint8_t  xflags;                    /* raw value: a '\n' held back, ... */
    uint8_t  xtc;                       /* bytes of "</tool_call>" matched in a value */
    int32_t  xprop;                     /* property being written; -1: another name */
    uint32_t xpos;                      /* bytes of a literal / the name matched */
    uint64_t xseen;                     /* properties written */
    uint64_t xalive;                    /* property names still matching */
    struct st_json_schema_state js;     /* ARGS; xml: the value being written */
};

void st_call_state_init(struct st_call_state *st, const struct st_call_grammar *g);
void st_call_state_copy(struct st_call_state *dst, const struct st_call_state *src);
/* Append one byte; false when no accepted reply starts with the text (then
 * the state stays invalid). */
bool st_call_push(struct st_call_state *st, unsigned char b);
bool st_call_feed(struct st_call_state *st, const char *s, size_t n);
bool st_call_valid(const struct st_call_state *st);
/* The text is a whole reply: generation may end here. */
bool st_call_complete(const struct st_call_state *st);
/* Inside free text (the think block's, a free xml body, an xml value of
 * any string), nothing of its closing literal matched: every byte but
 * *stop (the literal's first byte) is taken. */
bool st_call_free_text(const struct st_call_state *st, unsigned char *stop);
/* No call may follow: only blanks (without a cap), end of generation. */
bool st_call_done(const struct st_call_state *st);
/* Where blanks may come (before a call, after one): a blank changes
 * nothing but the count; *ws_left more may come in a row. */
bool st_call_between(const struct st_call_state *st, uint16_t *ws_left);
/* Inside the arguments and the json_schema.h queries of the same name hold
 * (the document is not complete yet): *js is the schema state. xml: NULL
 * while part of "</parameter>" or "</tool_call>" is matched in a value
 * (a plain token could complete it; the grammar refuses that). */
const struct st_json_schema_state *st_call_args(const struct st_call_state *st);
/* Inside a Qwen3-Coder or GLM call body, where a '<' may end a value: the
 * schema's string fast path (tokens without '"', '\\' or control bytes)
 * must still refuse a token with '<' unread. */
bool st_call_lt_matters(const struct st_call_state *st);

#endif /* STRATA_CALL_GRAMMAR_H */
