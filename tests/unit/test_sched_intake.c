/* test_sched_intake.c -- a request's priority (docs/design/SCHEDULER.md section 2):
 * the header and its aliases, the body field, which one wins, API-key
 * defaults and caps, the model's priority, low-first order, bands, names,
 * and the configuration checks of st_sched_new. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "strata/sched.h"
#include "support.h"

static bool header(const char *v, int32_t *out)
{
    return st_priority_parse_header(st_str_c(v), out);
}

START_TEST(test_sched_header_aliases)
{
    int32_t p = 7;
    bool alias = false;
    ck_assert(st_priority_parse_header_ex(st_str_c("interactive"), &p, &alias));
    ck_assert_int_eq(p, 100);
    ck_assert(alias);
    ck_assert(st_priority_parse_header_ex(st_str_c("  Normal\t"), &p, &alias));
    ck_assert_int_eq(p, 0);
    ck_assert(alias);
    ck_assert(header("BATCH", &p));
    ck_assert_int_eq(p, -100);
    ck_assert(header(" InterActive ", &p));
    ck_assert_int_eq(p, 100);
    ck_assert(st_priority_parse_header_ex(st_str_c("-100"), &p, &alias));
    ck_assert(!alias);
    ck_assert_int_eq(p, -100);
}
END_TEST

START_TEST(test_sched_header_integers)
{
    int32_t p = 0;
    ck_assert(header("5", &p));
    ck_assert_int_eq(p, 5);
    ck_assert(header("+7", &p));
    ck_assert_int_eq(p, 7);
    ck_assert(header("  -42 ", &p));
    ck_assert_int_eq(p, -42);
    ck_assert(header("007", &p));
    ck_assert_int_eq(p, 7);
    ck_assert(header("2147483647", &p));
    ck_assert_int_eq(p, INT32_MAX);
    ck_assert(header("-2147483648", &p));
    ck_assert_int_eq(p, INT32_MIN);
}
END_TEST

START_TEST(test_sched_header_junk_counts_as_absent)
{
    static const char *const junk[] = {
        "", "   ", "5.0", "1e3", "abc", "5x", "x5", "--5", "+", "-", "1 2",
        "2147483648", "-2147483649", "99999999999999999999999", "interactive!", "batches",
        "0x10",
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(junk); i++) {
        int32_t p = 1234;
        ck_assert_msg(!header(junk[i], &p), "'%s' should not parse", junk[i]);
        ck_assert_int_eq(p, 1234);   /* untouched */
    }
    int32_t p = 0;
    ck_assert(!st_priority_parse_header((struct st_str){ NULL, 0 }, &p));
    ck_assert(!st_priority_parse_header((struct st_str){ "5\0", 2 }, &p));
}
END_TEST

START_TEST(test_sched_body_values)
{
    int32_t p = 0;
    ck_assert(st_priority_from_json(true, 5, &p));
    ck_assert_int_eq(p, 5);
    ck_assert(st_priority_from_json(true, 5.0, &p));
    ck_assert_int_eq(p, 5);
    ck_assert(st_priority_from_json(true, -100, &p));
    ck_assert_int_eq(p, -100);
    ck_assert(st_priority_from_json(true, -0.0, &p));
    ck_assert_int_eq(p, 0);
    ck_assert(st_priority_from_json(true, 2147483647.0, &p));
    ck_assert_int_eq(p, INT32_MAX);
    ck_assert(st_priority_from_json(true, -2147483648.0, &p));
    ck_assert_int_eq(p, INT32_MIN);

    p = 99;
    ck_assert(!st_priority_from_json(true, 1.5, &p));
    ck_assert(!st_priority_from_json(false, 5, &p));      /* a string, bool or null */
    ck_assert(!st_priority_from_json(true, 2147483648.0, &p));
    ck_assert(!st_priority_from_json(true, -2147483649.0, &p));
    ck_assert(!st_priority_from_json(true, NAN, &p));
    ck_assert(!st_priority_from_json(true, INFINITY, &p));
    ck_assert(!st_priority_from_json(true, 1e300, &p));
    ck_assert_int_eq(p, 99);
}
END_TEST

START_TEST(test_sched_resolve_which_wins)
{
    struct st_priority_inputs in = {0};
    ck_assert_int_eq(st_priority_resolve(&in), 0);   /* nothing: 0 */
    in.has_key_default = true;
    in.key_default = -20;
    ck_assert_int_eq(st_priority_resolve(&in), -20);  /* key default */
    in.has_header = true;
    in.header = 30;
    ck_assert_int_eq(st_priority_resolve(&in), 30);   /* header beats key default */
    in.has_body = true;
    in.body = 5;
    ck_assert_int_eq(st_priority_resolve(&in), 5);    /* body beats header */
    in.body = -100;
    ck_assert_int_eq(st_priority_resolve(&in), -100); /* not clamped */
    in.model_priority = 10;
    ck_assert_int_eq(st_priority_resolve(&in), -90);  /* + the model's priority */
}
END_TEST

START_TEST(test_sched_resolve_key_cap_and_model)
{
    struct st_priority_inputs in = {0};
    in.has_key_max = true;
    in.key_max = 10;
    in.has_body = true;
    in.body = 100;
    ck_assert_int_eq(st_priority_resolve(&in), 10);   /* lowered to the key's max */
    in.body = -5;
    ck_assert_int_eq(st_priority_resolve(&in), -5);   /* never raised */
    in.body = 100;
    in.model_priority = 3;
    ck_assert_int_eq(st_priority_resolve(&in), 13);   /* the cap is on the request's part */
    in.has_key_max = false;
    in.body = INT32_MAX;
    ck_assert_int_eq(st_priority_resolve(&in), INT32_MAX);   /* saturates */
    in.body = INT32_MIN;
    in.model_priority = -3;
    ck_assert_int_eq(st_priority_resolve(&in), INT32_MIN);
    /* a header alias under a key with a low max */
    memset(&in, 0, sizeof(in));
    in.has_header = in.has_alias = true;
    in.header = 100;
    in.has_key_max = true;
    in.key_max = 0;
    ck_assert_int_eq(st_priority_resolve(&in), 0);
}
END_TEST

START_TEST(test_sched_resolve_low_first)
{
    struct st_priority_inputs in = {0};
    in.order = ST_PRIORITY_LOW_FIRST;
    in.has_body = true;
    in.body = 5;
    ck_assert_int_eq(st_priority_resolve(&in), -5);   /* lower number goes first */
    in.body = INT32_MIN;
    ck_assert_int_eq(st_priority_resolve(&in), INT32_MAX);   /* negation saturates */
    in.has_body = false;
    in.has_header = true;
    in.header = -3;
    ck_assert_int_eq(st_priority_resolve(&in), 3);    /* numeric header negated */
    in.has_alias = true;
    in.header = 100;                                  /* "interactive" */
    ck_assert_int_eq(st_priority_resolve(&in), 100);  /* aliases keep their meaning */
    in.has_header = in.has_alias = false;
    in.has_key_default = true;
    in.key_default = 20;
    in.model_priority = 1;
    ck_assert_int_eq(st_priority_resolve(&in), 21);   /* operator values are not negated */
    in.has_key_default = false;
    in.has_body = true;
    in.body = -50;                                    /* wants to go very early ... */
    in.has_key_max = true;
    in.key_max = 10;
    ck_assert_int_eq(st_priority_resolve(&in), 11);   /* ... capped after negation */
}
END_TEST

START_TEST(test_sched_bands_and_names)
{
    ck_assert_int_eq(st_band_of(100), ST_BAND_INTERACTIVE);
    ck_assert_int_eq(st_band_of(50), ST_BAND_INTERACTIVE);
    ck_assert_int_eq(st_band_of(49), ST_BAND_NORMAL);
    ck_assert_int_eq(st_band_of(0), ST_BAND_NORMAL);
    ck_assert_int_eq(st_band_of(-49), ST_BAND_NORMAL);
    ck_assert_int_eq(st_band_of(-50), ST_BAND_BATCH);
    ck_assert_int_eq(st_band_of(INT64_MIN), ST_BAND_BATCH);
    ck_assert_str_eq(st_band_name(ST_BAND_INTERACTIVE), "interactive");
    ck_assert_str_eq(st_band_name(ST_BAND_NORMAL), "normal");
    ck_assert_str_eq(st_band_name(ST_BAND_BATCH), "batch");
    ck_assert_str_eq(st_outcome_name(ST_OUTCOME_COMPLETED), "completed");
    ck_assert_str_eq(st_outcome_name(ST_OUTCOME_CANCELLED), "cancelled");
    ck_assert_str_eq(st_outcome_name(ST_OUTCOME_REJECTED), "rejected");
    ck_assert_str_eq(st_outcome_name(ST_OUTCOME_FAILED), "failed");
    ck_assert_str_eq(st_job_state_name(ST_JOB_PARKED), "parked");

    enum st_sched_policy pol = ST_SCHED_SERIAL;
    ck_assert(st_sched_policy_parse("FIFO", &pol));
    ck_assert_int_eq(pol, ST_SCHED_FIFO);
    ck_assert(st_sched_policy_parse("serial", &pol));
    ck_assert_int_eq(pol, ST_SCHED_SERIAL);
    ck_assert(!st_sched_policy_parse("lifo", &pol));
    ck_assert_str_eq(st_sched_policy_name(ST_SCHED_FIFO), "fifo");

    enum st_priority_order o = ST_PRIORITY_HIGH_FIRST;
    ck_assert(st_priority_order_parse("low-first", &o));
    ck_assert_int_eq(o, ST_PRIORITY_LOW_FIRST);
    ck_assert(!st_priority_order_parse("lowfirst", &o));
    ck_assert_str_eq(st_priority_order_name(ST_PRIORITY_HIGH_FIRST), "high-first");
}
END_TEST

START_TEST(test_sched_config_defaults_and_checks)
{
    struct st_sched_config c;
    struct st_sched *s = NULL;
    struct st_err err = {0};

    st_sched_config_defaults(&c);
    ck_assert_int_eq(c.policy, ST_SCHED_SERIAL);
    ck_assert(c.aging_divisor_s == 60.0);
    ck_assert_int_eq(c.swap_affinity_bonus, 10);
    ck_assert_int_eq(c.give_way_tokens, 16384);
    ck_assert_int_eq(c.yields_max, 4);
    ck_assert_int_eq(c.activity_capacity, 1000);
    ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_OK);
    ck_assert_ptr_nonnull(s);
    st_sched_free(s);
    st_sched_free(NULL);

    static const int32_t bad_bonus[] = { -1, 100, 1000 };
    for (size_t i = 0; i < ST_ARRAY_LEN(bad_bonus); i++) {
        st_sched_config_defaults(&c);
        c.swap_affinity_bonus = bad_bonus[i];
        s = (struct st_sched *)&c;   /* must be reset to NULL */
        ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_ERR_BAD_CONFIG);
        ck_assert_ptr_null(s);
        ck_assert_ptr_nonnull(strstr(err.msg, "swapAffinityBonus"));
        ck_assert_ptr_nonnull(strstr(err.msg, "0..99"));
    }
    c.swap_affinity_bonus = 99;
    ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_OK);
    st_sched_free(s);

    st_sched_config_defaults(&c);
    c.aging_divisor_s = -1;
    ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_ERR_BAD_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "agingDivisor"));
    c.aging_divisor_s = NAN;
    ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_ERR_BAD_CONFIG);
    st_sched_config_defaults(&c);
    c.give_way_tokens = 0;
    ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_ERR_BAD_CONFIG);
    st_sched_config_defaults(&c);
    c.yields_max = -1;
    ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_ERR_BAD_CONFIG);
    st_sched_config_defaults(&c);
    c.max_queue = -1;
    ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_ERR_BAD_CONFIG);
    st_sched_config_defaults(&c);
    c.policy = (enum st_sched_policy)7;
    ck_assert_int_eq(st_sched_new(&c, st_clock_real(), &s, &err), ST_ERR_BAD_CONFIG);
}
END_TEST

static Suite *intake_suite(void)
{
    Suite *s = suite_create("sched_intake");
    TCase *hdr = tcase_create("header");
    TCase *body = tcase_create("body");
    TCase *resolve = tcase_create("resolve");
    TCase *misc = tcase_create("bands_config");

    tcase_add_test(hdr, test_sched_header_aliases);
    tcase_add_test(hdr, test_sched_header_integers);
    tcase_add_test(hdr, test_sched_header_junk_counts_as_absent);
    tcase_add_test(body, test_sched_body_values);
    tcase_add_test(resolve, test_sched_resolve_which_wins);
    tcase_add_test(resolve, test_sched_resolve_key_cap_and_model);
    tcase_add_test(resolve, test_sched_resolve_low_first);
    tcase_add_test(misc, test_sched_bands_and_names);
    tcase_add_test(misc, test_sched_config_defaults_and_checks);
    suite_add_tcase(s, hdr);
    suite_add_tcase(s, body);
    suite_add_tcase(s, resolve);
    suite_add_tcase(s, misc);
    return s;
}

int main(void)
{
    return support_run_suite(intake_suite(), CK_FORK);
}
