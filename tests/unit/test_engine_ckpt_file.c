/* test_engine_ckpt_file.c -- POST /slots save/restore of a slot with state
 * checkpoints (next-tiny, qwen35moe; src/model/slot_state.c version 2,
 * docs/API.md "Slot actions"): a slot that read a 120-token prompt in
 * 32-token chunks keeps checkpoints at 32, 64 and 96; its file restored
 * into a fresh pool brings them back, so a prompt sharing only the first
 * 100 tokens resumes from 96 and answers as a fresh read does. A pool that
 * keeps fewer checkpoints takes the longest; one that keeps none, none. A
 * version 1 file (no checkpoints) still restores, without them; a later
 * version is refused with the versions this build reads.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/clock.h"
#include "strata/engine.h"
#include "strata/sched.h"
#include "strata/slot_action.h"
#include "strata/slot_state.h"
#include "ckpt_fixture.h"
#include "model_fixture.h"
#include "support.h"

#define N_ALL  (N_SYS + N_END)

static char dir[256], path[320], file[400];

static void setup(void)
{
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "next-tiny", "q8_0", 3, false);
    snprintf(file, sizeof(file), "%s/slot.bin", dir);
}

static void teardown(void) { support_rmtree(dir); }

/* One engine of one slot, chunks of 32, 'ckpts' checkpoints kept a slot;
 * the model loaded. */
static void start(struct fixture_pool *f, int32_t ckpts)
{
    struct fixture_knobs k = fixture_knobs(1);
    k.ubatch = 32;
    k.ckpts = ckpts;
    fixture_pool_start_with(f, path, &k);
    (void)st_engine_pool_step(f->pool, 0);   /* the start-up load: a slot to restore into */
}

static void run_ids(struct fixture_pool *f, const int32_t *ids, struct got *out)
{
    memset(out, 0, sizeof(*out));
    struct st_request *req = fixture_submit_greedy(f->pool, ids, N_ALL, N_GEN, 0, ckpt_on_event,
                                                   out);
    fixture_pool_drain(f);
    ck_assert(out->ended);
    ck_assert_int_eq(out->n, N_GEN);
    st_request_unref(req);
}

static enum st_status act(struct fixture_pool *f, enum st_slot_action a, const char *p,
                          struct st_slot_action_result *res, struct st_err *err)
{
    return st_engine_pool_slot_action(f->pool, 0, a, p, res, err);
}

static void assert_same(const struct got *a, const struct got *b, const char *what)
{
    for (int g = 0; g < N_GEN; g++)
        ck_assert_msg(a->tokens[g] == b->tokens[g], "%s: token %d: %d vs %d", what, g,
                      a->tokens[g], b->tokens[g]);
}

/* Prompt a read with 3 checkpoints kept, the slot saved to 'file'; *fresh
 * gets prompt b's answer read from scratch in another fresh pool. Returns
 * the tokens saved. */
static int64_t save_after_a(struct got *fresh)
{
    int32_t a_ids[N_ALL], b_ids[N_ALL];
    ckpt_prompt(a_ids, 0);
    ckpt_prompt(b_ids, 1);
    struct fixture_pool f;
    struct got a;
    struct st_slot_action_result res;
    struct st_err err = { 0 };
    start(&f, 3);
    run_ids(&f, a_ids, &a);
    ck_assert_int_eq(ckpt_count(&f), 3);   /* 32, 64, 96 */
    ck_assert_msg(act(&f, ST_SLOT_ACTION_SAVE, file, &res, &err) == ST_OK, "%s", err.msg);
    ck_assert_int_ge(res.n_tokens, N_ALL);
    fixture_pool_stop(&f);
    start(&f, 3);
    run_ids(&f, b_ids, fresh);
    ck_assert_int_eq(fresh->n_cached, 0);
    fixture_pool_stop(&f);
    return res.n_tokens;
}

/* Restore 'p' into a fresh pool keeping 'ckpts', then run prompt b: its
 * n_cached and tokens into *b; the checkpoints restored are returned. */
static int32_t restore_then_b(const char *p, int32_t ckpts, int64_t want_tokens, struct got *b)
{
    int32_t b_ids[N_ALL];
    ckpt_prompt(b_ids, 1);
    struct fixture_pool f;
    struct st_slot_action_result res;
    struct st_err err = { 0 };
    start(&f, ckpts);
    ck_assert_msg(act(&f, ST_SLOT_ACTION_RESTORE, p, &res, &err) == ST_OK, "%s", err.msg);
    ck_assert_int_eq(res.n_tokens, want_tokens);
    int32_t n = ckpt_count(&f);
    run_ids(&f, b_ids, b);
    fixture_pool_stop(&f);
    return n;
}

START_TEST(test_ckpt_file_restored_slot_resumes)
{
    struct got fresh, b;
    int64_t n = save_after_a(&fresh);
    ck_assert_int_eq(restore_then_b(file, 3, n, &b), 3);
    ck_assert_int_eq(b.n_cached, 96);   /* from the restored checkpoint at 96 */
    assert_same(&b, &fresh, "restored checkpoint vs fresh");
    /* a pool keeping one takes the longest, 96; one keeping none reads from 0 */
    ck_assert_int_eq(restore_then_b(file, 1, n, &b), 1);
    ck_assert_int_eq(b.n_cached, 96);
    assert_same(&b, &fresh, "one checkpoint kept vs fresh");
    ck_assert_int_eq(restore_then_b(file, 0, n, &b), 0);
    ck_assert_int_eq(b.n_cached, 0);
    assert_same(&b, &fresh, "none kept vs fresh");
}
END_TEST

/* The file as bytes (owned), its length in *len. */
static unsigned char *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *data = malloc(*len);
    ck_assert_uint_eq(fread(data, 1, *len, f), *len);
    fclose(f);
    return data;
}

static void spit(const char *p, const unsigned char *data, size_t len)
{
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* A version 1 file (what a build before checkpoints wrote: no section
 * after the state) restores without checkpoints; version 3 is refused and
 * says so; a damaged checkpoint section is refused, the slot left empty. */
START_TEST(test_ckpt_file_versions)
{
    struct got fresh, b;
    int64_t n = save_after_a(&fresh);
    size_t len = 0;
    unsigned char *data = slurp(file, &len);
    struct st_slot_file_head h;
    memcpy(&h, data, sizeof(h));
    ck_assert_uint_eq(h.version, ST_SLOT_FILE_VERSION);
    size_t one = (size_t)h.n_recurrent * (size_t)(h.conv_elems + h.delta_elems) * sizeof(float);
    size_t section = sizeof(int64_t) + 3 * (sizeof(int64_t) + one);
    ck_assert_uint_gt(len, section);
    int64_t count = 0, first = 0;
    memcpy(&count, data + len - section, sizeof(count));
    memcpy(&first, data + len - section + sizeof(count), sizeof(first));
    ck_assert_int_eq(count, 3);
    ck_assert_int_eq(first, 96);   /* the longest first */

    char old[420];
    snprintf(old, sizeof(old), "%s/v1.bin", dir);
    h.version = 1;
    memcpy(data, &h, sizeof(h));
    spit(old, data, len - section);
    ck_assert_int_eq(restore_then_b(old, 3, n, &b), 0);
    ck_assert_int_eq(b.n_cached, 0);
    assert_same(&b, &fresh, "version 1 vs fresh");

    struct fixture_pool f;
    struct st_slot_action_result res;
    struct st_err err = { 0 };
    h.version = 3;
    memcpy(data, &h, sizeof(h));
    spit(old, data, len);
    start(&f, 3);
    ck_assert_int_eq(act(&f, ST_SLOT_ACTION_RESTORE, old, &res, &err), ST_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "version 3") && strstr(err.msg, "versions 1 to 2"), "%s",
                  err.msg);
    /* version 2 with checkpoints out of order (64 before 96): refused, slot empty */
    h.version = 2;
    memcpy(data, &h, sizeof(h));
    int64_t at = 64;
    memcpy(data + len - section + sizeof(count), &at, sizeof(at));
    spit(old, data, len);
    memset(&err, 0, sizeof(err));
    ck_assert_int_eq(act(&f, ST_SLOT_ACTION_RESTORE, old, &res, &err), ST_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "checkpoint"), "%s", err.msg);
    ck_assert_int_eq(ckpt_count(&f), 0);
    struct st_slot_view v;
    ck_assert_int_eq(st_engine_pool_slots(f.pool, &v, 1), 1);
    ck_assert_int_eq(v.n_cached, 0);
    fixture_pool_stop(&f);
    free(data);
}
END_TEST

static Suite *engine_ckpt_file_suite(void)
{
    Suite *s = suite_create("engine_ckpt_file");
    TCase *tc = tcase_create("next");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_ckpt_file_restored_slot_resumes);
    tcase_add_test(tc, test_ckpt_file_versions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(engine_ckpt_file_suite(), CK_FORK);
}
