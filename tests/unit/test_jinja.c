/* test_jinja.c -- the Jinja interpreter (src/chat/jinja/): every construct
 * of tests/data/jinja/cases.json rendered and compared with what Python's
 * jinja2 rendered in Hugging Face's environment (make_cases.py), syntax
 * errors naming their line and column, and the limits a hostile template
 * runs into. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chat/jinja/jinja.h"
#include "support.h"

static char *slurp(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", support_source_dir(), rel);
    return support_read_file(path);
}

/* Render src with ctx (JSON text; NULL = {}); returns owned text, or NULL
 * with err filled. */
static char *render_lim(const char *src, const char *ctx, const struct st_jinja_opts *lim,
                        struct st_err *err)
{
    struct st_jinja_tmpl *t;
    struct st_buf out;
    cJSON *j = cJSON_Parse(ctx ? ctx : "{}");
    enum st_status rc;

    ck_assert_ptr_nonnull(j);
    memset(err, 0, sizeof(*err));
    st_buf_init(&out);
    rc = st_jinja_parse(src, strlen(src), &t, err);
    if (rc == ST_OK) {
        rc = st_jinja_render(t, j, lim, &out, err);
        st_jinja_free(t);
    }
    cJSON_Delete(j);
    if (rc != ST_OK) {
        st_buf_fini(&out);
        return NULL;
    }
    return st_buf_steal(&out);
}

static char *render(const char *src, const char *ctx, struct st_err *err)
{
    return render_lim(src, ctx, NULL, err);
}

START_TEST(test_jinja_cases_match_python)
{
    char *text = slurp("tests/data/jinja/cases.json");
    cJSON *root, *ctx, *c;
    char *ctx_text;
    int n = 0;

    ck_assert_msg(text != NULL, "tests/data/jinja/cases.json missing");
    root = cJSON_Parse(text);
    ck_assert_ptr_nonnull(root);
    ctx = cJSON_GetObjectItem(root, "context");
    ctx_text = cJSON_PrintUnformatted(ctx);
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *tmpl = cJSON_GetObjectItem(c, "template")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "output");
        struct st_err err;
        char *got = render(tmpl, ctx_text, &err);
        if (want)
            ck_assert_msg(got && strcmp(got, want->valuestring) == 0,
                          "template %s\n want [%s]\n got  [%s] (%s)", tmpl, want->valuestring,
                          got ? got : "error", got ? "" : err.msg);
        else
            ck_assert_msg(!got && err.code == ST_ERR_INVALID && strstr(err.msg, "line"),
                          "template %s should fail, got [%s]", tmpl, got ? got : err.msg);
        free(got);
        n++;
    }
    ck_assert_int_gt(n, 50);
    free(ctx_text);
    cJSON_Delete(root);
    free(text);
}
END_TEST

static void expect_error(const char *src, const char *needle)
{
    struct st_err err;
    char *got = render(src, NULL, &err);

    ck_assert_msg(got == NULL, "%s rendered [%s]", src, got ? got : "");
    ck_assert_msg(strstr(err.msg, needle) != NULL, "%s: error [%s] lacks [%s]", src, err.msg,
                  needle);
}

START_TEST(test_jinja_syntax_errors_name_line_and_column)
{
    expect_error("a\nb {{ 1 + }}", "line 2, column 10: unexpected '}}'");
    expect_error("{% if x %}\nno end", "line 1 is not closed (expected {% endif %})");
    expect_error("{% for x in y %}{% endif %}", "unknown tag 'endif'");
    expect_error("line\n\n  {% frobnicate %}", "line 3, column 6: unknown tag 'frobnicate'");
    expect_error("{{ 'unterminated }}", "unterminated string");
    expect_error("{{ x", "missing '}}'");
    expect_error("{# open comment", "unterminated comment");
    expect_error("{{ a.(1) }}", "expected an attribute name");
    expect_error("{% set %}", "expected a name");
    expect_error("{{ x | }}", "expected a filter name");
    expect_error("{{ $ }}", "unexpected character '$'");
    expect_error("{% macro m( %}{% endmacro %}", "line 1");
    expect_error("{% for x in y recursive %}{% endfor %}", "recursive loops are not supported");
}
END_TEST

START_TEST(test_jinja_runtime_errors_name_line)
{
    expect_error("ok\n{{ raise_exception('Conversation roles must alternate') }}",
                 "line 2: Conversation roles must alternate");
    expect_error("\n\n{{ 1 // 0 }}", "line 3");
    expect_error("{{ nope.x() }}", "undefined has no method 'x'");
    expect_error("{% set x = 1 %}{% set x.y = 2 %}", "non-namespace");
    expect_error("{{ 'a' | no_such_filter }}", "unknown filter 'no_such_filter'");
    expect_error("{{ 1 is no_such_test }}", "unknown test");
}
END_TEST

START_TEST(test_jinja_extras_beyond_python_cases)
{
    struct st_err err;
    char *got;

    /* Hugging Face's {% generation %} marker renders its body */
    got = render("a{% generation %}b{{ 1 }}{% endgeneration %}c", NULL, &err);
    ck_assert_str_eq(got, "ab1c");
    free(got);
    /* list.append (llama.cpp's minja allows it; HF's sandbox does not) */
    got = render("{% set l = [] %}{% set _ = l.append(1) %}{{ l }}", NULL, &err);
    ck_assert_str_eq(got, "[1]");
    free(got);
    /* items of none is empty (llama.cpp's interpreter; jinja2 raises): a
     * template that sets tools to none and iterates them renders */
    got = render("{{ none | items | list }}", NULL, &err);
    ck_assert_str_eq(got, "[]");
    free(got);
    /* strftime_now gives a date of the asked shape */
    got = render("{{ strftime_now('%Y') | length }}", NULL, &err);
    ck_assert_str_eq(got, "4");
    free(got);
    /* a dict literal inside {{ }} does not end the tag */
    got = render("{{ {'a': {'b': 1}} }}", NULL, &err);
    ck_assert_str_eq(got, "{'a': {'b': 1}}");
    free(got);
    /* line breaks read as "\n" (CRLF too), tabs before a block tag are
     * stripped by lstrip_blocks, one trailing newline is dropped */
    got = render("x\r\n\t{% if true %}y{% endif %}\r\n", NULL, &err);
    ck_assert_str_eq(got, "x\ny");
    free(got);
}
END_TEST

START_TEST(test_jinja_limits_stop_hostile_templates)
{
    struct st_jinja_opts lim;
    struct st_err err;
    char *got;

    st_jinja_opts_default(&lim);
    lim.max_steps = 100000;
    got = render_lim("{% for i in range(1000) %}{% for j in range(1000) %}{{ j }}{% endfor %}"
                     "{% endfor %}", NULL, &lim, &err);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(err.msg, "steps"), "%s", err.msg);

    st_jinja_opts_default(&lim);
    lim.max_output_bytes = 1000;
    got = render_lim("{% for i in range(10000) %}xxxxxxxx{% endfor %}", NULL, &lim, &err);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(err.msg, "output"), "%s", err.msg);

    got = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, &err);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(err.msg, "nests deeper"), "%s", err.msg);

    got = render("{% set s = 'x' * 100000 %}{% set s = s * 100000 %}", NULL, &err);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(err.msg, "bytes"), "%s", err.msg);

    st_jinja_opts_default(&lim);
    lim.max_memory_bytes = 1 << 20;
    got = render_lim("{% set ns = namespace(s='x') %}{% for i in range(100000) %}"
                     "{% set ns.s = ns.s ~ 'yyyyyyyyyy' %}{% endfor %}", NULL, &lim, &err);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(err.msg, "memory") || strstr(err.msg, "bytes"), "%s", err.msg);

    got = render("{{ range(1000000000000) }}", NULL, &err);
    ck_assert_ptr_null(got);

    /* deep nesting at parse time is an error, not a stack overflow */
    char deep[4096];
    size_t k = 0;
    k += (size_t)snprintf(deep, sizeof(deep), "{{ ");
    for (int i = 0; i < 1000; i++)
        deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 1000; i++)
        deep[k++] = ')';
    memcpy(deep + k, " }}", 4);
    got = render(deep, NULL, &err);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(err.msg, "nested too deeply"), "%s", err.msg);
}
END_TEST

static Suite *jinja_suite(void)
{
    Suite *s = suite_create("jinja");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_jinja_cases_match_python);
    tcase_add_test(tc, test_jinja_syntax_errors_name_line_and_column);
    tcase_add_test(tc, test_jinja_runtime_errors_name_line);
    tcase_add_test(tc, test_jinja_extras_beyond_python_cases);
    tcase_add_test(tc, test_jinja_limits_stop_hostile_templates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(jinja_suite(), CK_FORK);
}
