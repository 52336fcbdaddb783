/* test_engine_score_cache.c -- prompt scores kept with a slot's cached
 * prefix (src/engine/prefix.c "scores", prompt.c; docs/ENGINE.md "Prompt
 * logprobs"): a scored request whose prompt shares a prefix with what a
 * slot read and scored before reads only the rest, and its reply is the
 * one a cold read gives.
 *
 * On the CPU model runner (make-model tiny, manual clock, stepped by the
 * test), every reply is checked against a cold run of the same request in
 * a fresh pool, bit for bit (logprob, rank, top ids and logprobs): the
 * kept positions come from an earlier cold read of the same tokens, and
 * the CPU forward computes each row the same whatever chunk it is read in
 * (the suite would show otherwise):
 *   - lm-eval's multiple choice: one context, four continuations in turn;
 *     the first reads all, the others n_cached = context - 1; the pool's
 *     cached_tokens counts them; a repeat reads one token;
 *   - top N smaller, equal, larger than the kept N (larger: read cold,
 *     then kept at the larger N), and a run mixing two Ns;
 *   - partial hits: a prompt that is a prefix of the kept one, one that
 *     extends it, and after a request without logprobs took the slot with
 *     a prompt that diverges (the kept scores past it go);
 *   - n > 1 (the same scored prompt twice at once): one slot serves them in
 *     turn, the second from the cache; on two slots the second copies the
 *     first's KV and scores across slots;
 *   - n-gram drafts with forced rejections (kv_truncate) in a scored
 *     request's decode, then a scored request over prompt + output;
 *   - cache_prompt false reuses nothing and still gets the same scores.
 * On the sim: a model swap forgets the kept scores.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "engine/pool.h"
#include "model_fixture.h"
#include "runner/runner.h"
#include "support.h"

#define MAXP 160   /* prompt ids at most */

static char dir[256];
static char path[320];
static void setup(void)
{
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 7, false);
}
static void teardown(void) { support_rmtree(dir); }

struct ask {
    int32_t top;          /* prompt_top_logprobs; < 0: no prompt logprobs */
    int32_t max_tokens;
    bool    no_cache;     /* cache_prompt: false */
};

static void submit(struct st_engine_pool *p, const int32_t *ids, int64_t n, struct ask a,
                   struct fixture_got *g)
{
    struct fixture_ask fa = { .max_tokens = a.max_tokens, .echo = a.top >= 0,
                              .score = a.top >= 0, .top = a.top, .no_cache = a.no_cache };
    st_request_unref(fixture_submit_ids(p, ids, n, &fa, g));
}

/* One CPU engine on the tiny model: np slots of 256 tokens, 'ubatch'. */
static void start(struct fixture_pool *f, int32_t np, int32_t ubatch)
{
    fixture_pool_start_ub(f, path, np, ubatch, 0, 0);
    (void)st_engine_pool_step(f->pool, 0);   /* loads the model */
}

/* One request and its whole run. */
static void run(struct fixture_pool *f, const int32_t *ids, int64_t n, struct ask a,
                struct fixture_got *g)
{
    submit(f->pool, ids, n, a, g);
    fixture_pool_drain(f);
    ck_assert(g->ended && g->in_order);
    ck_assert_int_eq(g->n_pos, a.top >= 0 ? n : 0);
}

/* The same request read cold: a fresh pool, one slot, ubatch 16. */
static void cold(const int32_t *ids, int64_t n, int32_t top, struct fixture_got *g)
{
    struct fixture_pool f;
    start(&f, 1, 16);
    run(&f, ids, n, (struct ask){ .top = top, .max_tokens = 1 }, g);
    ck_assert_int_eq(g->n_cached, 0);
    fixture_pool_stop(&f);
}

/* The text's ids (repeated until 'want'). */
static int64_t text_ids(int32_t *ids, int64_t want)
{
    return fixture_file_text_ids(path, FIXTURE_STORY_QUESTION, ids, want);
}

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof(a)) == 0; }

/* a and b report the same bits at every position: token, whether scored,
 * logprob, rank, the alternatives. */
static void expect_bits(const struct fixture_got *a, const struct fixture_got *b, int64_t n,
                        const char *what)
{
    ck_assert_int_eq(a->n_pos, n);
    ck_assert_int_eq(b->n_pos, n);
    ck_assert_msg(!a->has[0] && !b->has[0], "%s: position 0 scored", what);
    for (int64_t p = 0; p < n; p++) {
        ck_assert_int_eq(a->tok[p], b->tok[p]);
        ck_assert_msg(a->has[p] == b->has[p] && (p == 0 || a->has[p]), "%s: position %lld",
                      what, (long long)p);
        ck_assert_msg(same_float(a->lp[p], b->lp[p]), "%s: position %lld: logprob %.9g vs %.9g",
                      what, (long long)p, (double)a->lp[p], (double)b->lp[p]);
        ck_assert_int_eq(a->rank[p], b->rank[p]);
        ck_assert_int_eq(a->n_top[p], b->n_top[p]);
        for (int32_t k = 0; k < a->n_top[p]; k++) {
            ck_assert_int_eq(a->top_id[p][k], b->top_id[p][k]);
            ck_assert_msg(same_float(a->top_lp[p][k], b->top_lp[p][k]), "%s: %lld top %d", what,
                          (long long)p, (int)k);
        }
    }
}

static uint64_t cached_tokens(struct fixture_pool *f)
{
    struct st_pool_stats st;
    st_engine_pool_stats(f->pool, &st);
    return st.cached_tokens;
}

/* ---- lm-eval's multiple choice ------------------------------------------------ */

START_TEST(test_engine_score_cache_multiple_choice)
{
    static int32_t ids[MAXP], prompt[4][MAXP];
    static struct fixture_got warm[4], ref[4], again;
    int64_t n_ids = text_ids(ids, 120);
    ck_assert_int_ge(n_ids, 120);
    const int64_t ctx = 45;   /* context: ids[0..45); answer i: 3 + i ids from 60 + 12 i */
    int64_t n[4];
    for (int i = 0; i < 4; i++) {
        memcpy(prompt[i], ids, (size_t)ctx * sizeof(int32_t));
        n[i] = ctx + 3 + i;
        memcpy(prompt[i] + ctx, ids + 60 + 12 * i, (size_t)(3 + i) * sizeof(int32_t));
        for (int j = 0; j < i; j++)   /* answers part at their first token */
            ck_assert_int_ne(prompt[i][ctx], prompt[j][ctx]);
        cold(prompt[i], n[i], 1, &ref[i]);
    }
    struct fixture_pool f;
    start(&f, 1, 16);
    for (int i = 0; i < 4; i++) {
        run(&f, prompt[i], n[i], (struct ask){ .top = 1, .max_tokens = 1 }, &warm[i]);
        /* the read starts at the context's last token, whose row scores the
         * answer's first */
        ck_assert_int_eq(warm[i].n_cached, i == 0 ? 0 : ctx - 1);
        expect_bits(&warm[i], &ref[i], n[i], "choice");
        ck_assert_int_eq(warm[i].gen[0], ref[i].gen[0]);
    }
    ck_assert_uint_eq(cached_tokens(&f), 3 * (uint64_t)(ctx - 1));
    /* the last answer again: everything but its last token is kept */
    run(&f, prompt[3], n[3], (struct ask){ .top = 1, .max_tokens = 1 }, &again);
    ck_assert_int_eq(again.n_cached, n[3] - 1);
    expect_bits(&again, &ref[3], n[3], "repeat");
    fixture_pool_stop(&f);
}
END_TEST

/* ---- top N ---------------------------------------------------------------------- */

START_TEST(test_engine_score_cache_top_n)
{
    static int32_t ids[MAXP];
    static struct fixture_got g, ref2, ref5, ref8;
    int64_t n = text_ids(ids, 70);
    cold(ids, n, 2, &ref2);
    cold(ids, n, 5, &ref5);
    cold(ids, n, 8, &ref8);
    struct fixture_pool f;
    start(&f, 1, 16);
    run(&f, ids, n, (struct ask){ .top = 5, .max_tokens = 1 }, &g);   /* kept at N = 5 */
    ck_assert_int_eq(g.n_cached, 0);
    expect_bits(&g, &ref5, n, "N 5 cold");
    run(&f, ids, n, (struct ask){ .top = 2, .max_tokens = 1 }, &g);   /* smaller */
    ck_assert_int_eq(g.n_cached, n - 1);
    expect_bits(&g, &ref2, n, "N 2 from N 5");
    run(&f, ids, n, (struct ask){ .top = 5, .max_tokens = 1 }, &g);   /* equal */
    ck_assert_int_eq(g.n_cached, n - 1);
    expect_bits(&g, &ref5, n, "N 5 from N 5");
    run(&f, ids, n, (struct ask){ .top = 8, .max_tokens = 1 }, &g);   /* larger: cold */
    ck_assert_int_eq(g.n_cached, 0);
    expect_bits(&g, &ref8, n, "N 8 over N 5");
    run(&f, ids, n, (struct ask){ .top = 8, .max_tokens = 1 }, &g);   /* now kept at 8 */
    ck_assert_int_eq(g.n_cached, n - 1);
    expect_bits(&g, &ref8, n, "N 8 from N 8");
    run(&f, ids, n, (struct ask){ .top = 0, .max_tokens = 1 }, &g);   /* the token alone */
    ck_assert_int_eq(g.n_cached, n - 1);
    for (int64_t p = 1; p < n; p++) {
        ck_assert(g.has[p] && g.n_top[p] == 0);
        ck_assert(same_float(g.lp[p], ref8.lp[p]) && g.rank[p] == ref8.rank[p]);
    }
    fixture_pool_stop(&f);

    /* Two Ns in one kept run: 1..24 at N 8 (a shorter prompt), 25.. at N 2
     * (the longer prompt read after them); N 5 takes the first part only. */
    start(&f, 1, 16);
    run(&f, ids, 25, (struct ask){ .top = 8, .max_tokens = 0 }, &g);
    run(&f, ids, n, (struct ask){ .top = 2, .max_tokens = 0 }, &g);
    ck_assert_int_eq(g.n_cached, 24);
    expect_bits(&g, &ref2, n, "N 2 after a shorter N 8");
    run(&f, ids, n, (struct ask){ .top = 5, .max_tokens = 1 }, &g);
    ck_assert_int_eq(g.n_cached, 24);
    expect_bits(&g, &ref5, n, "N 5 over N 8 then N 2");
    run(&f, ids, n, (struct ask){ .top = 2, .max_tokens = 1 }, &g);
    ck_assert_int_eq(g.n_cached, n - 1);
    expect_bits(&g, &ref2, n, "N 2 over N 5");
    fixture_pool_stop(&f);
}
END_TEST

/* ---- partial hits ---------------------------------------------------------------- */

START_TEST(test_engine_score_cache_partial)
{
    static int32_t ids[MAXP], other[MAXP];
    static struct fixture_got g, ref_short, ref_long, plain;
    int64_t n = text_ids(ids, 80);
    cold(ids, 30, 3, &ref_short);
    cold(ids, n, 3, &ref_long);
    struct fixture_pool f;
    start(&f, 1, 16);
    run(&f, ids, n, (struct ask){ .top = 3, .max_tokens = 1 }, &g);
    /* a prefix of the kept prompt: all of it kept */
    run(&f, ids, 30, (struct ask){ .top = 3, .max_tokens = 1 }, &g);
    ck_assert_int_eq(g.n_cached, 29);
    expect_bits(&g, &ref_short, 30, "a prefix");
    /* the long one again: the slot now holds ids[0..30) + a generated token */
    run(&f, ids, n, (struct ask){ .top = 3, .max_tokens = 1 }, &g);
    ck_assert_int_eq(g.n_cached, 29);
    expect_bits(&g, &ref_long, n, "an extension");
    /* A request without logprobs shares 20 tokens, then diverges and
     * generates: its ids replace the kept ones past 20, and so do their
     * scores; the scored prompt after it keeps 19. */
    memcpy(other, ids, 20 * sizeof(int32_t));
    for (int i = 20; i < 40; i++)
        other[i] = ids[79 - i];
    ck_assert_int_ne(other[20], ids[20]);
    run(&f, other, 40, (struct ask){ .top = -1, .max_tokens = 4 }, &plain);
    ck_assert_int_eq(plain.n_cached, 20);
    /* its own prompt, scored: the slot holds those ids, but scores only
     * up to 20 (those past it were for the old ids) */
    run(&f, other, 40, (struct ask){ .top = 3, .max_tokens = 1 }, &g);
    ck_assert_int_eq(g.n_cached, 19);
    cold(other, 40, 3, &ref_short);
    expect_bits(&g, &ref_short, 40, "the divergent prompt");
    run(&f, ids, n, (struct ask){ .top = 3, .max_tokens = 1 }, &g);
    ck_assert_int_eq(g.n_cached, 19);
    expect_bits(&g, &ref_long, n, "after a divergent prompt");
    fixture_pool_stop(&f);
}
END_TEST

/* ---- n > 1 -------------------------------------------------------------------- */

START_TEST(test_engine_score_cache_n_choices)
{
    static int32_t ids[MAXP];
    static struct fixture_got a, b, c, ref;
    int64_t n = text_ids(ids, 60);
    cold(ids, n, 4, &ref);
    /* one slot: the server's n = 2 submits the request twice at once; the
     * second waits for the slot and finds the first's scores */
    struct fixture_pool f;
    start(&f, 1, 16);
    submit(f.pool, ids, n, (struct ask){ .top = 4, .max_tokens = 1 }, &a);
    submit(f.pool, ids, n, (struct ask){ .top = 4, .max_tokens = 1 }, &b);
    fixture_pool_drain(&f);
    ck_assert(a.ended && b.ended);
    ck_assert_int_eq(a.n_cached + b.n_cached, n - 1);   /* one cold, one from the cache */
    expect_bits(&a, &ref, n, "choice 0");
    expect_bits(&b, &ref, n, "choice 1");
    fixture_pool_stop(&f);
    /* two slots: both are admitted in the same step; the first reads cold,
     * the second, when it gets the lines, copies the first's KV and scores
     * into its own slot (prefix.c "copy"); a third request finds either */
    start(&f, 2, 16);
    submit(f.pool, ids, n, (struct ask){ .top = 4, .max_tokens = 1 }, &a);
    submit(f.pool, ids, n, (struct ask){ .top = 4, .max_tokens = 1 }, &b);
    fixture_pool_drain(&f);
    ck_assert_int_eq(a.n_cached, 0);
    ck_assert_int_eq(b.n_cached, n - 1);
    run(&f, ids, n, (struct ask){ .top = 4, .max_tokens = 1 }, &c);
    ck_assert_int_eq(c.n_cached, n - 1);
    expect_bits(&a, &ref, n, "slot 0");
    expect_bits(&b, &ref, n, "slot 1");
    expect_bits(&c, &ref, n, "the third");
    fixture_pool_stop(&f);
}
END_TEST

/* ---- drafts cut from the KV; cache_prompt false ------------------------------ */

/* Every draft set's last draft is wrong: a verify that got that far cuts
 * it from the KV (kv_truncate). */
struct spoil {
    int32_t n_vocab;
    int64_t spoiled;
};

static void spoil_last(void *ctx, int32_t slot, int32_t *d, int32_t n)
{
    struct spoil *s = ctx;
    (void)slot;
    if (n > 0) {
        d[n - 1] = (d[n - 1] + 1) % s->n_vocab;
        s->spoiled++;
    }
}

START_TEST(test_engine_score_cache_drafts_and_opt_out)
{
    static int32_t ids[MAXP], both[MAXP];
    static struct fixture_got g, first, ref, off;
    int64_t n = text_ids(ids, 60);
    struct fixture_pool f;
    fixture_pool_start_spec(&f, path, 1, 0, 4);   /* n-gram drafts, up to 4 */
    fixture_pool_drain(&f);
    struct spoil sp = { st_runner_n_vocab(f.pool->engines[0].runner), 0 };
    struct st_mtp_test hook = { .fixed_length = true, .corrupt = spoil_last, .ctx = &sp };
    st_engine_pool_mtp_test(f.pool, &hook);
    run(&f, ids, n, (struct ask){ .top = 2, .max_tokens = 40 }, &first);
    int64_t m = first.n_gen;   /* fewer than 40 when it ended (end of generation) */
    ck_assert_int_ge(m, 16);
    struct st_pool_stats st;
    st_engine_pool_stats(f.pool, &st);
    ck_assert_uint_gt(st.ngram_drafted, 0);
    ck_assert_int_gt(sp.spoiled, 0);
    ck_assert_uint_lt(st.ngram_accepted, st.ngram_drafted);   /* some were cut */
    /* the prompt and what it generated, scored: the prompt's positions are
     * kept, the generated ones (no score kept) are read */
    memcpy(both, ids, (size_t)n * sizeof(int32_t));
    memcpy(both + n, first.gen, (size_t)m * sizeof(int32_t));
    run(&f, both, n + m, (struct ask){ .top = 2, .max_tokens = 1 }, &g);
    ck_assert_int_eq(g.n_cached, n - 1);
    cold(both, n + m, 2, &ref);
    expect_bits(&g, &ref, n + m, "prompt + drafted output");
    /* cache_prompt false: read whole, the same numbers */
    run(&f, both, n + m, (struct ask){ .top = 2, .max_tokens = 1, .no_cache = true }, &off);
    ck_assert_int_eq(off.n_cached, 0);
    expect_bits(&off, &ref, n + m, "cache_prompt false");
    st_engine_pool_mtp_test(f.pool, NULL);
    fixture_pool_stop(&f);
}
END_TEST

/* ---- the sim: a swap forgets ----------------------------------------------------- */

static void sim_submit(struct fixture *f, int32_t model, struct fixture_got *g)
{
    memset(g, 0, sizeof(*g));
    g->in_order = true;
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "s");
    req->prompt = fx_words(50);
    req->model = model;
    req->params.max_tokens = 1;
    req->params.prompt_logprobs = true;
    req->params.prompt_top_logprobs = 2;
    req->emit = fixture_got_emit;
    req->emit_ctx = g;
    struct st_err err = { 0 };
    ck_assert(st_engine_pool_submit(f->pool, req, &err) == ST_OK);
    fx_run_idle(f);
    st_request_unref(req);
    ck_assert(g->ended && g->in_order);
    ck_assert_int_eq(g->n_pos, 50);
}

START_TEST(test_engine_score_cache_sim_swap_forgets)
{
    struct fixture f;
    fx_defaults(&f);
    struct st_model_config m1 = f.pcfg.model;
    m1.name = (char *)"m1";
    f.pcfg.model.name = (char *)"m0";
    f.pcfg.extra_models = &m1;
    f.pcfg.n_extra_models = 1;
    f.pcfg.ubatch = 8;
    ck_assert(fx_start(&f));
    static struct fixture_got a, b, c, d;
    sim_submit(&f, 0, &a);
    ck_assert_int_eq(a.n_cached, 0);
    sim_submit(&f, 0, &b);
    ck_assert_int_eq(b.n_cached, 49);
    expect_bits(&a, &b, 50, "sim repeat");
    sim_submit(&f, 1, &c);   /* a swap: the KV and the kept scores go */
    ck_assert_int_eq(c.n_cached, 0);
    sim_submit(&f, 0, &d);
    ck_assert_int_eq(d.n_cached, 0);
    expect_bits(&a, &d, 50, "sim after a swap");
    fx_stop(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_score_cache");
    TCase *tc = tcase_create("cpu");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_engine_score_cache_multiple_choice);
    tcase_add_test(tc, test_engine_score_cache_top_n);
    tcase_add_test(tc, test_engine_score_cache_partial);
    tcase_add_test(tc, test_engine_score_cache_n_choices);
    tcase_add_test(tc, test_engine_score_cache_drafts_and_opt_out);
    suite_add_tcase(s, tc);
    TCase *sim = tcase_create("sim");
    tcase_add_test(sim, test_engine_score_cache_sim_swap_forgets);
    suite_add_tcase(s, sim);
    return s;
}

int main(void)
{
    return support_run_suite(suite(), CK_FORK);
}
