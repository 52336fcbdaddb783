/* test_engine_mtp.c -- --batch-mtp through the real engine loop (pool,
 * scheduler, step.c, the CPU model runner) on synthetic models:
 *
 *   - greedy output is token for token the output without MTP, at -np 1
 *     and -np 4 (four requests decoding together), on a random MTP block
 *     (tiny/small --mtp: drafts almost always rejected) and on the
 *     mtp-demo and next-mtp-demo presets (drafts mostly accepted);
 *   - rollback: a test hook rewrites the drafts so that the first rejected
 *     one moves through every position (0 .. k-1, and none), and the
 *     tokens and their logprobs (which depend on every KV entry the
 *     model attends to) equal the run without MTP;
 *   - a seeded sampler (temperature 0.3) gives the same tokens twice, and
 *     the same as without MTP (every emitted token is one sample of the
 *     main model, one RNG draw each, in order);
 *   - penalties and logit_bias (which depend on every token taken before,
 *     the drafts accepted earlier in the same verify too) give the same
 *     tokens with and without MTP, greedy and seeded, and change the
 *     output; requests decoding together keep their own histories;
 *   - a model without an MTP layer serves normally and says so once;
 *   - the counters (pool stats and the activity record) add up;
 *   - with injected step timings the draft lengths follow the cost: rows
 *     nearly free draft as the acceptance rule does, rows dear draft little
 *     and skip the MTP upkeep between, the output the same;
 *   - after forced plain stretches (no drafts, no upkeep; one longer than
 *     ST_MTP_KEEP) the slots draft in the very next step (the runner's MTP
 *     layer catches up in the draft call), as well accepted as without the
 *     stretches, and the output is the same.
 *
 * The steps run on the test thread (st_engine_pool_step) on a manual
 * clock: nothing here depends on time (the cost model learns only the
 * timings a test injects).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/pool.h"
#include "strata/mtp.h"
#include "strata/sched.h"
#include "model_fixture.h"
#include "spec_fixture.h"
#include "support.h"

static const char *const prompts[4] = {
    "The quick brown fox", "Once upon a time there was", "1 2 3 4 5 6", "Hello, world!",
};

static void run(const struct spec_run *r, struct spec_result *res)
{
    spec_run_prompts(r, prompts, res);
}

static void report(const char *what, const struct spec_result *r)
{
    const struct st_pool_stats *s = &r->stats;
    fprintf(stderr, "engine mtp %s: drafted %llu, accepted %llu (%.2f), %llu verify steps, "
            "mean accepted length %.2f\n", what, (unsigned long long)s->mtp_drafted,
            (unsigned long long)s->mtp_accepted,
            s->mtp_drafted ? (double)s->mtp_accepted / (double)s->mtp_drafted : 0.0,
            (unsigned long long)s->mtp_steps,
            s->mtp_steps ? 1.0 + (double)s->mtp_accepted / (double)s->mtp_steps : 0.0);
}

static void greedy_case(const char *path, int32_t np, int32_t draft, const char *what,
                        bool expect_accepts)
{
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    spec_against_plain(&(struct spec_run){ .path = path, .np = np, .mtp_draft = draft,
                                           .n_gen = 40 }, prompts, off, on, what);
    report(what, on);
    ck_assert_int_eq(off->stats.mtp_drafted, 0);
    ck_assert_msg(on->stats.mtp_drafted > 0, "%s: nothing was drafted", what);
    if (expect_accepts)
        ck_assert_msg(on->stats.mtp_accepted * 2 > on->stats.mtp_drafted, "%s: %llu of %llu "
                      "accepted", what, (unsigned long long)on->stats.mtp_accepted,
                      (unsigned long long)on->stats.mtp_drafted);
    spec_records_add_up(on);
    free(off);
    free(on);
}

START_TEST(test_engine_mtp_greedy_identical_np1)
{
    greedy_case(spec_make("tiny", true, 1), 1, 1, "tiny np1 k1", false);
    greedy_case(spec_make("small", true, 2), 1, 3, "small np1 k3", false);
    greedy_case(spec_make("mtp-demo", false, 3), 1, 1, "demo np1 k1", true);
    greedy_case(spec_make("mtp-demo", false, 3), 1, 4, "demo np1 k4", true);
}
END_TEST

START_TEST(test_engine_mtp_greedy_identical_np4)
{
    greedy_case(spec_make("tiny", true, 4), 4, 2, "tiny np4 k2", false);
    greedy_case(spec_make("mtp-demo", false, 5), 4, 1, "demo np4 k1", true);
    greedy_case(spec_make("mtp-demo", false, 5), 4, 4, "demo np4 k4", true);
}
END_TEST

/* ---- rollback: rejections forced at every position --------------------- */

/* MTP drafts of 4 with a rejection forced at every position in turn, on
 * the file made from preset: the same greedy tokens as without drafts. */
static void rollback_case(const char *preset, const char *what)
{
    const char *path = spec_make(preset, true, 6);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    run(&(struct spec_run){ .path = path, .np = 2, .n_gen = 48 }, off);
    struct spec_forcer f = { .truth = off };
    struct st_mtp_test hook = { .fixed_length = true, .corrupt = spec_force, .ctx = &f };
    run(&(struct spec_run){ .path = path, .np = 2, .mtp_draft = 4, .n_gen = 48, .hook = &hook },
        on);
    report(what, on);
    fprintf(stderr, "engine mtp %s: first rejection at 0:%lld 1:%lld 2:%lld 3:%lld "
            "none:%lld\n", what, (long long)f.forced[0], (long long)f.forced[1],
            (long long)f.forced[2], (long long)f.forced[3], (long long)f.forced[4]);
    for (int j = 0; j < 5; j++)
        ck_assert_msg(f.forced[j] > 0, "no draft was rejected first at position %d", j);
    spec_same(off, on, 2, what);
    ck_assert(on->stats.mtp_accepted > 0 && on->stats.mtp_accepted < on->stats.mtp_drafted);
    /* Every decode step verified drafts, but for at most one last step per
     * request with one token left (no room to draft): a verify step emits
     * accepted + 1 tokens, and each request's first token comes from its
     * prompt read. A rollback that lost the MTP layer's carried state would
     * leave many steps without drafts. */
    int64_t verified = (int64_t)(on->stats.mtp_accepted + on->stats.mtp_steps);
    ck_assert_msg(verified >= 2 * 48 - 2 - 2 && verified <= 2 * 48 - 2, "%lld tokens came "
                  "from verify steps", (long long)verified);
    spec_records_add_up(on);
    free(off);
    free(on);
}

START_TEST(test_engine_mtp_rollback_every_position)
{
    rollback_case("tiny", "rollback");
}
END_TEST

/* qwen35moe: a rejected draft's rows are in the slot's recurrent state,
 * which is restored and the accepted rows read again (runner_rollback.c). */
START_TEST(test_engine_mtp_rollback_recurrent)
{
    rollback_case("next-tiny", "rollback next");
    rollback_case("qwen35-tiny", "rollback qwen35");   /* dense FFN, same state */
    rollback_case("next80-tiny", "rollback next80");   /* grouped v heads, ssm_ba */
}
END_TEST

/* ---- sampling ------------------------------------------------------------ */

/* Seeded sampling on the file made from preset: the same tokens twice,
 * and the same as without MTP. */
static void seeded_case(const char *preset)
{
    const char *path = spec_make(preset, false, 7);
    struct spec_result *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *c = malloc(sizeof(*c));
    const struct spec_run r = { .path = path, .np = 2, .mtp_draft = 3, .n_gen = 40,
                                .temperature = 0.3f };
    spec_against_plain(&r, prompts, c, a, "seeded, MTP vs none");
    run(&r, b);
    report("sampled", a);
    spec_same(a, b, 2, "seeded MTP twice");
    /* at temperature 0.3 some samples match the greedy drafts, some do not:
     * both branches of the acceptance ran with the sampler */
    ck_assert(a->stats.mtp_accepted > 0 && a->stats.mtp_accepted < a->stats.mtp_drafted);
    free(a);
    free(b);
    free(c);
}

START_TEST(test_engine_mtp_seeded_sampling_reproducible)
{
    seeded_case("mtp-demo");
}
END_TEST

/* next-mtp-demo (qwen35moe, drafts mostly accepted): every verify with a
 * rejection restores the slots' recurrent state (runner_rollback.c), and
 * the output is still the output without drafts: greedy at np 1 and 4,
 * rejections forced at every position, seeded sampling. */
START_TEST(test_engine_mtp_next_demo)
{
    greedy_case(spec_make("next-mtp-demo", false, 3), 1, 3, "next demo np1 k3", true);
    greedy_case(spec_make("next-mtp-demo", false, 5), 4, 4, "next demo np4 k4", true);
    rollback_case("next-mtp-demo", "rollback next demo");
    seeded_case("next-mtp-demo");
}
END_TEST

/* ---- penalties and logit_bias -------------------------------------------- */

/* Each verify row is sampled with the history including the drafts
 * accepted before it in the same step: MTP on and off agree token for
 * token, with penalties that change the output. */
START_TEST(test_engine_mtp_penalties_identical)
{
    const char *path = spec_make("mtp-demo", false, 9);
    struct st_gen_params g;
    struct st_logit_bias ban;
    spec_penalties_that_matter(&(struct spec_run){ .path = path, .np = 4, .n_gen = 40 }, prompts,
                               &g, &ban);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    for (int32_t k = 1; k <= 4; k += 3) {
        spec_against_plain(&(struct spec_run){ .path = path, .np = 4, .mtp_draft = k,
                                               .n_gen = 40, .pen = &g }, prompts, off, on,
                           k == 1 ? "penalties, MTP k1 vs none" : "penalties, MTP k4 vs none");
        report("penalties", on);
        ck_assert(on->stats.mtp_accepted > 0);   /* accepted drafts fed later rows */
        spec_never_took(on, 4, ban.token);
    }
    /* seeded sampling too */
    spec_against_plain(&(struct spec_run){ .path = path, .np = 2, .mtp_draft = 3, .n_gen = 40,
                                           .temperature = 0.3f, .pen = &g }, prompts, off, on,
                       "penalties, seeded, MTP vs none");
    free(off);
    free(on);
}
END_TEST

/* Requests decoding together (the n > 1 choices of one call are separate
 * requests) keep their own histories: each equals its run alone. */
START_TEST(test_engine_mtp_penalties_separate_histories)
{
    const char *path = spec_make("tiny", false, 10);
    struct st_gen_params g = spec_penalties(NULL, 0);
    g.repeat_penalty = 1.0f;   /* generated tokens only */
    g.presence_penalty = 1.0f;
    struct spec_result *alone = malloc(sizeof(*alone)), *both = malloc(sizeof(*both));
    run(&(struct spec_run){ .path = path, .np = 1, .n_gen = 30, .pen = &g, .same_prompt = 1 },
        alone);
    run(&(struct spec_run){ .path = path, .np = 3, .n_gen = 30, .pen = &g, .same_prompt = 1 },
        both);
    for (int32_t i = 0; i < 3; i++) {
        ck_assert_int_eq(both->out[i].n, 30);
        for (int t = 0; t < 30; t++)
            ck_assert_msg(both->out[i].tok[t] == alone->out[0].tok[t],
                          "request %d token %d: %d vs %d alone", (int)i, t,
                          both->out[i].tok[t], alone->out[0].tok[t]);
    }
    free(alone);
    free(both);
}
END_TEST

/* ---- cost-aware draft lengths (spec_cost.c), timings injected ---------- */

/* mtp-demo at 4 slots (~90% accepted): where rows are nearly free (a GPU)
 * the engine drafts as much as the acceptance rule does; where each row
 * costs most of a step (this VM's CPU, bench_spec_cost) it drafts only in
 * its first steps (the acceptance rule decides until 6 drafting steps are
 * timed) and rare explorations, and skips the MTP upkeep in the steps
 * between (lean). The output is the same every way. */
START_TEST(test_engine_mtp_cost_aware_lengths)
{
    const char *path = spec_make("mtp-demo", false, 5);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    struct spec_run r = { .path = path, .np = 4, .mtp_draft = 3, .n_gen = 64 };
    spec_against_plain(&r, prompts, off, on, "unpriced");   /* a manual clock: no timings */
    uint64_t base = on->stats.mtp_drafted;
    ck_assert_int_eq(on->stats.spec_plain_steps, 0);   /* nothing priced: the acceptance rule */
    report("unpriced", on);

    struct spec_costs cheap = { .a = 10.0, .b = 0.01, .up = 1.02, .pass = 0.01 };
    struct st_mtp_test hook = { .step_ns = spec_cost_step, .draft_ns = spec_cost_draft,
                                .ctx = &cheap };
    r.hook = &hook;
    run(&r, on);
    report("rows nearly free", on);
    spec_same(off, on, 4, "rows nearly free");
    ck_assert_msg(on->stats.mtp_drafted * 10 >= base * 8, "rows nearly free: %llu drafted, "
                  "the acceptance rule %llu", (unsigned long long)on->stats.mtp_drafted,
                  (unsigned long long)base);
    ck_assert(on->stats.mtp_accepted * 2 > on->stats.mtp_drafted);
    spec_records_add_up(on);

    struct spec_costs dear = { .a = 0.6, .b = 0.78, .up = 1.07, .pass = 0.3 };
    hook.ctx = &dear;
    run(&r, on);
    report("rows dear", on);
    spec_same(off, on, 4, "rows dear");
    ck_assert_msg(on->stats.mtp_drafted * 2 <= base, "rows dear: %llu drafted, the acceptance "
                  "rule %llu", (unsigned long long)on->stats.mtp_drafted,
                  (unsigned long long)base);
    ck_assert_msg(dear.lean > dear.full, "rows dear: %lld lean steps, %lld full",
                  (long long)dear.lean, (long long)dear.full);
    ck_assert(on->stats.spec_plain_steps > 0);   /* strata_spec_plain_steps_total */
    /* drafting pays: without the upkeep only the plain steps that price a
     * slot count first seen (4, then fewer as requests end) */
    ck_assert_msg(cheap.lean <= 4, "rows nearly free: %lld lean steps", (long long)cheap.lean);
    spec_records_add_up(on);
    free(off);
    free(on);
}
END_TEST

/* ---- catch-up after forced plain stretches (mtp_catch.c) --------------- */

/* Steps [3, 15) and [20, 95) of a run are forced plain (no drafts, no MTP
 * upkeep): 12 positions per slot, then 75, more than ST_MTP_KEEP. The
 * corrupt hook leaves the drafts alone and notes the slots that drafted
 * with a gap (the runner's MTP layer caught them up in that draft call). */
struct plain_force {
    int32_t step;
    int32_t after_gap;   /* slot drafts made while the slot had a gap */
    int32_t max_gap;
};

static bool force_stretches(void *ctx)
{
    struct plain_force *f = ctx;
    int32_t s = f->step++;
    return (s >= 3 && s < 15) || (s >= 20 && s < 95);
}

static void note_gap(void *ctx, int32_t slot, int32_t *drafts, int32_t n)
{
    struct plain_force *f = ctx;
    (void)drafts;
    (void)n;
    int32_t gap = spec_pool->engines[0].slots[slot].mtp.gap;
    f->after_gap += gap > 0;
    f->max_gap = gap > f->max_gap ? gap : f->max_gap;
}

/* mtp-demo at 4 slots with fixed draft lengths: the first step after each
 * forced stretch drafts at once (the catch-up gives the slots their state
 * back in the draft call), the drafts are accepted as often as without the
 * stretches, and the output is the same as without MTP. */
START_TEST(test_engine_mtp_catch_up_after_plain_stretches)
{
    const char *path = spec_make("mtp-demo", false, 5);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    struct plain_force f = { 0 };
    struct st_mtp_test hook = { .fixed_length = true };
    struct spec_run r = { .path = path, .np = 4, .mtp_draft = 3, .n_gen = 128, .hook = &hook };
    spec_against_plain(&r, prompts, off, on, "no stretches");
    double base = (double)on->stats.mtp_accepted / (double)on->stats.mtp_drafted;
    hook = (struct st_mtp_test){ .fixed_length = true, .force_plain = force_stretches,
                                 .corrupt = note_gap, .ctx = &f };
    run(&r, on);
    report("forced plain stretches", on);
    spec_same(off, on, 4, "forced plain stretches");
    double acc = (double)on->stats.mtp_accepted / (double)on->stats.mtp_drafted;
    fprintf(stderr, "engine mtp catch-up: %d slot drafts right after a stretch, largest gap "
            "%d; accepted %.3f (without stretches %.3f)\n", (int)f.after_gap, (int)f.max_gap,
            acc, base);
    ck_assert_msg(f.after_gap >= 8, "only %d slots drafted right after a stretch",
                  (int)f.after_gap);
    ck_assert_int_eq(f.max_gap, ST_MTP_KEEP);   /* the long stretch, counted up to the cap */
    ck_assert_msg(acc >= base - 0.05, "drafts after stretches accepted %.3f, %.3f without", acc,
                  base);
    spec_records_add_up(on);
    free(off);
    free(on);
}
END_TEST

/* ---- a model without MTP ------------------------------------------------- */

START_TEST(test_engine_mtp_model_without_layer_serves)
{
    const char *path = spec_make("tiny", false, 8);
    char log[400];
    snprintf(log, sizeof(log), "%s/stderr.txt", spec_dir);
    struct spec_result *off = malloc(sizeof(*off)), *on = malloc(sizeof(*on));
    run(&(struct spec_run){ .path = path, .np = 1, .n_gen = 20 }, off);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(log, "w");
    ck_assert(f && saved >= 0);
    dup2(fileno(f), 2);
    run(&(struct spec_run){ .path = path, .np = 1, .mtp_draft = 2, .n_gen = 20 }, on);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    spec_same(off, on, 1, "no MTP layer");
    ck_assert_int_eq(on->stats.mtp_drafted, 0);
    char buf[16384] = { 0 };
    f = fopen(log, "r");
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *hit = strstr(buf, "has no MTP layer");
    ck_assert_msg(hit, "no warning in:\n%s", buf);
    ck_assert_msg(!strstr(hit + 1, "has no MTP layer"), "warned twice");
    ck_assert(strstr(buf, "warn"));
    free(off);
    free(on);
}
END_TEST

static Suite *engine_mtp_suite(void)
{
    Suite *s = suite_create("engine_mtp");
    TCase *tc = tcase_create("mtp");
    tcase_add_checked_fixture(tc, spec_setup, spec_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_engine_mtp_greedy_identical_np1);
    tcase_add_test(tc, test_engine_mtp_greedy_identical_np4);
    tcase_add_test(tc, test_engine_mtp_rollback_every_position);
    tcase_add_test(tc, test_engine_mtp_rollback_recurrent);
    tcase_add_test(tc, test_engine_mtp_seeded_sampling_reproducible);
    tcase_add_test(tc, test_engine_mtp_next_demo);
    tcase_add_test(tc, test_engine_mtp_model_without_layer_serves);
    tcase_add_test(tc, test_engine_mtp_penalties_identical);
    tcase_add_test(tc, test_engine_mtp_penalties_separate_histories);
    tcase_add_test(tc, test_engine_mtp_cost_aware_lengths);
    tcase_add_test(tc, test_engine_mtp_catch_up_after_plain_stretches);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(engine_mtp_suite(), CK_FORK);
}
