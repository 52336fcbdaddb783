/* test_util.c -- status table, errors, strings, buffers, clocks, dtypes, log lines, RSS. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strata/clock.h"
#include "strata/dtype.h"
#include "strata/err.h"
#include "strata/log.h"
#include "strata/mutf8.h"
#include "strata/rss.h"
#include "strata/str.h"
#include "support.h"

START_TEST(test_util_status_names)
{
    ck_assert_str_eq(st_status_name(ST_OK), "OK");
    ck_assert_str_eq(st_status_name(ST_ERR_NOMEM), "ERR_NOMEM");
    ck_assert_str_eq(st_status_msg(ST_ERR_QUEUE_FULL), "the waiting queue is full");
    ck_assert_str_eq(st_status_name((enum st_status)9999), "UNKNOWN");
}
END_TEST

START_TEST(test_util_err_set_and_errno)
{
    struct st_err err = {0};
    ck_assert_int_eq(st_err_set(&err, ST_ERR_INVALID, "bad %d", 7), ST_ERR_INVALID);
    ck_assert_str_eq(err.msg, "bad 7");
    errno = ENOENT;
    ck_assert_int_eq(st_err_errno(&err, ST_ERR_IO, "open %s", "x"), ST_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "open x: "));
    ck_assert_int_eq(st_err_set(NULL, ST_ERR_IO, "ignored"), ST_ERR_IO);
}
END_TEST

START_TEST(test_util_buf_json_escapes)
{
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_buf_json_str(&b, "a\"b\\\n\x01", 6), ST_OK);
    ck_assert_str_eq(b.data, "\"a\\\"b\\\\\\n\\u0001\"");
    ck_assert_int_eq(st_buf_printf(&b, "%d", 42), ST_OK);
    ck_assert_str_eq(b.data + b.len - 2, "42");
    st_buf_fini(&b);
}
END_TEST

/* The body writer adds no quotes and copies bytes >= 0x80 as they are,
 * valid UTF-8 or not (only the server's writer repairs UTF-8). */
START_TEST(test_util_buf_json_chars_has_no_quotes)
{
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_buf_json_chars(&b, "\t\xC3\xA9\x80\x1f\"", 6), ST_OK);
    ck_assert_str_eq(b.data, "\\t\xC3\xA9\x80\\u001f\\\"");
    st_buf_fini(&b);
}
END_TEST

/* U+0000 through C strings (strata/mutf8.h): the JSON reader's rewrite of
 * \u0000 (in strings and keys only where it is an escape, not after an
 * escaped backslash), the refusal of raw C0 80, the decode back to the
 * byte 0, and the writer's \u0000. */
START_TEST(test_util_mutf8_nul)
{
    char *out = NULL;
    size_t n = 99, bad = 99;
    ck_assert_int_eq(st_mutf8_json("{\"a\":\"x\\n\"}", 11, &out, &n, &bad), ST_OK);
    ck_assert_ptr_null(out);   /* nothing to rewrite: no copy */
    const char *in = "{\"c\":\"A\\u0000B\",\"k\\u0000\":\"\\\\u0000\\\"\\u00001\"}";
    ck_assert_int_eq(st_mutf8_json(in, strlen(in), &out, &n, &bad), ST_OK);
    const char want[] = "{\"c\":\"A\xC0\x80" "B\",\"k\xC0\x80\":\"\\\\u0000\\\"\xC0\x80" "1\"}";
    ck_assert_uint_eq(n, sizeof(want) - 1);
    ck_assert_mem_eq(out, want, n);
    ck_assert_str_eq(out, want);
    free(out);
    out = NULL;
    ck_assert_int_eq(st_mutf8_json("{\"c\":\"A\xC0\x80\"}", 10, &out, &n, &bad),
                     ST_ERR_INVALID);
    ck_assert_uint_eq(bad, 7);
    ck_assert_ptr_null(out);
    char dec[] = "A\xC0\x80\xC0\x80" "B\xC0";
    ck_assert(st_mutf8_has_nul(dec, 7));
    ck_assert(!st_mutf8_has_nul("B\xC0", 2));
    ck_assert_uint_eq(st_mutf8_decode(dec, 7), 5);
    ck_assert_mem_eq(dec, "A\0\0B\xC0", 5);
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_buf_json_str(&b, "A\xC0\x80" "B\xC0", 5), ST_OK);
    ck_assert_str_eq(b.data, "\"A\\u0000B\xC0\"");
    st_buf_fini(&b);
    char *esc = st_mutf8_json_escape("[\"\xC0\x80" "a\xC0\x80\xC0\x80\",\"\xC0\"]", 15);
    ck_assert_str_eq(esc, "[\"\\u0000a\\u0000\\u0000\",\"\xC0\"]");
    free(esc);
}
END_TEST

START_TEST(test_util_str_views)
{
    ck_assert(st_str_eq_c(st_str_c("abc"), "abc"));
    ck_assert(!st_str_eq_c(st_str_c("abc"), "ab"));
    ck_assert(st_str_ieq_c(st_str_c("BaTcH"), "batch"));
    char *d = st_str_dup((struct st_str){ "hello", 4 });
    ck_assert_str_eq(d, "hell");
    free(d);
}
END_TEST

START_TEST(test_util_manual_clock_moves_only_when_told)
{
    struct st_clock_manual m;
    st_clock_manual_init(&m, 1000);
    ck_assert_int_eq(st_clock_now(&m.clock), 1000);
    st_clock_manual_advance(&m, 500);
    ck_assert_int_eq(st_clock_now(&m.clock), 1500);
    m.clock.sleep_until(&m.clock, 1200);   /* in the past: no change */
    ck_assert_int_eq(st_clock_now(&m.clock), 1500);
    m.clock.sleep_until(&m.clock, 9000);
    ck_assert_int_eq(st_clock_now(&m.clock), 9000);
}
END_TEST

START_TEST(test_util_dtype_table)
{
    ck_assert_uint_eq(st_dtype_row_bytes(ST_DTYPE_Q4_K, 512), 288);
    ck_assert_uint_eq(st_dtype_row_bytes(ST_DTYPE_IQ3_S, 256), 110);
    ck_assert_uint_eq(st_dtype_row_bytes(ST_DTYPE_Q8_0, 33), 0);
    ck_assert_ptr_null(st_dtype_info(4));
    enum st_dtype t;
    ck_assert(st_dtype_parse("iq4_xs", &t));
    ck_assert_int_eq(t, ST_DTYPE_IQ4_XS);
    ck_assert(!st_dtype_parse("q9_z", &t));
}
END_TEST

/* What one log call writes to stderr (redirected to a temporary file). */
static void log_capture(void (*emit)(void), char *out, size_t cap)
{
    char path[] = "/tmp/st_test_log_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    emit();
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, out, cap - 1, 0);
    close(fd);
    ck_assert_int_gt(n, 0);
    out[n] = '\0';
}

static void emit_forged_msg(void)
{
    st_log(ST_LOG_INFO, "http", "model '%s' not found",
           "m\n2026-01-01T00:00:00.000Z error http FORGED\r\t\x1b\x7f");
}

static void emit_forged_kv(void)
{
    const char *keys[] = { "model", "role" };
    const char *vals[] = { "m\n2026-01-01T00:00:00.000Z error http FORGED", "a \"b\" \\" };
    st_log_kv(ST_LOG_INFO, "http", "request", 2, keys, vals, NULL);
}

/* A newline from a request must not start a line of its own (issue 26). */
START_TEST(test_util_log_text_escapes_control_bytes)
{
    char got[1024];
    st_log_set_format(ST_LOG_TEXT);
    log_capture(emit_forged_msg, got, sizeof(got));
    ck_assert_ptr_eq(strchr(got, '\n'), got + strlen(got) - 1);   /* one line */
    ck_assert_ptr_nonnull(strstr(got, "model 'm\\n2026-01-01T00:00:00.000Z error http "
                                      "FORGED\\r\\t\\x1b\\x7f' not found\n"));
    log_capture(emit_forged_kv, got, sizeof(got));
    ck_assert_ptr_eq(strchr(got, '\n'), got + strlen(got) - 1);
    ck_assert_ptr_nonnull(strstr(got, " model=\"m\\n2026-01-01T00:00:00.000Z error http FORGED\""));
    ck_assert_ptr_nonnull(strstr(got, " role=\"a \\\"b\\\" \\\\\"\n"));
}
END_TEST

/* st_rss_bytes reads bytes, not pages or KiB: a whole number of pages, and
 * 32 MiB written shows as at least half that more. */
static char *volatile rss_sink;   /* the buffer escapes: its writes cannot be left out */

START_TEST(test_util_rss_bytes)
{
#ifdef __linux__
    int64_t before = st_rss_bytes();
    ck_assert_int_gt(before, 0);
    ck_assert_int_eq(before % sysconf(_SC_PAGESIZE), 0);
    size_t n = (size_t)32 << 20;
    char *big = malloc(n);
    ck_assert_ptr_nonnull(big);
    rss_sink = big;
    memset(big, 1, n);
    int64_t after = st_rss_bytes();
    ck_assert_msg(after - before >= (int64_t)(n / 2), "RSS %lld -> %lld bytes after %zu written",
                  (long long)before, (long long)after, n);
    free(big);
#endif
}
END_TEST

static Suite *util_suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_util_status_names);
    tcase_add_test(tc, test_util_err_set_and_errno);
    tcase_add_test(tc, test_util_buf_json_escapes);
    tcase_add_test(tc, test_util_buf_json_chars_has_no_quotes);
    tcase_add_test(tc, test_util_mutf8_nul);
    tcase_add_test(tc, test_util_str_views);
    tcase_add_test(tc, test_util_manual_clock_moves_only_when_told);
    tcase_add_test(tc, test_util_dtype_table);
    tcase_add_test(tc, test_util_log_text_escapes_control_bytes);
    tcase_add_test(tc, test_util_rss_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(util_suite(), CK_FORK);
}
