/* test_engine_prefix.c -- prefix reuse (issue 5 item 4, docs/BATCHING.md
 * "Prefix reuse"): a new request takes the free slot whose KV shares the
 * longest prefix with its prompt and reads only the rest.
 *
 * Sim part, on a manual clock (prompt 1000 tok/s, decode 10 tok/s per slot,
 * 512-token chunks): the read is shorter in time and in the usage counts,
 * the right slot is chosen, every slot keeps its own cache, generated
 * tokens are part of it, a cancelled read keeps what it read, a model swap
 * voids it, give-way boundaries count the reused tokens. Model part: on
 * the CPU model runner with a make-model file, greedy output is the same
 * whether a prompt's prefix came from the cache or was read cold (the
 * correctness that matters). Also the scheduler's slot-choosing admit.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "model_fixture.h"
#include "prefix_fixture.h"
#include "support.h"

/* ---- sim: the read gets shorter ------------------------------------------ */

START_TEST(test_engine_prefix_same_prompt_reads_one_token)
{
    struct fixture f;
    struct prec a, b;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    char *text = fx_words(1000);
    struct st_request *ra = submit(&f, "a", strdup(text), 2, &a);
    fx_run_idle(&f);
    /* a: 1000 tokens cold (1.0 s), one decode step (0.1 s) */
    ck_assert_int_eq(a.r.first_ns, SEC(1.0));
    ck_assert_int_eq(a.r.end_ns, SEC(1.1));
    ck_assert_int_eq(a.n_cached_end, 0);
    /* The idle slot keeps prompt + the one token fed back (tok1). */
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 1001);

    struct st_request *rb = submit(&f, "b", text, 2, &b);
    fx_run_idle(&f);
    /* b reads its last prompt token only: 1 ms, not 1 s */
    ck_assert_int_eq(b.r.first_ns - b.submit_ns, SEC(0.001));
    ck_assert_int_eq(b.n_cached_token, 999);
    ck_assert_int_eq(b.n_cached_end, 999);
    ck_assert_int_eq(b.r.n_prompt, 1000);
    ck_assert_int_eq(b.r.n_generated, 2);
    ck_assert_str_eq(b.r.text, a.r.text);   /* "tok1 tok2" both */

    struct st_pool_stats st = stats(&f);
    ck_assert_uint_eq(st.cached_tokens, 999);
    ck_assert_uint_eq(st.prompt_tokens, 1001);   /* read: 1000 + 1 */
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

/* "cache_prompt": false (req->no_prompt_cache): the same prompt again is
 * read whole (1 s, n_cached 0) and is not steered to the slot holding it:
 * it takes the empty slot; what it leaves is cached for later requests. */
START_TEST(test_engine_prefix_no_prompt_cache_opts_out)
{
    struct fixture f;
    struct prec a, b, c;
    fx_defaults(&f);
    f.pcfg.model.parallel = 2;
    ck_assert(fx_start(&f));
    char *text = fx_words(1000);
    struct st_request *ra = submit(&f, "a", strdup(text), 2, &a);
    fx_run_idle(&f);
    ck_assert_int_eq(a.slot, 0);

    struct st_request *rb = submit_opts(&f, "b", strdup(text), 2,
                                        (struct prec_opts){ .no_cache = true }, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(b.slot, 1);                          /* not steered to slot 0 */
    ck_assert_int_eq(b.n_cached_end, 0);
    ck_assert_int_eq(b.r.first_ns - b.submit_ns, SEC(1.0));   /* the whole prompt read */
    ck_assert_str_eq(b.r.text, a.r.text);
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 1001);   /* a's cache untouched */
    ck_assert_int_eq(slot_view(&f, 1).n_cached, 1001);   /* b's KV kept as usual */

    struct st_request *rc = submit(&f, "c", text, 2, &c);   /* default: reuse */
    fx_run_idle(&f);
    ck_assert_int_eq(c.n_cached_end, 999);
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rc);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_prefix_picks_the_slot_holding_the_prefix)
{
    /* Slots 0 and 1 hold x and y; slot 2 is empty. z shares 600 of y's
     * 1000 words: it goes to slot 1 (not slot 0, offered first, nor the
     * empty slot 2) and reads 400 tokens. w shares nothing: the empty slot. */
    struct fixture f;
    struct prec x, y, z, w;
    fx_defaults(&f);
    f.pcfg.model.parallel = 3;
    ck_assert(fx_start(&f));
    char *ytext = words("y", 0, 1000);
    struct st_request *rx = submit(&f, "x", words("x", 0, 1000), 1, &x);
    struct st_request *ry = submit(&f, "y", strdup(ytext), 1, &y);
    fx_run_idle(&f);
    ck_assert_int_eq(x.slot, 0);
    ck_assert_int_eq(y.slot, 1);

    char *head = words("y", 0, 600), *tail = words("z", 0, 400);
    struct st_request *rz = submit(&f, "z", join(head, tail), 1, &z);
    fx_run_idle(&f);
    ck_assert_int_eq(z.slot, 1);
    ck_assert_int_eq(z.n_cached_end, 600);
    ck_assert_int_eq(z.r.first_ns - z.submit_ns, SEC(0.4));

    struct st_request *rw = submit(&f, "w", words("w", 0, 10), 1, &w);
    fx_run_idle(&f);
    ck_assert_int_eq(w.slot, 2);
    ck_assert_int_eq(w.n_cached_end, 0);
    /* x's cache in slot 0 was never touched */
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 1000);

    free(ytext);
    free(head);
    free(tail);
    st_request_unref(rx);
    st_request_unref(ry);
    st_request_unref(rz);
    st_request_unref(rw);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_prefix_np4_each_slot_keeps_its_own)
{
    /* Four prompts on -np 4, then the same four again in reverse order:
     * each finds its own slot and reads one token. */
    struct fixture f;
    struct prec p[4], q[4];
    struct st_request *rp[4], *rq[4];
    char *texts[4];
    const char *tags[4] = { "a", "b", "c", "d" };
    fx_defaults(&f);
    f.pcfg.model.parallel = 4;
    ck_assert(fx_start(&f));
    for (int i = 0; i < 4; i++) {
        texts[i] = words(tags[i], 0, 100 + 50 * i);
        char id[16];   /* room for any int (-Wformat-truncation, from -O1) */
        snprintf(id, sizeof(id), "p%d", i);
        rp[i] = submit(&f, id, strdup(texts[i]), 3, &p[i]);
    }
    fx_run_idle(&f);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(p[i].slot, i);
    for (int i = 3; i >= 0; i--) {
        char id[16];
        snprintf(id, sizeof(id), "q%d", i);
        rq[i] = submit(&f, id, texts[i], 3, &q[i]);
    }
    fx_run_idle(&f);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(q[i].slot, i);
        ck_assert_int_eq(q[i].n_cached_end, 100 + 50 * i - 1);
        ck_assert_str_eq(q[i].r.text, p[i].r.text);
    }
    struct st_pool_stats st = stats(&f);
    ck_assert_uint_eq(st.cached_tokens, 99 + 149 + 199 + 249);
    for (int i = 0; i < 4; i++) {
        st_request_unref(rp[i]);
        st_request_unref(rq[i]);
    }
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_prefix_generated_tokens_are_cached)
{
    /* A next turn: prompt + the reply + new words. The KV holds the prompt
     * and every generated token that was fed back (not the last one). */
    struct fixture f;
    struct prec a, b;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    char *prompt = words("q", 0, 200);
    struct st_request *ra = submit(&f, "a", strdup(prompt), 3, &a);
    fx_run_idle(&f);
    ck_assert_str_eq(a.r.text, "tok1 tok2 tok3");
    char *turn = join(prompt, "tok1 tok2 tok3 more words here");
    struct st_request *rb = submit(&f, "b", turn, 1, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(b.n_cached_end, 202);   /* prompt + tok1 + tok2 */
    ck_assert_int_eq(b.r.first_ns - b.submit_ns, SEC(0.004));   /* tok3 + 3 new words */
    free(prompt);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_prefix_cancelled_read_keeps_what_it_read)
{
    struct fixture f;
    struct prec a, b;
    fx_defaults(&f);
    ck_assert(fx_start(&f));
    char *text = fx_words(1000);
    struct st_request *ra = submit(&f, "a", strdup(text), 2, &a);
    ck_assert(st_engine_pool_step(f.pool, 0));   /* reads 512 */
    st_engine_pool_cancel(f.pool, ra);
    fx_run_idle(&f);
    ck_assert(a.r.ended);
    ck_assert_int_eq(a.r.finish, ST_FINISH_CANCELLED);
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 512);
    struct st_request *rb = submit(&f, "b", text, 1, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(b.n_cached_end, 512);
    ck_assert_int_eq(b.r.first_ns - b.submit_ns, SEC(0.488));
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_prefix_swap_voids_the_cache)
{
    /* Model m0, then m1 (a swap), then m0 again: m0's KV went with the
     * unload, so the same prompt is read in full. */
    struct fixture f;
    struct prec a, b, c;
    fx_defaults(&f);
    struct st_model_config m1 = f.pcfg.model;
    m1.name = (char *)"m1";
    f.pcfg.model.name = (char *)"m0";
    f.pcfg.extra_models = &m1;
    f.pcfg.n_extra_models = 1;
    ck_assert(fx_start(&f));
    char *text = fx_words(100);
    struct st_request *ra = submit(&f, "a", strdup(text), 1, &a);
    fx_run_idle(&f);
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 100);
    struct st_request *rb = submit_opts(&f, "b", strdup(text), 1,   /* for m1 */
                                        (struct prec_opts){ .model = 1 }, &b);
    fx_run_idle(&f);
    ck_assert(b.r.ended);
    ck_assert_int_eq(b.n_cached_end, 0);   /* another model: nothing to reuse */
    struct st_request *rc = submit(&f, "c", text, 1, &c);
    fx_run_idle(&f);
    ck_assert(c.r.ended);
    ck_assert_int_eq(c.n_cached_end, 0);
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rc);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_prefix_give_way_counts_reused_tokens)
{
    /* give-way every 256 tokens, 128-token chunks. b = a's 1000 words + 1000
     * new ones: 1000 are reused, so b's read stands at 1000 from the start,
     * and its first chunk (to 1128) ends past a boundary: a higher priority
     * c that arrived meanwhile takes the lines right after that chunk. */
    struct fixture f;
    struct prec a, b, c;
    fx_defaults(&f);
    f.pcfg.model.parallel = 2;
    f.pcfg.ubatch = 128;
    f.scfg.give_way_tokens = 256;
    ck_assert(fx_start(&f));
    char *head = words("h", 0, 1000), *tail = words("t", 0, 1000);
    struct st_request *ra = submit(&f, "a", strdup(head), 1, &a);
    fx_run_idle(&f);
    int64_t t0 = st_clock_now(&f.clk.clock);
    struct st_request *rb = submit(&f, "b", join(head, tail), 1, &b);
    ck_assert(st_engine_pool_step(f.pool, 0));   /* b: tokens 1000..1127 */
    ck_assert_int_eq(st_clock_now(&f.clk.clock), t0 + SEC(0.128));
    struct st_request *rc = submit_opts(&f, "c", words("c", 0, 10), 1,
                                        (struct prec_opts){ .prio = 5 }, &c);
    fx_run_idle(&f);
    ck_assert_int_eq(b.n_cached_end, 1000);
    ck_assert_int_eq(b.r.yields, 1);
    ck_assert_int_eq(c.r.first_ns, t0 + SEC(0.128 + 0.010));
    ck_assert(c.r.first_ns < b.r.first_ns);
    /* b still read only its 1000 new tokens */
    struct st_pool_stats st = stats(&f);
    ck_assert_uint_eq(st.prompt_tokens, 1000 + 1000 + 10);
    free(head);
    free(tail);
    st_request_unref(ra);
    st_request_unref(rb);
    st_request_unref(rc);
    fx_stop(&f);
}
END_TEST

/* ---- the scheduler's slot-choosing admit ----------------------------------- */

START_TEST(test_engine_prefix_sched_admit_to_slot)
{
    struct st_clock_manual clk;
    struct st_sched_job j[3];
    struct st_sched *s = fx_sched_with_jobs(&clk, 3, j, 3);
    int32_t want = 2;
    ck_assert_ptr_eq(st_sched_admit_to(s, 0, 0, fx_choose_const, &want), &j[0]);
    ck_assert_int_eq(j[0].slot, 2);
    want = 2;   /* taken now: the offered slot is used instead */
    ck_assert_ptr_eq(st_sched_admit_to(s, 0, 1, fx_choose_const, &want), &j[1]);
    ck_assert_int_eq(j[1].slot, 1);
    want = 7;   /* no such slot */
    ck_assert_ptr_eq(st_sched_admit_to(s, 0, 0, fx_choose_const, &want), &j[2]);
    ck_assert_int_eq(j[2].slot, 0);
    struct st_activity act[3];
    ck_assert_uint_eq(st_sched_activity(s, act, 3), 3);
    ck_assert_int_eq(act[0].slot, 2);
    for (int i = 0; i < 3; i++)
        st_sched_finish(s, &j[i], ST_OUTCOME_COMPLETED, NULL);
    st_sched_free(s);
}
END_TEST

/* ---- the CPU model runner: cached or cold, the same tokens ---------------- */

#define N_GEN 10

static char dir[256], path[320];

static void model_setup(void)
{
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "small", "q8_0", 11, false);
}

static void model_teardown(void) { support_rmtree(dir); }

struct got {
    int32_t tokens[N_GEN];
    int     n;
    bool    ended;
    int64_t n_cached;
    int32_t slot;
    struct st_request *req;
};

static void got_event(void *ctx, const struct st_event *ev)
{
    struct got *g = ctx;
    if (ev->kind == ST_EVENT_TOKEN) {
        if (g->n == 0)
            g->slot = g->req->job.slot;
        if (g->n < N_GEN)
            g->tokens[g->n++] = ev->token;
        return;
    }
    g->ended = true;
    g->n_cached = ev->n_cached;
}

struct mpool {
    struct st_clock_manual clk;
    struct st_sched *sched;
    struct st_engine_pool *pool;
};

static void mpool_start(struct mpool *m, int32_t n_slots)
{
    st_clock_manual_init(&m->clk, 0);
    struct st_sched_config sc;
    st_sched_config_defaults(&sc);
    sc.batch = true;
    sc.log_dispatch = false;
    struct st_pool_config pc;
    st_pool_config_defaults(&pc);
    pc.model.name = (char *)"small";
    pc.model.path = path;
    pc.model.backend = ST_BACKEND_CPU;
    pc.model.parallel = n_slots;
    pc.model.ctx_size = 256;
    pc.threads = 2;
    pc.ubatch = 16;   /* several chunks per read: a reused prefix ends mid-chunk */
    struct st_err err = { 0 };
    ck_assert(st_sched_new(&sc, &m->clk.clock, &m->sched, &err) == ST_OK);
    ck_assert_msg(st_engine_pool_new(&pc, m->sched, &m->clk.clock, &m->pool, &err) == ST_OK,
                  "%s", err.msg);
}

static void mpool_stop(struct mpool *m)
{
    st_engine_pool_free(m->pool);
    st_sched_free(m->sched);
}

/* Run 'text' greedily (N_GEN tokens, ignore_eos) to its end on 'm'. */
static void mrun(struct mpool *m, const char *text, struct got *g)
{
    memset(g, 0, sizeof(*g));
    g->slot = -1;
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "r");
    req->prompt = strdup(text);
    req->params.temperature = 0.0f;
    req->params.max_tokens = N_GEN;
    req->params.ignore_eos = true;
    req->emit = got_event;
    req->emit_ctx = g;
    g->req = req;
    struct st_err err = { 0 };
    ck_assert_msg(st_engine_pool_submit(m->pool, req, &err) == ST_OK, "%s", err.msg);
    for (int steps = 0; steps < 10000 && st_engine_pool_step(m->pool, 0); steps++)
        ;
    ck_assert(g->ended);
    ck_assert_int_eq(g->n, N_GEN);
    st_request_unref(req);
}

/* The same text on a fresh pool: nothing cached. */
static void cold(const char *text, struct got *g)
{
    struct mpool m;
    mpool_start(&m, 1);
    mrun(&m, text, g);
    ck_assert_int_eq(g->n_cached, 0);
    mpool_stop(&m);
}

static void same_tokens(const struct got *a, const struct got *b)
{
    for (int i = 0; i < N_GEN; i++)
        ck_assert_msg(a->tokens[i] == b->tokens[i], "token %d: %d vs %d", i,
                      (int)a->tokens[i], (int)b->tokens[i]);
}

static const char *const P = "The quick brown fox jumps over the lazy dog while the cat "
                             "sleeps by the warm fire and the rain falls on the roof";
static const char *const P_MORE = " and then the dog wakes up, barks twice, and runs out into "
                                  "the garden";
static const char *const P_OTHER = "The quick brown fox sat down on a chair in the kitchen";

START_TEST(test_engine_prefix_model_greedy_same_cached_or_cold)
{
    char longer[512], other_tail[512];
    snprintf(longer, sizeof(longer), "%s%s", P, P_MORE);
    snprintf(other_tail, sizeof(other_tail), "%s%s", P_OTHER, P_MORE);
    struct got cold_p, cold_long, cold_other, g;
    cold(P, &cold_p);
    cold(longer, &cold_long);
    cold(P_OTHER, &cold_other);

    struct mpool m;
    mpool_start(&m, 1);
    mrun(&m, P, &g);                 /* fills the slot */
    same_tokens(&g, &cold_p);
    mrun(&m, P, &g);                 /* all but one prompt token cached */
    ck_assert(g.n_cached > 10);
    same_tokens(&g, &cold_p);
    mrun(&m, longer, &g);            /* P cached, the rest read */
    ck_assert(g.n_cached > 10);
    same_tokens(&g, &cold_long);
    /* shares a few words, then diverges: the slot's KV beyond the common
     * prefix (longer's tail and its generated tokens) must not be seen */
    mrun(&m, P_OTHER, &g);
    ck_assert(g.n_cached > 0);
    same_tokens(&g, &cold_other);
    mrun(&m, longer, &g);
    same_tokens(&g, &cold_long);
    mpool_stop(&m);
}
END_TEST

START_TEST(test_engine_prefix_model_np2_slots_keep_their_own)
{
    /* Two slots, two prompts, alternating: each request finds its prompt in
     * its own slot and its tokens are the cold ones. */
    char longer[512];
    snprintf(longer, sizeof(longer), "%s%s", P, P_MORE);
    struct got cold_p, cold_other, g1, g2;
    cold(P, &cold_p);
    cold(P_OTHER, &cold_other);
    struct mpool m;
    mpool_start(&m, 2);
    mrun(&m, P, &g1);
    ck_assert_int_eq(g1.slot, 0);
    /* P_OTHER shares only "The quick brown fox" with slot 0: too little to
     * throw P's cache away for while slot 1 is empty */
    mrun(&m, P_OTHER, &g2);
    ck_assert_int_eq(g2.slot, 1);
    ck_assert_int_eq(g2.n_cached, 0);
    for (int round = 0; round < 2; round++) {
        mrun(&m, P, &g1);
        mrun(&m, P_OTHER, &g2);
        ck_assert_int_eq(g1.slot, 0);
        ck_assert_int_eq(g2.slot, 1);
        same_tokens(&g1, &cold_p);
        same_tokens(&g2, &cold_other);
        ck_assert(g1.n_cached > 10 && g2.n_cached > 5);
    }
    mpool_stop(&m);
}
END_TEST

/* Run token ids (not text) on 'm'; *g as mrun. */
static void mrun_ids(struct mpool *m, const int32_t *ids, int64_t n, struct got *g)
{
    memset(g, 0, sizeof(*g));
    g->slot = -1;
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "t");
    req->tokens = malloc((size_t)n * sizeof(*ids));
    memcpy(req->tokens, ids, (size_t)n * sizeof(*ids));
    req->n_tokens = n;
    req->params.temperature = 0.0f;
    req->params.max_tokens = N_GEN;
    req->params.ignore_eos = true;
    req->emit = got_event;
    req->emit_ctx = g;
    g->req = req;
    struct st_err err = { 0 };
    ck_assert_msg(st_engine_pool_submit(m->pool, req, &err) == ST_OK, "%s", err.msg);
    for (int steps = 0; steps < 10000 && st_engine_pool_step(m->pool, 0); steps++)
        ;
    ck_assert(g->ended);
    ck_assert_int_eq(g->n, N_GEN);
    st_request_unref(req);
}

START_TEST(test_engine_prefix_model_next_turn_reuses_generated_tokens)
{
    /* turn 2 = P's ids + the reply's ids + more: the KV of the reply's fed
     * tokens (all but the last) is reused, and the output is the cold one. */
    struct mpool m;
    mpool_start(&m, 1);
    int32_t *p_ids = NULL, *more_ids = NULL;
    size_t n_p = 0, n_more = 0;
    struct st_err err = { 0 };
    ck_assert(st_engine_pool_tokenize(m.pool, 0, P, strlen(P), true, true, &p_ids, &n_p,
                                      &err) == ST_OK);
    ck_assert(st_engine_pool_tokenize(m.pool, 0, P_MORE, strlen(P_MORE), false, true,
                                      &more_ids, &n_more, &err) == ST_OK);
    struct got g1, g2, cold2;
    mrun_ids(&m, p_ids, (int64_t)n_p, &g1);
    int32_t turn[256];
    int64_t n = 0;
    for (size_t i = 0; i < n_p; i++)
        turn[n++] = p_ids[i];
    for (int i = 0; i < N_GEN; i++)
        turn[n++] = g1.tokens[i];
    for (size_t i = 0; i < n_more; i++)
        turn[n++] = more_ids[i];
    mrun_ids(&m, turn, n, &g2);
    ck_assert_int_eq(g2.n_cached, (int64_t)n_p + N_GEN - 1);
    mpool_stop(&m);

    mpool_start(&m, 1);
    mrun_ids(&m, turn, n, &cold2);
    ck_assert_int_eq(cold2.n_cached, 0);
    same_tokens(&g2, &cold2);
    mpool_stop(&m);
    free(p_ids);
    free(more_ids);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_prefix");
    TCase *t = tcase_create("sim");
    tcase_add_test(t, test_engine_prefix_same_prompt_reads_one_token);
    tcase_add_test(t, test_engine_prefix_picks_the_slot_holding_the_prefix);
    tcase_add_test(t, test_engine_prefix_no_prompt_cache_opts_out);
    tcase_add_test(t, test_engine_prefix_np4_each_slot_keeps_its_own);
    tcase_add_test(t, test_engine_prefix_generated_tokens_are_cached);
    tcase_add_test(t, test_engine_prefix_cancelled_read_keeps_what_it_read);
    tcase_add_test(t, test_engine_prefix_swap_voids_the_cache);
    tcase_add_test(t, test_engine_prefix_give_way_counts_reused_tokens);
    tcase_add_test(t, test_engine_prefix_sched_admit_to_slot);
    suite_add_tcase(s, t);
    TCase *mt = tcase_create("model");
    tcase_add_checked_fixture(mt, model_setup, model_teardown);
    tcase_set_timeout(mt, 300);
    tcase_add_test(mt, test_engine_prefix_model_greedy_same_cached_or_cold);
    tcase_add_test(mt, test_engine_prefix_model_np2_slots_keep_their_own);
    tcase_add_test(mt, test_engine_prefix_model_next_turn_reuses_generated_tokens);
    suite_add_tcase(s, mt);
    return s;
}

int main(void)
{
    return support_run_suite(suite(), CK_NOFORK);
}
