/* grammar/schema/internal.h -- the compiled schema's node table, shared by
 * the compiler (schema.c) and the validator (state.c).
 *
 * Node 0 is "anything" (the schema {} or true). After compilation no node
 * refers to a $ref node (references are followed) and every union's
 * members are plain nodes (nested unions are flattened).
 */
#ifndef STRATA_GRAMMAR_SCHEMA_INTERNAL_H
#define STRATA_GRAMMAR_SCHEMA_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "strata/json_schema.h"
#include "strata/str.h"
#include "grammar/regex/regex.h"

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
    int32_t  items;         /* node of every item past the tuple's */
    uint32_t prefix_first;  /* tuple: item i < n_prefix is node alts[prefix_first + i] */
    uint32_t n_prefix;
    uint32_t min_items, max_items;
    /* union: alts[alt_first, +n_alts); ref: target node (-1 while unresolved) */
    uint32_t alt_first, n_alts;
    int32_t  target;
    uint32_t ref_name;      /* ref: def name (strs offset), ref_len bytes */
    uint32_t ref_len;
    /* has_range JS_RANGE_INT (the node allows integers, not numbers): a
     * number is an integer in [imin, imax]; a side with no bound is
     * +-JS_INT_OPEN (which caps such an integer at 10^18).
     * JS_RANGE_NUM (numbers allowed): the value is within nlo / nhi as
     * nflags (JS_NR_*) say; magnitudes as fixed point. */
    uint8_t  has_range;
    uint8_t  nflags;
    int64_t  imin, imax;
    uint64_t mult;          /* JS_RANGE_INT: multipleOf (a positive integer; 0: none) */
    struct js_fx { uint64_t ip, fp; } nlo, nhi;   /* ip + fp / 10^18 */
    /* string: length in code points (an escape is one, a \u surrogate
     * pair one); max_len UINT32_MAX: no bound */
    uint32_t min_len, max_len;
    /* string: pattern / format (and with them the lengths) as a DFA:
     * schema rx[rx]; -1: none */
    int32_t  rx;
};

enum { JS_RANGE_INT = 1, JS_RANGE_NUM = 2 };
#define JS_NR_LO      1u   /* nlo is a bound */
#define JS_NR_LO_NEG  2u   /* ... a negative one (never -0) */
#define JS_NR_LO_OPEN 4u   /* ... exclusive */
#define JS_NR_HI      8u
#define JS_NR_HI_NEG  16u
#define JS_NR_HI_OPEN 32u
#define JS_FX_ONE     UINT64_C(1000000000000000000)   /* fp of 1: 18 fraction digits */
#define JS_INT_OPEN INT64_C(1000000000000000000)   /* 10^18 */
#define JS_BOUND_MAX (INT64_C(1) << 53)            /* |minimum| ... at most this */

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
    struct js_regex *rx;   /* n_rx string automata */
    uint32_t n_rx;
    int32_t root;
};

/* The empty text, reading a value of node 'node' instead of the root (the
 * call grammar validates each Qwen3-Coder parameter value on its own). */
void st_js_state_init_node(struct st_json_schema_state *st, const struct st_json_schema *s,
                           int32_t node);

/* A JSON number's value, exactly: its sign (-0 is 0), the magnitude of its
 * integer part (truncated toward zero), its first 18 fraction digits
 * (fp: the fraction times 10^18), whether any fraction digit is nonzero
 * and whether one past the 18th is. */
struct js_dec {
    bool     neg, frac, fine;
    uint64_t ip, fp;
};

/* Read 'v' (a valid JSON number); false: its magnitude is above
 * JS_BOUND_MAX (2^53). */
bool st_js_parse_dec(struct st_str v, struct js_dec *d);
/* The least integer a lower bound admits, or the greatest an upper one
 * does (exclusive: the bound itself is out). */
int64_t st_js_int_bound(const struct js_dec *d, bool upper, bool exclusive);
/* Signed order of two values (their 'fine' digits aside). */
int st_js_dec_cmp(const struct js_dec *a, const struct js_dec *b);

/* A ranged integer (JS_RANGE_INT) of sign 'neg' with digits of magnitude
 * m so far (m 0 with 'grows': only the '-'): can it still land in the
 * node's range, a multiple of its multipleOf? With 'grows' false: is it
 * there now? */
bool st_js_int_reach(const struct js_node *n, bool neg, uint64_t m, bool grows);

/* A number's text so far, for JS_RANGE_NUM (range.c): "-"
 * (JS_NT_SIGN), "0" / "-0" (JS_NT_ZERO), integer digits that may grow
 * (JS_NT_INT, v.ip), or up to and into the fraction (JS_NT_FRAC: v, the
 * n_frac <= 18 digits of fp so far, tail: a nonzero digit past them). */
enum { JS_NT_SIGN, JS_NT_ZERO, JS_NT_INT, JS_NT_FRAC };
struct js_numtext {
    uint8_t  part;
    bool     neg, tail;
    uint16_t n_frac;
    struct js_fx v;
};

/* Some completion of the text (without an exponent) is within node n's
 * JS_RANGE_NUM range. */
bool st_js_num_reach(const struct js_node *n, const struct js_numtext *t);

/* The number of sign 'neg' and magnitude v (tail: plus a nonzero tail
 * below 10^-18) is within node n's JS_RANGE_NUM range. */
bool st_js_num_in_range(const struct js_node *n, bool neg, struct js_fx v, bool tail);

/* pstr.c: one byte of a string whose node has a pattern
 * (r), from after its opening quote: the JSON escapes and UTF-8 decoded,
 * each code point run through r; a byte is refused as soon as no
 * completion can match. JS_PSTR_CLOSED: the closing quote (the value is
 * done: the caller ends it). */
enum { JS_PSTR_REFUSE, JS_PSTR_TAKEN, JS_PSTR_CLOSED };
int st_js_pstr_push(const struct js_regex *r, struct st_js_stack *k, unsigned char b);

/* The modes and flags of a validator stack (struct st_js_stack: mode,
 * flags, cand), read by state.c, which drives them, and by
 * run.c, which answers the sampler's questions about them. */
enum jsmode {
    S_VALUE,       /* a value of node 'cur' */
    S_ARR_FIRST,   /* after '[': a value of 'cur' (the items) or ']' */
    S_OBJ_FIRST,   /* after '{': a key or '}' */
    S_KEY,         /* after an object's ',': a key */
    S_COLON,       /* after a key: ':' ('cur' is the member's node) */
    S_AFTER,       /* after a value in a container: ',' or the closer */
    S_DONE,        /* the document is complete: whitespace only */
    S_STR,         /* in a free string */
    S_ESC,         /* after '\' in one */
    S_UHEX,        /* in \uXXXX; pos = digits seen */
    S_KEYSTR,      /* in an object key */
    S_LIT,         /* in an enum literal or true/false/null */
    S_NUM_MINUS, S_NUM_ZERO, S_NUM_INT, S_NUM_DOT, S_NUM_FRAC, S_NUM_E, S_NUM_ESIGN,
    S_NUM_EXP,
    S_PSTR,        /* in a string of a node with a pattern (pstr.c) */
};

#define FL_INT     1u   /* number: an integer (no fraction, no exponent) */
#define FL_BUILTIN 2u   /* literal: from 'builtins', not the node's enum */
#define FL_KEYESC  4u   /* key: a backslash was read */
#define FL_KEYBS   8u   /* key: the byte before was a backslash (escaping this one) */
#define FL_NEG     16u  /* ranged number or integer: a '-' was read */
#define FL_HISURR  32u  /* string: the last thing was a \uD800-\uDBFF escape */
#define FL_PENDLOW 64u  /* string: in an escape after one (uncounted until known) */
#define FL_TAIL    128u /* ranged number: a nonzero fraction digit past the 18th */

/* In a string, 'cand' holds the code points so far (low 32 bits) and, in
 * a \uXXXX escape, the hex digits' value so far (bits 32..47); in a
 * ranged integer, the magnitude of the digits so far. */
#define CP_MASK UINT64_C(0xffffffff)

#endif /* STRATA_GRAMMAR_SCHEMA_INTERNAL_H */
