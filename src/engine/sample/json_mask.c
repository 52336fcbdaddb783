/* json_mask.c -- JSON mode (response_format json_object) and structured
 * outputs (json_schema) for the sampler: which tokens may come next so
 * that the text stays a valid JSON object prefix
 * (include/strata/json_prefix.h) or a valid prefix of a document of the
 * schema (include/strata/json_schema.h), and end of generation only once
 * the document is complete. Both validators share everything here but the
 * state they copy.
 *
 * Per step: a 256-entry table of the bytes the state allows next (256
 * pushes on copies of the state: 16 bytes, or the used part of the
 * schema's stacks), then one lookup per token on its
 * first byte (after its leading whitespace, between values), where few
 * bytes may come (keys, literals) a second 256-entry table per allowed
 * first byte, and a walk from a copy of the state only for the
 * multi-byte tokens that pass them.
 * Tool calls (tool_choice "required" / a named function,
 * include/strata/call_grammar.h) use the same machinery over the call
 * grammar's state: inside the arguments its fast paths are the schema's;
 * in a think block's free text every token without the byte that starts
 * the closing tag passes unread (so does a Qwen3-Coder raw string value's
 * text without a '<', and inside its JSON values a string-safe token only
 * without '<': "</parameter>" may not come there); the literal frame around the JSON is
 * decided by the first-byte and two-byte tables, and tokens that cross
 * from the frame into the JSON (or back: '"}', '}\n') are walked.
 * The JSON modes may start with a reasoning model's think block
 * (include/strata/think_block.h, the same free text as the call
 * grammar's): while the think state is before the document, its free
 * text has the same fast path (tokens without the closing tag's first
 * byte pass unread), blanks after the closing tag are skipped like blanks
 * between values, and tokens that cross into the document are walked
 * through the think state, then the document's validator.
 * GBNF grammars (`grammar`, include/strata/gbnf.h) are a third validator
 * on the same machinery: the first-byte table comes from the stacks' top
 * terminals (no pushes), the two-byte table (up to ST_JSON_TWO_MAX first
 * bytes, one push each) decides most multi-byte tokens, and where the
 * grammar is in a loop (a `[^"]*` or `[ \t\n]*` being read, nothing else
 * in play that takes the same bytes) a token of looping bytes (valid
 * UTF-8) passes unread, decided by its byte-group mask (st_json_vocab.sig)
 * or a scan; a looping prefix is skipped before the rest is looked at, and
 * after a tabled first byte that starts a loop (a string's '"') the rest
 * is checked against that loop. Only what remains is walked from a copy
 * of the state. The think block before a JSON document comes before a
 * grammar's text the same way.
 * Inside a json_schema string that is not free (a maxLength with under
 * 256 code points left, or a pattern / format: st_json_schema_run_view),
 * tokens of plain string bytes (ST_JV_PLAIN) are decided without a walk:
 * a bounded string by their code point count (st_json_vocab.ncp) against
 * the room left; a pattern string by a chain of its DFA over a set of
 * ASCII bytes that each state of the chain treats alike (`[a-zA-Z ]`
 * inside `^[a-zA-Z ]+$`, counted where maxLength is part of the DFA):
 * where the set is whole byte groups and every other byte is refused
 * along the chain, one AND on the token's byte groups and a compare of
 * its length; else a scan of the set's bytes, then the DFA alone
 * (st_json_schema_run_feed) on the rest. The same inside a tool call's
 * arguments (step_calls; the state viewed is st_json_step.run_js).
 * Every token's bytes are read once per slot and model (st_json_vocab),
 * on the first sample of a JSON request, never for runners that force
 * their tokens (the sim).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/sample/json_mask.h"

void st_json_vocab_free(struct st_json_vocab *v)
{
    free(v->off);
    free(v->bytes);
    free(v->cls);
    free(v->lead);
    free(v->head);
    free(v->sig);
    free(v->ncp);
    memset(v, 0, sizeof(*v));
}

unsigned st_json_byte_group(unsigned b)
{
    if (b >= 0x80)
        return b < 0xC0 ? 16 : b < 0xC2 ? 20 : b < 0xE0 ? 17 : b < 0xF0 ? 18 : b < 0xF5 ? 19 : 20;
    if (b >= '0' && b <= '9')
        return 8;
    if (b >= 'a' && b <= 'z')
        return 9;
    if (b >= 'A' && b <= 'Z')
        return 10;
    switch (b) {
    case '\t': return 1;
    case '\n': return 2;
    case '\r': return 3;
    case ' ': return 4;
    case '"': return 5;
    case '\\': return 6;
    case 0x7F: return 7;
    case '.': case ',': case '!': case '?': case ':': case ';': case '\'': case '-':
        return 11;
    case '(': case ')': case '[': case ']': case '{': case '}': case '<': case '>':
        return 12;
    default:
        return b < 0x20 ? 0 : 13;   /* # $ % & * + / = @ ^ _ ` | ~ */
    }
}

/* p[0..n) is valid UTF-8 (strict: no overlong forms, no surrogates), not
 * cut at its start; its last character may be cut short, where what is
 * there can still become a valid character. */
static bool utf8_ok(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t c = p[i], len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2
                             : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (len == 0)
            return false;
        /* the second byte's range: no overlong form, surrogate or > U+10FFFF */
        unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
        unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        for (uint32_t k = 1; k < len && i + k < n; k++) {
            unsigned b = p[i + k];
            if (k == 1 ? b < lo || b > hi : (b & 0xC0) != 0x80)
                return false;
        }
        i += len;
    }
    return true;
}

/* Read every token's bytes into v (which is empty). */
static enum st_status json_vocab_read(struct st_json_vocab *v, int32_t n_vocab,
                                      st_sample_piece_fn piece, st_sample_eog_fn eog,
                                      const void *ctx)
{
    size_t cap = (size_t)n_vocab * 8, len = 0;
    v->off = malloc(((size_t)n_vocab + 1) * sizeof(*v->off));
    v->cls = malloc((size_t)n_vocab);
    v->lead = malloc((size_t)n_vocab);
    v->head = malloc((size_t)n_vocab);
    v->sig = malloc((size_t)n_vocab * sizeof(*v->sig));
    v->ncp = malloc((size_t)n_vocab * sizeof(*v->ncp));
    v->bytes = malloc(cap);
    if (!v->off || !v->cls || !v->lead || !v->head || !v->sig || !v->ncp || !v->bytes)
        return ST_ERR_NOMEM;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (cap - len < ST_SAMPLE_MAX_PIECE) {
            unsigned char *b = realloc(v->bytes, cap * 2);
            if (!b)
                return ST_ERR_NOMEM;
            v->bytes = b;
            cap *= 2;
        }
        size_t n = piece(ctx, i, (char *)v->bytes + len, ST_SAMPLE_MAX_PIECE);
        n = n < ST_SAMPLE_MAX_PIECE ? n : ST_SAMPLE_MAX_PIECE;
        v->off[i] = (uint32_t)len;
        v->cls[i] = eog(ctx, i) ? ST_JV_EOG : 0;
        v->has_eog |= v->cls[i] != 0;
        bool plain = n > 0;
        for (size_t k = 0; k < n && plain; k++) {
            unsigned char b = v->bytes[len + k];
            plain = b >= 0x20 && b != '"' && b != '\\';
        }
        v->cls[i] |= plain ? ST_JV_PLAIN : 0;
        v->cls[i] |= memchr(v->bytes + len, '<', n) ? ST_JV_LT : 0;
        v->cls[i] |= memchr(v->bytes + len, '[', n) ? ST_JV_LB : 0;
        v->cls[i] |= utf8_ok(v->bytes + len, n) ? ST_JV_U8 : 0;
        v->sig[i] = 0;
        v->ncp[i] = 0;
        for (size_t k = 0; k < n; k++) {
            v->sig[i] |= UINT32_C(1) << st_json_byte_group(v->bytes[len + k]);
            v->ncp[i] += (v->bytes[len + k] & 0xC0) != 0x80;
        }
        size_t w = 0;
        while (w < n && w < 255 && strchr(" \t\n\r", v->bytes[len + w]) && v->bytes[len + w])
            w++;
        v->lead[i] = (uint8_t)w;
        v->head[i] = w < n ? v->bytes[len + w] : 0;
        v->cls[i] |= n == 0 ? ST_JV_EMPTY : w == n ? ST_JV_ALLWS : n - w == 1 ? ST_JV_ONE : 0;
        len += n;
    }
    v->off[n_vocab] = (uint32_t)len;
    v->n_vocab = n_vocab;
    return ST_OK;
}

enum st_status st_sampler_json_vocab(struct st_sampler *s, const void *owner, int32_t model,
                                     int32_t n_vocab, st_sample_piece_fn piece,
                                     st_sample_eog_fn eog, const void *ctx)
{
    struct st_json_vocab *v = &s->jv;
    if (n_vocab < 1)
        return ST_ERR_INVALID;
    if (v->n_vocab == n_vocab && v->owner == owner && v->model == model)
        return ST_OK;
    st_json_vocab_free(v);
    enum st_status rc = json_vocab_read(v, n_vocab, piece, eog, ctx);
    if (rc != ST_OK) {
        st_json_vocab_free(v);
        return rc;
    }
    v->owner = owner;
    v->model = model;
    return ST_OK;
}

static bool is_ws(int b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

/* json_object: the reply starts with '{' (JSON allows whitespace first; a
 * model let loose on it may emit nothing else). Once the object is
 * complete only end of generation may come, unless that is banned
 * (ignore_eos): then whitespace, which is all the validator still takes. */
static void step_object(const struct st_sampler *s, bool eog_banned, struct st_json_step *st)
{
    bool done = st_json_prefix_complete(&s->js), empty = st_json_prefix_empty(&s->js);
    for (int b = 0; b < 256; b++) {
        struct st_json_prefix j = s->js;
        st->first[b] = (!done || eog_banned) && (!empty || b == '{') &&
                       st_json_prefix_push(&j, (unsigned char)b);
    }
    st->in_str = st_json_prefix_in_string(&s->js);
    st->between = st_json_prefix_between(&s->js);
    st->complete = done;
    st->ws_left = UINT16_MAX;
}

/* The byte groups whose every byte is in run.set (run_full), and whether
 * the groups decide every plain token (run_groups): the set is exactly
 * those groups' bytes, every byte outside it is refused all along the
 * chain, and so is one more byte of the set after its end (or it has
 * none). */
static void run_groups(struct st_json_step *st)
{
    const struct st_json_schema_run *r = &st->run;
    uint64_t in[2] = { 0, 0 };
    st->run_full = (UINT32_C(1) << 21) - 1;
    for (unsigned b = 0; b < 256; b++) {
        if (b >= 0x80 || !(r->set[b >> 6] >> (b & 63) & 1))
            st->run_full &= ~(UINT32_C(1) << st_json_byte_group(b));
    }
    for (unsigned b = 0; b < 0x80; b++)
        in[b >> 6] |= (uint64_t)(st->run_full >> st_json_byte_group(b) & 1) << (b & 63);
    st->run_groups = r->kind == ST_JS_RUN_PATTERN && in[0] == r->set[0] && in[1] == r->set[1] &&
                     (r->room == UINT32_MAX || r->dead_after);
    for (uint32_t j = 0; j < r->n_chain && st->run_groups; j++)
        st->run_groups = r->closed[j];
}

/* json_schema: no whitespace before the document, nor after it unless end
 * of generation is banned; otherwise what the validator takes (a complete
 * top-level number may still grow, so completion alone stops nothing). */
static void step_schema(const struct st_sampler *s, bool eog_banned, struct st_json_step *st)
{
    bool done = st_json_schema_complete(&s->jss), empty = st_json_schema_empty(&s->jss);
    struct st_json_schema_state j;
    for (int b = 0; b < 256; b++) {
        bool ws = is_ws(b);
        st->first[b] = false;
        if ((ws && empty) || (ws && done && !eog_banned))
            continue;
        st_json_schema_state_copy(&j, &s->jss);
        st->first[b] = st_json_schema_push(&j, (unsigned char)b);
    }
    st->in_str = st_json_schema_in_string(&s->jss);
    st->between = st_json_schema_between(&s->jss, &st->ws_left);
    st->complete = done;
    if (st->in_str)
        return;
    st->run_js = &s->jss;
    st_json_schema_run_view(&s->jss, &st->run);
    run_groups(st);
}

/* Tool calls: the grammar holds its own whitespace rules (none before
 * the arguments, at most ST_JSON_SCHEMA_MAX_WS blanks where they may
 * come), but for blanks after the last call (as json_schema: only when
 * end of generation is banned); the schema's fast paths apply inside the
 * arguments. The bounded / pattern string one too: where st_call_args
 * gives a state, the grammar pushes every byte of a plain token to it
 * unchanged (JSON arguments: the document is not complete inside a
 * string), but for a '<' in a Qwen3-Coder / GLM JSON value (it may start
 * "</parameter>" / "</tool_call>": str_lt, such tokens are walked). Raw
 * string values (no args state there) are walked. */
static void step_calls(const struct st_sampler *s, bool eog_banned, struct st_json_step *st)
{
    struct st_call_state j;
    bool tail = st_call_done(&s->cs) && !eog_banned;   /* no blanks after the end */
    for (int b = 0; b < 256; b++) {
        st_call_state_copy(&j, &s->cs);
        st->first[b] = !(tail && is_ws(b)) && st_call_push(&j, (unsigned char)b);
    }
    const struct st_json_schema_state *a = st_call_args(&s->cs);
    st->in_str = a && st_json_schema_in_string(a);
    st->str_lt = st_call_lt_matters(&s->cs);
    if (a)
        st->between = !st_json_schema_empty(a) && st_json_schema_between(a, &st->ws_left);
    else
        st->between = st_call_between(&s->cs, &st->ws_left);
    st->complete = st_call_complete(&s->cs);
    st->free_text = st_call_free_text(&s->cs, &st->stop) && (st->stop == '<' || st->stop == '[');
    if (a && !st->in_str) {
        st->run_js = a;
        st_json_schema_run_view(a, &st->run);
        run_groups(st);
    }
}

/* A grammar: the bytes its stacks' tops take (exact, no pushes), its
 * completion, and its loop. No whitespace policy: the grammar decides. */
static void step_grammar(const struct st_sampler *s, struct st_json_step *st)
{
    st_gbnf_first_bytes(&s->gs, st->first);
    st->in_str = false;
    st->complete = st_gbnf_complete(&s->gs);
    st->gloop = st_gbnf_loop_bytes(&s->gs, st->loop);
    st->loop_full = (UINT32_C(1) << 21) - 1;
    for (unsigned b = 0; b < 256; b++)
        st->loop_full &= st->loop[b] ? ~UINT32_C(0) : ~(UINT32_C(1) << st_json_byte_group(b));
    st->between = st->gloop && st->loop[' '] && st->loop['\t'] && st->loop['\n'] &&
                  st->loop['\r'];
    st->ws_left = UINT16_MAX;
}

/* Feed the bytes think state 't' held back (st_think_held: leading blanks
 * the opening tag did not follow, a '[' that was not "[THINK]"), then
 * p[0..n), to a copy of the document's state. No blank may open a JSON
 * document (a grammar decides for itself). */
static bool doc_walk(const struct st_sampler *s, const struct st_think_state *t,
                     const unsigned char *p, size_t n)
{
    char open[ST_THINK_MAX_HELD];
    uint32_t held = st_think_held(t, open);
    if (s->gram) {
        struct st_gbnf_state j;
        st_gbnf_state_copy(&j, &s->gs);
        return st_gbnf_feed(&j, open, held) && st_gbnf_feed(&j, (const char *)p, n);
    }
    if (held ? is_ws((unsigned char)open[0]) : n > 0 && is_ws(p[0]))
        return false;
    if (s->schema) {
        struct st_json_schema_state j;
        st_json_schema_state_copy(&j, &s->jss);
        return st_json_schema_feed(&j, open, held) &&
               st_json_schema_feed(&j, (const char *)p, n);
    }
    struct st_json_prefix j = s->js;
    return st_json_prefix_feed(&j, open, held) && st_json_prefix_feed(&j, (const char *)p, n);
}

/* Before the document: p[0..n) through a copy of the think state, the
 * rest (from the byte that starts the document) through the document's. */
static bool think_walk(const struct st_sampler *s, const unsigned char *p, size_t n)
{
    struct st_think_state t = s->th;
    for (size_t i = 0; i < n; i++) {
        uint32_t held;
        enum st_think_push r = st_think_push(&t, p[i], &held);
        if (r == ST_THINK_REFUSED)
            return false;
        if (r == ST_THINK_DOC)
            return doc_walk(s, &t, p + i, n - i);
    }
    return true;
}

/* Walk p[0..n) from a copy of the sampler's state (no whitespace policy:
 * a token's bytes are walked as they are). */
static bool walk_bytes(const struct st_sampler *s, const unsigned char *p, size_t n)
{
    if (s->calls) {
        struct st_call_state j;
        st_call_state_copy(&j, &s->cs);
        return st_call_feed(&j, (const char *)p, n);
    }
    if (!st_think_in_doc(&s->th))
        return think_walk(s, p, n);
    if (s->gram) {
        struct st_gbnf_state j;
        st_gbnf_state_copy(&j, &s->gs);
        return st_gbnf_feed(&j, (const char *)p, n);
    }
    if (s->schema) {
        struct st_json_schema_state j;
        st_json_schema_state_copy(&j, &s->jss);
        return st_json_schema_feed(&j, (const char *)p, n);
    }
    struct st_json_prefix j = s->js;
    return st_json_prefix_feed(&j, (const char *)p, n);
}

/* JSON modes before the document: the think block's bytes, or the
 * document's first (json_object's '{', no blank); never complete. */
static void step_think(const struct st_sampler *s, struct st_json_step *st)
{
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        st->first[b] = think_walk(s, &c, 1);
    }
    st->in_str = false;
    st->between = st_think_between(&s->th, &st->ws_left);
    st->complete = false;
    st->free_text = st_think_free_text(&s->th, &st->stop) && (st->stop == '<' || st->stop == '[');
}

/* Push b1 then b2 on a copy of the state. */
static bool push_two(const struct st_sampler *s, unsigned char b1, unsigned char b2)
{
    const unsigned char p[2] = { b1, b2 };
    return walk_bytes(s, p, 2);
}

/* The two-byte table, where few first bytes are allowed: at most
 * ST_JSON_TWO_JSON * 256 pushes, against a walk for each of the thousands
 * of tokens that start with an allowed letter of a key. A grammar's rows
 * cost one push each (its first-byte table after the byte needs none), so
 * it gets more of them, blanks included (" the" is refused after a
 * bounded ws without a walk), but not its loop's bytes (those are
 * skipped before the table is read). */
static void step_two(const struct st_sampler *s, struct st_json_step *st)
{
    uint8_t cand[ST_JSON_TWO_MAX];
    bool gram = s->gram && !s->calls && st_think_in_doc(&s->th);
    int n = 0, max = gram ? ST_JSON_TWO_MAX : ST_JSON_TWO_JSON;
    st->n_two = 0;
    memset(st->two_idx, 0xff, sizeof(st->two_idx));
    if (st->in_str)
        return;   /* string-safe tokens pass unread there; others are few */
    for (int b = 0; b < 256; b++) {
        if (!st->first[b] || (is_ws(b) && (!gram || st->between)) ||
            (st->gloop && st->loop[b]))
            continue;
        if (n == max)
            return;
        cand[n++] = (uint8_t)b;
    }
    for (int i = 0; i < n; i++) {
        st->row_gloop[i] = false;
        if (gram) {
            struct st_gbnf_state j;
            st_gbnf_state_copy(&j, &s->gs);
            if (st_gbnf_push(&j, cand[i])) {
                st_gbnf_first_bytes(&j, st->second[i]);
                st->row_gloop[i] = st_gbnf_loop_bytes(&j, st->row_loop[i]);
            } else {
                memset(st->second[i], 0, sizeof(st->second[i]));
            }
        } else {
            for (int b2 = 0; b2 < 256; b2++)
                st->second[i][b2] = push_two(s, cand[i], (unsigned char)b2);
        }
        st->two_idx[cand[i]] = (uint8_t)i;
    }
    st->n_two = (uint8_t)n;
}

void st_json_mask_step(const struct st_sampler *s, bool eog_banned, struct st_json_step *st)
{
    eog_banned = eog_banned || !s->jv.has_eog;   /* nothing could end it: let it idle */
    st->free_text = false;
    st->str_lt = false;
    st->gloop = false;
    st->run.kind = ST_JS_RUN_NONE;
    st->run_js = NULL;
    if (s->calls)
        step_calls(s, eog_banned, st);
    else if (!st_think_in_doc(&s->th))
        step_think(s, st);
    else if (s->gram)
        step_grammar(s, st);
    else if (s->schema)
        step_schema(s, eog_banned, st);
    else
        step_object(s, eog_banned, st);
    step_two(s, st);
}

/* Walk bytes [a, a+n) of the vocabulary from a copy of the state. */
static bool walk(const struct st_sampler *s, uint32_t a, uint32_t n)
{
    return walk_bytes(s, s->jv.bytes + a, n);
}

/* The bytes at the start of p[0..n) (valid UTF-8, ST_JV_U8) that the
 * grammar's loop takes, leaving its state as it is: whole looping
 * characters; n when they all loop (a cut last character included: where
 * non-ASCII characters loop, any of them may complete it). */
static uint32_t loop_prefix(const bool *loop, const unsigned char *p, uint32_t n)
{
    uint32_t i = 0;
    while (i < n && loop[p[i]]) {
        unsigned c = p[i];
        i += c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    }
    return i < n ? i : n;
}

/* From byte a (n >= 2 bytes left): the two-byte table, the loop after
 * its first byte ('u8': the bytes are valid UTF-8), then a walk. */
static bool allows_two(const struct st_sampler *s, const struct st_json_step *st, uint32_t a,
                       uint32_t n, bool u8)
{
    const unsigned char *p = s->jv.bytes + a;
    uint8_t t = st->two_idx[p[0]];
    if (t != 0xff && (!st->second[t][p[1]] || n == 2))
        return st->second[t][p[1]];
    if (t != 0xff && u8 && st->row_gloop[t] && loop_prefix(st->row_loop[t], p + 1, n - 1) == n - 1)
        return true;
    return walk(s, a, n);
}

/* From byte a (n >= 1 bytes left, not between tokens): the first-byte
 * table, then allows_two. */
static bool allows_rest(const struct st_sampler *s, const struct st_json_step *st, uint32_t a,
                        uint32_t n, bool u8)
{
    if (!st->first[s->jv.bytes[a]])
        return false;
    return n == 1 || allows_two(s, st, a, n, u8);
}

static bool in_run_set(const struct st_json_schema_run *r, unsigned char b)
{
    return b < 0x80 && (r->set[b >> 6] >> (b & 63) & 1);
}

/* A plain token (ST_JV_PLAIN) inside a bounded or pattern string
 * (st->run): its code point count against the room left; for a pattern,
 * the longest prefix of bytes of run.set (all of them: one AND on the
 * byte groups) that the chain covers, then the DFA from there on the rest
 * (st_json_schema_run_feed). */
static bool run_allows(const struct st_sampler *s, const struct st_json_step *st, int32_t id)
{
    const struct st_json_vocab *v = &s->jv;
    const struct st_json_schema_run *r = &st->run;
    if (r->kind == ST_JS_RUN_COUNT)   /* at a character boundary: invalid UTF-8 never goes on */
        return (v->cls[id] & ST_JV_U8) && v->ncp[id] <= r->room;
    if (st->run_groups)   /* ASCII of the set only (then ncp is the length) */
        return !(v->sig[id] & ~st->run_full) && v->ncp[id] <= r->room;
    const unsigned char *p = v->bytes + v->off[id];
    uint32_t n = v->off[id + 1] - v->off[id];
    uint8_t t = st->two_idx[p[0]];   /* the step's tables (st_json_mask_allows: 'first') */
    if (n >= 2 && t != 0xff && !st->second[t][p[1]])
        return false;
    if (!(v->sig[id] & ~st->run_full) && (n <= r->room || r->dead_after))
        return n <= r->room;   /* ASCII bytes of the set only */
    uint32_t lim = ST_MIN(n, r->room), i = 0;
    while (i < lim && in_run_set(r, p[i]))
        i++;
    if (i == n)
        return true;
    /* a byte of the set here: the chain ended (i == room); else one outside it */
    if (in_run_set(r, p[i]) ? r->dead_after : r->closed[ST_MIN(i, r->n_chain - 1)])
        return false;
    return st_json_schema_run_feed(st->run_js, r, i, p + i, n - i);
}

/* May token 'id' come next? 'in_str': the state is inside a string, where
 * string-safe tokens need no walk; 'between': whitespace does not change
 * it (but for the count the schema caps), so a token's leading whitespace
 * (" the" and the like, a third of a BPE vocabulary) is skipped and its
 * next byte looked up in 'first' before any walk. */
bool st_json_mask_allows(const struct st_sampler *s, const struct st_json_step *st, int32_t id)
{
    const struct st_json_vocab *v = &s->jv;
    unsigned c = v->cls[id];
    if (c & ST_JV_EOG)
        return st->complete;
    if (c & ST_JV_EMPTY)
        return false;   /* an empty piece would not move the text on */
    /* strings take valid UTF-8 only (a schema's strictly: its lengths count
     * lead bytes); any other token is walked */
    if (st->in_str && (c & ST_JV_PLAIN) && (c & ST_JV_U8) && !(st->str_lt && (c & ST_JV_LT)))
        return true;
    if (st->run.kind != ST_JS_RUN_NONE && (c & ST_JV_PLAIN) && !(st->str_lt && (c & ST_JV_LT))) {
        if (!st->run_groups && !st->first[v->bytes[v->off[id]]])
            return false;   /* most tokens, where few bytes may come */
        return run_allows(s, st, id);
    }
    if (st->free_text && !(c & (st->stop == '<' ? ST_JV_LT : ST_JV_LB)))
        return true;   /* think text that cannot start the closing tag */
    uint32_t a = v->off[id], n = v->off[id + 1] - a;
    if (st->gloop && (c & ST_JV_U8)) {   /* the grammar's loop: skip what it takes */
        if (!(v->sig[id] & ~st->loop_full))
            return true;   /* every byte in a group that loops whole */
        uint32_t k = loop_prefix(st->loop, v->bytes + a, n);
        if (k == n)
            return true;
        if (k > 0)
            return allows_rest(s, st, a + k, n - k, true);
    }
    if (st->between) {
        /* every whitespace byte does the same here: first[' '] speaks for all */
        if (v->lead[id] > 0 && (!st->first[' '] || v->lead[id] > st->ws_left))
            return false;
        if (c & ST_JV_ALLWS)
            return true;
        if (!st->first[v->head[id]])
            return false;
        if (c & ST_JV_ONE)
            return true;
        a += v->lead[id];
        n -= v->lead[id];
        return allows_two(s, st, a, n, c & ST_JV_U8);   /* n >= 2 here */
    }
    return allows_rest(s, st, a, n, c & ST_JV_U8);
}

/* An accepted token's bytes p[0..n) before the document: through the
 * think state (counting the token against the block's cap) until one
 * starts the document, which gets the opening tag's held bytes. Returns
 * how many of p the think state took (n: all). */
static uint32_t think_accept(struct st_sampler *s, const unsigned char *p, uint32_t n)
{
    if (st_think_in_doc(&s->th))
        return 0;
    bool thinking = st_think_thinking(&s->th);
    uint32_t i = 0;
    for (; i < n; i++) {
        uint32_t held;
        enum st_think_push r = st_think_push(&s->th, p[i], &held);
        if (r == ST_THINK_REFUSED)
            return n;
        if (r == ST_THINK_DOC) {
            char open[ST_THINK_MAX_HELD];
            held = st_think_held(&s->th, open);
            if (s->gram)
                (void)st_gbnf_feed(&s->gs, open, held);
            else if (s->schema)
                (void)st_json_schema_feed(&s->jss, open, held);
            else
                (void)st_json_prefix_feed(&s->js, open, held);
            break;
        }
    }
    if (thinking && s->think_left > 0 && --s->think_left == 0)
        st_think_force_close(&s->th);
    return i;
}

void st_json_mask_accept(struct st_sampler *s, int32_t token)
{
    const struct st_json_vocab *v = &s->jv;
    if (!st_sampler_masked(s) || token < 0 || token >= v->n_vocab || (v->cls[token] & ST_JV_EOG))
        return;
    const char *p = (const char *)v->bytes + v->off[token];
    uint32_t n = v->off[token + 1] - v->off[token];
    if (s->calls) {
        (void)st_call_feed(&s->cs, p, n);
        return;
    }
    uint32_t i = think_accept(s, (const unsigned char *)p, n);
    if (s->gram)
        (void)st_gbnf_feed(&s->gs, p + i, n - i);
    else if (s->schema)
        (void)st_json_schema_feed(&s->jss, p + i, n - i);
    else
        (void)st_json_prefix_feed(&s->js, p + i, n - i);
}
