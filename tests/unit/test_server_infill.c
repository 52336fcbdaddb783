/* test_server_infill.c -- POST /infill bodies (h_infill.c st_infill_parse)
 * and the legacy "suffix" of /v1/completions (oai_request.c): fields,
 * defaults, n_predict over max_tokens, what is switched off, and the 400s
 * with the offending param named. */
#include <check.h>
#include <string.h>

#include "server/llama/llama.h"
#include "support.h"

static enum st_status parse(const char *body, struct st_oai_request *oq,
                            struct st_infill_body *b, struct st_api_error *e)
{
    return st_infill_parse(body, strlen(body), oq, b, e);
}

START_TEST(test_server_infill_fields)
{
    struct st_oai_request oq;
    struct st_infill_body b;
    struct st_api_error e;
    const char *body = "{\"input_prefix\":\"def f(\",\"input_suffix\":\"\\n\",\"prompt\":\"x\","
                       "\"input_extra\":[{\"filename\":\"a.py\",\"text\":\"1\"},{\"text\":\"2\"}],"
                       "\"n_predict\":7,\"max_tokens\":3,\"temperature\":0.5,\"stream\":true,"
                       "\"priority\":70,\"logprobs\":3,\"echo\":true,\"id_slot\":2}";
    ck_assert_int_eq(parse(body, &oq, &b, &e), ST_OK);
    ck_assert_str_eq(b.input_prefix, "def f(");
    ck_assert_str_eq(b.input_suffix, "\n");
    ck_assert_str_eq(b.prompt, "x");
    ck_assert_uint_eq(b.n_extra, 2);
    ck_assert_str_eq(b.extra[0].filename, "a.py");
    ck_assert_str_eq(b.extra[0].text, "1");
    ck_assert_ptr_null(b.extra[1].filename);   /* "tmp" in the engine */
    ck_assert_int_eq(oq.params.max_tokens, 7);  /* n_predict wins */
    ck_assert(oq.stream && oq.llama.on && oq.has_priority);
    ck_assert_int_eq(oq.priority, 70);
    ck_assert(!oq.params.logprobs && !oq.echo && !oq.params.echo);
    ck_assert_int_eq(oq.n_prompts, 0);          /* the FIM ids come later */
    st_infill_body_fini(&b);
    st_oai_request_fini(&oq);
    ck_assert_int_eq(parse("{}", &oq, &b, &e), ST_OK);
    ck_assert_ptr_null(b.input_prefix);
    ck_assert_int_eq(oq.params.max_tokens, -1);
    st_infill_body_fini(&b);
    st_oai_request_fini(&oq);
}
END_TEST

START_TEST(test_server_infill_errors_name_the_field)
{
    static const char *const cases[][2] = {
        { "{\"input_prefix\":1}", "input_prefix" },
        { "{\"input_suffix\":[]}", "input_suffix" },
        { "{\"prompt\":[1,2]}", "prompt" },
        { "{\"input_extra\":{}}", "input_extra" },
        { "{\"input_extra\":[1]}", "input_extra" },
        { "{\"input_extra\":[{\"filename\":2,\"text\":\"x\"}]}", "input_extra" },
        { "{\"input_extra\":[{\"filename\":\"a.py\"}]}", "input_extra" },
        { "{\"n\":3}", "n" },
        { "{\"n_predict\":-2}", "n_predict" },
        { "{\"top_p\":0}", "top_p" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(cases); i++) {
        struct st_oai_request oq;
        struct st_infill_body b;
        struct st_api_error e;
        ck_assert_int_eq(parse(cases[i][0], &oq, &b, &e), ST_ERR_INVALID);
        ck_assert_msg(strcmp(e.param, cases[i][1]) == 0, "%s: param %s", cases[i][0], e.param);
        ck_assert_ptr_null(b.extra);
        st_infill_body_fini(&b);
        st_oai_request_fini(&oq);
    }
    struct st_oai_request oq;
    struct st_infill_body b;
    struct st_api_error e;
    ck_assert_int_eq(parse("not json", &oq, &b, &e), ST_ERR_INVALID);
}
END_TEST

START_TEST(test_server_completions_suffix)
{
    struct st_oai_request oq;
    struct st_api_error e;
    const char *b1 = "{\"prompt\":\"a\",\"suffix\":\"b\"}";
    ck_assert_int_eq(st_oai_parse(ST_OAI_COMPLETION, b1, strlen(b1), &oq, &e), ST_OK);
    ck_assert_str_eq(oq.suffix, "b");
    ck_assert(!oq.llama.on);
    st_oai_request_fini(&oq);
    const char *b2 = "{\"prompt\":\"a\",\"suffix\":\"\"}";
    ck_assert_int_eq(st_oai_parse(ST_OAI_COMPLETION, b2, strlen(b2), &oq, &e), ST_OK);
    ck_assert_ptr_null(oq.suffix);
    st_oai_request_fini(&oq);
    const char *b3 = "{\"prompt\":\"a\",\"suffix\":\"b\",\"echo\":true}";
    ck_assert_int_eq(st_oai_parse(ST_OAI_COMPLETION, b3, strlen(b3), &oq, &e), ST_ERR_INVALID);
    ck_assert_str_eq(e.param, "suffix");
    const char *b4 = "{\"prompt\":\"a\",\"suffix\":5}";
    ck_assert_int_eq(st_oai_parse(ST_OAI_COMPLETION, b4, strlen(b4), &oq, &e), ST_ERR_INVALID);
    ck_assert_str_eq(e.param, "suffix");
}
END_TEST

static Suite *server_infill_suite(void)
{
    Suite *s = suite_create("server_infill");
    TCase *t = tcase_create("server_infill");
    tcase_add_test(t, test_server_infill_fields);
    tcase_add_test(t, test_server_infill_errors_name_the_field);
    tcase_add_test(t, test_server_completions_suffix);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(server_infill_suite(), CK_FORK);
}
