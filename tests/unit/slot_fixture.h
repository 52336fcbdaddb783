/* slot_fixture.h -- one slot's KV through the runner for the slot-file
 * suites (test_slot_state.c, test_kv_types.c): a fixed 6-token prompt read
 * into a slot, that slot saved to a file (st_runner_slot_save) and a file
 * restored into a slot (st_runner_slot_restore). Header-only (static
 * inline); failures of the steps that must work fail the test. */
#ifndef STRATA_TEST_SLOT_FIXTURE_H
#define STRATA_TEST_SLOT_FIXTURE_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "runner/runner.h"

static const int32_t slot_fixture_prompt[6] = { 5, 17, 33, 2, 9, 41 };

/* One sequence through the runner: tokens[0..n) into 'slot' from 'pos', a
 * prompt read or (DECODE) a step that samples; returns the last row's
 * logits (the runner's, valid until its next forward; NULL for a read). */
static inline const float *slot_fixture_forward(struct st_runner *r, enum st_runner_seq_kind kind,
                                                int32_t slot, const int32_t *tokens, int64_t n,
                                                int64_t pos)
{
    struct st_runner_seq seq = { .kind = kind, .slot = slot, .tokens = tokens, .n_tokens = n,
                                 .pos = pos, .sample = kind == ST_SEQ_DECODE };
    struct st_runner_row row = { 0 };
    struct st_runner_out out = { .rows = &row };
    struct st_runner_batch b = { &seq, 1 };
    struct st_err err = { 0 };
    ck_assert_msg(st_runner_forward(r, &b, &out, &err) == ST_OK, "%s", err.msg);
    return seq.sample ? row.logits : NULL;
}

/* Read slot_fixture_prompt into 'slot' from position 0. */
static inline void slot_fixture_read(struct st_runner *r, int32_t slot)
{
    slot_fixture_forward(r, ST_SEQ_READ, slot, slot_fixture_prompt, 6, 0);
}

/* Save slot 0 (holding slot_fixture_prompt) to 'file'; returns the bytes
 * written. */
static inline int64_t slot_fixture_save(struct st_runner *r, const char *file)
{
    struct st_err err = { 0 };
    FILE *f = fopen(file, "wb");
    ck_assert_ptr_nonnull(f);
    int64_t bytes = 0;
    ck_assert_msg(st_runner_slot_save(r, 0, slot_fixture_prompt, 6, f, &bytes, &err) == ST_OK,
                  "%s", err.msg);
    ck_assert_int_eq(fclose(f), 0);
    return bytes;
}

/* Restore 'file' into 'slot': the runner's status, *n_tokens and *bytes
 * (either may be NULL) as it set them; the prompt's ids into *ids (the
 * caller's to free) or, with ids NULL, freed here. */
static inline enum st_status slot_fixture_restore(struct st_runner *r, int32_t slot,
                                                  const char *file, int32_t **ids,
                                                  int64_t *n_tokens, int64_t *bytes,
                                                  struct st_err *err)
{
    FILE *f = fopen(file, "rb");
    ck_assert_ptr_nonnull(f);
    int32_t *got = NULL;
    int64_t n = 0, read = 0;
    enum st_status rc = st_runner_slot_restore(r, slot, f, &got, &n, &read, err);
    fclose(f);
    if (ids)
        *ids = got;
    else
        free(got);
    if (n_tokens)
        *n_tokens = n;
    if (bytes)
        *bytes = read;
    return rc;
}

#endif /* STRATA_TEST_SLOT_FIXTURE_H */
