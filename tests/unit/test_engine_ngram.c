/* test_engine_ngram.c -- n-gram (prompt-lookup) drafts, --spec ngram
 * (docs/ENGINE.md "N-gram drafts").
 *
 * The index (src/engine/draft/ngram.c) on its own:
 *   - a match gives the tokens that followed it, cut at the history's end;
 *   - the most recent occurrence wins; n goes from n_max down to n_min
 *     (a longer, older match beats a shorter, newer one), and nothing
 *     shorter than n_min matches;
 *   - a reset forgets the last history; a history fed a token at a time
 *     gives what one call over it gives, and what a brute-force scan gives;
 *     a shorter history restarts the index;
 *   - memory is bounded whatever the context, and a long history works.
 * Through the real engine loop (pool, scheduler, step.c, the CPU model
 * runner) on synthetic models:
 *   - greedy output with n-gram drafts is token for token (logprobs too)
 *     the output without, at -np 1 and -np 4, and drafts are proposed and
 *     accepted on repetitive prompts; the MTP layer is never asked;
 *   - rejections forced at every draft position roll back exactly;
 *   - a seeded sampler gives the same tokens with and without;
 *   - penalties + logit_bias, and the JSON mode, give the same tokens;
 *   - with an MTP model and --batch-mtp too, both sources draft and the
 *     output is still the same;
 *   - the sim runner serves with n-gram drafts on;
 *   - a slot's view (/slots) shows the drafts its last step checked.
 *
 * The steps run on the test thread (st_engine_pool_step) on a manual
 * clock: nothing here depends on time.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "model_fixture.h"
#include "spec_fixture.h"
#include "strata/json_prefix.h"
#include "strata/sched.h"
#include "support.h"

/* ---- the index ------------------------------------------------------------ */

/* Reference: the drafts of hist[0..len) by scanning it (no index): the
 * tokens after the match in the history extended by the drafts. */
static int32_t brute(const int32_t *h, int64_t len, int32_t n_min, int32_t n_max, int32_t *out,
                     int32_t max, int32_t *n_used)
{
    *n_used = 0;
    for (int32_t n = n_max; n >= n_min; n--) {
        if (n > len - 1)
            continue;
        for (int64_t end = len - 2; end >= n - 1; end--) {
            if (memcmp(h + end - n + 1, h + len - n, (size_t)n * sizeof(*h)) != 0)
                continue;
            int32_t ext[64] = { 0 };   /* ext[i]: the draft at position len + i */
            for (int32_t i = 0; i < max; i++) {
                int64_t at = end + 1 + i;
                ext[i] = at < len ? h[at] : ext[at - len];
            }
            memcpy(out, ext, (size_t)max * sizeof(*out));
            *n_used = n;
            return max;
        }
    }
    return 0;
}

static int32_t draft(struct st_ngram *g, const int32_t *h, int64_t len, int32_t *out, int32_t max,
                     int32_t *n_used)
{
    return st_ngram_draft(g, h, len, out, max, n_used);
}

START_TEST(test_engine_ngram_index_match)
{
    struct st_ngram g = { 0 };
    int32_t out[16], n;
    ck_assert_int_eq(st_ngram_reset(&g, 2, 4, 4096), ST_OK);
    /* 1 2 3 9 1 2 3: "1 2 3" ended at 2; what followed, to the end, then
     * on around the loop (9 1 2 3 9 ...) */
    const int32_t h[] = { 1, 2, 3, 9, 1, 2, 3 };
    ck_assert_int_eq(draft(&g, h, 7, out, 8, &n), 8);
    ck_assert_int_eq(n, 3);
    const int32_t want[] = { 9, 1, 2, 3, 9, 1, 2, 3 };
    ck_assert(memcmp(out, want, sizeof(want)) == 0);
    /* max caps it */
    ck_assert_int_eq(draft(&g, h, 7, out, 2, &n), 2);
    ck_assert(out[0] == 9 && out[1] == 1);
    /* no earlier occurrence of the last tokens: nothing */
    const int32_t u[] = { 1, 2, 3, 4, 5, 6 };
    ck_assert_int_eq(st_ngram_reset(&g, 2, 4, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, u, 6, out, 8, &n), 0);
    ck_assert_int_eq(n, 0);
    /* too short to match anything, and max 0 */
    ck_assert_int_eq(draft(&g, u, 1, out, 8, &n), 0);
    ck_assert_int_eq(draft(&g, h, 7, out, 0, &n), 0);
    /* bad lengths are refused */
    ck_assert_int_eq(st_ngram_reset(&g, 0, 4, 4096), ST_ERR_INVALID);
    ck_assert_int_eq(st_ngram_reset(&g, 3, 2, 4096), ST_ERR_INVALID);
    ck_assert_int_eq(st_ngram_reset(&g, 1, ST_NGRAM_MAX_N + 1, 4096), ST_ERR_INVALID);
    st_ngram_fini(&g);
    /* a zeroed index (no table) drafts nothing */
    ck_assert_int_eq(draft(&g, h, 7, out, 8, &n), 0);
}
END_TEST

START_TEST(test_engine_ngram_index_most_recent_and_longest)
{
    struct st_ngram g = { 0 };
    int32_t out[16], n;
    /* "1 2" ended at 1 (then 5) and at 4 (then 6): the later one wins */
    const int32_t h[] = { 1, 2, 5, 1, 2, 6, 1, 2 };
    ck_assert_int_eq(st_ngram_reset(&g, 2, 4, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, h, 8, out, 4, &n), 4);
    ck_assert_int_eq(n, 2);
    ck_assert(out[0] == 6 && out[1] == 1 && out[2] == 2 && out[3] == 6);
    /* A B C D x | C D y | A B C D: the 4-gram (older, then x) beats the
     * newer 2-gram "C D" (then y); limited to n <= 2 it is y */
    const int32_t l[] = { 11, 12, 13, 14, 20, 13, 14, 30, 11, 12, 13, 14 };
    ck_assert_int_eq(st_ngram_reset(&g, 2, 4, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, l, 12, out, 3, &n), 3);
    ck_assert_int_eq(n, 4);
    ck_assert(out[0] == 20 && out[1] == 13 && out[2] == 14);
    ck_assert_int_eq(st_ngram_reset(&g, 2, 2, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, l, 12, out, 3, &n), 3);
    ck_assert_int_eq(n, 2);
    ck_assert(out[0] == 30 && out[1] == 11 && out[2] == 12);
    /* only a 1-gram matches: 5 7 8 5 */
    const int32_t m[] = { 5, 7, 8, 5 };
    ck_assert_int_eq(st_ngram_reset(&g, 2, 4, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, m, 4, out, 8, &n), 0);
    ck_assert_int_eq(st_ngram_reset(&g, 1, 4, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, m, 4, out, 4, &n), 4);
    ck_assert_int_eq(n, 1);
    ck_assert(out[0] == 7 && out[1] == 8 && out[2] == 5 && out[3] == 7);
    st_ngram_fini(&g);
}
END_TEST

START_TEST(test_engine_ngram_index_reset_and_shrink)
{
    struct st_ngram g = { 0 };
    int32_t out[16], n;
    /* history 1 has "4 5" (then 6) indexed; history 2 ends with "4 5" but
     * has it nowhere earlier: after a reset nothing of history 1 answers */
    const int32_t h1[] = { 4, 5, 6, 7, 8 }, h2[] = { 9, 9, 4, 5 };
    ck_assert_int_eq(st_ngram_reset(&g, 2, 3, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, h1, 5, out, 4, &n), 0);
    ck_assert_int_eq(g.indexed, 4);
    ck_assert_int_eq(st_ngram_reset(&g, 2, 3, 4096), ST_OK);
    ck_assert_int_eq(g.indexed, 0);
    ck_assert_int_eq(draft(&g, h2, 4, out, 4, &n), 0);
    /* a history shorter than what was indexed restarts the index: the
     * entries of the longer one (here "4 5" ending at 1) are gone */
    const int32_t a[] = { 4, 5, 6, 1, 2, 3, 4, 5 };   /* indexed up to 7 */
    ck_assert_int_eq(st_ngram_reset(&g, 2, 3, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, a, 8, out, 4, &n), 4);
    ck_assert_int_eq(out[0], 6);
    const int32_t b[] = { 7, 7, 7, 4, 5 };   /* shorter, different */
    ck_assert_int_eq(draft(&g, b, 5, out, 4, &n), 0);
    /* a's "2 3" ended at 5, beyond c: only c's own (at 1, then 9) is seen */
    const int32_t c[] = { 2, 3, 9, 2, 3 };
    ck_assert_int_eq(st_ngram_reset(&g, 2, 3, 4096), ST_OK);
    ck_assert_int_eq(draft(&g, a, 8, out, 4, &n), 4);
    ck_assert_int_eq(draft(&g, c, 5, out, 2, &n), 2);
    ck_assert(out[0] == 9 && out[1] == 2);
    ck_assert_int_eq(g.indexed, 4);
    st_ngram_fini(&g);
}
END_TEST

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Fed one token at a time (as the engine feeds it), the index answers
 * what a scan of the whole history answers. A small alphabet makes many
 * matches of every length. */
START_TEST(test_engine_ngram_index_incremental_equals_scan)
{
    enum { LEN = 400 };
    int32_t h[LEN], a[16], b[16], na, nb;
    uint64_t s = 7;
    int64_t hits = 0;
    for (int32_t alpha = 2; alpha <= 3; alpha++) {
        struct st_ngram g = { 0 };
        ck_assert_int_eq(st_ngram_reset(&g, 2, 3, 4096), ST_OK);
        for (int i = 0; i < LEN; i++)
            h[i] = (int32_t)(rng_next(&s) % (uint64_t)alpha) + 100;
        for (int64_t len = 1; len <= LEN; len++) {
            int32_t ka = draft(&g, h, len, a, 8, &na), kb = brute(h, len, 2, 3, b, 8, &nb);
            ck_assert_msg(ka == kb && na == nb, "alphabet %d, length %lld: %d drafts (n %d) vs "
                          "%d (n %d) by scan", (int)alpha, (long long)len, (int)ka, (int)na,
                          (int)kb, (int)nb);
            ck_assert(memcmp(a, b, (size_t)ka * sizeof(*a)) == 0);
            hits += ka > 0;
        }
        st_ngram_fini(&g);
    }
    ck_assert_int_gt(hits, LEN);   /* the comparison covered matches, not only misses */
}
END_TEST

/* Whatever the context, the table stays within its bound; a long history
 * finds a repeat planted far back; a table too small for its history fills
 * to 3/4 and stops taking n-grams, and whatever it answers is still a real,
 * most recent occurrence. */
START_TEST(test_engine_ngram_index_bounded_memory)
{
    struct st_ngram g = { 0 };
    int32_t out[16], n;
    ck_assert_int_eq(st_ngram_reset(&g, 2, 4, INT64_C(1) << 30), ST_OK);
    ck_assert_uint_eq(g.cap, (size_t)3 << ST_NGRAM_MAX_BITS);
    size_t cap = g.cap;
    ck_assert_int_eq(st_ngram_reset(&g, 2, 4, 100), ST_OK);   /* small ctx: no regrowth */
    ck_assert_uint_eq(g.cap, cap);
    ck_assert_int_eq(g.bits, 8);

    enum { LEN = 200000 };
    int32_t *h = malloc(LEN * sizeof(*h));
    ck_assert_ptr_nonnull(h);
    uint64_t s = 11;
    for (int i = 0; i < LEN; i++)
        h[i] = (int32_t)(rng_next(&s) % 50000);
    /* plant: the last 4 tokens also stand at 1000..1003, then 7 7 7 */
    memcpy(h + 1000, h + LEN - 4, 4 * sizeof(*h));
    h[1004] = h[1005] = h[1006] = 7;
    ck_assert_int_eq(st_ngram_reset(&g, 2, 4, INT64_C(1) << 30), ST_OK);
    ck_assert_int_eq(draft(&g, h, LEN, out, 3, &n), 3);
    ck_assert_int_eq(n, 4);
    ck_assert(out[0] == 7 && out[1] == 7 && out[2] == 7);
    ck_assert_uint_eq(g.cap, cap);

    /* a small table (256 per n) and 3000 positions on 40 symbols (1600
     * bigrams): it fills; every answer must still be right and the most
     * recent */
    int64_t answered = 0;
    ck_assert_int_eq(st_ngram_reset(&g, 2, 3, 100), ST_OK);
    for (int i = 0; i < 3000; i++)
        h[i] = (int32_t)(rng_next(&s) % 40);
    for (int64_t len = 2; len <= 3000; len++) {
        int32_t k = draft(&g, h, len, out, 4, &n);
        if (k == 0)
            continue;
        answered++;
        int64_t end = -1;   /* the most recent earlier end of the last n tokens */
        for (int64_t e = len - 2; e >= n - 1 && end < 0; e--)
            if (memcmp(h + e - n + 1, h + len - n, (size_t)n * sizeof(*h)) == 0)
                end = e;
        ck_assert_msg(end >= 0, "length %lld: a match (n %d) that is not there", (long long)len,
                      (int)n);
        ck_assert(memcmp(out, h + end + 1, (size_t)k * sizeof(*out)) == 0);
    }
    ck_assert_int_gt(answered, 100);
    ck_assert_uint_eq(g.fill[0], 192);   /* 3/4 of 256: full, and no further */
    free(h);
    st_ngram_fini(&g);
}
END_TEST

/* ---- the engine ------------------------------------------------------------ */

/* Text that repeats itself, as a file being rewritten or keys being echoed. */
static const char *const prompts[4] = {
    "the cat sat on the mat. the cat sat on the mat. the cat sat on the mat. the cat",
    "{\"name\": \"a\", \"id\": 1}, {\"name\": \"b\", \"id\": 2}, {\"name\": \"c\", \"id\":",
    "1 2 3 4 5 6 7 1 2 3 4 5 6 7 1 2 3 4 5 6 7 1 2 3",
    "int f(int x) { return x + 1; }\nint g(int x) { return x + 1; }\nint h(int x) {",
};

static void run(const struct spec_run *r, struct spec_result *res)
{
    spec_run_prompts(r, prompts, res);
}

static void report(const char *what, const struct spec_result *r)
{
    const struct st_pool_stats *s = &r->stats;
    fprintf(stderr, "engine ngram %s: n-gram drafted %llu, accepted %llu, %llu steps; MTP "
            "drafted %llu, accepted %llu\n", what, (unsigned long long)s->ngram_drafted,
            (unsigned long long)s->ngram_accepted, (unsigned long long)s->ngram_steps,
            (unsigned long long)s->mtp_drafted, (unsigned long long)s->mtp_accepted);
}

static void greedy_case(const char *path, int32_t np, int32_t k, const char *what)
{
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    spec_against_plain(&(struct spec_run){ .path = path, .np = np, .ngram_draft = k, .n_gen = 48 },
                       prompts, off, on, what);
    report(what, on);
    ck_assert_int_eq(off->stats.ngram_drafted, 0);
    ck_assert_msg(on->stats.ngram_drafted > 0, "%s: nothing was drafted", what);
    ck_assert_msg(on->stats.ngram_accepted > 0, "%s: nothing was accepted", what);
    ck_assert(on->stats.ngram_accepted <= on->stats.ngram_drafted);
    /* fewer verify steps than tokens: accepted drafts saved steps */
    ck_assert_int_eq(on->stats.mtp_drafted, 0);   /* no MTP without --batch-mtp */
    spec_records_add_up(on);
    free(off);
    free(on);
}

START_TEST(test_engine_ngram_greedy_identical)
{
    greedy_case(spec_make("tiny", false, 1), 1, 4, "tiny np1 k4");
    greedy_case(spec_make("tiny", false, 1), 4, 8, "tiny np4 k8");
    greedy_case(spec_make("small", false, 2), 4, 16, "small np4 k16");
}
END_TEST

/* /slots (the dashboard's "drafting"): a decoding slot's view says how
 * many drafts its last step checked; idle slots and plain decodes say 0. */
START_TEST(test_engine_ngram_slot_view_drafts)
{
    struct fixture_pool f;
    fixture_pool_start_spec(&f, spec_make("tiny", false, 1), 1, 0, 4);
    (void)st_engine_pool_step(f.pool, 0);   /* loads the model */
    struct fixture_out out;
    memset(&out, 0, sizeof(out));
    spec_submit(f.pool, 0, &(struct spec_run){ .n_gen = 48 }, prompts[2], &out);
    int drafting = 0, plain = 0;
    struct st_slot_view v;
    for (int steps = 0; steps < 100000 && st_engine_pool_step(f.pool, 0); steps++) {
        ck_assert_int_eq(st_engine_pool_slots(f.pool, &v, 1), 1);
        ck_assert_int_ge(v.n_draft, 0);
        ck_assert_int_le(v.n_draft, 4);
        if (v.n_draft > 0) {
            ck_assert_int_eq(v.state, ST_SLOT_DECODING);
            drafting++;
        } else if (v.state == ST_SLOT_DECODING) {
            plain++;
        }
    }
    ck_assert(out.ended);
    ck_assert_msg(drafting > 0, "no step showed drafts (%d plain)", plain);
    ck_assert_int_eq(st_engine_pool_slots(f.pool, &v, 1), 1);
    ck_assert_int_eq(v.state, ST_SLOT_IDLE);
    ck_assert_int_eq(v.n_draft, 0);
    fixture_pool_stop(&f);
}
END_TEST

/* ---- cost-aware draft lengths (spec_cost.c), timings injected ---------- */

/* Where verify rows are nearly free the n-gram drafts go on as the
 * acceptance rule has them; where each row costs as much as a step's fixed
 * part, the long drafts a loop gives are cut to what pays; where a row costs
 * ten times that, almost nothing is drafted. Never a different answer. */
START_TEST(test_engine_ngram_cost_aware_lengths)
{
    const char *path = spec_make("tiny", false, 1);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    struct spec_run r = { .path = path, .np = 4, .ngram_draft = 8, .n_gen = 64 };
    spec_against_plain(&r, prompts, off, on, "unpriced");
    uint64_t base = on->stats.ngram_drafted;
    report("unpriced", on);
    struct spec_costs cost = { .a = 10.0, .b = 0.01, .up = 1.0 };
    struct st_mtp_test hook = { .step_ns = spec_cost_step, .ctx = &cost };
    r.hook = &hook;
    uint64_t drafted[3];
    const double per_row[3] = { 0.01, 10.0, 100.0 };
    for (int i = 0; i < 3; i++) {
        cost.b = per_row[i];
        run(&r, on);
        report(i == 0 ? "rows nearly free" : i == 1 ? "rows as dear as a step" : "rows dear", on);
        spec_same(off, on, 4, "cost-aware");
        spec_records_add_up(on);
        drafted[i] = on->stats.ngram_drafted;
        ck_assert(cost.full == 0);   /* no MTP layer: every step is lean */
    }
    ck_assert_msg(drafted[0] * 10 >= base * 8, "rows nearly free: %llu drafted, the acceptance "
                  "rule %llu", (unsigned long long)drafted[0], (unsigned long long)base);
    ck_assert_msg(drafted[1] < drafted[0] && drafted[2] * 4 <= drafted[0], "drafted %llu, %llu, "
                  "%llu as rows got dearer", (unsigned long long)drafted[0],
                  (unsigned long long)drafted[1], (unsigned long long)drafted[2]);
    free(off);
    free(on);
}
END_TEST

/* ---- rollback: rejections forced at every position --------------------- */

START_TEST(test_engine_ngram_rollback_every_position)
{
    const char *path = spec_make("tiny", false, 6);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    run(&(struct spec_run){ .path = path, .np = 2, .n_gen = 48 }, off);
    struct spec_forcer f = { .truth = off };
    struct st_mtp_test hook = { .fixed_length = true, .corrupt = spec_force, .ctx = &f };
    run(&(struct spec_run){ .path = path, .np = 2, .ngram_draft = 6, .n_gen = 48, .hook = &hook },
        on);
    report("rollback", on);
    for (int j = 0; j < 5; j++)
        ck_assert_msg(f.forced[j] > 0, "no draft set was first wrong at position %d", j);
    spec_same(off, on, 2, "rollback");
    ck_assert(on->stats.ngram_accepted > 0 && on->stats.ngram_accepted < on->stats.ngram_drafted);
    ck_assert_int_eq(on->stats.mtp_drafted, 0);
    spec_records_add_up(on);
    free(off);
    free(on);
}
END_TEST

/* ---- sampling, penalties, JSON ----------------------------------------- */

START_TEST(test_engine_ngram_seeded_sampling_identical)
{
    const char *path = spec_make("tiny", false, 7);
    struct spec_result *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *c = malloc(sizeof(*c));
    const struct spec_run r = { .path = path, .np = 4, .ngram_draft = 8, .n_gen = 48,
                                .temperature = 0.3f };
    spec_against_plain(&r, prompts, c, a, "seeded, n-gram vs none");
    run(&r, b);
    report("sampled", a);
    spec_same(a, b, 4, "seeded n-gram twice");
    ck_assert(a->stats.ngram_drafted > 0 && a->stats.ngram_accepted > 0);
    free(a);
    free(b);
    free(c);
}
END_TEST

START_TEST(test_engine_ngram_penalties_identical)
{
    const char *path = spec_make("tiny", false, 9);
    struct st_gen_params g;
    struct st_logit_bias ban;
    spec_penalties_that_matter(&(struct spec_run){ .path = path, .np = 4, .n_gen = 48 }, prompts,
                               &g, &ban);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    spec_against_plain(&(struct spec_run){ .path = path, .np = 4, .ngram_draft = 8, .n_gen = 48,
                                           .pen = &g }, prompts, off, on,
                       "penalties, n-gram vs none");
    report("penalties", on);
    ck_assert(on->stats.ngram_drafted > 0);
    spec_never_took(on, 4, ban.token);
    spec_against_plain(&(struct spec_run){ .path = path, .np = 4, .ngram_draft = 8, .n_gen = 48,
                                           .temperature = 0.3f, .pen = &g }, prompts, off, on,
                       "penalties, seeded, n-gram vs none");
    free(off);
    free(on);
}
END_TEST

START_TEST(test_engine_ngram_json_identical)
{
    const char *path = spec_make("tiny", false, 3);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    const float temps[2] = { 0.0f, 0.3f };
    for (int ti = 0; ti < 2; ti++) {
        spec_against_plain(&(struct spec_run){ .path = path, .np = 4, .ngram_draft = 8,
                                               .n_gen = 60, .temperature = temps[ti],
                                               .json = true }, prompts, off, on,
                           "json, n-gram vs none");
        report(ti ? "json sampled" : "json greedy", on);
        ck_assert(on->stats.ngram_drafted > 0);
        for (int32_t i = 0; i < 4; i++) {
            struct st_json_prefix j;
            st_json_prefix_init(&j);
            ck_assert_msg(on->out[i].len > 0 && on->out[i].text[0] == '{', "'%s'",
                          on->out[i].text);
            ck_assert_msg(st_json_prefix_feed(&j, on->out[i].text, on->out[i].len),
                          "not JSON: '%s'", on->out[i].text);
        }
    }
    free(off);
    free(on);
}
END_TEST

/* ---- with MTP, and on the sim ---------------------------------------------- */

/* Both sources on: a slot with a match drafts from its history, the others
 * from the MTP layer; the output is still the output without drafts. */
START_TEST(test_engine_ngram_with_mtp_identical)
{
    const char *path = spec_make("mtp-demo", false, 5);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    spec_against_plain(&(struct spec_run){ .path = path, .np = 4, .mtp_draft = 3,
                                           .ngram_draft = 8, .n_gen = 48 }, prompts, off, on,
                       "n-gram + MTP vs none");
    report("with MTP", on);
    ck_assert(on->stats.ngram_drafted > 0 && on->stats.mtp_drafted > 0);
    ck_assert(on->stats.ngram_accepted > 0 && on->stats.mtp_accepted > 0);
    spec_records_add_up(on);
    free(off);
    free(on);
}
END_TEST

static void sim_event(void *ctx, const struct st_event *ev)
{
    int *n = ctx;
    if (ev->kind == ST_EVENT_TOKEN)
        n[0]++;
    else if (ev->kind == ST_EVENT_END)
        n[1]++;
}

/* The sim forces its tokens (no logits): with n-gram drafts on it serves
 * as before, every request its full length. */
START_TEST(test_engine_ngram_sim_serves)
{
    struct st_clock_manual clk;
    st_clock_manual_init(&clk, 0);
    struct st_sched_config sc;
    st_sched_config_defaults(&sc);
    sc.batch = true;
    sc.log_dispatch = false;
    struct st_pool_config pc;
    st_pool_config_defaults(&pc);
    pc.model.parallel = 2;
    pc.ngram = true;
    struct st_sched *s = NULL;
    struct st_engine_pool *p = NULL;
    struct st_err err = { 0 };
    ck_assert(st_sched_new(&sc, &clk.clock, &s, &err) == ST_OK);
    ck_assert_msg(st_engine_pool_new(&pc, s, &clk.clock, &p, &err) == ST_OK, "%s", err.msg);
    (void)st_engine_pool_step(p, 0);
    int counts[2][2] = { { 0 } };
    for (int i = 0; i < 2; i++) {
        struct st_request *req = st_request_new();
        snprintf(req->id, sizeof(req->id), "s%d", i);
        req->prompt = strdup("a b a b a b a b a b");
        req->params.max_tokens = 12;
        req->emit = sim_event;
        req->emit_ctx = counts[i];
        ck_assert(st_engine_pool_submit(p, req, &err) == ST_OK);
        st_request_unref(req);
    }
    for (int steps = 0; steps < 10000 && st_engine_pool_step(p, 0); steps++)
        st_clock_manual_advance(&clk, ST_NS_PER_SEC);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(counts[i][1], 1);
        ck_assert_int_eq(counts[i][0], 12);
    }
    st_engine_pool_free(p);
    st_sched_free(s);
}
END_TEST

static Suite *engine_ngram_suite(void)
{
    Suite *s = suite_create("engine_ngram");
    TCase *ti = tcase_create("index");
    tcase_add_test(ti, test_engine_ngram_index_match);
    tcase_add_test(ti, test_engine_ngram_index_most_recent_and_longest);
    tcase_add_test(ti, test_engine_ngram_index_reset_and_shrink);
    tcase_add_test(ti, test_engine_ngram_index_incremental_equals_scan);
    tcase_add_test(ti, test_engine_ngram_index_bounded_memory);
    suite_add_tcase(s, ti);
    TCase *tc = tcase_create("engine");
    tcase_add_checked_fixture(tc, spec_setup, spec_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_engine_ngram_greedy_identical);
    tcase_add_test(tc, test_engine_ngram_rollback_every_position);
    tcase_add_test(tc, test_engine_ngram_seeded_sampling_identical);
    tcase_add_test(tc, test_engine_ngram_penalties_identical);
    tcase_add_test(tc, test_engine_ngram_json_identical);
    tcase_add_test(tc, test_engine_ngram_with_mtp_identical);
    tcase_add_test(tc, test_engine_ngram_sim_serves);
    tcase_add_test(tc, test_engine_ngram_slot_view_drafts);
    tcase_add_test(tc, test_engine_ngram_cost_aware_lengths);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(engine_ngram_suite(), CK_FORK);
}
