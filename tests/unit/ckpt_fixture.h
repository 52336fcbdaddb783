/* ckpt_fixture.h -- what the state-checkpoint suites (test_engine_ckpt.c,
 * test_engine_ckpt_file.c) share: prompts that keep one "system prompt" and
 * differ in their endings, and the one slot's checkpoint count.
 */
#ifndef STRATA_TESTS_CKPT_FIXTURE_H
#define STRATA_TESTS_CKPT_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include "strata/engine.h"
#include "model_fixture.h"

#define N_GEN  8
#define N_SYS  100   /* the shared "system prompt" */
#define N_END  20    /* each prompt's own ending */

/* The system prompt, then ending 'which' (each differs from the first token). */
static inline void ckpt_prompt(int32_t *ids, int which)
{
    for (int i = 0; i < N_SYS; i++)
        ids[i] = 30 + (i * 37) % 170;
    for (int i = 0; i < N_END; i++)
        ids[N_SYS + i] = 20 + (i * 11 + which * 53) % 150 + which;
}

/* What a greedy request of these suites gave: its first N_GEN tokens, its
 * end and the prompt tokens it found cached. */
struct got {
    int32_t tokens[N_GEN];
    int     n;
    bool    ended;
    int64_t n_cached;
};

/* The event callback that fills a struct got. */
static inline void ckpt_on_event(void *ctx, const struct st_event *ev)
{
    struct got *g = ctx;
    if (ev->kind == ST_EVENT_TOKEN && g->n < N_GEN)
        g->tokens[g->n++] = ev->token;
    if (ev->kind == ST_EVENT_END) {
        g->ended = true;
        g->n_cached = ev->n_cached;
    }
}

/* The checkpoints the pool's one slot holds. */
static inline int32_t ckpt_count(struct fixture_pool *f)
{
    struct st_slot_view v;
    ck_assert_int_eq(st_engine_pool_slots(f->pool, &v, 1), 1);
    return v.n_checkpoints;
}

#endif /* STRATA_TESTS_CKPT_FIXTURE_H */
