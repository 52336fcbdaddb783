/* test_util_out.c -- the sticky-error writer (strata/out.h): what each
 * append writes, the commas it places, and that a failure sticks. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "strata/out.h"
#include "support.h"

START_TEST(test_out_text_and_printf)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_text(&o, "a");
    st_out_raw(&o, "bcd", 2);
    st_out_printf(&o, "<%d:%s>", 7, "x");
    /* longer than the stack buffer printf formats into first */
    char big[600];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    st_out_printf(&o, "%s!", big);
    ck_assert_int_eq(st_out_finish(&o), ST_OK);
    ck_assert_uint_eq(b.len, 3 + 5 + 599 + 1);
    ck_assert(memcmp(b.data, "abc<7:x>zz", 10) == 0);
    ck_assert_str_eq(b.data + b.len - 2, "z!");
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_out_json_values)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_json_str(&o, "q\"\n\xff", 4);
    st_out_text(&o, " ");
    st_out_json_cstr(&o, NULL);
    st_out_text(&o, " ");
    st_out_json_num(&o, 0.1);
    st_out_text(&o, " ");
    st_out_json_num(&o, NAN);
    st_out_text(&o, " ");
    st_out_json_i64(&o, INT64_MIN);
    st_out_text(&o, " ");
    st_out_json_u64(&o, UINT64_MAX);
    st_out_text(&o, " ");
    st_out_json_bool(&o, true);
    st_out_text(&o, " ");
    st_out_json_bytes(&o, "a\xff", 2);
    ck_assert_int_eq(st_out_finish(&o), ST_OK);
    ck_assert_str_eq(b.data, "\"q\\\"\\n\xEF\xBF\xBD\" null 0.1 null -9223372036854775808 "
                             "18446744073709551615 true [97,255]");
    st_buf_fini(&b);
}
END_TEST

/* Members get a comma before them except first in an object or array. */
START_TEST(test_out_members_place_commas)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_text(&o, "{");
    st_out_kv_i64(&o, "id", -3);
    st_out_kv_str(&o, "name", "n\"1");
    st_out_kv_str(&o, "none", NULL);
    st_out_kv_num(&o, "score", 1.5);
    st_out_kv_u64(&o, "big", 18446744073709551615u);
    st_out_kv_bool(&o, "done", false);
    st_out_kv_raw(&o, "list", "[");
    st_out_sep(&o);
    st_out_json_i64(&o, 1);
    st_out_sep(&o);
    st_out_json_i64(&o, 2);
    st_out_text(&o, "]");
    st_out_key(&o, "obj");
    st_out_text(&o, "{");
    st_out_kv_raw(&o, "x", "null");
    st_out_text(&o, "}}");
    ck_assert_int_eq(st_out_finish(&o), ST_OK);
    ck_assert_str_eq(b.data, "{\"id\":-3,\"name\":\"n\\\"1\",\"none\":null,\"score\":1.5,"
                             "\"big\":18446744073709551615,\"done\":false,\"list\":[1,2],"
                             "\"obj\":{\"x\":null}}");
    st_buf_fini(&b);
}
END_TEST

/* An empty buffer takes no comma: a writer may start mid-object. */
START_TEST(test_out_key_first_in_buffer)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_kv_i64(&o, "a", 1);
    st_out_kv_i64(&o, "b", 2);
    ck_assert_int_eq(st_out_finish(&o), ST_OK);
    ck_assert_str_eq(b.data, "\"a\":1,\"b\":2");
    st_buf_fini(&b);
}
END_TEST

/* The first failure sticks: the append that passes the cap writes nothing,
 * every later one (of every kind) is a no-op, finish reports it. */
START_TEST(test_out_failure_sticks)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_cap(&o, 8);
    st_out_text(&o, "{");
    st_out_kv_i64(&o, "a", 1);     /* {"a":1 = 6 bytes */
    ck_assert(st_out_ok(&o));
    st_out_kv_str(&o, "b", "x");   /* the comma fits, "b": does not */
    ck_assert(!st_out_ok(&o));
    ck_assert_str_eq(b.data, "{\"a\":1,");
    st_out_cap(&o, 0);             /* room again, but the failure stays */
    st_out_text(&o, "}");
    st_out_printf(&o, "%d", 5);
    st_out_json_str(&o, "s", 1);
    st_out_json_num(&o, 2.0);
    st_out_kv_bool(&o, "c", true);
    st_out_check(&o, ST_OK);
    ck_assert_str_eq(b.data, "{\"a\":1,");
    ck_assert_int_eq(st_out_finish(&o), ST_ERR_NOMEM);
    st_buf_fini(&b);
}
END_TEST

/* A JSON writer that overflows the cap is cut back whole, and a status
 * recorded through st_out_check is kept over later ones. */
START_TEST(test_out_cap_cuts_back_whole_value)
{
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_out_cap(&o, 4);
    st_out_text(&o, "[");
    st_out_json_cstr(&o, "long");
    ck_assert_int_eq(st_out_finish(&o), ST_ERR_NOMEM);
    ck_assert_str_eq(b.data, "[");
    st_out_check(&o, ST_ERR_INVALID);
    ck_assert_int_eq(st_out_finish(&o), ST_ERR_NOMEM);

    struct st_out p;
    st_out_init(&p, &b);
    st_out_check(&p, ST_ERR_INVALID);
    st_out_text(&p, "x");
    ck_assert_int_eq(st_out_finish(&p), ST_ERR_INVALID);
    ck_assert_str_eq(b.data, "[");
    st_buf_fini(&b);
}
END_TEST

/* A writer that fills buffers side by side keeps one status across them. */
START_TEST(test_out_to_switches_buffer_keeps_status)
{
    struct st_buf a, b;
    st_buf_init(&a);
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &a);
    st_out_text(&o, "[");
    st_out_to(&o, &b);
    st_out_sep(&o);                /* b is empty: no comma */
    st_out_text(&o, "x");
    st_out_sep(&o);
    ck_assert_int_eq(st_out_finish(&o), ST_OK);
    ck_assert_str_eq(a.data, "[");
    ck_assert_str_eq(b.data, "x,");
    st_out_cap(&o, 2);
    st_out_text(&o, "y");
    st_out_to(&o, &a);
    st_out_text(&o, "z");
    ck_assert_int_eq(st_out_finish(&o), ST_ERR_NOMEM);
    ck_assert_str_eq(a.data, "[");
    st_buf_fini(&a);
    st_buf_fini(&b);
}
END_TEST

static Suite *util_out_suite(void)
{
    Suite *s = suite_create("util_out");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_out_text_and_printf);
    tcase_add_test(tc, test_out_json_values);
    tcase_add_test(tc, test_out_members_place_commas);
    tcase_add_test(tc, test_out_key_first_in_buffer);
    tcase_add_test(tc, test_out_failure_sticks);
    tcase_add_test(tc, test_out_cap_cuts_back_whole_value);
    tcase_add_test(tc, test_out_to_switches_buffer_keeps_status);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(util_out_suite(), CK_FORK);
}
