/* json_mask.h -- what sample.c asks of the JSON mask (json_mask.c):
 * json_object, json_schema, tool calls and grammars. Private to src/engine.
 */
#ifndef STRATA_ENGINE_JSON_MASK_H
#define STRATA_ENGINE_JSON_MASK_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/sample/sample.h"
#include "strata/json_schema.h"

/* json_mask.c, for sample.c. What one step of the JSON mask (json_object
 * or json_schema) knows before it looks at any token: first[b] = the byte
 * b may come next; the state is inside a free string (string-safe tokens
 * pass unread); between tokens (leading whitespace of a token is skipped,
 * at most ws_left bytes of it); the document is complete (end of
 * generation allowed). */
#define ST_JSON_TWO_MAX 24   /* rows of 'second' (a grammar's table) */
#define ST_JSON_TWO_JSON 8   /* ... the JSON validators' (256 pushes a row) */
struct st_json_step {
    bool     first[256];
    bool     in_str, between, complete;
    bool     str_lt;    /* in_str, but a '<' may end the value (a Qwen3-Coder
                         * parameter): string-safe tokens with '<' are walked */
    uint16_t ws_left;
    /* Inside a think block (tool calls, or before a JSON document): every
     * token without a byte equal to 'stop' (ST_JV_LT / ST_JV_LB) passes
     * unread. */
    bool     free_text;
    unsigned char stop;
    /* When at most ST_JSON_TWO_JSON non-whitespace bytes may come next (an
     * object key, an enum literal, after '{'; for a grammar, at most
     * ST_JSON_TWO_MAX bytes outside its loop, blanks too unless
     * 'between'): second[two_idx[b1]][b2] =
     * b1 then b2 may come, so most multi-byte tokens are decided without a
     * walk. two_idx[b] = 0xff: not tabled (n_two = 0: no table). */
    uint8_t  n_two;
    uint8_t  two_idx[256];
    bool     second[ST_JSON_TWO_MAX][256];
    /* A grammar in a loop (st_gbnf_loop_bytes: a `[^"]*` being read):
     * tokens made only of bytes with loop[b] and valid UTF-8 (ST_JV_U8)
     * pass unread: every whole character leaves the state as it is, and
     * where the non-ASCII ones loop, a cut last character can still
     * become one of them. */
    bool     gloop;
    bool     loop[256];
    uint32_t loop_full;   /* the byte groups whose every byte loops */
    /* ... and after a first byte of the two-byte table (row two_idx[b]):
     * the loop of the state that byte leads to (a string's opening '"'),
     * so "\"The" is decided without a walk. */
    bool     row_gloop[ST_JSON_TWO_MAX];
    bool     row_loop[ST_JSON_TWO_MAX][256];
    /* json_schema inside a string with a length bound or a pattern
     * (st_json_schema_run_view; run.kind ST_JS_RUN_NONE elsewhere): plain
     * tokens (ST_JV_PLAIN) are decided from their code point count
     * (ncp) or, for a pattern, their bytes against run.set, by the byte
     * groups of 'run_full' (every byte in run.set) or a scan, and only
     * what is left is run through the pattern's DFA from the chain
     * (where run_groups: no byte read at all). */
    struct st_json_schema_run run;
    const struct st_json_schema_state *run_js;   /* the state 'run' views (the
                         * sampler's, or a tool call's arguments); borrowed
                         * from the sampler until its next accept */
    uint32_t run_full;
    bool     run_groups;   /* run_full alone decides (json_mask.c run_groups) */
};

/* The group of byte b in st_json_vocab.sig (0..20): controls, each blank,
 * '"', '\\', DEL, digits, lower, upper, three groups of punctuation,
 * UTF-8 continuation, 2-, 3-, 4-byte leads, bytes never in UTF-8. */
unsigned st_json_byte_group(unsigned b);
/* Release s->jv's tables. */
void st_json_vocab_free(struct st_json_vocab *v);
/* Fill st from the sampler's state (eog_banned: ignore_eos, so whitespace
 * after the document; a vocabulary without end-of-generation tokens is
 * treated the same way). */
void st_json_mask_step(const struct st_sampler *s, bool eog_banned, struct st_json_step *st);
/* May token 'id' come next? */
bool st_json_mask_allows(const struct st_sampler *s, const struct st_json_step *st, int32_t id);
/* Feed an accepted token's bytes to the state (end of generation: none). */
void st_json_mask_accept(struct st_sampler *s, int32_t token);

#endif /* STRATA_ENGINE_JSON_MASK_H */
