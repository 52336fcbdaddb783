/* call_grammar_xml.c -- the tagged body of a tool call under tool_choice
 * "required" / a named function (include/strata/call_grammar.h), one
 * machine for the two formats that write arguments as tagged key/value
 * pairs, over a table of their tags (TAGS below):
 *
 *   xml (Qwen3-Coder, chat/formats/qwen3coder.c): after "<function=X>\n",
 *       "<parameter=KEY>\nVALUE\n</parameter>\n"... up to "</function>"
 *   glm (GLM-4.5, chat/formats/glm45.c): after "<tool_call>X\n",
 *       "<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n"... up to
 *       "</tool_call>"
 *
 * validated one byte at a time so that every text accepted parses
 * (chat/formats/qwen3coder.c, glm45.c) into arguments valid against the tool's parameters schema.
 * The body, in the tags' terms (OPEN, END, SEP, VCLOSE, VEND, LEAD):
 *
 *   NEXT   OPEN (a name may still come) or END (every required name
 *          came): the body ends
 *   NAME   the key, matched side by side against the listed names (a bit
 *          per property); with additionalProperties not false, any other
 *          name of printable bytes but blanks, '<', '>', '"', '\\'; it
 *          ends at SEP's first byte ('>' / '<')
 *   SEP    the rest of SEP (">\n" / "</arg_key>\n<arg_value>")
 *   JSON   a value the parser types as JSON (xml: its schema type names
 *          a type other than string; glm: it is not a string type, or
 *          there is none; other names' values too): JSON text fed to the
 *          json_schema validator at the property's node, no blank before
 *          it; once complete, VEND's first byte ('\n' / '<') starts END
 *   RAW    any other value: raw text (the parser makes a JSON string of it,
 *          so the validator reads '"', the text in st_buf_json_str's
 *          escaping, and '"' at the end: an enum of strings holds). It
 *          ends at the first LEAD VCLOSE ("\n</parameter>" /
 *          "</arg_value>"); the bytes of a partial match are held until
 *          the next ones say whether they are the close (then the string
 *          must be whole) or text. xml: "</parameter>" anywhere else in
 *          the text is refused (the parser cuts a value at the first one
 *          followed by another block, so the text can never hold one)
 *   END    the rest of VEND ("\n</parameter>\n" / "</arg_value>\n";
 *          JSON enters after its first byte, RAW after LEAD VCLOSE), then
 *          NEXT
 * No blanks between the blocks but the format's: the grammar is exact.
 * No value holds "</tool_call>" (where the parser ends the whole body);
 * a JSON value holds no VCLOSE either (only a string could). Held bytes
 * in RAW are accepted only while they can still end the value (the string
 * is complete with '"') or be text the validator takes, so no accepted
 * prefix is a dead end (enum values holding VCLOSE are refused at build:
 * the tool gets a free body; glm: so does a tool whose schema fell back to
 * "any object" while one of its properties has a string type,
 * glm_unlisted_raw).
 *
 * The state lives in struct st_call_state's x* fields.
 */
#include <stdlib.h>
#include <string.h>

#include "chat/formats/calls.h"
#include "chat/json/json.h"
#include "grammar/internal.h"
#include "grammar/schema/internal.h"
#include "strata/think_block.h"

enum xphase { XP_NEXT, XP_NAME, XP_SEP, XP_JSON, XP_RAW, XP_END };

#define XF_HELD 1u             /* RAW: LEAD and xpos bytes of VCLOSE held back */

/* What differs between the formats: their tags (struct st_chat_call_tags,
 * each in its format's file: chat/formats/qwen3coder.c, glm45.c). */
static const struct st_chat_call_tags *const TAGS[] = {
    [CALL_BODY_XML] = &st_chat_qwen3coder_call_tags,
    [CALL_BODY_GLM] = &st_chat_glm45_call_tags,
};

static const char TCLOSE[] = "</tool_call>";
#define MAX_EXTRA_NAME ST_JSON_SCHEMA_MAX_LITERAL

static bool is_ws(unsigned b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

/* A byte of a name the grammar lets the model write. */
static bool name_byte(unsigned char b)
{
    return b > 0x20 && b != 0x7f && b != '<' && b != '>' && b != '"' && b != '\\';
}

/* ---- build ------------------------------------------------------------ */

static bool name_ok(const char *s, uint32_t n)
{
    if (n == 0)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        if (!name_byte((unsigned char)s[i]))
            return false;
    }
    return true;
}

/* A value of 'node' may be a JSON string. */
static bool takes_string(const struct st_json_schema *sc, int32_t node)
{
    struct st_json_schema_state j;
    st_js_state_init_node(&j, sc, node);
    return st_json_schema_push(&j, '"');
}

/* Some enum / const value of the schema holds the body's value close
 * ("</parameter>", glm "</arg_value>") or "</tool_call>" (which a value
 * cannot hold). */
static bool lits_hold_close(const struct st_json_schema *sc, const char *vclose)
{
    for (uint32_t i = 0; i < sc->n_nodes; i++) {
        const struct js_node *nd = &sc->nodes[i];
        for (uint32_t k = 0; nd->has_enum && k < nd->n_lits; k++) {
            const struct js_lit *l = &sc->lits[nd->lit_first + k];
            if (memmem(sc->strs + l->off, l->len, vclose, strlen(vclose)) ||
                memmem(sc->strs + l->off, l->len, TCLOSE, sizeof(TCLOSE) - 1))
                return true;
        }
    }
    return false;
}

/* ---- string automata the body cannot finish ----------------------------- */

/* A word's match position after code point c (its first byte occurs in it
 * only there, as st_think_close_step's). */
static uint32_t word_step(const char *w, uint32_t p, uint32_t c)
{
    if ((unsigned char)w[p] == c)
        return p + 1;
    return (unsigned char)w[0] == c ? 1 : 0;
}

/* Non-surrogate code points in [lo, hi] that are not in chars[0..n). */
static bool other_cp(uint32_t lo, uint32_t hi, const unsigned char *chars, uint32_t n)
{
    uint64_t cnt = (uint64_t)hi - lo + 1;
    if (lo <= 0xdfff && hi >= 0xd800)
        cnt -= ST_MIN(hi, 0xdfffu) - ST_MAX(lo, 0xd800u) + 1;
    for (uint32_t i = 0; i < n; i++)
        cnt -= chars[i] >= lo && chars[i] <= hi;
    return cnt > 0;
}

#define TRAP_MAX_EDGES (1u << 22)   /* product edges the check may hold (32 MiB) */

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The product of r with the matchers of w1 and w2 (a state: r's * k + w1's
 * position * (|w2| + 1) + w2's), over the symbols of syms (class, code
 * point; 0: some code point of the class that is in neither word): the
 * state b steps to on symbol y, or UINT32_MAX (r dead, or a word written). */
struct prod {
    const struct js_regex *r;
    const char *w1, *w2;
    uint32_t n1, n2, k;
    const uint32_t *syms;
    uint32_t ns;
};

static uint32_t prod_step(const struct prod *p, uint32_t b, uint32_t y)
{
    uint32_t s = b / p->k, p1 = b % p->k / (p->n2 + 1), p2 = b % (p->n2 + 1);
    uint32_t t = p->r->next[(size_t)s * p->r->n_classes + p->syms[2 * y]];
    uint32_t a1 = word_step(p->w1, p1, p->syms[2 * y + 1]);
    uint32_t a2 = word_step(p->w2, p2, p->syms[2 * y + 1]);
    if (t == JS_RX_DEAD || a1 == p->n1 || a2 == p->n2)
        return UINT32_MAX;
    return t * p->k + a1 * (p->n2 + 1) + a2;
}

/* The states reachable from the start, sorted (*n of them); NULL: out of
 * memory or past TRAP_MAX_EDGES. */
static uint32_t *prod_reach(const struct prod *p, size_t *n)
{
    size_t cap = 1024;
    uint8_t *seen = calloc((size_t)p->r->n_states * p->k / 8 + 1, 1);
    uint32_t *q = malloc(cap * sizeof(*q));
    *n = 0;
    if (seen && q) {
        q[(*n)++] = 0;
        seen[0] = 1;
    }
    for (size_t i = 0; seen && q && i < *n; i++) {
        for (uint32_t y = 0; y < p->ns && q; y++) {
            uint32_t id = prod_step(p, q[i], y);
            if (id == UINT32_MAX || (seen[id / 8] >> (id % 8) & 1))
                continue;
            seen[id / 8] |= (uint8_t)(1u << (id % 8));
            if (*n == cap) {
                uint32_t *g = *n * p->ns > TRAP_MAX_EDGES ? NULL
                                                          : realloc(q, 2 * cap * sizeof(*q));
                if (!g)
                    free(q);
                q = g;
                cap *= 2;
            }
            if (q)
                q[(*n)++] = id;
        }
    }
    if (!seen || (q && *n * p->ns > TRAP_MAX_EDGES)) {
        free(q);
        q = NULL;
    }
    free(seen);
    if (q)
        qsort(q, *n, sizeof(*q), cmp_id);
    return q;
}

/* From some state of the product reachable without writing w1 or w2,
 * every way to a match writes one: true. Out of memory or past
 * TRAP_MAX_EDGES: true (the caller's safe side: a free body). */
static bool product_traps(const struct prod *p)
{
    size_t n = 0, ns = p->ns, qt = 0;
    uint32_t *q = prod_reach(p, &n);
    uint32_t *to = q ? malloc((n * ns + 1) * sizeof(*to)) : NULL;
    uint32_t *first = q ? calloc(n + 2, sizeof(*first)) : NULL;
    uint32_t *from = q ? malloc((n * ns + 1) * sizeof(*from)) : NULL;
    uint8_t *live = q ? calloc(n + 1, 1) : NULL;
    bool ok = q && to && first && from && live;
    for (size_t i = 0; ok && i < n; i++) {   /* the edges, as indices into q */
        for (uint32_t y = 0; y < ns; y++) {
            uint32_t id = prod_step(p, q[i], y), *hit = NULL;
            if (id != UINT32_MAX)
                hit = bsearch(&id, q, n, sizeof(*q), cmp_id);
            to[i * ns + y] = hit ? (uint32_t)(hit - q) : UINT32_MAX;
            if (hit)
                first[hit - q + 2]++;
        }
    }
    for (size_t i = 0; ok && i < n; i++)   /* reversed (CSR): first[t] .. first[t + 1] */
        first[i + 2] += first[i + 1];
    for (size_t e = 0; ok && e < n * ns; e++) {
        if (to[e] != UINT32_MAX)
            from[first[to[e] + 1]++] = (uint32_t)(e / ns);
    }
    for (size_t i = 0; ok && i < n; i++) {   /* backward from acceptance; to[] as the queue */
        if (p->r->accept[q[i] / p->k]) {
            live[i] = 1;
            to[qt++] = (uint32_t)i;
        }
    }
    for (size_t h = 0; ok && h < qt; h++) {
        for (uint32_t e = first[to[h]]; e < first[to[h] + 1]; e++) {
            if (!live[from[e]]) {
                live[from[e]] = 1;
                to[qt++] = from[e];
            }
        }
    }
    free(q), free(to), free(first), free(from), free(live);
    return !ok || qt < n;
}

/* Some string automaton of the schema (a pattern / format) could lead a
 * raw value where only the value close or "</tool_call>" finishes it: the
 * body would have a dead end there (a JSON string could escape them; the
 * check covers every automaton, on the safe side). */
static bool rx_trapped(const struct st_json_schema *sc, const char *vclose)
{
    unsigned char chars[32];
    uint32_t nch = 0;
    for (const char *w = vclose; ; w = TCLOSE) {
        for (const char *c = w; *c; c++) {
            if (!memchr(chars, *c, nch))
                chars[nch++] = (unsigned char)*c;
        }
        if (w == TCLOSE)
            break;
    }
    for (uint32_t i = 0; i < sc->n_rx; i++) {
        const struct js_regex *r = &sc->rx[i];
        uint32_t *syms = malloc((2 * ((size_t)nch + r->n_classes) + 2) * sizeof(*syms));
        uint8_t *other = calloc(r->n_classes + 1, 1);
        uint32_t ns = 0;
        bool trap = !syms || !other;
        for (uint32_t v = 0; !trap && v < r->n_iv; v++) {
            uint32_t hi = v + 1 < r->n_iv ? r->lo[v + 1] - 1 : JS_RX_CP_END - 1;
            other[r->cls[v]] |= other_cp(r->lo[v], hi, chars, nch);
        }
        for (uint32_t c = 0; !trap && c < nch; c++) {
            syms[2 * ns] = r->ascii[chars[c]];
            syms[2 * ns++ + 1] = chars[c];
        }
        for (uint32_t c = 0; !trap && c < r->n_classes; c++) {
            if (other[c]) {
                syms[2 * ns] = c;
                syms[2 * ns++ + 1] = 0;
            }
        }
        struct prod p = { r, vclose, TCLOSE, (uint32_t)strlen(vclose), sizeof(TCLOSE) - 1, 0,
                          syms, ns };
        p.k = (p.n1 + 1) * (p.n2 + 1);
        if (!trap && r->n_states)
            trap = product_traps(&p);
        free(syms), free(other);
        if (trap)
            return true;
    }
    return false;
}

/* The parser's typing of key 'name' (chat/formats/qwen3coder.c and glm45.c, through
 * st_chat_param_type): the raw properties[name].type of the tool; xml:
 * JSON text when it names a type other than string; glm: JSON text unless
 * it is a string type (also when there is no type). */
static bool raw_json(struct st_str props, const char *name, uint32_t len, enum call_body body)
{
    struct st_str k, v, ty;
    struct st_buf tmp;
    size_t pos = 0;
    bool json = body == CALL_BODY_GLM;
    if (!props.ptr || st_json_type(props) != ST_JSON_OBJECT)
        return json;
    st_buf_init(&tmp);
    while (st_json_object_next(props, &pos, &k, &v)) {
        st_buf_reset(&tmp);
        if (st_json_string_append(k, &tmp) != ST_OK || tmp.len != len ||
            memcmp(tmp.data ? tmp.data : "", name, len) != 0)
            continue;
        if (!st_json_object_get(v, "type", &ty))
            ty.ptr = NULL;
        json = body == CALL_BODY_GLM ? !st_chat_glm45_raw(ty)
                                     : ty.ptr && st_chat_qwen3coder_typed_json(ty);
        break;   /* the first of that name, as the parser's lookup */
    }
    st_buf_fini(&tmp);
    return json;
}

/* glm: a key of the tool's properties that the compiled schema does not
 * list (it fell back to "any object") and whose type is a string type:
 * such a name would be an other name, its value JSON text, but the parser
 * keeps that value raw ("abc" written as "\"abc\"", quotes kept). */
static bool glm_unlisted_raw(struct st_str props, const struct call_xml *x)
{
    struct st_str k, v, ty;
    struct st_buf tmp;
    size_t pos = 0;
    bool hit = false;
    if (!props.ptr || st_json_type(props) != ST_JSON_OBJECT)
        return false;
    st_buf_init(&tmp);
    while (!hit && st_json_object_next(props, &pos, &k, &v)) {
        st_buf_reset(&tmp);
        if (st_json_string_append(k, &tmp) != ST_OK) {
            hit = true;   /* out of memory: the free body, which needs no typing */
            break;
        }
        bool listed = false;
        for (uint32_t i = 0; i < x->n_props && !listed; i++)
            listed = x->name_len[i] == tmp.len &&
                     memcmp(x->names[i], tmp.data ? tmp.data : "", tmp.len) == 0;
        hit = !listed && st_json_object_get(v, "type", &ty) && st_chat_glm45_raw(ty);
    }
    st_buf_fini(&tmp);
    return hit;
}

enum st_status st_call_xml_build(struct st_str fn, const struct st_json_schema *sc,
                                 enum call_body body, struct call_xml **out)
{
    *out = NULL;
    const struct js_node *root = &sc->nodes[sc->root];
    if (root->kind != JS_PLAIN || !(root->types & JT_OBJ) || root->n_props > 64 ||
        lits_hold_close(sc, TAGS[body]->vclose.s) || rx_trapped(sc, TAGS[body]->vclose.s))
        return ST_OK;
    struct call_xml *x = calloc(1, sizeof(*x));
    if (!x)
        return ST_ERR_NOMEM;
    struct st_str params, props = { NULL, 0 };
    if (st_json_object_get(fn, "parameters", &params))
        (void)st_json_object_get(params, "properties", &props);
    x->schema = sc;
    x->body = (uint8_t)body;
    x->n_props = root->n_props;
    x->required = root->required;
    /* other names: glm reads their values as JSON (no type to say
     * otherwise), xml as strings */
    x->extra_json = body == CALL_BODY_GLM;
    x->extra = root->additional >= 0 && (x->extra_json || takes_string(sc, root->additional))
                   ? root->additional
                   : -1;
    for (uint32_t i = 0; i < x->n_props; i++) {
        const struct js_prop *p = &sc->props[root->prop_first + i];
        uint64_t bit = UINT64_C(1) << i;
        x->names[i] = sc->strs + p->key;
        x->name_len[i] = p->key_len;
        x->node[i] = p->node;
        bool json = raw_json(props, x->names[i], p->key_len, body);
        if (name_ok(x->names[i], p->key_len) && (json || takes_string(sc, p->node))) {
            x->writable |= bit;
            x->json |= json ? bit : 0;
        } else if (x->required & bit) {
            free(x);   /* a required key that cannot be written: a free body */
            return ST_OK;
        }
    }
    if (body == CALL_BODY_GLM && x->extra >= 0 && glm_unlisted_raw(props, x)) {
        free(x);   /* a string-typed key the schema does not list: a free body */
        return ST_OK;
    }
    *out = x;
    return ST_OK;
}

/* ---- validate ---------------------------------------------------------- */

static uint64_t all_props(const struct call_xml *x)
{
    return x->n_props >= 64 ? UINT64_MAX : (UINT64_C(1) << x->n_props) - 1;
}

static void enter_next(struct st_call_state *st, const struct call_xml *x)
{
    st->xphase = XP_NEXT;
    st->xpos = 0;
    st->xalive = 0;
    if ((x->writable & ~st->xseen) || x->extra >= 0)
        st->xalive |= 1;   /* OPEN */
    if ((x->required & ~st->xseen) == 0)
        st->xalive |= 2;   /* END */
}

void st_call_xml_start(struct st_call_state *st, const struct call_xml *x)
{
    st->xseen = 0;
    st->xflags = 0;
    st->xprop = -1;
    enter_next(st, x);
}

/* OPEN and END differ in their second byte: at most one is alive after. */
static int push_next(struct st_call_state *st, const struct call_xml *x,
                     const struct st_chat_call_tags *t, unsigned char b)
{
    uint64_t keep = 0;
    if ((st->xalive & 1) && st->xpos < t->open.n && (unsigned char)t->open.s[st->xpos] == b)
        keep |= 1;
    if ((st->xalive & 2) && (unsigned char)t->end.s[st->xpos] == b)
        keep |= 2;
    if (!keep)
        return -1;
    st->xalive = keep;
    st->xpos++;
    if (keep == 2)
        return st->xpos == t->end.n ? 1 : 0;
    if (st->xpos < t->open.n)
        return 0;
    st->xphase = XP_NAME;
    st->xpos = 0;
    /* with other names allowed every listed one is matched, so that a name
     * written already (or one without a writable value) is not taken for
     * another name */
    st->xalive = x->extra >= 0 ? all_props(x) : x->writable & ~st->xseen;
    return 0;
}

/* SEP's first byte after xpos bytes of a name: which property, or another
 * name. */
static int name_done(struct st_call_state *st, const struct call_xml *x)
{
    st->xphase = XP_SEP;
    for (uint64_t a = st->xalive; a; a &= a - 1) {
        int i = __builtin_ctzll(a);
        if (x->name_len[i] != st->xpos)
            continue;
        if (!((x->writable & ~st->xseen) >> i & 1))
            return -1;   /* written already, or a name no value of can be written */
        st->xprop = i;
        st->xpos = 1;
        return 0;
    }
    if (x->extra < 0 || st->xpos == 0)
        return -1;
    st->xprop = -1;
    st->xpos = 1;
    return 0;
}

static int push_name(struct st_call_state *st, const struct call_xml *x,
                     const struct st_chat_call_tags *t, unsigned char b)
{
    if (b == (unsigned char)t->sep.s[0])
        return name_done(st, x);
    uint64_t keep = 0;
    for (uint64_t a = st->xalive; a; a &= a - 1) {
        int i = __builtin_ctzll(a);
        if (st->xpos < x->name_len[i] && (unsigned char)x->names[i][st->xpos] == b)
            keep |= UINT64_C(1) << i;
    }
    bool extra = x->extra >= 0 && name_byte(b) && st->xpos < MAX_EXTRA_NAME;
    if (!keep && !extra)
        return -1;
    st->xalive = keep;
    st->xpos++;
    return 0;
}

/* Byte b of literal l, xpos of it matched: -1 refused, 0 taken, 1 it is
 * whole. */
static int lit_step(struct st_call_state *st, struct st_chat_lit l, unsigned char b)
{
    if ((unsigned char)l.s[st->xpos] != b)
        return -1;
    return ++st->xpos == l.n;
}

/* The rest of SEP: then the value starts. */
static int push_sep(struct st_call_state *st, const struct call_xml *x,
                    const struct st_chat_call_tags *t, unsigned char b)
{
    int r = lit_step(st, t->sep, b);
    if (r <= 0)
        return r;
    int32_t node = st->xprop >= 0 ? x->node[st->xprop] : x->extra;
    bool json = st->xprop >= 0 ? (x->json >> st->xprop & 1) : x->extra_json;
    st_js_state_init_node(&st->js, x->schema, node);
    st->xpos = 0;
    st->xflags = 0;
    st->xtc = 0;
    st->xphase = json ? XP_JSON : XP_RAW;
    if (!json)
        (void)st_json_schema_push(&st->js, '"');   /* build checked it is taken */
    return 0;
}

static int push_json(struct st_call_state *st, const struct st_chat_call_tags *t, unsigned char b)
{
    if (st_json_schema_complete(&st->js)) {
        struct st_json_schema_state j;
        st_json_schema_state_copy(&j, &st->js);
        if (is_ws(b) || !st_json_schema_push(&j, b)) {   /* a number may still grow */
            if (b != (unsigned char)t->vend.s[0])
                return -1;
            st->xphase = XP_END;
            st->xpos = 1;
            return 0;
        }
    } else if (is_ws(b) && st_json_schema_empty(&st->js)) {
        return -1;
    }
    if (!st_json_schema_push(&st->js, b))
        return -1;
    /* VCLOSE inside a string would cut the value for the parser */
    return st_think_close_step(t->vclose.s, &st->xpos, b) ? -1 : 0;
}

/* b as st_buf_json_str writes it into the string's JSON text. */
static bool feed_esc(struct st_json_schema_state *js, unsigned char b)
{
    static const char hex[] = "0123456789abcdef";
    char e[6] = { '\\', (char)b, 0, 0, 0, 0 };
    switch (b) {
    case '"': case '\\':   return st_json_schema_feed(js, e, 2);
    case '\n': e[1] = 'n'; return st_json_schema_feed(js, e, 2);
    case '\r': e[1] = 'r'; return st_json_schema_feed(js, e, 2);
    case '\t': e[1] = 't'; return st_json_schema_feed(js, e, 2);
    case '\b': e[1] = 'b'; return st_json_schema_feed(js, e, 2);
    case '\f': e[1] = 'f'; return st_json_schema_feed(js, e, 2);
    default:
        break;
    }
    if (b >= 0x20)
        return st_json_schema_push(js, b);
    e[1] = 'u';
    e[2] = '0';
    e[3] = '0';
    e[4] = hex[b >> 4];
    e[5] = hex[b & 15];
    return st_json_schema_feed(js, e, 6);
}

/* The held LEAD and n bytes of VCLOSE as text. */
static bool feed_held(struct st_json_schema_state *js, const struct st_chat_call_tags *t,
                      uint32_t n)
{
    if (t->lead && !feed_esc(js, (unsigned char)t->lead))
        return false;
    return st_json_schema_feed(js, t->vclose.s, n);   /* no byte of it needs escaping */
}

/* The held bytes (LEAD and n of VCLOSE) can still end the value (the
 * string is whole) or be text. */
static bool held_viable(const struct st_json_schema_state *js, const struct st_chat_call_tags *t,
                        uint32_t n)
{
    struct st_json_schema_state j;
    st_json_schema_state_copy(&j, js);
    if (st_json_schema_push(&j, '"') && st_json_schema_complete(&j))
        return true;
    st_json_schema_state_copy(&j, js);
    return feed_held(&j, t, n);
}

/* A byte of the text with nothing held: LEAD (VCLOSE's first byte where
 * there is none) starts a hold. */
static int raw_fresh(struct st_call_state *st, const struct st_chat_call_tags *t, unsigned char b)
{
    if (b == (unsigned char)(t->lead ? t->lead : t->vclose.s[0])) {
        st->xflags = XF_HELD;
        st->xpos = t->lead ? 0 : 1;
        return held_viable(&st->js, t, st->xpos) ? 0 : -1;
    }
    if (b == '<')
        st->xpos = 1;   /* xml: "</parameter>" in the text, refused if it completes */
    return feed_esc(&st->js, b) ? 0 : -1;
}

static int push_raw(struct st_call_state *st, const struct st_chat_call_tags *t, unsigned char b)
{
    bool held = st->xflags & XF_HELD;
    if (held && (unsigned char)t->vclose.s[st->xpos] == b) {
        if (++st->xpos < t->vclose.n)
            return held_viable(&st->js, t, st->xpos) ? 0 : -1;
        if (!st_json_schema_push(&st->js, '"') || !st_json_schema_complete(&st->js))
            return -1;
        st->xflags = 0;
        st->xphase = XP_END;
        st->xpos = t->vend.n - 1;   /* LEAD VCLOSE of VEND matched */
        return 0;
    }
    if (held) {   /* what was held is text after all */
        if (!feed_held(&st->js, t, st->xpos))
            return -1;
        st->xflags = 0;
        st->xpos = 0;
    } else if (st->xpos > 0) {   /* xml: VCLOSE without LEAD, as text */
        if ((unsigned char)t->vclose.s[st->xpos] == b) {
            if (++st->xpos == t->vclose.n)
                return -1;
            return feed_esc(&st->js, b) ? 0 : -1;
        }
        st->xpos = 0;
    }
    return raw_fresh(st, t, b);
}

/* The rest of VEND: then NEXT. */
static int push_end(struct st_call_state *st, const struct call_xml *x,
                    const struct st_chat_call_tags *t, unsigned char b)
{
    int r = lit_step(st, t->vend, b);
    if (r <= 0)
        return r;
    if (st->xprop >= 0)
        st->xseen |= UINT64_C(1) << st->xprop;
    enter_next(st, x);
    return 0;
}

int st_call_xml_push(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    const struct st_chat_call_tags *t = TAGS[x->body];
    /* the parser's body ends at the first "</tool_call>": no value holds one */
    if (st->xphase == XP_JSON || st->xphase == XP_RAW) {
        uint32_t tc = st->xtc;
        if (st_think_close_step(TCLOSE, &tc, b))
            return -1;
        st->xtc = (uint8_t)tc;
    }
    switch ((enum xphase)st->xphase) {
    case XP_NEXT:
        return push_next(st, x, t, b);
    case XP_NAME:
        return push_name(st, x, t, b);
    case XP_SEP:
        return push_sep(st, x, t, b);
    case XP_JSON:
        return push_json(st, t, b);
    case XP_RAW:
        return push_raw(st, t, b);
    case XP_END:
        return push_end(st, x, t, b);
    }
    return -1;
}

/* Both fast paths (here and st_call_xml_args' in-string one) take any token
 * without '<': only while nothing of VCLOSE or "</tool_call>" is matched
 * (xml: a held '\n' aside, which any such token releases as text), or the
 * rest of one ("ool_call>" after "</t") would pass unread. */
bool st_call_xml_free_text(const struct st_call_state *st, unsigned char *stop)
{
    if (st->xphase != XP_RAW || st->xpos != 0 || st->xtc != 0 ||
        !st_json_schema_in_string(&st->js))
        return false;
    *stop = '<';
    return true;
}

const struct st_json_schema_state *st_call_xml_args(const struct st_call_state *st)
{
    if (st->xphase != XP_JSON || st_json_schema_complete(&st->js) || st->xpos != 0 ||
        st->xtc != 0)
        return NULL;
    return &st->js;
}

bool st_call_xml_uses_js(const struct st_call_state *st)
{
    return st->xphase == XP_JSON || st->xphase == XP_RAW;
}
