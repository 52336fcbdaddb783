/* test_engine_prefix_copy.c -- prefix sharing across slots (src/engine/
 * prefix.c "copy", docs/BATCHING.md "Prefix reuse"): a request whose prompt
 * prefix lives in another slot's KV, busy or free, gets those rows copied
 * into its own slot (runner kv_copy) and reads only the rest.
 *
 * Sim part, on a manual clock (prompt 1000 tok/s, decode 10 tok/s, 512-token
 * chunks; a copied token costs 1/100 of a read one): the copy from a busy
 * slot and from a free slot that is not chosen, shows in the time to first
 * token, n_cached, the pool's cached/copied counters; the threshold
 * (ST_PREFIX_COPY_MIN) holds; cache_prompt false copies nothing; a scored
 * request takes the kept prompt scores along; a request admitted while the
 * shared prefix is still being read copies it when it gets the lines.
 * Model part (CPU model runner, make-model files): greedy output after a
 * copy is the cold one, token for token, with and without an MTP layer,
 * into a slot whose stale KV held another prompt; lm-eval's multiple
 * choice on four slots at once gives the cold scores bit for bit; random
 * traffic with cancellations (no drafts, MTP, n-gram) gives every request
 * that finished its cold output.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "engine/pool.h"
#include "model_fixture.h"
#include "prefix_fixture.h"
#include "support.h"

/* ---- sim helpers (the rest: prefix_fixture.h) ------------------------------ */

/* Step until request p has its first token (it decodes then). */
static void run_to_first_token(struct fixture *f, const struct prec *p)
{
    for (int i = 0; i < 1000 && p->r.first_ns < 0; i++)
        ck_assert(st_engine_pool_step(f->pool, 0));
    ck_assert(p->r.first_ns >= 0);
}

/* Two slots; the fixture's defaults otherwise. */
static void start2(struct fixture *f)
{
    fx_defaults(f);
    f->pcfg.model.parallel = 2;
    ck_assert(fx_start(f));
}

/* start2, then request a (n_shared shared words + 100 of its own, scored
 * or not) until it decodes in slot 0: the busy source of a copy. */
static struct st_request *start_busy(struct fixture *f, int n_shared, int32_t max_tokens,
                                     bool scored, struct prec *a)
{
    start2(f);
    struct st_request *ra = submit_opts(f, "a", shared_then(n_shared, "a", 100), max_tokens,
                                        (struct prec_opts){ .scored = scored }, a);
    run_to_first_token(f, a);
    return ra;
}

/* ---- sim: from a busy slot -------------------------------------------------- */

START_TEST(test_engine_prefix_copy_from_busy_slot)
{
    /* a (600 shared + 100 own words) decodes in slot 0 for a long while; b
     * (the same 600 + 100 others) takes slot 1 and copies a's 600. */
    struct fixture f;
    struct prec a, b;
    struct st_request *ra = start_busy(&f, 600, 50, false, &a);
    struct st_request *rb = submit(&f, "b", shared_then(600, "b", 100), 2, &b);
    ck_assert(st_engine_pool_step(f.pool, 0));   /* b: 100 read, 600 copied; a decodes */
    /* read 100 (0.1 s) + a's decode (0.1 s) + 600 copied (600 / 100 ms = 6 ms) */
    ck_assert_int_eq(b.r.first_ns - b.submit_ns, SEC(0.206));
    fx_run_idle(&f);
    ck_assert(a.r.ended && b.r.ended);
    ck_assert_int_eq(b.slot, 1);
    ck_assert_int_eq(b.n_cached_end, 600);
    ck_assert_int_eq(a.n_cached_end, 0);
    ck_assert_int_eq(b.r.n_generated, 2);
    struct st_pool_stats st = stats(&f);
    ck_assert_uint_eq(st.cached_tokens, 600);
    ck_assert_uint_eq(st.copied_tokens, 600);
    ck_assert_uint_eq(st.prompt_tokens, 700 + 100);   /* a whole, b its own part */
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

/* ---- sim: from a free slot not chosen ----------------------------------------- */

START_TEST(test_engine_prefix_copy_from_free_slot_not_chosen)
{
    /* Slot 0 keeps a: 600 shared + 1400 own. b shares 600 of its 1300: too
     * little to take slot 0 (it would throw 1400 tokens away) while slot 1
     * is empty, so b goes to slot 1 and copies the 600 from slot 0, which
     * keeps all it had. */
    struct fixture f;
    struct prec a, b;
    start2(&f);
    struct st_request *ra = submit(&f, "a", shared_then(600, "a", 1400), 1, &a);
    fx_run_idle(&f);
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 2000);
    struct st_request *rb = submit(&f, "b", shared_then(600, "b", 700), 1, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(b.slot, 1);
    ck_assert_int_eq(b.n_cached_end, 600);
    /* 700 read in two chunks (0.7 s), the copy (6 ms) with the first */
    ck_assert_int_eq(b.r.first_ns - b.submit_ns, SEC(0.706));
    ck_assert_int_eq(slot_view(&f, 0).n_cached, 2000);   /* the source is untouched */
    ck_assert_int_eq(slot_view(&f, 1).n_cached, 1300);
    struct st_pool_stats st = stats(&f);
    ck_assert_uint_eq(st.copied_tokens, 600);
    ck_assert_uint_eq(st.cached_tokens, 600);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

/* ---- sim: the threshold ---------------------------------------------------------- */

/* b shares 'shared' words with a, busy in slot 0; returns b's n_cached. */
static int64_t copy_with_shared(int shared)
{
    struct fixture f;
    struct prec a, b;
    struct st_request *ra = start_busy(&f, shared, 20, false, &a);
    struct st_request *rb = submit(&f, "b", shared_then(shared, "b", 100), 1, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(b.slot, 1);
    struct st_pool_stats st = stats(&f);
    ck_assert_uint_eq(st.copied_tokens, (uint64_t)b.n_cached_end);
    int64_t n = b.n_cached_end;
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
    return n;
}

START_TEST(test_engine_prefix_copy_threshold)
{
    ck_assert_int_eq(ST_PREFIX_COPY_MIN, 32);
    ck_assert_int_eq(copy_with_shared(ST_PREFIX_COPY_MIN - 1), 0);   /* not worth it */
    ck_assert_int_eq(copy_with_shared(ST_PREFIX_COPY_MIN), ST_PREFIX_COPY_MIN);
}
END_TEST

/* A slot's own prefix counts: c goes back to the slot holding 500 of its
 * words; another slot holding 520 offers fewer than ST_PREFIX_COPY_MIN more,
 * so nothing is copied. 540 would be copied (the 40 more). */
START_TEST(test_engine_prefix_copy_gain_over_own_prefix)
{
    for (int round = 0; round < 2; round++) {
        int longer = round == 0 ? 520 : 540;
        struct fixture f;
        struct prec a, b, c;
        start2(&f);
        struct st_request *ra = submit(&f, "a", shared_then(500, "a", 600), 1, &a);
        fx_run_idle(&f);
        /* b: the longer shared run, decoding in slot 1 (slot 0 would lose
         * too much to take it: 2 * 500 < 1100) -- it is busy below */
        struct st_request *rb = submit(&f, "b", shared_then(longer, "b", 600), 30, &b);
        run_to_first_token(&f, &b);
        ck_assert_int_eq(b.slot, 1);
        uint64_t copied0 = stats(&f).copied_tokens;
        struct st_request *rc = submit(&f, "c", shared_then(longer, "c", 10), 1, &c);
        fx_run_idle(&f);
        ck_assert_int_eq(c.slot, 0);
        ck_assert_int_eq(c.n_cached_end, round == 0 ? 500 : longer);
        ck_assert_uint_eq(stats(&f).copied_tokens - copied0, round == 0 ? 0 : longer - 500);
        st_request_unref(ra);
        st_request_unref(rb);
        st_request_unref(rc);
        fx_stop(&f);
    }
}
END_TEST

/* ---- sim: cache_prompt false ------------------------------------------------------ */

START_TEST(test_engine_prefix_copy_not_with_cache_prompt_false)
{
    struct fixture f;
    struct prec a, b;
    struct st_request *ra = start_busy(&f, 600, 50, false, &a);
    struct st_request *rb = submit_opts(&f, "b", shared_then(600, "b", 100), 1,
                                        (struct prec_opts){ .no_cache = true }, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(b.slot, 1);
    ck_assert_int_eq(b.n_cached_end, 0);
    /* 700 read (512 + 188) next to a's decodes: 0.7 + 2 x 0.1 s */
    ck_assert_int_eq(b.r.first_ns - b.submit_ns, SEC(0.9));
    ck_assert_uint_eq(stats(&f).copied_tokens, 0);
    ck_assert_uint_eq(stats(&f).cached_tokens, 0);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

/* ---- sim: admitted together, copied when it gets the lines ------------------------- */

START_TEST(test_engine_prefix_copy_when_it_gets_the_lines)
{
    /* a and b arrive together: both are admitted (slots 0, 1) before a has
     * read anything, so b has nothing to copy then; when a's read is done
     * and b gets the lines, it copies a's 600 shared tokens. */
    struct fixture f;
    struct prec a, b;
    start2(&f);
    struct st_request *ra = submit(&f, "a", shared_then(600, "a", 100), 5, &a);
    struct st_request *rb = submit(&f, "b", shared_then(600, "b", 100), 5, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(a.slot, 0);
    ck_assert_int_eq(b.slot, 1);
    ck_assert_int_eq(a.n_cached_end, 0);
    ck_assert_int_eq(b.n_cached_end, 600);
    struct st_pool_stats st = stats(&f);
    ck_assert_uint_eq(st.copied_tokens, 600);
    ck_assert_uint_eq(st.prompt_tokens, 700 + 100);
    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

/* ---- sim: kept scores travel with the copy ------------------------------------------ */

START_TEST(test_engine_prefix_copy_takes_the_scores)
{
    /* a, scored, decodes in slot 0; b, scored with the same context, copies
     * 599 tokens (a scored read from k needs the scores of 1..k, so the
     * context's last token is read: its row scores b's first own token) and
     * reports every position with the sim's logprob. */
    struct fixture f;
    struct prec a, b;
    struct st_request *ra = start_busy(&f, 600, 50, true, &a);
    struct st_request *rb = submit_opts(&f, "b", shared_then(600, "b", 100), 1,
                                        (struct prec_opts){ .scored = true }, &b);
    fx_run_idle(&f);
    ck_assert_int_eq(b.slot, 1);
    ck_assert_int_eq(b.n_cached_end, 599);
    ck_assert_int_eq(b.n_pos, 700);
    ck_assert_int_eq(b.n_scored, 699);   /* every position but 0 */
    ck_assert(b.scores_ok);
    ck_assert(a.scores_ok && a.n_scored == 699);
    ck_assert_uint_eq(stats(&f).copied_tokens, 599);

    st_request_unref(ra);
    st_request_unref(rb);
    fx_stop(&f);
}
END_TEST

START_TEST(test_engine_prefix_copy_unscored_carries_the_scores)
{
    /* a, scored, decodes in slot 0; c, not scored, copies a's 600 tokens
     * into slot 1 and takes their scores along. d, scored, then finds them
     * in slot 1 and reuses 599 there: no second copy from slot 0 (without
     * the scores slot 1 would offer nothing and d would copy again). */
    struct fixture f;
    struct prec a, c, d;
    struct st_request *ra = start_busy(&f, 600, 50, true, &a);
    struct st_request *rc = submit(&f, "c", shared_then(600, "c", 100), 1, &c);
    for (int i = 0; i < 100 && !c.r.ended; i++)
        ck_assert(st_engine_pool_step(f.pool, 0));
    ck_assert_msg(c.r.ended && !a.r.ended, "c %d a %d gen %lld", c.r.ended, a.r.ended,
                  (long long)a.r.n_generated);
    ck_assert_int_eq(c.slot, 1);
    ck_assert_int_eq(c.n_cached_end, 600);
    ck_assert_uint_eq(stats(&f).copied_tokens, 600);
    struct st_request *rd = submit_opts(&f, "d", shared_then(600, "d", 100), 1,
                                        (struct prec_opts){ .scored = true }, &d);
    fx_run_idle(&f);
    ck_assert_int_eq(d.slot, 1);
    ck_assert_int_eq(d.n_cached_end, 599);
    ck_assert(d.scores_ok);
    ck_assert_int_eq(d.n_scored, 699);
    ck_assert_uint_eq(stats(&f).copied_tokens, 600);   /* d copied nothing */
    st_request_unref(ra);
    st_request_unref(rc);
    st_request_unref(rd);
    fx_stop(&f);
}
END_TEST

/* ---- the CPU model runner ---------------------------------------------------------- */

#define N_GEN 12
#define MAXP 200   /* prompt ids at most */

static char dir[256], path[320], path_mtp[320];

static void model_setup(void)
{
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 7, false);
    fixture_make_model(path_mtp, sizeof(path_mtp), dir, "tiny", "q8_0", 7, true);
}

static void model_teardown(void) { support_rmtree(dir); }

/* Submit ids greedily (n_gen tokens, ignore_eos; scored: top 1 + echo);
 * g->req is the test's reference (mdone drops it). */
static void msubmit(struct fixture_pool *f, const int32_t *ids, int64_t n, int32_t n_gen,
                    bool scored, struct fixture_got *g)
{
    struct fixture_ask a = { .max_tokens = n_gen, .ignore_eos = true, .echo = scored,
                             .score = scored, .top = scored ? 1 : 0 };
    (void)fixture_submit_ids(f->pool, ids, n, &a, g);
}

static void mdone(struct fixture_got *g, int32_t n_gen)
{
    ck_assert(g->ended && g->in_order);
    ck_assert_int_eq(g->n_gen, n_gen);
    st_request_unref(g->req);
    g->req = NULL;
}

static void step_to_first_token(struct fixture_pool *f, const struct fixture_got *g)
{
    for (int i = 0; i < 1000 && g->n_gen == 0; i++)
        ck_assert(st_engine_pool_step(f->pool, 0));
    ck_assert_int_gt(g->n_gen, 0);
}

/* Greedy tokens of 'ids' on a fresh one-slot pool (mtp_draft as given). */
static void cold(const char *p, int32_t mtp, const int32_t *ids, int64_t n, bool scored,
                 int32_t n_gen, struct fixture_got *g)
{
    struct fixture_pool f;
    fixture_pool_start(&f, p, 1, mtp);
    msubmit(&f, ids, n, n_gen, scored, g);
    fixture_pool_drain(&f);
    ck_assert_int_eq(g->n_cached, 0);
    mdone(g, n_gen);
    fixture_pool_stop(&f);
}

static void same_gen(const struct fixture_got *a, const struct fixture_got *b,
                     const char *what)
{
    for (int i = 0; i < a->n_gen; i++)
        ck_assert_msg(a->gen[i] == b->gen[i], "%s: token %d: %d vs %d", what, i,
                      (int)a->gen[i], (int)b->gen[i]);
}

/* Slot 1 first holds another prompt (stale KV at every position), slot 0
 * then decodes x = ctx + tail X; y = ctx + tail Y comes while x decodes,
 * goes to slot 1 and copies ctx from busy slot 0. x and y must both give
 * their cold tokens. */
static void greedy_after_copy(const char *p, int32_t mtp)
{
    static int32_t ids[MAXP], x[MAXP], y[MAXP], other[MAXP];
    int64_t n_ids = fixture_file_text_ids(p, FIXTURE_STORY_QUESTION, ids, 150);
    ck_assert_int_ge(n_ids, 150);
    const int64_t ctx = 60;
    memcpy(x, ids, ctx * sizeof(int32_t));
    memcpy(y, ids, ctx * sizeof(int32_t));
    memcpy(x + ctx, ids + 100, 10 * sizeof(int32_t));
    memcpy(y + ctx, ids + 120, 10 * sizeof(int32_t));
    ck_assert_int_ne(x[ctx], y[ctx]);
    for (int i = 0; i < 80; i++)   /* shares nothing with ctx at position 0 */
        other[i] = ids[(i * 7 + 3) % 150];
    ck_assert_int_ne(other[0], ids[0]);
    struct fixture_got cx, cy, gx, gy, go;
    cold(p, mtp, x, ctx + 10, false, N_GEN, &cx);
    cold(p, mtp, y, ctx + 10, false, N_GEN, &cy);

    struct fixture_pool f;
    fixture_pool_start(&f, p, 2, mtp);
    msubmit(&f, other, 80, 2, false, &go);   /* slot 0 */
    msubmit(&f, x, ctx + 10, N_GEN, false, &gx);   /* slot 1 */
    fixture_pool_drain(&f);
    mdone(&go, 2);
    mdone(&gx, N_GEN);
    ck_assert_int_eq(gx.slot, 1);
    same_gen(&gx, &cx, "x cold");
    /* now: slot 0 keeps 'other', slot 1 keeps x. Make x busy in slot 1 again
     * (reuses itself) and send y: slot 0 (stale 'other') gets it and copies */
    msubmit(&f, x, ctx + 10, N_GEN, false, &gx);
    step_to_first_token(&f, &gx);
    msubmit(&f, y, ctx + 10, N_GEN, false, &gy);
    fixture_pool_drain(&f);
    mdone(&gx, N_GEN);
    mdone(&gy, N_GEN);
    ck_assert_int_eq(gx.slot, 1);
    ck_assert_int_eq(gy.slot, 0);
    ck_assert_int_eq(gy.n_cached, ctx);
    same_gen(&gx, &cx, "x again");
    same_gen(&gy, &cy, "y after the copy");
    struct st_pool_stats st;
    st_engine_pool_stats(f.pool, &st);
    ck_assert_uint_eq(st.copied_tokens, (uint64_t)ctx);
    fixture_pool_stop(&f);
}

START_TEST(test_engine_prefix_copy_model_greedy_same_as_cold)
{
    greedy_after_copy(path, 0);
}
END_TEST

START_TEST(test_engine_prefix_copy_model_mtp_greedy_same_as_cold)
{
    greedy_after_copy(path_mtp, 2);
}
END_TEST

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof(a)) == 0; }

START_TEST(test_engine_prefix_copy_model_multiple_choice_four_slots)
{
    /* lm-eval: one context, four answers, all sent at once to four slots.
     * The first reads everything; each other copies the context (less its
     * last token, whose row scores the answer) when it gets the lines, and
     * reports the cold scores bit for bit. */
    static int32_t ids[MAXP], prompt[4][MAXP];
    static struct fixture_got ref[4], g[4];
    int64_t n_ids = fixture_file_text_ids(path, FIXTURE_STORY_QUESTION, ids, 120);
    ck_assert_int_ge(n_ids, 120);
    const int64_t ctx = 45;
    int64_t n[4];
    for (int i = 0; i < 4; i++) {
        memcpy(prompt[i], ids, ctx * sizeof(int32_t));
        n[i] = ctx + 3 + i;
        memcpy(prompt[i] + ctx, ids + 60 + 12 * i, (size_t)(3 + i) * sizeof(int32_t));
        for (int j = 0; j < i; j++)
            ck_assert_int_ne(prompt[i][ctx], prompt[j][ctx]);
        cold(path, 0, prompt[i], n[i], true, 1, &ref[i]);
    }
    struct fixture_pool f;
    fixture_pool_start(&f, path, 4, 0);
    for (int i = 0; i < 4; i++)
        msubmit(&f, prompt[i], n[i], 1, true, &g[i]);
    fixture_pool_drain(&f);
    int copies = 0;
    for (int i = 0; i < 4; i++) {
        mdone(&g[i], 1);
        ck_assert_int_eq(g[i].n_pos, n[i]);
        copies += g[i].n_cached == ctx - 1;
        ck_assert_msg(g[i].n_cached == 0 || g[i].n_cached == ctx - 1, "n_cached %lld",
                      (long long)g[i].n_cached);
        ck_assert_int_eq(g[i].gen[0], ref[i].gen[0]);
        for (int64_t p = 1; p < n[i]; p++) {
            ck_assert_msg(g[i].has[p], "answer %d position %lld not scored", i, (long long)p);
            ck_assert_msg(same_float(g[i].lp[p], ref[i].lp[p]), "answer %d position %lld: "
                          "%.9g vs %.9g", i, (long long)p, (double)g[i].lp[p],
                          (double)ref[i].lp[p]);
            ck_assert_int_eq(g[i].rank[p], ref[i].rank[p]);
            ck_assert_int_eq(g[i].top_id[p][0], ref[i].top_id[p][0]);
        }
    }
    ck_assert_int_eq(copies, 3);
    struct st_pool_stats st;
    st_engine_pool_stats(f.pool, &st);
    ck_assert_uint_eq(st.copied_tokens, 3 * (uint64_t)(ctx - 1));
    ck_assert_uint_eq(st.cached_tokens, 3 * (uint64_t)(ctx - 1));
    fixture_pool_stop(&f);
}
END_TEST

/* Random traffic: 24 prompts sharing prefixes of 35-114 tokens arrive at
 * random steps into 3 slots, some cancelled at random while they wait,
 * read or decode; with no drafts, MTP and n-gram drafts. Every request
 * that was not cancelled generates what a cold run of it alone does, token
 * for token, whatever was copied from whom. */
START_TEST(test_engine_prefix_copy_model_random_traffic_same_as_cold)
{
    static int32_t ids[MAXP], pr[24][MAXP];
    static struct fixture_got ref[24], g[24];
    int64_t n[24];
    ck_assert_int_ge(fixture_file_text_ids(path_mtp, FIXTURE_STORY_QUESTION, ids, 150), 150);
    uint64_t rng = 12345;
    for (int i = 0; i < 24; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int64_t L = 35 + (int64_t)((rng >> 33) % 80);
        int64_t tail = 3 + (int64_t)((rng >> 20) % 15);
        memcpy(pr[i], ids, (size_t)L * sizeof(int32_t));
        for (int64_t j = 0; j < tail; j++)
            pr[i][L + j] = ids[(i * 13 + j * 7 + 5) % 150];
        n[i] = L + tail;
    }
    for (int mode = 0; mode < 3; mode++) {
        int32_t mtp = mode == 1 ? 2 : 0, ng = mode == 2 ? 3 : 0;
        for (int i = 0; i < 24; i++) {
            struct fixture_pool c;
            fixture_pool_start_spec(&c, path_mtp, 1, 0, 0);
            msubmit(&c, pr[i], n[i], 10, false, &ref[i]);
            fixture_pool_drain(&c);
            mdone(&ref[i], 10);
            fixture_pool_stop(&c);
        }
        struct fixture_pool f;
        fixture_pool_start_spec(&f, path_mtp, 3, mtp, ng);
        int next = 0;
        bool cancelled[24] = { 0 };
        for (int step = 0; step < 5000; step++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            if (next < 24 && (rng >> 40) % 3 == 0) {
                msubmit(&f, pr[next], n[next], 10, false, &g[next]);
                next++;
            }
            if ((rng >> 30) % 17 == 0 && next > 0) {
                int k = (int)((rng >> 10) % (uint64_t)next);
                if (!g[k].ended && !cancelled[k]) {
                    cancelled[k] = true;
                    st_engine_pool_cancel(f.pool, g[k].req);
                }
            }
            bool busy = st_engine_pool_step(f.pool, 0);
            if (!busy && next == 24)
                break;
        }
        fixture_pool_drain(&f);
        int checked = 0;
        for (int i = 0; i < 24; i++) {
            ck_assert(g[i].ended);
            if (!cancelled[i]) {
                ck_assert_int_eq(g[i].n_gen, 10);
                same_gen(&g[i], &ref[i], "random traffic");
                checked++;
            }
            st_request_unref(g[i].req);
        }
        struct st_pool_stats st;
        st_engine_pool_stats(f.pool, &st);
        fprintf(stderr, "engine prefix copy random traffic, mode %d: %d checked, copied %llu, "
                "cached %llu\n", mode, checked, (unsigned long long)st.copied_tokens,
                (unsigned long long)st.cached_tokens);
        ck_assert(st.copied_tokens > 0);   /* the traffic did exercise copies */
        fixture_pool_stop(&f);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_prefix_copy");
    TCase *t = tcase_create("sim");
    tcase_add_test(t, test_engine_prefix_copy_from_busy_slot);
    tcase_add_test(t, test_engine_prefix_copy_from_free_slot_not_chosen);
    tcase_add_test(t, test_engine_prefix_copy_threshold);
    tcase_add_test(t, test_engine_prefix_copy_gain_over_own_prefix);
    tcase_add_test(t, test_engine_prefix_copy_not_with_cache_prompt_false);
    tcase_add_test(t, test_engine_prefix_copy_when_it_gets_the_lines);
    tcase_add_test(t, test_engine_prefix_copy_takes_the_scores);
    tcase_add_test(t, test_engine_prefix_copy_unscored_carries_the_scores);
    suite_add_tcase(s, t);
    TCase *mt = tcase_create("model");
    tcase_add_checked_fixture(mt, model_setup, model_teardown);
    tcase_set_timeout(mt, 300);
    tcase_add_test(mt, test_engine_prefix_copy_model_greedy_same_as_cold);
    tcase_add_test(mt, test_engine_prefix_copy_model_mtp_greedy_same_as_cold);
    tcase_add_test(mt, test_engine_prefix_copy_model_random_traffic_same_as_cold);
    tcase_add_test(mt, test_engine_prefix_copy_model_multiple_choice_four_slots);
    suite_add_tcase(s, mt);
    return s;
}

int main(void)
{
    return support_run_suite(suite(), CK_NOFORK);
}
