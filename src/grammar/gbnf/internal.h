/* grammar/gbnf/internal.h -- the compiled GBNF program, shared by the parser
 * (parse.c), the checks and layout (gbnf.c) and the recognizer
 * (state.c).
 *
 * Program: el[] holds every alternative of every rule as a run of
 * elements ended by GB_END. el[0..2) is the start: a reference to root,
 * then GB_END. Rule r's alternatives start at alt[rule_alt[r] ..
 * rule_alt[r + 1]) (element indices). Character sets: an ASCII bitmap,
 * then sorted, merged ranges of the code points >= 0x80.
 */
#ifndef STRATA_GRAMMAR_GBNF_INTERNAL_H
#define STRATA_GRAMMAR_GBNF_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "strata/gbnf.h"

enum { GB_END, GB_CHAR, GB_REF };

#define GB_INF 255   /* need: cannot be completed within ST_GBNF_MAX_DEPTH */

struct gb_el {
    uint8_t  type;     /* GB_* */
    uint8_t  need;     /* stack entries this element's rest needs above its own (GB_INF) */
    uint16_t arg;      /* GB_CHAR: set; GB_REF: rule */
};

struct gb_set {
    uint64_t ascii[2];     /* bit c: code point c < 128 is in the set */
    uint32_t first, n;     /* ranges[first, +n): code points >= 0x80 */
    uint8_t  all_high;     /* every code point >= 0x80 is in the set */
    uint8_t  any_high;     /* some code point >= 0x80 is */
};

struct gb_range {
    uint32_t lo, hi;       /* inclusive */
};

struct st_gbnf {
    atomic_int refs;
    struct gb_el *el;
    uint32_t n_el;
    uint32_t *alt;         /* first element of each alternative */
    uint32_t *rule_alt;    /* n_rules + 1 */
    uint32_t n_rules;
    struct gb_set *sets;
    uint32_t n_sets;
    struct gb_range *ranges;
    uint32_t n_ranges;
    uint32_t work;         /* element visits one stack's expansion may take, at most */
};

/* ---- the parser's output (parse.c) ------------------------------ */

/* Body symbols: the kind in the top two bits. */
#define GB_SYM_CHAR (1u << 30)
#define GB_SYM_REF  (2u << 30)
#define GB_SYM_ALT  (3u << 30)   /* separates alternatives */
#define GB_SYM_KIND(s) ((s) & (3u << 30))
#define GB_SYM_ARG(s)  ((s) & ((1u << 30) - 1))

enum { GB_RULE_NAMED, GB_RULE_GROUP, GB_RULE_REPEAT };

struct gb_rule_ir {
    uint32_t name, name_len;   /* in the text (named rules) */
    uint32_t at;               /* named: where it is defined (else its first reference);
                                * synthesized: the construct */
    uint32_t ref_at;           /* first reference (named) */
    uint8_t  kind;             /* GB_RULE_* */
    uint8_t  defined;
    uint32_t *body;            /* owned; n symbols */
    uint32_t n, cap;
};

struct gb_ir {
    const char *text;
    size_t len;
    struct gb_rule_ir *rules;
    uint32_t n_rules, cap_rules;
    struct gb_set *sets;
    uint32_t n_sets, cap_sets;
    struct gb_range *ranges;
    uint32_t n_ranges, cap_ranges;
    uint32_t n_syms;           /* symbols in all bodies (the program's size) */
    int32_t  root;             /* -1: none */
};

/* Parse 'text' into ir (zeroed by the caller); fini frees it either way. */
enum st_status st_gb_parse(struct gb_ir *ir, const char *text, size_t n, struct st_err *err);
void st_gb_ir_fini(struct gb_ir *ir);
/* Merge the alternatives of each rule that start with the same symbol
 * (after the checks that name rules: it makes rules of its own). */
enum st_status st_gb_factor(struct gb_ir *ir, struct st_err *err);
/* "line L, column C: " + fmt into err, for an error at byte offset 'at'. */
enum st_status st_gb_fail(const struct gb_ir *ir, size_t at, struct st_err *err,
                          const char *fmt, ...) ST_PRINTF(4, 5);

/* The recognizer's work budget: element visits per character, all stacks
 * together (state.c); a grammar in which one stack's expansion could
 * take more than GB_WORK_MAX is refused at compile time (bound.c), so
 * the first matching stack always expands in full. */
#define GB_BUDGET   (1u << 16)
#define GB_WORK_MAX ST_GBNF_MAX_WORK   /* a quarter of the budget */

/* What the work bound reads of the compiler's analysis (gbnf.c). */
struct gb_bound_in {
    const struct gb_ir *ir;
    const struct st_gbnf *g;   /* laid out, checked: no left recursion */
    const uint32_t *lhs;       /* n_alts: each alternative's rule */
    uint32_t n_alts;
    const uint8_t *reach;      /* n_rules: reachable from root */
};

/* ST_ERR_INVALID naming a rule when one character could make the
 * recognizer visit more than GB_WORK_MAX elements (bound.c); *work:
 * the bound (saturated). */
enum st_status st_gb_check_work(const struct gb_bound_in *in, uint32_t *work,
                                struct st_err *err);

static inline bool st_gb_set_has(const struct st_gbnf *g, const struct gb_set *s, uint32_t cp)
{
    if (cp < 128)
        return (s->ascii[cp >> 6] >> (cp & 63)) & 1u;
    if (s->all_high || s->n == 0)
        return s->all_high;
    const struct gb_range *r = g->ranges + s->first;
    for (uint32_t i = 0; i < s->n; i++) {
        if (cp < r[i].lo)
            return false;
        if (cp <= r[i].hi)
            return true;
    }
    return false;
}

#endif /* STRATA_GRAMMAR_GBNF_INTERNAL_H */
