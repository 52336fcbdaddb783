/* test_slot_state.c -- a slot's prompt cache to a file and back
 * (src/model/slot_state.c through the runner's slot_save / slot_restore)
 * on a make-model tiny file: a restored slot decodes exactly as the saved
 * one; every truncation of the file and every flipped byte of its header
 * is refused or restores, never crashes, and a refused restore leaves the
 * slot empty.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/runner.h"
#include "runner/runner_model.h"
#include "strata/slot_state.h"
#include "model_fixture.h"
#include "slot_fixture.h"
#include "support.h"

static char dir[256], path[320], file[400];
static struct st_runner *r;

static void setup(void)
{
    struct st_err err = { 0 };
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 1, false);
    ck_assert_msg(st_runner_model_new(path, "cpu", -1, 1, 2, 64, 16, &r, &err) == ST_OK, "%s",
                  err.msg);
    ck_assert_msg(st_runner_load(r, NULL, NULL, NULL, &err) == ST_OK, "%s", err.msg);
    snprintf(file, sizeof(file), "%s/slot.bin", dir);
}

static void teardown(void)
{
    st_runner_free(r);
    r = NULL;
    support_rmtree(dir);
}

/* Decode token 12 at position 6 in 'slot': a copy of its logits (owned). */
static float *decode_at_6(int32_t slot)
{
    const int32_t next = 12;
    const float *logits = slot_fixture_forward(r, ST_SEQ_DECODE, slot, &next, 1, 6);
    ck_assert_ptr_nonnull(logits);
    size_t n = (size_t)st_runner_n_vocab(r) * sizeof(float);
    float *copy = malloc(n);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, logits, n);
    return copy;
}

/* Write data[0..n) as the slot file and restore it into 'slot'. */
static enum st_status restore_from(const unsigned char *data, size_t n, int32_t slot,
                                   int64_t *n_tokens)
{
    FILE *f = fopen(file, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
    struct st_err err = { 0 };
    return slot_fixture_restore(r, slot, file, NULL, n_tokens, NULL, &err);
}

START_TEST(test_slot_state_restore_decodes_alike)
{
    slot_fixture_read(r, 0);
    int64_t written = slot_fixture_save(r, file);
    ck_assert_int_gt(written, (int64_t)sizeof(struct st_slot_file_head) + 6 * 4);
    int32_t *ids = NULL;
    int64_t n = 0, read = 0;
    struct st_err err = { 0 };
    ck_assert_msg(slot_fixture_restore(r, 1, file, &ids, &n, &read, &err) == ST_OK, "%s",
                  err.msg);
    ck_assert_int_eq(n, 6);
    ck_assert_int_eq(read, written);
    ck_assert(memcmp(ids, slot_fixture_prompt, sizeof(slot_fixture_prompt)) == 0);
    free(ids);
    float *a = decode_at_6(0), *b = decode_at_6(1);
    ck_assert(memcmp(a, b, (size_t)st_runner_n_vocab(r) * sizeof(float)) == 0);
    free(a);
    free(b);
}
END_TEST

/* Every shorter file is refused (the slot left empty: a decode at 6 is
 * refused); every flipped header byte is refused or restores. */
START_TEST(test_slot_state_damaged_files)
{
    slot_fixture_read(r, 0);
    size_t n = (size_t)slot_fixture_save(r, file);
    unsigned char *data = malloc(n);
    FILE *f = fopen(file, "rb");
    ck_assert_uint_eq(fread(data, 1, n, f), n);
    fclose(f);
    int64_t got = 0;
    for (size_t len = 0; len < n; len++) {
        ck_assert_msg(restore_from(data, len, 1, &got) == ST_ERR_INVALID, "length %zu", len);
        ck_assert_int_eq(got, 0);
    }
    for (size_t i = 0; i < sizeof(struct st_slot_file_head); i++) {
        data[i] ^= 0x5a;
        enum st_status rc = restore_from(data, n, 1, &got);
        ck_assert_msg(rc == ST_OK || rc == ST_ERR_INVALID, "byte %zu: %d", i, (int)rc);
        data[i] ^= 0x5a;
    }
    ck_assert_int_eq(restore_from(data, n, 1, &got), ST_OK);
    ck_assert_int_eq(got, 6);
    free(data);
}
END_TEST

static Suite *slot_state_suite(void)
{
    Suite *s = suite_create("slot_state");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_slot_state_restore_decodes_alike);
    tcase_add_test(tc, test_slot_state_damaged_files);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(slot_state_suite(), CK_FORK);
}
