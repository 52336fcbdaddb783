/* think_block.c -- the optional think block before a constrained answer
 * (include/strata/think_block.h): the tags, the free-text matcher the
 * call grammar shares, and the think-then-document state of the JSON
 * modes.
 */
#include <string.h>

#include "strata/think_block.h"

enum tphase { T_START, T_FREE, T_WS, T_DOC, T_DEAD };

static const char BLANKS[] = " \t\n\r";   /* st_think_state.lead's 2-bit codes */

const char *st_think_open_tag(enum st_think_tags t)
{
    return t == ST_THINK_SQUARE ? "[THINK]" : "<think>";
}

const char *st_think_close_tag(enum st_think_tags t)
{
    return t == ST_THINK_SQUARE ? "[/THINK]" : "</think>";
}

bool st_think_close_step(const char *close, uint32_t *pos, unsigned char b)
{
    if ((unsigned char)close[*pos] == b)
        (*pos)++;
    else
        *pos = (unsigned char)close[0] == b ? 1 : 0;
    return close[*pos] == '\0';
}

enum st_think_tags st_think_pick_tags(enum st_think_tags tags, unsigned char b)
{
    if (tags != ST_THINK_EITHER)
        return tags;
    return b == '<' ? ST_THINK_ANGLE : b == '[' ? ST_THINK_SQUARE : ST_THINK_EITHER;
}

static bool is_ws(unsigned b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

void st_think_init(struct st_think_state *t, enum st_think_mode mode, enum st_think_tags tags)
{
    memset(t, 0, sizeof(*t));
    t->mode = (uint8_t)mode;
    t->tags = (uint8_t)tags;
    t->phase = mode == ST_THINK_OPEN                                         ? T_FREE
               : mode == ST_THINK_OPTIONAL || mode == ST_THINK_OPTIONAL_LEAD ? T_START
                                                                            : T_DOC;
}

/* Before anything: leading blanks (ws of them, codes in lead), OPEN
 * matched so far, or the document after all (which gets what was held:
 * ws, lead and pos stay for st_think_held). */
static enum st_think_push push_start(struct st_think_state *t, unsigned char b,
                                     uint32_t *n_held)
{
    if (t->mode == ST_THINK_OPTIONAL_LEAD && t->pos == 0 && is_ws(b) &&
        t->ws < ST_THINK_MAX_LEAD) {
        t->lead |= (uint8_t)((strchr(BLANKS, b) - BLANKS) << (2 * t->ws));
        t->ws++;
        return ST_THINK_TAKEN;
    }
    if (t->pos == 0)
        t->tags = (uint8_t)st_think_pick_tags((enum st_think_tags)t->tags, b);
    const char *open = st_think_open_tag((enum st_think_tags)t->tags);
    if ((unsigned char)open[t->pos] == b) {
        if (open[++t->pos] == '\0') {
            t->phase = T_FREE;
            t->pos = 0;
            t->ws = 0;
            t->lead = 0;
        }
        return ST_THINK_TAKEN;
    }
    *n_held = t->ws + t->pos;
    t->phase = T_DOC;
    return ST_THINK_DOC;
}

static enum st_think_push push_free(struct st_think_state *t, unsigned char b)
{
    const char *close = st_think_close_tag((enum st_think_tags)t->tags);
    if (t->forced && (unsigned char)close[t->pos] != b)
        return ST_THINK_REFUSED;
    uint32_t pos = t->pos;
    if (st_think_close_step(close, &pos, b)) {
        t->phase = T_WS;
        t->ws = 0;
        t->forced = 0;
        pos = 0;
    }
    t->pos = (uint16_t)pos;
    return ST_THINK_TAKEN;
}

enum st_think_push st_think_push(struct st_think_state *t, unsigned char b, uint32_t *n_held)
{
    *n_held = 0;
    switch ((enum tphase)t->phase) {
    case T_START:
        return push_start(t, b, n_held);
    case T_FREE:
        if (push_free(t, b) == ST_THINK_TAKEN)
            return ST_THINK_TAKEN;
        break;
    case T_WS:
        if (!is_ws(b)) {
            t->phase = T_DOC;
            t->ws = 0;   /* nothing held (st_think_held) */
            return ST_THINK_DOC;
        }
        if (++t->ws <= ST_THINK_MAX_WS)
            return ST_THINK_TAKEN;
        break;
    case T_DOC:
        t->ws = 0;   /* held back by an earlier push: no longer st_think_held's */
        t->pos = 0;
        return ST_THINK_DOC;
    case T_DEAD:
        break;
    }
    t->phase = T_DEAD;
    return ST_THINK_REFUSED;
}

uint32_t st_think_held(const struct st_think_state *t, char *out)
{
    if (t->phase != T_DOC)
        return 0;
    for (uint32_t i = 0; i < t->ws; i++)
        out[i] = BLANKS[t->lead >> (2 * i) & 3];
    memcpy(out + t->ws, st_think_open_tag((enum st_think_tags)t->tags), t->pos);
    return t->ws + (uint32_t)t->pos;
}

bool st_think_at_start(const struct st_think_state *t)
{
    return t->phase == T_START && t->pos == 0 && t->ws == 0;
}

bool st_think_in_doc(const struct st_think_state *t)
{
    return t->phase == T_DOC;
}

bool st_think_free_text(const struct st_think_state *t, unsigned char *stop)
{
    if (t->phase != T_FREE || t->pos != 0 || t->forced)
        return false;
    *stop = (unsigned char)st_think_close_tag((enum st_think_tags)t->tags)[0];
    return true;
}

bool st_think_thinking(const struct st_think_state *t)
{
    return t->phase == T_FREE;
}

bool st_think_between(const struct st_think_state *t, uint16_t *ws_left)
{
    if (t->phase != T_WS)
        return false;
    *ws_left = (uint16_t)(ST_THINK_MAX_WS - (t->ws < ST_THINK_MAX_WS ? t->ws : ST_THINK_MAX_WS));
    return true;
}

void st_think_force_close(struct st_think_state *t)
{
    if (t->phase == T_FREE)
        t->forced = 1;
}
