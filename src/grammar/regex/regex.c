/* regex.c -- parse a JSON Schema "pattern" (an ECMA-262 regular
 * expression, the subset docs/API.md lists) into a Thompson NFA over
 * code points, then hand it to dfa.c (regex.h).
 *
 * Supported: literals (any code point, UTF-8 in the pattern), '.', the
 * escapes \d \D \w \W \s \S \t \n \r \v \f \0 \cX \xHH \uXXXX (a
 * surrogate pair of them is one code point) \u{X...} and an escaped
 * ASCII punctuation character, classes [...] with ranges, negation and the
 * class escapes, groups ( ), (?: ) and (?<name> ), alternation, the
 * quantifiers * + ? {n} {n,} {n,m} (lazy forms: the same language), and
 * the ^ / $ assertions. Refused, naming the construct: backreferences,
 * lookaround, \b / \B, \p{...}, inline flags, an unknown escape.
 *
 * Semantics: code points, not UTF-16 units (as with the "u" flag);
 * '.' is any code point but \n \r \u2028 \u2029; \s is ECMA's white space
 * and line terminators; ^ and $ only at the string's ends (no "m" flag).
 * The pattern is a search: the NFA is [\s\S]* pattern [\s\S]*.
 *
 * The parser builds a small syntax tree first; the NFA is emitted from it
 * back to front (each piece is given the state that follows it), which
 * makes the copies that counted repetition needs a plain recursion.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/unicode/unicode.h"
#include "grammar/regex/regex.h"

enum { A_SET, A_CAT, A_ALT, A_REP, A_BOL, A_EOL, A_EMPTY };

#define REP_INF UINT32_MAX
#define MAX_AST 4096
#define MAX_SET 256      /* ranges in one class */
#define MAX_NEST 64      /* group nesting */

struct rx_ast {
    uint8_t  kind;
    int32_t  a, b;               /* CAT / ALT: children; REP: a */
    uint32_t min, max;           /* REP */
    uint32_t set_first, set_n;   /* SET: nfa.ranges slice */
};

struct rx_parser {
    const unsigned char *p, *end;
    struct rx_ast *ast;
    uint32_t n_ast;
    struct rx_nfa *nfa;
    int nest;
    char *msg;
    size_t msg_cap;
    enum st_status rc;
};

struct rx_set {
    uint32_t n;
    uint32_t r[2 * MAX_SET];
};

static int32_t fail(struct rx_parser *ps, const char *fmt, ...) ST_PRINTF(2, 3);

static int32_t fail(struct rx_parser *ps, const char *fmt, ...)
{
    if (ps->rc == ST_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->msg, ps->msg_cap, fmt, ap);
        va_end(ap);
        ps->rc = ST_ERR_INVALID;
    }
    return -1;
}

/* ---- code point sets ---------------------------------------------------- */

static void set_add(struct rx_parser *ps, struct rx_set *s, uint32_t lo, uint32_t hi)
{
    if (s->n == MAX_SET) {
        fail(ps, "a character class has more than %d ranges", MAX_SET);
        return;
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
}

static int cmp_range(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sort and merge overlapping or touching ranges. */
static void set_norm(struct rx_set *s)
{
    qsort(s->r, s->n, 2 * sizeof(uint32_t), cmp_range);
    uint32_t w = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (w > 0 && s->r[2 * i] <= s->r[2 * w - 1] + 1) {
            s->r[2 * w - 1] = ST_MAX(s->r[2 * w - 1], s->r[2 * i + 1]);
        } else {
            s->r[2 * w] = s->r[2 * i];
            s->r[2 * w + 1] = s->r[2 * i + 1];
            w++;
        }
    }
    s->n = w;
}

/* The complement in [0, 0x10FFFF] (s normalized). */
static void set_negate(struct rx_parser *ps, struct rx_set *s)
{
    struct rx_set o = { 0 };
    uint32_t at = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (s->r[2 * i] > at)
            set_add(ps, &o, at, s->r[2 * i] - 1);
        at = s->r[2 * i + 1] + 1;
    }
    if (at < JS_RX_CP_END)
        set_add(ps, &o, at, JS_RX_CP_END - 1);
    *s = o;
}

/* \d \w \s (upper case: negated), added to s. */
static void set_class_escape(struct rx_parser *ps, struct rx_set *s, unsigned char e)
{
    static const uint32_t digit[] = { '0', '9' };
    static const uint32_t word[] = { '0', '9', 'A', 'Z', '_', '_', 'a', 'z' };
    static const uint32_t space[] = { 0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680,
                                      0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f,
                                      0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff };
    const uint32_t *t;
    size_t n;
    switch (e | 0x20) {
    case 'd': t = digit; n = 1; break;
    case 'w': t = word; n = 4; break;
    default: t = space; n = 10; break;
    }
    struct rx_set x = { 0 };
    for (size_t i = 0; i < n; i++)
        set_add(ps, &x, t[2 * i], t[2 * i + 1]);
    if (e >= 'A' && e <= 'Z')
        set_negate(ps, &x);
    for (uint32_t i = 0; i < x.n; i++)
        set_add(ps, s, x.r[2 * i], x.r[2 * i + 1]);
}

/* ---- the tree ----------------------------------------------------------- */

static int32_t node(struct rx_parser *ps, uint8_t kind, int32_t a, int32_t b)
{
    if (ps->rc != ST_OK)
        return -1;
    if (ps->n_ast == MAX_AST)
        return fail(ps, "the pattern is too long: more than %d pieces", MAX_AST);
    ps->ast[ps->n_ast] = (struct rx_ast){ .kind = kind, .a = a, .b = b };
    return (int32_t)ps->n_ast++;
}

static int32_t set_node(struct rx_parser *ps, struct rx_set *s)
{
    set_norm(s);
    struct rx_nfa *f = ps->nfa;
    if (!f->ranges || f->n_ranges + 2 * s->n > f->cap_ranges) {   /* "[]" first: no NULL + 0 */
        uint32_t cap = ST_MAX(2 * f->cap_ranges, f->n_ranges + 2 * s->n + 64);
        uint32_t *r = realloc(f->ranges, cap * sizeof(*r));
        if (!r) {
            ps->rc = ST_ERR_NOMEM;
            return -1;
        }
        f->ranges = r;
        f->cap_ranges = cap;
    }
    int32_t id = node(ps, A_SET, -1, -1);
    if (id < 0)
        return -1;
    memcpy(f->ranges + f->n_ranges, s->r, 2 * s->n * sizeof(uint32_t));
    ps->ast[id].set_first = f->n_ranges;
    ps->ast[id].set_n = s->n;
    f->n_ranges += 2 * s->n;
    return id;
}

static int32_t cp_node(struct rx_parser *ps, uint32_t cp)
{
    struct rx_set s = { 0 };
    set_add(ps, &s, cp, cp);
    return set_node(ps, &s);
}

/* ---- lexing ------------------------------------------------------------- */

static bool at(const struct rx_parser *ps, char c)
{
    return ps->p < ps->end && *ps->p == (unsigned char)c;
}

static int hexv(unsigned char b)
{
    if (b >= '0' && b <= '9')
        return b - '0';
    b |= 0x20;
    return b >= 'a' && b <= 'f' ? b - 'a' + 10 : -1;
}

/* n hex digits; -1 when they are not there. */
static int32_t hex_n(struct rx_parser *ps, int n)
{
    int32_t v = 0;
    for (int i = 0; i < n; i++) {
        if (ps->p + i >= ps->end || hexv(ps->p[i]) < 0)
            return -1;
        v = v * 16 + hexv(ps->p[i]);
    }
    ps->p += n;
    return v;
}

/* One code point of the pattern's UTF-8. */
static uint32_t next_cp(struct rx_parser *ps)
{
    uint32_t cp;
    size_t k = st_utf8_decode(ps->p, (size_t)(ps->end - ps->p), &cp);
    ps->p += k;
    if (cp & ST_UNI_INVALID) {
        fail(ps, "the pattern is not valid UTF-8");
        return 0;
    }
    return cp;
}

/* After "\u": XXXX (with a following \uXXXX low surrogate: one code
 * point) or {X...}. */
static uint32_t esc_u(struct rx_parser *ps)
{
    if (at(ps, '{')) {
        ps->p++;
        uint32_t v = 0;
        int nd = 0;
        while (ps->p < ps->end && hexv(*ps->p) >= 0 && v < JS_RX_CP_END) {
            v = v * 16 + (uint32_t)hexv(*ps->p++);
            nd++;
        }
        if (!nd || !at(ps, '}') || v >= JS_RX_CP_END)
            return (uint32_t)fail(ps, "a bad \\u{...} escape in the pattern");
        ps->p++;
        return v;
    }
    int32_t v = hex_n(ps, 4);
    if (v < 0)
        return (uint32_t)fail(ps, "a bad \\u escape in the pattern (4 hex digits)");
    if (v >= 0xd800 && v <= 0xdbff && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
        ps->p[1] == 'u') {
        const unsigned char *save = ps->p;
        ps->p += 2;
        int32_t lo = hex_n(ps, 4);
        if (lo >= 0xdc00 && lo <= 0xdfff)
            return 0x10000u + ((uint32_t)(v - 0xd800) << 10) + (uint32_t)(lo - 0xdc00);
        ps->p = save;
    }
    return (uint32_t)v;
}

/* An escape after '\' that stands for one code point (in or out of a
 * class); *cls set instead for \d \D \w \W \s \S. Refuses the rest. */
static uint32_t escape(struct rx_parser *ps, bool in_class, unsigned char *cls)
{
    *cls = 0;
    if (ps->p >= ps->end)
        return (uint32_t)fail(ps, "the pattern ends with a lone '\\'");
    unsigned char e = *ps->p++;
    switch (e) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
        *cls = e;
        return 0;
    case 't': return '\t';
    case 'n': return '\n';
    case 'r': return '\r';
    case 'v': return '\v';
    case 'f': return '\f';
    case 'u': return esc_u(ps);
    case 'x': {
        int32_t v = hex_n(ps, 2);
        return v < 0 ? (uint32_t)fail(ps, "a bad \\x escape in the pattern") : (uint32_t)v;
    }
    case 'c':
        if (ps->p < ps->end && ((*ps->p | 0x20) >= 'a' && (*ps->p | 0x20) <= 'z'))
            return (uint32_t)(*ps->p++ % 32);
        return (uint32_t)fail(ps, "a bad \\c escape in the pattern");
    case 'b':
        if (in_class)
            return 8;
        return (uint32_t)fail(ps, "'\\b' (word boundary) in 'pattern' is not supported");
    case 'B':
        return (uint32_t)fail(ps, "'\\B' (word boundary) in 'pattern' is not supported");
    case 'p': case 'P':
        return (uint32_t)fail(ps, "'\\%c{...}' (Unicode property) in 'pattern' is not supported",
                              e);
    case 'k':
        return (uint32_t)fail(ps, "'\\k<name>' (backreference) in 'pattern' is not supported");
    case '0':
        if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            return (uint32_t)fail(ps, "an octal escape in 'pattern' is not supported");
        return 0;
    default:
        break;
    }
    if (e >= '1' && e <= '9')
        return (uint32_t)fail(ps, "'\\%c' (backreference) in 'pattern' is not supported", e);
    if (e > 0x20 && e < 0x7f && !(e >= '0' && e <= '9') && !((e | 0x20) >= 'a' &&
                                                            (e | 0x20) <= 'z'))
        return e;   /* \. \/ \- \" ...: ASCII punctuation stands for itself */
    return (uint32_t)fail(ps, "the escape '\\%c' in 'pattern' is not supported", e);
}

/* One class member: a code point (returned) or a class escape (*cls). */
static uint32_t class_atom(struct rx_parser *ps, unsigned char *cls)
{
    *cls = 0;
    if (at(ps, '\\')) {
        ps->p++;
        return escape(ps, true, cls);
    }
    return next_cp(ps);
}

/* After '[': the members up to ']'. */
static int32_t parse_class(struct rx_parser *ps)
{
    struct rx_set s = { 0 };
    bool neg = at(ps, '^');
    ps->p += neg;
    while (ps->rc == ST_OK && !at(ps, ']')) {
        if (ps->p >= ps->end)
            return fail(ps, "the pattern has a '[' without ']'");
        unsigned char c1, c2;
        uint32_t a = class_atom(ps, &c1);
        if (ps->rc == ST_OK && at(ps, '-') && ps->p + 1 < ps->end && ps->p[1] != ']') {
            ps->p++;
            uint32_t b = class_atom(ps, &c2);
            if (c1 || c2)
                return fail(ps, "a class range with \\d, \\w or \\s in 'pattern'");
            if (b < a)
                return fail(ps, "a class range out of order in 'pattern'");
            set_add(ps, &s, a, b);
        } else if (c1) {
            set_class_escape(ps, &s, c1);
        } else {
            set_add(ps, &s, a, a);
        }
    }
    if (ps->rc != ST_OK)
        return -1;
    ps->p++;   /* ']' */
    set_norm(&s);
    if (neg)
        set_negate(ps, &s);
    return set_node(ps, &s);
}

/* ---- the grammar -------------------------------------------------------- */

static int32_t parse_alt(struct rx_parser *ps);

/* After '(': the group's kind, then its body up to ')'. */
static int32_t parse_group(struct rx_parser *ps)
{
    if (at(ps, '?')) {
        const unsigned char *q = ps->p + 1;
        if (q < ps->end && *q == ':') {
            ps->p += 2;
        } else if (q < ps->end && *q == '<' && q + 1 < ps->end && q[1] != '=' && q[1] != '!') {
            const unsigned char *e = memchr(q, '>', (size_t)(ps->end - q));
            if (!e)
                return fail(ps, "a bad named group in 'pattern'");
            ps->p = e + 1;   /* (?<name> ...): a plain group (no backreference to it) */
        } else if (q < ps->end && (*q == '=' || *q == '!' || *q == '<')) {
            return fail(ps, "lookaround ('(?=', '(?!', '(?<=', '(?<!') in 'pattern' is not "
                        "supported");
        } else {
            return fail(ps, "inline flags or an unknown group '(?' in 'pattern' are not "
                        "supported");
        }
    }
    if (++ps->nest > MAX_NEST)
        return fail(ps, "groups nest more than %d deep in 'pattern'", MAX_NEST);
    int32_t g = parse_alt(ps);
    ps->nest--;
    if (ps->rc != ST_OK)
        return -1;
    if (!at(ps, ')'))
        return fail(ps, "the pattern has a '(' without ')'");
    ps->p++;
    return g;
}

static bool quantifier(struct rx_parser *ps, uint32_t *mn, uint32_t *mx);

static int32_t parse_atom(struct rx_parser *ps)
{
    unsigned char c = *ps->p;
    uint32_t mn, mx;
    if (c && strchr("*+?", c))
        return fail(ps, "'%c' with nothing to repeat in 'pattern'", c);
    if (c == '{' && quantifier(ps, &mn, &mx))   /* "{2}" is no literal (ECMA-262 B.1.2) */
        return fail(ps, "'{' with nothing to repeat in 'pattern'");
    if (c == ')')
        return fail(ps, "the pattern has a ')' without '('");
    ps->p++;
    switch (c) {
    case '(':
        return parse_group(ps);
    case '[':
        return parse_class(ps);
    case '^':
        return node(ps, A_BOL, -1, -1);
    case '$':
        return node(ps, A_EOL, -1, -1);
    case '.': {
        struct rx_set s = { 0 };
        set_add(ps, &s, '\n', '\n');
        set_add(ps, &s, '\r', '\r');
        set_add(ps, &s, 0x2028, 0x2029);
        set_norm(&s);
        set_negate(ps, &s);
        return set_node(ps, &s);
    }
    case '\\': {
        unsigned char cls;
        uint32_t cp = escape(ps, false, &cls);
        if (ps->rc != ST_OK)
            return -1;
        if (!cls)
            return cp_node(ps, cp);
        struct rx_set s = { 0 };
        set_class_escape(ps, &s, cls);
        return set_node(ps, &s);
    }
    default:
        ps->p--;
        return cp_node(ps, next_cp(ps));
    }
}

/* A decimal count of a {n,m} quantifier; false when there is none. */
static bool count(struct rx_parser *ps, uint32_t *v)
{
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
        return false;
    uint64_t x = 0;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        x = x * 10 + (uint64_t)(*ps->p++ - '0');
        x = ST_MIN(x, UINT64_C(1) << 32);
    }
    *v = x > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)x;
    return true;
}

/* A quantifier at p: true with its bounds (p past it), else p unmoved.
 * A '{' that does not start one is a literal (ECMA-262 Annex B). */
static bool quantifier(struct rx_parser *ps, uint32_t *mn, uint32_t *mx)
{
    const unsigned char *save = ps->p;
    unsigned char c = *ps->p++;
    if (c == '*' || c == '+' || c == '?') {
        *mn = c == '+';
        *mx = c == '?' ? 1 : REP_INF;
        return true;
    }
    if (c == '{' && count(ps, mn)) {
        *mx = *mn;
        if (at(ps, ',')) {
            ps->p++;
            if (!count(ps, mx))
                *mx = REP_INF;
        }
        if (at(ps, '}')) {
            ps->p++;
            return true;
        }
    }
    ps->p = save;
    return false;
}

static int32_t parse_repeat(struct rx_parser *ps)
{
    bool assertion = *ps->p == '^' || *ps->p == '$';   /* a bare one: "(^)*" is valid */
    int32_t a = parse_atom(ps);
    uint32_t mn, mx;
    while (ps->rc == ST_OK && ps->p < ps->end && quantifier(ps, &mn, &mx)) {
        if (assertion)
            return fail(ps, "a quantifier after '^' or '$' in 'pattern'");
        if (mx < mn)
            return fail(ps, "a quantifier {n,m} with m < n in 'pattern'");
        if ((mx != REP_INF && mx > JS_RX_MAX_REPEAT) || mn > JS_RX_MAX_REPEAT)
            return fail(ps, "a repetition count above %d in 'pattern'", JS_RX_MAX_REPEAT);
        if (at(ps, '?'))
            ps->p++;   /* lazy: the same strings */
        if (ps->p < ps->end && *ps->p && strchr("*+?{", *ps->p) && quantifier(ps, &mn, &mx))
            return fail(ps, "a quantifier on a quantifier in 'pattern'");
        int32_t r = node(ps, A_REP, a, -1);
        if (r >= 0) {
            ps->ast[r].min = mn;
            ps->ast[r].max = mx;
        }
        a = r;
    }
    return a;
}

static int32_t parse_cat(struct rx_parser *ps)
{
    int32_t t = -1;
    while (ps->rc == ST_OK && ps->p < ps->end && !at(ps, '|') && !at(ps, ')')) {
        int32_t a = parse_repeat(ps);
        t = t < 0 ? a : node(ps, A_CAT, t, a);
    }
    return t < 0 ? node(ps, A_EMPTY, -1, -1) : t;
}

static int32_t parse_alt(struct rx_parser *ps)
{
    int32_t t = parse_cat(ps);
    while (ps->rc == ST_OK && at(ps, '|')) {
        ps->p++;
        int32_t b = parse_cat(ps);
        t = node(ps, A_ALT, t, b);
    }
    return t;
}

/* ---- the NFA, back to front -------------------------------------------- */

static int32_t nstate(struct rx_parser *ps, uint8_t kind, int32_t out, int32_t out1)
{
    struct rx_nfa *f = ps->nfa;
    if (ps->rc != ST_OK)
        return -1;
    if (f->n == JS_RX_MAX_NFA)
        return fail(ps, "the pattern needs more than %d automaton states (counted repetition "
                    "is expanded)", JS_RX_MAX_NFA);
    if (f->n == f->cap) {
        uint32_t cap = f->cap ? 2 * f->cap : 64;
        struct rx_nstate *s = realloc(f->st, cap * sizeof(*s));
        if (!s) {
            ps->rc = ST_ERR_NOMEM;
            return -1;
        }
        f->st = s;
        f->cap = cap;
    }
    f->st[f->n] = (struct rx_nstate){ .kind = kind, .out = out, .out1 = out1 };
    return (int32_t)f->n++;
}

static int32_t emit(struct rx_parser *ps, int32_t a, int32_t next);

/* A chain of alternatives (the parser nests them to the left: a loop, not
 * a recursion as deep as the chain): a split per '|'. */
static int32_t emit_alt(struct rx_parser *ps, int32_t a, int32_t next)
{
    int32_t first = -1, hole = -1;
    while (ps->rc == ST_OK && ps->ast[a].kind == A_ALT) {
        int32_t sp = nstate(ps, RN_SPLIT, -1, emit(ps, ps->ast[a].b, next));
        if (sp < 0)
            return -1;
        if (hole >= 0)
            ps->nfa->st[hole].out = sp;
        else
            first = sp;
        hole = sp;
        a = ps->ast[a].a;
    }
    int32_t e = emit(ps, a, next);
    if (e < 0 || hole < 0)
        return -1;
    ps->nfa->st[hole].out = e;
    return first;
}

/* The states of tree node a, leading to state 'next'; its start state. */
static int32_t emit(struct rx_parser *ps, int32_t a, int32_t next)
{
    while (ps->rc == ST_OK && ps->ast[a].kind == A_CAT) {   /* left-nested: a loop */
        next = emit(ps, ps->ast[a].b, next);
        a = ps->ast[a].a;
    }
    if (ps->rc != ST_OK)
        return -1;
    const struct rx_ast *t = &ps->ast[a];
    switch (t->kind) {
    case A_SET: {
        int32_t s = nstate(ps, RN_SET, next, -1);
        if (s >= 0) {
            ps->nfa->st[s].set_first = t->set_first;
            ps->nfa->st[s].set_n = t->set_n;
        }
        return s;
    }
    case A_ALT:
        return emit_alt(ps, a, next);
    case A_BOL:
        return nstate(ps, RN_BOL, next, -1);
    case A_EOL:
        return nstate(ps, RN_EOL, next, -1);
    case A_EMPTY:
        return next;
    default:
        break;
    }
    int32_t s = next;   /* A_REP: the optional copies, then the required ones */
    if (t->max == REP_INF) {
        int32_t loop = nstate(ps, RN_SPLIT, -1, next);
        int32_t body = emit(ps, t->a, loop);
        if (loop < 0 || body < 0)
            return -1;
        ps->nfa->st[loop].out = body;
        s = loop;
    } else {
        for (uint32_t i = t->min; i < t->max && s >= 0; i++)
            s = nstate(ps, RN_SPLIT, emit(ps, t->a, s), next);
    }
    for (uint32_t i = 0; i < t->min && s >= 0; i++)
        s = emit(ps, t->a, s);
    return s;
}

/* [\s\S]* pattern [\s\S]* */
static void build(struct rx_parser *ps, int32_t root)
{
    struct rx_set any = { 0 };
    set_add(ps, &any, 0, JS_RX_CP_END - 1);
    int32_t any_node = set_node(ps, &any);
    int32_t star = node(ps, A_REP, any_node, -1);
    if (ps->rc != ST_OK)
        return;
    ps->ast[star].min = 0;
    ps->ast[star].max = REP_INF;
    int32_t fin = nstate(ps, RN_FINAL, -1, -1);
    int32_t tail = emit(ps, star, fin);
    int32_t body = emit(ps, root, tail);
    ps->nfa->start = emit(ps, star, body);
}

enum st_status st_js_regex_compile(const char *pat, size_t n, uint64_t *work,
                                   struct js_regex *out, char *msg, size_t msg_cap)
{
    memset(out, 0, sizeof(*out));
    struct rx_nfa nfa = { 0 };
    struct rx_parser ps = { .p = (const unsigned char *)pat,
                            .end = (const unsigned char *)pat + n, .nfa = &nfa, .msg = msg,
                            .msg_cap = msg_cap, .rc = ST_OK };
    ps.ast = malloc(MAX_AST * sizeof(*ps.ast));
    if (!ps.ast)
        return ST_ERR_NOMEM;
    int32_t root = parse_alt(&ps);
    if (ps.rc == ST_OK && ps.p < ps.end)
        fail(&ps, "the pattern has a ')' without '('");
    if (ps.rc == ST_OK)
        build(&ps, root);
    enum st_status rc = ps.rc;
    free(ps.ast);
    if (rc == ST_OK)
        rc = st_js_regex_from_nfa(&nfa, work, out, msg, msg_cap);
    free(nfa.st);
    free(nfa.ranges);
    if (rc == ST_ERR_NOMEM && msg_cap)
        snprintf(msg, msg_cap, "out of memory");
    return rc;
}
