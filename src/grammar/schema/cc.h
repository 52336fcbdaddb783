/* grammar/schema/cc.h -- the schema compiler's context, shared by
 * schema.c (the structure: types, objects, arrays, anyOf, $ref) and
 * values.c (what a scalar may be: ranges, lengths, enum and
 * const). Private to those two files.
 */
#ifndef STRATA_GRAMMAR_SCHEMA_CC_H
#define STRATA_GRAMMAR_SCHEMA_CC_H

#include "chat/json/json.h"
#include "grammar/schema/internal.h"

struct js_cc {
    struct st_buf nodes, props, lits, alts, strs;
    struct st_buf rxs;                 /* struct js_regex: the string automata */
    struct st_buf rx_keys;             /* per automaton: what it was built from
                                        * (struct jsc_rx_key + the pattern's bytes) */
    size_t rx_cells;                   /* table cells of all of them */
    uint64_t rx_work;                  /* their construction steps (grammar/regex/regex.h) */
    struct st_str defs, definitions;   /* the root's $defs / definitions (ptr NULL: none) */
    char   path[160];
    size_t path_len;
    int    depth;
    struct st_err *err;
};

#define NODE(c, i) (((struct js_node *)(c)->nodes.data)[i])

/* The keywords of one schema object that we read. */
struct js_kw {
    struct st_str type, properties, required, additional, en, cn, items, min_items, max_items,
                  prefix_items, additional_items, any_of, all_of, ref, nullable, bound[4], min_len, max_len, pattern, mult;
    struct st_str format;   /* an assertion, yet not counted in n_valid (an annotation
                             * beside anyOf / $ref, as it was before it was enforced) */
    int n_valid;   /* validating keywords besides anyOf/allOf/$ref */
};

/* A 400 naming the schema path: msg from fmt, then " (at '/path')". */
enum st_status jsc_fail(struct js_cc *c, const char *fmt, ...) ST_PRINTF(2, 3);
/* Append a decoded JSON string 's' to strs re-escaped as the server
 * writes strings (quotes included when 'quoted'); its offset and length. */
enum st_status jsc_put_string(struct js_cc *c, struct st_str s, bool quoted, uint32_t *off,
                              uint32_t *len);
/* v as a count (an integer in [0, 1e9]) for keyword 'kw', or a 400. */
enum st_status jsc_get_count(struct js_cc *c, struct st_str v, const char *kw, uint32_t *out);

/* values.c: node id's minimum/maximum/exclusive* (from k's
 * bounds), minLength/maxLength, and enum/const values, each checked
 * against the node's types (a value no type takes is dropped; nothing
 * left is a 400). Called in this order, after the types are set. */
enum st_status jsc_compile_range(struct js_cc *c, int32_t id, const struct js_kw *k);
/* multipleOf (before jsc_compile_range): a positive integer divisor (a
 * 400 for any other); the node's numbers become integers. */
enum st_status jsc_compile_multiple(struct js_cc *c, int32_t id, const struct js_kw *k);
enum st_status jsc_compile_lengths(struct js_cc *c, int32_t id, const struct js_kw *k);
enum st_status jsc_parse_enum(struct js_cc *c, int32_t id, struct st_str en, struct st_str cn);

/* pattern.c: node id's pattern and format (a known one) as
 * one DFA with its minLength / maxLength folded in (called after
 * jsc_compile_lengths, before jsc_parse_enum). A string literal (decoded
 * UTF-8) fits node id's automaton. */
enum st_status jsc_compile_pattern(struct js_cc *c, int32_t id, const struct js_kw *k);
bool jsc_string_fits(const struct js_cc *c, int32_t id, const char *s, size_t n);

#endif /* STRATA_GRAMMAR_SCHEMA_CC_H */
