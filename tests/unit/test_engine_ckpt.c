/* test_engine_ckpt.c -- state checkpoints on a model with recurrent state
 * (next-tiny, qwen35moe; docs/ENGINE.md "Slots with recurrent state"): a
 * prompt that shares only a long system prompt with what a slot read last
 * resumes from the longest checkpoint inside the shared part and answers
 * exactly as a read from scratch in a fresh pool; a prompt diverging
 * before any checkpoint reads from 0; a slot never keeps more than
 * --ctx-checkpoints; with 0 nothing is kept but the whole state; -np 4 and
 * give-way give each request its solo tokens.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/clock.h"
#include "strata/engine.h"
#include "strata/sched.h"
#include "ckpt_fixture.h"
#include "model_fixture.h"
#include "support.h"

#define UBATCH 32    /* a 120-token prompt: checkpoints at 32, 64, 96 (not at 120) */

static char dir[256], path[320];

static void setup(void)
{
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "next-tiny", "q8_0", 3, false);
}

static void teardown(void) { support_rmtree(dir); }

/* The fixture pool with the checkpoint bound, the give-way boundary (0:
 * the default) and the chunk size chosen. */
static int32_t mtp_draft;   /* start_gw: MTP drafts per step (0: off) */

static void start_gw(struct fixture_pool *f, int32_t np, int32_t ckpts, int64_t give_way,
                     int32_t ubatch)
{
    struct fixture_knobs k = fixture_knobs(np);
    k.ubatch = ubatch;
    k.mtp_draft = mtp_draft;
    k.ckpts = ckpts;
    k.give_way = give_way;
    fixture_pool_start_with(f, path, &k);
}

static void start(struct fixture_pool *f, int32_t np, int32_t ckpts)
{
    start_gw(f, np, ckpts, 0, UBATCH);
}

/* Submit one greedy request for ids[0..n) (N_GEN tokens) at 'prio'. */
static struct st_request *submit_ids(struct fixture_pool *f, const int32_t *ids, int64_t n,
                                     int32_t prio, struct got *out)
{
    memset(out, 0, sizeof(*out));
    return fixture_submit_greedy(f->pool, ids, n, N_GEN, prio, ckpt_on_event, out);
}

/* One greedy request for ids[0..n) (N_GEN tokens), run to its end. */
static void run_ids(struct fixture_pool *f, const int32_t *ids, int64_t n, struct got *out)
{
    struct st_request *req = submit_ids(f, ids, n, 0, out);
    fixture_pool_drain(f);
    ck_assert(out->ended);
    ck_assert_int_eq(out->n, N_GEN);
    st_request_unref(req);
}

static void assert_same(const struct got *a, const struct got *b, const char *what)
{
    for (int g = 0; g < N_GEN; g++)
        ck_assert_msg(a->tokens[g] == b->tokens[g], "%s: token %d: %d vs %d", what, g,
                      a->tokens[g], b->tokens[g]);
}

/* Two prompts sharing the system prompt: the second resumes from the last
 * checkpoint below 100 (96) and answers as a fresh pool does. With chunks
 * of 128 the 120-token read ends a chunk 8 short of its end (the last one
 * would hold more than 64): the same prompt again resumes there. */
START_TEST(test_ckpt_shared_system_prompt)
{
    int32_t a_ids[N_SYS + N_END], b_ids[N_SYS + N_END];
    ckpt_prompt(a_ids, 0);
    ckpt_prompt(b_ids, 1);
    ck_assert_int_ne(a_ids[N_SYS], b_ids[N_SYS]);
    struct fixture_pool f;
    struct got a, b, fresh;
    start(&f, 1, 3);
    run_ids(&f, a_ids, N_SYS + N_END, &a);
    ck_assert_int_eq(a.n_cached, 0);
    ck_assert_int_eq(ckpt_count(&f), 3);
    run_ids(&f, b_ids, N_SYS + N_END, &b);
    ck_assert_int_eq(b.n_cached, 96);
    fixture_pool_stop(&f);
    start(&f, 1, 3);
    run_ids(&f, b_ids, N_SYS + N_END, &fresh);
    ck_assert_int_eq(fresh.n_cached, 0);
    assert_same(&b, &fresh, "from a checkpoint vs fresh");
    fixture_pool_stop(&f);
    start_gw(&f, 1, 3, 0, 128);
    run_ids(&f, b_ids, N_SYS + N_END, &a);
    ck_assert_int_eq(ckpt_count(&f), 1);   /* 112 */
    assert_same(&a, &fresh, "read as 112 + 8");
    run_ids(&f, b_ids, N_SYS + N_END, &b);
    ck_assert_int_eq(b.n_cached, N_SYS + N_END - 8);
    assert_same(&b, &fresh, "the same prompt again");
    fixture_pool_stop(&f);
}
END_TEST

/* A prompt sharing fewer tokens than the first checkpoint (32) reads from
 * 0, and its answer is a fresh pool's; without checkpoints
 * (--ctx-checkpoints 0) the shared system prompt is read again too. */
START_TEST(test_ckpt_diverge_early_reads_from_zero)
{
    int32_t a_ids[N_SYS + N_END], c_ids[N_SYS + N_END];
    ckpt_prompt(a_ids, 0);
    ckpt_prompt(c_ids, 2);
    for (int i = 20; i < N_SYS; i++)
        c_ids[i] = a_ids[i] + 1;   /* shares 20 tokens only */
    struct fixture_pool f;
    struct got a, c, fresh;
    start(&f, 1, 3);
    run_ids(&f, a_ids, N_SYS + N_END, &a);
    run_ids(&f, c_ids, N_SYS + N_END, &c);
    ck_assert_int_eq(c.n_cached, 0);
    fixture_pool_stop(&f);
    start(&f, 1, 3);
    run_ids(&f, c_ids, N_SYS + N_END, &fresh);
    assert_same(&c, &fresh, "diverged early vs fresh");
    fixture_pool_stop(&f);

    int32_t b_ids[N_SYS + N_END];
    ckpt_prompt(b_ids, 1);
    start(&f, 1, 0);
    run_ids(&f, a_ids, N_SYS + N_END, &a);
    ck_assert_int_eq(ckpt_count(&f), 0);
    run_ids(&f, b_ids, N_SYS + N_END, &c);
    ck_assert_int_eq(c.n_cached, 0);
    fixture_pool_stop(&f);
}
END_TEST

/* A long prompt in many chunks keeps exactly the bound, for bounds 1, 2
 * and 5; with more than one, the older ones kept still serve a prompt
 * sharing a prefix, and its answer is a fresh pool's. */
START_TEST(test_ckpt_bound_holds)
{
    int32_t ids[200], other[200];
    for (int i = 0; i < 200; i++)
        ids[i] = other[i] = 30 + (i * 13) % 170;
    for (int i = 150; i < 200; i++)
        other[i] = 25 + (i * 7) % 160;
    static const int32_t bounds[] = { 1, 2, 5 };
    for (size_t k = 0; k < sizeof(bounds) / sizeof(bounds[0]); k++) {
        struct fixture_pool f;
        struct got a, b, fresh;
        start(&f, 1, bounds[k]);
        run_ids(&f, ids, 200, &a);   /* chunks end at 32, 64, ..., 192 and 192 (tail) */
        ck_assert_int_eq(ckpt_count(&f), bounds[k]);
        run_ids(&f, other, 200, &b);
        ck_assert_int_le(ckpt_count(&f), bounds[k]);
        /* one checkpoint is always the newest (the tail, 192): above the 150 shared */
        if (bounds[k] == 1)
            ck_assert_int_eq(b.n_cached, 0);
        else
            ck_assert_int_gt(b.n_cached, 0);
        ck_assert_int_le(b.n_cached, 150);
        fixture_pool_stop(&f);
        start(&f, 1, bounds[k]);
        run_ids(&f, other, 200, &fresh);
        assert_same(&b, &fresh, "after the bound");
        fixture_pool_stop(&f);
    }
}
END_TEST

/* -np 4 with checkpoints: four prompts sharing the system prompt, read
 * together twice (the second round resumes from checkpoints), each equal
 * to its answer alone in a fresh pool. */
START_TEST(test_ckpt_np4_same_as_alone)
{
    int32_t ids[4][N_SYS + N_END];
    for (int i = 0; i < 4; i++)
        ckpt_prompt(ids[i], i);
    struct fixture_pool f;
    struct got first[4], second[4], alone;
    start(&f, 4, 3);
    for (int round = 0; round < 2; round++) {
        struct got *out = round == 0 ? first : second;
        struct st_request *reqs[4];
        struct st_err err = { 0 };
        for (int i = 0; i < 4; i++) {
            memset(&out[i], 0, sizeof(out[i]));
            reqs[i] = st_request_new();
            snprintf(reqs[i]->id, sizeof(reqs[i]->id), "r%d-%d", round, i);
            reqs[i]->prompt = strdup("(ids)");
            int which = round == 0 ? i : (i + 1) % 4;   /* another slot's ending */
            reqs[i]->tokens = malloc(sizeof(ids[which]));
            memcpy(reqs[i]->tokens, ids[which], sizeof(ids[which]));
            reqs[i]->n_tokens = N_SYS + N_END;
            reqs[i]->params.max_tokens = N_GEN;
            reqs[i]->params.ignore_eos = true;
            reqs[i]->params.temperature = 0.0f;
            reqs[i]->params.top_k = 40;
            reqs[i]->params.top_p = 1.0f;
            reqs[i]->emit = ckpt_on_event;
            reqs[i]->emit_ctx = &out[i];
            ck_assert(st_engine_pool_submit(f.pool, reqs[i], &err) == ST_OK);
        }
        fixture_pool_drain(&f);
        for (int i = 0; i < 4; i++) {
            ck_assert(out[i].ended);
            st_request_unref(reqs[i]);
        }
    }
    fixture_pool_stop(&f);
    int64_t cached = 0;
    for (int i = 0; i < 4; i++) {
        cached += second[i].n_cached;
        start(&f, 1, 3);
        run_ids(&f, ids[(i + 1) % 4], N_SYS + N_END, &alone);
        fixture_pool_stop(&f);
        assert_same(&second[i], &alone, "-np 4 second round vs alone");
    }
    ck_assert_int_gt(cached, 0);
}
END_TEST

/* Give-way: a read resuming from a checkpoint (64: it shares 70 tokens)
 * gives way at a 32-token boundary to a higher-priority request in the
 * other slot, then continues from where it stopped; its answer is still a
 * fresh pool's. */
START_TEST(test_ckpt_give_way)
{
    int32_t a_ids[N_SYS + N_END], b_ids[N_SYS + N_END], c_ids[10];
    ckpt_prompt(a_ids, 0);
    ckpt_prompt(b_ids, 1);
    for (int i = 70; i < N_SYS; i++)
        b_ids[i] = a_ids[i] + 2;
    for (int i = 0; i < 10; i++)
        c_ids[i] = 180 - i;
    struct fixture_pool f;
    struct got a, b, c, fresh;
    start_gw(&f, 2, 3, 32, UBATCH);
    run_ids(&f, a_ids, N_SYS + N_END, &a);
    struct st_request *rb = submit_ids(&f, b_ids, N_SYS + N_END, 0, &b);
    ck_assert(st_engine_pool_step(f.pool, 0));   /* b: 64..96, past a boundary */
    struct st_request *rc = submit_ids(&f, c_ids, 10, 5, &c);
    fixture_pool_drain(&f);
    ck_assert(b.ended && c.ended);
    ck_assert_int_eq(b.n_cached, 64);
    ck_assert_int_ge(rb->job.yields, 1);
    st_request_unref(rb);
    st_request_unref(rc);
    fixture_pool_stop(&f);
    start(&f, 1, 3);
    run_ids(&f, b_ids, N_SYS + N_END, &fresh);
    assert_same(&b, &fresh, "gave way vs fresh");
    fixture_pool_stop(&f);
}
END_TEST

/* The KV usage counts a busy slot's state and each checkpoint it holds as
 * state_tokens (next-tiny: 132) each, over a capacity that allows for the
 * bound: after two 32-token chunks of a read, (64 + 132 x 3) over
 * (256 + 132 x (1 + 3)); /slots shows the 2 checkpoints. */
START_TEST(test_ckpt_counted_in_kv_usage)
{
    int32_t ids[N_SYS + N_END];
    ckpt_prompt(ids, 0);
    struct fixture_pool f;
    struct got a;
    start(&f, 1, 3);
    struct st_request *req = submit_ids(&f, ids, N_SYS + N_END, 0, &a);
    ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert(st_engine_pool_step(f.pool, 0));   /* the views show the state after two */
    struct st_slot_view v;
    ck_assert_int_eq(st_engine_pool_slots(f.pool, &v, 1), 1);
    ck_assert_int_ge(v.n_read, 64);
    ck_assert_int_eq(v.n_checkpoints, (int32_t)(v.n_read / UBATCH));
    struct st_pool_stats ps;
    st_engine_pool_stats(f.pool, &ps);
    double want = (double)(v.n_read + 132 * (1 + v.n_checkpoints)) / (256.0 + 132.0 * 4);
    ck_assert_msg(ps.kv_usage > want - 1e-9 && ps.kv_usage < want + 1e-9,
                  "kv_usage %.6f, want %.6f (%lld read, %d checkpoints)", ps.kv_usage, want,
                  (long long)v.n_read, (int)v.n_checkpoints);
    fixture_pool_drain(&f);
    ck_assert(a.ended);
    st_request_unref(req);
    fixture_pool_stop(&f);
}
END_TEST

/* With MTP drafts (next-tiny's nextn block, 3 a step): the resumed read
 * (from 96) cuts the MTP layer's cache there too; greedy tokens with drafts
 * equal a fresh pool's without. */
START_TEST(test_ckpt_mtp)
{
    char mpath[320];
    fixture_make_model(mpath, sizeof(mpath), dir, "next-tiny", "q8_0", 3, true);
    memcpy(path, mpath, sizeof(path));
    int32_t a_ids[N_SYS + N_END], b_ids[N_SYS + N_END];
    ckpt_prompt(a_ids, 0);
    ckpt_prompt(b_ids, 1);
    struct fixture_pool f;
    struct got a, b, fresh;
    mtp_draft = 3;
    start(&f, 1, 3);
    run_ids(&f, a_ids, N_SYS + N_END, &a);
    run_ids(&f, b_ids, N_SYS + N_END, &b);
    ck_assert_int_eq(b.n_cached, 96);
    struct st_pool_stats ps;
    st_engine_pool_stats(f.pool, &ps);
    ck_assert_uint_gt(ps.mtp_drafted, 0);
    fixture_pool_stop(&f);
    mtp_draft = 0;
    start(&f, 1, 3);
    run_ids(&f, b_ids, N_SYS + N_END, &fresh);
    fixture_pool_stop(&f);
    assert_same(&b, &fresh, "MTP from a checkpoint vs fresh without");
}
END_TEST

static Suite *engine_ckpt_suite(void)
{
    Suite *s = suite_create("engine_ckpt");
    TCase *tc = tcase_create("next");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_ckpt_shared_system_prompt);
    tcase_add_test(tc, test_ckpt_diverge_early_reads_from_zero);
    tcase_add_test(tc, test_ckpt_bound_holds);
    tcase_add_test(tc, test_ckpt_np4_same_as_alone);
    tcase_add_test(tc, test_ckpt_give_way);
    tcase_add_test(tc, test_ckpt_counted_in_kv_usage);
    tcase_add_test(tc, test_ckpt_mtp);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(engine_ckpt_suite(), CK_FORK);
}
