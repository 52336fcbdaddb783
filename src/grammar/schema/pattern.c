/* pattern.c -- the schema compiler's "pattern" and "format"
 * (grammar/regex/regex.h): a string node's pattern, its format as a built-in
 * pattern, and its minLength / maxLength become one DFA (the
 * intersection), which the validator runs on the decoded string
 * (pstr.c). docs/API.md "Structured outputs" lists exactly
 * what each format accepts.
 *
 * Lengths: when the automaton already bounds them (its shortest match is
 * at least minLength, its longest at most maxLength) they are not folded
 * in; otherwise the intersection with a counter automaton makes them
 * exact (a 400 when that grows past grammar/regex/regex.h's limits).
 */
#include <string.h>

#include "grammar/schema/cc.h"

#define HEX "[0-9a-fA-F]"
#define H4 HEX "{1,4}"
#define LABEL "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#define DAY31 "(0[1-9]|[12][0-9]|3[01])"
/* RFC 3339 full-date: February 29 only in a leap year (divisible by 4, a
 * century only by 400) */
#define LEAP "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[048]|[2468][048]|[13579][26])00)"
#define DATE "([0-9]{4}-((0[13578]|1[02])-" DAY31 "|(0[469]|11)-(0[1-9]|[12][0-9]|30)|" \
    "02-(0[1-9]|1[0-9]|2[0-8]))|" LEAP "-02-29)"
/* RFC 3339 full-time; a leap second (:60) only at 23:59 UTC: 23:59:60 with
 * Z or a zero offset (the local times a nonzero offset would allow are
 * left out) */
#define TIME "(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3])" \
    ":[0-5][0-9])|23:59:60(\\.[0-9]+)?([Zz]|[+-]00:00))"

/* The formats we enforce: an anchored pattern, and a length cap (0: none). */
static const struct fmt {
    const char *name, *pattern;
    uint32_t max_len;
} formats[] = {
    { "date", "^" DATE "$", 0 },
    { "time", "^" TIME "$", 0 },
    { "date-time", "^" DATE "[Tt]" TIME "$", 0 },
    { "duration", "^P(([0-9]+D|[0-9]+M([0-9]+D)?|[0-9]+Y([0-9]+M([0-9]+D)?)?)"
      "(T([0-9]+H([0-9]+M([0-9]+S)?)?|[0-9]+M([0-9]+S)?|[0-9]+S))?|"
      "T([0-9]+H([0-9]+M([0-9]+S)?)?|[0-9]+M([0-9]+S)?|[0-9]+S)|[0-9]+W)$", 0 },
    { "uuid", "^" HEX "{8}-" HEX "{4}-" HEX "{4}-" HEX "{4}-" HEX "{12}$", 0 },
    { "ipv4", "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}"
      "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$", 0 },
    { "ipv6", "^((" H4 ":){7}" H4 "|(" H4 ":){1,7}:|(" H4 ":){1,6}:" H4 "|(" H4 ":){1,5}(:"
      H4 "){1,2}|(" H4 ":){1,4}(:" H4 "){1,3}|(" H4 ":){1,3}(:" H4 "){1,4}|(" H4 ":){1,2}(:"
      H4 "){1,5}|" H4 ":(:" H4 "){1,6}|:((:" H4 "){1,7}|:))$", 0 },
    { "hostname", "^" LABEL "(\\." LABEL ")*$", 253 },
    { "email", "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
      LABEL "(\\." LABEL ")*$", 0 },
};

static const struct fmt *find_format(struct st_str v)
{
    if (st_json_type(v) != ST_JSON_STRING)
        return NULL;
    for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++) {
        size_t n = strlen(formats[i].name);
        if (v.len == n + 2 && memcmp(v.ptr + 1, formats[i].name, n) == 0)
            return &formats[i];
    }
    return NULL;   /* unknown: an annotation */
}

/* *a = *a and b (b freed). */
static enum st_status narrow(struct js_cc *c, struct js_regex *a, struct js_regex *b,
                             char *msg, size_t cap)
{
    struct js_regex o;
    enum st_status rc = st_js_regex_intersect(a, b, &o, msg, cap);
    st_js_regex_free(a);
    st_js_regex_free(b);
    if (rc == ST_OK)
        *a = o;
    (void)c;
    return rc;
}

/* Fold minLength / maxLength (and a format's cap) into r unless it
 * bounds them already. */
static enum st_status fold_lengths(struct js_cc *c, struct js_regex *r, uint32_t mn, uint32_t mx,
                                   char *msg, size_t cap)
{
    if (!r->n_states)
        return ST_OK;
    uint32_t shortest, longest;
    st_js_regex_span(r, &shortest, &longest);
    if (mn <= shortest && (mx == UINT32_MAX || (longest != UINT32_MAX && longest <= mx)))
        return ST_OK;
    struct js_regex len;
    ST_TRY(st_js_regex_lengths(mn, mx, &len, msg, cap));
    return narrow(c, r, &len, msg, cap);
}

/* The pattern v (a JSON string) compiled into r. */
static enum st_status compile_pattern(struct js_cc *c, struct st_str v, struct js_regex *r,
                                      char *msg, size_t cap)
{
    struct st_buf pat;
    st_buf_init(&pat);
    enum st_status rc = st_json_string_append(v, &pat);
    if (rc == ST_OK)
        rc = st_js_regex_compile(pat.data ? pat.data : "", pat.len, &c->rx_work, r, msg, cap);
    st_buf_fini(&pat);
    return rc;
}

/* r from the pattern, the format and the lengths, in that order (build
 * frees r on failure). */
static enum st_status build_steps(struct js_cc *c, const struct js_kw *k, const struct fmt *f,
                                  const struct js_node *n, struct js_regex *r, char *msg,
                                  size_t cap)
{
    if (k->pattern.ptr)
        ST_TRY(compile_pattern(c, k->pattern, r, msg, cap));
    if (f) {
        struct js_regex fr;
        ST_TRY(st_js_regex_compile(f->pattern, strlen(f->pattern), &c->rx_work, &fr, msg, cap));
        if (k->pattern.ptr)
            ST_TRY(narrow(c, r, &fr, msg, cap));
        else
            *r = fr;
    }
    uint32_t mx = n->max_len;
    if (f && f->max_len)
        mx = ST_MIN(mx, f->max_len);
    return fold_lengths(c, r, n->min_len, mx, msg, cap);
}

static enum st_status build(struct js_cc *c, const struct js_kw *k, const struct fmt *f,
                            const struct js_node *n, struct js_regex *r, char *msg, size_t cap)
{
    memset(r, 0, sizeof(*r));
    enum st_status rc = build_steps(c, k, f, n, r, msg, cap);
    if (rc != ST_OK)
        st_js_regex_free(r);
    return rc;
}

/* What an automaton is built from; the pattern's JSON text follows. */
struct jsc_rx_key {
    const struct fmt *f;
    uint32_t min_len, max_len, pat_len, rx;
};

/* An automaton built from the same keywords earlier in this schema
 * (many fields share a format or a pattern); -1: none. */
static int32_t find_same(const struct js_cc *c, const struct jsc_rx_key *key, struct st_str pat)
{
    for (size_t at = 0; at < c->rx_keys.len;) {
        struct jsc_rx_key k;
        memcpy(&k, c->rx_keys.data + at, sizeof(k));
        const char *p = c->rx_keys.data + at + sizeof(k);
        if (k.f == key->f && k.min_len == key->min_len && k.max_len == key->max_len &&
            k.pat_len == key->pat_len && (!pat.len || memcmp(p, pat.ptr, pat.len) == 0))
            return (int32_t)k.rx;
        at += sizeof(k) + k.pat_len;
    }
    return -1;
}

/* The entry find_same reads (key, then the pattern's text) and r. */
static enum st_status keep_entry(struct js_cc *c, const struct jsc_rx_key *key, struct st_str pat,
                                 const struct js_regex *r)
{
    ST_TRY(st_buf_append(&c->rx_keys, key, sizeof(*key)));
    ST_TRY(st_buf_append(&c->rx_keys, pat.ptr, pat.len));
    return st_buf_append(&c->rxs, r, sizeof(*r));
}

/* Keep r (its table counted against the schema's cap) as node id's. */
static enum st_status keep(struct js_cc *c, int32_t id, struct js_regex *r,
                           struct jsc_rx_key *key, struct st_str pat)
{
    size_t cells = (size_t)r->n_states * r->n_classes;
    size_t n = c->rxs.len / sizeof(*r);
    enum st_status rc;
    key->rx = (uint32_t)n;
    if (n >= ST_JSON_SCHEMA_MAX_PATTERNS)
        rc = jsc_fail(c, "the schema has more than %d distinct 'pattern'/'format' strings",
                      ST_JSON_SCHEMA_MAX_PATTERNS);
    else if (c->rx_cells + cells > ST_JSON_SCHEMA_MAX_RX_CELLS)
        rc = jsc_fail(c, "the schema's 'pattern'/'format' automata are too big: more than %u "
                      "table cells in all", ST_JSON_SCHEMA_MAX_RX_CELLS);
    else
        rc = keep_entry(c, key, pat, r);
    if (rc != ST_OK) {
        st_js_regex_free(r);
        return rc;
    }
    c->rx_cells += cells;
    NODE(c, id).rx = (int32_t)n;
    return ST_OK;
}

enum st_status jsc_compile_pattern(struct js_cc *c, int32_t id, const struct js_kw *k)
{
    const struct fmt *f = k->format.ptr ? find_format(k->format) : NULL;
    if (k->pattern.ptr && st_json_type(k->pattern) != ST_JSON_STRING)
        return jsc_fail(c, "'%s' must be a string", "pattern");
    uint8_t types = NODE(c, id).types;
    if (!(types & JT_STR) || (!k->pattern.ptr && !f))
        return ST_OK;
    struct st_str pat = k->pattern.ptr ? k->pattern : (struct st_str){ "", 0 };
    struct jsc_rx_key key = { f, NODE(c, id).min_len, NODE(c, id).max_len, (uint32_t)pat.len,
                              0 };
    int32_t same = find_same(c, &key, pat);
    if (same >= 0) {
        NODE(c, id).rx = same;
        return ST_OK;
    }
    char msg[160] = "";
    struct js_regex r;
    enum st_status rc = build(c, k, f, &NODE(c, id), &r, msg, sizeof(msg));
    if (rc == ST_ERR_INVALID)
        return jsc_fail(c, "%s", msg);
    if (rc != ST_OK)
        return rc;
    if (!r.n_states) {   /* no string matches */
        st_js_regex_free(&r);
        if (types == JT_STR)
            return jsc_fail(c, "no string matches '%s' with the schema's other string "
                            "keywords: nothing is valid", k->pattern.ptr ? "pattern" : "format");
        NODE(c, id).types = (uint8_t)(types & ~JT_STR);
        return ST_OK;
    }
    return keep(c, id, &r, &key, pat);
}

bool jsc_string_fits(const struct js_cc *c, int32_t id, const char *s, size_t n)
{
    const struct js_node *nd = &((const struct js_node *)(const void *)c->nodes.data)[id];
    if (nd->rx < 0)
        return true;
    const struct js_regex *r = &((const struct js_regex *)(const void *)c->rxs.data)[nd->rx];
    return st_js_regex_match(r, s, n);
}
