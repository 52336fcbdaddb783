/* test_engine_model.c -- the engine pool on the CPU model runner, end to end
 * below HTTP: a greedy request through the pool gives the tokens a plain
 * greedy loop over the runner gives (so the server and `strata run`, which
 * share the pool, agree with the model), and four requests with different
 * prompts decoding together in a 4-slot pool (-np 4) each get the tokens
 * they get alone; the same on a qwen35moe (recurrent state per slot).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner_model.h"
#include "strata/clock.h"
#include "strata/engine.h"
#include "strata/sched.h"
#include "model_fixture.h"
#include "support.h"

#define N_GEN 12
#define N_REQ 4

static char dir[256], path[320];

static void setup(void)
{
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "small", "q4_k", 3, false);
}

/* qwen35moe: the slots carry recurrent state, which the engine may not
 * reuse as a prefix (each request reads from position 0). */
static void setup_next(void)
{
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "next-tiny", "q8_0", 3, false);
}

/* qwen3next: the same slots, its grouped v heads and fused ssm_ba. */
static void setup_next80(void)
{
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "next80-tiny", "q8_0", 3, false);
}

static void teardown(void) { support_rmtree(dir); }

struct got {
    int32_t tokens[64];
    int     n;
    bool    ended;
    enum st_finish finish;
    int64_t n_cached;
};

static void on_event(void *ctx, const struct st_event *ev)
{
    struct got *g = ctx;
    if (ev->kind == ST_EVENT_TOKEN) {
        if (g->n < 64)
            g->tokens[g->n++] = ev->token;
        return;
    }
    g->ended = true;
    g->finish = ev->finish;
    g->n_cached = ev->n_cached;
}

static const char *const prompts[N_REQ] = {
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time",
    "In the beginning was the word, and the word was with",
    "1 2 3 4 5 6 7 8",
};

/* How run_pool's requests sample. */
enum draw_mode {
    GREEDY_IGNORE_EOS,   /* N_GEN tokens whatever comes (host sampler: eog is banned) */
    GREEDY_DRAWN,        /* plain greedy: the backend picks the tokens (backend_draw) */
    GREEDY_LOGPROBS,     /* greedy with logprobs: the host sampler, on the logits */
    SAMPLED_DRAWN,       /* seeded top-k / top-p / min-p sampling, drawn on the backend */
    SAMPLED_LOGPROBS,    /* the same requests with logprobs: the host sampler */
    SAMPLED_MIXED,       /* the same; odd ones want logprobs, so their steps bring the
                          * logits back and the even ones sample on the host with the
                          * uniform numbers they drew for the backend */
};

/* A pool of one CPU engine with n_slots slots on a manual clock; runs the
 * given requests (up to N_GEN tokens) to the end. */
static uint64_t last_drawn;   /* run_pool_mode: the pool's drawn_tokens at its end */

static void run_pool_mode(int32_t n_slots, const int *which, int n, struct got *out,
                          enum draw_mode mode)
{
    struct fixture_pool f;
    fixture_pool_start_ub(&f, path, n_slots, 512, 0, 0);   /* 512: the pool's default ubatch */
    struct st_request *reqs[N_REQ];
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        reqs[i] = st_request_new();
        snprintf(reqs[i]->id, sizeof(reqs[i]->id), "r%d", which[i]);
        reqs[i]->prompt = strdup(prompts[which[i]]);
        struct st_gen_params *gp = &reqs[i]->params;
        bool sampled = mode >= SAMPLED_DRAWN;
        gp->temperature = sampled ? 0.9f : 0.0f;
        gp->top_k = 40;
        gp->top_p = sampled ? 0.9f : 1.0f;
        gp->min_p = sampled ? 0.02f : 0.0f;
        gp->has_seed = true;
        gp->seed = 100 + (uint64_t)which[i];
        gp->max_tokens = N_GEN;
        gp->ignore_eos = mode == GREEDY_IGNORE_EOS;
        gp->logprobs = mode == GREEDY_LOGPROBS || mode == SAMPLED_LOGPROBS ||
                       (mode == SAMPLED_MIXED && i % 2 == 1);
        reqs[i]->emit = on_event;
        reqs[i]->emit_ctx = &out[i];
        fixture_submit(f.pool, reqs[i]);
    }
    fixture_pool_drain(&f);
    for (int i = 0; i < n; i++) {
        ck_assert(out[i].ended);
        if (mode == GREEDY_IGNORE_EOS) {
            ck_assert_int_eq(out[i].finish, ST_FINISH_LENGTH);
            ck_assert_int_eq(out[i].n, N_GEN);
        }
        st_request_unref(reqs[i]);
    }
    struct st_pool_stats ps;
    st_engine_pool_stats(f.pool, &ps);
    last_drawn = ps.drawn_tokens;
    fixture_pool_stop(&f);
}

static void run_pool(int32_t n_slots, const int *which, int n, struct got *out)
{
    run_pool_mode(n_slots, which, n, out, GREEDY_IGNORE_EOS);
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        b = x[i] > x[b] ? i : b;
    return b;
}

/* The same prompt through the runner directly: prefill, then argmax loop. */
static void run_direct(int which, int32_t *tokens)
{
    struct st_runner *r = NULL;
    struct st_err err = { 0 };
    ck_assert(st_runner_model_new(path, "cpu", -1, 1, 1, 256, 512, &r, &err) == ST_OK);
    ck_assert(st_runner_load(r, NULL, NULL, NULL, &err) == ST_OK);
    int32_t *ids = NULL;
    size_t n = 0;
    ck_assert(st_runner_tokenize(r, prompts[which], strlen(prompts[which]), true, true, &ids, &n,
                                 &err) == ST_OK);
    struct st_runner_seq seq = { .kind = ST_SEQ_READ, .slot = 0, .tokens = ids,
                                 .n_tokens = (int64_t)n, .pos = 0, .sample = true };
    struct st_runner_row row;
    struct st_runner_out out = { .rows = &row };
    struct st_runner_batch b = { &seq, 1 };
    for (int g = 0; g < N_GEN; g++) {
        ck_assert(st_runner_forward(r, &b, &out, &err) == ST_OK);
        tokens[g] = argmax(row.logits, st_runner_n_vocab(r));
        seq = (struct st_runner_seq){ .kind = ST_SEQ_DECODE, .slot = 0, .tokens = &tokens[g],
                                      .n_tokens = 1, .pos = (int64_t)n + g, .sample = true };
    }
    free(ids);
    st_runner_free(r);
}

START_TEST(test_engine_model_greedy_matches_runner)
{
    int which = 0;
    struct got got;
    run_pool(1, &which, 1, &got);
    int32_t direct[N_GEN];
    run_direct(0, direct);
    for (int g = 0; g < N_GEN; g++)
        ck_assert_msg(got.tokens[g] == direct[g], "token %d: pool %d, runner %d", g,
                      got.tokens[g], direct[g]);
}
END_TEST

START_TEST(test_engine_model_np4_same_tokens_as_alone)
{
    int all[N_REQ] = { 0, 1, 2, 3 };
    struct got together[N_REQ], alone;
    run_pool(N_REQ, all, N_REQ, together);
    for (int i = 0; i < N_REQ; i++) {
        run_pool(1, &all[i], 1, &alone);
        for (int g = 0; g < N_GEN; g++)
            ck_assert_msg(alone.tokens[g] == together[i].tokens[g], "prompt %d token %d: alone "
                          "%d, with 4 slots %d", i, g, alone.tokens[g], together[i].tokens[g]);
    }
}
END_TEST

/* One greedy request for the given prompt ids (N_GEN tokens) on pool. */
static void run_ids(struct st_engine_pool *pool, const int32_t *ids, int64_t n, struct got *out)
{
    memset(out, 0, sizeof(*out));
    struct st_request *req = fixture_submit_greedy(pool, ids, n, N_GEN, 0, on_event, out);
    for (int steps = 0; steps < 10000 && st_engine_pool_step(pool, 0); steps++)
        ;
    ck_assert(out->ended);
    ck_assert_int_eq(out->n, N_GEN);
    st_request_unref(req);
}

/* A conversation's next turn on a recurrent model: the second prompt starts
 * with everything the slot read for the first (its prompt and reply), so
 * the slot's state is kept and only the rest is read; the reply equals the
 * same prompt read from scratch in a new pool. */
START_TEST(test_engine_model_next_turn_keeps_state)
{
    int32_t first[20], second[20 + N_GEN + 3];
    for (int i = 0; i < 20; i++)
        first[i] = 40 + 7 * i;
    struct fixture_pool f;
    struct got a, b, fresh;
    fixture_pool_start_ub(&f, path, 1, 64, 0, 0);
    run_ids(f.pool, first, 20, &a);
    memcpy(second, first, sizeof(first));
    memcpy(second + 20, a.tokens, N_GEN * sizeof(int32_t));
    second[20 + N_GEN] = 11, second[21 + N_GEN] = 12, second[22 + N_GEN] = 13;
    run_ids(f.pool, second, 20 + N_GEN + 3, &b);
    ck_assert_int_eq(b.n_cached, 20 + N_GEN - 1);   /* the last reply token was never fed */
    run_ids(f.pool, first, 20, &fresh);             /* not a continuation: read from 0 */
    ck_assert_int_eq(fresh.n_cached, 0);
    fixture_pool_stop(&f);
    fixture_pool_start_ub(&f, path, 1, 64, 0, 0);
    run_ids(f.pool, second, 20 + N_GEN + 3, &fresh);
    ck_assert_int_eq(fresh.n_cached, 0);
    for (int g = 0; g < N_GEN; g++)
        ck_assert_msg(b.tokens[g] == fresh.tokens[g], "token %d: kept state %d, fresh %d", g,
                      b.tokens[g], fresh.tokens[g]);
    fixture_pool_stop(&f);
}
END_TEST

static void assert_same_runs(const struct got *a, const struct got *b, const char *what)
{
    for (int i = 0; i < N_REQ; i++) {
        ck_assert_int_gt(a[i].n, 0);
        ck_assert_int_eq(a[i].n, b[i].n);
        ck_assert_int_eq(a[i].finish, b[i].finish);
        for (int g = 0; g < a[i].n; g++)
            ck_assert_msg(a[i].tokens[g] == b[i].tokens[g], "%s: prompt %d token %d: %d vs %d",
                          what, i, g, a[i].tokens[g], b[i].tokens[g]);
    }
}

/* Four greedy requests decoding together: tokens picked on the backend
 * (backend_draw, ids only) equal the host sampler's picks from the logits. */
START_TEST(test_engine_model_drawn_tokens_match_host_sampler)
{
    int all[N_REQ] = { 0, 1, 2, 3 };
    struct got drawn[N_REQ], host[N_REQ];
    run_pool_mode(N_REQ, all, N_REQ, drawn, GREEDY_DRAWN);
    ck_assert_uint_gt(last_drawn, 0);           /* the backend's draw did run */
    run_pool_mode(N_REQ, all, N_REQ, host, GREEDY_LOGPROBS);
    ck_assert_uint_eq(last_drawn, 0);           /* logprobs need the logits: host sampler */
    assert_same_runs(drawn, host, "greedy");
}
END_TEST

/* The same for seeded sampling with top-k, top-p and min-p: the backend's
 * draw chain is the host's, and each token spends one uniform number
 * wherever it is drawn, also when a step with a logprobs request next to
 * it brings the logits back after the number was drawn. */
START_TEST(test_engine_model_drawn_samples_match_host_sampler)
{
    int all[N_REQ] = { 0, 1, 2, 3 };
    struct got drawn[N_REQ], host[N_REQ], mixed[N_REQ];
    run_pool_mode(N_REQ, all, N_REQ, drawn, SAMPLED_DRAWN);
    ck_assert_uint_gt(last_drawn, 0);
    run_pool_mode(N_REQ, all, N_REQ, host, SAMPLED_LOGPROBS);
    ck_assert_uint_eq(last_drawn, 0);
    assert_same_runs(drawn, host, "sampled");
    run_pool_mode(N_REQ, all, N_REQ, mixed, SAMPLED_MIXED);
    assert_same_runs(drawn, mixed, "mixed");
    int differ = 0;                             /* sampling did not collapse to greedy */
    struct got greedy[N_REQ];
    run_pool_mode(N_REQ, all, N_REQ, greedy, GREEDY_DRAWN);
    for (int i = 0; i < N_REQ; i++)
        for (int g = 0; g < drawn[i].n && g < greedy[i].n; g++)
            differ += drawn[i].tokens[g] != greedy[i].tokens[g];
    ck_assert_int_gt(differ, 0);
}
END_TEST

static Suite *engine_model_suite(void)
{
    Suite *s = suite_create("engine_model");
    TCase *tc = tcase_create("pool");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_engine_model_greedy_matches_runner);
    tcase_add_test(tc, test_engine_model_np4_same_tokens_as_alone);
    tcase_add_test(tc, test_engine_model_drawn_tokens_match_host_sampler);
    tcase_add_test(tc, test_engine_model_drawn_samples_match_host_sampler);
    suite_add_tcase(s, tc);
    TCase *next = tcase_create("next");
    tcase_add_checked_fixture(next, setup_next, teardown);
    tcase_set_timeout(next, 60);
    tcase_add_test(next, test_engine_model_greedy_matches_runner);
    tcase_add_test(next, test_engine_model_np4_same_tokens_as_alone);
    tcase_add_test(next, test_engine_model_next_turn_keeps_state);
    suite_add_tcase(s, next);
    TCase *next80 = tcase_create("next80");
    tcase_add_checked_fixture(next80, setup_next80, teardown);
    tcase_set_timeout(next80, 60);
    tcase_add_test(next80, test_engine_model_np4_same_tokens_as_alone);
    tcase_add_test(next80, test_engine_model_next_turn_keeps_state);
    suite_add_tcase(s, next80);
    return s;
}

int main(void)
{
    return support_run_suite(engine_model_suite(), CK_FORK);
}
