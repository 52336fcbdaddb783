/* state.c -- the byte-at-a-time validator of a compiled JSON
 * Schema (include/strata/json_schema.h), behind response_format
 * json_schema.
 *
 * Each stack is the grammar/json_prefix.c automaton (same lexical states, same
 * number rule: the byte after a number ends it and is read again) with a
 * schema node per open container and one for the value being read:
 *
 *   - a value's first byte must fit the node's types, or start one of
 *     its enum literals (then matched byte by byte against the set of
 *     literals still possible: 'cand');
 *   - an object key is matched against the listed keys still possible
 *     ('cand', 'pos' bytes in); a key that leaves them all is an extra
 *     key, allowed when additionalProperties is not false, and never with
 *     a backslash (so it cannot spell a listed key another way). ','
 *     only when another key may follow, '}' only once every required key
 *     is there; each listed key at most once;
 *   - ',' and ']' in arrays follow minItems/maxItems;
 *   - a ranged integer keeps its magnitude ('cand') and takes a digit only
 *     while some completion lands in the range (a ranged number asks
 *     range.c); a string counts its code points ('cand')
 *     against minLength/maxLength; a string with a pattern or a format
 *     (S_PSTR) is read by pstr.c, which runs its decoded code
 *     points through the node's DFA (lengths included).
 *
 * anyOf: where a value of a union node starts, the stack is copied once
 * per member that takes the value's first byte (at most
 * ST_JSON_SCHEMA_MAX_STACKS stacks in all) and each copy reads the value
 * against its member; a copy that cannot take a byte is dropped; equal
 * copies are merged. So the first byte decides between
 * members of different types, an object's keys between object members,
 * and the document is valid when any copy completes it: anyOf exactly.
 */
#include <stddef.h>
#include <string.h>

#include "grammar/schema/internal.h"

static const char *const builtins[3] = { "true", "false", "null" };

static bool is_ws(unsigned char b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

static bool is_digit(unsigned char b)
{
    return b >= '0' && b <= '9';
}

static const struct js_node *node(const struct st_json_schema *sc, uint32_t id)
{
    return &sc->nodes[id];
}

static uint64_t all_props(const struct js_node *n)
{
    return n->n_props >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n->n_props) - 1;
}

static struct st_js_frame *top(struct st_js_stack *k)
{
    return &k->f[k->depth - 1];
}

static void lit(const struct st_json_schema *sc, const struct st_js_stack *k, unsigned i,
                const char **p, size_t *len)
{
    if (k->flags & FL_BUILTIN) {
        *p = builtins[i];
        *len = strlen(builtins[i]);
        return;
    }
    const struct js_lit *l = &sc->lits[node(sc, k->cur)->lit_first + i];
    *p = sc->strs + l->off;
    *len = l->len;
}

static void value_done(struct st_js_stack *k)
{
    k->rx = 0;
    k->psub = 0;
    k->pu8 = 0;
    k->pacc = 0;
    k->cand = 0;
    k->frac = 0;
    k->pos = 0;
    k->flags = 0;
    k->cur = 0;
    k->ws = 0;
    if (k->depth == 0) {
        k->mode = S_DONE;
        return;
    }
    k->mode = S_AFTER;
    if (top(k)->array)
        top(k)->count++;
}

/* The schema of item i of array node n: the tuple's, then 'items'. */
static uint16_t item_node(const struct st_json_schema *sc, const struct js_node *n, uint32_t i)
{
    return (uint16_t)(i < n->n_prefix ? sc->alts[n->prefix_first + i] : n->items);
}

static bool open_container(struct st_js_stack *k, bool array, uint16_t items)
{
    if (k->depth >= ST_JSON_SCHEMA_MAX_DEPTH)
        return false;
    k->f[k->depth] = (struct st_js_frame){ .node = k->cur, .array = array };
    k->depth++;
    k->mode = array ? S_ARR_FIRST : S_OBJ_FIRST;
    k->cur = array ? items : 0;
    return true;
}

static bool close_container(struct st_js_stack *k)
{
    k->depth--;
    value_done(k);
    return true;
}

/* Another key may come into the object of frame f. */
static bool key_possible(const struct st_json_schema *sc, const struct st_js_frame *f)
{
    const struct js_node *n = node(sc, f->node);
    return n->additional >= 0 || (all_props(n) & ~f->seen) != 0;
}

static bool start_literals(const struct st_json_schema *sc, struct st_js_stack *k,
                           unsigned char b, unsigned n_lits)
{
    uint64_t c = 0;
    for (unsigned i = 0; i < n_lits; i++) {
        const char *p;
        size_t len;
        lit(sc, k, i, &p, &len);
        if (len > 0 && (unsigned char)p[0] == b)
            c |= UINT64_C(1) << i;
    }
    if (k->flags & FL_BUILTIN) {   /* only the types the node allows */
        uint8_t t = node(sc, k->cur)->types;
        c &= (t & JT_BOOL ? 3u : 0u) | (t & JT_NULL ? 4u : 0u);
    }
    k->cand = c;
    k->pos = 1;
    k->mode = S_LIT;
    return c != 0;
}

static bool push_structural(const struct st_json_schema *sc, struct st_js_stack *k,
                            unsigned char b);

/* The number being read may end here (its range). */
static bool num_end_ok(const struct st_json_schema *sc, const struct st_js_stack *k)
{
    const struct js_node *n = node(sc, k->cur);
    if (n->has_range == JS_RANGE_NUM)
        return st_js_num_in_range(n, k->flags & FL_NEG, (struct js_fx){ k->cand, k->frac },
                                  k->flags & FL_TAIL);
    return n->has_range != JS_RANGE_INT || st_js_int_reach(n, k->flags & FL_NEG, k->cand, false);
}

/* A number of a JS_RANGE_NUM node can still end within the range. */
static bool num_reach_ok(const struct js_node *n, const struct st_js_stack *k)
{
    struct js_numtext t = { .neg = k->flags & FL_NEG, .tail = k->flags & FL_TAIL,
                            .n_frac = k->pos, .v = { k->cand, k->frac } };
    switch ((enum jsmode)k->mode) {
    case S_NUM_MINUS: t.part = JS_NT_SIGN; break;
    case S_NUM_ZERO: t.part = JS_NT_ZERO; break;
    case S_NUM_INT: t.part = JS_NT_INT; break;
    default: t.part = JS_NT_FRAC; break;
    }
    return st_js_num_reach(n, &t);
}

/* The first byte of a number of node cur ('-' or a digit; mode set). */
static bool num_start(const struct st_json_schema *sc, struct st_js_stack *k,
                      unsigned char b)
{
    const struct js_node *n = node(sc, k->cur);
    k->cand = b == '-' ? 0 : (uint64_t)(b - '0');
    k->frac = 0;
    if (b == '-')
        k->flags |= FL_NEG;
    if (n->has_range == JS_RANGE_NUM)
        return num_reach_ok(n, k);
    return !n->has_range || st_js_int_reach(n, b == '-', k->cand, b != '0');
}

/* A byte of a number of a JS_RANGE_NUM node: no exponent (a range is
 * checked on the plain decimal text), an integer part below 10^18. */
static bool push_num_ranged(const struct st_json_schema *sc, struct st_js_stack *k,
                            unsigned char b)
{
    static const uint64_t p10[18] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
        100000000, 1000000000, 10000000000, 100000000000, 1000000000000, 10000000000000,
        100000000000000, 1000000000000000, 10000000000000000, 100000000000000000 };
    const struct js_node *n = node(sc, k->cur);
    enum jsmode m = (enum jsmode)k->mode;
    if (is_digit(b)) {
        uint64_t d = (uint64_t)(b - '0');
        if (m == S_NUM_MINUS) {
            k->cand = d;
            k->mode = d == 0 ? S_NUM_ZERO : S_NUM_INT;
        } else if (m == S_NUM_INT && k->cand < JS_INT_OPEN / 10) {
            k->cand = k->cand * 10 + d;
        } else if (m == S_NUM_DOT || m == S_NUM_FRAC) {
            k->mode = S_NUM_FRAC;
            if (k->pos < 18)
                k->frac += d * p10[17 - k->pos++];
            else if (d)
                k->flags |= FL_TAIL;
        } else {
            return false;   /* a leading zero, or too many digits */
        }
        return num_reach_ok(n, k);
    }
    if (b == '.' && (m == S_NUM_ZERO || m == S_NUM_INT)) {
        k->mode = S_NUM_DOT;
        k->pos = 0;
        return num_reach_ok(n, k);
    }
    if (m == S_NUM_MINUS || m == S_NUM_DOT || b == 'e' || b == 'E' || !num_end_ok(sc, k))
        return false;
    value_done(k);
    return push_structural(sc, k, b);
}

/* The first byte of a value of node 'cur' (a plain node). */
static bool value_start(const struct st_json_schema *sc, struct st_js_stack *k,
                        unsigned char b)
{
    const struct js_node *n = node(sc, k->cur);
    if (n->has_enum) {
        k->flags = 0;
        return start_literals(sc, k, b, n->n_lits);
    }
    bool num = (n->types & (JT_NUM | JT_INT)) != 0;
    k->flags = 0;
    k->cand = 0;
    if (num && (b == '-' || is_digit(b)) && !(n->types & JT_NUM))
        k->flags = FL_INT;
    switch (b) {
    case '{':
        return (n->types & JT_OBJ) && open_container(k, false, 0);
    case '[':
        return (n->types & JT_ARR) && open_container(k, true, item_node(sc, n, 0));
    case '"':
        k->mode = n->rx >= 0 ? S_PSTR : S_STR;
        k->pos = 0;
        return (n->types & JT_STR) != 0;
    case '-':
        k->mode = S_NUM_MINUS;
        return num && num_start(sc, k, b);
    case '0':
        k->mode = S_NUM_ZERO;
        return num && num_start(sc, k, b);
    case 't':
    case 'f':
    case 'n':
        k->flags = FL_BUILTIN;
        return start_literals(sc, k, b, 3);
    default:
        k->mode = S_NUM_INT;
        return num && b >= '1' && b <= '9' && num_start(sc, k, b);
    }
}

static bool key_start(const struct st_json_schema *sc, struct st_js_stack *k)
{
    if (!key_possible(sc, top(k)))
        return false;
    k->mode = S_KEYSTR;
    k->cand = all_props(node(sc, top(k)->node));
    k->pos = 0;
    k->flags = 0;
    return true;
}

static bool push_after(const struct st_json_schema *sc, struct st_js_stack *k, unsigned char b)
{
    struct st_js_frame *f = top(k);
    const struct js_node *n = node(sc, f->node);
    if (f->array) {
        if (b == ',' && f->count < n->max_items) {
            k->mode = S_VALUE;
            k->cur = item_node(sc, n, f->count);
            return true;
        }
        return b == ']' && f->count >= n->min_items && close_container(k);
    }
    if (b == ',' && key_possible(sc, f)) {
        k->mode = S_KEY;
        return true;
    }
    return b == '}' && (n->required & ~f->seen) == 0 && close_container(k);
}

static bool push_structural(const struct st_json_schema *sc, struct st_js_stack *k,
                            unsigned char b)
{
    if (is_ws(b)) {
        if (k->mode == S_DONE)
            return true;
        return ++k->ws <= ST_JSON_SCHEMA_MAX_WS;
    }
    k->ws = 0;
    switch ((enum jsmode)k->mode) {
    case S_VALUE:
        return value_start(sc, k, b);
    case S_ARR_FIRST: {
        const struct js_node *n = node(sc, top(k)->node);
        if (b == ']')
            return n->min_items == 0 && close_container(k);
        return n->max_items > 0 && value_start(sc, k, b);
    }
    case S_OBJ_FIRST:
        if (b == '}')
            return node(sc, top(k)->node)->required == 0 && close_container(k);
        return b == '"' && key_start(sc, k);
    case S_KEY:
        return b == '"' && key_start(sc, k);
    case S_COLON:
        k->mode = S_VALUE;
        return b == ':';
    case S_AFTER:
        return push_after(sc, k, b);
    default:   /* S_DONE */
        return false;
    }
}

static bool key_close(const struct st_json_schema *sc, struct st_js_stack *k)
{
    struct st_js_frame *f = top(k);
    const struct js_node *n = node(sc, f->node);
    uint64_t exact = 0;
    for (uint32_t i = 0; i < n->n_props; i++) {
        if ((k->cand >> i & 1) && sc->props[n->prop_first + i].key_len == k->pos)
            exact |= UINT64_C(1) << i;
    }
    if (exact & f->seen)
        return false;   /* each key once */
    if (exact) {
        unsigned i = 0;
        while (!(exact >> i & 1))
            i++;
        f->seen |= exact;
        k->cur = (uint16_t)sc->props[n->prop_first + i].node;
    } else if (n->additional >= 0 && !(k->flags & FL_KEYESC)) {
        k->cur = (uint16_t)n->additional;
    } else {
        return false;
    }
    k->mode = S_COLON;
    k->cand = 0;
    k->pos = 0;
    k->flags = 0;
    return true;
}

static bool push_key(const struct st_json_schema *sc, struct st_js_stack *k, unsigned char b)
{
    bool escaped = k->flags & FL_KEYBS;
    if (b == '"' && !escaped)
        return key_close(sc, k);
    if (b < 0x20 || k->pos == UINT16_MAX)
        return false;
    struct st_js_frame *f = top(k);
    const struct js_node *n = node(sc, f->node);
    uint64_t c = 0;
    for (uint32_t i = 0; i < n->n_props; i++) {
        const struct js_prop *p = &sc->props[n->prop_first + i];
        if ((k->cand >> i & 1) && k->pos < p->key_len &&
            (unsigned char)sc->strs[p->key + k->pos] == b)
            c |= UINT64_C(1) << i;
    }
    k->flags &= (uint8_t)~FL_KEYBS;
    if (b == '\\' && !escaped)
        k->flags |= FL_KEYESC | FL_KEYBS;
    if (n->additional < 0 ? (c & ~f->seen) == 0 : (c == 0 && (k->flags & FL_KEYESC)))
        return false;
    k->cand = c;
    k->pos++;
    return true;
}

/* One more code point in the string of node n, if maxLength has room. */
static bool count_cp(const struct js_node *n, struct st_js_stack *k)
{
    if ((uint32_t)(k->cand & CP_MASK) >= n->max_len)
        return false;
    k->cand++;
    return true;
}

static int hex_val(unsigned char b)
{
    if (is_digit(b))
        return b - '0';
    if (b >= 'a' && b <= 'f')
        return b - 'a' + 10;
    return b >= 'A' && b <= 'F' ? b - 'A' + 10 : -1;
}

/* A hex digit of \uXXXX. An escape right after a high surrogate's is
 * counted once known: a low surrogate completes the pair (no new code
 * point); when maxLength has no room left it must be one (\uDC00-\uDFFF). */
static bool push_uhex(const struct js_node *n, struct st_js_stack *k, unsigned char b)
{
    int h = hex_val(b);
    if (h < 0)
        return false;
    bool full = (uint32_t)(k->cand & CP_MASK) >= n->max_len;
    if ((k->flags & FL_PENDLOW) && full &&
        ((k->pos == 0 && h != 0xd) || (k->pos == 1 && h < 0xc)))
        return false;
    uint64_t v = (k->cand >> 32) * 16 + (uint64_t)h;
    k->cand = (k->cand & CP_MASK) | v << 32;
    if (++k->pos < 4)
        return true;
    k->mode = S_STR;
    k->pos = 0;
    k->cand &= CP_MASK;
    bool low = v >= 0xdc00 && v <= 0xdfff;
    if ((k->flags & FL_PENDLOW) && !low && !count_cp(n, k))
        return false;
    k->flags &= (uint8_t)~(FL_PENDLOW | FL_HISURR);
    if (v >= 0xd800 && v <= 0xdbff)
        k->flags |= FL_HISURR;
    return true;
}

/* UTF-8 in a string without a pattern, strictly (no overlong form, no
 * surrogate, nothing past U+10FFFF, no stray continuation byte), so that
 * counting lead bytes counts code points exactly however tokens split a
 * character. pos: the continuation bytes still to come (low 2 bits) and
 * the range the next one must be in (U8_* << 2). */
enum { U8_ANY, U8_A0, U8_9F, U8_90, U8_8F };

static bool utf8_lead(struct st_js_stack *k, unsigned char b)
{
    if (b < 0xc2 || b > 0xf4)
        return false;
    unsigned left = b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : 1;
    unsigned range = b == 0xe0 ? U8_A0 : b == 0xed ? U8_9F : b == 0xf0 ? U8_90
                   : b == 0xf4 ? U8_8F : U8_ANY;
    k->pos = (uint16_t)(range << 2 | left);
    return true;
}

static bool utf8_cont(struct st_js_stack *k, unsigned char b)
{
    static const unsigned char lo[] = { 0x80, 0xa0, 0x80, 0x90, 0x80 };
    static const unsigned char hi[] = { 0xbf, 0xbf, 0x9f, 0xbf, 0x8f };
    unsigned range = k->pos >> 2, left = k->pos & 3u;
    if (b < lo[range] || b > hi[range])
        return false;
    k->pos = (uint16_t)(left - 1);
    return true;
}

/* A byte of a free string of node cur: minLength / maxLength in code
 * points (a UTF-8 lead or ASCII byte starts one, an escape is one). */
static bool push_string(const struct st_json_schema *sc, struct st_js_stack *k,
                        unsigned char b)
{
    const struct js_node *n = node(sc, k->cur);
    switch ((enum jsmode)k->mode) {
    case S_STR:
        if (k->pos)
            return utf8_cont(k, b);
        if (b == '"') {
            if ((uint32_t)(k->cand & CP_MASK) < n->min_len)
                return false;
            value_done(k);
            return true;
        }
        if (b < 0x20)
            return false;
        if (b == '\\') {
            k->mode = S_ESC;
            if (k->flags & FL_HISURR) {   /* maybe the pair's low half: count later */
                k->flags = (uint8_t)((k->flags & ~FL_HISURR) | FL_PENDLOW);
                return true;
            }
            return count_cp(n, k);
        }
        k->flags &= (uint8_t)~FL_HISURR;
        if (b >= 0x80 && !utf8_lead(k, b))
            return false;
        return count_cp(n, k);
    case S_ESC:
        if (b == 'u') {
            k->mode = S_UHEX;
            k->pos = 0;
            return true;
        }
        k->mode = S_STR;
        if (b == 0 || !strchr("\"\\/bfnrt", b))
            return false;
        if (!(k->flags & FL_PENDLOW))
            return true;
        k->flags &= (uint8_t)~FL_PENDLOW;
        return count_cp(n, k);
    default:   /* S_UHEX */
        return push_uhex(n, k, b);
    }
}

/* A literal of cand is complete and a number (the next byte ends it). */
static bool lit_number_done(const struct st_json_schema *sc, const struct st_js_stack *k)
{
    for (unsigned i = 0; i < 64; i++) {
        if (!(k->cand >> i & 1))
            continue;
        const char *p;
        size_t len;
        lit(sc, k, i, &p, &len);
        if (len == k->pos && is_digit((unsigned char)p[len - 1]))
            return true;
    }
    return false;
}

static bool push_literal(const struct st_json_schema *sc, struct st_js_stack *k,
                         unsigned char b)
{
    uint64_t c = 0;
    bool done = false;
    for (unsigned i = 0; i < 64; i++) {
        if (!(k->cand >> i & 1))
            continue;
        const char *p;
        size_t len;
        lit(sc, k, i, &p, &len);
        if (k->pos < len && (unsigned char)p[k->pos] == b) {
            c |= UINT64_C(1) << i;
            done |= (size_t)k->pos + 1 == len && !is_digit(b);   /* "...", true, false, null */
        }
    }
    if (c) {
        k->cand = c;
        k->pos++;
        if (done)
            value_done(k);
        return true;
    }
    if (!lit_number_done(sc, k))
        return false;
    value_done(k);   /* the number ended: b is the byte after it */
    return push_structural(sc, k, b);
}

static bool push_number(const struct st_json_schema *sc, struct st_js_stack *k,
                        unsigned char b)
{
    enum jsmode m = (enum jsmode)k->mode;
    const struct js_node *n = node(sc, k->cur);
    if (n->has_range == JS_RANGE_NUM)
        return push_num_ranged(sc, k, b);
    if (is_digit(b) && n->has_range && (m == S_NUM_MINUS || m == S_NUM_INT)) {
        k->cand = k->cand * 10 + (uint64_t)(b - '0');   /* <= 10^19: no overflow */
        k->mode = m == S_NUM_MINUS && b == '0' ? S_NUM_ZERO : S_NUM_INT;
        return k->cand > 0 && st_js_int_reach(n, k->flags & FL_NEG, k->cand, true);
    }
    if (is_digit(b)) {
        switch (m) {
        case S_NUM_MINUS: k->mode = b == '0' ? S_NUM_ZERO : S_NUM_INT; return true;
        case S_NUM_ZERO: return false;   /* no leading zeros */
        case S_NUM_DOT: k->mode = S_NUM_FRAC; return true;
        case S_NUM_E:
        case S_NUM_ESIGN: k->mode = S_NUM_EXP; return true;
        default: return true;
        }
    }
    if (m == S_NUM_MINUS || m == S_NUM_DOT || m == S_NUM_ESIGN)
        return false;
    if (m == S_NUM_E) {
        k->mode = S_NUM_ESIGN;
        return b == '+' || b == '-';
    }
    bool frac = b == '.' && (m == S_NUM_ZERO || m == S_NUM_INT);
    bool exp = (b == 'e' || b == 'E') && m != S_NUM_EXP;
    if (frac || exp) {
        k->mode = frac ? S_NUM_DOT : S_NUM_E;
        return !(k->flags & FL_INT);
    }
    if (!num_end_ok(sc, k))
        return false;
    value_done(k);
    return push_structural(sc, k, b);
}

static bool push_stack(const struct st_json_schema *sc, struct st_js_stack *k, unsigned char b)
{
    switch ((enum jsmode)k->mode) {
    case S_STR:
    case S_ESC:
    case S_UHEX:
        return push_string(sc, k, b);
    case S_KEYSTR:
        return push_key(sc, k, b);
    case S_LIT:
        return push_literal(sc, k, b);
    case S_NUM_MINUS:
    case S_NUM_ZERO:
    case S_NUM_INT:
    case S_NUM_DOT:
    case S_NUM_FRAC:
    case S_NUM_E:
    case S_NUM_ESIGN:
    case S_NUM_EXP:
        return push_number(sc, k, b);
    case S_PSTR: {
        int r = st_js_pstr_push(&sc->rx[node(sc, k->cur)->rx], k, b);
        if (r == JS_PSTR_CLOSED)
            value_done(k);
        return r != JS_PSTR_REFUSE;
    }
    default:
        return push_structural(sc, k, b);
    }
}

/* ---- the set of stacks -------------------------------------------------- */

static size_t used(const struct st_js_stack *k)
{
    return offsetof(struct st_js_stack, f) + k->depth * sizeof(struct st_js_frame);
}

void st_js_state_init_node(struct st_json_schema_state *st, const struct st_json_schema *s,
                           int32_t node)
{
    st->schema = s;
    st->n = 1;
    memset(&st->s[0], 0, offsetof(struct st_js_stack, f));
    st->s[0].mode = S_VALUE;
    st->s[0].cur = (uint16_t)node;
}

void st_json_schema_state_init(struct st_json_schema_state *st, const struct st_json_schema *s)
{
    st_js_state_init_node(st, s, s->root);
}

void st_json_schema_state_copy(struct st_json_schema_state *dst,
                               const struct st_json_schema_state *src)
{
    dst->schema = src->schema;
    dst->n = src->n;
    for (uint32_t i = 0; i < src->n; i++)
        memcpy(&dst->s[i], &src->s[i], used(&src->s[i]));
}

/* Stack k is about to read a value of a union node (and b starts it). */
static bool at_union(const struct st_json_schema *sc, const struct st_js_stack *k,
                     unsigned char b)
{
    bool at_value = k->mode == S_VALUE || (k->mode == S_ARR_FIRST && b != ']');
    return at_value && !is_ws(b) && node(sc, k->cur)->kind == JS_UNION;
}

static void dedup(struct st_json_schema_state *st)
{
    uint32_t w = 1;
    for (uint32_t i = 1; i < st->n; i++) {
        bool dup = false;
        for (uint32_t j = 0; j < w && !dup; j++)
            dup = st->s[j].depth == st->s[i].depth &&
                  memcmp(&st->s[j], &st->s[i], used(&st->s[i])) == 0;
        if (!dup) {
            if (w != i)
                memcpy(&st->s[w], &st->s[i], used(&st->s[i]));
            w++;
        }
    }
    st->n = w;
}

/* Every stack takes b; a stack at a union's value is replaced by one copy
 * per member that takes b (the copies go to the free slots after the live
 * stacks: members past the last slot are not tried). Then the survivors
 * are packed and equal ones merged. */
bool st_json_schema_push(struct st_json_schema_state *st, unsigned char b)
{
    const struct st_json_schema *sc = st->schema;
    bool alive[ST_JSON_SCHEMA_MAX_STACKS];
    uint32_t n = st->n, end = n;
    if (n == 0)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        struct st_js_stack *k = &st->s[i];
        if (!at_union(sc, k, b)) {
            alive[i] = push_stack(sc, k, b);
            continue;
        }
        const struct js_node *u = node(sc, k->cur);
        struct st_js_stack orig;
        memcpy(&orig, k, used(k));
        alive[i] = false;   /* slot i takes the first member that fits */
        for (uint32_t j = 0; j < u->n_alts && (!alive[i] || end < ST_JSON_SCHEMA_MAX_STACKS);
             j++) {
            struct st_js_stack *c = alive[i] ? &st->s[end] : k;
            memcpy(c, &orig, used(&orig));
            c->cur = (uint16_t)sc->alts[u->alt_first + j];
            if (!push_stack(sc, c, b))
                continue;
            if (c == k)
                alive[i] = true;
            else
                alive[end++] = true;
        }
    }
    uint32_t w = 0;
    for (uint32_t i = 0; i < end; i++) {
        if (!alive[i])
            continue;
        if (w != i)
            memcpy(&st->s[w], &st->s[i], used(&st->s[i]));
        w++;
    }
    st->n = w;
    if (w > 1)
        dedup(st);
    return w > 0;
}

bool st_json_schema_feed(struct st_json_schema_state *st, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!st_json_schema_push(st, (unsigned char)s[i]))
            return false;
    }
    return st->n > 0;
}

bool st_json_schema_valid(const struct st_json_schema_state *st)
{
    return st->n > 0;
}

static bool stack_complete(const struct st_json_schema *sc, const struct st_js_stack *k)
{
    if (k->mode == S_DONE)
        return true;
    if (k->depth > 0)
        return false;
    switch ((enum jsmode)k->mode) {
    case S_NUM_ZERO:
    case S_NUM_INT:
    case S_NUM_FRAC:
        return num_end_ok(sc, k);
    case S_NUM_EXP:
        return true;
    case S_LIT:
        return lit_number_done(sc, k);
    default:
        return false;
    }
}

bool st_json_schema_complete(const struct st_json_schema_state *st)
{
    for (uint32_t i = 0; i < st->n; i++) {
        if (stack_complete(st->schema, &st->s[i]))
            return true;
    }
    return false;
}

bool st_json_schema_empty(const struct st_json_schema_state *st)
{
    return st->n == 1 && st->s[0].mode == S_VALUE && st->s[0].depth == 0;
}
