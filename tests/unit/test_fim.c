/* test_fim.c -- fill-in-the-middle prompts (src/chat/fim.c): the exact id
 * layout with and without the repo-level tokens, the budget rule (extra
 * chunks go first, then the prefix keeps its end and the suffix its start,
 * 3:1), the errors, detection by token text, and that FIM markers inside
 * user text stay text when tokenized without special parsing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tok/internal.h"
#include "tok/unicode/unicode.h"
#include "strata/fim.h"
#include "strata/tokenizer.h"
#include "support.h"

static const struct st_fim_ids QWEN = { 1, 2, 3, 4, 5, 6 };

#define SPAN(a) ((struct st_fim_span){ (a), ST_ARRAY_LEN(a) })

static void expect_ids(const int32_t *got, size_t n, const int32_t *want, size_t n_want)
{
    ck_assert_uint_eq(n, n_want);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "id %zu: got %d, want %d", i, (int)got[i],
                      (int)want[i]);
}

static const int32_t prefix[] = { 10, 11, 12 }, suffix[] = { 20, 21 }, prompt[] = { 30 };
static const int32_t repo[] = { 40 }, file[] = { 41 };
static const int32_t h0[] = { 50 }, t0[] = { 51, 52 }, h1[] = { 60 }, t1[] = { 61 };

static struct st_fim_parts parts(struct st_fim_span *heads, struct st_fim_span *texts)
{
    heads[0] = SPAN(h0);
    texts[0] = SPAN(t0);
    heads[1] = SPAN(h1);
    texts[1] = SPAN(t1);
    return (struct st_fim_parts){ .bos = -1, .repo = SPAN(repo), .chunk_head = heads,
                                  .chunk_text = texts, .n_chunks = 2, .file = SPAN(file),
                                  .prefix = SPAN(prefix), .suffix = SPAN(suffix),
                                  .prompt = SPAN(prompt) };
}

START_TEST(test_fim_layout_repo_level)
{
    struct st_fim_span heads[2], texts[2];
    struct st_fim_parts p = parts(heads, texts);
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_fim_trim t;
    ck_assert_int_eq(st_fim_layout(&QWEN, &p, 1000, &ids, &n, &t, NULL), ST_OK);
    static const int32_t want[] = { 5, 40, 6, 50, 51, 52, 6, 60, 61, 6, 41,
                                    1, 10, 11, 12, 2, 20, 21, 3, 30 };
    expect_ids(ids, n, want, ST_ARRAY_LEN(want));
    ck_assert_int_eq(t.prefix_dropped + t.suffix_dropped + t.chunks_dropped, 0);
    ck_assert(!t.headers_dropped);
    free(ids);
}
END_TEST

START_TEST(test_fim_layout_without_repo_tokens)
{
    struct st_fim_ids f = { 1, 2, 3, -1, -1, -1 };   /* CodeLlama-like: no <REP>/<SEP> */
    struct st_fim_span heads[2], texts[2];
    struct st_fim_parts p = parts(heads, texts);
    p.bos = 99;
    int32_t *ids = NULL;
    size_t n = 0;
    ck_assert_int_eq(st_fim_layout(&f, &p, 1000, &ids, &n, NULL, NULL), ST_OK);
    static const int32_t want[] = { 99, 50, 51, 52, 60, 61, 1, 10, 11, 12, 2, 20, 21, 3, 30 };
    expect_ids(ids, n, want, ST_ARRAY_LEN(want));
    free(ids);
}
END_TEST

/* A run of n ids base, base+1, ... */
static int32_t *run(int32_t base, size_t n)
{
    int32_t *r = malloc(n * sizeof(*r));
    for (size_t i = 0; i < n; i++)
        r[i] = base + (int32_t)i;
    return r;
}

START_TEST(test_fim_trim_keeps_prefix_end_and_suffix_start)
{
    int32_t *pre = run(1000, 100), *suf = run(2000, 100);
    struct st_fim_parts p = { .bos = -1, .prefix = { pre, 100 }, .suffix = { suf, 100 } };
    struct st_fim_ids f = { 1, 2, 3, -1, -1, -1 };
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_fim_trim t;
    /* 3 FIM ids + 40: the suffix gets a quarter (10), the prefix the rest (30) */
    ck_assert_int_eq(st_fim_layout(&f, &p, 43, &ids, &n, &t, NULL), ST_OK);
    ck_assert_uint_eq(n, 43);
    ck_assert_int_eq(ids[0], 1);
    ck_assert_int_eq(ids[1], 1070);   /* the last 30 of the prefix: 1070..1099 */
    ck_assert_int_eq(ids[30], 1099);
    ck_assert_int_eq(ids[31], 2);
    ck_assert_int_eq(ids[32], 2000);  /* the first 10 of the suffix */
    ck_assert_int_eq(ids[41], 2009);
    ck_assert_int_eq(ids[42], 3);
    ck_assert_int_eq(t.prefix_dropped, 70);
    ck_assert_int_eq(t.suffix_dropped, 90);
    free(ids);
    /* a short suffix leaves its share to the prefix */
    p.suffix.n = 2;
    ck_assert_int_eq(st_fim_layout(&f, &p, 43, &ids, &n, &t, NULL), ST_OK);
    ck_assert_int_eq(t.suffix_dropped, 0);
    ck_assert_int_eq(t.prefix_dropped, 62);
    ck_assert_int_eq(ids[1], 1062);
    free(ids);
    free(pre);
    free(suf);
}
END_TEST

START_TEST(test_fim_trim_drops_extra_chunks_first)
{
    struct st_fim_span heads[2], texts[2];
    struct st_fim_parts p = parts(heads, texts);
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_fim_trim t;
    /* core 3 + 3 + 2 + 1 = 9, headers 4, chunk 0 costs 4, chunk 1 costs 3 */
    ck_assert_int_eq(st_fim_layout(&QWEN, &p, 9 + 4 + 3, &ids, &n, &t, NULL), ST_OK);
    static const int32_t want[] = { 5, 40, 6, 60, 61, 6, 41, 1, 10, 11, 12, 2, 20, 21, 3, 30 };
    expect_ids(ids, n, want, ST_ARRAY_LEN(want));
    ck_assert_int_eq(t.chunks_dropped, 1);
    ck_assert_int_eq(t.prefix_dropped + t.suffix_dropped, 0);
    free(ids);
    /* no room for the headers: no extra at all, prefix and suffix whole */
    ck_assert_int_eq(st_fim_layout(&QWEN, &p, 9 + 3, &ids, &n, &t, NULL), ST_OK);
    static const int32_t core[] = { 1, 10, 11, 12, 2, 20, 21, 3, 30 };
    expect_ids(ids, n, core, ST_ARRAY_LEN(core));
    ck_assert(t.headers_dropped);
    ck_assert_int_eq(t.chunks_dropped, 2);
    free(ids);
}
END_TEST

START_TEST(test_fim_layout_errors)
{
    struct st_fim_span heads[2], texts[2];
    struct st_fim_parts p = parts(heads, texts);
    int32_t *ids = NULL;
    size_t n = 0;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_fim_layout(&QWEN, &p, 3, &ids, &n, NULL, &err), ST_ERR_TOO_LONG);
    ck_assert_ptr_null(ids);
    struct st_fim_ids none;
    st_fim_ids_none(&none);
    ck_assert(!st_fim_usable(&none));
    none.pre = 1;
    none.suf = 2;   /* no middle */
    ck_assert_int_eq(st_fim_layout(&none, &p, 1000, &ids, &n, NULL, &err), ST_ERR_UNSUPPORTED);
    ck_assert(strstr(err.msg, "fill-in-the-middle") != NULL);
}
END_TEST

/* 256 byte tokens, then the given specials as CONTROL tokens. */
static struct st_tok *byte_tok(const char *const *specials, size_t n_sp)
{
    static char text[256][4];
    struct st_str toks[300];
    int32_t types[300];
    for (int i = 0; i < 256; i++) {
        size_t len = st_utf8_encode(st_bytemap_cp((unsigned char)i), text[i]);
        toks[i] = (struct st_str){ text[i], len };
        types[i] = ST_TOK_NORMAL;
    }
    for (size_t i = 0; i < n_sp; i++) {
        toks[256 + i] = st_str_c(specials[i]);
        types[256 + i] = ST_TOK_CONTROL;
    }
    struct st_tok_desc d;
    memset(&d, 0, sizeof(d));
    d.n_tokens = 256 + (int32_t)n_sp;
    d.tokens = toks;
    d.types = types;
    d.bos_id = d.eos_id = d.pad_id = -1;
    struct st_tok *tok = NULL;
    ck_assert_int_eq(st_tok_new(&d, &tok, NULL), ST_OK);
    return tok;
}

START_TEST(test_fim_detect_and_injection)
{
    static const char *const qwen[] = { "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
                                        "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>" };
    struct st_tok *tok = byte_tok(qwen, 6);
    struct st_fim_ids f;
    st_fim_ids_none(&f);
    f.pad = 7;   /* set from a GGUF key: kept */
    st_fim_detect(tok, &f);
    ck_assert_int_eq(f.pre, 256);
    ck_assert_int_eq(f.mid, 257);
    ck_assert_int_eq(f.suf, 258);
    ck_assert_int_eq(f.pad, 7);
    ck_assert_int_eq(f.rep, 260);
    ck_assert_int_eq(f.sep, 261);
    /* user code that spells a marker stays its 14 bytes without special parsing */
    int32_t *ids = NULL;
    size_t n = 0;
    ck_assert_int_eq(st_tok_encode(tok, "<|fim_prefix|>", 14, false, false, &ids, &n, NULL),
                     ST_OK);
    ck_assert_uint_eq(n, 14);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_lt(ids[i], 256);
    free(ids);
    st_tok_free(tok);

    static const char *const codellama[] = { "\xe2\x96\x81<PRE>", "\xe2\x96\x81<SUF>",
                                             "\xe2\x96\x81<MID>", "\xe2\x96\x81<EOT>" };
    tok = byte_tok(codellama, 4);
    st_fim_ids_none(&f);
    st_fim_detect(tok, &f);
    ck_assert_int_eq(f.pre, 256);
    ck_assert_int_eq(f.suf, 257);
    ck_assert_int_eq(f.mid, 258);
    ck_assert_int_eq(f.rep, -1);
    ck_assert_int_eq(f.sep, -1);
    st_tok_free(tok);
    tok = byte_tok(qwen, 0);   /* bytes only: nothing to find */
    st_fim_ids_none(&f);
    st_fim_detect(tok, &f);
    ck_assert(!st_fim_usable(&f));
    st_tok_free(tok);
}
END_TEST

static Suite *fim_suite(void)
{
    Suite *s = suite_create("fim");
    TCase *t = tcase_create("fim");
    tcase_add_test(t, test_fim_layout_repo_level);
    tcase_add_test(t, test_fim_layout_without_repo_tokens);
    tcase_add_test(t, test_fim_trim_keeps_prefix_end_and_suffix_start);
    tcase_add_test(t, test_fim_trim_drops_extra_chunks_first);
    tcase_add_test(t, test_fim_layout_errors);
    tcase_add_test(t, test_fim_detect_and_injection);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(fim_suite(), CK_FORK);
}
