/* gbnf.h -- llama.cpp's GBNF grammars (the `grammar` request field,
 * docs/API.md "Grammars (GBNF)"): compile a grammar's text into a small
 * program, and recognize a text against it one byte at a time, for
 * constrained sampling.
 *
 * The format: rules `name ::= alternatives` (names of letters, digits,
 * '-' and '_'; `root` is the start rule), alternatives `|`, sequences,
 * groups `( )`, literals "..." and character classes [a-z] / [^...]
 * (escapes \n \t \r \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH), `.` (any
 * character), the repetitions `*` `+` `?` `{m}` `{m,}` `{m,n}`, comments
 * `#` to the end of the line. A newline ends a rule, except inside a
 * group or right after `::=` or `|`. Terminals are Unicode code points;
 * the text is UTF-8 (strict: no overlong forms, no surrogates).
 *
 * Refused at compile time, with "line L, column C: ..." in the message
 * (columns count characters): syntax errors, an undefined rule (named),
 * a rule defined twice, no `root`, left recursion (a rule that can reach
 * itself before any character, named; a repetition of something that may
 * be empty), a rule reachable from `root` that cannot produce any finite
 * text, a grammar over the work bound (below, named), and the limits
 * below. llama.cpp's token references (`<[id]>`, `<text>`, `!<...>`) are
 * not supported: they match token ids, and this recognizer reads text
 * (docs/API.md "Grammars (GBNF)").
 *
 * Alternatives of a rule that start with the same symbol are merged at
 * compile time (left factoring), so a choice among many literals is few
 * stacks. The recognizer (a pushdown automaton per way of reading the
 * text so far, as llama.cpp's grammar stacks) never accepts a byte that leaves no
 * way to finish: every stack it keeps can still be completed within
 * ST_GBNF_MAX_DEPTH entries (each element knows the least depth its rest
 * needs). Past ST_GBNF_MAX_STACKS ways at once, the later ones are
 * dropped (the text stays in the language; fewer texts can be written).
 * Work: the expansion after each character has a budget (65,536 element
 * visits, all stacks together). The compiler bounds the visits one
 * stack's expansion may take (grammar/gbnf/bound.c) and refuses, naming a rule, a
 * grammar where that could exceed ST_GBNF_MAX_WORK (a deep tree or a long
 * row of rules that may match the empty text): so the first stack that
 * takes a byte always expands in full, and a byte first_bytes allows
 * always leaves a way on. Later stacks past the budget are dropped, as
 * past ST_GBNF_MAX_STACKS.
 *
 * Ownership: a compiled grammar is immutable and reference counted
 * (atomic: the HTTP thread compiles, engine threads read); a state
 * borrows it.
 */
#ifndef STRATA_GBNF_H
#define STRATA_GBNF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/err.h"

#define ST_GBNF_MAX_TEXT     (256 * 1024)   /* grammar text, bytes */
#define ST_GBNF_MAX_ELEMENTS 65000          /* compiled program elements (terminals, references) */
#define ST_GBNF_MAX_RULES    16384          /* rules, the synthesized ones included */
#define ST_GBNF_MAX_REPEAT   1000           /* m and n of {m,n} */
#define ST_GBNF_MAX_NEST     64             /* groups nested in groups */
#define ST_GBNF_MAX_STACKS   256            /* ways of reading the text at once */
#define ST_GBNF_MAX_DEPTH    128            /* entries of one stack */
#define ST_GBNF_MAX_ENTRIES  8192           /* entries of all stacks together */
#define ST_GBNF_MAX_WORK     16384          /* element visits of one stack's expansion */

struct st_gbnf;

/* Caller-owned value (about 17 KiB). Stack i is e[off[i], off[i+1]),
 * bottom first; its top is the program element to match next (a
 * terminal); an empty stack means the text may end here. Copy with
 * st_gbnf_state_copy, which copies the used part only. */
struct st_gbnf_state {
    const struct st_gbnf *g;     /* borrowed */
    uint16_t n;                  /* live stacks; 0: invalid (sticky) */
    uint8_t  u8_len;             /* a character being read: its bytes (2-4) */
    uint8_t  u8_left;            /* ... still to come (0: between characters) */
    uint32_t u8_cp;              /* ... its bits so far */
    uint16_t off[ST_GBNF_MAX_STACKS + 1];
    uint16_t e[ST_GBNF_MAX_ENTRIES];
};

/* Compile 'text' (n bytes) into *out (one reference, the caller's).
 * ST_ERR_INVALID with "line L, column C: ..." for a bad grammar (or
 * one over the work bound);
 * ST_ERR_NOMEM. */
enum st_status st_gbnf_compile(const char *text, size_t n, struct st_gbnf **out,
                               struct st_err *err);
void st_gbnf_ref(struct st_gbnf *g);
/* Drop a reference; the last one frees. NULL is a no-op. */
void st_gbnf_unref(struct st_gbnf *g);
/* Rules (the synthesized ones included) and program elements (tests). */
size_t st_gbnf_n_rules(const struct st_gbnf *g);
size_t st_gbnf_n_elements(const struct st_gbnf *g);
/* The most element visits one stack's expansion after a character may
 * take (the compile-time bound; at most ST_GBNF_MAX_WORK; tests). */
size_t st_gbnf_max_work(const struct st_gbnf *g);

/* The empty text. */
void st_gbnf_state_init(struct st_gbnf_state *st, const struct st_gbnf *g);
void st_gbnf_state_copy(struct st_gbnf_state *dst, const struct st_gbnf_state *src);
/* Append one byte; false when no text of the grammar starts with the
 * text (then the state stays invalid). */
bool st_gbnf_push(struct st_gbnf_state *st, unsigned char b);
bool st_gbnf_feed(struct st_gbnf_state *st, const char *s, size_t n);
bool st_gbnf_valid(const struct st_gbnf_state *st);
/* The text is in the grammar's language (it may still go on). */
bool st_gbnf_complete(const struct st_gbnf_state *st);
/* Can some text follow (false: complete and nothing may come)? */
bool st_gbnf_may_continue(const struct st_gbnf_state *st);
/* first[b] = st_gbnf_push would take byte b now (without copying the
 * state: from the stacks' top terminals; exact). */
void st_gbnf_first_bytes(const struct st_gbnf_state *st, bool first[256]);
/* The state's loop, for the mask's fast path: loop[b] for an ASCII byte b
 * = after b the state is exactly the same (a `[^"]*` being read, with
 * nothing else in play that takes b); loop[b] for b >= 0x80 = the same
 * holds for every whole non-ASCII character. False (and loop all false)
 * when no byte loops, or in the middle of a character. */
bool st_gbnf_loop_bytes(const struct st_gbnf_state *st, bool loop[256]);

#endif /* STRATA_GBNF_H */
