/* test_server.c -- st_server's pure parts, no network: request parsing
 * (every field, every type error -> status + param), response chunks and
 * bodies, SSE framing, JSON output, error mapping for every st_status, auth
 * and request ids, the route table, and /metrics rendering from hand-filled
 * stats. */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "server/daemon.h"
#include "support.h"

/* A parsed value as JSON text (what the parsers printed before the chat
 * request kept trees): valid until the next call. */
static const char *json_text(const cJSON *v)
{
    static char buf[8192];
    char *p = v ? cJSON_PrintUnformatted(v) : NULL;
    snprintf(buf, sizeof(buf), "%s", p ? p : "");
    cJSON_free(p);
    return buf;
}

/* ---- helpers ----------------------------------------------------------- */

static enum st_status parse(enum st_oai_kind k, const char *body, struct st_oai_request *r,
                            struct st_api_error *e)
{
    memset(e, 0, sizeof(*e));
    return st_oai_parse(k, body, strlen(body), r, e);
}

/* Parse 'body', expect 400 naming 'param' (NULL: no param). */
static void expect_bad(enum st_oai_kind k, const char *body, const char *param)
{
    struct st_oai_request r;
    struct st_api_error e;
    enum st_status rc = parse(k, body, &r, &e);
    ck_assert_msg(rc != ST_OK, "accepted: %s", body);
    ck_assert_msg(st_api_error_http(&e) == 400, "%s: http %d", body, st_api_error_http(&e));
    ck_assert_str_eq(e.param, param ? param : "");
    ck_assert_msg(e.message[0] != '\0', "no message for %s", body);
    st_oai_request_fini(&r);
}

static cJSON *json_of(const struct st_buf *b)
{
    cJSON *j = cJSON_ParseWithLength(b->data, b->len);
    ck_assert_msg(j != NULL, "not JSON: %.*s", (int)b->len, b->data);
    return j;
}

/* ---- request parsing ---------------------------------------------------- */

START_TEST(test_server_parse_chat_every_field)
{
    struct st_oai_request r;
    struct st_api_error e;
    const char *body =
        "{\"model\":\"m1\",\"messages\":[{\"role\":\"system\",\"content\":\"be nice\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
        "\"text\":\"b\"}]},{\"role\":\"assistant\",\"content\":null}],"
        "\"max_tokens\":10,\"max_completion_tokens\":7,\"stop\":[\"x\",\"\",\"yy\"],\"n\":3,"
        "\"seed\":42,\"temperature\":0.5,\"top_p\":0.9,\"top_k\":7,\"min_p\":0.1,"
        "\"logprobs\":true,\"top_logprobs\":4,\"user\":\"u\",\"priority\":12,"
        "\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true},"
        "\"chat_template_kwargs\":{\"enable_thinking\":false},\"tools\":[{\"type\":\"function\"}],"
        "\"unknown_field\":{\"deep\":[1,2,3]}}";
    ck_assert_int_eq(parse(ST_OAI_CHAT, body, &r, &e), ST_OK);
    ck_assert_str_eq(r.model, "m1");
    ck_assert_int_eq(r.params.max_tokens, 7);
    ck_assert_int_eq(r.params.n_stop, 2);   /* the empty stop string is dropped */
    ck_assert_str_eq(r.params.stop[0], "x");
    ck_assert_str_eq(r.params.stop[1], "yy");
    ck_assert_int_eq(r.n, 3);
    ck_assert(r.params.has_seed);
    ck_assert_uint_eq(r.params.seed, 42);
    ck_assert_float_eq_tol(r.params.temperature, 0.5f, 1e-6);
    ck_assert_float_eq_tol(r.params.top_p, 0.9f, 1e-6);
    ck_assert_int_eq(r.params.top_k, 7);
    ck_assert_float_eq_tol(r.params.min_p, 0.1f, 1e-6);
    ck_assert(r.params.logprobs);
    ck_assert_int_eq(r.params.top_logprobs, 4);
    ck_assert_str_eq(r.user, "u");
    ck_assert(r.has_priority);
    ck_assert_int_eq(r.priority, 12);
    ck_assert(r.params.ignore_eos);
    ck_assert(r.stream);
    ck_assert(r.include_usage);
    ck_assert_str_eq(json_text(r.chat.kwargs), "{\"enable_thinking\":false}");
    ck_assert_str_eq(r.chat.tools, "[{\"type\":\"function\"}]");
    /* text parts are joined; null content is kept */
    cJSON *m = cJSON_Duplicate(r.chat.messages, true);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(cJSON_GetArraySize(m), 3);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 1), "content")->valuestring, "ab");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 2), "content")));
    cJSON_Delete(m);
    st_oai_request_fini(&r);
}
END_TEST

START_TEST(test_server_parse_defaults_and_nulls)
{
    struct st_oai_request r;
    struct st_api_error e;
    struct st_gen_params d;
    st_gen_params_defaults(&d);
    ck_assert_int_eq(parse(ST_OAI_CHAT,
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":null,"
                           "\"max_tokens\":null,\"n\":null,\"seed\":-1,\"temperature\":null,"
                           "\"model\":null,\"priority\":\"high\"}",
                           &r, &e),
                     ST_OK);
    ck_assert_ptr_null(r.model);
    ck_assert_int_eq(r.n, 1);
    ck_assert_int_eq(r.params.n_stop, 0);
    ck_assert_int_eq(r.params.max_tokens, d.max_tokens);
    ck_assert(!r.params.has_seed);                 /* -1 = random */
    ck_assert_float_eq(r.params.temperature, d.temperature);
    ck_assert(!r.has_priority);                    /* junk counts as absent, never an error */
    ck_assert(!r.stream);
    ck_assert_ptr_null(r.chat.tools);
    st_oai_request_fini(&r);
}
END_TEST

START_TEST(test_server_parse_priority_values)
{
    static const struct { const char *v; bool has; int32_t p; } cases[] = {
        { "5", true, 5 }, { "-100", true, -100 }, { "5.0", true, 5 }, { "1.5", false, 0 },
        { "true", false, 0 }, { "null", false, 0 }, { "\"7\"", false, 0 },
        { "3000000000", false, 0 }, { "[1]", false, 0 },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(cases); i++) {
        char body[160];
        snprintf(body, sizeof(body), "{\"prompt\":\"x\",\"priority\":%s}", cases[i].v);
        struct st_oai_request r;
        struct st_api_error e;
        ck_assert_int_eq(parse(ST_OAI_COMPLETION, body, &r, &e), ST_OK);
        ck_assert_msg(r.has_priority == cases[i].has, "priority %s", cases[i].v);
        if (cases[i].has)
            ck_assert_int_eq(r.priority, cases[i].p);
        st_oai_request_fini(&r);
    }
}
END_TEST

START_TEST(test_server_parse_prompt_forms)
{
    struct st_oai_request r;
    struct st_api_error e;
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":\"a b\"}", &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_prompts, 1);
    ck_assert_str_eq(r.prompts[0].text, "a b");
    st_oai_request_fini(&r);
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":[\"a\",\"b\",\"c\"],\"n\":2}", &r, &e),
                     ST_OK);
    ck_assert_uint_eq(r.n_prompts, 3);
    ck_assert_str_eq(r.prompts[2].text, "c");
    st_oai_request_fini(&r);
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":[1,2,3]}", &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_prompts, 1);
    ck_assert_uint_eq(r.prompts[0].n_tokens, 3);
    ck_assert_int_eq(r.prompts[0].tokens[2], 3);
    ck_assert_ptr_null(r.prompts[0].text);
    st_oai_request_fini(&r);
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":[[1,2],[3]],\"logprobs\":2}", &r, &e),
                     ST_OK);
    ck_assert_uint_eq(r.n_prompts, 2);
    ck_assert_uint_eq(r.prompts[1].n_tokens, 1);
    ck_assert(r.params.logprobs);
    ck_assert_int_eq(r.params.top_logprobs, 2);
    st_oai_request_fini(&r);
    /* llama-server's mixed prompt: one prompt, kept for the model's tokenizer; a
     * string first makes the array one prompt too, as does any number in it */
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":[\"a\",1,\"b\"]}", &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_prompts, 1);
    ck_assert(cJSON_IsArray(r.prompts[0].mixed));
    ck_assert_int_eq(cJSON_GetArraySize(r.prompts[0].mixed), 3);
    ck_assert_ptr_null(r.prompts[0].tokens);
    st_oai_request_fini(&r);
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":[[1,\"a\"],\"b\"]}", &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_prompts, 2);
    ck_assert(r.prompts[0].mixed && r.prompts[1].text);
    st_oai_request_fini(&r);
}
END_TEST

START_TEST(test_server_parse_type_errors)
{
    static const struct { const char *body; const char *param; } chat[] = {
        { "", NULL },
        { "{", NULL },
        { "[]", NULL },
        { "42", NULL },
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]} trailing", NULL },
        { "{}", "messages" },
        { "{\"messages\":{}}", "messages" },
        { "{\"messages\":[]}", "messages" },
        { "{\"messages\":[1]}", "messages" },
        { "{\"messages\":[{\"role\":1}]}", "messages" },
        { "{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}", "messages" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":true}]}", "messages" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}", "messages" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":[1]}]}", "messages" },
        { "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]}",
          "messages" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(chat); i++)
        expect_bad(ST_OAI_CHAT, chat[i].body, chat[i].param);

    static const struct { const char *field; const char *param; } fields[] = {
        { "\"model\":1", "model" },
        { "\"max_tokens\":-1", "max_tokens" },
        { "\"max_tokens\":1.5", "max_tokens" },
        { "\"max_tokens\":\"5\"", "max_tokens" },
        { "\"max_tokens\":3000000000", "max_tokens" },
        { "\"max_completion_tokens\":-2", "max_completion_tokens" },
        { "\"stop\":1", "stop" },
        { "\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop" },
        { "\"stop\":[\"a\",null]", "stop" },
        { "\"n\":0", "n" },
        { "\"n\":17", "n" },
        { "\"n\":true", "n" },
        { "\"seed\":\"1\"", "seed" },
        { "\"seed\":0.5", "seed" },
        { "\"temperature\":-0.1", "temperature" },
        { "\"temperature\":[]", "temperature" },
        { "\"top_p\":0", "top_p" },
        { "\"top_p\":1.01", "top_p" },
        { "\"top_k\":-2", "top_k" },
        { "\"top_k\":1.5", "top_k" },
        { "\"min_p\":-1", "min_p" },
        { "\"min_p\":\"a\"", "min_p" },
        { "\"logprobs\":1", "logprobs" },
        { "\"top_logprobs\":2", "top_logprobs" },
        { "\"logprobs\":true,\"top_logprobs\":21", "top_logprobs" },
        { "\"logprobs\":true,\"top_logprobs\":-1", "top_logprobs" },
        { "\"user\":[]", "user" },
        { "\"ignore_eos\":\"yes\"", "ignore_eos" },
        { "\"stream\":1", "stream" },
        { "\"stream_options\":1", "stream_options" },
        { "\"stream_options\":{\"include_usage\":1}", "stream_options.include_usage" },
        { "\"chat_template_kwargs\":[]", "chat_template_kwargs" },
        { "\"tools\":{}", "tools" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(fields); i++) {
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],%s}", fields[i].field);
        expect_bad(ST_OAI_CHAT, body, fields[i].param);
    }

    static const struct { const char *body; const char *param; } comp[] = {
        { "{}", "prompt" },
        { "{\"prompt\":1}", "prompt" },
        { "{\"prompt\":[]}", "prompt" },
        { "{\"prompt\":[1,\"a\",true]}", "prompt" },
        { "{\"prompt\":[1,\"a\",-1]}", "prompt" },
        { "{\"prompt\":[[1,\"a\",null]]}", "prompt" },
        { "{\"prompt\":[-1]}", "prompt" },
        { "{\"prompt\":[1.5]}", "prompt" },
        { "{\"prompt\":[[]]}", "prompt" },
        { "{\"prompt\":[[\"a\"]]}", "prompt" },
        { "{\"prompt\":[{}]}", "prompt" },
        { "{\"prompt\":\"x\",\"logprobs\":true}", "logprobs" },
        { "{\"prompt\":\"x\",\"logprobs\":21}", "logprobs" },
        { "{\"prompt\":\"x\",\"echo\":1}", "echo" },
        { "{\"prompt\":[\"a\",\"b\",\"c\",\"d\",\"e\"],\"n\":16}", "n" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(comp); i++)
        expect_bad(ST_OAI_COMPLETION, comp[i].body, comp[i].param);
}
END_TEST

/* Penalties, logit_bias and response_format (oai_sampling.c). */
START_TEST(test_server_parse_penalties)
{
    struct st_oai_request r;
    struct st_api_error e;
    ck_assert_int_eq(parse(ST_OAI_CHAT,
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                           "\"presence_penalty\":-2,\"frequency_penalty\":1.5,"
                           "\"repeat_penalty\":1.1,\"repeat_last_n\":-1,"
                           "\"logit_bias\":{\"15\":-100,\"7\":2.5,\"007\":100},"
                           "\"response_format\":{\"type\":\"text\"}}",
                           &r, &e),
                     ST_OK);
    ck_assert_float_eq(r.params.presence_penalty, -2.0f);
    ck_assert_float_eq(r.params.frequency_penalty, 1.5f);
    ck_assert_float_eq_tol(r.params.repeat_penalty, 1.1f, 1e-6f);
    ck_assert_int_eq(r.params.repeat_last_n, -1);
    ck_assert_int_eq(r.params.n_logit_bias, 2);   /* "007" is token 7 again: the last wins */
    ck_assert_int_eq(r.params.logit_bias[0].token, 15);
    ck_assert_float_eq(r.params.logit_bias[0].bias, -100.0f);
    ck_assert_int_eq(r.params.logit_bias[1].token, 7);
    ck_assert_float_eq(r.params.logit_bias[1].bias, 100.0f);
    st_oai_request_fini(&r);
    /* text keys (llama-server's): kept for the tokenizer, false is -100 */
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":\"x\",\"logit_bias\":"
                           "{\" the\":-5,\"3\":false,\"b c\":false}}", &r, &e), ST_OK);
    ck_assert_int_eq(r.params.n_logit_bias, 1);
    ck_assert_float_eq(r.params.logit_bias[0].bias, -100.0f);
    ck_assert_int_eq(cJSON_GetArraySize(r.bias_text), 2);
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetArrayItem(r.bias_text, 0), 0)->valuestring,
                     " the");
    ck_assert_int_eq((int)cJSON_GetArrayItem(cJSON_GetArrayItem(r.bias_text, 1), 1)->valuedouble,
                     -100);
    st_oai_request_fini(&r);
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":\"x\",\"logit_bias\":"
                           "[[\"ab\",2],[4,1]]}", &r, &e), ST_OK);
    ck_assert_int_eq(r.params.n_logit_bias, 1);
    ck_assert_int_eq(cJSON_GetArraySize(r.bias_text), 1);
    st_oai_request_fini(&r);
    /* defaults: off (repeat 1.0 over 64), null and {} count as absent */
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":\"x\",\"logit_bias\":{},"
                           "\"presence_penalty\":null,\"response_format\":null}", &r, &e),
                     ST_OK);
    ck_assert_float_eq(r.params.presence_penalty, 0.0f);
    ck_assert_float_eq(r.params.frequency_penalty, 0.0f);
    ck_assert_float_eq(r.params.repeat_penalty, 1.0f);
    ck_assert_int_eq(r.params.repeat_last_n, 64);
    ck_assert_int_eq(r.params.n_logit_bias, 0);
    ck_assert_ptr_null(r.params.logit_bias);
    st_oai_request_fini(&r);

    static const char *const bad[][2] = {
        { "\"presence_penalty\":2.5", "presence_penalty" },
        { "\"presence_penalty\":\"1\"", "presence_penalty" },
        { "\"frequency_penalty\":-2.01", "frequency_penalty" },
        { "\"repeat_penalty\":0", "repeat_penalty" },
        { "\"repeat_penalty\":-1", "repeat_penalty" },
        { "\"repeat_last_n\":-2", "repeat_last_n" },
        { "\"repeat_last_n\":1.5", "repeat_last_n" },
        { "\"logit_bias\":\"x\"", "logit_bias" },
        { "\"logit_bias\":[[1]]", "logit_bias" },
        { "\"logit_bias\":[[\"\",-1]]", "logit_bias" },
        { "\"logit_bias\":[[-1,1]]", "logit_bias" },
        { "\"logit_bias\":[[1.5,1]]", "logit_bias" },
        { "\"logit_bias\":[[5,true]]", "logit_bias" },
        { "\"logit_bias\":[[5,101]]", "logit_bias" },
        { "\"logit_bias\":[5]", "logit_bias" },
        { "\"logit_bias\":{\"abc\":101}", "logit_bias" },
        { "\"logit_bias\":[[\"abc\",true]]", "logit_bias" },
        { "\"logit_bias\":{\"-1\":1}", "logit_bias" },
        { "\"logit_bias\":{\"1.5\":1}", "logit_bias" },
        { "\"logit_bias\":{\"\":1}", "logit_bias" },
        { "\"logit_bias\":{\"99999999999\":1}", "logit_bias" },
        { "\"logit_bias\":{\"5\":101}", "logit_bias" },
        { "\"logit_bias\":{\"5\":-100.5}", "logit_bias" },
        { "\"logit_bias\":{\"5\":\"1\"}", "logit_bias" },
        { "\"logit_bias\":{\"5\":null}", "logit_bias" },
        { "\"response_format\":\"text\"", "response_format" },
        { "\"response_format\":{}", "response_format" },
        { "\"response_format\":{\"type\":\"yaml\"}", "response_format" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(bad); i++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],%s}",
                 bad[i][0]);
        expect_bad(ST_OAI_CHAT, body, bad[i][1]);
        snprintf(body, sizeof(body), "{\"prompt\":\"x\",%s}", bad[i][0]);
        expect_bad(ST_OAI_COMPLETION, body, bad[i][1]);
    }
    /* json_object sets the JSON mask; text (and no field) leaves it off */
    ck_assert_int_eq(parse(ST_OAI_CHAT,
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                           "\"response_format\":{\"type\":\"json_object\"}}", &r, &e),
                     ST_OK);
    ck_assert(r.params.json_object);
    st_oai_request_fini(&r);
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":\"x\","
                           "\"response_format\":{\"type\":\"json_object\"}}", &r, &e),
                     ST_OK);
    ck_assert(r.params.json_object);
    st_oai_request_fini(&r);
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":\"x\","
                           "\"response_format\":{\"type\":\"text\"}}", &r, &e), ST_OK);
    ck_assert(!r.params.json_object);
    st_oai_request_fini(&r);
    /* json_schema compiles into params.json_schema (OpenAI's shape, and
     * llama-server's top-level "json_schema" and json_object + "schema") */
    const char *const schema_ok[] = {
        ("\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\","
         "\"strict\":true,\"schema\":{\"type\":\"object\",\"properties\":{\"a\":"
         "{\"type\":\"integer\"}},\"required\":[\"a\"],\"additionalProperties\":false}}}"),
        ("\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p-1_\","
         "\"strict\":false}}"),
        "\"json_schema\":{\"type\":\"array\"}",
        "\"response_format\":{\"type\":\"json_object\",\"schema\":{\"type\":\"object\"}}",
        /* no name, as llama-server allows */
        "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{}}}",
    };
    for (size_t i = 0; i < sizeof(schema_ok) / sizeof(*schema_ok); i++) {
        char body[512];
        snprintf(body, sizeof(body), "{\"prompt\":\"x\",%s}", schema_ok[i]);
        ck_assert_msg(parse(ST_OAI_COMPLETION, body, &r, &e) == ST_OK, "%s: %s", body,
                      e.message);
        ck_assert_ptr_nonnull(r.params.json_schema);
        ck_assert(!r.params.json_object);
        st_oai_request_fini(&r);
    }
    /* what cannot be enforced is refused (400, naming the keyword), never ignored */
    const char *const schema_bad[][2] = {
        { "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\","
          "\"schema\":{\"type\":\"string\",\"pattern\":\"(?=a)\"}}}", "'pattern'" },
        { "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\","
          "\"schema\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
          "\"multipleOf\":0.5}}}}}", "'multipleOf'" },
        { "\"response_format\":{\"type\":\"json_schema\"}", "json_schema'" },
        { "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":3}}",
          "name'" },
        { "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"a b\"}}",
          "name" },
        { "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\","
          "\"strict\":1}}", "strict" },
        { "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\","
          "\"schema\":[]}}", "schema" },
    };
    for (size_t i = 0; i < sizeof(schema_bad) / sizeof(*schema_bad); i++) {
        char body[512];
        snprintf(body, sizeof(body), "{\"prompt\":\"x\",%s}", schema_bad[i][0]);
        ck_assert_int_ne(parse(ST_OAI_COMPLETION, body, &r, &e), ST_OK);
        ck_assert_int_eq(st_api_error_http(&e), 400);
        ck_assert_str_eq(e.param, "response_format");
        ck_assert_str_eq(st_server_error_type(e.status), "invalid_request_error");
        ck_assert_msg(strstr(e.message, schema_bad[i][1]), "%s: %s", body, e.message);
        st_oai_request_fini(&r);
    }
    ck_assert_int_ne(parse(ST_OAI_CHAT,
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                           "\"json_schema\":{\"not\":{}}}", &r, &e), ST_OK);
    ck_assert_str_eq(e.param, "json_schema");
    ck_assert_msg(strstr(e.message, "'not'"), "%s", e.message);
    st_oai_request_fini(&r);
    ck_assert_int_ne(parse(ST_OAI_COMPLETION, "{\"prompt\":\"x\",\"json_schema\":{},"
                           "\"response_format\":{\"type\":\"text\"}}", &r, &e), ST_OK);
    ck_assert_str_eq(e.param, "json_schema");
    st_oai_request_fini(&r);
    /* too many entries: the error says the limit */
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_buf_append(&b, ST_LIT("{\"prompt\":\"x\",\"logit_bias\":{")), ST_OK);
    for (int i = 0; i <= ST_MAX_LOGIT_BIAS; i++) {
        char kv[32];
        int n = snprintf(kv, sizeof(kv), "%s\"%d\":1", i ? "," : "", i);
        ck_assert_int_eq(st_buf_append(&b, kv, (size_t)n), ST_OK);
    }
    ck_assert_int_eq(st_buf_append(&b, ST_LIT("}}")), ST_OK);
    memset(&e, 0, sizeof(e));
    ck_assert_int_ne(st_oai_parse(ST_OAI_COMPLETION, b.data, b.len, &r, &e), ST_OK);
    ck_assert_str_eq(e.param, "logit_bias");
    ck_assert_msg(strstr(e.message, "1024"), "%s", e.message);
    st_oai_request_fini(&r);
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_server_parse_text_requests)
{
    struct st_oai_text_request r;
    struct st_api_error e;
    const char *b = "{\"content\":\"hi\",\"with_pieces\":true}";
    ck_assert_int_eq(st_oai_parse_text(ST_OAI_TOKENIZE, b, strlen(b), &r, &e), ST_OK);
    ck_assert_str_eq(r.content, "hi");
    ck_assert(!r.add_special);
    ck_assert(r.parse_special);
    ck_assert(r.with_pieces);
    st_oai_text_request_fini(&r);
    b = "{\"add_special\":true}";
    ck_assert_int_eq(st_oai_parse_text(ST_OAI_TOKENIZE, b, strlen(b), &r, &e), ST_ERR_INVALID);
    ck_assert_str_eq(e.param, "content");
    b = "{\"tokens\":[1,2,2147483647]}";
    ck_assert_int_eq(st_oai_parse_text(ST_OAI_DETOKENIZE, b, strlen(b), &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_tokens, 3);
    ck_assert_int_eq(r.tokens[2], INT32_MAX);
    st_oai_text_request_fini(&r);
    b = "{\"tokens\":[2147483648]}";
    ck_assert_int_eq(st_oai_parse_text(ST_OAI_DETOKENIZE, b, strlen(b), &r, &e), ST_ERR_INVALID);
    ck_assert_str_eq(e.param, "tokens");
    b = "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],\"chat_template_kwargs\":{}}";
    ck_assert_int_eq(st_oai_parse_text(ST_OAI_APPLY_TEMPLATE, b, strlen(b), &r, &e), ST_OK);
    ck_assert_ptr_nonnull(strstr(json_text(r.chat.messages), "\"q\""));
    ck_assert_str_eq(json_text(r.chat.kwargs), "{}");
    ck_assert(r.add_generation_prompt);
    st_oai_text_request_fini(&r);
    b = "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],\"add_generation_prompt\":false}";
    ck_assert_int_eq(st_oai_parse_text(ST_OAI_APPLY_TEMPLATE, b, strlen(b), &r, &e), ST_OK);
    ck_assert(!r.add_generation_prompt);
    st_oai_text_request_fini(&r);
}
END_TEST

/* ---- JSON out, SSE ---------------------------------------------------- */

START_TEST(test_server_json_str_sanitises_utf8)
{
    struct st_buf b;
    st_buf_init(&b);
    /* valid 2-, 3- and 4-byte sequences pass; controls are escaped; a lone
     * continuation, a truncated sequence and a surrogate become U+FFFD */
    const char in[] = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\n\"\\\x01\x80\xE2\x82\xED\xA0\x80";
    ck_assert_int_eq(st_json_str(&b, in, sizeof(in) - 1), ST_OK);
    ck_assert_str_eq(b.data, "\"a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\\n\\\"\\\\\\u0001"
                             "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                             "\xEF\xBF\xBD\"");
    ck_assert(st_json_utf8_valid(b.data, b.len));
    ck_assert(!st_json_utf8_valid(in, sizeof(in) - 1));
    st_buf_reset(&b);
    ck_assert_int_eq(st_json_num(&b, NAN), ST_OK);
    ck_assert_str_eq(b.data, "null");
    st_buf_reset(&b);
    ck_assert_int_eq(st_json_num(&b, -0.25), ST_OK);
    ck_assert_str_eq(b.data, "-0.25");
    st_buf_reset(&b);
    ck_assert_int_eq(st_json_bytes(&b, "A\xFF", 2), ST_OK);
    ck_assert_str_eq(b.data, "[65,255]");
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_server_sse_framing)
{
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_sse_data(&b, "{\"a\":1}", 7), ST_OK);
    ck_assert_int_eq(st_sse_comment(&b, "ping"), ST_OK);
    ck_assert_int_eq(st_sse_done(&b), ST_OK);
    ck_assert_str_eq(b.data, "data: {\"a\":1}\n\n: ping\n\ndata: [DONE]\n\n");
    size_t len = b.len;
    ck_assert_int_eq(st_sse_data(&b, "{\n}", 3), ST_ERR_INVALID);   /* would split the event */
    ck_assert_int_eq(st_sse_data(&b, "x\ry", 3), ST_ERR_INVALID);
    ck_assert_uint_eq(b.len, len);
    st_buf_fini(&b);
}
END_TEST

static const struct st_oai_meta chat_meta = { ST_OAI_CHAT, "chatcmpl-x", "m", 1700000000, false };

START_TEST(test_server_chunks_chat)
{
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_oai_chunk_role(&b, &chat_meta, 2), ST_OK);
    cJSON *j = json_of(&b);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "object")->valuestring, "chat.completion.chunk");
    ck_assert_str_eq(cJSON_GetObjectItem(j, "id")->valuestring, "chatcmpl-x");
    ck_assert_int_eq(cJSON_GetObjectItem(j, "created")->valueint, 1700000000);
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
    ck_assert_int_eq(cJSON_GetObjectItem(c0, "index")->valueint, 2);
    cJSON *delta = cJSON_GetObjectItem(c0, "delta");
    ck_assert_str_eq(cJSON_GetObjectItem(delta, "role")->valuestring, "assistant");
    /* null, as llama-server: its suite holds any non-null content delta to be non-empty */
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(delta, "content")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(c0, "finish_reason")));
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "usage"));
    cJSON_Delete(j);

    st_buf_reset(&b);
    ck_assert_int_eq(st_oai_chunk_text(&b, &chat_meta, 0, "hi \"there\"", 10, NULL), ST_OK);
    j = json_of(&b);
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c0, "delta"), "content")->valuestring,
                     "hi \"there\"");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(c0, "logprobs")));
    cJSON_Delete(j);

    st_buf_reset(&b);
    ck_assert_int_eq(st_oai_chunk_finish(&b, &chat_meta, 1, ST_FINISH_LENGTH), ST_OK);
    j = json_of(&b);
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "finish_reason")->valuestring, "length");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c0, "delta")), 0);
    cJSON_Delete(j);
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_server_chunks_usage_and_completions)
{
    struct st_oai_meta m = chat_meta;
    m.include_usage = true;
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_oai_chunk_text(&b, &m, 0, "a", 1, NULL), ST_OK);
    cJSON *j = json_of(&b);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "usage")));
    cJSON_Delete(j);
    st_buf_reset(&b);
    struct st_oai_usage u = { 7, 3, 2, 1 };
    ck_assert_int_eq(st_oai_chunk_usage(&b, &m, &u), ST_OK);
    j = json_of(&b);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "choices")), 0);
    cJSON *us = cJSON_GetObjectItem(j, "usage");
    ck_assert_int_eq(cJSON_GetObjectItem(us, "prompt_tokens")->valueint, 7);
    ck_assert_int_eq(cJSON_GetObjectItem(us, "completion_tokens")->valueint, 3);
    ck_assert_int_eq(cJSON_GetObjectItem(us, "total_tokens")->valueint, 10);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(us, "prompt_tokens_details"),
                                         "cached_tokens")->valueint, 2);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(us, "completion_tokens_details"),
                                         "reasoning_tokens")->valueint, 1);
    cJSON_Delete(j);

    struct st_oai_meta cm = { ST_OAI_COMPLETION, "cmpl-y", "m", 1, false };
    st_buf_reset(&b);
    ck_assert_int_eq(st_oai_chunk_text(&b, &cm, 0, "xyz", 3, NULL), ST_OK);
    j = json_of(&b);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "object")->valuestring, "text_completion");
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "text")->valuestring, "xyz");
    cJSON_Delete(j);
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_server_logprobs_shapes)
{
    struct st_top_logprob top[2] = { { 5, -0.1f, "ab", 2 }, { 6, -2.5f, "\xFF", 1 } };
    struct st_oai_logprob lp = { .text = "ab", .text_len = 2, .logprob = -0.1f, .top = top,
                                 .n_top = 2, .text_offset = 4 };
    struct st_oai_lp_acc acc;
    st_oai_lp_acc_init(&acc);
    ck_assert_int_eq(st_oai_lp_acc_add(&acc, ST_OAI_CHAT, &lp), ST_OK);
    ck_assert_int_eq(st_oai_lp_acc_add(&acc, ST_OAI_CHAT, &lp), ST_OK);
    struct st_oai_choice ch = { .index = 0, .text = "abab", .text_len = 4,
                                .finish = ST_FINISH_STOP, .lp = &acc };
    struct st_oai_usage u = { 1, 2, 0, 0 };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_oai_body(&b, &chat_meta, &ch, 1, &u), ST_OK);
    cJSON *j = json_of(&b);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "object")->valuestring, "chat.completion");
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c0, "message"), "role")->valuestring,
                     "assistant");
    cJSON *content = cJSON_GetObjectItem(cJSON_GetObjectItem(c0, "logprobs"), "content");
    ck_assert_int_eq(cJSON_GetArraySize(content), 2);
    cJSON *e0 = cJSON_GetArrayItem(content, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(e0, "token")->valuestring, "ab");
    ck_assert_double_eq_tol(cJSON_GetObjectItem(e0, "logprob")->valuedouble, -0.1, 1e-6);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(e0, "bytes")), 2);
    cJSON *t1 = cJSON_GetArrayItem(cJSON_GetObjectItem(e0, "top_logprobs"), 1);
    ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(t1, "bytes"), 0)->valueint, 255);
    cJSON_Delete(j);
    st_oai_lp_acc_fini(&acc);

    /* the legacy completions shape: four parallel arrays */
    st_oai_lp_acc_init(&acc);
    ck_assert_int_eq(st_oai_lp_acc_add(&acc, ST_OAI_COMPLETION, &lp), ST_OK);
    struct st_oai_meta cm = { ST_OAI_COMPLETION, "cmpl-y", "m", 1, false };
    st_buf_reset(&b);
    ck_assert_int_eq(st_oai_body(&b, &cm, &ch, 1, &u), ST_OK);
    j = json_of(&b);
    cJSON *l = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0),
                                   "logprobs");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(l, "tokens")), 1);
    ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "text_offset"), 0)->valueint, 4);
    cJSON *tl = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "top_logprobs"), 0);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(tl, "ab")->valuedouble, -0.1, 1e-6);
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(tl, "\xEF\xBF\xBD"));   /* invalid byte sanitised */
    cJSON_Delete(j);
    st_oai_lp_acc_fini(&acc);
    st_buf_fini(&b);
}
END_TEST

/* ---- errors, auth, ids, routes ---------------------------------------- */

START_TEST(test_server_errors_map_every_status)
{
    for (int s = 0; s < ST_STATUS_COUNT; s++) {
        int http = st_server_http_status((enum st_status)s);
        const char *type = st_server_error_type((enum st_status)s);
        ck_assert_msg(http >= 200 && http < 600, "%s -> %d", st_status_name(s), http);
        ck_assert_ptr_nonnull(type);
        ck_assert_msg(type[0] != '\0', "%s has no type", st_status_name(s));
        if (s != ST_OK)
            ck_assert_msg(http >= 400, "%s -> %d", st_status_name(s), http);
    }
    ck_assert_int_eq(st_server_http_status(ST_ERR_INVALID), 400);
    ck_assert_int_eq(st_server_http_status(ST_ERR_TOO_LONG), 400);
    ck_assert_int_eq(st_server_http_status(ST_ERR_AUTH), 401);
    ck_assert_int_eq(st_server_http_status(ST_ERR_NOT_FOUND), 404);
    ck_assert_int_eq(st_server_http_status(ST_ERR_QUEUE_FULL), 429);
    ck_assert_int_eq(st_server_http_status(ST_ERR_LOADING), 503);
    ck_assert_int_eq(st_server_http_status(ST_ERR_SHUTDOWN), 503);
    ck_assert_int_eq(st_server_http_status(ST_ERR_NOMEM), 500);
    ck_assert_int_eq(st_server_http_status(ST_ERR_INTERNAL), 500);
    ck_assert_str_eq(st_server_error_type(ST_ERR_INVALID), "invalid_request_error");
    ck_assert_str_eq(st_server_error_type(ST_ERR_AUTH), "authentication_error");
    ck_assert_str_eq(st_server_error_type(ST_ERR_QUEUE_FULL), "rate_limit_error");
    ck_assert_str_eq(st_server_error_type(ST_ERR_LOADING), "unavailable_error");
    ck_assert_str_eq(st_server_error_type(ST_ERR_INTERNAL), "server_error");
}
END_TEST

START_TEST(test_server_errors_body_shape)
{
    struct st_api_error e;
    st_api_error_set(&e, ST_ERR_INVALID, "n", NULL, "bad %s \"n\"", "value");
    e.http = 413;
    ck_assert_int_eq(st_api_error_http(&e), 413);
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_api_error_json(&b, &e), ST_OK);
    cJSON *j = json_of(&b);
    cJSON *err = cJSON_GetObjectItem(j, "error");
    ck_assert_int_eq(cJSON_GetArraySize(err), 4);
    ck_assert_str_eq(cJSON_GetObjectItem(err, "message")->valuestring, "bad value \"n\"");
    ck_assert_str_eq(cJSON_GetObjectItem(err, "type")->valuestring, "invalid_request_error");
    ck_assert_str_eq(cJSON_GetObjectItem(err, "param")->valuestring, "n");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(err, "code")));
    cJSON_Delete(j);
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_server_auth_bearer)
{
    struct st_api_key keys[2] = { { "a", "key-one", false, 0, false, 0, false },
                                  { "b", "key-two", true, -5, false, 0, false } };
    ck_assert_ptr_eq(st_auth_find(keys, 2, "Bearer key-one"), &keys[0]);
    ck_assert_ptr_eq(st_auth_find(keys, 2, "bearer  key-two "), &keys[1]);
    ck_assert_ptr_null(st_auth_find(keys, 2, NULL));
    ck_assert_ptr_null(st_auth_find(keys, 2, "key-one"));
    ck_assert_ptr_null(st_auth_find(keys, 2, "Basic key-one"));
    ck_assert_ptr_null(st_auth_find(keys, 2, "Bearer key-on"));
    ck_assert_ptr_null(st_auth_find(keys, 2, "Bearer key-one2"));
    ck_assert_ptr_null(st_auth_find(keys, 2, "Bearer"));
    ck_assert_ptr_null(st_auth_find(keys, 2, "Bearerkey-one"));
    /* x-api-key: the key alone */
    ck_assert_ptr_eq(st_auth_find_plain(keys, 2, " key-two "), &keys[1]);
    ck_assert_ptr_null(st_auth_find_plain(keys, 2, "Bearer key-two"));
    ck_assert_ptr_null(st_auth_find_plain(keys, 2, "key-tw"));
    ck_assert_ptr_null(st_auth_find_plain(keys, 2, NULL));
}
END_TEST

START_TEST(test_server_request_ids)
{
    char id[48];
    st_request_id_pick("abc-DEF_1.2:3", id, sizeof(id));
    ck_assert_str_eq(id, "abc-DEF_1.2:3");
    const char *bad[] = { NULL, "", "has space", "quote\"", "x/y",
                          "0123456789012345678901234567890123456789X" };
    for (size_t i = 0; i < ST_ARRAY_LEN(bad); i++) {
        st_request_id_pick(bad[i], id, sizeof(id));
        ck_assert_uint_eq(strlen(id), 28);
        ck_assert_int_eq(strncmp(id, "req-", 4), 0);
        ck_assert_uint_eq(strspn(id + 4, "0123456789abcdef"), 24);
    }
    char other[48];
    st_request_id_pick(NULL, other, sizeof(other));
    ck_assert_str_ne(id, other);
    /* the hex ids' maker: prefix, 2 digits a byte, cut to fit with its NUL */
    st_random_hex_id(id, sizeof(id), "rs_", 12);
    ck_assert_uint_eq(strlen(id), 27);
    ck_assert_uint_eq(strspn(id + 3, "0123456789abcdef"), 24);
    st_random_hex_id(id, 10, "resp_", 8);
    ck_assert_int_eq(strncmp(id, "resp_", 5), 0);
    ck_assert_uint_eq(strlen(id), 9);   /* 5 + 2 whole bytes: no half byte */
    st_random_hex_id(id, 4, "resp_", 8);
    ck_assert_str_eq(id, "res");
}
END_TEST

START_TEST(test_server_routes)
{
    bool known;
    char allow[64];
    const struct st_route *r = st_route_find("/v1/chat/completions", "POST", &known, allow,
                                             sizeof(allow));
    ck_assert_ptr_nonnull(r);
    ck_assert(r->body && r->auth);
    ck_assert(r->fn == st_h_chat);
    ck_assert_ptr_null(st_route_find("/v1/chat/completions", "GET", &known, allow, sizeof(allow)));
    ck_assert(known);
    ck_assert_str_eq(allow, "POST");
    ck_assert_ptr_null(st_route_find("/v1/models", "DELETE", &known, allow, sizeof(allow)));
    ck_assert_str_eq(allow, "GET, HEAD");
    ck_assert_ptr_nonnull(st_route_find("/v1/models", "HEAD", &known, allow, sizeof(allow)));
    r = st_route_find("/v1/models/default", "GET", &known, allow, sizeof(allow));
    ck_assert(r->fn == st_h_model_one);
    ck_assert_ptr_null(st_route_find("/v1/models/", "POST", &known, allow, sizeof(allow)));
    ck_assert_ptr_null(st_route_find("/nope", "GET", &known, allow, sizeof(allow)));
    ck_assert(!known);
    r = st_route_find("/health", "GET", &known, allow, sizeof(allow));
    ck_assert(!r->auth);
    r = st_route_find("/metrics", "GET", &known, allow, sizeof(allow));
    ck_assert(r->auth);   /* with keys set; --metrics-key too (issue 26) */
}
END_TEST

/* ---- metrics ------------------------------------------------------------ */

static const char *line_of(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, n) == 0)
            return p;
    return NULL;
}

static void expect_line(const char *text, const char *line)
{
    char want[256];
    snprintf(want, sizeof(want), "%s\n", line);
    ck_assert_msg(line_of(text, want) != NULL, "missing line: %s", line);
}

START_TEST(test_server_metrics_render)
{
    struct st_sched_stats ss;
    struct st_pool_stats ps;
    struct st_http_stats hs;
    memset(&ss, 0, sizeof(ss));
    memset(&ps, 0, sizeof(ps));
    memset(&hs, 0, sizeof(hs));
    ss.band[ST_BAND_BATCH].queue_depth = 3;
    ss.band[ST_BAND_BATCH].oldest_wait_s = 1.5;
    ss.band[ST_BAND_INTERACTIVE].dispatched = 9;
    ss.band[ST_BAND_NORMAL].reorders_aging = 2;
    ss.band[ST_BAND_NORMAL].reorders_affinity = 1;
    ss.band[ST_BAND_NORMAL].give_ways = 4;
    ss.band[ST_BAND_NORMAL].outcomes[ST_OUTCOME_CANCELLED] = 5;
    ss.slots_idle = 2;
    ss.slots_decoding = 6;
    ss.waiting = 3;
    ss.running = 6;
    ss.shed = 1;
    ps.prompt_tokens = 1000;
    ps.generated_tokens = 77;
    ps.kv_usage = 0.25;
    ps.ttft[ST_BAND_NORMAL].n_bounds = 3;
    ps.ttft[ST_BAND_NORMAL].bounds[0] = 0.1;
    ps.ttft[ST_BAND_NORMAL].bounds[1] = 0.5;
    ps.ttft[ST_BAND_NORMAL].bounds[2] = 1;
    ps.ttft[ST_BAND_NORMAL].counts[0] = 1;
    ps.ttft[ST_BAND_NORMAL].counts[1] = 2;
    ps.ttft[ST_BAND_NORMAL].counts[3] = 1;   /* +Inf */
    ps.ttft[ST_BAND_NORMAL].count = 4;
    ps.ttft[ST_BAND_NORMAL].sum = 3.25;
    hs.responses[0] = 11;   /* 200 */

    struct st_buf b;
    st_buf_init(&b);
    hs.draining = true;
    ck_assert_int_eq(st_metrics_render(&b, &ss, &ps, &hs, NULL), ST_OK);
    const char *t = b.data;
    expect_line(t, "# TYPE llamaswap_scheduler_queue_depth gauge");
    expect_line(t, "# TYPE strata_server_draining gauge");
    expect_line(t, "strata_server_draining 1");
    expect_line(t, "llamaswap_scheduler_queue_depth{band=\"batch\"} 3");
    expect_line(t, "llamaswap_scheduler_queue_depth{band=\"interactive\"} 0");
    expect_line(t, "llamaswap_scheduler_queue_oldest_wait_seconds{band=\"batch\"} 1.5");
    expect_line(t, "# TYPE llamaswap_scheduler_dispatched_total counter");
    expect_line(t, "llamaswap_scheduler_dispatched_total{band=\"interactive\"} 9");
    expect_line(t, "llamaswap_scheduler_reorders_total{band=\"normal\",term=\"aging\"} 2");
    expect_line(t, "llamaswap_scheduler_reorders_total{band=\"normal\",term=\"swap_affinity\"} 1");
    expect_line(t, "llamaswap_scheduler_reorders_total{band=\"batch\",term=\"aging\"} 0");
    expect_line(t, "strata_slots{state=\"idle\"} 2");
    expect_line(t, "strata_slots{state=\"decoding\"} 6");
    expect_line(t, "strata_slots{state=\"parked\"} 0");
    expect_line(t, "strata_give_ways_total{band=\"normal\"} 4");
    expect_line(t, "strata_requests_total{band=\"normal\",outcome=\"cancelled\"} 5");
    expect_line(t, "strata_requests_total{band=\"batch\",outcome=\"rejected\"} 0");
    expect_line(t, "strata_queue_full_total 1");
    expect_line(t, "strata_prompt_tokens_total 1000");
    expect_line(t, "strata_generated_tokens_total 77");
    expect_line(t, "# TYPE strata_time_to_first_token_seconds histogram");
    expect_line(t, "strata_time_to_first_token_seconds_bucket{band=\"normal\",le=\"0.1\"} 1");
    expect_line(t, "strata_time_to_first_token_seconds_bucket{band=\"normal\",le=\"0.5\"} 3");
    expect_line(t, "strata_time_to_first_token_seconds_bucket{band=\"normal\",le=\"1\"} 3");
    expect_line(t, "strata_time_to_first_token_seconds_bucket{band=\"normal\",le=\"+Inf\"} 4");
    expect_line(t, "strata_time_to_first_token_seconds_sum{band=\"normal\"} 3.25");
    expect_line(t, "strata_time_to_first_token_seconds_count{band=\"normal\"} 4");
    expect_line(t, "strata_inter_token_latency_seconds_count{band=\"batch\"} 0");
    expect_line(t, "strata_http_responses_total{code=\"200\"} 11");
    expect_line(t, "strata_http_responses_total{code=\"other\"} 0");
    expect_line(t, "vllm:num_requests_waiting 3");
    expect_line(t, "vllm:num_requests_running 6");
    expect_line(t, "vllm:kv_cache_usage_perc 0.25");
    /* every sample's family has HELP and TYPE before it */
    for (const char *p = t; *p; p = strchr(p, '\n') + 1) {
        if (*p == '#')
            continue;
        char name[128];
        size_t n = strcspn(p, "{ ");
        ck_assert(n < sizeof(name));
        memcpy(name, p, n);
        name[n] = '\0';
        /* a histogram's samples carry _bucket/_sum/_count after the family name */
        static const char *const sfx[] = { "_bucket", "_sum", "_count" };
        for (size_t k = 0; k < ST_ARRAY_LEN(sfx); k++) {
            size_t nl = strlen(name), sl = strlen(sfx[k]);
            if (nl > sl && strcmp(name + nl - sl, sfx[k]) == 0) {
                char type[200];
                snprintf(type, sizeof(type), "# TYPE %.*s histogram\n", (int)(nl - sl), name);
                if (strstr(t, type))
                    name[nl - sl] = '\0';
            }
        }
        char help[160];
        snprintf(help, sizeof(help), "# HELP %s ", name);
        ck_assert_msg(strstr(t, help) != NULL, "no HELP for %s", name);
    }
    st_buf_fini(&b);
}
END_TEST

/* The per-model families from a hand-filled snapshot: every model present,
 * the swap pairs as given (none first), names escaped, MTP ratios. */
START_TEST(test_server_metrics_models)
{
    struct st_sched_stats ss;
    struct st_pool_stats ps;
    memset(&ss, 0, sizeof(ss));
    memset(&ps, 0, sizeof(ps));
    ps.mtp_drafted = 40;
    ps.mtp_accepted = 30;
    ps.mtp_steps = 20;
    ps.ngram_drafted = 17;
    ps.ngram_accepted = 11;
    ps.ngram_steps = 5;
    const char *names[] = { "alpha", "be\"ta", "broken" };
    struct st_model_status st[3];
    memset(st, 0, sizeof(st));
    for (int i = 0; i < 3; i++) {
        st[i].load_seconds.n_bounds = 2;
        st[i].load_seconds.bounds[0] = 0.1;
        st[i].load_seconds.bounds[1] = 1;
    }
    st[0].n_loaded = 2;
    st[0].load_seconds.counts[1] = 2;
    st[0].load_seconds.count = 2;
    st[0].load_seconds.sum = 0.5;
    st[2].load_failures = 3;
    struct st_metrics_swap sw[] = { { -1, 0, 2 }, { -1, 1, 0 }, { 0, 1, 1 }, { 1, 0, 0 } };
    struct st_metrics_models mm = { .n_models = 3, .names = names, .status = st,
                                    .swaps = sw, .n_swaps = ST_ARRAY_LEN(sw) };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_metrics_render(&b, &ss, &ps, NULL, &mm), ST_OK);
    const char *t = b.data;
    expect_line(t, "# TYPE strata_model_loaded gauge");
    expect_line(t, "strata_model_loaded{model=\"alpha\"} 2");
    expect_line(t, "strata_model_loaded{model=\"be\\\"ta\"} 0");
    expect_line(t, "strata_model_loaded{model=\"broken\"} 0");
    expect_line(t, "# TYPE strata_model_load_failures_total counter");
    expect_line(t, "strata_model_load_failures_total{model=\"broken\"} 3");
    expect_line(t, "strata_model_load_failures_total{model=\"alpha\"} 0");
    expect_line(t, "# TYPE strata_model_load_seconds histogram");
    expect_line(t, "strata_model_load_seconds_bucket{model=\"alpha\",le=\"0.1\"} 0");
    expect_line(t, "strata_model_load_seconds_bucket{model=\"alpha\",le=\"1\"} 2");
    expect_line(t, "strata_model_load_seconds_bucket{model=\"alpha\",le=\"+Inf\"} 2");
    expect_line(t, "strata_model_load_seconds_sum{model=\"alpha\"} 0.5");
    expect_line(t, "strata_model_load_seconds_count{model=\"broken\"} 0");
    expect_line(t, "# TYPE strata_model_swaps_total counter");
    expect_line(t, "strata_model_swaps_total{from=\"none\",to=\"alpha\"} 2");
    expect_line(t, "strata_model_swaps_total{from=\"none\",to=\"be\\\"ta\"} 0");
    expect_line(t, "strata_model_swaps_total{from=\"alpha\",to=\"be\\\"ta\"} 1");
    expect_line(t, "strata_model_swaps_total{from=\"be\\\"ta\",to=\"alpha\"} 0");
    expect_line(t, "strata_mtp_draft_tokens_total 40");
    expect_line(t, "strata_mtp_accepted_tokens_total 30");
    expect_line(t, "strata_mtp_steps_total 20");
    expect_line(t, "# TYPE strata_ngram_draft_tokens_total counter");
    expect_line(t, "strata_ngram_draft_tokens_total 17");
    expect_line(t, "strata_ngram_accepted_tokens_total 11");
    expect_line(t, "strata_ngram_steps_total 5");
    expect_line(t, "strata_mtp_acceptance_rate 0.75");
    expect_line(t, "strata_mtp_mean_accepted_length 2.5");
    ck_assert_ptr_null(line_of(t, "strata_model_swaps_total{from=\"alpha\",to=\"alpha\"}"));
    st_buf_reset(&b);
    /* no snapshot: no model families; no MTP yet: the ratios are 0 */
    memset(&ps, 0, sizeof(ps));
    ck_assert_int_eq(st_metrics_render(&b, &ss, &ps, NULL, NULL), ST_OK);
    ck_assert_ptr_null(strstr(b.data, "strata_model_"));
    expect_line(b.data, "strata_mtp_acceptance_rate 0");
    expect_line(b.data, "strata_mtp_mean_accepted_length 0");
    st_buf_fini(&b);
}
END_TEST

/* Submit a request for model m on the fixture's one engine and run it. */
static void serve_one(struct fixture *f, int32_t m)
{
    struct rec r;
    memset(&r, 0, sizeof(r));
    r.clock = &f->clk.clock;
    r.first_ns = -1;
    struct st_request *req = st_request_new();
    ck_assert_ptr_nonnull(req);
    snprintf(req->id, sizeof(req->id), "m%d", (int)m);
    req->prompt = fx_words(4);
    req->params.max_tokens = 1;
    req->model = m;
    req->emit = rec_emit;
    req->emit_ctx = &r;
    ck_assert_int_eq(st_engine_pool_submit(f->pool, req, NULL), ST_OK);
    fx_run_idle(f);
    ck_assert(r.ended);
    ck_assert_int_eq(r.status, ST_OK);
    st_request_unref(req);
}

/* The snapshot of a real sim pool: above ST_METRICS_ALL_PAIRS_MAX models
 * only the "none" row and pairs of models that have loaded; at or below it
 * every pair but a model to itself. */
static void models_take_case(int32_t n_models, size_t want_before, size_t want_after)
{
    static char names[32][16];
    struct st_model_config extra[31];
    struct fixture f;
    fx_defaults(&f);
    ck_assert(n_models >= 2 && n_models <= 32);
    for (int32_t m = 0; m < n_models; m++) {
        snprintf(names[m], sizeof(names[m]), "m%d", (int)m);
        struct st_model_config *c = m ? &extra[m - 1] : &f.pcfg.model;
        if (m)
            *c = f.pcfg.model;
        c->name = names[m];
        c->backend = ST_BACKEND_SIM;
    }
    f.pcfg.extra_models = extra;
    f.pcfg.n_extra_models = n_models - 1;
    f.pcfg.sim.load_seconds = 0.5;
    ck_assert(fx_start(&f));
    struct st_metrics_models mm;
    ck_assert_int_eq(st_metrics_models_take(f.pool, f.sched, &mm), ST_OK);
    ck_assert_int_eq(mm.n_models, n_models);
    ck_assert_uint_eq(mm.n_swaps, want_before);
    ck_assert_str_eq(mm.names[n_models - 1], names[n_models - 1]);
    st_metrics_models_fini(&mm);

    serve_one(&f, 0);            /* none -> m0 */
    serve_one(&f, 1);            /* m0 -> m1 */
    ck_assert_int_eq(st_metrics_models_take(f.pool, f.sched, &mm), ST_OK);
    ck_assert_uint_eq(mm.n_swaps, want_after);
    uint64_t none_m0 = 0, m0_m1 = 0, total = 0;
    for (size_t i = 0; i < mm.n_swaps; i++) {
        const struct st_metrics_swap *w = &mm.swaps[i];
        ck_assert_int_ne(w->from, w->to);
        total += w->n;
        if (w->from == -1 && w->to == 0)
            none_m0 = w->n;
        if (w->from == 0 && w->to == 1)
            m0_m1 = w->n;
    }
    ck_assert_uint_eq(none_m0, 1);
    ck_assert_uint_eq(m0_m1, 1);
    ck_assert_uint_eq(total, 2);
    ck_assert_int_eq(mm.status[1].state, ST_MODEL_LOADED);
    ck_assert_int_eq(mm.status[1].n_loaded, 1);
    ck_assert_int_eq(mm.status[0].state, ST_MODEL_UNLOADED);
    ck_assert_uint_eq(mm.status[0].load_seconds.count, 1);
    ck_assert_double_eq_tol(mm.status[0].load_seconds.sum, 0.5, 1e-6);
    struct st_sched_stats ss;
    struct st_pool_stats ps;
    st_sched_stats(f.sched, &ss);
    st_engine_pool_stats(f.pool, &ps);
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_metrics_render(&b, &ss, &ps, NULL, &mm), ST_OK);
    expect_line(b.data, "strata_model_swaps_total{from=\"m0\",to=\"m1\"} 1");
    expect_line(b.data, "strata_model_loaded{model=\"m1\"} 1");
    expect_line(b.data, "strata_model_load_seconds_count{model=\"m0\"} 1");
    st_buf_fini(&b);
    st_metrics_models_fini(&mm);
    fx_stop(&f);
}

START_TEST(test_server_metrics_models_take)
{
    /* 3 models: 4 x 3 pairs less 3 to themselves, from the start */
    models_take_case(3, 9, 9);
    /* 20: the none row, then also m0 -> m1 and m1 -> m0 */
    ck_assert_int_gt(20, ST_METRICS_ALL_PAIRS_MAX);
    models_take_case(20, 20, 22);
}
END_TEST

START_TEST(test_server_retry_seconds)
{
    ck_assert_int_eq(st_retry_seconds(0), 0);
    ck_assert_int_eq(st_retry_seconds(-3), 0);
    ck_assert_int_eq(st_retry_seconds(0.001), 1);
    ck_assert_int_eq(st_retry_seconds(29.2), 30);
    ck_assert_int_eq(st_retry_seconds(30), 30);
    ck_assert_int_eq(st_retry_seconds(1e12), 86400);
    ck_assert_int_eq(st_retry_seconds((double)NAN), 0);
}
END_TEST

/* ---- CORS, SSE keep-alive, cache_prompt -------------------------------- */

/* The default: pages of this machine only (issue 26). */
START_TEST(test_server_cors_localhost)
{
    struct st_cors c;
    struct st_err err = {0};
    bool vary = false;
    struct st_server_config cfg;
    st_server_config_defaults(&cfg);
    ck_assert_str_eq(cfg.cors_origins, "localhost");
    ck_assert_int_eq(st_cors_init(&c, cfg.cors_origins, &err), ST_OK);
    const char *ok[] = { "http://localhost:5173", "http://127.0.0.1", "https://[::1]:8443",
                         "HTTP://LOCALHOST:3000" };
    for (size_t i = 0; i < ST_ARRAY_LEN(ok); i++) {
        ck_assert_msg(st_cors_allow(&c, ok[i], &vary) == ok[i], "refused %s", ok[i]);
        ck_assert(vary);
    }
    const char *no[] = { "http://localhost.evil.example", "http://evil.example",
                         "http://127.0.0.1.nip.io", "http://localhost:", "http://localhost:80x",
                         "file://localhost", "null" };
    for (size_t i = 0; i < ST_ARRAY_LEN(no); i++)
        ck_assert_msg(st_cors_allow(&c, no[i], &vary) == NULL, "allowed %s", no[i]);
    st_cors_fini(&c);
    /* mixed with listed origins */
    ck_assert_int_eq(st_cors_init(&c, "https://app.example,localhost", &err), ST_OK);
    ck_assert_ptr_nonnull(st_cors_allow(&c, "https://app.example", &vary));
    ck_assert_ptr_nonnull(st_cors_allow(&c, "http://localhost:1", &vary));
    ck_assert_ptr_null(st_cors_allow(&c, "https://b.example", &vary));
    st_cors_fini(&c);
}
END_TEST

/* Host header checks against DNS rebinding, Content-Type of POST bodies. */
START_TEST(test_server_guard_hosts_and_content_type)
{
    struct st_hosts h;
    struct st_err err = {0};
    ck_assert_int_eq(st_hosts_init(&h, NULL, "127.0.0.1", &err), ST_OK);
    const char *ok[] = { "localhost", "localhost:8080", "LOCALHOST.:8080", "127.0.0.1:1",
                         "[::1]:8080", "[::1]", "10.1.2.3", "[fe80::1]:80", NULL, "" };
    for (size_t i = 0; i < ST_ARRAY_LEN(ok); i++)
        ck_assert_msg(st_hosts_allow(&h, ok[i]), "refused %s", ok[i] ? ok[i] : "(none)");
    const char *no[] = { "evil.example", "evil.example:8080", "localhost.evil.example",
                         "127.0.0.1.nip.io", "[::1", "[evil]:80", "1.2.3.4.5" };
    for (size_t i = 0; i < ST_ARRAY_LEN(no); i++)
        ck_assert_msg(!st_hosts_allow(&h, no[i]), "allowed %s", no[i]);
    st_hosts_fini(&h);
    /* the bound name and listed names; a wildcard bind adds none */
    ck_assert_int_eq(st_hosts_init(&h, " a.example , B.Example", "gpu-box.lan", &err), ST_OK);
    ck_assert(st_hosts_allow(&h, "a.example:80"));
    ck_assert(st_hosts_allow(&h, "b.example"));
    ck_assert(st_hosts_allow(&h, "GPU-BOX.LAN:8080"));
    ck_assert(!st_hosts_allow(&h, "c.example"));
    st_hosts_fini(&h);
    ck_assert_int_eq(st_hosts_init(&h, NULL, "0.0.0.0", &err), ST_OK);
    ck_assert(!st_hosts_allow(&h, "0.0.0.0.evil.example"));
    ck_assert(st_hosts_allow(&h, "192.168.1.5:8080"));
    st_hosts_fini(&h);
    ck_assert_int_eq(st_hosts_init(&h, "*", "127.0.0.1", &err), ST_OK);
    ck_assert(st_hosts_allow(&h, "anything.example"));
    st_hosts_fini(&h);
    ck_assert_int_eq(st_hosts_init(&h, "a.example,b c", "127.0.0.1", &err), ST_ERR_BAD_CONFIG);
    ck_assert_int_eq(st_hosts_init(&h, "a.example:80", "127.0.0.1", &err), ST_OK);
    st_hosts_fini(&h);

    ck_assert(st_content_type_json("application/json"));
    ck_assert(st_content_type_json("Application/JSON; charset=utf-8"));
    ck_assert(st_content_type_json("application/json;charset=UTF-8"));
    ck_assert(!st_content_type_json(NULL));
    ck_assert(!st_content_type_json(""));
    ck_assert(!st_content_type_json("text/plain"));
    ck_assert(!st_content_type_json("text/plain;charset=UTF-8"));
    ck_assert(!st_content_type_json("application/x-www-form-urlencoded"));
    ck_assert(!st_content_type_json("application/jsonp"));
    ck_assert(!st_content_type_json("multipart/form-data; boundary=x"));
}
END_TEST

/* Who made which request: the newest remembered, an id two keys used
 * belongs to neither. */
START_TEST(test_server_owners)
{
    struct st_owners *o = st_owners_new();
    ck_assert_ptr_nonnull(o);
    ck_assert_uint_eq(st_owners_find(o, "r1"), 0);
    st_owners_add(o, "r1", 1);
    st_owners_add(o, "r2", 2);
    st_owners_add(o, "r2", 2);
    ck_assert_uint_eq(st_owners_find(o, "r1"), 1);
    ck_assert_uint_eq(st_owners_find(o, "r2"), 2);
    st_owners_add(o, "r1", 2);
    ck_assert_uint_eq(st_owners_find(o, "r1"), ST_OWNER_AMBIGUOUS);
    ck_assert_uint_eq(st_owners_find(o, NULL), 0);
    ck_assert_uint_eq(st_owners_find(o, ""), 0);
    /* the oldest are forgotten as new ones come */
    char id[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(id, sizeof(id), "n%d", i);
        st_owners_add(o, id, 3);
    }
    ck_assert_uint_eq(st_owners_find(o, "r1"), 0);
    ck_assert_uint_eq(st_owners_find(o, "n19999"), 3);
    ck_assert_uint_eq(st_owners_find(o, "n0"), 0);
    st_owners_free(o);
}
END_TEST

START_TEST(test_server_cors_origins)
{
    struct st_cors c;
    struct st_err err = { 0 };
    bool vary;
    ck_assert_int_eq(st_cors_init(&c, "*", &err), ST_OK);
    ck_assert_int_eq(c.mode, ST_CORS_ANY);
    ck_assert_str_eq(st_cors_allow(&c, "http://a.example", &vary), "*");
    ck_assert(!vary);
    ck_assert_ptr_null(st_cors_allow(&c, NULL, &vary));   /* no Origin: not CORS */
    ck_assert_ptr_null(st_cors_allow(&c, "", &vary));
    st_cors_fini(&c);
    for (const char *const *off = (const char *const[]){ "none", "NONE", "", NULL }; *off; off++) {
        ck_assert_int_eq(st_cors_init(&c, *off, &err), ST_OK);
        ck_assert_int_eq(c.mode, ST_CORS_OFF);
        ck_assert_ptr_null(st_cors_allow(&c, "http://a.example", &vary));
        ck_assert(!vary);
        st_cors_fini(&c);
    }
    ck_assert_int_eq(st_cors_init(&c, NULL, &err), ST_OK);
    ck_assert_int_eq(c.mode, ST_CORS_OFF);
    ck_assert_int_eq(st_cors_init(&c, " https://a.example , http://B.example:8080", &err), ST_OK);
    ck_assert_int_eq(c.mode, ST_CORS_LIST);
    ck_assert_str_eq(c.list, "https://a.example,http://B.example:8080");
    const char *o = "http://b.example:8080";
    ck_assert_ptr_eq(st_cors_allow(&c, o, &vary), o);     /* echoed; case-insensitive */
    ck_assert(vary);
    ck_assert_str_eq(st_cors_allow(&c, "https://a.example", &vary), "https://a.example");
    ck_assert_ptr_null(st_cors_allow(&c, "https://a.example.evil", &vary));
    ck_assert(vary);                                      /* Vary even when refused */
    ck_assert_ptr_null(st_cors_allow(&c, "https://a.exampl", &vary));
    ck_assert_ptr_null(st_cors_allow(&c, "http://b.example", &vary));
    ck_assert_ptr_null(st_cors_allow(&c, "null", &vary));
    st_cors_fini(&c);
    static const char *const bad[] = { "a,,b", "*,https://x", "https://x, *", "https://a b",
                                       ",", "https://a\r\n", " " };
    for (size_t i = 0; i < ST_ARRAY_LEN(bad); i++) {
        ck_assert_msg(st_cors_init(&c, bad[i], &err) == ST_ERR_BAD_CONFIG, "accepted '%s'",
                      bad[i]);
        ck_assert_ptr_null(c.list);
    }
    ck_assert(st_cors_request_headers_ok("authorization, content-type, x-request-id"));
    ck_assert(!st_cors_request_headers_ok(NULL));
    ck_assert(!st_cors_request_headers_ok(""));
    ck_assert(!st_cors_request_headers_ok("a\r\nSet-Cookie: x"));
    char big[600];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ck_assert(!st_cors_request_headers_ok(big));
    /* OPTIONS is no route's method: the access handler answers it (known path) */
    bool known;
    char allow[64];
    ck_assert_ptr_null(st_route_find("/v1/chat/completions", "OPTIONS", &known, allow,
                                     sizeof(allow)));
    ck_assert(known);
    ck_assert_str_eq(allow, "POST");
    ck_assert_ptr_null(st_route_find("/nope", "OPTIONS", &known, allow, sizeof(allow)));
    ck_assert(!known);
}
END_TEST

START_TEST(test_server_sse_keepalive_due)
{
    struct st_server srv;
    struct st_call c;
    memset(&srv, 0, sizeof(srv));
    memset(&c, 0, sizeof(c));
    srv.cfg.sse_keepalive_s = 2;
    c.srv = &srv;
    c.suspended = true;
    struct st_gen *g = st_gen_new(1);
    ck_assert_ptr_nonnull(g);
    g->stream = true;
    c.gen = g;
    int64_t t0 = g->last_out_ns;
    ck_assert(!st_keepalive_due_locked(&c, t0 + 1999 * ST_NS_PER_MS));
    ck_assert(st_keepalive_due_locked(&c, t0 + 2 * ST_NS_PER_SEC));
    ck_assert_uint_eq(g->out.len, strlen(": keep-alive\n\n"));
    ck_assert(memcmp(g->out.data, ": keep-alive\n\n", g->out.len) == 0);
    ck_assert(st_gen_ready_locked(&c));                   /* the MHD side has work */
    /* not yet handed over: no second comment piles up */
    ck_assert(!st_keepalive_due_locked(&c, t0 + 10 * ST_NS_PER_SEC));
    g->out_off = g->out.len;                              /* handed to MHD */
    ck_assert(!st_keepalive_due_locked(&c, t0 + 3 * ST_NS_PER_SEC));
    ck_assert(st_keepalive_due_locked(&c, t0 + 4 * ST_NS_PER_SEC));
    g->out_off = g->out.len;
    int64_t t1 = t0 + 100 * ST_NS_PER_SEC;
    c.suspended = false;                                  /* MHD is busy with it */
    ck_assert(!st_keepalive_due_locked(&c, t1));
    c.suspended = true;
    g->stream = false;                                    /* nothing to send a non-stream */
    ck_assert(!st_keepalive_due_locked(&c, t1));
    g->stream = true;
    srv.cfg.sse_keepalive_s = 0;                          /* off */
    ck_assert(!st_keepalive_due_locked(&c, t1));
    srv.cfg.sse_keepalive_s = 2;
    g->n_ended = 1;                                       /* ended: [DONE] follows */
    ck_assert(!st_keepalive_due_locked(&c, t1));
    g->n_ended = 0;
    c.conn_done = true;
    ck_assert(!st_keepalive_due_locked(&c, t1));
    c.conn_done = false;
    ck_assert(st_keepalive_due_locked(&c, t1));
    st_gen_free(g);
}
END_TEST

START_TEST(test_server_parse_cache_prompt)
{
    struct st_oai_request r;
    struct st_api_error e;
    static const char msgs[] = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    char body[160];
    snprintf(body, sizeof(body), "{%s}", msgs);
    ck_assert_int_eq(parse(ST_OAI_CHAT, body, &r, &e), ST_OK);
    ck_assert(r.cache_prompt);                            /* default true */
    st_oai_request_fini(&r);
    snprintf(body, sizeof(body), "{%s,\"cache_prompt\":false}", msgs);
    ck_assert_int_eq(parse(ST_OAI_CHAT, body, &r, &e), ST_OK);
    ck_assert(!r.cache_prompt);
    st_oai_request_fini(&r);
    snprintf(body, sizeof(body), "{%s,\"cache_prompt\":null}", msgs);
    ck_assert_int_eq(parse(ST_OAI_CHAT, body, &r, &e), ST_OK);
    ck_assert(r.cache_prompt);
    st_oai_request_fini(&r);
    ck_assert_int_eq(parse(ST_OAI_COMPLETION, "{\"prompt\":\"x\",\"cache_prompt\":false}", &r, &e),
                     ST_OK);
    ck_assert(!r.cache_prompt);
    st_oai_request_fini(&r);
    snprintf(body, sizeof(body), "{%s,\"cache_prompt\":0}", msgs);
    expect_bad(ST_OAI_CHAT, body, "cache_prompt");
}
END_TEST

static Suite *server_suite(void)
{
    Suite *s = suite_create("server");
    TCase *req = tcase_create("request");
    tcase_add_test(req, test_server_parse_chat_every_field);
    tcase_add_test(req, test_server_parse_defaults_and_nulls);
    tcase_add_test(req, test_server_parse_priority_values);
    tcase_add_test(req, test_server_parse_prompt_forms);
    tcase_add_test(req, test_server_parse_type_errors);
    tcase_add_test(req, test_server_parse_penalties);
    tcase_add_test(req, test_server_parse_text_requests);
    suite_add_tcase(s, req);
    TCase *out = tcase_create("response");
    tcase_add_test(out, test_server_json_str_sanitises_utf8);
    tcase_add_test(out, test_server_sse_framing);
    tcase_add_test(out, test_server_chunks_chat);
    tcase_add_test(out, test_server_chunks_usage_and_completions);
    tcase_add_test(out, test_server_logprobs_shapes);
    suite_add_tcase(s, out);
    TCase *err = tcase_create("errors");
    tcase_add_test(err, test_server_errors_map_every_status);
    tcase_add_test(err, test_server_errors_body_shape);
    tcase_add_test(err, test_server_auth_bearer);
    tcase_add_test(err, test_server_request_ids);
    tcase_add_test(err, test_server_routes);
    tcase_add_test(err, test_server_cors_origins);
    tcase_add_test(err, test_server_cors_localhost);
    tcase_add_test(err, test_server_owners);
    tcase_add_test(err, test_server_guard_hosts_and_content_type);
    tcase_add_test(err, test_server_sse_keepalive_due);
    tcase_add_test(err, test_server_parse_cache_prompt);
    suite_add_tcase(s, err);
    TCase *met = tcase_create("metrics");
    tcase_add_test(met, test_server_metrics_render);
    tcase_add_test(met, test_server_metrics_models);
    tcase_add_test(met, test_server_metrics_models_take);
    tcase_add_test(met, test_server_retry_seconds);
    suite_add_tcase(s, met);
    return s;
}

int main(void)
{
    return support_run_suite(server_suite(), CK_FORK);
}
