/* json_schema_internal.h -- the compiled schema's node table, shared by
 * the compiler (json_schema.c) and the validator (json_schema_state.c).
 *
 * Node 0 is "anything" (the schema {} or true). After compilation no node
 * refers to a $ref node (references are followed) and every union's
 * members are plain nodes (nested unions are flattened).
 */
#ifndef STRATA_TEXT_JSON_SCHEMA_INTERNAL_H
#define STRATA_TEXT_JSON_SCHEMA_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "strata/json_schema.h"
#include "strata/str.h"

enum { JS_PLAIN, JS_UNION, JS_REF };

/* type bits */
#define JT_OBJ  1u
#define JT_ARR  2u
#define JT_STR  4u
#define JT_NUM  8u
#define JT_INT  16u
#define JT_BOOL 32u
#define JT_NULL 64u
#define JT_ALL  127u

struct js_node {
    uint8_t  kind;          /* JS_* */
    uint8_t  types;         /* JT_* allowed */
    uint8_t  has_enum;      /* the value must be one of lits[lit_first, +n_lits) */
    uint8_t  n_lits;
    uint32_t lit_first;
    /* object */
    uint32_t prop_first;
    uint32_t n_props;       /* <= ST_JSON_SCHEMA_MAX_PROPS */
    uint64_t required;      /* bit i: property i is required */
    int32_t  additional;    /* node of keys not listed; -1: none allowed */
    /* array */
    int32_t  items;         /* node of every item */
    uint32_t min_items, max_items;
    /* union: alts[alt_first, +n_alts); ref: target node (-1 while unresolved) */
    uint32_t alt_first, n_alts;
    int32_t  target;
    uint32_t ref_name;      /* ref: def name (strs offset), ref_len bytes */
    uint32_t ref_len;
};

struct js_prop {
    uint32_t key, key_len;  /* strs: the key as it is written (escaped, no quotes) */
    int32_t  node;
};

struct js_lit {
    uint32_t off, len;      /* strs: the value's JSON text */
};

struct st_json_schema {
    atomic_int refs;
    struct js_node *nodes;
    uint32_t n_nodes;
    struct js_prop *props;
    struct js_lit *lits;
    int32_t *alts;
    char *strs;
    int32_t root;
};

/* The empty text, reading a value of node 'node' instead of the root (the
 * call grammar validates each Qwen3-Coder parameter value on its own). */
void st_js_state_init_node(struct st_json_schema_state *st, const struct st_json_schema *s,
                           int32_t node);

#endif /* STRATA_TEXT_JSON_SCHEMA_INTERNAL_H */
