/* test_json_prefix.c -- the byte-at-a-time JSON prefix validator
 * (src/grammar/json_prefix.c): valid and invalid prefixes, completion,
 * nesting and the depth limit, strings and escapes, numbers, literals,
 * and that every prefix of a valid document is a valid prefix. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "strata/json_prefix.h"
#include "support.h"

/* Feed all of s; true when it is still a valid prefix. *done: complete. */
static bool feed(const char *s, bool *done)
{
    struct st_json_prefix j;
    st_json_prefix_init(&j);
    bool ok = st_json_prefix_feed(&j, s, strlen(s));
    ck_assert(ok == st_json_prefix_valid(&j));
    if (done)
        *done = st_json_prefix_complete(&j);
    return ok;
}

static void expect_complete(const char *s)
{
    bool done = false;
    ck_assert_msg(feed(s, &done), "should be valid: %s", s);
    ck_assert_msg(done, "should be complete: %s", s);
}

static void expect_open(const char *s)
{
    bool done = true;
    ck_assert_msg(feed(s, &done), "should be a valid prefix: %s", s);
    ck_assert_msg(!done, "should not be complete: %s", s);
}

static void expect_bad(const char *s)
{
    ck_assert_msg(!feed(s, NULL), "should be invalid: %s", s);
}

static const char *const valid_docs[] = {
    "{}",
    " \t\r\n{ } \n",
    "{\"a\":1}",
    "{\"a\" : [1, 2.5, -0.5e+3, 0, -0, 1E9, 2e-2, 10.25E+07]}",
    "{\"t\":true,\"f\":false,\"n\":null}",
    "{\"s\":\"x\\\"y\\\\z\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"}",
    "{\"nested\":{\"a\":[{\"b\":[[],{}]},[1,[2,[3]]]],\"c\":{}}}",
    "{\"utf8\":\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"}",
    "{\"\":\"\",\"k\":[\"\",\"a\"],\"e\":[]}",
    "{\"n\":[0.0,1.0e0,123456789,-12.5]}",
};

START_TEST(test_json_prefix_valid_documents_complete)
{
    for (size_t i = 0; i < sizeof(valid_docs) / sizeof(valid_docs[0]); i++)
        expect_complete(valid_docs[i]);
}
END_TEST

/* Every proper prefix of a valid document is valid and (but for the
 * document itself and whitespace after it) not complete. */
START_TEST(test_json_prefix_every_prefix_valid)
{
    for (size_t i = 0; i < sizeof(valid_docs) / sizeof(valid_docs[0]); i++) {
        const char *d = valid_docs[i];
        size_t n = strlen(d);
        struct st_json_prefix j;
        st_json_prefix_init(&j);
        size_t end = n;   /* the document ends at the last non-whitespace byte */
        while (end > 0 && strchr(" \t\r\n", d[end - 1]))
            end--;
        for (size_t k = 0; k < n; k++) {
            ck_assert_msg(st_json_prefix_valid(&j), "doc %zu prefix %zu", i, k);
            ck_assert_msg(st_json_prefix_complete(&j) == (k >= end), "doc %zu prefix %zu", i, k);
            ck_assert(st_json_prefix_push(&j, (unsigned char)d[k]));
        }
        ck_assert(st_json_prefix_complete(&j));
    }
}
END_TEST

START_TEST(test_json_prefix_open_prefixes)
{
    expect_open("");
    expect_open("   ");
    struct st_json_prefix j;
    st_json_prefix_init(&j);
    ck_assert(st_json_prefix_empty(&j));
    ck_assert(st_json_prefix_feed(&j, " \n", 2));
    ck_assert(st_json_prefix_empty(&j));
    ck_assert(st_json_prefix_push(&j, '{'));
    ck_assert(!st_json_prefix_empty(&j));
    expect_open("{");
    expect_open("{\"a");
    expect_open("{\"a\"");
    expect_open("{\"a\":");
    expect_open("{\"a\":-");
    expect_open("{\"a\":1");     /* the number may go on */
    expect_open("{\"a\":1.");
    expect_open("{\"a\":1e");
    expect_open("{\"a\":1e-");
    expect_open("{\"a\":tr");
    expect_open("{\"a\":nul");
    expect_open("{\"a\":\"\\");
    expect_open("{\"a\":\"\\u0");
    expect_open("{\"a\":[");
    expect_open("{\"a\":[1,");
    expect_open("{\"a\":{},");
}
END_TEST

START_TEST(test_json_prefix_invalid_prefixes)
{
    const char *bad[] = {
        "[]", "\"x\"", "1", "true", "null", "x",   /* the top level is an object */
        "{}x", "{}{}", "{} ,",                     /* only whitespace after it */
        "{,", "{\"a\"}", "{\"a\" 1", "{\"a\":}", "{\"a\":1,}", "{\"a\":1 2",
        "{1:2}", "{'a':1}", "{\"a\":[1,]", "{\"a\":[,", "{\"a\":[1}", "{\"a\":{]",
        "{\"a\":01", "{\"a\":-a", "{\"a\":1.e", "{\"a\":1.}", "{\"a\":1e}", "{\"a\":+1",
        "{\"a\":.5", "{\"a\":1e+}", "{\"a\":--1", "{\"a\":1.5.2",
        "{\"a\":tru}", "{\"a\":trUe", "{\"a\":nulll", "{\"a\":True",
        "{\"a\":\"\\x\"", "{\"a\":\"\\u12g4\"", "{\"a\":\"\\U0041\"",
        "{\"a\":\"x\ny\"", "{\"a\":\"\t\"", "{\"a\":\"\x01\"", "{\xc3\xa9",
        "{\"a\":NaN", "{\"a\":Infinity", "{\"a\":-Infinity",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_bad(bad[i]);
    /* a NUL byte in a string is a control byte too */
    struct st_json_prefix j;
    st_json_prefix_init(&j);
    ck_assert(!st_json_prefix_feed(&j, "{\"a\0\"", 5));
    /* once invalid, always invalid */
    ck_assert(!st_json_prefix_push(&j, '}'));
    ck_assert(!st_json_prefix_valid(&j));
    ck_assert(!st_json_prefix_complete(&j));
}
END_TEST

/* Bytes >= 0x80 and DEL pass through inside strings, even partial UTF-8. */
START_TEST(test_json_prefix_string_bytes)
{
    expect_complete("{\"\x7f\x80\xff\xc3\":\"\xe2\x82\"}");
    expect_bad("{\"a\":\x80");
    expect_bad("{\"a\":1\xc3");
}
END_TEST

START_TEST(test_json_prefix_numbers_end_on_structure)
{
    expect_complete("{\"a\":-0.5e+3}");
    expect_complete("{\"a\":[-0.5e+3,7]}");
    expect_complete("{\"a\":-0.5e+3 }");
    expect_complete("{\"a\":[0]}");
    expect_complete("{\"a\":1E-0\n}");
    expect_bad("{\"a\":-0.5e+3e1}");
    expect_bad("{\"a\":0x10}");
    expect_bad("{\"a\":1e5.0}");
}
END_TEST

START_TEST(test_json_prefix_depth_limit)
{
    char buf[4 * ST_JSON_MAX_DEPTH + 16];
    /* the top object plus ST_JSON_MAX_DEPTH - 1 arrays: at the limit */
    size_t n = 0;
    buf[n++] = '{';
    buf[n++] = '"';
    buf[n++] = 'a';
    buf[n++] = '"';
    buf[n++] = ':';
    for (int i = 1; i < ST_JSON_MAX_DEPTH; i++)
        buf[n++] = '[';
    size_t open_end = n;
    for (int i = 1; i < ST_JSON_MAX_DEPTH; i++)
        buf[n++] = ']';
    buf[n++] = '}';
    buf[n] = '\0';
    expect_complete(buf);
    /* one more level is refused */
    struct st_json_prefix j;
    st_json_prefix_init(&j);
    ck_assert(st_json_prefix_feed(&j, buf, open_end));
    ck_assert_int_eq(j.depth, ST_JSON_MAX_DEPTH);
    struct st_json_prefix k = j;
    ck_assert(!st_json_prefix_push(&k, '['));
    k = j;
    ck_assert(!st_json_prefix_push(&k, '{'));
    ck_assert(st_json_prefix_push(&j, ']'));   /* closing still works */
    /* the kinds of the levels are remembered: a mix of objects and arrays */
    expect_complete("{\"a\":[{\"b\":[{\"c\":[[{}]]}]}]}");
    expect_bad("{\"a\":[{\"b\":[{\"c\":[[{}]]}]]]}");
}
END_TEST

static Suite *json_prefix_suite(void)
{
    Suite *s = suite_create("json_prefix");
    TCase *t = tcase_create("json_prefix");
    tcase_add_test(t, test_json_prefix_valid_documents_complete);
    tcase_add_test(t, test_json_prefix_every_prefix_valid);
    tcase_add_test(t, test_json_prefix_open_prefixes);
    tcase_add_test(t, test_json_prefix_invalid_prefixes);
    tcase_add_test(t, test_json_prefix_string_bytes);
    tcase_add_test(t, test_json_prefix_numbers_end_on_structure);
    tcase_add_test(t, test_json_prefix_depth_limit);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(json_prefix_suite(), CK_FORK);
}
