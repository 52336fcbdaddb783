/* think_budget.c -- the thinking budget (st_gen_params.think_budget,
 * docs/API.md "Thinking budget"): the sampler watches the reply's think
 * block (think_block.h's state, fed every taken token's bytes) and, once
 * the block has taken think_budget tokens and is still open, hands the
 * engine the closing sequence (think_close[spelling]: the tag and what the
 * template writes after it) to force, token by token, instead of sampling.
 *
 * Counting: a token counts when the block was open before it (so the
 * opening tag does not count, and the token that closes the block itself
 * does). The budget is spent when N tokens counted and the block is still
 * open; budget 0 forces as soon as the block opens (OPEN mode: at once).
 * The watch ends for good when the block closes (by the model or forced),
 * when the reply turns out to start with something other than the opening
 * tag (leading blanks aside), or when the text leaves what think_block.h
 * accepts (more than ST_THINK_MAX_WS blanks after the close: the answer
 * has begun all the same).
 *
 * Forced tokens still go through st_sampler_accept (penalties, and the
 * constrained modes' state, whose think block the sequence closes the
 * same way), and are emitted and counted as completion tokens (step.c).
 */
#include <string.h>

#include "engine/sample/sample.h"

static bool is_ws(unsigned char b)
{
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
}

static int spelling(const struct st_sampler *s)
{
    return s->bt.tags == ST_THINK_SQUARE ? 1 : 0;
}

/* Spent inside the open block: start forcing (or give up when there is
 * no closing sequence for this spelling). */
static void maybe_force(struct st_sampler *s)
{
    if (s->bt_left != 0 || !st_think_thinking(&s->bt))
        return;
    if (s->bt_n[spelling(s)] > 0)
        s->bt_forced = 0;
    else
        s->bt_left = -1;
}

void st_sampler_budget_reset(struct st_sampler *s, const struct st_gen_params *p)
{
    s->bt_forced = -1;
    s->bt_left = -1;
    memset(s->bt_close, 0, sizeof(s->bt_close));
    memset(s->bt_n, 0, sizeof(s->bt_n));
    enum st_think_mode m = p->think_mode <= ST_THINK_OPEN ? (enum st_think_mode)p->think_mode
                                                           : ST_THINK_NONE;
    enum st_think_tags t = p->think_tags <= ST_THINK_EITHER ? (enum st_think_tags)p->think_tags
                                                             : ST_THINK_ANGLE;
    st_think_init(&s->bt, m, t);
    if (p->think_budget < 0 || m == ST_THINK_NONE)
        return;
    for (int i = 0; i < 2; i++) {
        s->bt_n[i] = p->n_think_close[i] < 0 ? 0
                   : p->n_think_close[i] > ST_THINK_CLOSE_MAX ? ST_THINK_CLOSE_MAX
                                                              : p->n_think_close[i];
        memcpy(s->bt_close[i], p->think_close[i], (size_t)s->bt_n[i] * sizeof(int32_t));
    }
    s->bt_left = p->think_budget;
    maybe_force(s);
}

bool st_sampler_budget_on(const struct st_sampler *s)
{
    return s->bt_left >= 0 || s->bt_forced >= 0;
}

bool st_sampler_forced(const struct st_sampler *s, int32_t *token)
{
    if (s->bt_forced < 0)
        return false;
    *token = s->bt_close[spelling(s)][s->bt_forced];
    return true;
}

void st_sampler_think_accept(struct st_sampler *s, const char *piece, size_t n)
{
    if (s->bt_forced >= 0) {
        if (++s->bt_forced >= s->bt_n[spelling(s)]) {
            s->bt_forced = -1;   /* closed: the answer follows */
            s->bt_left = -1;
        }
        return;
    }
    if (s->bt_left < 0)
        return;
    bool thinking = st_think_thinking(&s->bt);
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)piece[i];
        if (st_think_at_start(&s->bt) && is_ws(b))
            continue;   /* the reply parser lets blanks lead "<think>" */
        uint32_t held;
        uint16_t ws;
        if (st_think_push(&s->bt, b, &held) != ST_THINK_TAKEN || st_think_between(&s->bt, &ws)) {
            s->bt_left = -1;   /* no block, or the model closed it: nothing to cap */
            return;
        }
    }
    if (thinking && s->bt_left > 0)
        s->bt_left--;
    maybe_force(s);
}

int32_t st_sampler_draft_room(const struct st_sampler *s)
{
    if (s->bt_forced >= 0)
        return 0;
    if (s->bt_left >= 0 && st_think_thinking(&s->bt))
        return s->bt_left;
    return INT32_MAX;
}
