/* run.c -- what the JSON mask (src/engine/sample/json_mask.c) asks
 * of a validator state so that it decides most of a 150k-token vocabulary
 * without walking each token through the validator: is every stack in a
 * free string (st_json_schema_in_string) or between values
 * (st_json_schema_between), and what a run of plain bytes (0x20 and up,
 * no '"' or '\\') does inside a bounded or pattern string
 * (include/strata/json_schema.h "the sampler's fast path").
 *
 * Why it is exact:
 *   - a string without a pattern (S_STR, state.c push_string)
 *     takes valid UTF-8 (strictly), counting one code point per byte
 *     outside 0x80-0xBF, and refuses a code point past maxLength: from a
 *     character boundary (no UTF-8 sequence under way), a plain token of
 *     valid UTF-8 (ST_JV_U8) with k code points goes on iff
 *     k <= max_len - count; in mid-character there is no view (walk);
 *   - a pattern string at a character (pstr.c) steps its DFA
 *     on each plain ASCII byte (refusing where the DFA has no transition:
 *     every state left can still reach acceptance), and takes any plain
 *     byte unread once its state matches whatever follows (JS_RX_ANY).
 *     The chain below follows the DFA on a set of ASCII bytes that every
 *     state of it sends to one same next state, so any i bytes of the set
 *     lead to chain[i]; the rest of a token is run through
 *     st_js_pstr_push itself from there.
 * Only states of one stack (no anyOf alternatives in play) are looked at:
 * with several, a token passes when any stack takes it, which the view
 * does not keep.
 */
#include <string.h>

#include "grammar/schema/internal.h"

/* A plain ASCII byte: one the pattern string reads as a code point. */
static bool plain_ascii(unsigned b)
{
    return b >= 0x20 && b < 0x80 && b != '"' && b != '\\';
}

static void set_add(uint64_t *set, unsigned b)
{
    set[b >> 6] |= UINT64_C(1) << (b & 63);
}

/* The set: the plain ASCII bytes that lead from s0 back to s0 if some do
 * (a loop: any number of them may come), else to the state most of them
 * lead to (none when no plain ASCII byte has a transition); *to: that
 * state. Also the distinct classes of those bytes (cl[0..*n_cl)). */
static void first_set(const struct js_regex *r, uint32_t s0, uint64_t *set, uint16_t *to,
                      uint16_t *cl, uint32_t *n_cl)
{
    const uint16_t *row = r->next + (size_t)s0 * r->n_classes;
    uint32_t best = 0;
    set[0] = set[1] = 0;
    *n_cl = 0;
    for (unsigned b = 0x20; b < 0x80; b++) {
        uint16_t t = row[r->ascii[b]];
        if (!plain_ascii(b) || t == JS_RX_DEAD)
            continue;
        uint32_t n = 0;
        for (unsigned c = 0x20; c < 0x80; c++)
            n += plain_ascii(c) && row[r->ascii[c]] == t;
        if (t == s0)
            n += 256;   /* a loop wins */
        if (n > best) {
            best = n;
            *to = t;
        }
    }
    if (best == 0)
        return;
    for (unsigned b = 0x20; b < 0x80; b++) {
        uint16_t c = r->ascii[b];
        if (!plain_ascii(b) || row[c] != *to)
            continue;
        set_add(set, b);
        bool seen = false;
        for (uint32_t i = 0; i < *n_cl && !seen; i++)
            seen = cl[i] == c;
        if (!seen)
            cl[(*n_cl)++] = c;
    }
}

/* The next state of s for every class of the set: *to when they agree
 * (JS_RX_DEAD: no byte of the set goes on); false when they differ. */
static bool chain_next(const struct js_regex *r, uint32_t s, const uint16_t *cl, uint32_t n_cl,
                       uint16_t *to)
{
    const uint16_t *row = r->next + (size_t)s * r->n_classes;
    *to = row[cl[0]];
    for (uint32_t i = 1; i < n_cl; i++) {
        if (row[cl[i]] != *to)
            return false;
    }
    return true;
}

/* No plain byte outside the set goes on from state s: no code point
 * that plain bytes spell (0x20 and up but '"' and '\\') outside the set
 * has a transition, and s does not take any byte unread (JS_RX_ANY). */
static bool closed(const struct js_regex *r, uint32_t s, const uint64_t *set)
{
    const uint16_t *row = r->next + (size_t)s * r->n_classes;
    if (r->accept[s] & JS_RX_ANY)
        return false;
    for (uint32_t i = 0; i < r->n_iv; i++) {
        if (row[r->cls[i]] == JS_RX_DEAD)
            continue;
        uint32_t hi = i + 1 < r->n_iv ? r->lo[i + 1] - 1 : JS_RX_CP_END - 1;
        if (hi >= 0x80)
            return false;
        for (uint32_t c = r->lo[i]; c <= hi; c++) {
            if (plain_ascii(c) && !(set[c >> 6] >> (c & 63) & 1))
                return false;
        }
    }
    return true;
}

/* The chain of a pattern string's DFA r from state s0 (not JS_RX_ANY). */
static void pattern_view(const struct js_regex *r, uint32_t s0, struct st_json_schema_run *out)
{
    uint16_t cl[96], to = 0;
    uint32_t n_cl = 0;
    first_set(r, s0, out->set, &to, cl, &n_cl);
    if (n_cl == 0)
        return;   /* no plain ASCII byte goes on: the first-byte table decides */
    out->kind = ST_JS_RUN_PATTERN;
    out->chain[0] = (uint16_t)s0;
    for (uint32_t j = 0;; j++) {
        uint16_t cur = out->chain[j];
        out->n_chain = j + 1;
        out->closed[j] = closed(r, cur, out->set);
        if (j > 0 && (r->accept[cur] & JS_RX_ANY)) {
            out->room = UINT32_MAX;   /* every plain byte is taken from here on */
            return;
        }
        if (j > 0 && !chain_next(r, cur, cl, n_cl, &to)) {
            out->room = j;   /* the set splits here: the walk decides what follows */
            return;
        }
        if (to == JS_RX_DEAD) {
            out->room = j;
            out->dead_after = true;
            return;
        }
        if (to == cur) {
            out->room = UINT32_MAX;   /* loops on the set */
            return;
        }
        if (j == ST_JSON_SCHEMA_RUN_MAX) {
            out->room = j;   /* longer than any token */
            return;
        }
        out->chain[j + 1] = to;
    }
}

/* The code points a string without a pattern may still take
 * (UINT32_MAX: unbounded; 0 past its maxLength). */
static uint32_t string_room(const struct st_json_schema *sc, const struct st_js_stack *k)
{
    uint32_t max = sc->nodes[k->cur].max_len, cps = (uint32_t)(k->cand & CP_MASK);
    return max == UINT32_MAX ? UINT32_MAX : cps <= max ? max - cps : 0;
}

void st_json_schema_run_view(const struct st_json_schema_state *st,
                             struct st_json_schema_run *out)
{
    out->kind = ST_JS_RUN_NONE;
    out->dead_after = false;
    out->room = 0;
    out->set[0] = out->set[1] = 0;
    out->n_chain = 0;
    if (st->n != 1)
        return;
    const struct st_json_schema *sc = st->schema;
    const struct st_js_stack *k = &st->s[0];
    const struct js_node *nd = &sc->nodes[k->cur];
    switch ((enum jsmode)k->mode) {
    case S_STR: {   /* at a character: an escape is S_ESC */
        if (k->pos)
            return;   /* in mid-character */
        uint32_t room = string_room(sc, k);
        if (room == UINT32_MAX)   /* unbounded: st_json_schema_in_string's free string */
            return;
        out->kind = ST_JS_RUN_COUNT;
        out->room = room;
        return;
    }
    case S_PSTR: {
        const struct js_regex *r = &sc->rx[nd->rx];
        if (k->psub == 0 && k->pu8 == 0 && !(r->accept[k->rx] & JS_RX_ANY))
            pattern_view(r, k->rx, out);
        return;
    }
    default:
        return;
    }
}

bool st_json_schema_run_feed(const struct st_json_schema_state *st,
                             const struct st_json_schema_run *r, uint32_t i,
                             const unsigned char *p, size_t n)
{
    const struct st_json_schema *sc = st->schema;
    const struct js_regex *rx = &sc->rx[sc->nodes[st->s[0].cur].rx];
    struct st_js_stack k;   /* st_js_pstr_push reads and writes these four only */
    k.rx = r->chain[ST_MIN(i, r->n_chain - 1)];
    k.psub = 0;
    k.pu8 = 0;
    k.pacc = 0;
    for (size_t j = 0; j < n; j++) {
        if (st_js_pstr_push(rx, &k, p[j]) != JS_PSTR_TAKEN)
            return false;
    }
    return true;
}

/* ---- free strings and the blanks between values ------------------------ */

/* A key that matches no listed key any more, of an object that allows
 * other keys: until its closing quote any byte but '"', '\\' (an extra
 * key has no escapes) and those < 0x20 leaves it as it is, like a free
 * string. (pos has room for one more token of ST_JSON_SCHEMA_FREE_KEY
 * bytes.) */
#define ST_JSON_SCHEMA_FREE_KEY 256
static bool free_key(const struct st_json_schema *sc, const struct st_js_stack *k)
{
    return k->mode == S_KEYSTR && k->cand == 0 && !(k->flags & FL_KEYBS) &&
           k->pos < UINT16_MAX - ST_JSON_SCHEMA_FREE_KEY &&
           k->depth > 0 && sc->nodes[k->f[k->depth - 1].node].additional >= 0;
}

/* In a free string with room for ST_JSON_SCHEMA_FREE_KEY more code points,
 * at a character boundary. */
static bool free_string(const struct st_json_schema *sc, const struct st_js_stack *k)
{
    return k->mode == S_STR && k->pos == 0 && string_room(sc, k) >= ST_JSON_SCHEMA_FREE_KEY;
}

/* In a pattern string whose automaton matches whatever follows, at a
 * character (no escape or UTF-8 sequence under way). */
static bool free_pattern(const struct st_json_schema *sc, const struct st_js_stack *k)
{
    return k->mode == S_PSTR && k->psub == 0 && k->pu8 == 0 &&
           (sc->rx[sc->nodes[k->cur].rx].accept[k->rx] & JS_RX_ANY);
}

bool st_json_schema_in_string(const struct st_json_schema_state *st)
{
    for (uint32_t i = 0; i < st->n; i++) {
        if (!free_string(st->schema, &st->s[i]) && !free_key(st->schema, &st->s[i]) &&
            !free_pattern(st->schema, &st->s[i]))
            return false;
    }
    return st->n > 0;
}

bool st_json_schema_between(const struct st_json_schema_state *st, uint16_t *ws_left)
{
    uint16_t left = UINT16_MAX;
    for (uint32_t i = 0; i < st->n; i++) {
        const struct st_js_stack *k = &st->s[i];
        if (k->mode > S_DONE)
            return false;
        if (k->mode != S_DONE)
            left = ST_MIN(left, (uint16_t)(ST_JSON_SCHEMA_MAX_WS - ST_MIN(k->ws,
                                                                    ST_JSON_SCHEMA_MAX_WS)));
    }
    *ws_left = left;
    return st->n > 0;
}
