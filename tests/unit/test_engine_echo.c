/* test_engine_echo.c -- echo and prompt logprobs through the engine loop
 * (src/engine/prompt.c, score.c, the READ path of step.c):
 *
 * On the CPU model runner (a make-model tiny file, manual clock):
 *   - scoring a prompt equals generating it: the logprob, rank and top
 *     alternatives reported for prompt token t_i are those the engine
 *     reports for a generated token forced to be t_i (logit_bias +100;
 *     logprobs are of the raw logits) after the prompt t_0 .. t_{i-1}, so
 *     the sum of a sequence's prompt logprobs is the sum of its step
 *     logprobs;
 *   - chunked reads (ubatch 7, and a ubatch above ST_RUNNER_SCORE_ROWS,
 *     which a scored read is cut to) agree with one chunk;
 *   - a prompt whose prefix sits in the slot's cache still gets every
 *     position scored (from the scores the slot kept: the same bits), and
 *     echo without logprobs reuses it
 *     and still reports every position's text.
 * On the sim runner: every position once, in order, before the first
 * token, with the sim's documented made-up numbers; max_tokens 0; and
 * params.progress's PROGRESS events: nothing read, then one per chunk,
 * a cached prefix in the first, none unless asked.
 * st_runner_score_row (score.c over the CPU backend's st_score_row: float /
 * AVX2 partition, top-k, rank) against a brute-force double computation,
 * ties included (the op itself: test_backend_score.c).
 * A step mixing a scored READ (scored on the backend) with a decoding slot
 * gives that slot, and the READ's sampling row, the same logits as the step
 * without scoring.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "runner/runner_model.h"
#include "runner/runner_sim.h"
#include "model_fixture.h"
#include "support.h"

#define MAXP 256   /* prompt ids at most */
#define TOP  5

static char dir[256];
static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

struct ask {
    bool    echo;
    bool    score;          /* prompt_logprobs, TOP alternatives */
    int32_t max_tokens;
    int32_t force;          /* >= 0: logit_bias +100 on it, logprobs with TOP alternatives */
};

static void submit_ids(struct st_engine_pool *p, const int32_t *ids, int64_t n,
                       const struct ask *a, struct fixture_got *g)
{
    struct fixture_ask fa = { .max_tokens = a->max_tokens, .echo = a->echo, .score = a->score,
                              .top = TOP, .force = a->force >= 0, .force_id = a->force };
    st_request_unref(fixture_submit_ids(p, ids, n, &fa, g));
}

/* fixture_pool_start with a chosen ubatch: one CPU engine, 1 slot of 256. */
static void start_cpu(struct fixture_pool *f, const char *path, int32_t ubatch)
{
    fixture_pool_start_ub(f, path, 1, ubatch, 0, 0);
    (void)st_engine_pool_step(f->pool, 0);   /* loads the model */
}

static void expect_scored(const struct fixture_got *g, int64_t n)
{
    ck_assert_msg(g->ended && g->in_order, "ended %d in order %d", g->ended, g->in_order);
    ck_assert_int_eq(g->n_pos, n);
    ck_assert(!g->has[0]);
    for (int64_t i = 1; i < n; i++) {
        ck_assert_msg(g->has[i], "position %lld has no logprob", (long long)i);
        ck_assert_msg(g->lp[i] <= 0.0f && isfinite(g->lp[i]), "lp %g", (double)g->lp[i]);
        ck_assert_int_eq(g->n_top[i], TOP);
        /* rank 1 exactly when the token is the most likely one */
        ck_assert_int_eq(g->rank[i] == 1, g->tok[i] == g->top_id[i][0] ||
                                              g->top_lp[i][0] == g->lp[i]);
        ck_assert(g->top_lp[i][0] >= g->lp[i]);
    }
}

static void expect_same(const struct fixture_got *a, const struct fixture_got *b, int64_t n,
                        double tol)
{
    for (int64_t i = 1; i < n; i++) {
        ck_assert_msg(fabs((double)a->lp[i] - (double)b->lp[i]) <= tol,
                      "position %lld: %.6f vs %.6f", (long long)i, (double)a->lp[i],
                      (double)b->lp[i]);
        ck_assert_int_eq(a->top_id[i][0], b->top_id[i][0]);
    }
}

START_TEST(test_engine_echo_scoring_equals_generation)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 7, false);
    struct fixture_pool f;
    start_cpu(&f, path, 64);
    int32_t ids[48];
    int64_t n = fixture_text_ids(f.pool, FIXTURE_STORY, ids, 40);
    struct fixture_got scored, step;
    submit_ids(f.pool, ids, n, &(struct ask){ .echo = true, .score = true, .max_tokens = 0,
                                              .force = -1 }, &scored);
    fixture_pool_drain(&f);
    expect_scored(&scored, n);
    ck_assert_int_eq(scored.finish, ST_FINISH_LENGTH);
    ck_assert_int_eq(scored.n_gen, 0);
    double sum_scored = 0, sum_steps = 0, worst = 0;
    for (int64_t i = 1; i < n; i++) {
        /* generate from t_0 .. t_{i-1}, forcing t_i */
        submit_ids(f.pool, ids, i, &(struct ask){ .max_tokens = 1, .force = ids[i] }, &step);
        fixture_pool_drain(&f);
        ck_assert_int_eq(step.n_gen, 1);
        ck_assert_int_eq(step.gen[0], ids[i]);
        double d = fabs((double)step.gen_lp - (double)scored.lp[i]);
        worst = d > worst ? d : worst;
        ck_assert_msg(d < 1e-3, "token %lld: scored %.6f, generated %.6f", (long long)i,
                      (double)scored.lp[i], (double)step.gen_lp);
        ck_assert_int_eq(step.gen_n_top, TOP);
        for (int k = 0; k < TOP; k++) {
            ck_assert_int_eq(step.gen_top_id[k], scored.top_id[i][k]);
            ck_assert(fabs((double)step.gen_top_lp[k] - (double)scored.top_lp[i][k]) < 1e-3);
        }
        sum_scored += scored.lp[i];
        sum_steps += step.gen_lp;
    }
    ck_assert_msg(fabs(sum_scored - sum_steps) < 1e-2, "sum %.5f vs %.5f", sum_scored,
                  sum_steps);
    fprintf(stderr, "echo: %lld tokens, sum %.4f, worst |scored - generated| %.2e\n",
            (long long)n, sum_scored, worst);
    fixture_pool_stop(&f);
}
END_TEST

/* The same long prompt scored at three ubatch sizes. */
START_TEST(test_engine_echo_chunked_reads_agree)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 7, false);
    static struct fixture_got g[3];
    static const int32_t ub[3] = { 7, 64, 200 };   /* 200: cut to ST_RUNNER_SCORE_ROWS */
    int32_t ids[MAXP];
    int64_t n = 0;
    for (int k = 0; k < 3; k++) {
        struct fixture_pool f;
        start_cpu(&f, path, ub[k]);
        n = fixture_text_ids(f.pool, FIXTURE_STORY, ids, 150);
        submit_ids(f.pool, ids, n, &(struct ask){ .score = true, .max_tokens = 2,
                                                  .force = -1 }, &g[k]);
        fixture_pool_drain(&f);
        expect_scored(&g[k], n);
        ck_assert(!g[k].prompt_after_token);
        ck_assert_int_eq(g[k].n_gen, 2);
        fixture_pool_stop(&f);
    }
    expect_same(&g[0], &g[1], n, 1e-3);
    expect_same(&g[0], &g[2], n, 1e-3);
    ck_assert_int_eq(g[0].gen[0], g[2].gen[0]);
}
END_TEST

/* A cached prefix: scoring takes the kept scores (test_engine_score_cache.c
 * tests them in depth); echo alone reuses it. */
START_TEST(test_engine_echo_prefix_cache)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 7, false);
    struct fixture_pool f;
    start_cpu(&f, path, 16);
    int32_t ids[64];
    int64_t n = fixture_text_ids(f.pool, FIXTURE_STORY, ids, 60);
    static struct fixture_got cold, warm, plain, echo;
    submit_ids(f.pool, ids, n, &(struct ask){ .score = true, .max_tokens = 1, .force = -1 },
               &cold);
    fixture_pool_drain(&f);
    submit_ids(f.pool, ids, n, &(struct ask){ .max_tokens = 1, .force = -1 }, &plain);
    fixture_pool_drain(&f);
    ck_assert_int_gt(plain.n_cached, 0);   /* the slot caches the prompt */
    ck_assert_int_eq(plain.n_pos, 0);      /* nothing asked: no PROMPT events */
    submit_ids(f.pool, ids, n, &(struct ask){ .score = true, .max_tokens = 1, .force = -1 },
               &warm);
    fixture_pool_drain(&f);
    ck_assert_int_eq(warm.n_cached, n - 1);   /* every position's score was kept */
    expect_scored(&warm, n);
    expect_same(&cold, &warm, n, 0.0);
    submit_ids(f.pool, ids, n, &(struct ask){ .echo = true, .max_tokens = 1, .force = -1 },
               &echo);
    fixture_pool_drain(&f);
    ck_assert_int_gt(echo.n_cached, 0);
    ck_assert_int_eq(echo.n_pos, n);
    ck_assert(echo.in_order && !echo.has[1]);
    ck_assert_uint_eq(echo.text_len, cold.text_len);
    ck_assert(memcmp(echo.text, cold.text, cold.text_len) == 0);
    fixture_pool_stop(&f);
}
END_TEST

/* ---- score.c against brute force ----------------------------------------- */

static const float *g_logits;

static int by_logit(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (g_logits[x] != g_logits[y])
        return g_logits[x] < g_logits[y] ? 1 : -1;
    return (x > y) - (x < y);
}

/* Rows of every size (odd tails, fewer tokens than alternatives), with
 * ties (integer logits) and without: top ids in order (ties: lower id),
 * rank, and the logprob against a double log-softmax. */
START_TEST(test_engine_echo_score_row_brute)
{
    srand(3);
    for (int it = 0; it < 400; it++) {
        int32_t v = 1 + rand() % (it < 200 ? 40 : 3000);
        float *l = malloc((size_t)v * sizeof(*l));
        int32_t *ix = malloc((size_t)v * sizeof(*ix));
        for (int32_t i = 0; i < v; i++) {
            l[i] = it % 2 ? (float)(rand() % 7) : (float)rand() / (float)RAND_MAX * 60.0f - 40.0f;
            ix[i] = i;
        }
        g_logits = l;
        qsort(ix, (size_t)v, sizeof(*ix), by_logit);
        int32_t k = rand() % 21, next = rand() % v;
        struct st_runner_score sc;
        st_runner_score_row(l, v, next, k, &sc);
        ck_assert_int_eq(sc.n_top, k < v ? k : v);
        for (int32_t j = 0; j < sc.n_top; j++)
            ck_assert_int_eq(sc.top_id[j], ix[j]);
        int32_t above = 0;
        for (int32_t i = 0; i < v; i++)
            above += l[i] > l[next];
        ck_assert_int_eq(sc.rank, above + 1);
        double mx = l[ix[0]], z = 0.0;
        for (int32_t i = 0; i < v; i++)
            z += exp((double)l[i] - mx);
        double want = (double)l[next] - (log(z) + mx);
        ck_assert_msg(fabs((double)sc.logprob - want) < 1e-5, "%g vs %g", (double)sc.logprob,
                      want);
        if (sc.n_top > 0)
            ck_assert(fabs((double)sc.top_lp[0] - ((double)l[ix[0]] - (log(z) + mx))) < 1e-5);
        free(l);
        free(ix);
    }
}
END_TEST

/* ---- the sim ------------------------------------------------------------ */

static void sim_run(int32_t ubatch, int64_t words, const struct ask *a, struct fixture_got *g)
{
    struct fixture f;
    fx_defaults(&f);
    f.pcfg.ubatch = ubatch;
    f.pcfg.sim.tokens = 3;
    ck_assert(fx_start(&f));
    struct st_request *req = st_request_new();
    memset(g, 0, sizeof(*g));
    g->in_order = true;
    req->prompt = fx_words(words);
    req->params.max_tokens = a->max_tokens;
    req->params.echo = a->echo;
    req->params.prompt_logprobs = a->score;
    req->params.prompt_top_logprobs = 3;
    req->emit = fixture_got_emit;
    req->emit_ctx = g;
    struct st_err err = { 0 };
    ck_assert(st_engine_pool_submit(f.pool, req, &err) == ST_OK);
    fx_run_idle(&f);
    st_request_unref(req);
    fx_stop(&f);
}

/* params.progress (return_progress): PROGRESS events as the prompt is read. */
struct progress_got {
    int64_t read[64];      /* n_read of each PROGRESS event */
    int     n;
    int64_t n_prompt, n_cached;
    int     n_tokens;      /* TOKEN events */
    bool    after_token;   /* a PROGRESS came after a TOKEN */
    bool    ended;
};

static void progress_emit(void *ctx, const struct st_event *ev)
{
    struct progress_got *g = ctx;
    if (ev->kind == ST_EVENT_PROGRESS) {
        g->after_token |= g->n_tokens > 0;
        if (g->n < 64)
            g->read[g->n] = ev->n_read;
        g->n++;
        g->n_prompt = ev->n_prompt;
        g->n_cached = ev->n_cached;
    } else if (ev->kind == ST_EVENT_TOKEN) {
        g->n_tokens++;
    } else if (ev->kind == ST_EVENT_END) {
        g->ended = true;
    }
}

static void progress_run(struct fixture *f, bool progress, int64_t words, struct progress_got *g)
{
    struct st_request *req = st_request_new();
    memset(g, 0, sizeof(*g));
    req->prompt = fx_words(words);
    req->params.max_tokens = 2;
    req->params.progress = progress;
    req->emit = progress_emit;
    req->emit_ctx = g;
    struct st_err err = { 0 };
    ck_assert(st_engine_pool_submit(f->pool, req, &err) == ST_OK);
    fx_run_idle(f);
    st_request_unref(req);
}

START_TEST(test_engine_progress_per_chunk)
{
    struct fixture f;
    struct progress_got g;
    fx_defaults(&f);
    f.pcfg.ubatch = 4;
    f.pcfg.sim.tokens = 3;
    ck_assert(fx_start(&f));
    /* 10 words in chunks of 4: nothing read, then 4, 8, 10; all before the first token */
    progress_run(&f, true, 10, &g);
    ck_assert(g.ended && !g.after_token);
    ck_assert_int_eq(g.n_tokens, 2);
    ck_assert_int_eq(g.n_prompt, 10);
    ck_assert_int_eq(g.n_cached, 0);
    ck_assert_int_eq(g.n, 4);
    const int64_t want[4] = { 0, 4, 8, 10 };
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(g.read[i], want[i]);
    /* the same prompt again: the cached prefix is the first report's, and
     * only the rest is read */
    progress_run(&f, true, 10, &g);
    ck_assert(g.ended && !g.after_token);
    ck_assert_int_gt(g.n_cached, 0);
    ck_assert_int_eq(g.read[0], g.n_cached);
    ck_assert_int_eq(g.read[g.n - 1], 10);
    ck_assert_int_eq(g.n, 1 + (int)((10 - g.n_cached + 3) / 4));
    /* not asked: none */
    progress_run(&f, false, 10, &g);
    ck_assert(g.ended);
    ck_assert_int_eq(g.n, 0);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_echo_sim_numbers)
{
    static struct fixture_got g;
    static const int32_t ub[2] = { 5, 512 };   /* 512: cut to ST_RUNNER_SCORE_ROWS */
    for (int k = 0; k < 2; k++) {
        sim_run(ub[k], 150, &(struct ask){ .score = true, .max_tokens = 2, .force = -1 }, &g);
        ck_assert(g.ended && g.in_order && !g.prompt_after_token);
        ck_assert_int_eq(g.n_pos, 150);
        ck_assert_int_eq(g.n_gen, 2);
        ck_assert(!g.has[0]);
        for (int64_t i = 1; i < 150; i++) {
            int32_t m = g.tok[i] % 8;
            ck_assert(g.has[i]);
            ck_assert(fabs((double)g.lp[i] - (-0.75 - 0.5 * m)) < 1e-6);
            ck_assert_int_eq(g.rank[i], m + 2);
            ck_assert_int_eq(g.n_top[i], 3);
            ck_assert_int_eq(g.top_id[i][2], ST_SIM_GEN_BASE + 3);
            ck_assert(fabs((double)g.top_lp[i][1] + 1.0) < 1e-6);
        }
        ck_assert_uint_eq(g.text_len, strlen(g.text));
    }
    /* echo alone, max_tokens 0: texts, no logprobs, no tokens, "length" */
    sim_run(4, 10, &(struct ask){ .echo = true, .max_tokens = 0, .force = -1 }, &g);
    ck_assert(g.ended && g.in_order);
    ck_assert_int_eq(g.n_pos, 10);
    ck_assert_int_eq(g.n_gen, 0);
    ck_assert_int_eq(g.finish, ST_FINISH_LENGTH);
    ck_assert_int_eq(g.n_generated, 0);
    for (int i = 0; i < 10; i++)
        ck_assert(!g.has[i]);
    ck_assert_uint_gt(g.text_len, 0);
}
END_TEST

/* One step of a scored READ on slot 0 (with its sampling row) and a DECODE
 * on slot 1, run with the READ scored on the backend and again unscored
 * from the same caches: the DECODE's and the READ's sampling logits are
 * the same bits, so the decoding slot draws the same token; the scores are
 * scored on the backend; the last row's score is st_runner_score_row's
 * over the sampling row read back. */
static void mixed_step(struct st_runner *r, const int32_t *ids, bool score,
                       struct st_runner_score *sc, float *dec, float *last, int32_t nv)
{
    st_runner_kv_truncate(r, 0, 0);
    st_runner_kv_truncate(r, 1, 4);
    struct st_runner_seq q[2] = {
        { .kind = ST_SEQ_READ, .slot = 0, .tokens = ids, .n_tokens = 12, .pos = 0,
          .sample = true, .score = score, .score_next = ids[12], .score_top = TOP,
          .scores = sc },
        { .kind = ST_SEQ_DECODE, .slot = 1, .tokens = ids + 20, .n_tokens = 1, .pos = 4,
          .sample = true },
    };
    struct st_runner_row rows[2];
    struct st_runner_out out = { .rows = rows };
    struct st_err err = { 0 };
    ck_assert_msg(st_runner_forward(r, &(struct st_runner_batch){ q, 2 }, &out, &err) == ST_OK,
                  "%s", err.msg);
    ck_assert_ptr_nonnull(rows[0].logits);
    ck_assert_ptr_nonnull(rows[1].logits);
    memcpy(last, rows[0].logits, (size_t)nv * sizeof(float));
    memcpy(dec, rows[1].logits, (size_t)nv * sizeof(float));
}

START_TEST(test_engine_echo_mixed_step_same_tokens)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 7, false);
    struct st_runner *r = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_runner_model_new(path, "cpu", -1, 1, 2, 64, 16, &r, &err) == ST_OK, "%s",
                  err.msg);
    ck_assert_msg(st_runner_load(r, NULL, NULL, NULL, &err) == ST_OK, "%s", err.msg);
    int32_t nv = st_runner_n_vocab(r), ids[24];
    for (int i = 0; i < 24; i++)
        ids[i] = (i * 37 + 11) % nv;
    /* slot 1 holds 4 tokens for the DECODE at position 4 */
    struct st_runner_seq fill = { .kind = ST_SEQ_READ, .slot = 1, .tokens = ids + 16,
                                  .n_tokens = 4, .pos = 0 };
    struct st_runner_row row;
    struct st_runner_out out = { .rows = &row };
    ck_assert(st_runner_forward(r, &(struct st_runner_batch){ &fill, 1 }, &out, &err) == ST_OK);
    float *dec[2], *last[2];
    for (int i = 0; i < 2; i++) {
        dec[i] = malloc((size_t)nv * sizeof(float));
        last[i] = malloc((size_t)nv * sizeof(float));
    }
    struct st_runner_score sc[12];
    memset(sc, 0, sizeof(sc));
    mixed_step(r, ids, true, sc, dec[0], last[0], nv);
    mixed_step(r, ids, false, NULL, dec[1], last[1], nv);
    ck_assert(memcmp(dec[0], dec[1], (size_t)nv * sizeof(float)) == 0);
    ck_assert(memcmp(last[0], last[1], (size_t)nv * sizeof(float)) == 0);
    /* the last row's score is the host scoring of the sampling row */
    struct st_runner_score want;
    st_runner_score_row(last[1], nv, ids[12], TOP, &want);
    ck_assert_float_eq(sc[11].logprob, want.logprob);
    ck_assert_int_eq(sc[11].rank, want.rank);
    ck_assert_int_eq(sc[11].n_top, TOP);
    for (int j = 0; j < TOP; j++) {
        ck_assert_int_eq(sc[11].top_id[j], want.top_id[j]);
        ck_assert_float_eq(sc[11].top_lp[j], want.top_lp[j]);
    }
    for (int j = 0; j < 11; j++)
        ck_assert(sc[j].rank >= 1 && sc[j].rank <= nv && sc[j].logprob <= 0.0f);
    for (int i = 0; i < 2; i++) {
        free(dec[i]);
        free(last[i]);
    }
    st_runner_free(r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_echo");
    TCase *tc = tcase_create("cpu");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_engine_echo_scoring_equals_generation);
    tcase_add_test(tc, test_engine_echo_chunked_reads_agree);
    tcase_add_test(tc, test_engine_echo_prefix_cache);
    tcase_add_test(tc, test_engine_echo_mixed_step_same_tokens);
    suite_add_tcase(s, tc);
    TCase *ts = tcase_create("sim");
    tcase_add_test(ts, test_engine_echo_sim_numbers);
    tcase_add_test(ts, test_engine_progress_per_chunk);
    tcase_add_test(ts, test_engine_echo_score_row_brute);
    suite_add_tcase(s, ts);
    return s;
}

int main(void)
{
    return support_run_suite(suite(), CK_FORK);
}
