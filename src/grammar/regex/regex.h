/* grammar/regex/regex.h -- the JSON Schema "pattern" (and "format") automaton:
 * an ECMA-262 regular expression subset compiled to a DFA over Unicode
 * code points, for the schema validator (grammar/schema/pstr.c) to run on a
 * string value's decoded code points. Private to src/grammar.
 *
 * regex.c parses the pattern into a Thompson NFA (with ^ and $ as
 * zero-width assertions) and wraps it for JSON Schema's unanchored search
 * ([\s\S]* before and after); dfa.c builds the DFA by subset
 * construction, keeps only the states from which an accepting state can
 * still be reached (so "no transition" means "no completion can match"),
 * merges code point classes that every state treats alike, and intersects
 * two DFAs (pattern and format, or a pattern and minLength / maxLength).
 *
 * Limits (a 400 past them, with the reason): JS_RX_MAX_NFA NFA states
 * (counted repetition is expanded), JS_RX_MAX_SUBSET subset states,
 * JS_RX_MAX_STATES states and JS_RX_MAX_CELLS table cells after an
 * intersection, JS_RX_MAX_REPEAT for a {n,m} bound.
 */
#ifndef STRATA_GRAMMAR_REGEX_REGEX_H
#define STRATA_GRAMMAR_REGEX_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#define JS_RX_MAX_NFA    4096
#define JS_RX_MAX_SUBSET 4096
#define JS_RX_MAX_STATES 65000
#define JS_RX_MAX_CELLS  (1u << 20)   /* states x classes, 2 bytes each */
#define JS_RX_MAX_REPEAT 1000
#define JS_RX_MAX_WORK   40000000u    /* construction steps of one pattern (~0.1 s) */
#define JS_RX_MAX_WORK_ALL (5ull * JS_RX_MAX_WORK)   /* of all of a schema's patterns */
#define JS_RX_DEAD       0xffffu      /* no transition */
#define JS_RX_CP_END     0x110000u    /* one past the last code point */

/* A DFA; state 0 is the start. Code point cp belongs to interval i (the
 * last with lo[i] <= cp; lo[0] = 0), whose class is cls[i]. Every state
 * can reach an accepting one. n_states 0: nothing matches. Owned arrays. */
struct js_regex {
    uint32_t n_states, n_classes, n_iv;
    uint32_t *lo;       /* n_iv */
    uint16_t *cls;      /* n_iv */
    uint16_t *next;     /* n_states * n_classes: state, or JS_RX_DEAD */
    uint16_t ascii[128];   /* the class of each ASCII code point (no search) */
    uint8_t  *accept;   /* n_states: 0, or 1 | JS_RX_ANY when every code point
                         * leads back to the state (whatever follows matches) */
};
#define JS_RX_ANY 2u

/* Compile the pattern (UTF-8, n bytes, JSON Schema semantics: a search,
 * unanchored unless ^ / $ say so) into *out. *work: the construction
 * steps a schema's patterns spent so far, this one's added (a 400 past
 * JS_RX_MAX_WORK for one, JS_RX_MAX_WORK_ALL for all: else 128 patterns
 * near the first could take a minute). ST_ERR_INVALID with a message in
 * msg (naming the construct or the limit); ST_ERR_NOMEM. */
enum st_status st_js_regex_compile(const char *pat, size_t n, uint64_t *work,
                                   struct js_regex *out, char *msg, size_t msg_cap);
/* *out = strings both a and b accept. */
enum st_status st_js_regex_intersect(const struct js_regex *a, const struct js_regex *b,
                                     struct js_regex *out, char *msg, size_t msg_cap);
/* *out = strings of min..max code points (max UINT32_MAX: no bound). */
enum st_status st_js_regex_lengths(uint32_t min, uint32_t max, struct js_regex *out, char *msg,
                                   size_t msg_cap);
/* The fewest and most code points of a match (*longest UINT32_MAX:
 * unbounded). r has a state. */
void st_js_regex_span(const struct js_regex *r, uint32_t *shortest, uint32_t *longest);
void st_js_regex_free(struct js_regex *r);

/* The state after code point cp from state s, or JS_RX_DEAD. */
uint32_t st_js_regex_step(const struct js_regex *r, uint32_t s, uint32_t cp);
/* Some code point in [lo, hi] (surrogates excluded) has a transition from s. */
bool st_js_regex_live(const struct js_regex *r, uint32_t s, uint32_t lo, uint32_t hi);
/* The whole UTF-8 text s[0..n) matches (invalid UTF-8: no). */
bool st_js_regex_match(const struct js_regex *r, const char *s, size_t n);

/* ---- regex.c -> dfa.c: the NFA ---- */
enum { RN_SET, RN_SPLIT, RN_EPS, RN_BOL, RN_EOL, RN_FINAL };

struct rx_nstate {
    uint8_t  kind;          /* RN_* */
    int32_t  out, out1;     /* SET/EPS/BOL/EOL: out; SPLIT: out and out1 */
    uint32_t set_first;     /* SET: ranges[set_first .. +set_n) (pairs lo, hi) */
    uint32_t set_n;
};

struct rx_nfa {
    struct rx_nstate *st;
    uint32_t n, cap;
    uint32_t *ranges;       /* inclusive pairs */
    uint32_t n_ranges, cap_ranges;
    int32_t start;
};

/* Subset construction (dfa.c); *work as st_js_regex_compile's. */
enum st_status st_js_regex_from_nfa(const struct rx_nfa *nfa, uint64_t *work,
                                    struct js_regex *out, char *msg, size_t msg_cap);

#endif /* STRATA_GRAMMAR_REGEX_REGEX_H */
