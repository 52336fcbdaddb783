/* json_schema.h -- response_format json_schema (docs/API.md
 * "response_format"): compile a JSON Schema into a node table, and validate
 * a text against it one byte at a time, for constrained sampling.
 *
 * The validator answers, after every byte, the same two questions as
 * json_prefix.h: can the text still become a document valid against the
 * schema, and is it one already? It never accepts a byte that leaves no
 * way to finish (a ',' where no key or item may follow, a '}' before every
 * required key, ...), so a sampler that only takes accepted bytes always
 * has a way to go on.
 *
 * The subset (what strict-mode clients send): type (one or an array),
 * properties, required, additionalProperties (false / true / a schema),
 * enum and const (scalars only, matched as the JSON text they print as),
 * items, minItems, maxItems, anyOf and oneOf (both as anyOf), allOf with
 * one member, $ref to "#", "#/$defs/X" or "#/definitions/X" (recursion
 * allowed), nullable (OpenAPI), minimum / maximum / exclusiveMinimum /
 * exclusiveMaximum (exact on the decimal text; no exponent under a range),
 * minLength / maxLength (code points), pattern (an ECMA-262 subset, as a
 * DFA over code points: grammar/regex/regex.h) and format (date, time, date-time,
 * duration, uuid, ipv4, ipv6, hostname, email as built-in patterns;
 * others ignored), multipleOf (a positive integer: the numbers become
 * integers). Annotations (description, title, default, examples,
 * $schema, $id, $comment, ...) are ignored; the keywords that would
 * change what is valid and are not enforced (patternProperties, not, if,
 * ...) make compilation fail with a message naming them: never silently
 * dropped.
 *
 * State: ST_JSON_SCHEMA_MAX_STACKS deterministic stacks, one per anyOf
 * alternative still in play (an alternative that cannot take a byte
 * drops out; where the value of an anyOf starts, the members that take
 * its first byte get a stack each while stacks are free: the others are
 * not tried), each at most
 * ST_JSON_SCHEMA_MAX_DEPTH containers deep. At most ST_JSON_SCHEMA_MAX_WS
 * whitespace bytes in a row between tokens (none after the document when
 * the sampler may end it), so a model cannot loop on blanks.
 *
 * Ownership: a compiled schema is immutable and reference counted (atomic:
 * the HTTP thread compiles, engine threads read); a state borrows it.
 */
#ifndef STRATA_JSON_SCHEMA_H
#define STRATA_JSON_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/err.h"

#define ST_JSON_SCHEMA_MAX_DEPTH  32      /* open containers in the document */
#define ST_JSON_SCHEMA_MAX_STACKS 16      /* anyOf alternatives in play at once */
#define ST_JSON_SCHEMA_MAX_WS     20      /* whitespace bytes in a row (llama.cpp's grammars: 20) */
#define ST_JSON_SCHEMA_MAX_TEXT   (256 * 1024)   /* schema text, bytes */
#define ST_JSON_SCHEMA_MAX_NODES  4096    /* compiled schema nodes */
#define ST_JSON_SCHEMA_MAX_PROPS  64      /* properties of one object schema */
#define ST_JSON_SCHEMA_MAX_ENUM   64      /* enum values of one schema */
#define ST_JSON_SCHEMA_MAX_ALTS   16      /* anyOf members, after flattening */
#define ST_JSON_SCHEMA_MAX_TUPLE  64      /* prefixItems (tuple items) of one array schema */
#define ST_JSON_SCHEMA_MAX_LITERAL 4096   /* bytes of a key or an enum/const value as written
                                           * (the validator's position in one is 16-bit) */
#define ST_JSON_SCHEMA_MAX_PATTERNS 128   /* distinct pattern / format automata */
#define ST_JSON_SCHEMA_MAX_RX_CELLS (4u << 20)   /* their table cells, in all (8 MiB) */

struct st_json_schema;

/* One open container. */
struct st_js_frame {
    uint16_t node;      /* its schema node */
    uint8_t  array;     /* 1: array, 0: object */
    uint8_t  pad;
    uint32_t count;     /* array: items so far */
    uint64_t seen;      /* object: bit i = property i present */
};

/* One alternative's pushdown automaton (grammar/schema/state.c). */
struct st_js_stack {
    uint8_t  mode;      /* lexical state (enum jsmode) */
    uint8_t  depth;     /* open containers */
    uint8_t  ws;        /* whitespace bytes in a row */
    uint8_t  flags;     /* number: integer only; literal: the built-in set */
    uint16_t cur;       /* node of the value to read or being read */
    uint16_t pos;       /* bytes of the key or literal matched; string: UTF-8 to come */
    uint64_t cand;      /* keys or literals that still match; string: code points;
                         * ranged number: the integer part's magnitude */
    uint64_t frac;      /* ranged number: the fraction times 10^18 */
    uint16_t rx;        /* pattern string: its DFA state */
    uint8_t  psub;      /* pattern string: escape / \u digit / pending low surrogate */
    uint8_t  pu8;       /* pattern string: UTF-8 bytes still to come, its length << 2 */
    uint32_t pacc;      /* pattern string: UTF-8 bits so far, or \u digits (low 16 bits)
                         * and a high surrogate's 10 bits (<< 16) */
    struct st_js_frame f[ST_JSON_SCHEMA_MAX_DEPTH];
};

/* Caller-owned value (about 8 KiB). Copy with st_json_schema_state_copy,
 * which copies the used part only. */
struct st_json_schema_state {
    const struct st_json_schema *schema;   /* borrowed */
    uint32_t n;                            /* live stacks; 0: invalid (sticky) */
    struct st_js_stack s[ST_JSON_SCHEMA_MAX_STACKS];
};

/* Compile 'text' (n bytes, one JSON value: the schema) into *out (one
 * reference, the caller's). ST_ERR_INVALID with a message naming the
 * keyword or the limit for an unsupported or malformed schema; ST_ERR_NOMEM. */
enum st_status st_json_schema_compile(const char *text, size_t n, struct st_json_schema **out,
                                      struct st_err *err);
void st_json_schema_ref(struct st_json_schema *s);
/* Drop a reference; the last one frees. NULL is a no-op. */
void st_json_schema_unref(struct st_json_schema *s);
/* Compiled nodes (tests, docs). */
size_t st_json_schema_n_nodes(const struct st_json_schema *s);

/* The empty text: valid, not complete. */
void st_json_schema_state_init(struct st_json_schema_state *st, const struct st_json_schema *s);
void st_json_schema_state_copy(struct st_json_schema_state *dst,
                               const struct st_json_schema_state *src);
/* Append one byte; false when no document valid against the schema starts
 * with the text (then the state stays invalid). */
bool st_json_schema_push(struct st_json_schema_state *st, unsigned char b);
bool st_json_schema_feed(struct st_json_schema_state *st, const char *s, size_t n);
bool st_json_schema_valid(const struct st_json_schema_state *st);
/* The text is a valid document (a top-level number may still go on). */
bool st_json_schema_complete(const struct st_json_schema_state *st);
/* Nothing but whitespace so far. */
bool st_json_schema_empty(const struct st_json_schema_state *st);
/* Every stack is inside a free string (not an enum literal, not a key
 * that may still be a listed one; an extra key that matches no listed key
 * counts; a "pattern" string once whatever follows matches), at a
 * character boundary: any valid UTF-8 (its last character may be cut
 * short) without '"', '\\' and bytes < 0x20 may come and leave it so (for
 * a run of up to 256 bytes). */
bool st_json_schema_in_string(const struct st_json_schema_state *st);
/* Every stack is between tokens: a whitespace byte changes nothing but the
 * whitespace count. *ws_left: how many whitespace bytes may still come in
 * a row (UINT16_MAX: no cap, after the document). */
bool st_json_schema_between(const struct st_json_schema_state *st, uint16_t *ws_left);

/* ---- the sampler's fast path in bounded and pattern strings ------------
 * (src/engine/sample/json_mask.c; grammar/schema/run.c). Where the state has one
 * stack inside a string value that is not free (st_json_schema_in_string
 * says no: a maxLength with little room left, or a pattern), what a run
 * of "plain" bytes (0x20 and up, no '"' or '\\': they cannot leave the
 * string) does to it, so that the mask decides most tokens without a
 * walk:
 *   - ST_JS_RUN_COUNT (a string with a length bound, at a character
 *     boundary): plain bytes of k code points (the bytes outside
 *     0x80-0xBF) are all taken iff they are valid UTF-8 (the last
 *     character may be cut short) and k <= room;
 *   - ST_JS_RUN_PATTERN (a pattern string at a character): after i <=
 *     room bytes of 'set' (ASCII bytes that lead each DFA state of the
 *     chain to the same next one) the DFA is in chain[ST_MIN(i, n_chain -
 *     1)] (room UINT32_MAX: the last one loops on the set, or matches
 *     whatever follows); with dead_after, one more byte of the set is
 *     refused; where closed[j], every plain byte outside the set is
 *     refused in chain[j]. The rest of a token is decided by
 *     st_json_schema_run_feed. */
#define ST_JSON_SCHEMA_RUN_MAX 256   /* chain length looked at (a token's most bytes) */
enum { ST_JS_RUN_NONE, ST_JS_RUN_COUNT, ST_JS_RUN_PATTERN };
struct st_json_schema_run {
    uint8_t  kind;          /* ST_JS_RUN_* */
    bool     dead_after;
    uint32_t room;
    uint64_t set[2];        /* bit b of set[b >> 6]: ASCII byte b */
    uint32_t n_chain;       /* >= 1 for PATTERN */
    uint16_t chain[ST_JSON_SCHEMA_RUN_MAX + 1];
    bool     closed[ST_JSON_SCHEMA_RUN_MAX + 1];
};

/* Fill *out for st (kind NONE where the fast path does not apply). */
void st_json_schema_run_view(const struct st_json_schema_state *st,
                             struct st_json_schema_run *out);
/* PATTERN: do the plain bytes p[0..n) all go on from the state after i
 * (<= r->room) bytes of r->set? Exactly what feeding the i bytes, then
 * p, to a copy of st would answer. */
bool st_json_schema_run_feed(const struct st_json_schema_state *st,
                             const struct st_json_schema_run *r, uint32_t i,
                             const unsigned char *p, size_t n);

#endif /* STRATA_JSON_SCHEMA_H */
