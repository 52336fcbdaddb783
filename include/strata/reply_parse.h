/* reply_parse.h -- what a chat model generates -> reasoning, content and
 * tool calls, incrementally (docs/API.md "Tool calls and reasoning").
 *
 * The format is the Qwen3 / Hermes / Qwen2.5 one (src/chat/formats/qwen3.c):
 *
 *   <think>\nreasoning\n</think>\n\ncontent\n<tool_call>\n{"name": "f",
 *   "arguments": {...}}\n</tool_call>\n<tool_call>\n...\n</tool_call>
 *
 * Feed the visible text as it is generated, split anywhere (down to one
 * byte); the parser calls 'emit' with content deltas, reasoning deltas and
 * tool-call events. What it holds back: text that may still become a
 * marker (a tail that is a prefix of "<think>", "</think>" or
 * "<tool_call>"), whitespace that the format drops when a marker follows
 * (around "</think>" and before "<tool_call>"), and the body of a tool call
 * until its "</tool_call>" arrives: a call is judged whole, because a call
 * that turns out malformed (bad JSON, no name, never closed) is given back
 * as content, byte for byte, never lost. st_reply_parser_finish() flushes
 * everything at the end of generation.
 *
 * Rules (see docs/API.md for the why):
 *  - reasoning: "<think>" only at the start of the reply (after optional
 *    whitespace); with opts.in_reasoning (the prompt itself ended inside an
 *    open think block) the reply starts in reasoning and a lone "</think>"
 *    ends it. Reasoning is trimmed of surrounding whitespace; an unclosed
 *    think block at the end is reasoning.
 *  - tool calls: "<tool_call>" anywhere in content; its body is one JSON
 *    object with a string "name" and "arguments" (or "parameters"). A
 *    "</tool_call>" inside a JSON string does not end the call. arguments:
 *    an object (or any non-string value) is passed on as the exact text the
 *    model wrote; a string value is passed on decoded (it holds the JSON);
 *    absent = "{}".
 *  - whitespace before "<tool_call>", and at the start of content after
 *    "</think>" or after a call, is dropped; other content is exact.
 *  - opts.bare_json_calls (Llama 3.1+, whose template asks for a plain
 *    {"name": ..., "parameters": ...} reply): content that starts with "{"
 *    is held; if the whole rest of the reply is one such object it is one
 *    call, otherwise it goes out as content as soon as that is clear.
 *  - opts.xml_calls (Qwen3-Coder, src/chat/formats/qwen3coder.c): a call's body
 *    runs to the first "</tool_call>" and is
 *      <function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>
 *    (a body that starts with "{" is read as a JSON call instead). The
 *    arguments become a JSON object: each value loses one leading and one
 *    trailing newline and stays a string, unless the parameter's type in
 *    opts.tools_json is a non-string type and the value parses as JSON
 *    (src/chat/formats/qwen3coder.c). Malformed bodies go out as content.
 *  - opts.mistral (Mistral prompts, src/chat/formats/mistral.c): the markers
 *    are "[THINK]" / "[/THINK]" for reasoning (a reply that opens with
 *    "<think>" instead, as Magistral 2506 writes it, closes with "</think>")
 *    and "[TOOL_CALLS]" for calls,
 *    which have no closing tag; after "[TOOL_CALLS]" and optional blanks
 *    comes either
 *      NAME[ARGS]{...}            (v11: Small 3.2, Devstral 2507, Magistral;
 *                                  also NAME[CALL_ID]ID[ARGS]{...} and NAME{...})
 *    or a JSON array (or one object) of {"name": .., "arguments": ..[, "id": ..]}
 *                                 (v7 and older: one "[TOOL_CALLS]" for them all).
 *    A call ends where its JSON closes; blanks after it are dropped and
 *    what follows is content again (so calls may follow one another). A
 *    name holds no blanks, quotes, brackets or braces (at most 256 bytes).
 *    What is not a well-formed call goes out as content byte for byte: up
 *    to the byte that breaks the form, or all of it when generation ends
 *    inside the call.
 *  - opts.glm (GLM-4.5 prompts, src/chat/formats/glm45.c): blanks at the start
 *    of the content are dropped (the template writes "\n" before it, after
 *    "<|assistant|>" or "</think>"); with tools, a call's body runs to the
 *    first "</tool_call>" and is
 *      NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n...
 *    (a body that starts with "{" is read as a JSON call instead). A value
 *    stays a string, exact, where the parameter's schema type in
 *    opts.tools_json is "string"; any other value becomes JSON when it
 *    parses as one (src/chat/formats/glm45.c). Malformed bodies go out as
 *    content.
 *
 * Ownership: the parser is caller-storage (init/fini); event texts are
 * borrowed for the duration of the emit call. Threads: one stream per
 * parser; emit must not feed the same parser.
 */
#ifndef STRATA_REPLY_PARSE_H
#define STRATA_REPLY_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/status.h"
#include "strata/str.h"

enum st_reply_kind {
    ST_REPLY_CONTENT,       /* text: a piece of message.content */
    ST_REPLY_REASONING,     /* text: a piece of message.reasoning_content */
    ST_REPLY_TOOL_START,    /* index; text: the function name (decoded) */
    ST_REPLY_TOOL_ARGS,     /* index; text: a piece of function.arguments (JSON text) */
    ST_REPLY_TOOL_END,      /* index */
};

struct st_reply_event {
    enum st_reply_kind kind;
    const char *text;       /* borrowed for the call; not NUL-terminated */
    size_t      len;
    int32_t     index;      /* tool events: 0, 1, ... in the order of the calls */
};

/* Return ST_OK to go on; any other status stops the parse and is returned. */
typedef enum st_status st_reply_emit_fn(void *ctx, const struct st_reply_event *ev);

struct st_reply_opts {
    bool    reasoning;      /* split <think>...</think> out (deepseek); false: all content */
    bool    tools;          /* parse <tool_call> blocks; false: they stay content */
    bool    in_reasoning;   /* the reply starts inside reasoning (needs 'reasoning') */
    int32_t max_calls;      /* 0 = any number; 1 = keep the first call, drop later ones */
    bool    bare_json_calls; /* a reply that is one JSON object is a call (needs 'tools') */
    bool    xml_calls;      /* Qwen3-Coder: <tool_call> bodies are <function=..> blocks */
    struct st_str tools_json; /* xml_calls / glm: the request's tools (JSON array) for
                               parameter types; borrowed, must outlive the parser; ptr NULL
                               = none */
    bool    mistral;        /* Mistral markers: [THINK] [/THINK] [TOOL_CALLS] (see above) */
    bool    glm;            /* GLM-4.5: content's leading blanks dropped; <tool_call> bodies
                               are NAME + <arg_key>/<arg_value> pairs */
    bool    cont;           /* the reply goes on with a message's text (continue_final):
                               glm's leading blanks are that text's, kept */
};

struct st_reply_parser {
    struct st_reply_opts opts;
    int     state;          /* start, reasoning, content, tool (reply/parse.c) */
    bool    lead;           /* drop leading whitespace of the current part */
    struct st_buf pend;     /* undecided bytes; pend.data[pos..len) */
    size_t  pos;
    struct st_buf scratch;  /* a call's decoded name / arguments */
    /* the call being read: offsets relative to pos */
    size_t  body;           /* where the body starts (after "<tool_call>") */
    size_t  scan;           /* body bytes scanned */
    int     jstate;         /* before JSON, in JSON, after JSON, malformed */
    int32_t depth;          /* brackets open */
    bool    in_str, esc;
    size_t  js, je;         /* JSON value span in the body */
    int32_t n_calls;        /* well-formed calls seen */
    bool    bare;           /* the call being read has no tags (bare_json_calls) */
    bool    content_seen;   /* content was emitted: no bare call can follow */
    bool    think_tags;     /* mistral: the reply opened <think> (Magistral 2506), not [THINK] */
    int     mphase;         /* mistral: name, tag, call id, JSON (reply/parse.c) */
    size_t  ns, ne;         /* mistral: the name's span in the body (ne == ns: none) */
};

void st_reply_parser_init(struct st_reply_parser *p, const struct st_reply_opts *opts);
void st_reply_parser_fini(struct st_reply_parser *p);

/* Feed the next generated text. Returns ST_OK, ST_ERR_NOMEM or what emit
 * returned. */
ST_MUST_CHECK
enum st_status st_reply_parser_feed(struct st_reply_parser *p, const char *text, size_t len,
                                    st_reply_emit_fn *emit, void *ctx);

/* End of generation: everything held is decided and emitted. The parser
 * may be fed again afterwards only after fini + init. */
ST_MUST_CHECK
enum st_status st_reply_parser_finish(struct st_reply_parser *p, st_reply_emit_fn *emit,
                                      void *ctx);

/* True when a rendered prompt ends inside an open think block: its last
 * non-whitespace text is "<think>" (Qwen3-Thinking-2507, DeepSeek-R1
 * style templates). Then the reply starts in reasoning. */
bool st_reply_prompt_opens_think(const char *prompt, size_t len);

/* True when a rendered prompt asks for bare JSON calls: the Llama 3.1+
 * system header with tools ("Environment: ipython", src/chat/formats/llama31.c). */
bool st_reply_prompt_wants_json_calls(const char *prompt, size_t len);

/* True when a rendered prompt is a Mistral one: after an optional "<s>" it
 * starts with "[INST]", "[SYSTEM_PROMPT]" or "[AVAILABLE_TOOLS]". Then
 * opts.mistral applies. */
bool st_reply_prompt_is_mistral(const char *prompt, size_t len);

/* True when a rendered prompt asks for Qwen3-Coder's XML-style calls: its
 * tools section's example call ("<tool_call>\n<function=example_function_name>
 * \n<parameter=example_parameter_1>\n", src/chat/formats/qwen3coder.c). */
bool st_reply_prompt_wants_xml_calls(const char *prompt, size_t len);

/* True when a rendered prompt is a GLM-4.5 one: it starts with
 * "[gMASK]<sop>" (src/chat/formats/glm45.c). Then opts.glm applies, and
 * tool_choice's grammar is ST_CALL_GLM. */
bool st_reply_prompt_is_glm(const char *prompt, size_t len);

#endif /* STRATA_REPLY_PARSE_H */
