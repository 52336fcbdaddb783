/* call_grammar.c -- tool_choice "required" / a named function: the
 * compiled call grammar and its byte-at-a-time validator
 * (include/strata/call_grammar.h).
 *
 * The validator is a small machine over literal sets and two free parts:
 *
 *   LIT    matching literals side by side (a bitmask of those still in
 *          play, one position for all): the PREs of the first call (and
 *          THINK_OPEN), the PREs of a later call, the POST of a call, or
 *          CLOSE / SEP after a call. No literal of a set is a prefix of
 *          another (names are distinct and every PRE ends with a byte no
 *          name has), so the first one matched whole decides.
 *   THINK  free text up to THINK_CLOSE (whose first byte occurs once in it,
 *          so a mismatch restarts the match at 0 or 1: no KMP table;
 *          think_block.h's matcher and tags, shared with the JSON modes).
 *   ARGS   the json_schema.h state of the tool's parameters; once the
 *          document is complete a byte it would not take goes to POST.
 *   XML    xml: the parameter blocks up to "</function>" (then POST),
 *          call_grammar_xml.c; glm: the key/value pairs up to
 *          "</tool_call>" (no POST), the same machine with GLM's tags;
 *   BODY   xml / glm, a tool whose parameters that format cannot write
 *          (the fallback): free text up to "</function>" ("</tool_call>"
 *          for glm), like THINK.
 *   DONE   after CLOSE (or the last call): blanks only (uncapped: the mask
 *          lets them come only when end of generation is banned).
 *
 * The literals (OPEN, PRE, POST, SEP, CLOSE, the tagged bodies' tags) are
 * each format's own: its file in chat/formats/ defines its frame
 * (chat/formats/calls.h), next to its template and its reply hook.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "chat/formats/calls.h"
#include "chat/json/json.h"
#include "grammar/internal.h"
#include "strata/call_grammar.h"
#include "strata/out.h"
#include "strata/str.h"
#include "strata/think_block.h"

enum phase { P_LIT, P_THINK, P_ARGS, P_DONE, P_DEAD, P_BODY, P_XML };
enum lset { S_START, S_FIRST, S_CALL, S_POST, S_AFTER };

#define THINK_BIT 63
#define CLOSE_BIT 0
#define SEP_BIT   1

struct call_tool {
    char  *pre_first;               /* OPEN + PRE */
    size_t n_pre_first;
    char  *pre;                     /* PRE (a later call) */
    size_t n_pre;
    struct st_json_schema *args;    /* owned reference */
    struct call_xml *xml;           /* xml: owned; NULL: a free body */
};

struct st_call_grammar {
    atomic_int refs;
    int32_t n_tools;
    struct call_tool *tools;        /* owned; n_tools */
    const char *post, *sep, *close;   /* static strings */
    bool parallel;
    enum st_call_think think;
    enum st_call_format format;
    const struct st_chat_call_frame *frame;   /* the format's (chat/formats/) */
    enum st_think_tags think_tags;  /* EITHER: the first byte of the opening decides */
};

static bool is_ws(unsigned b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

/* ---- compile --------------------------------------------------------- */

static void grammar_free(struct st_call_grammar *g)
{
    for (int32_t i = 0; i < g->n_tools; i++) {
        free(g->tools[i].pre_first);
        free(g->tools[i].pre);
        st_json_schema_unref(g->tools[i].args);
        free(g->tools[i].xml);
    }
    free(g->tools);
    free(g);
}

void st_call_grammar_ref(struct st_call_grammar *g)
{
    atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}

void st_call_grammar_unref(struct st_call_grammar *g)
{
    if (g && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
        grammar_free(g);
}

int32_t st_call_grammar_n_tools(const struct st_call_grammar *g)
{
    return g->n_tools;
}

/* The frame each format writes its calls in: its file in chat/formats/
 * says how (calls.h). */
static const struct st_chat_call_frame *frame_of(enum st_call_format f)
{
    switch (f) {
    case ST_CALL_HERMES:    return &st_chat_qwen3_call_frame;
    case ST_CALL_LLAMA:     return &st_chat_llama31_call_frame;
    case ST_CALL_MISTRAL11: return &st_chat_mistral11_call_frame;
    case ST_CALL_MISTRAL7:  return &st_chat_mistral7_call_frame;
    case ST_CALL_XML:       return &st_chat_qwen3coder_call_frame;
    case ST_CALL_GLM:       return &st_chat_glm45_call_frame;
    }
    return &st_chat_qwen3_call_frame;
}

/* The format's fixed literals. */
static void set_format(struct st_call_grammar *g, enum st_call_format f)
{
    const struct st_chat_call_frame *fr = frame_of(f);

    g->frame = fr;
    g->format = f;
    g->post = fr->post;
    g->sep = fr->sep;
    g->close = fr->close;
    g->think_tags = fr->square_think ? ST_THINK_SQUARE : ST_THINK_ANGLE;
    if (fr->single)
        g->parallel = false;
}

/* A name that can stand in the format: no quotes, backslashes or control
 * bytes (it goes into a JSON string unescaped), nor the bytes the frame
 * refuses (mistral11: blanks or brackets, as reply_parse reads NAME up to
 * "[ARGS]"; glm: no '{' first, as reply_parse reads a body starting with
 * '{' as a JSON call). */
static bool name_ok(const char *s, size_t n, const struct st_chat_call_frame *fr)
{
    if (n == 0 || n > ST_CALL_MAX_NAME)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"' || c == '\\' || c == 0x7f)
            return false;
        if (fr->name_refused && strchr(fr->name_refused, c))
            return false;
        if (fr->name_no_brace && i == 0 && c == '{')
            return false;
    }
    return true;
}

/* [OPEN] PRE_HEAD NAME PRE_TAIL: a call's opening (OPEN: the first call's). */
static enum st_status make_pre(const struct st_chat_call_frame *fr, const char *name, size_t n,
                               bool first, char **out, size_t *len)
{
    struct st_buf b;
    struct st_out o;
    st_buf_init(&b);
    st_out_init(&o, &b);
    st_out_text(&o, first ? fr->open : "");   /* allocates b even when all is empty */
    st_out_text(&o, fr->pre_head);
    st_out_raw(&o, name, n);
    st_out_text(&o, fr->pre_tail);
    *len = b.len;
    *out = st_out_ok(&o) ? st_buf_steal(&b) : NULL;
    st_buf_fini(&b);
    return *out ? ST_OK : ST_ERR_NOMEM;
}

/* The parameters schema as one whose documents are objects (arguments
 * are a JSON object, whatever the schema leaves out): "type": "object"
 * added when it has no type; false when its type is something else. */
static bool object_schema(struct st_str params, struct st_buf *out)
{
    struct st_str ty;
    if (st_json_object_get(params, "type", &ty))
        return st_json_type(ty) == ST_JSON_STRING && st_str_eq_c(ty, "\"object\"") &&
               st_buf_append(out, params.ptr, params.len) == ST_OK;
    const char *in = params.ptr + 1, *end = params.ptr + params.len - 1;   /* inside {} */
    while (in < end && strchr(" \t\r\n", *in))
        in++;
    return st_buf_printf(out, "{\"type\":\"object\"%s%.*s}", in < end ? "," : "",
                         (int)(end - in), in) == ST_OK;
}

/* X's parameters schema, or "any object" when it has none, when its
 * documents need not be objects, or when the schema compiler refuses it
 * (never a 400 for what worked before). */
static enum st_status compile_args(struct st_str fn, struct st_json_schema **out,
                                   int32_t *n_fallback)
{
    struct st_str params;
    struct st_buf text;
    st_buf_init(&text);
    bool ok = st_json_object_get(fn, "parameters", &params) &&
              st_json_type(params) == ST_JSON_OBJECT && object_schema(params, &text) &&
              st_json_schema_compile(text.data, text.len, out, NULL) == ST_OK;
    st_buf_fini(&text);
    if (ok)
        return ST_OK;
    if (n_fallback)
        (*n_fallback)++;
    static const char any[] = "{\"type\":\"object\"}";
    return st_json_schema_compile(any, sizeof(any) - 1, out, NULL) == ST_OK ? ST_OK
                                                                            : ST_ERR_NOMEM;
}

/* Tool element -> its function's name (decoded into 'name') and object. */
static bool tool_fn(struct st_str tool, struct st_buf *name, struct st_str *fn)
{
    struct st_str nm;
    st_buf_reset(name);
    if (!st_json_object_get(tool, "function", fn) || st_json_type(*fn) != ST_JSON_OBJECT)
        return false;
    if (!st_json_object_get(*fn, "name", &nm) || st_json_type(nm) != ST_JSON_STRING)
        return false;
    return st_json_string_append(nm, name) == ST_OK;
}

static bool has_tool(const struct st_call_grammar *g, const char *pre, size_t n)
{
    for (int32_t i = 0; i < g->n_tools; i++) {
        if (g->tools[i].n_pre == n && memcmp(g->tools[i].pre, pre, n) == 0)
            return true;
    }
    return false;
}

/* The rest of tool t: the first call's opening, the arguments' schema and
 * (XML-like formats) the body; *fell: the body is free text. The caller
 * frees t on failure. */
static enum st_status tool_parts(const struct st_call_grammar *g, const struct st_call_spec *spec,
                                 const struct st_buf *name, struct st_str fn,
                                 struct call_tool *t, int32_t *fell)
{
    ST_TRY(make_pre(g->frame, name->data, name->len, true, &t->pre_first, &t->n_pre_first));
    ST_TRY(compile_args(fn, &t->args, fell));
    if (spec->format == ST_CALL_XML || spec->format == ST_CALL_GLM) {
        ST_TRY(st_call_xml_build(fn, t->args,
                                 spec->format == ST_CALL_GLM ? CALL_BODY_GLM : CALL_BODY_XML,
                                 &t->xml));
        *fell = *fell || !t->xml;   /* a free body */
    }
    return ST_OK;
}

static enum st_status add_tool(struct st_call_grammar *g, const struct st_call_spec *spec,
                               const struct st_buf *name, struct st_str fn, int32_t *n_fallback)
{
    struct call_tool t = { 0 };
    ST_TRY(make_pre(g->frame, name->data, name->len, false, &t.pre, &t.n_pre));
    if (has_tool(g, t.pre, t.n_pre)) {   /* a repeated name: the first counts */
        free(t.pre);
        return ST_OK;
    }
    int32_t fell = 0;
    enum st_status rc = tool_parts(g, spec, name, fn, &t, &fell);
    if (rc != ST_OK) {
        free(t.pre);
        free(t.pre_first);
        st_json_schema_unref(t.args);
        return rc;
    }
    if (n_fallback)
        *n_fallback += fell;
    g->tools[g->n_tools++] = t;
    return ST_OK;
}

static enum st_status add_tools(struct st_call_grammar *g, const struct st_call_spec *spec,
                                int32_t *n_fallback, struct st_err *err)
{
    struct st_str arr = { spec->tools_json, spec->tools_len }, el, fn;
    size_t pos = 0, n = 0;
    bool bad = false;
    while (st_json_array_next(arr, &pos, &el, &bad))
        n++;
    if (bad || st_json_type(arr) != ST_JSON_ARRAY)
        return st_err_set(err, ST_ERR_INVALID, "tools is not a JSON array");
    g->tools = calloc(n ? n : 1, sizeof(*g->tools));
    if (!g->tools)
        return ST_ERR_NOMEM;
    struct st_buf name;
    st_buf_init(&name);
    enum st_status rc = ST_OK;
    pos = 0;
    while (rc == ST_OK && st_json_array_next(arr, &pos, &el, &bad)) {
        if (!tool_fn(el, &name, &fn) || !name_ok(name.data, name.len, g->frame))
            continue;
        if (spec->name && strcmp(spec->name, name.data) != 0)
            continue;
        if (g->n_tools == ST_CALL_MAX_TOOLS) {
            rc = st_err_set(err, ST_ERR_UNSUPPORTED, "more than %d tools", ST_CALL_MAX_TOOLS);
            break;
        }
        rc = add_tool(g, spec, &name, fn, n_fallback);
    }
    st_buf_fini(&name);
    if (rc == ST_OK && g->n_tools == 0 && spec->name)
        rc = st_err_set(err, ST_ERR_NOT_FOUND, "no tool named '%.64s'", spec->name);
    else if (rc == ST_OK && g->n_tools == 0)
        rc = st_err_set(err, ST_ERR_NOT_FOUND, "no callable tool");
    return rc;
}

enum st_status st_call_grammar_compile(const struct st_call_spec *spec,
                                       struct st_call_grammar **out, int32_t *n_fallback,
                                       struct st_err *err)
{
    *out = NULL;
    if (n_fallback)
        *n_fallback = 0;
    struct st_call_grammar *g = calloc(1, sizeof(*g));
    if (!g)
        return ST_ERR_NOMEM;
    atomic_init(&g->refs, 1);
    g->parallel = spec->parallel;
    g->think = spec->think;
    set_format(g, spec->format);
    if (spec->think_either && g->think == ST_CALL_THINK_OPTIONAL)
        g->think_tags = ST_THINK_EITHER;
    enum st_status rc = add_tools(g, spec, n_fallback, err);
    if (rc != ST_OK) {
        grammar_free(g);
        return rc == ST_ERR_NOMEM ? st_err_set(err, rc, "out of memory") : rc;
    }
    *out = g;
    return ST_OK;
}

/* ---- validate -------------------------------------------------------- */

/* Literal i of the state's set. */
static struct st_str lit(const struct st_call_state *st, int i)
{
    const struct st_call_grammar *g = st->g;
    switch ((enum lset)st->set) {
    case S_START:
        if (i == THINK_BIT)
            return st_str_c(st_think_open_tag((enum st_think_tags)st->ttags));
        /* fallthrough */
    case S_FIRST:
        return (struct st_str){ g->tools[i].pre_first, g->tools[i].n_pre_first };
    case S_CALL:
        return (struct st_str){ g->tools[i].pre, g->tools[i].n_pre };
    case S_POST:
        return st_str_c(g->post);
    case S_AFTER:
        return st_str_c(i == CLOSE_BIT ? g->close : g->sep);
    }
    return st_str_c("");
}

static uint64_t all_tools(const struct st_call_grammar *g)
{
    return g->n_tools >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << g->n_tools) - 1;
}

static void enter(struct st_call_state *st, enum lset set, uint64_t alive, bool complete)
{
    st->phase = P_LIT;
    st->set = (uint8_t)set;
    st->alive = alive;
    st->pos = 0;
    st->ws = 0;
    st->complete = complete;
}

/* A call's POST is matched: what may follow it. */
static void after_call(struct st_call_state *st)
{
    const struct st_call_grammar *g = st->g;
    st->n_calls++;
    bool close_empty = !g->close[0];
    if (!g->parallel && close_empty) {
        st->phase = P_DONE;
        st->ws = 0;
        st->complete = true;
    } else if (!g->parallel) {
        enter(st, S_AFTER, UINT64_C(1) << CLOSE_BIT, false);
    } else if (!g->sep[0]) {   /* formats with an empty SEP have an empty CLOSE */
        enter(st, S_CALL, all_tools(g), true);
    } else {
        enter(st, S_AFTER, (close_empty ? 0 : UINT64_C(1) << CLOSE_BIT) | UINT64_C(1) << SEP_BIT,
              close_empty);
    }
}

static void start_post(struct st_call_state *st)
{
    if (st->g->post[0])
        enter(st, S_POST, 1, false);
    else
        after_call(st);
}

/* Literal i of the set is matched whole. */
static void matched(struct st_call_state *st, int i)
{
    switch ((enum lset)st->set) {
    case S_START:
    case S_FIRST:
    case S_CALL:
        if (st->set == S_START && i == THINK_BIT) {
            st->phase = P_THINK;
            st->pos = 0;
            return;
        }
        st->tool = i;
        st->pos = 0;
        if (st->g->format == ST_CALL_XML || st->g->format == ST_CALL_GLM) {
            const struct call_xml *x = st->g->tools[i].xml;
            st->phase = x ? P_XML : P_BODY;
            if (x)
                st_call_xml_start(st, x);
            return;
        }
        st->phase = P_ARGS;
        st_json_schema_state_init(&st->js, st->g->tools[i].args);
        return;
    case S_POST:
        after_call(st);
        return;
    case S_AFTER:
        if (i == CLOSE_BIT) {
            st->phase = P_DONE;
            st->ws = 0;
            st->complete = true;
        } else {
            enter(st, S_CALL, all_tools(st->g), false);
        }
        return;
    }
}

static bool push_lit(struct st_call_state *st, unsigned char b)
{
    if (st->pos == 0 && is_ws(b) && st->set != S_POST)
        return ++st->ws <= ST_JSON_SCHEMA_MAX_WS;
    if (st->pos == 0 && st->set == S_START)   /* Magistral: "<think>" or "[THINK]" */
        st->ttags = (uint8_t)st_think_pick_tags((enum st_think_tags)st->ttags, b);
    uint64_t keep = 0;
    for (uint64_t a = st->alive; a; a &= a - 1) {
        int i = __builtin_ctzll(a);
        struct st_str l = lit(st, i);
        if (st->pos < l.len && (unsigned char)l.ptr[st->pos] == b)
            keep |= UINT64_C(1) << i;
    }
    if (!keep)
        return false;
    st->alive = keep;
    st->pos++;
    st->ws = 0;
    st->complete = false;
    for (uint64_t a = keep; a; a &= a - 1) {
        int i = __builtin_ctzll(a);
        if (lit(st, i).len == st->pos) {
            matched(st, i);
            break;
        }
    }
    return true;
}

/* A free body's closing literal ('<' first, and only there). */
static const char *body_close(const struct st_call_grammar *g)
{
    return g->format == ST_CALL_GLM ? "</tool_call>" : "</function>";
}

/* Free text (THINK, BODY) up to its closing literal, whose first byte
 * occurs in it only there. */
static bool push_free(struct st_call_state *st, unsigned char b)
{
    const char *c = st->phase == P_THINK ? st_think_close_tag((enum st_think_tags)st->ttags)
                                         : body_close(st->g);
    if (!st_think_close_step(c, &st->pos, b))
        return true;
    if (st->phase == P_THINK)
        enter(st, S_FIRST, all_tools(st->g), false);
    else
        start_post(st);
    return true;
}

static bool push_args(struct st_call_state *st, unsigned char b)
{
    if (!st_json_schema_complete(&st->js)) {
        if (is_ws(b) && st_json_schema_empty(&st->js))
            return false;
        return st_json_schema_push(&st->js, b);
    }
    if (!is_ws(b)) {   /* a top-level number may still grow */
        struct st_json_schema_state j;
        st_json_schema_state_copy(&j, &st->js);
        if (st_json_schema_push(&j, b))
            return st_json_schema_push(&st->js, b);
    }
    start_post(st);
    return st_call_push(st, b);
}

bool st_call_push(struct st_call_state *st, unsigned char b)
{
    bool ok = false;
    switch ((enum phase)st->phase) {
    case P_LIT:
        ok = push_lit(st, b);
        break;
    case P_THINK:
    case P_BODY:
        ok = push_free(st, b);
        break;
    case P_ARGS:
        ok = push_args(st, b);
        break;
    case P_XML: {
        const struct call_xml *x = st->g->tools[st->tool].xml;
        int r = st_call_xml_push(st, x, b);
        ok = r >= 0;
        if (r == 1)
            start_post(st);
        break;
    }
    case P_DONE:   /* no cap: the mask allows blanks here only when the end is banned */
        ok = is_ws(b);
        break;
    case P_DEAD:
        break;
    }
    if (!ok)
        st->phase = P_DEAD;
    return ok;
}

bool st_call_feed(struct st_call_state *st, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!st_call_push(st, (unsigned char)s[i]))
            return false;
    }
    return true;
}

void st_call_state_init(struct st_call_state *st, const struct st_call_grammar *g)
{
    memset(st, 0, offsetof(struct st_call_state, js));
    st->g = g;
    st->tool = -1;
    st->ttags = (uint8_t)g->think_tags;
    if (g->think == ST_CALL_THINK_OPEN) {
        st->phase = P_THINK;
        return;
    }
    uint64_t alive = all_tools(g);
    if (g->think == ST_CALL_THINK_OPTIONAL)
        alive |= UINT64_C(1) << THINK_BIT;
    enter(st, S_START, alive, false);
}

void st_call_state_copy(struct st_call_state *dst, const struct st_call_state *src)
{
    memcpy(dst, src, offsetof(struct st_call_state, js));
    if (src->phase == P_ARGS ||
        (src->phase == P_XML && st_call_xml_uses_js(src)))
        st_json_schema_state_copy(&dst->js, &src->js);
}

bool st_call_valid(const struct st_call_state *st)
{
    return st->phase != P_DEAD;
}

bool st_call_complete(const struct st_call_state *st)
{
    if (st->phase == P_ARGS && !st->g->post[0] && st_json_schema_complete(&st->js)) {
        struct st_call_state j;   /* the arguments may end the call: as if they had */
        memcpy(&j, st, offsetof(struct st_call_state, js));
        after_call(&j);
        return st_call_complete(&j);
    }
    return st->phase == P_DONE || (st->phase == P_LIT && st->complete);
}

bool st_call_free_text(const struct st_call_state *st, unsigned char *stop)
{
    if (st->phase == P_XML)
        return st_call_xml_free_text(st, stop);
    if ((st->phase != P_THINK && st->phase != P_BODY) || st->pos != 0)
        return false;
    *stop = (unsigned char)(st->phase == P_THINK
                                ? st_think_close_tag((enum st_think_tags)st->ttags)[0]
                                : body_close(st->g)[0]);
    return true;
}

bool st_call_between(const struct st_call_state *st, uint16_t *ws_left)
{
    if (st->phase == P_DONE) {
        *ws_left = UINT16_MAX;
        return true;
    }
    bool at = st->phase == P_LIT && st->pos == 0 && st->set != S_POST;
    *ws_left = at ? (uint16_t)(ST_JSON_SCHEMA_MAX_WS - ST_MIN(st->ws, ST_JSON_SCHEMA_MAX_WS)) : 0;
    return at;
}

bool st_call_done(const struct st_call_state *st)
{
    return st->phase == P_DONE;
}

bool st_call_lt_matters(const struct st_call_state *st)
{
    return st->phase == P_XML;
}

const struct st_json_schema_state *st_call_args(const struct st_call_state *st)
{
    if (st->phase == P_XML)
        return st_call_xml_args(st);
    if (st->phase != P_ARGS || st_json_schema_complete(&st->js))
        return NULL;
    return &st->js;
}
