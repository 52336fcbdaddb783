/* call_grammar_xml.c -- the body of a Qwen3-Coder tool call under
 * tool_choice "required" / a named function (include/strata/call_grammar.h):
 * the "<parameter=KEY>\nVALUE\n</parameter>\n" blocks between
 * "<function=X>\n" and "</function>", validated one byte at a time so that
 * every text accepted parses (reply_xml.c) into arguments valid against
 * the tool's parameters schema.
 *
 * The body, as the template writes it (chat_qwen3coder.c):
 *
 *   NEXT   "<parameter=" (a name may still come) or "</function>" (every
 *          required name came): the body ends
 *   NAME   the key, matched side by side against the listed names (a bit
 *          per property); with additionalProperties not false, any other
 *          name of printable bytes but blanks, '<', '>', '"', '\\'; then ">"
 *   NL     the "\n" after ">"
 *   JSON   a value the parser types (reply_xml.c st_reply_xml_typed_json):
 *          JSON text fed to the json_schema validator at the property's
 *          node; no blank before it; once complete a '\n' starts END
 *   RAW    any other value: raw text (the parser makes a JSON string of it,
 *          so the validator reads '"', the text in st_buf_json_str's
 *          escaping, and '"' at the end: an enum of strings holds). It
 *          ends at the first "\n</parameter>"; a '\n' is held back until
 *          the next bytes say whether it is the format's (then it is not
 *          text) and "</parameter>" anywhere else in the text is refused:
 *          the parser cuts a value at the first "</parameter>" followed by
 *          another block, so the text can never hold one; nor
 *          "</tool_call>", where the parser ends the whole body
 *   END    "\n</parameter>\n" (JSON enters after its '\n', RAW after
 *          "\n</parameter>"), then NEXT
 * No blanks between the blocks but the format's "\n": the grammar is exact.
 * A JSON value never holds "</parameter>" or "</tool_call>" either (only
 * a string could).
 * Held bytes in RAW are accepted only while they can still end the value
 * (the string is complete with '"') or be text the validator takes, so no
 * accepted prefix is a dead end (enum values holding "</parameter>" are
 * refused at build: the tool gets a free body).
 */
#include <stdlib.h>
#include <string.h>

#include "call_grammar_internal.h"
#include "internal.h"
#include "json_schema_internal.h"
#include "strata/think_block.h"

enum xphase { XP_NEXT, XP_NAME, XP_NL, XP_JSON, XP_RAW, XP_END };

#define XF_NL 1u               /* RAW: a '\n' held back */

static const char PARAM[] = "<parameter=";
static const char FEND[] = "</function>";
static const char VCLOSE[] = "</parameter>";
static const char VEND[] = "\n</parameter>\n";
static const char TCLOSE[] = "</tool_call>";
#define LEN(s) (sizeof(s) - 1)
#define MAX_EXTRA_NAME ST_JSON_SCHEMA_MAX_LITERAL

static bool is_ws(unsigned b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

/* A byte of a name the grammar lets the model write. */
bool st_call_xml_name_byte(unsigned char b)
{
    return b > 0x20 && b != 0x7f && b != '<' && b != '>' && b != '"' && b != '\\';
}

/* ---- build ------------------------------------------------------------ */

static bool name_ok(const char *s, uint32_t n)
{
    if (n == 0)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        if (!st_call_xml_name_byte((unsigned char)s[i]))
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
                memmem(sc->strs + l->off, l->len, TCLOSE, LEN(TCLOSE)))
                return true;
        }
    }
    return false;
}

/* The parser's typing of key 'name' (reply_xml.c / reply_glm.c, through
 * st_reply_param_type): the raw properties[name].type of the tool; xml:
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
        json = body == CALL_BODY_GLM ? !st_reply_glm_raw(ty)
                                     : ty.ptr && st_reply_xml_typed_json(ty);
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
        hit = !listed && st_json_object_get(v, "type", &ty) && st_reply_glm_raw(ty);
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
        lits_hold_close(sc, body == CALL_BODY_GLM ? "</arg_value>" : VCLOSE))
        return ST_OK;
    struct call_xml *x = calloc(1, sizeof(*x));
    if (!x)
        return ST_ERR_NOMEM;
    struct st_str params, props = { NULL, 0 };
    if (st_json_object_get(fn, "parameters", &params))
        (void)st_json_object_get(params, "properties", &props);
    x->schema = sc;
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
        st->xalive |= 1;   /* "<parameter=" */
    if ((x->required & ~st->xseen) == 0)
        st->xalive |= 2;   /* "</function>" */
}

void st_call_xml_start(struct st_call_state *st, const struct call_xml *x)
{
    st->xseen = 0;
    st->xflags = 0;
    st->xprop = -1;
    enter_next(st, x);
}

static int push_next(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    uint64_t keep = 0;
    if ((st->xalive & 1) && (unsigned char)PARAM[st->xpos] == b)
        keep |= 1;
    if ((st->xalive & 2) && (unsigned char)FEND[st->xpos] == b)
        keep |= 2;
    if (!keep)
        return -1;
    st->xalive = keep;
    if (++st->xpos < LEN(PARAM))   /* both literals are 11 bytes */
        return 0;
    if (keep & 2)
        return 1;
    st->xphase = XP_NAME;
    st->xpos = 0;
    /* with other names allowed every listed one is matched, so that a name
     * written already (or one without a writable value) is not taken for
     * another name */
    st->xalive = x->extra >= 0 ? all_props(x) : x->writable & ~st->xseen;
    return 0;
}

/* '>' after xpos bytes of a name: which property, or another name. */
static int name_done(struct st_call_state *st, const struct call_xml *x)
{
    for (uint64_t a = st->xalive; a; a &= a - 1) {
        int i = __builtin_ctzll(a);
        if (x->name_len[i] != st->xpos)
            continue;
        if (!((x->writable & ~st->xseen) >> i & 1))
            return -1;   /* written already, or a name no value of can be written */
        st->xprop = i;
        st->xphase = XP_NL;
        return 0;
    }
    if (x->extra < 0 || st->xpos == 0)
        return -1;
    st->xprop = -1;
    st->xphase = XP_NL;
    return 0;
}

static int push_name(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    if (b == '>')
        return name_done(st, x);
    uint64_t keep = 0;
    for (uint64_t a = st->xalive; a; a &= a - 1) {
        int i = __builtin_ctzll(a);
        if (st->xpos < x->name_len[i] && (unsigned char)x->names[i][st->xpos] == b)
            keep |= UINT64_C(1) << i;
    }
    bool extra = x->extra >= 0 && st_call_xml_name_byte(b) && st->xpos < MAX_EXTRA_NAME;
    if (!keep && !extra)
        return -1;
    st->xalive = keep;
    st->xpos++;
    return 0;
}

/* The '\n' after "<parameter=KEY>": the value starts. */
static int push_nl(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    if (b != '\n')
        return -1;
    int32_t node = st->xprop >= 0 ? x->node[st->xprop] : x->extra;
    bool json = st->xprop >= 0 && (x->json >> st->xprop & 1);
    st_js_state_init_node(&st->js, x->schema, node);
    st->xpos = 0;
    st->xflags = 0;
    st->xtc = 0;
    st->xphase = json ? XP_JSON : XP_RAW;
    if (!json)
        (void)st_json_schema_push(&st->js, '"');   /* build checked it is taken */
    return 0;
}

static int push_json(struct st_call_state *st, unsigned char b)
{
    if (st_json_schema_complete(&st->js)) {
        struct st_json_schema_state j;
        st_json_schema_state_copy(&j, &st->js);
        if (is_ws(b) || !st_json_schema_push(&j, b)) {   /* a number may still grow */
            if (b != '\n')
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
    /* "</parameter>" inside a string would cut the value for the parser */
    return st_think_close_step(VCLOSE, &st->xpos, b) ? -1 : 0;
}

/* b as st_buf_json_str writes it into the string's JSON text. */
bool st_call_xml_feed_esc(struct st_json_schema_state *js, unsigned char b)
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

/* The held '\n' and n bytes of "</parameter>" as text. */
static bool feed_held(struct st_json_schema_state *js, uint32_t n)
{
    if (!st_call_xml_feed_esc(js, '\n'))
        return false;
    return st_json_schema_feed(js, VCLOSE, n);   /* no byte of it needs escaping */
}

/* The held bytes ('\n' and n of "</parameter>") can still end the value
 * (the string is whole) or be text. */
static bool held_viable(const struct st_json_schema_state *js, uint32_t n)
{
    struct st_json_schema_state j;
    st_json_schema_state_copy(&j, js);
    if (st_json_schema_push(&j, '"') && st_json_schema_complete(&j))
        return true;
    st_json_schema_state_copy(&j, js);
    return feed_held(&j, n);
}

/* A byte of the text with nothing held. */
static int raw_fresh(struct st_call_state *st, unsigned char b)
{
    if (b == '\n') {
        st->xflags = XF_NL;
        return held_viable(&st->js, 0) ? 0 : -1;
    }
    if (b == '<')
        st->xpos = 1;   /* "</parameter>" in the text: refused if it completes */
    return st_call_xml_feed_esc(&st->js, b) ? 0 : -1;
}

static int push_raw(struct st_call_state *st, unsigned char b)
{
    bool nl = st->xflags & XF_NL;
    if (nl && (st->xpos == 0 ? b == '<' : (unsigned char)VCLOSE[st->xpos] == b)) {
        if (++st->xpos < LEN(VCLOSE))
            return held_viable(&st->js, st->xpos) ? 0 : -1;
        if (!st_json_schema_push(&st->js, '"') || !st_json_schema_complete(&st->js))
            return -1;
        st->xflags = 0;
        st->xphase = XP_END;
        st->xpos = LEN(VCLOSE) + 1;   /* "\n</parameter>" of VEND */
        return 0;
    }
    if (nl) {   /* what was held is text after all */
        if (!feed_held(&st->js, st->xpos))
            return -1;
        st->xflags = 0;
        st->xpos = 0;
    } else if (st->xpos > 0) {
        if ((unsigned char)VCLOSE[st->xpos] == b) {
            if (++st->xpos == LEN(VCLOSE))
                return -1;
            return st_call_xml_feed_esc(&st->js, b) ? 0 : -1;
        }
        st->xpos = 0;
    }
    return raw_fresh(st, b);
}

static int push_end(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    if ((unsigned char)VEND[st->xpos] != b)
        return -1;
    if (++st->xpos < LEN(VEND))
        return 0;
    if (st->xprop >= 0)
        st->xseen |= UINT64_C(1) << st->xprop;
    enter_next(st, x);
    return 0;
}

int st_call_xml_push(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    /* the parser's body ends at the first "</tool_call>": no value holds one */
    if ((st->xphase == XP_JSON || st->xphase == XP_RAW)) {
        uint32_t tc = st->xtc;
        if (st_think_close_step(TCLOSE, &tc, b))
            return -1;
        st->xtc = (uint8_t)tc;
    }
    switch ((enum xphase)st->xphase) {
    case XP_NEXT:
        return push_next(st, x, b);
    case XP_NAME:
        return push_name(st, x, b);
    case XP_NL:
        return push_nl(st, x, b);
    case XP_JSON:
        return push_json(st, b);
    case XP_RAW:
        return push_raw(st, b);
    case XP_END:
        return push_end(st, x, b);
    }
    return -1;
}

/* Both fast paths (here and st_call_xml_args' in-string one) take any token
 * without '<': only while nothing of "</parameter>" or "</tool_call>" is
 * matched, or the rest of one ("ool_call>" after "</t") would pass unread. */
bool st_call_xml_free_text(const struct st_call_state *st, unsigned char *stop)
{
    if (st->xphase != XP_RAW || st->xpos != 0 || st->xtc != 0 ||
        !st_json_schema_in_string(&st->js))
        return false;
    *stop = '<';   /* any text without it is taken: held '\n's included */
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
