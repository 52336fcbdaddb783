/* test_runner_model.c -- the model runner (src/runner/runner_model.c) on a
 * make-model tiny file: its text side (tokenize/detokenize round trip,
 * pieces, end of generation, the chat template from the GGUF) and its
 * forward through the runner API (a READ chunk then DECODE rows, logits
 * equal to the model's own forward, prefix rollback, refused reads), and
 * what steps without the MTP upkeep leave behind.
 */
#define _POSIX_C_SOURCE 200809L   /* dup, dup2, fileno: the warning test reads stderr */
#include <check.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/runner.h"
#include "runner/runner_model.h"
#include "strata/engine.h"
#include "strata/forward.h"
#include "model_fixture.h"
#include "support.h"

static char dir[256], path[320];
static struct st_runner *r;

static void setup(void)
{
    struct st_err err = { 0 };
    support_tmpdir(dir, sizeof(dir));
    fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 1, false);
    ck_assert_msg(st_runner_model_new(path, "cpu", -1, 2, 2, 128, 16, &r, &err) == ST_OK, "%s",
                  err.msg);
}

static void teardown(void)
{
    st_runner_free(r);
    r = NULL;
    support_rmtree(dir);
}

static void load(void)
{
    struct st_err err = { 0 };
    ck_assert_msg(st_runner_load(r, NULL, NULL, NULL, &err) == ST_OK, "%s", err.msg);
}

START_TEST(test_runner_model_tokenize_round_trip)
{
    static const char text[] = "Hello world, this is a test of the runner: 123 caf\xc3\xa9!";
    int32_t *ids = NULL;
    size_t n = 0;
    char *back = NULL;
    struct st_err err = { 0 };
    ck_assert(st_runner_tokenize(r, text, strlen(text), false, false, &ids, &n, &err) == ST_OK);
    ck_assert_uint_gt(n, 3);
    ck_assert_uint_lt(n, strlen(text));   /* merges happened: fewer tokens than bytes */
    for (size_t i = 0; i < n; i++)
        ck_assert(ids[i] >= 0 && ids[i] < st_runner_n_vocab(r));
    ck_assert(st_runner_detokenize(r, ids, n, &back, &err) == ST_OK);
    ck_assert_str_eq(back, text);
    /* pieces concatenate to the text too */
    char joined[256] = "", piece[64];
    for (size_t i = 0; i < n; i++) {
        size_t len = st_runner_token_piece(r, ids[i], piece, sizeof(piece));
        ck_assert_uint_lt(len, sizeof(piece));
        strncat(joined, piece, len);
    }
    ck_assert_str_eq(joined, text);
    free(ids);
    free(back);
}
END_TEST

START_TEST(test_runner_model_special_tokens)
{
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_err err = { 0 };
    ck_assert(st_runner_tokenize(r, "<|im_end|>", 10, false, true, &ids, &n, &err) == ST_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert(st_runner_is_eog(r, ids[0]));
    const int32_t *eog = NULL;
    size_t n_eog = st_runner_eog_ids(r, &eog);
    bool found = false;
    for (size_t i = 0; i < n_eog; i++)
        found |= eog[i] == ids[0];
    ck_assert(found);
    char piece[32];
    ck_assert_uint_eq(st_runner_token_piece(r, ids[0], piece, sizeof(piece)), 0);   /* control */
    free(ids);
    ck_assert(st_runner_tokenize(r, "hi", 2, false, false, &ids, &n, &err) == ST_OK);
    ck_assert(!st_runner_is_eog(r, ids[0]));
    ck_assert_uint_gt(st_runner_token_piece(r, ids[0], piece, sizeof(piece)), 0);
    free(ids);
    /* <think> is USER_DEFINED (special=false in Qwen3's tokenizer.json): one
     * token, and generated text shows it, so the reply parser sees it */
    ck_assert(st_runner_tokenize(r, "<think>", 7, false, false, &ids, &n, &err) == ST_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(st_runner_token_piece(r, ids[0], piece, sizeof(piece)), 7);
    ck_assert(memcmp(piece, "<think>", 7) == 0);
    free(ids);
    /* make-model pads the vocabulary with [PAD<i>] (UNUSED) rows: no text */
    int32_t last = st_runner_n_vocab(r) - 1;
    char *text = NULL;
    ck_assert(st_runner_detokenize(r, &last, 1, &text, &err) == ST_OK);
    ck_assert_msg(strncmp(text, "[PAD", 4) == 0, "last token is '%s'", text);
    ck_assert_uint_eq(st_runner_token_piece(r, last, piece, sizeof(piece)), 0);
    free(text);
}
END_TEST

/* st_runner_apply_template on JSON text: the messages parsed whatever
 * they are (the renderer checks them), the tools as they are. */
static enum st_status apply_json(const char *msgs, const char *tools, char **prompt,
                                 struct st_err *err)
{
    struct st_chat_request req;
    st_chat_request_init(&req);
    req.messages = cJSON_Parse(msgs);
    req.tools = tools ? strdup(tools) : NULL;
    enum st_status rc = st_runner_apply_template(r, &req, ST_CHAT_END_GENERATE, prompt, err);
    st_chat_request_fini(&req);
    return rc;
}

START_TEST(test_runner_model_chat_template)
{
    char *prompt = NULL;
    struct st_err err = { 0 };
    const char *msgs = "[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi \"},"
                       "{\"type\":\"text\",\"text\":\"there\"}]}]";
    ck_assert_msg(apply_json(msgs, NULL, &prompt, &err) == ST_OK, "%s", err.msg);
    ck_assert_str_eq(prompt, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
                             "Hi there<|im_end|>\n<|im_start|>assistant\n");
    free(prompt);
    /* ChatML has no place for tools: the request still renders, without them
     * (the log said so when the model was loaded). */
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(apply_json(msgs, "[{\"type\":\"function\",\"function\""
                                    ":{\"name\":\"f\"}}]", &prompt, &err), ST_OK);
        ck_assert_ptr_null(strstr(prompt, "\"f\""));
        free(prompt);
    }
    ck_assert_int_eq(apply_json("{}", NULL, &prompt, &err), ST_ERR_INVALID);
    ck_assert_int_eq(apply_json("[{\"content\":\"x\"}]", NULL, &prompt, &err), ST_ERR_INVALID);
}
END_TEST

/* A READ of the prompt then two DECODE rows, against st_model_forward on a
 * second instance of the same file. */
START_TEST(test_runner_model_forward_matches_model)
{
    load();
    int32_t prompt[6] = { 5, 17, 33, 2, 9, 41 }, next = 12;
    int32_t nv = st_runner_n_vocab(r);
    struct st_runner_seq seq = { .kind = ST_SEQ_READ, .slot = 1, .tokens = prompt,
                                 .n_tokens = 6, .pos = 0, .sample = true };
    struct st_runner_row rows[3];
    struct st_runner_out out = { .rows = rows };
    struct st_runner_batch b = { &seq, 1 };
    struct st_err err = { 0 };
    ck_assert_msg(st_runner_forward(r, &b, &out, &err) == ST_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(rows[0].logits);
    float *a = malloc((size_t)nv * sizeof(float));
    memcpy(a, rows[0].logits, (size_t)nv * sizeof(float));

    struct st_model *m = NULL;
    ck_assert(st_model_open(path, &m, &err) == ST_OK);
    struct st_model_params p = { .n_threads = 1, .n_slots = 1, .n_ctx = 128 };
    ck_assert(st_model_load(m, &p, NULL, NULL, &err) == ST_OK);
    int32_t slots[6] = { 0 };
    int64_t pos[6] = { 0, 1, 2, 3, 4, 5 }, last = 5;
    struct st_model_batch mb = { 6, prompt, slots, pos, 1, &last };
    const float *lg;
    ck_assert(st_model_forward(m, &mb, &lg, &err) == ST_OK);
    for (int32_t i = 0; i < nv; i++)
        ck_assert_msg(fabsf(a[i] - lg[i]) <= 1e-5f, "logit %d: %g vs %g", i, a[i], lg[i]);

    /* decode one row at position 6 through both */
    seq = (struct st_runner_seq){ .kind = ST_SEQ_DECODE, .slot = 1, .tokens = &next,
                                  .n_tokens = 1, .pos = 6, .sample = true };
    ck_assert(st_runner_forward(r, &b, &out, &err) == ST_OK);
    int64_t p6 = 6, zero = 0;
    struct st_model_batch md = { 1, &next, slots, &p6, 1, &zero };
    ck_assert(st_model_forward(m, &md, &lg, &err) == ST_OK);
    for (int32_t i = 0; i < nv; i++)
        ck_assert(fabsf(rows[0].logits[i] - lg[i]) <= 1e-5f);
    st_model_free(m);
    free(a);
}
END_TEST

/* A chunk without 'sample' gives no logits; reading past a slot's cache is
 * refused; after kv_truncate the slot re-reads and gets the same logits. */
START_TEST(test_runner_model_kv_rules)
{
    load();
    int32_t toks[8] = { 3, 1, 4, 1, 5, 9, 2, 6 };
    struct st_runner_seq seq = { .kind = ST_SEQ_READ, .slot = 0, .tokens = toks, .n_tokens = 4,
                                 .pos = 0, .sample = false };
    struct st_runner_row rows[3] = { { .logits = (const float *)1, .token = 7 } };
    struct st_runner_out out = { .rows = rows };
    struct st_runner_batch b = { &seq, 1 };
    struct st_err err = { 0 };
    ck_assert(st_runner_forward(r, &b, &out, &err) == ST_OK);
    ck_assert_ptr_eq(rows[0].logits, (const float *)1);   /* untouched */
    seq.pos = 6;                                          /* a hole at 4, 5 */
    ck_assert_int_eq(st_runner_forward(r, &b, &out, &err), ST_ERR_INTERNAL);
    seq = (struct st_runner_seq){ .kind = ST_SEQ_READ, .slot = 0, .tokens = toks + 4,
                                  .n_tokens = 4, .pos = 4, .sample = true };
    ck_assert(st_runner_forward(r, &b, &out, &err) == ST_OK);
    int32_t nv = st_runner_n_vocab(r);
    float *first = malloc((size_t)nv * sizeof(float));
    memcpy(first, rows[0].logits, (size_t)nv * sizeof(float));
    st_runner_kv_truncate(r, 0, 4);                       /* keep the first 4 */
    ck_assert(st_runner_forward(r, &b, &out, &err) == ST_OK);
    ck_assert(memcmp(first, rows[0].logits, (size_t)nv * sizeof(float)) == 0);
    st_runner_kv_truncate(r, 0, 0);                       /* empty: reads from 0 again */
    seq.pos = 0;
    seq.n_tokens = 4;
    ck_assert(st_runner_forward(r, &b, &out, &err) == ST_OK);
    free(first);
}
END_TEST

START_TEST(test_runner_model_rejects_bad_files)
{
    struct st_runner *x = NULL;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_runner_model_new("/nonexistent.gguf", "cpu", -1, 1, 1, 16, 8, &x, &err),
                     ST_ERR_IO);
    ck_assert_ptr_null(x);
    ck_assert_int_eq(st_runner_model_new(path, "cpu", -1, 1, 0, 16, 8, &x, &err), ST_ERR_BAD_CONFIG);
    ck_assert(st_runner_model_new(path, "nosuch", -1, 1, 1, 16, 8, &x, &err) == ST_OK);
    ck_assert_int_eq(st_runner_load(x, NULL, NULL, NULL, &err), ST_ERR_UNSUPPORTED);
    st_runner_free(x);
}
END_TEST

/* st_runner_model_new_cfg then load, with stderr captured into 'log'. */
static enum st_status new_cfg_logged(const struct st_model_config *m, struct st_runner **out,
                                     char *log, size_t cap, struct st_err *err)
{
    char lp[400];
    snprintf(lp, sizeof(lp), "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(fileno(stderr)), fd = open(lp, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    ck_assert(saved >= 0 && fd >= 0);
    dup2(fd, fileno(stderr));
    enum st_status rc = st_runner_model_new_cfg(m, "cpu", -1, 1, 8, out, err);
    if (rc == ST_OK)
        rc = st_runner_load(*out, NULL, NULL, NULL, err);
    fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    close(fd);
    FILE *f = fopen(lp, "r");
    size_t n = f ? fread(log, 1, cap - 1, f) : 0;
    log[n] = '\0';
    if (f)
        fclose(f);
    return rc;
}

/* The pool's rope settings reach the model (yarn over a file without
 * scaling), a clash is refused with the model's name, and a load with a
 * context past the trained one without scaling logs a warning. */
START_TEST(test_runner_model_rope_config)
{
    struct st_runner *x = NULL;
    struct st_err err = { 0 };
    char log[4096];
    struct st_model_config m = { .name = (char *)"t", .path = path, .parallel = 1,
                                 .ctx_size = 64, .rope_scaling = ST_ROPE_SCALING_YARN, .rope_scale = 4.0,
                                 .yarn_orig_ctx = 32 };
    ck_assert_msg(new_cfg_logged(&m, &x, log, sizeof(log), &err) == ST_OK, "%s", err.msg);
    const struct st_hparams *hp = st_model_hparams(((struct model_runner *)x)->model);
    ck_assert(hp->rope_scaling == ST_ROPE_SCALING_YARN && hp->rope.ext_factor == 1.0f &&
              hp->rope.freq_scale == 0.25f && hp->rope_n_ctx_orig == 32);
    ck_assert_ptr_null(strstr(log, "no rope scaling"));
    ck_assert_ptr_null(strstr(log, "yarn reaches"));     /* 64 <= 32 x 4 */
    st_runner_free(x);

    m.rope_scaling = ST_ROPE_SCALING_NONE;    /* with a factor */
    m.rope_scale = 2.0;
    x = (struct st_runner *)&m;
    ck_assert_int_eq(new_cfg_logged(&m, &x, log, sizeof(log), &err), ST_ERR_BAD_CONFIG);
    ck_assert_ptr_null(x);
    ck_assert_msg(strstr(err.msg, "model 't': --rope-scale 2 needs --rope-scaling"), "%s",
                  err.msg);

    m.rope_scaling = ST_ROPE_SCALING_MODEL;   /* the file's (none), a context past the trained one */
    m.rope_scale = 0;
    m.ctx_size = st_model_hparams(((struct model_runner *)r)->model)->n_ctx_train * 2;
    ck_assert_msg(new_cfg_logged(&m, &x, log, sizeof(log), &err) == ST_OK, "%s", err.msg);
    ck_assert_msg(strstr(log, "no rope scaling is on") && strstr(log, "--rope-scaling yarn"),
                  "log: %s", log);
    st_runner_free(x);

    m.rope_scaling = ST_ROPE_SCALING_YARN;    /* that does not reach the context */
    m.rope_scale = 2.0;
    m.yarn_orig_ctx = 16;
    m.ctx_size = 64;
    ck_assert_msg(new_cfg_logged(&m, &x, log, sizeof(log), &err) == ST_OK, "%s", err.msg);
    ck_assert_msg(strstr(log, "above the 32 positions yarn reaches"), "log: %s", log);
    st_runner_free(x);
}
END_TEST

/* One DECODE row through the runner, with or without the MTP upkeep. */
static void decode_one(struct st_runner *x, int32_t slot, int32_t token, int64_t pos,
                       bool lean)
{
    struct st_runner_seq seq = { .kind = ST_SEQ_DECODE, .slot = slot, .tokens = &token,
                                 .n_tokens = 1, .pos = pos, .sample = true,
                                 .no_mtp_upkeep = lean };
    struct st_runner_row row;
    struct st_runner_out out = { .rows = &row };
    struct st_runner_batch b = { &seq, 1 };
    struct st_err err = { 0 };
    ck_assert_msg(st_runner_forward(x, &b, &out, &err) == ST_OK, "%s", err.msg);
}

/* Forwards that skip the MTP upkeep (runner.h no_mtp_upkeep) leave no
 * state behind that describes other tokens: slot 0 reads a[0..6), is cut
 * back to 4 (a draft round's rollback), decodes two other tokens at 4 and
 * 5 without the upkeep, and is copied to slot 1. The MTP states of a[4],
 * a[5] from the read must not come along: slot 1 drafts nothing (no
 * forward with the upkeep has seen its tokens at 4 and 5). */
START_TEST(test_runner_model_lean_steps_leave_no_stale_mtp_state)
{
    char mpath[320];
    struct st_runner *x = NULL;
    struct st_err err = { 0 };
    fixture_make_model(mpath, sizeof(mpath), dir, "tiny", "q8_0", 3, true);
    ck_assert_msg(st_runner_model_new(mpath, "cpu", -1, 2, 2, 64, 16, &x, &err) == ST_OK, "%s",
                  err.msg);
    x->mtp_draft = 2;
    ck_assert_msg(st_runner_load(x, NULL, NULL, NULL, &err) == ST_OK, "%s", err.msg);
    ck_assert_int_eq(st_runner_mtp_max(x), 2);
    int32_t a[6] = { 5, 17, 33, 2, 9, 41 }, d[2];
    struct st_runner_seq seq = { .kind = ST_SEQ_READ, .slot = 0, .tokens = a, .n_tokens = 6,
                                 .pos = 0, .sample = true };
    struct st_runner_row row;
    struct st_runner_out out = { .rows = &row };
    struct st_runner_batch b = { &seq, 1 };
    ck_assert_msg(st_runner_forward(x, &b, &out, &err) == ST_OK, "%s", err.msg);
    st_runner_kv_truncate(x, 0, 4);
    decode_one(x, 0, 7, 4, true);
    decode_one(x, 0, 8, 5, true);
    ck_assert_msg(st_runner_kv_copy(x, 0, 1, 0, 6, &err) == ST_OK, "%s", err.msg);
    struct st_runner_draft q = { .slot = 1, .token = 3, .pos = 6, .n_draft = 2, .out = d };
    ck_assert_msg(st_runner_mtp_draft(x, &q, 1, &err) == ST_OK, "%s", err.msg);
    ck_assert_msg(q.n_draft == 0, "slot 1 drafted %d from a state of tokens it does not hold",
                  (int)q.n_draft);
    /* a forward with the upkeep gives the slot a state again */
    decode_one(x, 1, 3, 6, false);
    q = (struct st_runner_draft){ .slot = 1, .token = 4, .pos = 7, .n_draft = 2, .out = d };
    ck_assert_msg(st_runner_mtp_draft(x, &q, 1, &err) == ST_OK, "%s", err.msg);
    ck_assert_int_eq(q.n_draft, 2);
    st_runner_free(x);
}
END_TEST

static Suite *runner_model_suite(void)
{
    Suite *s = suite_create("runner_model");
    TCase *tc = tcase_create("runner");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_runner_model_tokenize_round_trip);
    tcase_add_test(tc, test_runner_model_special_tokens);
    tcase_add_test(tc, test_runner_model_chat_template);
    tcase_add_test(tc, test_runner_model_forward_matches_model);
    tcase_add_test(tc, test_runner_model_kv_rules);
    tcase_add_test(tc, test_runner_model_rejects_bad_files);
    tcase_add_test(tc, test_runner_model_rope_config);
    tcase_add_test(tc, test_runner_model_lean_steps_leave_no_stale_mtp_state);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(runner_model_suite(), CK_FORK);
}
