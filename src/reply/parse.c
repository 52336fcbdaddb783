/* parse.c -- the incremental reply parser (strata/reply_parse.h).
 *
 * All undecided bytes live in p->pend from p->pos on. Each feed appends,
 * then steps the state machine until it needs more input:
 *
 *   START      reply start: whitespace, then "<think>"? -> REASONING, else CONTENT
 *   REASONING  up to "</think>"; held: a "</think>" prefix at the tail and
 *              trailing whitespace (reasoning is trimmed)
 *   CONTENT    up to "<tool_call>" (with tools); held: a "<tool_call>"
 *              prefix at the tail and trailing whitespace (dropped before
 *              a call)
 *   TOOL       pend[pos..) = dropped whitespace + "<tool_call>" + body; the
 *              body is scanned as JSON (strings and escapes tracked, so a
 *              "</tool_call>" or "}" inside a string is just text) until
 *              its value closes, then "</tool_call>" must follow after
 *              whitespace. Anything else is malformed: the literal
 *              "</tool_call>" ends it (or the end of generation), and the
 *              whole span, whitespace and tag included, goes out as content.
 *
 *   (xml)  with xml_calls, the body is not scanned as JSON: it runs to the
 *              first "</tool_call>" and is judged whole (the format's
 *              reply hook, chat/formats/qwen3coder.c).
 *   (glm)  likewise with opts.glm (chat/formats/glm45.c); also the content's
 *              leading blanks are dropped (lead starts true), unless
 *              opts.cont (the reply continues a message's text).
 *
 *   (mistral) with opts.mistral the markers are [THINK] [/THINK] [TOOL_CALLS]
 *              and a call has no closing tag: TOOL reads blanks, a name up
 *              to "[ARGS]" / "[CALL_ID]id" / "{", then one JSON value (or,
 *              with no name, a JSON array or object of calls) and ends
 *              where that value closes (step_tool_mistral).
 *
 *   (bare) with bare_json_calls, content whose first non-blank byte is "{"
 *              enters TOOL with no tags: the object must close and only
 *              blanks may follow until the end of generation; anything
 *              else gives the span back as content at once.
 *
 * Offsets of the call being read are relative to pos, which does not move
 * while in TOOL. The buffer is compacted after every feed.
 */
#include <string.h>

#include "strata/reply_parse.h"

#include "chat/formats/calls.h"
#include "chat/json/json.h"

enum { S_START, S_REASONING, S_CONTENT, S_TOOL };
enum { J_BEFORE, J_IN, J_AFTER, J_BAD };

static const char think_open[] = "<think>";
static const char think_close[] = "</think>";
static const char call_open[] = "<tool_call>";
static const char call_close[] = "</tool_call>";

#define LEN(lit) (sizeof(lit) - 1)

/* The markers of the parser's format. */
struct marks {
    const char *open, *close, *call;
    size_t      n_open, n_close, n_call;
};

static struct marks marks_of(const struct st_reply_parser *p)
{
    static const struct marks qwen = { think_open, think_close, call_open, LEN(think_open),
                                       LEN(think_close), LEN(call_open) };
    static const struct marks mistral = { "[THINK]", "[/THINK]", "[TOOL_CALLS]", 7, 8, 12 };
    static const struct marks mistral_tags = { think_open, think_close, "[TOOL_CALLS]",
                                               LEN(think_open), LEN(think_close), 12 };
    return !p->opts.mistral ? qwen : p->think_tags ? mistral_tags : mistral;
}

enum { M_BLANK, M_NAME, M_TAG, M_ID, M_JSON };   /* mistral call phases */
#define M_NAME_MAX 256

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The first occurrence of lit in s[0..n), or n. */
static size_t find(const char *s, size_t n, const char *lit, size_t k)
{
    const char *hit = n >= k ? memmem(s, n, lit, k) : NULL;
    return hit ? (size_t)(hit - s) : n;
}

/* Start of the longest tail of s[0..n) that is a proper prefix of lit (n = none). */
static size_t partial_tail(const char *s, size_t n, const char *lit, size_t k)
{
    size_t m = n < k - 1 ? n : k - 1;
    for (; m > 0; m--)
        if (memcmp(s + n - m, lit, m) == 0)
            return n - m;
    return n;
}

/* s[0..n) is a prefix of lit (possibly all of it). */
static bool prefix_of(const char *s, size_t n, const char *lit, size_t k)
{
    return n <= k && memcmp(s, lit, n) == 0;
}

static size_t skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n && is_ws(s[i]))
        i++;
    return i;
}

static size_t rtrim(const char *s, size_t n)
{
    while (n > 0 && is_ws(s[n - 1]))
        n--;
    return n;
}

static enum st_status put(st_reply_emit_fn *emit, void *ctx, enum st_reply_kind kind,
                           const char *text, size_t len, int32_t index)
{
    struct st_reply_event ev = { kind, text, len, index };
    if (len == 0 && (kind == ST_REPLY_CONTENT || kind == ST_REPLY_REASONING))
        return ST_OK;
    return emit(ctx, &ev);
}

void st_reply_parser_init(struct st_reply_parser *p, const struct st_reply_opts *opts)
{
    memset(p, 0, sizeof(*p));
    p->opts = *opts;
    st_buf_init(&p->pend);
    st_buf_init(&p->scratch);
    if (!opts->reasoning)
        p->state = S_CONTENT;
    else if (opts->in_reasoning)
        p->state = S_REASONING;
    else
        p->state = S_START;
    p->lead = p->state == S_REASONING || (opts->glm && !opts->cont && p->state == S_CONTENT);
}

void st_reply_parser_fini(struct st_reply_parser *p)
{
    st_buf_fini(&p->pend);
    st_buf_fini(&p->scratch);
}

/* ---- one step per state; *more = call again ---------------------------- */

struct step {
    const char *s;      /* pend.data + pos */
    size_t n;           /* undecided bytes */
    bool final;         /* end of generation */
    st_reply_emit_fn *emit;
    void *ctx;
    bool more;
};

static enum st_status step_start(struct st_reply_parser *p, struct step *t)
{
    struct marks mk = marks_of(p);
    size_t i = skip_ws(t->s, 0, t->n);
    bool tags = p->opts.mistral && t->n - i >= LEN(think_open) &&
                memcmp(t->s + i, think_open, LEN(think_open)) == 0;
    if (tags || (t->n - i >= mk.n_open && memcmp(t->s + i, mk.open, mk.n_open) == 0)) {
        p->think_tags = tags;   /* Mistral: <think> closes with </think> */
        p->pos += i + (tags ? LEN(think_open) : mk.n_open);
        p->state = S_REASONING;
        p->lead = true;
        t->more = true;
    } else if (!t->final && (prefix_of(t->s + i, t->n - i, mk.open, mk.n_open) ||
                             (p->opts.mistral &&
                              prefix_of(t->s + i, t->n - i, think_open, LEN(think_open))))) {
        t->more = false;        /* "  <thi": wait */
    } else {
        p->state = S_CONTENT;   /* no reasoning: the leading whitespace is content */
        /* ... but GLM's "\n" after <|assistant|> is the format's (not a
         * continued message's: its blanks are the text's) */
        p->lead = p->opts.glm && !p->opts.cont;
        t->more = true;
    }
    return ST_OK;
}

static enum st_status step_reasoning(struct st_reply_parser *p, struct step *t)
{
    if (p->lead) {
        size_t i = skip_ws(t->s, 0, t->n);
        p->pos += i;
        if (i == t->n)
            return ST_OK;       /* all blank so far */
        p->lead = false;
        t->more = true;
        return ST_OK;
    }
    struct marks mk = marks_of(p);
    size_t h = find(t->s, t->n, mk.close, mk.n_close);
    if (h < t->n) {
        enum st_status rc = put(t->emit, t->ctx, ST_REPLY_REASONING, t->s, rtrim(t->s, h), 0);
        p->pos += h + mk.n_close;
        p->state = S_CONTENT;
        p->lead = true;
        t->more = true;
        return rc;
    }
    size_t cut = t->final ? t->n : partial_tail(t->s, t->n, mk.close, mk.n_close);
    size_t e = rtrim(t->s, cut);
    p->pos += t->final ? t->n : e;
    return put(t->emit, t->ctx, ST_REPLY_REASONING, t->s, e, 0);
}

static void tool_reset(struct st_reply_parser *p, size_t body)
{
    p->body = body;
    p->scan = 0;
    p->mphase = M_BLANK;
    p->ns = p->ne = 0;
    p->jstate = J_BEFORE;
    p->depth = 0;
    p->in_str = p->esc = false;
    p->js = p->je = 0;
}

/* bare_json_calls: a reply whose content starts with "{" may be a call. */
static bool start_bare(struct st_reply_parser *p, struct step *t)
{
    size_t i = skip_ws(t->s, 0, t->n);
    if (i == t->n || t->s[i] != '{')
        return false;
    p->state = S_TOOL;
    p->bare = true;
    tool_reset(p, 0);
    t->more = true;
    return true;
}

static enum st_status step_content(struct st_reply_parser *p, struct step *t)
{
    if (p->lead) {              /* blanks the format drops (after </think>, a call) go first */
        size_t i = skip_ws(t->s, 0, t->n);
        p->pos += i;
        if (i == t->n)
            return ST_OK;
        p->lead = false;
        t->more = true;
        return ST_OK;
    }
    if (p->opts.bare_json_calls && p->opts.tools && !p->content_seen && p->n_calls == 0) {
        if (start_bare(p, t))
            return ST_OK;
        if (!t->final && skip_ws(t->s, 0, t->n) == t->n)
            return ST_OK;       /* blanks so far: "{" may still come */
        p->content_seen = true;
    }
    if (!p->opts.tools) {
        p->pos += t->n;
        return put(t->emit, t->ctx, ST_REPLY_CONTENT, t->s, t->n, 0);
    }
    struct marks mk = marks_of(p);
    size_t h = find(t->s, t->n, mk.call, mk.n_call);
    if (h < t->n) {
        size_t w = rtrim(t->s, h);
        enum st_status rc = put(t->emit, t->ctx, ST_REPLY_CONTENT, t->s, w, 0);
        p->pos += w;            /* the call keeps the dropped blanks, to give them back */
        p->state = S_TOOL;
        tool_reset(p, h - w + mk.n_call);
        t->more = true;
        return rc;
    }
    size_t e = t->final ? t->n : rtrim(t->s, partial_tail(t->s, t->n, mk.call, mk.n_call));
    p->pos += e;
    return put(t->emit, t->ctx, ST_REPLY_CONTENT, t->s, e, 0);
}

/* Advance the JSON scanner over body[scan..n). The value must be an object
 * (or, with 'array', may be an array). */
static void scan_json(struct st_reply_parser *p, const char *b, size_t n, bool array)
{
    for (; p->scan < n && (p->jstate == J_BEFORE || p->jstate == J_IN); p->scan++) {
        char c = b[p->scan];
        if (p->jstate == J_BEFORE) {
            if (is_ws(c))
                continue;
            if (c != '{' && !(array && c == '[')) {
                p->jstate = J_BAD;
                return;
            }
            p->jstate = J_IN;
            p->js = p->scan;
        }
        if (p->in_str) {
            if (p->esc)
                p->esc = false;
            else if (c == '\\')
                p->esc = true;
            else if (c == '"')
                p->in_str = false;
        } else if (c == '"') {
            p->in_str = true;
        } else if (c == '<') {
            p->jstate = J_BAD;  /* not JSON: a "</tool_call>" here ends the call as content */
            return;
        } else if (c == '{' || c == '[') {
            p->depth++;
        } else if ((c == '}' || c == ']') && --p->depth == 0) {
            p->jstate = J_AFTER;
            p->je = p->scan + 1;
        }
    }
}

/* The call's name, then its arguments, into p->scratch (*name_len: where
 * the name ends); false when malformed. need_args: the object must carry
 * "arguments" or "parameters" (a bare reply: else any JSON answer with a
 * "name" would pass for a call). */
static bool judge_call(struct st_reply_parser *p, struct st_str json, bool need_args,
                       size_t *name_len)
{
    struct st_str obj, name, args;
    st_buf_reset(&p->scratch);
    if (!st_json_value(json, &obj) || st_json_type(obj) != ST_JSON_OBJECT)
        return false;
    if (!st_json_object_get(obj, "name", &name) || st_json_type(name) != ST_JSON_STRING ||
        name.len <= 2)
        return false;
    if (st_json_string_append(name, &p->scratch) != ST_OK)
        return false;
    *name_len = p->scratch.len;
    if (!st_json_object_get(obj, "arguments", &args) &&
        !st_json_object_get(obj, "parameters", &args)) {
        if (need_args)
            return false;
        args.ptr = "{}";
        args.len = 2;
    }
    if (st_json_type(args) == ST_JSON_STRING)
        return st_json_string_append(args, &p->scratch) == ST_OK;
    return st_buf_append(&p->scratch, args.ptr, args.len) == ST_OK;
}

/* The call in p->scratch (its name, then from name_len its arguments) as
 * its three events. */
static enum st_status put_call(struct st_reply_parser *p, const struct step *t, size_t name_len,
                               int32_t idx)
{
    ST_TRY(put(t->emit, t->ctx, ST_REPLY_TOOL_START, p->scratch.data, name_len, idx));
    ST_TRY(put(t->emit, t->ctx, ST_REPLY_TOOL_ARGS, p->scratch.data + name_len,
               p->scratch.len - name_len, idx));
    return put(t->emit, t->ctx, ST_REPLY_TOOL_END, NULL, 0, idx);
}

/* The call ends at s[end]: emit it, or give it back as content. */
static enum st_status close_call(struct st_reply_parser *p, struct step *t, size_t end,
                                 bool formed)
{
    enum st_status rc = ST_OK;
    size_t name_len = 0;
    struct st_str json = { t->s + p->body + p->js, p->je - p->js };
    if (formed && (p->opts.xml_calls || p->opts.glm) && !p->bare) {
        size_t i = skip_ws(json.ptr, 0, json.len);
        st_buf_reset(&p->scratch);
        if (i < json.len && json.ptr[i] != '{')
            formed = p->opts.glm
                         ? st_chat_glm45_call(json, p->opts.tools_json, &p->scratch, &name_len)
                         : st_chat_qwen3coder_call(json, p->opts.tools_json, &p->scratch,
                                                   &name_len);
        else
            formed = judge_call(p, json, p->bare, &name_len);
    } else if (formed) {
        formed = judge_call(p, json, p->bare, &name_len);
    }
    if (formed) {
        int32_t idx = p->n_calls++;
        if (p->opts.max_calls <= 0 || idx < p->opts.max_calls)
            rc = put_call(p, t, name_len, idx);
        p->lead = true;
    } else {
        rc = put(t->emit, t->ctx, ST_REPLY_CONTENT, t->s, end, 0);
        p->lead = false;
        p->content_seen = true;
    }
    p->bare = false;
    p->pos += end;
    p->state = S_CONTENT;
    t->more = true;
    return rc;
}

/* xml_calls, glm: the body runs to the first "</tool_call>"; p->scan is
 * where the search goes on. */
static enum st_status step_tool_xml(struct st_reply_parser *p, struct step *t)
{
    const char *b = t->s + p->body;
    size_t n = t->n - p->body;
    size_t h = find(b + p->scan, n - p->scan, call_close, LEN(call_close));
    if (p->scan + h < n) {
        p->js = 0;
        p->je = p->scan + h;
        return close_call(p, t, p->body + p->scan + h + LEN(call_close), true);
    }
    p->scan = ST_MAX(p->scan, n >= LEN(call_close) ? n - LEN(call_close) + 1 : 0);
    return t->final ? close_call(p, t, t->n, false) : ST_OK;
}


/* ---- Mistral calls (opts.mistral) ----------------------------------------- */

/* Emit one call: name, then arguments (a JSON string value passed decoded). */
static enum st_status emit_call(struct st_reply_parser *p, struct step *t, struct st_str name,
                                bool name_is_json, struct st_str args)
{
    int32_t idx = p->n_calls++;

    if (p->opts.max_calls > 0 && idx >= p->opts.max_calls)
        return ST_OK;
    st_buf_reset(&p->scratch);
    ST_TRY(name_is_json ? st_json_string_append(name, &p->scratch)
                        : st_buf_append(&p->scratch, name.ptr, name.len));
    size_t name_len = p->scratch.len;
    ST_TRY(st_json_type(args) == ST_JSON_STRING ? st_json_string_append(args, &p->scratch)
                                                : st_buf_append(&p->scratch, args.ptr, args.len));
    return put_call(p, t, name_len, idx);
}

/* One {"name": "..", "arguments": ..} element: its name and arguments. */
static bool call_object(struct st_str obj, struct st_str *name, struct st_str *args)
{
    if (st_json_type(obj) != ST_JSON_OBJECT || !st_json_object_get(obj, "name", name) ||
        st_json_type(*name) != ST_JSON_STRING || name->len <= 2)
        return false;
    if (!st_json_object_get(obj, "arguments", args) &&
        !st_json_object_get(obj, "parameters", args)) {
        args->ptr = "{}";
        args->len = 2;
    }
    return true;
}

/* A JSON value with no name in front: an object (one call) or an array of
 * them. Validated whole before anything is emitted. */
static bool calls_valid(struct st_str v)
{
    struct st_str elem, name, args;
    size_t pos = 0;
    bool bad = false, any = false;

    if (st_json_type(v) == ST_JSON_OBJECT)
        return call_object(v, &name, &args);
    while (st_json_array_next(v, &pos, &elem, &bad)) {
        if (!call_object(elem, &name, &args))
            return false;
        any = true;
    }
    return any && !bad;
}

static enum st_status emit_calls(struct st_reply_parser *p, struct step *t, struct st_str v)
{
    struct st_str elem, name, args;
    size_t pos = 0;
    bool bad = false;
    enum st_status rc = ST_OK;

    if (st_json_type(v) == ST_JSON_OBJECT) {
        (void)call_object(v, &name, &args);
        return emit_call(p, t, name, true, args);
    }
    while (rc == ST_OK && st_json_array_next(v, &pos, &elem, &bad)) {
        (void)call_object(elem, &name, &args);
        rc = emit_call(p, t, name, true, args);
    }
    return rc;
}

/* The JSON value of the call closed at body[je]: judge and emit it, or give
 * the span back as content. */
static enum st_status close_mistral(struct st_reply_parser *p, struct step *t)
{
    const char *b = t->s + p->body;
    struct st_str v, json = { b + p->js, p->je - p->js };
    enum st_status rc;
    bool named = p->ne > p->ns;

    if (!st_json_value(json, &v) || (named ? st_json_type(v) != ST_JSON_OBJECT : !calls_valid(v)))
        return close_call(p, t, p->body + p->je, false);
    rc = named ? emit_call(p, t, (struct st_str){ b + p->ns, p->ne - p->ns }, false, v)
               : emit_calls(p, t, v);
    p->lead = true;
    p->bare = false;
    p->pos += p->body + p->je;
    p->state = S_CONTENT;
    t->more = true;
    return rc;
}

static bool name_byte(char c)
{
    return !is_ws(c) && c != '"' && c != '\'' && c != '[' && c != ']' && c != '{' && c != '}' &&
           c != '<' && c != '>';
}

/* Blanks, NAME and its tags up to the JSON: p->scan is the cursor. Returns
 * 1 when the JSON starts at p->scan, 0 to wait, -1 malformed (give back up
 * to p->scan). */
static int mistral_head(struct st_reply_parser *p, const char *b, size_t n)
{
    static const char args[] = "[ARGS]", call_id[] = "[CALL_ID]";

    while (p->scan < n) {
        char c = b[p->scan];
        size_t k = n - p->scan;
        switch (p->mphase) {
        case M_BLANK:
            if (is_ws(c)) {
                p->scan++;
                break;
            }
            p->ns = p->ne = p->scan;
            if (c == '[' || c == '{')
                return 1;               /* no name: calls as JSON */
            p->mphase = M_NAME;
            break;
        case M_NAME:
        case M_ID:
            if (c == '[' || (c == '{' && p->mphase == M_NAME)) {
                if (p->mphase == M_NAME)
                    p->ne = p->scan;
                if (c == '{')
                    return 1;           /* NAME{...}: no [ARGS] */
                p->mphase = M_TAG;
                break;
            }
            if (!name_byte(c) || p->scan - p->ns >= M_NAME_MAX)
                return -1;
            p->scan++;
            break;
        default:                        /* M_TAG, at '[' */
            if (k >= LEN(args) && memcmp(b + p->scan, args, LEN(args)) == 0) {
                p->scan += LEN(args);
                return 1;
            }
            if (k >= LEN(call_id) && memcmp(b + p->scan, call_id, LEN(call_id)) == 0) {
                p->scan += LEN(call_id);
                p->mphase = M_ID;
                break;
            }
            if (prefix_of(b + p->scan, k, args, LEN(args)) ||
                prefix_of(b + p->scan, k, call_id, LEN(call_id)))
                return 0;
            return -1;
        }
    }
    return 0;
}

static enum st_status step_tool_mistral(struct st_reply_parser *p, struct step *t)
{
    const char *b = t->s + p->body;
    size_t n = t->n - p->body;

    if (p->mphase != M_JSON) {
        int h = mistral_head(p, b, n);
        if (h < 0)
            return close_call(p, t, p->body + p->scan, false);
        if (h == 0)
            return t->final ? close_call(p, t, t->n, false) : ST_OK;
        p->mphase = M_JSON;
    }
    scan_json(p, b, n, p->ne == p->ns);
    if (p->jstate == J_AFTER)
        return close_mistral(p, t);
    if (p->jstate == J_BAD)
        return close_call(p, t, p->body + p->scan, false);
    return t->final ? close_call(p, t, t->n, false) : ST_OK;
}

static enum st_status step_tool(struct st_reply_parser *p, struct step *t)
{
    if (p->opts.mistral && !p->bare)
        return step_tool_mistral(p, t);
    if ((p->opts.xml_calls || p->opts.glm) && !p->bare)
        return step_tool_xml(p, t);
    const char *b = t->s + p->body;
    size_t n = t->n - p->body;
    scan_json(p, b, n, false);
    if (p->bare) {
        size_t i = p->jstate == J_AFTER ? skip_ws(b, p->je, n) : 0;
        /* not a lone object: it is content, up to what follows it, which is
         * read as content again (so a <tool_call> there is still a call,
         * whatever the chunking) */
        if (p->jstate == J_BAD)   /* up to the byte that cannot be JSON (scan) */
            return close_call(p, t, p->body + p->scan, false);
        if (p->jstate == J_AFTER && i < n)
            return close_call(p, t, p->body + i, false);
        return t->final ? close_call(p, t, n, p->jstate == J_AFTER) : ST_OK;
    }
    if (p->jstate == J_AFTER) {
        size_t i = skip_ws(b, p->je, n);
        size_t k = ST_MIN(n - i, LEN(call_close));
        if (memcmp(b + i, call_close, k) == 0) {
            if (k == LEN(call_close))
                return close_call(p, t, p->body + i + k, true);
            return t->final ? close_call(p, t, t->n, false) : ST_OK;
        }
        p->jstate = J_BAD;      /* something else after the object */
        p->scan = p->je;
    }
    if (p->jstate == J_BAD) {   /* scan: where the closing tag may start */
        size_t h = find(b + p->scan, n - p->scan, call_close, LEN(call_close));
        if (p->scan + h < n)
            return close_call(p, t, p->body + p->scan + h + LEN(call_close), false);
        p->scan = ST_MAX(p->scan, n >= LEN(call_close) ? n - LEN(call_close) + 1 : 0);
    }
    return t->final ? close_call(p, t, t->n, false) : ST_OK;
}

static enum st_status run(struct st_reply_parser *p, bool final, st_reply_emit_fn *emit,
                          void *ctx)
{
    enum st_status rc = ST_OK;
    struct step t = { NULL, 0, final, emit, ctx, true };
    while (rc == ST_OK && t.more) {
        t.s = p->pend.data ? p->pend.data + p->pos : "";
        t.n = p->pend.len - p->pos;
        t.more = false;
        switch (p->state) {
        case S_START:     rc = step_start(p, &t); break;
        case S_REASONING: rc = step_reasoning(p, &t); break;
        case S_CONTENT:   rc = step_content(p, &t); break;
        default:          rc = step_tool(p, &t); break;
        }
    }
    if (p->pos > 0 && p->pos == p->pend.len) {
        st_buf_reset(&p->pend);
        p->pos = 0;
    } else if (p->pos > 0 && p->state != S_TOOL) {
        memmove(p->pend.data, p->pend.data + p->pos, p->pend.len - p->pos);
        p->pend.len -= p->pos;
        p->pend.data[p->pend.len] = '\0';
        p->pos = 0;
    }
    return rc;
}

enum st_status st_reply_parser_feed(struct st_reply_parser *p, const char *text, size_t len,
                                    st_reply_emit_fn *emit, void *ctx)
{
    if (len == 0)
        return ST_OK;
    enum st_status rc = st_buf_append(&p->pend, text, len);
    return rc == ST_OK ? run(p, false, emit, ctx) : rc;
}

enum st_status st_reply_parser_finish(struct st_reply_parser *p, st_reply_emit_fn *emit,
                                      void *ctx)
{
    enum st_status rc = run(p, true, emit, ctx);
    st_buf_reset(&p->pend);
    p->pos = 0;
    return rc;
}

bool st_reply_prompt_opens_think(const char *prompt, size_t len)
{
    size_t n = prompt ? rtrim(prompt, len) : 0;
    return n >= LEN(think_open) && memcmp(prompt + n - LEN(think_open), think_open,
                                          LEN(think_open)) == 0;
}

bool st_reply_prompt_wants_json_calls(const char *prompt, size_t len)
{
    static const char header[] = "<|start_header_id|>system<|end_header_id|>\n\n"
                                 "Environment: ipython\n";
    return prompt && memmem(prompt, len, header, LEN(header)) != NULL;
}

bool st_reply_prompt_is_mistral(const char *prompt, size_t len)
{
    static const char *const starts[] = { "[INST]", "[SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]" };
    size_t i, k;

    if (!prompt)
        return false;
    if (len >= 3 && memcmp(prompt, "<s>", 3) == 0) {
        prompt += 3;
        len -= 3;
    }
    for (i = 0; i < ST_ARRAY_LEN(starts); i++) {
        k = strlen(starts[i]);
        if (len >= k && memcmp(prompt, starts[i], k) == 0)
            return true;
    }
    return false;
}

bool st_reply_prompt_wants_xml_calls(const char *prompt, size_t len)
{
    static const char example[] = "<tool_call>\n<function=example_function_name>\n"
                                  "<parameter=example_parameter_1>\n";
    return prompt && memmem(prompt, len, example, LEN(example)) != NULL;
}

bool st_reply_prompt_is_glm(const char *prompt, size_t len)
{
    static const char start[] = "[gMASK]<sop>";
    return prompt && len >= LEN(start) && memcmp(prompt, start, LEN(start)) == 0;
}
