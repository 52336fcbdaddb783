/* call_grammar_glm.c -- the body of a GLM-4.5 tool call under tool_choice
 * "required" / a named function (include/strata/call_grammar.h): the
 * "<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n" pairs after
 * "<tool_call>X\n", up to "</tool_call>", validated one byte at a time so
 * that every text accepted parses (reply_glm.c) into arguments valid
 * against the tool's parameters schema.
 *
 * The body, as the template writes it (chat_glm45.c):
 *
 *   NEXT   "<arg_key>" (a key may still come) or "</tool_call>" (every
 *          required key came): the body, and the call, end
 *   NAME   the key, matched side by side against the listed names (a bit
 *          per property, call_grammar_xml.c's rule); with
 *          additionalProperties not false, any other name of printable
 *          bytes but blanks, '<', '>', '"', '\\'; it ends at '<'
 *   SEP    the rest of "</arg_key>\n<arg_value>"
 *   JSON   a value the parser reads as JSON (its schema type is not a
 *          string type, or it has none; other names' values too): JSON
 *          text fed to the json_schema validator at the property's node,
 *          no blank before it; once complete, '<' starts END
 *   RAW    a value of a string type: raw text, kept exact by the parser,
 *          so the validator reads '"', the text in st_buf_json_str's
 *          escaping, and '"' at the end (an enum of strings holds). It
 *          ends at the first "</arg_value>"; the bytes of a partial match
 *          are held until the next ones say whether they are the close
 *          (then the string must be whole) or text
 *   END    "</arg_value>\n" (JSON enters after its '<', RAW after
 *          "</arg_value>"), then NEXT
 * No value holds "</tool_call>" (where the parser ends the body); a JSON
 * value holds no "</arg_value>" either (only a string could). Held bytes
 * are accepted only while they can still end the value or be text the
 * validator takes, so no accepted prefix is a dead end (enum values
 * holding "</arg_value>" are refused at build: the tool gets a free body;
 * so does a tool whose schema fell back to "any object" while one of its
 * properties has a string type: call_grammar_xml.c glm_unlisted_raw).
 *
 * The state lives in struct st_call_state's x* fields, as the xml body's.
 */
#include <string.h>

#include "call_grammar_internal.h"
#include "internal.h"
#include "json_schema_internal.h"
#include "strata/think_block.h"

enum gphase { GP_NEXT, GP_NAME, GP_SEP, GP_JSON, GP_RAW, GP_END };

static const char KOPEN[] = "<arg_key>";
static const char TCLOSE[] = "</tool_call>";
static const char SEP[] = "</arg_key>\n<arg_value>";
static const char VCLOSE[] = "</arg_value>";
static const char VEND[] = "</arg_value>\n";
#define LEN(s) (sizeof(s) - 1)
#define MAX_EXTRA_NAME ST_JSON_SCHEMA_MAX_LITERAL

static bool is_ws(unsigned b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

static uint64_t all_props(const struct call_xml *x)
{
    return x->n_props >= 64 ? UINT64_MAX : (UINT64_C(1) << x->n_props) - 1;
}

static void enter_next(struct st_call_state *st, const struct call_xml *x)
{
    st->xphase = GP_NEXT;
    st->xpos = 0;
    st->xalive = 0;
    if ((x->writable & ~st->xseen) || x->extra >= 0)
        st->xalive |= 1;   /* "<arg_key>" */
    if ((x->required & ~st->xseen) == 0)
        st->xalive |= 2;   /* "</tool_call>" */
}

void st_call_glm_start(struct st_call_state *st, const struct call_xml *x)
{
    st->xseen = 0;
    st->xflags = 0;
    st->xprop = -1;
    enter_next(st, x);
}

static int push_next(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    uint64_t keep = 0;
    if ((st->xalive & 1) && st->xpos < LEN(KOPEN) && (unsigned char)KOPEN[st->xpos] == b)
        keep |= 1;
    if ((st->xalive & 2) && (unsigned char)TCLOSE[st->xpos] == b)
        keep |= 2;
    if (!keep)
        return -1;
    st->xalive = keep;
    st->xpos++;
    if (keep == 2)
        return st->xpos == LEN(TCLOSE) ? 1 : 0;
    if (st->xpos < LEN(KOPEN))
        return 0;
    st->xphase = GP_NAME;
    st->xpos = 0;
    /* with other names allowed every listed one is matched, so that a name
     * written already is not taken for another name */
    st->xalive = x->extra >= 0 ? all_props(x) : x->writable & ~st->xseen;
    return 0;
}

/* '<' after xpos bytes of a name: which property, or another name. */
static int name_done(struct st_call_state *st, const struct call_xml *x)
{
    st->xphase = GP_SEP;
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

static int push_name(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    if (b == '<')
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

/* The rest of "</arg_key>\n<arg_value>": then the value starts. */
static int push_sep(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    if ((unsigned char)SEP[st->xpos] != b)
        return -1;
    if (++st->xpos < LEN(SEP))
        return 0;
    int32_t node = st->xprop >= 0 ? x->node[st->xprop] : x->extra;
    bool json = st->xprop >= 0 ? (x->json >> st->xprop & 1) : x->extra_json;
    st_js_state_init_node(&st->js, x->schema, node);
    st->xpos = 0;
    st->xflags = 0;
    st->xtc = 0;
    st->xphase = json ? GP_JSON : GP_RAW;
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
            if (b != '<')
                return -1;
            st->xphase = GP_END;
            st->xpos = 1;
            return 0;
        }
    } else if (is_ws(b) && st_json_schema_empty(&st->js)) {
        return -1;
    }
    if (!st_json_schema_push(&st->js, b))
        return -1;
    /* "</arg_value>" inside a string: the grammar keeps it out of values */
    return st_think_close_step(VCLOSE, &st->xpos, b) ? -1 : 0;
}

/* The held bytes (n of "</arg_value>") can still end the value (the
 * string is whole) or be text. */
static bool held_viable(const struct st_json_schema_state *js, uint32_t n)
{
    struct st_json_schema_state j;
    st_json_schema_state_copy(&j, js);
    if (st_json_schema_push(&j, '"') && st_json_schema_complete(&j))
        return true;
    st_json_schema_state_copy(&j, js);
    return st_json_schema_feed(&j, VCLOSE, n);   /* no byte of it needs escaping */
}

static int push_raw(struct st_call_state *st, unsigned char b)
{
    if (st->xpos > 0 && (unsigned char)VCLOSE[st->xpos] == b) {
        if (++st->xpos < LEN(VCLOSE))
            return held_viable(&st->js, st->xpos) ? 0 : -1;
        if (!st_json_schema_push(&st->js, '"') || !st_json_schema_complete(&st->js))
            return -1;
        st->xphase = GP_END;   /* "</arg_value>" of VEND matched */
        return 0;
    }
    if (st->xpos > 0) {        /* what was held is text after all */
        if (!st_json_schema_feed(&st->js, VCLOSE, st->xpos))
            return -1;
        st->xpos = 0;
    }
    if (b == '<') {
        st->xpos = 1;
        return held_viable(&st->js, 1) ? 0 : -1;
    }
    return st_call_xml_feed_esc(&st->js, b) ? 0 : -1;
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

int st_call_glm_push(struct st_call_state *st, const struct call_xml *x, unsigned char b)
{
    /* the parser's body ends at the first "</tool_call>": no value holds one */
    if (st->xphase == GP_JSON || st->xphase == GP_RAW) {
        uint32_t tc = st->xtc;
        if (st_think_close_step(TCLOSE, &tc, b))
            return -1;
        st->xtc = (uint8_t)tc;
    }
    switch ((enum gphase)st->xphase) {
    case GP_NEXT:
        return push_next(st, x, b);
    case GP_NAME:
        return push_name(st, x, b);
    case GP_SEP:
        return push_sep(st, x, b);
    case GP_JSON:
        return push_json(st, b);
    case GP_RAW:
        return push_raw(st, b);
    case GP_END:
        return push_end(st, x, b);
    }
    return -1;
}

/* As call_grammar_xml.c's: any token without '<' is taken only while
 * nothing of "</arg_value>" or "</tool_call>" is matched. */
bool st_call_glm_free_text(const struct st_call_state *st, unsigned char *stop)
{
    if (st->xphase != GP_RAW || st->xpos != 0 || st->xtc != 0 ||
        !st_json_schema_in_string(&st->js))
        return false;
    *stop = '<';
    return true;
}

const struct st_json_schema_state *st_call_glm_args(const struct st_call_state *st)
{
    if (st->xphase != GP_JSON || st_json_schema_complete(&st->js) || st->xpos != 0 ||
        st->xtc != 0)
        return NULL;
    return &st->js;
}

bool st_call_glm_uses_js(const struct st_call_state *st)
{
    return st->xphase == GP_JSON || st->xphase == GP_RAW;
}
