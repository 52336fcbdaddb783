/* test_mtp.c -- the MTP layer (include/strata/mtp.h) against the naive
 * reference (forward_ref.c: ref_mtp_step), its rollback, its batching,
 * its copy between slots (st_mtp_kv_copy: the carried state), its
 * catch-up after forwards without the upkeep (mtp_catch.c: the drafts
 * equal those of continuous upkeep to the bit, through a draft or a
 * forward, after a cut, and past the stash's length), and the make-model
 * presets that exist to measure it.
 *
 * The reference test runs the engine's loop by hand: a prompt read, then
 * draft / verify / accept / truncate rounds. Both paths see the same
 * tokens (the engine's drafts and greedy choices are fed to the
 * reference too), so every main row and every draft step's MTP logits
 * can be compared. Rejected drafts are cut from the engine's caches; the
 * reference simply overwrites those positions later, which is what a
 * correct rollback must be equivalent to. That harness is
 * mtp_ref_fixture.h, shared with test_mtp_glm.c.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "strata/forward.h"
#include "strata/mtp.h"
#include "model_fixture.h"
#include "support.h"

#define N_CTX 96
#define N_PROMPT 12
#define N_ROUNDS 6
#define N_DRAFT 3

#include "mtp_ref_fixture.h"   /* needs N_CTX .. N_DRAFT */

static char dir[256];

static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

static const char *make(const char *preset, const char *quant, bool mtp)
{
    static char path[320];
    return fixture_make_model(path, sizeof(path), dir, preset, quant, 3, mtp);
}

static struct st_model *load(const char *path, int32_t slots)
{
    struct st_err err = { 0 };
    struct st_model *m = NULL;
    ck_assert_msg(st_model_open(path, &m, &err) == ST_OK, "open: %s", err.msg);
    struct st_model_params p = { .n_threads = 2, .n_slots = slots, .n_ctx = N_CTX,
                                 .max_out = 32 };
    ck_assert_msg(st_model_load(m, &p, NULL, NULL, &err) == ST_OK, "load: %s", err.msg);
    return m;
}

/* The reference comparison on a model loaded for one slot. */
static struct tally compare_path(const char *path, int *accepted)
{
    struct st_model *m = load(path, 1);
    struct tally w = compare_mtp(m, accepted);
    st_model_free(m);
    return w;
}

START_TEST(test_mtp_matches_reference_random)
{
    int acc;
    struct tally w = compare_path(make("tiny", "q8_0", true), &acc);
    judge("tiny q8_0", &w);
    w = compare_path(make("small", "f32", true), &acc);
    judge("small f32", &w);
    ck_assert_msg(w.worst_cos >= 0.9999, "f32: worst cosine %.7f", w.worst_cos);
    /* qwen35moe's nextn block: gated attention and the gated shared expert */
    w = compare_path(make("next-tiny", "f32", true), &acc);
    judge("next-tiny f32", &w);
    ck_assert_msg(w.worst_cos >= 0.9999, "next f32: worst cosine %.7f", w.worst_cos);
    w = compare_path(make("next-tiny", "q8_0", true), &acc);
    judge("next-tiny q8_0", &w);
    /* qwen3next's (the converter's _QwenMtpMixin): as qwen35moe's */
    w = compare_path(make("next80-tiny", "f32", true), &acc);
    judge("next80-tiny f32", &w);
    ck_assert_msg(w.worst_cos >= 0.9999, "next80 f32: worst cosine %.7f", w.worst_cos);
    w = compare_path(make("next80-tiny", "q8_0", true), &acc);
    judge("next80-tiny q8_0", &w);
    /* qwen35's: gated attention and a dense FFN */
    w = compare_path(make("qwen35-tiny", "f32", true), &acc);
    judge("qwen35-tiny f32", &w);
    ck_assert_msg(w.worst_cos >= 0.9999, "qwen35 f32: worst cosine %.7f", w.worst_cos);
}
END_TEST

/* The demo preset: drafts are accepted, so the rounds run the chain
 * through accepted tokens and the carried state of a later row. */
START_TEST(test_mtp_matches_reference_demo)
{
    int acc;
    struct tally w = compare_path(make("mtp-demo", "q8_0", false), &acc);
    judge("mtp-demo q8_0", &w);
    fprintf(stderr, "mtp-demo: %d of %d drafts accepted in the reference rounds\n", acc,
            N_ROUNDS * N_DRAFT);
    ck_assert_msg(acc * 2 >= N_ROUNDS * N_DRAFT, "mtp-demo accepted only %d of %d", acc,
                  N_ROUNDS * N_DRAFT);
}
END_TEST

/* ---- behaviour without a reference ------------------------------------ */

START_TEST(test_mtp_forward_equals_plain_forward)
{
    const char *path = make("tiny", "q8_0", true);
    struct st_model *a = load(path, 2), *b = load(path, 2);
    struct st_mtp *t = mtp_of(b);
    int64_t nv = st_model_hparams(a)->n_vocab, pos[10], outs[2] = { 5, 9 };
    int32_t tok[10], slots[10] = { 0, 0, 0, 0, 0, 0, 1, 1, 1, 1 };
    ref_tokens(4, tok, 10, nv);
    for (int i = 0; i < 10; i++)
        pos[i] = i < 6 ? i : i - 6;
    struct st_model_batch bt = { 10, tok, slots, pos, 2, outs };
    const float *la, *lb;
    struct st_err err = { 0 };
    ck_assert(st_model_forward(a, &bt, &la, &err) == ST_OK);
    ck_assert_msg(st_mtp_forward(t, &bt, &lb, &err) == ST_OK, "%s", err.msg);
    ck_assert_msg(memcmp(la, lb, (size_t)(2 * nv) * sizeof(float)) == 0,
                  "the MTP upkeep changed the main logits");
    st_mtp_free(t);
    st_model_free(a);
    st_model_free(b);
}
END_TEST

/* Verify [t, x, y] (both rejected), cut back to one row: the next drafts
 * equal those of a model that only ever saw [t]. */
START_TEST(test_mtp_rollback_equals_never_written)
{
    const char *path = make("tiny", "q8_0", true);
    struct st_model *ma = load(path, 1), *mb = load(path, 1);
    struct st_mtp *ta = mtp_of(ma), *tb = mtp_of(mb);
    int64_t nv = st_model_hparams(ma)->n_vocab, pos[8], outs[1] = { 7 };
    int32_t tok[11], slots[8] = { 0 };
    ref_tokens(8, tok, 11, nv);
    for (int i = 0; i < 8; i++)
        pos[i] = i;
    struct st_model_batch pb = { 8, tok, slots, pos, 1, outs };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert(st_mtp_forward(ta, &pb, &lg, &err) == ST_OK);
    ck_assert(st_mtp_forward(tb, &pb, &lg, &err) == ST_OK);
    int64_t vp[3] = { 8, 9, 10 }, vo[3] = { 0, 1, 2 };
    struct st_model_batch va = { 3, tok + 8, slots, vp, 3, vo };   /* t, x, y */
    struct st_model_batch vb = { 1, tok + 8, slots, vp, 1, vo };   /* t alone */
    ck_assert(st_mtp_forward(ta, &va, &lg, &err) == ST_OK);
    st_mtp_truncate(ta, 0, 9);
    ck_assert(st_mtp_forward(tb, &vb, &lg, &err) == ST_OK);
    int32_t da[4], db[4];
    float *la = malloc((size_t)(4 * nv) * sizeof(float)), *lb = malloc((size_t)(4 * nv) * 4);
    struct st_mtp_draft qa = { 0, 5, 9, 4, da, la }, qb = { 0, 5, 9, 4, db, lb };
    ck_assert(st_mtp_draft(ta, &qa, 1, &err) == ST_OK);
    ck_assert(st_mtp_draft(tb, &qb, 1, &err) == ST_OK);
    ck_assert_int_eq(qa.n_draft, 4);
    double diff = 0;
    for (int64_t i = 0; i < 4 * nv; i++)
        diff = fmax(diff, fabs((double)la[i] - lb[i]));
    fprintf(stderr, "mtp rollback: max |logit diff| %.3g\n", diff);
    ck_assert_msg(diff <= 1e-4, "rolled-back drafts differ by %g", diff);
    ck_assert(memcmp(da, db, sizeof(da)) == 0);
    free(la);
    free(lb);
    st_mtp_free(ta);
    st_mtp_free(tb);
    st_model_free(ma);
    st_model_free(mb);
}
END_TEST

/* Two slots drafting in one call get what each gets alone. */
START_TEST(test_mtp_draft_batched_equals_alone)
{
    const char *path = make("tiny", "q8_0", true);
    struct st_model *m = load(path, 2);
    struct st_mtp *t = mtp_of(m);
    int64_t nv = st_model_hparams(m)->n_vocab, pos[12], outs[2] = { 5, 11 };
    int32_t tok[12], slots[12] = { 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1 };
    ref_tokens(6, tok, 12, nv);
    for (int i = 0; i < 12; i++)
        pos[i] = i % 6;
    struct st_model_batch b = { 12, tok, slots, pos, 2, outs };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert(st_mtp_forward(t, &b, &lg, &err) == ST_OK);
    int32_t both[2][4], alone[2][4];
    struct st_mtp_draft q[2] = { { 0, 3, 6, 4, both[0], NULL }, { 1, 7, 6, 2, both[1], NULL } };
    ck_assert(st_mtp_draft(t, q, 2, &err) == ST_OK);
    ck_assert(q[0].n_draft == 4 && q[1].n_draft == 2);
    for (int s = 0; s < 2; s++) {
        struct st_mtp_draft one = { s, s ? 7 : 3, 6, s ? 2 : 4, alone[s], NULL };
        ck_assert(st_mtp_draft(t, &one, 1, &err) == ST_OK);
        ck_assert(memcmp(alone[s], both[s], (size_t)one.n_draft * sizeof(int32_t)) == 0);
    }
    /* a bad request is refused with a message naming it */
    struct st_mtp_draft dup[2] = { { 0, 3, 6, 1, both[0], NULL }, { 0, 3, 6, 1, both[1], NULL } };
    ck_assert_int_eq(st_mtp_draft(t, dup, 2, &err), ST_ERR_INVALID);
    ck_assert(strstr(err.msg, "repeats a slot"));
    struct st_mtp_draft far = { 1, 3, N_CTX - 1, 4, both[1], NULL };
    ck_assert_int_eq(st_mtp_draft(t, &far, 1, &err), ST_ERR_INVALID);
    st_mtp_free(t);
    st_model_free(m);
}
END_TEST

/* A slot whose carried state was forgotten (cut to a position the last
 * forward did not compute) drafts nothing instead of drafting garbage. */
START_TEST(test_mtp_no_state_no_draft)
{
    struct st_model *m = load(make("tiny", "q8_0", true), 1);
    struct st_mtp *t = mtp_of(m);
    int32_t tok[6] = { 1, 2, 3, 4, 5, 6 }, slots[6] = { 0 }, d[4];
    int64_t pos[6] = { 0, 1, 2, 3, 4, 5 }, outs[1] = { 5 };
    struct st_model_batch b = { 6, tok, slots, pos, 1, outs };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert(st_mtp_forward(t, &b, &lg, &err) == ST_OK);
    struct st_mtp_draft q = { 0, 9, 6, 2, d, NULL };
    ck_assert(st_mtp_draft(t, &q, 1, &err) == ST_OK);
    ck_assert_int_eq(q.n_draft, 2);
    st_mtp_truncate(t, 0, 3);   /* position 2 was in the last forward: kept */
    q = (struct st_mtp_draft){ 0, 9, 3, 2, d, NULL };
    ck_assert(st_mtp_draft(t, &q, 1, &err) == ST_OK);
    ck_assert_int_eq(q.n_draft, 2);
    int64_t zero = 0;
    struct st_model_batch one = { 1, tok + 3, slots, pos + 3, 1, &zero };
    ck_assert(st_mtp_forward(t, &one, &lg, &err) == ST_OK);   /* row at 3 */
    st_mtp_truncate(t, 0, 2);   /* position 1 is not in the last forward */
    q = (struct st_mtp_draft){ 0, 9, 2, 2, d, NULL };
    ck_assert(st_mtp_draft(t, &q, 1, &err) == ST_OK);
    ck_assert_int_eq(q.n_draft, 0);
    st_mtp_free(t);
    st_model_free(m);
}
END_TEST

/* Slot 'slot' reads tok[0..n) at positions 0.. (one forward, one chunk). */
static void read_into(struct st_mtp *t, int32_t slot, const int32_t *tok, int64_t n)
{
    int32_t slots[16];
    int64_t pos[16], out = n - 1;
    ck_assert(n <= 16);
    for (int64_t i = 0; i < n; i++) {
        slots[i] = slot;
        pos[i] = i;
    }
    struct st_model_batch b = { n, tok, slots, pos, 1, &out };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert_msg(st_mtp_forward(t, &b, &lg, &err) == ST_OK, "%s", err.msg);
}

/* Both caches of [from, to) from slot src to slot dst (what the runner's
 * kv_copy does). */
static void copy_both(struct st_model *m, struct st_mtp *t, int32_t src, int32_t dst,
                      int64_t from, int64_t to)
{
    struct st_err err = { 0 };
    ck_assert_msg(st_model_kv_copy(m, src, dst, from, to, &err) == ST_OK, "%s", err.msg);
    ck_assert_msg(st_mtp_kv_copy(t, src, dst, from, to, &err) == ST_OK, "%s", err.msg);
}

/* Max |logit difference| of two drafts of 2 steps. */
static double draft_diff(const float *a, const float *b, int64_t nv)
{
    double d = 0;
    for (int64_t i = 0; i < 2 * nv; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* st_mtp_kv_copy (prefix sharing across slots): the copy carries the
 * source's state, so the destination drafts as a slot that read the
 * prefix itself; and a copy from a slot that was itself just copied into
 * never carries that slot's old state (the last forward's rows of the
 * prompt it held before): no draft rather than a wrong one. */
START_TEST(test_mtp_kv_copy_carries_the_right_state)
{
    const char *path = make("tiny", "q8_0", true);
    struct st_model *m = load(path, 3), *r = load(path, 2);
    struct st_mtp *t = mtp_of(m), *tr = mtp_of(r);
    int64_t nv = st_model_hparams(m)->n_vocab;
    int32_t a[12], b[10], d[2], dr[2];
    ref_tokens(11, a, 12, nv);
    ref_tokens(12, b, 10, nv);
    ck_assert_int_ne(a[5], b[5]);
    float *lg = malloc((size_t)(2 * nv) * sizeof(float));
    float *lr = malloc((size_t)(2 * nv) * sizeof(float));
    struct st_err err = { 0 };
    /* the reference: prefixes of 6 and 10 tokens of a, read for real */
    read_into(tr, 0, a, 6);
    read_into(tr, 1, a, 10);

    read_into(t, 0, a, 10);   /* slot 0: a[0..10) */
    read_into(t, 1, b, 10);   /* slot 1: b[0..10), the last forward */
    copy_both(m, t, 0, 1, 0, 10);   /* slot 1 now holds a[0..10) */
    struct st_mtp_draft q = { 1, a[10], 10, 2, d, lg }, qr = { 1, a[10], 10, 2, dr, lr };
    ck_assert(st_mtp_draft(t, &q, 1, &err) == ST_OK);
    ck_assert(st_mtp_draft(tr, &qr, 1, &err) == ST_OK);
    ck_assert_int_eq(q.n_draft, 2);
    ck_assert_msg(draft_diff(lg, lr, nv) <= 1e-4, "drafts after a copy differ by %g",
                  draft_diff(lg, lr, nv));

    /* slot 2 takes a[0..6) from slot 1, whose state at 5 only the last
     * forward had, for b: it must not carry that */
    copy_both(m, t, 1, 2, 0, 6);
    q = (struct st_mtp_draft){ 2, a[6], 6, 2, d, lg };
    qr = (struct st_mtp_draft){ 0, a[6], 6, 2, dr, lr };
    ck_assert(st_mtp_draft(t, &q, 1, &err) == ST_OK);
    ck_assert(st_mtp_draft(tr, &qr, 1, &err) == ST_OK);
    ck_assert_msg(q.n_draft == 0 || draft_diff(lg, lr, nv) <= 1e-4,
                  "slot 2 drafts from a stale state: logits differ by %g",
                  draft_diff(lg, lr, nv));
    free(lg);
    free(lr);
    st_mtp_free(t);
    st_mtp_free(tr);
    st_model_free(m);
    st_model_free(r);
}
END_TEST

/* ---- catch-up after steps without the upkeep (mtp_catch.c) ------------- */

/* One forward of n rows (one row per slot, every row a logit row): with
 * the upkeep (st_mtp_forward), or without it as the runner runs a lean
 * step (st_model_forward, then st_mtp_skipped). */
static void step_rows(struct st_model *m, struct st_mtp *t, int64_t n, int32_t *tok,
                      int32_t *slots, int64_t *pos, bool lean)
{
    int64_t outs[4] = { 0, 1, 2, 3 };
    ck_assert(n <= 4);
    struct st_model_batch b = { n, tok, slots, pos, n, outs };
    const float *lg;
    struct st_err err = { 0 };
    if (lean) {
        ck_assert_msg(st_model_forward(m, &b, &lg, &err) == ST_OK, "%s", err.msg);
        st_mtp_skipped(t, &b);
    } else {
        ck_assert_msg(st_mtp_forward(t, &b, &lg, &err) == ST_OK, "%s", err.msg);
    }
}

static void step_one(struct st_model *m, struct st_mtp *t, int32_t slot, int32_t tok, int64_t p,
                     bool lean)
{
    step_rows(m, t, 1, &tok, &slot, &p, lean);
}

/* Drafts of 2 steps for n slots at pos[i] from tok[i]; logits into
 * lg + i * 2 * nv. Returns the drafts made in all. */
static int32_t draft2(struct st_mtp *t, int32_t n, const int32_t *slots, const int32_t *tok,
                      const int64_t *pos, float *lg, int64_t nv)
{
    struct st_mtp_draft q[2];
    int32_t d[2][2], made = 0;
    for (int32_t i = 0; i < n; i++)
        q[i] = (struct st_mtp_draft){ slots[i], tok[i], pos[i], 2, d[i], lg + i * 2 * nv };
    struct st_err err = { 0 };
    ck_assert_msg(st_mtp_draft(t, q, n, &err) == ST_OK, "%s", err.msg);
    for (int32_t i = 0; i < n; i++)
        made += q[i].n_draft;
    return made;
}

static double max_diff(const float *a, const float *b, int64_t n)
{
    double d = 0;
    for (int64_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* Model a keeps the upkeep on every step; model b skips it (slot 0 for 12
 * steps, slot 1 for the last 7 of them, the last 7 in one batch). Slot 0
 * is caught up by a draft, slot 1 by the next forward with the upkeep:
 * the drafts of both equal a's to the bit, before and after a verify. */
START_TEST(test_mtp_catch_up_equals_continuous_upkeep)
{
    const char *path = make("tiny", "q8_0", true);
    struct st_model *ma = load(path, 2), *mb = load(path, 2);
    struct st_mtp *ta = mtp_of(ma), *tb = mtp_of(mb);
    int64_t nv = st_model_hparams(ma)->n_vocab;
    int32_t a[8], b[8], gen[2][14];
    ref_tokens(31, a, 8, nv);
    ref_tokens(32, b, 8, nv);
    ref_tokens(33, gen[0], 14, nv);
    ref_tokens(34, gen[1], 14, nv);
    read_into(ta, 0, a, 8);
    read_into(ta, 1, b, 8);
    read_into(tb, 0, a, 8);
    read_into(tb, 1, b, 8);
    int32_t slots[2] = { 0, 1 };
    for (int64_t i = 0; i < 12; i++) {
        int32_t tok[2] = { gen[0][i], gen[1][i] };
        int64_t pos[2] = { 8 + i, 8 + i };
        step_rows(ma, ta, 2, tok, slots, pos, false);
        if (i < 5) {
            step_one(mb, tb, 0, tok[0], pos[0], true);
            step_one(mb, tb, 1, tok[1], pos[1], false);
        } else {
            step_rows(mb, tb, 2, tok, slots, pos, true);
        }
    }
    float *la = malloc((size_t)(4 * nv) * sizeof(float)), *lb = malloc((size_t)(4 * nv) * 4);
    int32_t tok[2] = { gen[0][12], gen[1][12] };
    int64_t pos[2] = { 20, 20 };
    ck_assert_int_eq(draft2(ta, 1, slots, tok, pos, la, nv), 2);
    ck_assert_int_eq(draft2(tb, 1, slots, tok, pos, lb, nv), 2);
    ck_assert_msg(st_mtp_caught(tb) == 12, "caught up %llu rows, not 12",
                  (unsigned long long)st_mtp_caught(tb));
    fprintf(stderr, "mtp catch-up: draft after 12 skipped rows: max |logit diff| %.3g\n",
            max_diff(la, lb, 2 * nv));
    ck_assert_msg(max_diff(la, lb, 2 * nv) == 0.0, "caught-up drafts differ by %g",
                  max_diff(la, lb, 2 * nv));
    step_rows(ma, ta, 2, tok, slots, pos, false);   /* slot 1: caught up here */
    step_rows(mb, tb, 2, tok, slots, pos, false);
    ck_assert_uint_eq(st_mtp_caught(tb), 12 + 7);
    int32_t tok2[2] = { gen[0][13], gen[1][13] };
    int64_t pos2[2] = { 21, 21 };
    ck_assert_int_eq(draft2(ta, 2, slots, tok2, pos2, la, nv), 4);
    ck_assert_int_eq(draft2(tb, 2, slots, tok2, pos2, lb, nv), 4);
    ck_assert_msg(max_diff(la, lb, 4 * nv) == 0.0, "drafts after the verify differ by %g",
                  max_diff(la, lb, 4 * nv));
    ck_assert_uint_eq(st_mtp_caught(tb), 12 + 7);   /* nothing left to catch up */
    free(la);
    free(lb);
    st_mtp_free(ta);
    st_mtp_free(tb);
    st_model_free(ma);
    st_model_free(mb);
}
END_TEST

/* A cut inside a skipped stretch: the catch-up covers the positions below
 * the cut only and drafts as a model that never went further. A stretch
 * longer than ST_MTP_KEEP: the last ST_MTP_KEEP - 1 rows are caught up
 * (the first kept one has no carried predecessor) and the slot drafts. */
START_TEST(test_mtp_catch_up_after_cut_and_long_stretch)
{
    const char *path = make("tiny", "q8_0", true);
    struct st_model *mb = load(path, 2), *mc = load(path, 1);
    struct st_mtp *tb = mtp_of(mb), *tc = mtp_of(mc);
    int64_t nv = st_model_hparams(mb)->n_vocab;
    int32_t a[8], gen[ST_MTP_KEEP + 8], slot0 = 0, slot1 = 1;
    ref_tokens(41, a, 8, nv);
    ref_tokens(42, gen, ST_MTP_KEEP + 8, nv);
    read_into(tb, 0, a, 8);
    read_into(tc, 0, a, 8);
    for (int64_t i = 0; i < 10; i++) {
        step_one(mb, tb, 0, gen[i], 8 + i, true);
        if (i < 6)
            step_one(mc, tc, 0, gen[i], 8 + i, false);
    }
    st_mtp_truncate(tb, 0, 14);   /* a rollback to 14 */
    float *lb = malloc((size_t)(2 * nv) * sizeof(float)), *lc = malloc((size_t)(2 * nv) * 4);
    int32_t x = gen[ST_MTP_KEEP + 7];
    int64_t p = 14;
    ck_assert_int_eq(draft2(tb, 1, &slot0, &x, &p, lb, nv), 2);
    ck_assert_int_eq(draft2(tc, 1, &slot0, &x, &p, lc, nv), 2);
    ck_assert_uint_eq(st_mtp_caught(tb), 6);
    ck_assert_msg(max_diff(lb, lc, 2 * nv) == 0.0, "drafts after a cut differ by %g",
                  max_diff(lb, lc, 2 * nv));

    int32_t b[8];
    ref_tokens(43, b, 8, nv);
    read_into(tb, 1, b, 8);
    for (int64_t i = 0; i < ST_MTP_KEEP + 6; i++)
        step_one(mb, tb, 1, gen[i], 8 + i, true);
    p = 8 + ST_MTP_KEEP + 6;
    ck_assert_int_eq(draft2(tb, 1, &slot1, &x, &p, lb, nv), 2);
    ck_assert_uint_eq(st_mtp_caught(tb), 6 + ST_MTP_KEEP - 1);
    free(lb);
    free(lc);
    st_mtp_free(tb);
    st_mtp_free(tc);
    st_model_free(mb);
    st_model_free(mc);
}
END_TEST

/* Rows per chunk R = 8: two slots' gaps (13 and 9 rows) go through the
 * catch-up in passes of 8, 8 and 6 rows, one pass holding rows of both
 * slots; both slots draft as with continuous upkeep, to the bit. */
START_TEST(test_mtp_catch_up_in_chunks)
{
    const char *path = make("tiny", "q8_0", true);
    struct st_model *m2[2];
    struct st_err err = { 0 };
    for (int i = 0; i < 2; i++) {
        m2[i] = NULL;
        ck_assert_msg(st_model_open(path, &m2[i], &err) == ST_OK, "open: %s", err.msg);
        struct st_model_params p = { .n_threads = 2, .n_slots = 2, .n_ctx = N_CTX,
                                     .max_out = 8, .max_rows = 8 };
        ck_assert_msg(st_model_load(m2[i], &p, NULL, NULL, &err) == ST_OK, "%s", err.msg);
    }
    struct st_mtp *ta = mtp_of(m2[0]), *tb = mtp_of(m2[1]);
    int64_t nv = st_model_hparams(m2[0])->n_vocab;
    int32_t a[8], b[8], gen[2][14], slots[2] = { 0, 1 };
    ref_tokens(51, a, 8, nv);
    ref_tokens(52, b, 8, nv);
    ref_tokens(53, gen[0], 14, nv);
    ref_tokens(54, gen[1], 14, nv);
    read_into(ta, 0, a, 8);
    read_into(ta, 1, b, 8);
    read_into(tb, 0, a, 8);
    read_into(tb, 1, b, 8);
    for (int64_t i = 0; i < 13; i++) {
        int32_t tok[2] = { gen[0][i], gen[1][i] };
        int64_t pos[2] = { 8 + i, 8 + i };
        step_rows(m2[0], ta, 2, tok, slots, pos, false);
        step_one(m2[1], tb, 0, tok[0], pos[0], true);
        step_one(m2[1], tb, 1, tok[1], pos[1], i < 4 ? false : true);
    }
    float *la = malloc((size_t)(4 * nv) * sizeof(float)), *lb = malloc((size_t)(4 * nv) * 4);
    int32_t tok[2] = { gen[0][13], gen[1][13] };
    int64_t pos[2] = { 21, 21 };
    ck_assert_int_eq(draft2(ta, 2, slots, tok, pos, la, nv), 4);
    ck_assert_int_eq(draft2(tb, 2, slots, tok, pos, lb, nv), 4);
    ck_assert_uint_eq(st_mtp_caught(tb), 13 + 9);
    ck_assert_msg(max_diff(la, lb, 4 * nv) == 0.0, "drafts after a chunked catch-up differ by %g",
                  max_diff(la, lb, 4 * nv));
    free(la);
    free(lb);
    st_mtp_free(ta);
    st_mtp_free(tb);
    st_model_free(m2[0]);
    st_model_free(m2[1]);
}
END_TEST

START_TEST(test_mtp_refuses_model_without_nextn)
{
    struct st_model *m = load(make("tiny", "q8_0", false), 1);
    ck_assert(!st_mtp_available(m));
    struct st_mtp *t = NULL;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_mtp_new(m, 1, &t, &err), ST_ERR_UNSUPPORTED);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err.msg, "has no MTP layer"), "%s", err.msg);
    st_model_free(m);
}
END_TEST

/* Greedy decode of 40 tokens, drafting one token ahead each step: how
 * often the MTP block agrees with the model. */
static double agreement(const char *path)
{
    struct st_model *m = load(path, 1);
    struct st_mtp *t = mtp_of(m);
    int64_t nv = st_model_hparams(m)->n_vocab, pos[4] = { 0, 1, 2, 3 }, outs[1] = { 3 };
    int32_t tok[4] = { 10, 20, 30, 40 }, slots[4] = { 0 };
    struct st_model_batch b = { 4, tok, slots, pos, 1, outs };
    const float *lg;
    struct st_err err = { 0 };
    ck_assert(st_mtp_forward(t, &b, &lg, &err) == ST_OK);
    int agree = 0, n = 40;
    int32_t cur = argmax(lg, nv);
    for (int64_t p = 4; p < 4 + n; p++) {
        int32_t d;
        struct st_mtp_draft q = { 0, cur, p, 1, &d, NULL };
        ck_assert(st_mtp_draft(t, &q, 1, &err) == ST_OK);
        int64_t zero = 0;
        struct st_model_batch one = { 1, &cur, slots, &p, 1, &zero };
        ck_assert(st_mtp_forward(t, &one, &lg, &err) == ST_OK);
        cur = argmax(lg, nv);
        agree += d == cur;
    }
    st_mtp_free(t);
    st_model_free(m);
    return (double)agree / n;
}

START_TEST(test_mtp_demo_preset_agrees)
{
    double demo = agreement(make("mtp-demo", "q8_0", false));
    double next = agreement(make("next-mtp-demo", "q8_0", false));
    double rnd = agreement(make("small", "q8_0", true));
    fprintf(stderr, "mtp agreement: mtp-demo %.2f, next-mtp-demo %.2f, small --mtp %.2f\n", demo,
            next, rnd);
    ck_assert_msg(demo >= 0.8, "mtp-demo drafts agree only %.2f of the time", demo);
    ck_assert_msg(next >= 0.8, "next-mtp-demo drafts agree only %.2f of the time", next);
    ck_assert_msg(rnd <= 0.2, "random MTP drafts agree %.2f of the time", rnd);
}
END_TEST

static Suite *mtp_suite(void)
{
    Suite *s = suite_create("mtp");
    TCase *ref = tcase_create("reference");
    tcase_add_checked_fixture(ref, setup, teardown);
    tcase_set_timeout(ref, 300);
    tcase_add_test(ref, test_mtp_matches_reference_random);
    tcase_add_test(ref, test_mtp_matches_reference_demo);
    suite_add_tcase(s, ref);
    TCase *beh = tcase_create("behaviour");
    tcase_add_checked_fixture(beh, setup, teardown);
    tcase_set_timeout(beh, 120);
    tcase_add_test(beh, test_mtp_forward_equals_plain_forward);
    tcase_add_test(beh, test_mtp_rollback_equals_never_written);
    tcase_add_test(beh, test_mtp_draft_batched_equals_alone);
    tcase_add_test(beh, test_mtp_no_state_no_draft);
    tcase_add_test(beh, test_mtp_kv_copy_carries_the_right_state);
    tcase_add_test(beh, test_mtp_refuses_model_without_nextn);
    tcase_add_test(beh, test_mtp_demo_preset_agrees);
    suite_add_tcase(s, beh);
    TCase *cu = tcase_create("catch-up");
    tcase_add_checked_fixture(cu, setup, teardown);
    tcase_set_timeout(cu, 120);
    tcase_add_test(cu, test_mtp_catch_up_equals_continuous_upkeep);
    tcase_add_test(cu, test_mtp_catch_up_after_cut_and_long_stretch);
    tcase_add_test(cu, test_mtp_catch_up_in_chunks);
    suite_add_tcase(s, cu);
    return s;
}

int main(void)
{
    return support_run_suite(mtp_suite(), CK_FORK);
}
