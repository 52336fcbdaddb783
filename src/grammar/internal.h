/* grammar/internal.h -- what call_grammar.c (the frame) and
 * call_grammar_xml.c (the tagged bodies: Qwen3-Coder's parameter blocks,
 * GLM-4.5's key/value pairs) share: one tool's parameters as that format
 * writes them, and the body validator's entry points over struct
 * st_call_state's x* fields.
 */
#ifndef STRATA_GRAMMAR_INTERNAL_H
#define STRATA_GRAMMAR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/call_grammar.h"
#include "strata/str.h"

/* The two bodies of this shape, one machine (call_grammar_xml.c) over a
 * table of their tags: Qwen3-Coder's <parameter=KEY> blocks and GLM-4.5's
 * <arg_key>/<arg_value> pairs. They also differ in the typing rule
 * (chat/formats/calls.h: st_chat_qwen3coder_typed_json /
 * st_chat_glm45_raw). */
enum call_body { CALL_BODY_XML, CALL_BODY_GLM };

/* One tool's parameters for the xml body. Names and nodes point into the
 * compiled schema (borrowed: call_tool.args holds the reference). */
struct call_xml {
    const struct st_json_schema *schema;
    uint32_t n_props;
    const char *names[64];          /* as written (no escapes: checked at build) */
    uint32_t name_len[64];
    int32_t node[64];               /* the value's schema node */
    uint64_t json;                  /* bit i: the parser reads the value as JSON text */
    uint64_t writable;              /* bit i: the name and a value can be written */
    uint64_t required;
    int32_t extra;                  /* node of other names' values; -1: none */
    bool extra_json;                /* glm: other names' values are JSON text */
    uint8_t body;                   /* enum call_body: the format's tags */
};

/* The xml body of tool 'fn' (its OpenAI function object) whose parameters
 * compiled into 'args': *out NULL when the parameters cannot be written in
 * that format (the tool then gets a free body). ST_ERR_NOMEM. */
enum st_status st_call_xml_build(struct st_str fn, const struct st_json_schema *args,
                                 enum call_body body, struct call_xml **out);
/* A byte of a key name the grammar lets the model write. */
bool st_call_xml_name_byte(unsigned char b);
/* Feed byte b to js as st_buf_json_str escapes it inside a JSON string. */
bool st_call_xml_feed_esc(struct st_json_schema_state *js, unsigned char b);

/* After "<function=X>\n" (glm: "<tool_call>X\n"): the body starts. */
void st_call_xml_start(struct st_call_state *st, const struct call_xml *x);
/* One byte of the body: -1 refused, 0 taken, 1 taken and the body is
 * whole ("</function>", glm "</tool_call>", matched). */
int st_call_xml_push(struct st_call_state *st, const struct call_xml *x, unsigned char b);
/* The mask's questions (call_grammar.h), inside the body. */
bool st_call_xml_free_text(const struct st_call_state *st, unsigned char *stop);
const struct st_json_schema_state *st_call_xml_args(const struct st_call_state *st);
/* st->js is live (a value is being written): copies must take it. */
bool st_call_xml_uses_js(const struct st_call_state *st);

#endif /* STRATA_GRAMMAR_INTERNAL_H */
