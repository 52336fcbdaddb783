/* test_engine_infill.c -- st_engine_pool_infill_prompt (src/engine/infill.c)
 * on a make-model file: the token ids of the repo-level layout exactly
 * (<|repo_name|> 541, <|file_sep|> 542, <|fim_prefix|> 537, <|fim_suffix|>
 * 539, <|fim_middle|> 538 in the built-in vocabulary), FIM markers in the
 * user's text tokenized as text, the context budget cutting a long prefix,
 * and a model built --no-fim answering ST_ERR_UNSUPPORTED. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "model_fixture.h"
#include "strata/fim.h"
#include "support.h"

static char dir[512];

/* ids of text without special parsing, appended to out at *n. */
static void add_text(struct st_engine_pool *p, const char *text, int32_t *out, size_t *n)
{
    int32_t *ids = NULL;
    size_t k = 0;
    ck_assert_int_eq(st_engine_pool_tokenize(p, 0, text, strlen(text), false, false, &ids, &k,
                                             NULL), ST_OK);
    memcpy(out + *n, ids, k * sizeof(*ids));
    *n += k;
    free(ids);
}

static void add_id(int32_t id, int32_t *out, size_t *n)
{
    out[(*n)++] = id;
}

START_TEST(test_engine_infill_exact_ids)
{
    char path[600];
    struct fixture_pool f;
    fixture_pool_start(&f, fixture_make_model(path, sizeof(path), dir, "tiny", "q8_0", 1, false),
                       1, 0);
    const char *prefix = "int f(x) { /* <|fim_middle|> */";
    struct st_infill_chunk extra[] = { { "a.c", "int g;" }, { NULL, "y" } };
    struct st_infill_input in = { .prefix = prefix, .suffix = "}\n", .prompt = "return",
                                  .extra = extra, .n_extra = 2, .n_predict = 16 };
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_fim_trim t;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_engine_pool_infill_prompt(f.pool, 0, &in, &ids, &n, &t, &err), ST_OK);
    int32_t want[256];
    size_t nw = 0;
    add_id(541, want, &nw);
    add_text(f.pool, "myproject\n", want, &nw);
    add_id(542, want, &nw);
    add_text(f.pool, "a.c\n", want, &nw);
    add_text(f.pool, "int g;", want, &nw);
    add_id(542, want, &nw);
    add_text(f.pool, "tmp\n", want, &nw);
    add_text(f.pool, "y", want, &nw);
    add_id(542, want, &nw);
    add_text(f.pool, "filename\n", want, &nw);
    add_id(537, want, &nw);
    add_text(f.pool, prefix, want, &nw);
    add_id(539, want, &nw);
    add_text(f.pool, "}\n", want, &nw);
    add_id(538, want, &nw);
    add_text(f.pool, "return", want, &nw);
    ck_assert_uint_eq(n, nw);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(ids[i] == want[i], "id %zu: %d, want %d", i, (int)ids[i], (int)want[i]);
    size_t fim_ids = 0;   /* the marker in the prefix is text: only the 6 placed ids */
    for (size_t i = 0; i < n; i++)
        fim_ids += ids[i] >= 537 && ids[i] <= 542;
    ck_assert_uint_eq(fim_ids, 7);   /* rep, 3 sep, pre, suf, mid */
    ck_assert(!t.headers_dropped && t.prefix_dropped == 0);
    free(ids);

    /* ctx 256, n_predict 200 -> reserve 128: a long prefix is cut to fit */
    char big[4000];
    memset(big, 0, sizeof(big));
    for (int i = 0; i < 300; i++)
        strcat(big, " x1");
    struct st_infill_input in2 = { .prefix = big, .suffix = "end", .n_predict = 200 };
    ck_assert_int_eq(st_engine_pool_infill_prompt(f.pool, 0, &in2, &ids, &n, &t, &err), ST_OK);
    ck_assert_uint_eq(n, 128);
    ck_assert_int_eq(ids[0], 537);    /* no room for the headers */
    ck_assert_int_eq(ids[n - 1], 538);
    ck_assert(t.headers_dropped && t.prefix_dropped > 0 && t.suffix_dropped == 0);
    free(ids);
    /* the prompt alone over the budget */
    in2.prefix = NULL;
    in2.prompt = big;
    ck_assert_int_eq(st_engine_pool_infill_prompt(f.pool, 0, &in2, &ids, &n, NULL, &err),
                     ST_ERR_TOO_LONG);
    fixture_pool_stop(&f);
}
END_TEST

START_TEST(test_engine_infill_no_fim_model)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/nofim.gguf", dir);
    struct st_make_model_opts o = { .out_path = path, .preset = "tiny", .seed = 1,
                                    .no_fim = true };
    struct st_err err = { 0 };
    ck_assert_int_eq(st_make_model(&o, &err), ST_OK);
    struct fixture_pool f;
    fixture_pool_start(&f, path, 1, 0);
    struct st_infill_input in = { .prefix = "a", .suffix = "b" };
    int32_t *ids = NULL;
    size_t n = 0;
    ck_assert_int_eq(st_engine_pool_infill_prompt(f.pool, 0, &in, &ids, &n, NULL, &err),
                     ST_ERR_UNSUPPORTED);
    ck_assert_ptr_null(ids);
    ck_assert(strstr(err.msg, "fill-in-the-middle") != NULL);
    int32_t *t = NULL;   /* the FIM texts are no tokens of it */
    ck_assert_int_eq(st_engine_pool_tokenize(f.pool, 0, "<|fim_prefix|>", 14, false, true, &t,
                                             &n, NULL), ST_OK);
    ck_assert_uint_gt(n, 1);
    free(t);
    fixture_pool_stop(&f);
}
END_TEST

static void setup(void)
{
    support_tmpdir(dir, sizeof(dir));
}

static void teardown(void)
{
    support_rmtree(dir);
}

static Suite *engine_infill_suite(void)
{
    Suite *s = suite_create("engine_infill");
    TCase *t = tcase_create("engine_infill");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_engine_infill_exact_ids);
    tcase_add_test(t, test_engine_infill_no_fim_model);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(engine_infill_suite(), CK_FORK);
}
