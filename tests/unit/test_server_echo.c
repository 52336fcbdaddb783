/* test_server_echo.c -- echo and prompt_logprobs in the server's pure parts
 * (oai_request.c, oai_response.c): which bodies parse into which engine
 * parameters, which are 400 (OpenAI's error shape, naming the param), and
 * the legacy logprobs and vLLM prompt_logprobs renderings of prompt tokens.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "server/openai/oai.h"
#include "support.h"

static enum st_status parse(enum st_oai_kind k, const char *body, struct st_oai_request *r,
                            struct st_api_error *e)
{
    memset(e, 0, sizeof(*e));
    return st_oai_parse(k, body, strlen(body), r, e);
}

static void expect_bad(enum st_oai_kind k, const char *body, const char *param)
{
    struct st_oai_request r;
    struct st_api_error e;
    ck_assert_msg(parse(k, body, &r, &e) != ST_OK, "accepted: %s", body);
    ck_assert_int_eq(st_api_error_http(&e), 400);
    ck_assert_str_eq(e.param, param);
    ck_assert(e.message[0] != '\0');
    struct st_buf b;
    st_buf_init(&b);
    ck_assert(st_api_error_json(&b, &e) == ST_OK);
    cJSON *j = cJSON_ParseWithLength(b.data, b.len);
    const cJSON *err = cJSON_GetObjectItem(j, "error");
    ck_assert_str_eq(cJSON_GetObjectItem(err, "type")->valuestring, "invalid_request_error");
    ck_assert_str_eq(cJSON_GetObjectItem(err, "param")->valuestring, param);
    cJSON_Delete(j);
    st_buf_fini(&b);
    st_oai_request_fini(&r);
}

START_TEST(test_server_echo_parse)
{
    struct st_oai_request r;
    struct st_api_error e;
    /* lm-eval's payload: echo, logprobs 1, max_tokens 1, token ids */
    ck_assert(parse(ST_OAI_COMPLETION, "{\"prompt\":[1,2,3],\"echo\":true,\"logprobs\":1,"
                    "\"max_tokens\":1,\"temperature\":0,\"seed\":1234}", &r, &e) == ST_OK);
    ck_assert(r.echo && r.params.echo && r.params.prompt_logprobs);
    ck_assert_int_eq(r.params.prompt_top_logprobs, 1);
    ck_assert_int_eq(r.prompt_logprobs, -1);
    st_oai_request_fini(&r);
    /* echo without logprobs: text only, no scoring */
    ck_assert(parse(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"echo\":true,\"max_tokens\":0}", &r,
                    &e) == ST_OK);
    ck_assert(r.params.echo && !r.params.prompt_logprobs);
    ck_assert_int_eq(r.params.max_tokens, 0);
    st_oai_request_fini(&r);
    /* vLLM's prompt_logprobs: the larger count wins for the engine */
    ck_assert(parse(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"echo\":true,\"logprobs\":2,"
                    "\"prompt_logprobs\":5}", &r, &e) == ST_OK);
    ck_assert(r.params.prompt_logprobs);
    ck_assert_int_eq(r.params.prompt_top_logprobs, 5);
    ck_assert_int_eq(r.prompt_logprobs, 5);
    st_oai_request_fini(&r);
    ck_assert(parse(ST_OAI_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],"
                    "\"prompt_logprobs\":0,\"echo\":false}", &r, &e) == ST_OK);
    ck_assert(!r.params.echo && r.params.prompt_logprobs);
    ck_assert_int_eq(r.params.prompt_top_logprobs, 0);
    st_oai_request_fini(&r);
    /* null counts as absent; nothing asked, nothing scored */
    ck_assert(parse(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"prompt_logprobs\":null,"
                    "\"logprobs\":3}", &r, &e) == ST_OK);
    ck_assert(!r.params.echo && !r.params.prompt_logprobs);
    ck_assert_int_eq(r.prompt_logprobs, -1);
    st_oai_request_fini(&r);
}
END_TEST

START_TEST(test_server_echo_bad_combinations)
{
    const char *chat = "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],";
    char b[256];
    snprintf(b, sizeof(b), "%s\"echo\":true}", chat);
    expect_bad(ST_OAI_CHAT, b, "echo");
    snprintf(b, sizeof(b), "%s\"prompt_logprobs\":21}", chat);
    expect_bad(ST_OAI_CHAT, b, "prompt_logprobs");
    expect_bad(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"echo\":true,\"logprobs\":21}", "logprobs");
    expect_bad(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"prompt_logprobs\":-1}",
               "prompt_logprobs");
    expect_bad(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"prompt_logprobs\":1.5}",
               "prompt_logprobs");
    expect_bad(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"prompt_logprobs\":\"2\"}",
               "prompt_logprobs");
    expect_bad(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"prompt_logprobs\":2,\"stream\":true}",
               "prompt_logprobs");
    expect_bad(ST_OAI_COMPLETION, "{\"prompt\":\"a\",\"echo\":\"yes\"}", "echo");
}
END_TEST

/* The first prompt token (null entries), then one with alternatives that do
 * not hold it (OpenAI adds it: N + 1), in the legacy arrays. */
START_TEST(test_server_echo_legacy_entries)
{
    struct st_top_logprob top[1] = { { 9, -0.5f, "x", 1 } };
    struct st_oai_logprob first = { .text = "A", .text_len = 1, .null_entry = true,
                                    .add_self = true, .token = 4 };
    struct st_oai_logprob second = { .text = " b", .text_len = 2, .logprob = -2.0f, .top = top,
                                     .n_top = 1, .text_offset = 1, .add_self = true,
                                     .token = 5 };
    struct st_oai_logprob third = { .text = "x", .text_len = 1, .logprob = -0.5f, .top = top,
                                    .n_top = 1, .text_offset = 3, .add_self = true,
                                    .token = 9 };
    struct st_oai_lp_acc acc;
    st_oai_lp_acc_init(&acc);
    ck_assert(st_oai_lp_acc_add(&acc, ST_OAI_COMPLETION, &first) == ST_OK);
    ck_assert(st_oai_lp_acc_add(&acc, ST_OAI_COMPLETION, &second) == ST_OK);
    ck_assert(st_oai_lp_acc_add(&acc, ST_OAI_COMPLETION, &third) == ST_OK);
    struct st_oai_meta m = { ST_OAI_COMPLETION, "cmpl-1", "m", 1, false };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert(st_oai_chunk_text_acc(&b, &m, 0, "A bx", 4, &acc) == ST_OK);
    cJSON *j = cJSON_ParseWithLength(b.data, b.len);
    ck_assert_msg(j != NULL, "%s", b.data);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(c, "text")->valuestring, "A bx");
    const cJSON *lp = cJSON_GetObjectItem(c, "logprobs");
    const cJSON *tl = cJSON_GetObjectItem(lp, "token_logprobs");
    const cJSON *tops = cJSON_GetObjectItem(lp, "top_logprobs");
    ck_assert(cJSON_IsNull(cJSON_GetArrayItem(tl, 0)));
    ck_assert(cJSON_IsNull(cJSON_GetArrayItem(tops, 0)));
    ck_assert(fabs(cJSON_GetArrayItem(tl, 1)->valuedouble + 2.0) < 1e-9);
    const cJSON *t1 = cJSON_GetArrayItem(tops, 1);
    ck_assert_int_eq(cJSON_GetArraySize(t1), 2);   /* "x" and the token " b" itself */
    ck_assert(fabs(cJSON_GetObjectItem(t1, " b")->valuedouble + 2.0) < 1e-9);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(tops, 2)), 1);   /* it is "x" */
    const cJSON *off = cJSON_GetObjectItem(lp, "text_offset");
    ck_assert_int_eq(cJSON_GetArrayItem(off, 2)->valueint, 3);
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(lp, "tokens"), 1)->valuestring,
                     " b");
    cJSON_Delete(j);
    st_buf_fini(&b);
    st_oai_lp_acc_fini(&acc);
}
END_TEST

/* vLLM's prompt_logprobs entries and where the body puts them. */
START_TEST(test_server_echo_vllm_prompt_logprobs)
{
    struct st_prompt_token t0, t1;
    memset(&t0, 0, sizeof(t0));
    memset(&t1, 0, sizeof(t1));
    t0.token = 4;
    t1 = (struct st_prompt_token){ .pos = 1, .token = 7, .text = " b", .n_text = 2,
                                   .has_logprob = true, .logprob = -1.5f, .rank = 2,
                                   .n_top = 2 };
    t1.top[0] = (struct st_top_logprob){ 3, -0.25f, "c", 1 };
    t1.top[1] = (struct st_top_logprob){ 7, -1.5f, " b", 2 };
    struct st_buf pl;
    st_buf_init(&pl);
    ck_assert(st_oai_prompt_lp_add(&pl, true, &t0, 2) == ST_OK);
    ck_assert(st_oai_prompt_lp_add(&pl, false, &t1, 2) == ST_OK);
    struct st_oai_choice ch = { .index = 0, .text = "a b", .text_len = 3,
                                .finish = ST_FINISH_LENGTH, .prompt_logprobs = pl.data,
                                .prompt_logprobs_len = pl.len };
    struct st_oai_usage u = { 2, 0, 0, 0 };
    for (int kind = 0; kind < 2; kind++) {
        struct st_oai_meta m = { kind ? ST_OAI_CHAT : ST_OAI_COMPLETION, "id", "m", 1, false };
        struct st_buf b;
        st_buf_init(&b);
        ck_assert(st_oai_body(&b, &m, &ch, 1, &u) == ST_OK);
        cJSON *j = cJSON_ParseWithLength(b.data, b.len);
        ck_assert_msg(j != NULL, "%s", b.data);
        const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
        /* completions: per choice (vLLM); chat: beside choices (vLLM) */
        const cJSON *arr = cJSON_GetObjectItem(kind ? j : c, "prompt_logprobs");
        ck_assert(cJSON_GetObjectItem(kind ? c : j, "prompt_logprobs") == NULL);
        ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
        ck_assert(cJSON_IsNull(cJSON_GetArrayItem(arr, 0)));
        const cJSON *e1 = cJSON_GetArrayItem(arr, 1);
        ck_assert_int_eq(cJSON_GetArraySize(e1), 2);   /* the token, and "3"; 7 once */
        const cJSON *self = cJSON_GetObjectItem(e1, "7");
        ck_assert_int_eq(cJSON_GetObjectItem(self, "rank")->valueint, 2);
        ck_assert_str_eq(cJSON_GetObjectItem(self, "decoded_token")->valuestring, " b");
        ck_assert(fabs(cJSON_GetObjectItem(self, "logprob")->valuedouble + 1.5) < 1e-9);
        ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(e1, "3"), "rank")->valueint,
                         1);
        ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "usage"),
                                             "prompt_tokens")->valueint, 2);
        cJSON_Delete(j);
        st_buf_fini(&b);
    }
    st_buf_fini(&pl);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("server_echo");
    TCase *tc = tcase_create("echo");
    tcase_add_test(tc, test_server_echo_parse);
    tcase_add_test(tc, test_server_echo_bad_combinations);
    tcase_add_test(tc, test_server_echo_legacy_entries);
    tcase_add_test(tc, test_server_echo_vllm_prompt_logprobs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(suite(), CK_FORK);
}
