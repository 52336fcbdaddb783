/* test_detok.c -- st_detok (UTF-8 safe streaming) and st_stop (stop
 * strings on a text stream). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tok/unicode/unicode.h"
#include "strata/detok.h"
#include "strata/mutf8.h"
#include "strata/stop.h"
#include "strata/tokenizer.h"
#include "support.h"

#define FFFD "\xef\xbf\xbd"

/* Push 'in' in chunks of 'step' bytes, flush, return the output (owned). */
static char *stream(const char *in, size_t n, size_t step)
{
    struct st_detok d;
    struct st_buf out;
    size_t i;

    st_detok_init(&d, NULL, false);
    st_buf_init(&out);
    ck_assert_int_eq(st_buf_append(&out, "", 0), ST_OK);
    for (i = 0; i < n; i += step)
        ck_assert_int_eq(st_detok_push_bytes(&d, in + i, ST_MIN(step, n - i), &out), ST_OK);
    ck_assert_int_eq(st_detok_flush(&d, &out), ST_OK);
    return st_buf_steal(&out);
}

static void expect_stream(const char *in, size_t n, const char *want)
{
    size_t step;

    for (step = 1; step <= n + 1; step++) {
        char *got = stream(in, n, step);
        ck_assert_msg(strcmp(got, want) == 0, "step %zu: got '%s' want '%s'", step, got, want);
        free(got);
    }
}

START_TEST(test_detok_holds_incomplete_sequences)
{
    struct st_detok d;
    struct st_buf out;
    const char emoji[] = "\xf0\x9f\x98\x80";
    int i;

    st_detok_init(&d, NULL, false);
    st_buf_init(&out);
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(st_detok_push_bytes(&d, emoji + i, 1, &out), ST_OK);
        ck_assert_uint_eq(out.len, 0);                  /* nothing half-sent */
        ck_assert_uint_eq(st_detok_pending(&d), (size_t)i + 1);
    }
    ck_assert_int_eq(st_detok_push_bytes(&d, emoji + 3, 1, &out), ST_OK);
    ck_assert_str_eq(out.data, emoji);
    ck_assert_uint_eq(st_detok_pending(&d), 0);
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_detok_invalid_bytes_become_replacement)
{
    expect_stream("ok", 2, "ok");
    expect_stream("a\xff" "b", 3, "a" FFFD "b");
    expect_stream("\xe4\xb8" "A", 3, FFFD "A");                 /* cut short */
    expect_stream("\xc0\x80", 2, FFFD FFFD);                    /* overlong */
    expect_stream("\xed\xa0\x80", 3, FFFD FFFD FFFD);           /* surrogate */
    expect_stream("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD);  /* > U+10FFFF */
    expect_stream("x\xe4\xb8", 3, "x" FFFD);                    /* flushed at the end */
    expect_stream("\xe4\xb8\xad\xe6\x96\x87", 6, "\xe4\xb8\xad\xe6\x96\x87");
    /* a zero byte is U+0000, kept as C0 80 (strata/mutf8.h), also mid-character */
    expect_stream("A\0" "B", 3, "A\xC0\x80" "B");
    expect_stream("\xe4\0", 2, FFFD "\xC0\x80");
}
END_TEST

START_TEST(test_detok_random_bytes_always_valid)
{
    unsigned seed = 12345;
    int round;

    for (round = 0; round < 200; round++) {
        char in[64], *whole, *chunked;
        size_t n = (size_t)(round % 60) + 1, i;
        for (i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = (char)(seed >> 16);
            if ((seed >> 8) % 3 == 0)
                in[i] = (char)(0x80 | (in[i] & 0x3F));          /* many continuations */
        }
        whole = stream(in, n, n);
        chunked = stream(in, n, (size_t)(round % 5) + 1);
        ck_assert_str_eq(whole, chunked);                        /* chunking-independent */
        ck_assert(st_utf8_valid(whole, st_mutf8_decode(whole, strlen(whole))));
        free(whole);
        free(chunked);
    }
}
END_TEST

START_TEST(test_detok_tokens_and_control)
{
    static const char *const texts[] = { "\xc4\xa0h", "i", "<|im_end|>", "\xc3\xa4", "\xc2\xb8" };
    struct st_str toks[5];
    int32_t types[5] = { ST_TOK_NORMAL, ST_TOK_NORMAL, ST_TOK_CONTROL, ST_TOK_NORMAL, ST_TOK_NORMAL };
    struct st_tok_desc desc;
    struct st_tok *tok = NULL;
    struct st_detok d;
    struct st_buf out;
    struct st_err err = { 0 };
    int i;

    /* mapped "ä" is byte 0xE4 and "¸" byte 0xB8: two tokens, half a char each */
    for (i = 0; i < 5; i++)
        toks[i] = st_str_c(texts[i]);
    memset(&desc, 0, sizeof(desc));
    desc.n_tokens = 5;
    desc.tokens = toks;
    desc.types = types;
    desc.bos_id = desc.eos_id = desc.pad_id = -1;
    ck_assert_int_eq(st_tok_new(&desc, &tok, NULL), ST_OK);
    st_buf_init(&out);
    st_detok_init(&d, tok, false);
    ck_assert_int_eq(st_detok_push_token(&d, 0, &out, &err), ST_OK);
    ck_assert_int_eq(st_detok_push_token(&d, 1, &out, &err), ST_OK);
    ck_assert_int_eq(st_detok_push_token(&d, 3, &out, &err), ST_OK);
    ck_assert_str_eq(out.data, " hi");
    ck_assert_int_eq(st_detok_push_token(&d, 2, &out, &err), ST_OK);   /* dropped */
    ck_assert_int_eq(st_detok_push_token(&d, 4, &out, &err), ST_OK);
    ck_assert_int_eq(st_detok_push_token(&d, 4, &out, &err), ST_OK);   /* E4 B8 B8 = U+4E38 */
    ck_assert_str_eq(out.data, " hi\xe4\xb8\xb8");
    ck_assert_int_eq(st_detok_push_token(&d, 7, &out, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "7"));
    st_detok_init(&d, tok, true);
    st_buf_reset(&out);
    ck_assert_int_eq(st_detok_push_token(&d, 2, &out, &err), ST_OK);
    ck_assert_str_eq(out.data, "<|im_end|>");
    st_buf_fini(&out);
    st_tok_free(tok);
}
END_TEST

/* ---- stop strings ---- */

static void push(struct st_stop *s, const char *text, struct st_buf *out)
{
    ck_assert_int_eq(st_stop_push(s, text, strlen(text), out), ST_OK);
}

START_TEST(test_stop_match_across_pushes)
{
    struct st_str stops[] = { st_str_c("STOP") };
    struct st_stop s;
    struct st_buf out;

    st_buf_init(&out);
    ck_assert_int_eq(st_stop_init(&s, stops, 1, NULL), ST_OK);
    push(&s, "Hel", &out);
    push(&s, "lo ST", &out);
    ck_assert_str_eq(out.data, "Hello ");                   /* "ST" held back */
    ck_assert_uint_eq(st_stop_pending(&s), 2);
    ck_assert_int_eq(st_stop_matched(&s), -1);
    push(&s, "OP and more", &out);
    ck_assert_str_eq(out.data, "Hello ");
    ck_assert_int_eq(st_stop_matched(&s), 0);
    push(&s, "ignored", &out);
    ck_assert_int_eq(st_stop_flush(&s, &out), ST_OK);
    ck_assert_str_eq(out.data, "Hello ");
    st_stop_fini(&s);
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_stop_releases_false_alarm)
{
    struct st_str stops[] = { st_str_c("</answer>") };
    struct st_stop s;
    struct st_buf out;

    st_buf_init(&out);
    ck_assert_int_eq(st_stop_init(&s, stops, 1, NULL), ST_OK);
    push(&s, "a </ans", &out);
    ck_assert_str_eq(out.data, "a ");
    push(&s, "wer_x", &out);
    ck_assert_str_eq(out.data, "a </answer_x");
    push(&s, " <", &out);
    ck_assert_int_eq(st_stop_flush(&s, &out), ST_OK);       /* end: release the tail */
    ck_assert_str_eq(out.data, "a </answer_x <");
    ck_assert_int_eq(st_stop_matched(&s), -1);
    st_stop_fini(&s);
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_stop_earliest_of_several)
{
    struct st_str stops[] = { st_str_c("zzz"), st_str_c(""), st_str_c("\xe4\xb8\xad"), st_str_c("b") };
    struct st_stop s;
    struct st_buf out;

    st_buf_init(&out);
    ck_assert_int_eq(st_stop_init(&s, stops, 4, NULL), ST_OK);
    push(&s, "x\xe4\xb8\xad y b zzz", &out);
    ck_assert_int_eq(st_stop_matched(&s), 2);               /* caller index kept */
    ck_assert_str_eq(out.data, "x");
    st_stop_fini(&s);
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_stop_limits_and_passthrough)
{
    struct st_str stops[5] = { st_str_c("a"), st_str_c("b"), st_str_c("c"), st_str_c("d"), st_str_c("e") };
    struct st_stop s;
    struct st_buf out;
    struct st_err err = { 0 };

    ck_assert_int_eq(st_stop_init(&s, stops, 5, &err), ST_ERR_INVALID);
    st_stop_fini(&s);
    st_buf_init(&out);
    ck_assert_int_eq(st_stop_init(&s, NULL, 0, NULL), ST_OK);
    push(&s, "anything at all", &out);
    ck_assert_str_eq(out.data, "anything at all");
    st_stop_fini(&s);
    st_buf_fini(&out);
}
END_TEST

static Suite *detok_suite(void)
{
    Suite *s = suite_create("detok");
    TCase *d = tcase_create("detok");
    TCase *st = tcase_create("stop");

    tcase_add_test(d, test_detok_holds_incomplete_sequences);
    tcase_add_test(d, test_detok_invalid_bytes_become_replacement);
    tcase_add_test(d, test_detok_random_bytes_always_valid);
    tcase_add_test(d, test_detok_tokens_and_control);
    tcase_add_test(st, test_stop_match_across_pushes);
    tcase_add_test(st, test_stop_releases_false_alarm);
    tcase_add_test(st, test_stop_earliest_of_several);
    tcase_add_test(st, test_stop_limits_and_passthrough);
    suite_add_tcase(s, d);
    suite_add_tcase(s, st);
    return s;
}

int main(void)
{
    return support_run_suite(detok_suite(), CK_FORK);
}
