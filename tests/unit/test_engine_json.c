/* test_engine_json.c -- response_format json_object (the sampler's JSON
 * mask) through the real engine loop (pool, scheduler, step.c, the CPU
 * model runner) on synthetic models:
 *
 *   - every request's text is a valid JSON prefix starting with '{', and
 *     a complete object whenever it ends with STOP;
 *   - with --batch-mtp the tokens equal those without it, greedy and
 *     seeded (each verify row is masked with the state after the drafts
 *     accepted before it), and drafts do get accepted.
 *
 * The steps run on the test thread (st_engine_pool_step) on a manual
 * clock.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "model_fixture.h"
#include "strata/json_prefix.h"
#include "strata/sched.h"
#include "support.h"

static char dir[256];

static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

struct run {
    const char *path;
    int32_t np, mtp_draft, n_gen;
    float   temperature;
    bool    ignore_eos;
};

static const char *const prompts[4] = {
    "The quick brown fox", "Once upon a time there was", "1 2 3 4 5 6", "Hello, world!",
};

static void submit(struct st_engine_pool *p, int32_t i, const struct run *r, struct fixture_out *o)
{
    struct st_request *req = st_request_new();
    snprintf(req->id, sizeof(req->id), "r%d", (int)i);
    req->prompt = strdup(prompts[i]);
    req->params.max_tokens = r->n_gen;
    req->params.ignore_eos = r->ignore_eos;
    req->params.temperature = r->temperature;
    req->params.has_seed = true;
    req->params.seed = 42 + (uint64_t)i;
    req->params.json_object = true;
    req->emit = fixture_record;
    req->emit_ctx = o;
    struct st_err err = { 0 };
    ck_assert_msg(st_engine_pool_submit(p, req, &err) == ST_OK, "submit: %s", err.msg);
    st_request_unref(req);
}

static void run(const struct run *r, struct fixture_out *out, struct st_pool_stats *stats)
{
    struct fixture_pool f;
    fixture_pool_start(&f, r->path, r->np, r->mtp_draft);
    (void)st_engine_pool_step(f.pool, 0);   /* loads the model */
    memset(out, 0, sizeof(*out) * (size_t)r->np);
    for (int32_t i = 0; i < r->np; i++)
        submit(f.pool, i, r, &out[i]);
    fixture_pool_drain(&f);
    for (int32_t i = 0; i < r->np; i++) {
        const struct fixture_out *o = &out[i];
        ck_assert_msg(o->ended, "request %d did not end", (int)i);
        ck_assert_msg(o->finish == ST_FINISH_STOP || o->finish == ST_FINISH_LENGTH,
                      "request %d: finish %d", (int)i, (int)o->finish);
        struct st_json_prefix j;
        st_json_prefix_init(&j);
        ck_assert_msg(o->len > 0 && o->text[0] == '{', "request %d: '%s'", (int)i, o->text);
        ck_assert_msg(st_json_prefix_feed(&j, o->text, o->len), "request %d: not JSON: '%s'",
                      (int)i, o->text);
        if (o->finish == ST_FINISH_STOP)
            ck_assert_msg(st_json_prefix_complete(&j), "request %d stopped early: '%s'",
                          (int)i, o->text);
    }
    st_engine_pool_stats(f.pool, stats);
    fixture_pool_stop(&f);
}

static void same(const struct fixture_out *a, const struct fixture_out *b, int32_t np,
                 const char *what)
{
    for (int32_t i = 0; i < np; i++) {
        ck_assert_int_eq(a[i].n, b[i].n);
        for (int t = 0; t < a[i].n; t++)
            ck_assert_msg(a[i].tok[t] == b[i].tok[t], "%s: request %d token %d: %d vs %d", what,
                          (int)i, t, a[i].tok[t], b[i].tok[t]);
        ck_assert_str_eq(a[i].text, b[i].text);
    }
}

/* Plain runs on the tiny model, greedy and sampled, end on their own. */
START_TEST(test_engine_json_text_is_json)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 1, false);
    struct fixture_out out[4];
    struct st_pool_stats st;
    run(&(struct run){ .path = path, .np = 4, .n_gen = 64 }, out, &st);
    run(&(struct run){ .path = path, .np = 4, .n_gen = 64, .temperature = 1.0f }, out, &st);
    fprintf(stderr, "engine json: '%.60s' ...\n", out[0].text);
}
END_TEST

/* MTP on and off agree, greedy and seeded; ignore_eos keeps the lengths
 * fixed (a complete object then only takes whitespace). */
START_TEST(test_engine_json_mtp_identical)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "mtp-demo", "q8_0", 3, false);
    struct fixture_out off[2], on[2];
    struct st_pool_stats so, sn;
    const float temps[2] = { 0.0f, 0.3f };
    for (int ti = 0; ti < 2; ti++) {
        run(&(struct run){ .path = path, .np = 2, .n_gen = 60, .temperature = temps[ti],
                           .ignore_eos = true }, off, &so);
        for (int32_t k = 1; k <= 4; k += 3) {
            run(&(struct run){ .path = path, .np = 2, .mtp_draft = k, .n_gen = 60,
                               .temperature = temps[ti], .ignore_eos = true }, on, &sn);
            fprintf(stderr, "engine json mtp t=%.1f k=%d: drafted %llu, accepted %llu\n",
                    (double)temps[ti], (int)k, (unsigned long long)sn.mtp_drafted,
                    (unsigned long long)sn.mtp_accepted);
            same(off, on, 2, "json, MTP vs none");
            ck_assert_int_eq(on[0].n, 60);
            ck_assert(sn.mtp_drafted > 0 && sn.mtp_accepted > 0);
        }
    }
}
END_TEST

static Suite *engine_json_suite(void)
{
    Suite *s = suite_create("engine_json");
    TCase *t = tcase_create("json");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_engine_json_text_is_json);
    tcase_add_test(t, test_engine_json_mtp_identical);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(engine_json_suite(), CK_FORK);
}
