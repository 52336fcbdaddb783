/* values.c -- the part of the schema compiler that says what
 * a scalar may be: number and integer ranges (minimum, maximum and the
 * exclusive forms, read exactly from their decimal text by
 * range.c), multipleOf (a positive integer divisor), string
 * lengths in code points, and enum / const values, each kept only when
 * the node's types (and pattern) take it.
 */
#include <stdlib.h>
#include <string.h>

#include "grammar/schema/cc.h"

/* The type bit of a scalar literal. */
static uint8_t lit_type(struct st_str v)
{
    switch (st_json_type(v)) {
    case ST_JSON_STRING: return JT_STR;
    case ST_JSON_TRUE:
    case ST_JSON_FALSE: return JT_BOOL;
    case ST_JSON_NULL: return JT_NULL;
    case ST_JSON_NUMBER:
        return memchr(v.ptr, '.', v.len) || memchr(v.ptr, 'e', v.len) ||
               memchr(v.ptr, 'E', v.len) ? JT_NUM : (JT_NUM | JT_INT);
    default: return 0;
    }
}


/* ---- ranges: minimum ... (integers), minLength / maxLength (strings) --- */

/* One bound of a number range: the tighter of the one so far (*have)
 * and d. */
static void num_bound(struct js_dec *cur, bool *cur_open, bool *have, const struct js_dec *d,
                      bool open, bool upper)
{
    int c = *have ? st_js_dec_cmp(d, cur) : 0;
    if (!*have || (upper ? c < 0 : c > 0)) {
        *cur = *d;
        *cur_open = open;
    } else if (c == 0) {
        *cur_open |= open;
    }
    *have = true;
}

/* Number bounds (bound[i] number d[i], exclusive ex[i]) onto node id. */
static enum st_status num_range(struct js_cc *c, int32_t id, const struct js_dec *d,
                                const bool *is, const bool *ex, const char *kw)
{
    struct js_dec lo = { 0 }, hi = { 0 };
    bool lo_open = false, hi_open = false, has_lo = false, has_hi = false;
    for (int i = 0; i < 4; i++) {
        if (!is[i])
            continue;
        if (d[i].fine)
            return jsc_fail(c, "'%s' has more than 18 fraction digits: %s", kw, "not supported");
        if (i < 2)
            num_bound(&lo, &lo_open, &has_lo, &d[i], ex[i], false);
        else
            num_bound(&hi, &hi_open, &has_hi, &d[i], ex[i], true);
    }
    struct js_node *n = &NODE(c, id);
    int cmp = has_lo && has_hi ? st_js_dec_cmp(&lo, &hi) : -1;
    if (cmp > 0 || (cmp == 0 && (lo_open || hi_open))) {
        if (!(n->types & ~(JT_NUM | JT_INT)))
            return jsc_fail(c, "no number is within '%s' and the other bounds: nothing is valid",
                            kw);
        n->types &= (uint8_t)~(JT_NUM | JT_INT);
        return ST_OK;
    }
    n->has_range = JS_RANGE_NUM;
    n->nlo = (struct js_fx){ lo.ip, lo.fp };
    n->nhi = (struct js_fx){ hi.ip, hi.fp };
    n->nflags = (uint8_t)((has_lo ? JS_NR_LO : 0) | (lo.neg ? JS_NR_LO_NEG : 0) |
                          (lo_open ? JS_NR_LO_OPEN : 0) | (has_hi ? JS_NR_HI : 0) |
                          (hi.neg ? JS_NR_HI_NEG : 0) | (hi_open ? JS_NR_HI_OPEN : 0));
    return ST_OK;
}

/* Integer bounds onto node id (it allows integers, not numbers). */
static enum st_status int_range(struct js_cc *c, int32_t id, const struct js_dec *d,
                                const bool *is, const bool *ex, const char *kw)
{
    int64_t lo = -JS_INT_OPEN, hi = JS_INT_OPEN;
    for (int i = 0; i < 4; i++) {
        if (!is[i])
            continue;
        int64_t b = st_js_int_bound(&d[i], i >= 2, ex[i]);
        if (i < 2)
            lo = ST_MAX(lo, b);
        else
            hi = ST_MIN(hi, b);
    }
    struct js_node *n = &NODE(c, id);
    if (lo <= hi && n->mult > 1) {   /* the least multiple from lo must be within hi */
        int64_t m = (int64_t)n->mult, q = lo / m;
        if (lo > 0 && lo % m != 0)
            q++;
        if (q * m > hi)
            lo = hi + 1;
    }
    if (lo > hi && n->types == JT_INT)
        return jsc_fail(c, "no integer is within '%s' and the other bounds: nothing is valid", kw);
    if (lo > hi)
        n->types &= (uint8_t)~JT_INT;
    n->has_range = JS_RANGE_INT;
    n->imin = lo;
    n->imax = hi;
    return ST_OK;
}

/* minimum, exclusiveMinimum, maximum, exclusiveMaximum (k->bound[0..3]):
 * the number form (draft 6+) and the boolean one of draft 4 (true makes
 * minimum / maximum exclusive). */
enum st_status jsc_compile_range(struct js_cc *c, int32_t id, const struct js_kw *k)
{
    static const char *const kw[4] = { "minimum", "exclusiveMinimum", "maximum",
                                       "exclusiveMaximum" };
    bool d4[2] = { false, false }, is[4] = { false }, ex[4];
    struct js_dec d[4];
    int first = -1;
    for (int i = 0; i < 4; i++) {
        if (!k->bound[i].ptr)
            continue;
        enum st_json_type t = st_json_type(k->bound[i]);
        if ((i & 1) && (t == ST_JSON_TRUE || t == ST_JSON_FALSE)) {
            d4[i / 2] = t == ST_JSON_TRUE;
            continue;
        }
        if (t != ST_JSON_NUMBER)
            return jsc_fail(c, "'%s' must be a number", kw[i]);
        if (!st_js_parse_dec(k->bound[i], &d[i]))
            return jsc_fail(c, "'%s' is beyond +-2^53, %s", kw[i], "which is not supported");
        is[i] = true;
        first = first < 0 ? i : first;
    }
    for (int i = 0; i < 4; i++)
        ex[i] = (i & 1) || d4[i / 2];
    uint8_t types = NODE(c, id).types;
    if (first < 0 && NODE(c, id).mult > 1 && (types & JT_INT)) {
        NODE(c, id).has_range = JS_RANGE_INT;   /* open bounds: the divisor needs the digits */
        return ST_OK;
    }
    if (first < 0 || !(types & JT_INT))
        return ST_OK;   /* no bound, or no number is valid anyway */
    return types & JT_NUM ? num_range(c, id, d, is, ex, kw[first])
                          : int_range(c, id, d, is, ex, kw[first]);
}

enum st_status jsc_compile_multiple(struct js_cc *c, int32_t id, const struct js_kw *k)
{
    struct js_dec d;
    if (!k->mult.ptr)
        return ST_OK;
    if (st_json_type(k->mult) != ST_JSON_NUMBER || !st_js_parse_dec(k->mult, &d) || d.neg ||
        (d.ip == 0 && !d.frac && !d.fine))
        return jsc_fail(c, "'%s' must be a positive number (at most 2^53)", "multipleOf");
    if (d.frac || d.fine)
        return jsc_fail(c, "'%s' with a fractional divisor is not supported (only a positive "
                        "integer)", "multipleOf");
    struct js_node *n = &NODE(c, id);
    if (!(n->types & JT_INT))
        return ST_OK;   /* no number is valid anyway */
    n->types = (uint8_t)(n->types & ~JT_NUM);   /* a multiple of an integer is one */
    n->mult = d.ip;
    return ST_OK;
}

enum st_status jsc_compile_lengths(struct js_cc *c, int32_t id, const struct js_kw *k)
{
    uint32_t mn = 0, mx = UINT32_MAX;
    enum st_status rc = ST_OK;
    if (k->min_len.ptr)
        rc = jsc_get_count(c, k->min_len, "minLength", &mn);
    if (rc == ST_OK && k->max_len.ptr)
        rc = jsc_get_count(c, k->max_len, "maxLength", &mx);
    uint8_t types = NODE(c, id).types;
    if (rc != ST_OK || !(types & JT_STR))
        return rc;
    if (mn > mx && types == JT_STR)
        return jsc_fail(c, "'minLength' is above %s: nothing is valid", "'maxLength'");
    if (mn > mx)
        NODE(c, id).types = (uint8_t)(types & ~JT_STR);
    NODE(c, id).min_len = mn;
    NODE(c, id).max_len = mx;
    return ST_OK;
}

/* A scalar literal of type t is within node id's range / lengths. */
static enum st_status lit_fits(struct js_cc *c, int32_t id, struct st_str v, uint8_t t, bool *ok)
{
    const struct js_node *n = &NODE(c, id);
    *ok = true;
    if (t == JT_STR && (n->min_len > 0 || n->max_len < UINT32_MAX || n->rx >= 0)) {
        struct st_buf tmp;
        st_buf_init(&tmp);
        enum st_status rc = st_json_string_append(v, &tmp);
        uint64_t cps = 0;
        for (size_t i = 0; i < tmp.len; i++)
            cps += ((unsigned char)tmp.data[i] & 0xc0) != 0x80;
        *ok = cps >= n->min_len && cps <= n->max_len &&
              (n->rx < 0 || jsc_string_fits(c, id, tmp.data ? tmp.data : "", tmp.len));
        st_buf_fini(&tmp);
        return rc;
    }
    if (!(t & (JT_NUM | JT_INT)) || !n->has_range)
        return ST_OK;
    struct js_dec d;
    if (!st_js_parse_dec(v, &d)) {   /* beyond 2^53: in when its side has no bound */
        bool neg = v.ptr[0] == '-';
        if (n->has_range == JS_RANGE_INT)
            *ok = n->mult <= 1 && (neg ? n->imin == -JS_INT_OPEN : n->imax == JS_INT_OPEN);
        else
            *ok = !(n->nflags & (neg ? JS_NR_LO : JS_NR_HI));
        return ST_OK;
    }
    int64_t x = d.neg ? -(int64_t)d.ip : (int64_t)d.ip;
    if (n->has_range == JS_RANGE_INT)
        *ok = !d.frac && x >= n->imin && x <= n->imax && (n->mult <= 1 || d.ip % n->mult == 0);
    else
        *ok = st_js_num_in_range(n, d.neg, (struct js_fx){ d.ip, d.fp }, d.fine);
    return ST_OK;
}

static enum st_status add_lit(struct js_cc *c, int32_t id, struct st_str v, uint8_t types)
{
    uint8_t t = lit_type(v);
    if (t == 0)
        return jsc_fail(c, "'enum'/'const' values must be strings, numbers, booleans or null; "
                        "%s are not supported", "objects and arrays");
    if (!(t & types))
        return ST_OK;   /* the type rules it out */
    bool fits;
    enum st_status frc = lit_fits(c, id, v, t, &fits);
    if (frc != ST_OK || !fits)
        return frc;     /* out of the range / lengths */
    if (NODE(c, id).n_lits >= ST_JSON_SCHEMA_MAX_ENUM)
        return jsc_fail(c, "'enum' has more than %s values", "64");
    struct js_lit l;
    enum st_status rc = ST_OK;
    if (t == JT_STR) {
        rc = jsc_put_string(c, v, true, &l.off, &l.len);
    } else {
        if (v.len > ST_JSON_SCHEMA_MAX_LITERAL)
            return jsc_fail(c, "an 'enum'/'const' value is longer than %d bytes",
                            ST_JSON_SCHEMA_MAX_LITERAL);
        l.off = (uint32_t)c->strs.len;
        l.len = (uint32_t)v.len;
        rc = st_buf_append(&c->strs, v.ptr, v.len);
    }
    if (rc == ST_OK)
        rc = st_buf_append(&c->lits, &l, sizeof(l));
    NODE(c, id).n_lits++;
    return rc;
}

/* enum (an array) or const (one value): the literals of node id. */
enum st_status jsc_parse_enum(struct js_cc *c, int32_t id, struct st_str en, struct st_str cn)
{
    uint8_t types = NODE(c, id).types;
    NODE(c, id).has_enum = 1;
    NODE(c, id).lit_first = (uint32_t)(c->lits.len / sizeof(struct js_lit));
    enum st_status rc = ST_OK;
    if (cn.ptr) {
        rc = add_lit(c, id, cn, types);
    } else {
        if (st_json_type(en) != ST_JSON_ARRAY)
            return jsc_fail(c, "'%s' must be an array", "enum");
        size_t pos = 0;
        bool bad = false;
        struct st_str e;
        while (rc == ST_OK && st_json_array_next(en, &pos, &e, &bad))
            rc = add_lit(c, id, e, types);
    }
    if (rc == ST_OK && NODE(c, id).n_lits == 0)
        return jsc_fail(c, "no value of '%s' is valid for the schema's type", cn.ptr ? "const"
                        : "enum");
    return rc;
}
