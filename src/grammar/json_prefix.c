/* json_prefix.c -- the byte-at-a-time JSON prefix validator
 * (include/strata/json_prefix.h) behind response_format json_object.
 *
 * A pushdown automaton: 'mode' is the lexical state, 'stack' one bit per
 * open container. Grammar: RFC 8259 (numbers -?(0|[1-9]\d*)(\.\d+)?
 * ([eE][+-]?\d+)?, the literals true/false/null, strings with the escapes
 * \" \\ \/ \b \f \n \r \t \uXXXX), with the top-level value an object.
 * A number has no end byte of its own: the byte after it ends it and is
 * then read as the byte after a value (numbers never stand at the top
 * level here, so that byte always comes).
 */
#include "strata/json_prefix.h"

#include <string.h>

enum jmode {
    J_TOP,         /* before the top-level object: whitespace or '{' */
    J_VALUE,       /* a value (after ':' or an array's ',') */
    J_ARR_FIRST,   /* after '[': a value or ']' */
    J_OBJ_FIRST,   /* after '{': a key or '}' */
    J_KEY,         /* after an object's ',': a key */
    J_COLON,       /* after a key */
    J_AFTER,       /* after a value inside a container: ',' or the closer */
    J_DONE,        /* the top-level object closed: whitespace only */
    J_STR,         /* inside a string */
    J_ESC,         /* after '\' in a string */
    J_UHEX,        /* in \uXXXX; aux = digits seen */
    J_NUM_MINUS,   /* '-': a digit must follow */
    J_NUM_ZERO,    /* a leading 0: '.', 'e' or the end */
    J_NUM_INT,     /* integer digits */
    J_NUM_DOT,     /* '.': a digit must follow */
    J_NUM_FRAC,    /* fraction digits */
    J_NUM_E,       /* 'e': a sign or a digit */
    J_NUM_ESIGN,   /* 'e+': a digit */
    J_NUM_EXP,     /* exponent digits */
    J_LIT,         /* true/false/null; aux = id * 8 + bytes matched */
    J_BAD,         /* not a prefix of any valid document (sticky) */
};

static const char *const literals[3] = { "true", "false", "null" };

void st_json_prefix_init(struct st_json_prefix *j)
{
    memset(j, 0, sizeof(*j));
    j->mode = J_TOP;
}

bool st_json_prefix_valid(const struct st_json_prefix *j)
{
    return j->mode != J_BAD;
}

bool st_json_prefix_in_string(const struct st_json_prefix *j)
{
    return j->mode == J_STR;
}

bool st_json_prefix_between(const struct st_json_prefix *j)
{
    return j->mode <= J_DONE;
}

bool st_json_prefix_empty(const struct st_json_prefix *j)
{
    return j->mode == J_TOP;
}

bool st_json_prefix_complete(const struct st_json_prefix *j)
{
    return j->mode == J_DONE;
}

static bool is_ws(unsigned char b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

static bool is_digit(unsigned char b)
{
    return b >= '0' && b <= '9';
}

static bool is_hex(unsigned char b)
{
    return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

static bool bad(struct st_json_prefix *j)
{
    j->mode = J_BAD;
    return false;
}

static bool top_is_array(const struct st_json_prefix *j)
{
    return (j->stack >> (j->depth - 1)) & 1u;
}

/* A value just ended (string, number, literal, container). */
static bool value_done(struct st_json_prefix *j)
{
    j->mode = j->depth == 0 ? J_DONE : J_AFTER;
    return true;
}

static bool open_container(struct st_json_prefix *j, bool array)
{
    if (j->depth >= ST_JSON_MAX_DEPTH)
        return bad(j);
    uint64_t bit = UINT64_C(1) << j->depth;
    j->stack = array ? j->stack | bit : j->stack & ~bit;
    j->depth++;
    j->mode = array ? J_ARR_FIRST : J_OBJ_FIRST;
    return true;
}

static bool close_container(struct st_json_prefix *j, unsigned char b)
{
    if (j->depth == 0 || (b == ']') != top_is_array(j))
        return bad(j);
    j->depth--;
    return value_done(j);
}

/* The first byte of a value. */
static bool value_start(struct st_json_prefix *j, unsigned char b)
{
    switch (b) {
    case '{':
        return open_container(j, false);
    case '[':
        return open_container(j, true);
    case '"':
        j->mode = J_STR;
        j->key = 0;
        return true;
    case '-':
        j->mode = J_NUM_MINUS;
        return true;
    case '0':
        j->mode = J_NUM_ZERO;
        return true;
    case 't':
    case 'f':
    case 'n':
        j->mode = J_LIT;
        j->aux = (uint8_t)((b == 't' ? 0 : b == 'f' ? 1 : 2) * 8 + 1);
        return true;
    default:
        if (b >= '1' && b <= '9') {
            j->mode = J_NUM_INT;
            return true;
        }
        return bad(j);
    }
}

/* The structural states: between tokens of the grammar. */
static bool push_structural(struct st_json_prefix *j, unsigned char b)
{
    if (is_ws(b))
        return true;
    switch ((enum jmode)j->mode) {
    case J_TOP:
        return b == '{' ? open_container(j, false) : bad(j);
    case J_ARR_FIRST:
        if (b == ']')
            return close_container(j, b);
        return value_start(j, b);
    case J_VALUE:
        return value_start(j, b);
    case J_OBJ_FIRST:
    case J_KEY:
        if (b == '}' && j->mode == J_OBJ_FIRST)
            return close_container(j, b);
        if (b != '"')
            return bad(j);
        j->mode = J_STR;
        j->key = 1;
        return true;
    case J_COLON:
        if (b != ':')
            return bad(j);
        j->mode = J_VALUE;
        return true;
    case J_AFTER:
        if (b == ',') {
            j->mode = top_is_array(j) ? J_VALUE : J_KEY;
            return true;
        }
        if (b == '}' || b == ']')
            return close_container(j, b);
        return bad(j);
    default:   /* J_DONE: whitespace only */
        return bad(j);
    }
}

static bool push_string(struct st_json_prefix *j, unsigned char b)
{
    switch ((enum jmode)j->mode) {
    case J_STR:
        if (b == '"') {
            if (j->key) {
                j->mode = J_COLON;
                return true;
            }
            return value_done(j);
        }
        if (b == '\\')
            j->mode = J_ESC;
        return b >= 0x20 ? true : bad(j);
    case J_ESC:
        if (b == 'u') {
            j->mode = J_UHEX;
            j->aux = 0;
            return true;
        }
        if (!strchr("\"\\/bfnrt", b) || b == 0)
            return bad(j);
        j->mode = J_STR;
        return true;
    default:   /* J_UHEX */
        if (!is_hex(b))
            return bad(j);
        if (++j->aux == 4)
            j->mode = J_STR;
        return true;
    }
}

/* Number states. A byte that cannot continue the number ends it, where
 * the number may end (after a digit), and is read again as structure. */
static bool push_number(struct st_json_prefix *j, unsigned char b)
{
    enum jmode m = (enum jmode)j->mode;
    if (is_digit(b)) {
        switch (m) {
        case J_NUM_MINUS:
            j->mode = b == '0' ? J_NUM_ZERO : J_NUM_INT;
            return true;
        case J_NUM_ZERO:
            return bad(j);   /* no leading zeros */
        case J_NUM_DOT:
            j->mode = J_NUM_FRAC;
            return true;
        case J_NUM_E:
        case J_NUM_ESIGN:
            j->mode = J_NUM_EXP;
            return true;
        default:   /* INT, FRAC, EXP: more digits */
            return true;
        }
    }
    if (m == J_NUM_MINUS || m == J_NUM_DOT || m == J_NUM_ESIGN)
        return bad(j);
    if (m == J_NUM_E)
        return (b == '+' || b == '-') ? (j->mode = J_NUM_ESIGN, true) : bad(j);
    if (b == '.' && (m == J_NUM_ZERO || m == J_NUM_INT)) {
        j->mode = J_NUM_DOT;
        return true;
    }
    if ((b == 'e' || b == 'E') && m != J_NUM_EXP) {
        j->mode = J_NUM_E;
        return true;
    }
    j->mode = J_AFTER;   /* the number ended; depth >= 1 here */
    return push_structural(j, b);
}

static bool push_literal(struct st_json_prefix *j, unsigned char b)
{
    const char *lit = literals[j->aux / 8];
    size_t at = j->aux % 8;
    if ((unsigned char)lit[at] != b)
        return bad(j);
    j->aux++;
    if (lit[at + 1] == '\0')
        return value_done(j);
    return true;
}

bool st_json_prefix_push(struct st_json_prefix *j, unsigned char b)
{
    switch ((enum jmode)j->mode) {
    case J_BAD:
        return false;
    case J_STR:
    case J_ESC:
    case J_UHEX:
        return push_string(j, b);
    case J_NUM_MINUS:
    case J_NUM_ZERO:
    case J_NUM_INT:
    case J_NUM_DOT:
    case J_NUM_FRAC:
    case J_NUM_E:
    case J_NUM_ESIGN:
    case J_NUM_EXP:
        return push_number(j, b);
    case J_LIT:
        return push_literal(j, b);
    default:
        return push_structural(j, b);
    }
}

bool st_json_prefix_feed(struct st_json_prefix *j, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!st_json_prefix_push(j, (unsigned char)s[i]))
            return false;
    }
    return j->mode != J_BAD;
}
