/* test_server_responses.c -- POST /v1/responses in the server's pure parts,
 * no network: the body's translation onto a chat request (input items,
 * instructions, tools, tool_choice, text.format, max_output_tokens,
 * reasoning.effort), the 400s naming the Responses field, the echoed
 * request fields, the non-stream response object, and the stream's events
 * driven through gen_reply.c one byte per token as the engine would. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_api_fixture.h"
#include "support.h"

/* ---- the request --------------------------------------------------------- */

static cJSON *translate(const char *body)
{
    return api_translate(st_resp_translate_tree, body);
}

START_TEST(test_server_responses_input_items)
{
    cJSON *c = translate("{\"model\":\"m\",\"input\":\"hello\",\"instructions\":\"be brief\","
                         "\"top_k\":5,\"n\":3,\"top_logprobs\":2,\"metadata\":{\"a\":\"b\"}}");
    const cJSON *msgs = cJSON_GetObjectItem(c, "messages");
    ck_assert_int_eq(cJSON_GetArraySize(msgs), 2);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 0), "role"), "system");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 0), "content"), "be brief");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 1), "role"), "user");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 1), "content"), "hello");
    ck_assert_str_eq(str_at(c, "model"), "m");
    ck_assert_int_eq(cJSON_GetObjectItem(c, "top_k")->valueint, 5);   /* chat extras pass */
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "n"));                  /* not Responses' */
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "top_logprobs"));
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "input"));
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "metadata"));
    cJSON_Delete(c);

    /* a tool round trip: the assistant's text and its calls become one
     * message; outputs become tool messages; a reasoning item's text is the
     * reasoning_content of the assistant turn it opens (a summary is not) */
    c = translate("{\"input\":["
                  "{\"role\":\"developer\",\"content\":\"dev\"},"
                  "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
                  "\"text\":\"weather \"},{\"type\":\"input_text\",\"text\":\"in Paris?\"}]},"
                  "{\"type\":\"reasoning\",\"id\":\"rs_0\",\"summary\":[{\"type\":"
                  "\"summary_text\",\"text\":\"a summary\"}]},"
                  "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"content\":[{\"type\":"
                  "\"reasoning_text\",\"text\":\"need \"},{\"type\":\"reasoning_text\",\"text\":"
                  "\"the weather\"}]},"
                  "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
                  "\"output_text\",\"text\":\"Checking.\",\"annotations\":[]}]},"
                  "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"get_weather\","
                  "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"},"
                  "{\"type\":\"function_call\",\"call_id\":\"c2\",\"name\":\"get_time\","
                  "\"arguments\":\"{}\"},"
                  "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"sunny\"},"
                  "{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":[{\"type\":"
                  "\"input_text\",\"text\":\"noon\"}]},"
                  "{\"type\":\"reasoning\",\"content\":[{\"type\":\"reasoning_text\",\"text\":"
                  "\"again\"}]},"
                  "{\"type\":\"function_call\",\"call_id\":\"c3\",\"name\":\"get_time\","
                  "\"arguments\":\"{}\"}]}");
    msgs = cJSON_GetObjectItem(c, "messages");
    ck_assert_int_eq(cJSON_GetArraySize(msgs), 6);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 0), "role"), "developer");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 1), "content"), "weather in Paris?");
    const cJSON *a = cJSON_GetArrayItem(msgs, 2);
    ck_assert_str_eq(str_at(a, "role"), "assistant");
    ck_assert_str_eq(str_at(a, "content"), "Checking.");
    ck_assert_str_eq(str_at(a, "reasoning_content"), "need the weather");
    const cJSON *calls = cJSON_GetObjectItem(a, "tool_calls");
    ck_assert_int_eq(cJSON_GetArraySize(calls), 2);
    const cJSON *c0 = cJSON_GetArrayItem(calls, 0);
    ck_assert_str_eq(str_at(c0, "id"), "c1");
    ck_assert_str_eq(str_at(c0, "type"), "function");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(c0, "function"), "name"), "get_weather");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(c0, "function"), "arguments"),
                     "{\"city\":\"Paris\"}");
    const cJSON *t = cJSON_GetArrayItem(msgs, 3);
    ck_assert_str_eq(str_at(t, "role"), "tool");
    ck_assert_str_eq(str_at(t, "tool_call_id"), "c1");
    ck_assert_str_eq(str_at(t, "content"), "sunny");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 4), "content"), "noon");
    /* a call after a tool message: a new assistant message of its own */
    a = cJSON_GetArrayItem(msgs, 5);
    ck_assert_str_eq(str_at(a, "role"), "assistant");
    ck_assert_str_eq(str_at(a, "content"), "");
    ck_assert_str_eq(str_at(a, "reasoning_content"), "again");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(a, "tool_calls")), 1);
    cJSON_Delete(c);

    /* a reasoning item last opens no turn: nothing of it is rendered */
    c = translate("{\"input\":[{\"role\":\"user\",\"content\":\"hi\"},{\"type\":\"reasoning\","
                  "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"r\"}]}]}");
    msgs = cJSON_GetObjectItem(c, "messages");
    ck_assert_int_eq(cJSON_GetArraySize(msgs), 1);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 0), "role"), "user");
    cJSON_Delete(c);
}
END_TEST

START_TEST(test_server_responses_tools_and_format)
{
    cJSON *c = translate(
        "{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"description\":\"d\","
        "\"parameters\":{\"type\":\"object\"},\"strict\":true}],"
        "\"tool_choice\":{\"type\":\"function\",\"name\":\"f\"},\"max_output_tokens\":7,"
        "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"p\",\"strict\":true,"
        "\"schema\":{\"type\":\"integer\"}}},\"reasoning\":{\"effort\":\"none\"}}");
    const cJSON *fn = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "tools"), 0),
                                          "function");
    ck_assert_str_eq(str_at(fn, "name"), "f");
    ck_assert_str_eq(str_at(fn, "description"), "d");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(fn, "strict")));
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(fn, "parameters"), "type"), "object");
    const cJSON *tc = cJSON_GetObjectItem(c, "tool_choice");
    ck_assert_str_eq(str_at(tc, "type"), "function");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(tc, "function"), "name"), "f");
    ck_assert_int_eq(cJSON_GetObjectItem(c, "max_tokens")->valueint, 7);
    const cJSON *rf = cJSON_GetObjectItem(c, "response_format");
    ck_assert_str_eq(str_at(rf, "type"), "json_schema");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(rf, "json_schema"), "name"), "p");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(cJSON_GetObjectItem(rf, "json_schema"), "schema"),
                            "type"), "integer");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "chat_template_kwargs"),
                                                "enable_thinking")));
    cJSON_Delete(c);

    /* the client's enable_thinking wins over effort "none"; json_object; "text" type */
    c = translate("{\"input\":\"x\",\"reasoning\":{\"effort\":\"none\"},\"chat_template_kwargs\":"
                  "{\"enable_thinking\":true},\"text\":{\"format\":{\"type\":\"json_object\"}},"
                  "\"tool_choice\":\"required\"}");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "chat_template_kwargs"),
                                               "enable_thinking")));
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(c, "response_format"), "type"), "json_object");
    ck_assert_str_eq(str_at(c, "tool_choice"), "required");
    cJSON_Delete(c);
    c = translate("{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"text\"}},"
                  "\"reasoning\":{\"effort\":\"high\"}}");
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "response_format"));
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "chat_template_kwargs"));
    cJSON_Delete(c);
}
END_TEST

/* st_resp_parse end to end: the chat request and the echoed fields. */
START_TEST(test_server_responses_parse_and_echo)
{
    static const char body[] =
        "{\"model\":\"m\",\"input\":\"hi\",\"instructions\":\"sys\",\"stream\":true,"
        "\"max_output_tokens\":12,\"temperature\":0.5,\"priority\":3,\"user\":\"u\","
        "\"parallel_tool_calls\":false,\"store\":true,\"metadata\":{\"k\":\"v\"},"
        "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":null,\"strict\":null}],"
        "\"tool_choice\":{\"type\":\"function\",\"name\":\"f\"},"
        "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"p\",\"schema\":{\"type\":"
        "\"boolean\"}}},\"reasoning\":{\"effort\":\"low\",\"summary\":\"auto\"}}";
    struct st_oai_request oq;
    struct st_api_error e;
    char *echo = NULL;
    ck_assert_int_eq(st_resp_parse(body, strlen(body), &oq, &echo, &e), ST_OK);
    ck_assert_int_eq(oq.kind, ST_OAI_CHAT);
    ck_assert_int_eq(oq.n, 1);
    ck_assert_str_eq(oq.model, "m");
    ck_assert(oq.stream);
    ck_assert_int_eq(oq.params.max_tokens, 12);
    ck_assert_float_eq_tol(oq.params.temperature, 0.5f, 1e-6f);
    ck_assert(oq.has_priority);
    ck_assert_int_eq(oq.priority, 3);
    ck_assert(oq.single_tool_call);
    ck_assert_int_eq(oq.tool_choice, ST_OAI_TOOLS_FUNCTION);
    ck_assert_str_eq(oq.tool_choice_name, "f");
    ck_assert_ptr_nonnull(oq.chat.tools);
    ck_assert_ptr_nonnull(oq.params.json_schema);
    ck_assert_ptr_nonnull(strstr(json_text(oq.chat.messages), "\"sys\""));
    char wrapped[4096];
    snprintf(wrapped, sizeof(wrapped), "{%s}", echo);
    cJSON *o = cJSON_Parse(wrapped);
    ck_assert_msg(o != NULL, "echo: %s", echo);
    ck_assert_str_eq(str_at(o, "instructions"), "sys");
    ck_assert_int_eq(cJSON_GetObjectItem(o, "max_output_tokens")->valueint, 12);
    ck_assert_double_eq(cJSON_GetObjectItem(o, "temperature")->valuedouble, 0.5);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "parallel_tool_calls")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "store")));   /* nothing is kept */
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(o, "metadata"), "k"), "v");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(o, "tool_choice"), "name"), "f");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "tools"), 0), "name"), "f");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "text"), "format"),
                            "type"), "json_schema");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(o, "reasoning"), "effort"), "low");
    ck_assert_str_eq(str_at(o, "user"), "u");
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(o, "top_p")));
    cJSON_Delete(o);
    free(echo);
    st_oai_request_fini(&oq);

    /* defaults: text format "text", tool_choice "auto", tools [], instructions null */
    ck_assert_int_eq(st_resp_parse("{\"input\":\"hi\"}", 14, &oq, &echo, &e), ST_OK);
    snprintf(wrapped, sizeof(wrapped), "{%s}", echo);
    o = cJSON_Parse(wrapped);
    ck_assert_ptr_nonnull(o);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "instructions")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "max_output_tokens")));
    ck_assert_str_eq(str_at(o, "tool_choice"), "auto");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "tools")), 0);
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "text"), "format"),
                            "type"), "text");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "parallel_tool_calls")));
    ck_assert_ptr_null(cJSON_GetObjectItem(o, "user"));
    cJSON_Delete(o);
    free(echo);
    st_oai_request_fini(&oq);
}
END_TEST

/* llama-server's `grammar` (GBNF) is carried onto the chat request, with
 * chat's 400s in Responses terms: not with a JSON text.format, nor with
 * tool_choice "required" or a named function. */
START_TEST(test_server_responses_grammar)
{
    static const char body[] = "{\"input\":\"x\",\"grammar\":\"root ::= [0-9]+\","
                               "\"text\":{\"format\":{\"type\":\"text\"}},\"tool_choice\":\"auto\","
                               "\"tools\":[{\"type\":\"function\",\"name\":\"f\"}]}";
    struct st_oai_request oq;
    struct st_api_error e;
    char *echo = NULL;
    ck_assert_int_eq(st_resp_parse(body, strlen(body), &oq, &echo, &e), ST_OK);
    ck_assert_ptr_nonnull(oq.params.grammar);
    ck_assert_ptr_null(strstr(echo, "grammar"));   /* not a Responses field: not echoed */
    free(echo);
    st_oai_request_fini(&oq);
    static const char *const bad[][2] = {
        { "\"grammar\":\"root ::= [0-9\"", "line 1, column 10" },
        { "\"grammar\":\"root ::= x\\nx ::= \\\"a\\\" x\"", "rule 'x' cannot produce" },
        { "\"grammar\":[1]", "expected a string" },
        { "\"grammar\":\"root ::= \\\"a\\\"\",\"text\":{\"format\":{\"type\":\"json_object\"}}",
          "a JSON 'text.format'" },
        { "\"grammar\":\"root ::= \\\"a\\\"\",\"text\":{\"format\":{\"type\":\"json_schema\","
          "\"name\":\"p\",\"schema\":{\"type\":\"integer\"}}}", "a JSON 'text.format'" },
        { "\"grammar\":\"root ::= \\\"a\\\"\",\"tool_choice\":\"required\",\"tools\":[{\"type\":"
          "\"function\",\"name\":\"f\"}]", "\"required\"" },
        { "\"grammar\":\"root ::= \\\"a\\\"\",\"tool_choice\":{\"type\":\"function\",\"name\":"
          "\"f\"},\"tools\":[{\"type\":\"function\",\"name\":\"f\"}]", "a named function" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char b[512];
        snprintf(b, sizeof(b), "{\"input\":\"x\",%s}", bad[i][0]);
        memset(&e, 0, sizeof(e));
        echo = NULL;
        ck_assert_msg(st_resp_parse(b, strlen(b), &oq, &echo, &e) != ST_OK, "accepted: %s", b);
        ck_assert_ptr_null(echo);
        ck_assert_int_eq(st_api_error_http(&e), 400);
        ck_assert_str_eq(e.param, "grammar");
        ck_assert_msg(strstr(e.message, bad[i][1]) != NULL, "%s: %s", b, e.message);
        ck_assert_ptr_null(strstr(e.message, "response_format"));
        st_oai_request_fini(&oq);
    }
}
END_TEST

START_TEST(test_server_responses_bad_requests)
{
    static const char *const cases[][2] = {
        { "{\"input\":\"x\",\"previous_response_id\":5}", "previous_response_id" },
        { "{\"input\":\"x\",\"store\":\"yes\"}", "store" },
        { "{\"input\":\"x\",\"conversation\":\"conv_1\"}", "conversation" },
        { "{\"input\":\"x\",\"background\":true}", "background" },
        { "{\"input\":\"x\",\"prompt\":{\"id\":\"p\"}}", "prompt" },
        { "{\"model\":\"m\"}", "input" },
        { "{\"input\":5}", "input" },
        { "{\"input\":[]}", "input" },
        { "{\"input\":[{\"type\":\"reasoning\",\"summary\":[]}]}", "input" },
        { "{\"input\":[{\"type\":\"reasoning\",\"content\":[{\"type\":\"reasoning_text\","
          "\"text\":\"x\"}]}]}", "input" },
        { "{\"input\":[{\"type\":\"reasoning\",\"content\":[{\"type\":\"reasoning_text\"}]},"
          "{\"role\":\"user\",\"content\":\"x\"}]}", "input" },
        { "{\"input\":[{\"role\":\"robot\",\"content\":\"x\"}]}", "input" },
        { "{\"input\":[{\"role\":\"user\",\"content\":5}]}", "input" },
        { "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\"}]}]}", "input" },
        { "{\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_1\"}]}", "input" },
        { "{\"input\":[{\"type\":\"web_search_call\"}]}", "input" },
        { "{\"input\":[{\"type\":\"function_call\",\"name\":\"f\",\"arguments\":\"{}\"}]}",
          "input" },
        { "{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\"}]}", "input" },
        { "{\"input\":[7]}", "input" },
        { "{\"input\":\"x\",\"instructions\":3}", "instructions" },
        { "{\"input\":\"x\",\"tools\":{}}", "tools" },
        { "{\"input\":\"x\",\"tools\":[{\"type\":\"web_search\"}]}", "tools" },
        { "{\"input\":\"x\",\"tools\":[{\"type\":\"function\"}]}", "tools" },
        { "{\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":3}]}",
          "tools" },
        { "{\"input\":\"x\",\"tool_choice\":{\"type\":\"web_search_preview\"}}", "tool_choice" },
        { "{\"input\":\"x\",\"tool_choice\":\"sometimes\"}", "tool_choice" },
        { "{\"input\":\"x\",\"text\":5}", "text" },
        { "{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"xml\"}}}", "text.format" },
        { "{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\",\"schema\":{}}}}",
          "text.format" },
        { "{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"p\","
          "\"schema\":5}}}", "text.format" },
        { "{\"input\":\"x\",\"max_output_tokens\":-1}", "max_output_tokens" },
        { "{\"input\":\"x\",\"max_output_tokens\":\"many\"}", "max_output_tokens" },
        { "{\"input\":\"x\",\"temperature\":-1}", "temperature" },
        { "{\"input\":\"x\",\"top_p\":0}", "top_p" },
        { "{\"input\":\"x\",\"stream\":\"yes\"}", "stream" },
        { "{\"input\":\"x\",\"parallel_tool_calls\":1}", "parallel_tool_calls" },
        { "{\"input\":\"x\",\"reasoning\":{\"effort\":\"max\"}}", "reasoning.effort" },
        { "{\"input\":\"x\",\"reasoning\":true}", "reasoning" },
        { "{\"input\":\"x\",\"metadata\":[1]}", "metadata" },
        { "{\"input\":\"x\",\"model\":5}", "model" },
        { "{\"input\":", "" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct st_oai_request oq;
        struct st_api_error e;
        char *echo = (char *)"sentinel";
        memset(&e, 0, sizeof(e));
        enum st_status rc = st_resp_parse(cases[i][0], strlen(cases[i][0]), &oq, &echo, &e);
        ck_assert_msg(rc != ST_OK, "accepted: %s", cases[i][0]);
        ck_assert_ptr_null(echo);
        ck_assert_int_eq(st_api_error_http(&e), 400);
        ck_assert_msg(strcmp(e.param, cases[i][1]) == 0, "%s: param '%s', want '%s' (%s)",
                      cases[i][0], e.param, cases[i][1], e.message);
        ck_assert(e.message[0]);
        ck_assert_ptr_null(strstr(e.message, "response_format"));
        ck_assert_ptr_null(strstr(e.message, "max_tokens"));
        st_oai_request_fini(&oq);
    }
}
END_TEST

/* A chat-only field repeated (JSON allows it; the fuzzer found this): the
 * translation drops every copy, so the second "n" or "max_tokens" is not
 * brought to light once the first is removed. */
START_TEST(test_server_responses_repeated_dropped_key)
{
    static const char body[] =
        "{\"input\":\"x\",\"n\":40,\"max_tokens\":7,\"n\":5,\"max_tokens\":9,"
        "\"echo\":false,\"echo\":true}";
    struct st_oai_request oq;
    struct st_api_error e;
    char *echo = NULL;
    ck_assert_int_eq(st_resp_parse(body, strlen(body), &oq, &echo, &e), ST_OK);
    ck_assert_int_eq(oq.n, 1);
    ck_assert(!oq.echo);
    ck_assert_int_ne(oq.params.max_tokens, 9);
    ck_assert_int_ne(oq.params.max_tokens, 7);
    free(echo);
    st_oai_request_fini(&oq);
}
END_TEST

/* ---- the answers ---------------------------------------------------------- */

static struct st_gen *resp_gen(bool stream)
{
    return api_gen(stream, st_resp_new(strdup("\"tools\":[],\"tool_choice\":\"auto\"")),
                   "resp_req-1");
}

START_TEST(test_server_responses_body)
{
    static const char calls[] =
        "[{\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        "\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\"}}]";
    struct st_gen *g = resp_gen(false);
    struct st_oai_choice c = { .text = "Checking.", .text_len = 9, .finish = ST_FINISH_STOP,
                               .parsed = true, .reasoning = "plan", .reasoning_len = 4,
                               .tool_calls = calls, .tool_calls_len = strlen(calls) };
    struct st_oai_usage u = { 10, 20, 4, 0 };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_resp_body(&b, g, &c, &u, 3), ST_OK);
    cJSON *o = cJSON_Parse(b.data);
    ck_assert_msg(o != NULL, "%s", b.data);
    ck_assert_str_eq(str_at(o, "id"), "resp_req-1");
    ck_assert_str_eq(str_at(o, "object"), "response");
    ck_assert_str_eq(str_at(o, "status"), "completed");
    ck_assert_str_eq(str_at(o, "model"), "m");
    ck_assert_int_eq(cJSON_GetObjectItem(o, "created_at")->valueint, 1700000000);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "error")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "incomplete_details")));
    ck_assert_str_eq(str_at(o, "tool_choice"), "auto");   /* the echo */
    const cJSON *out = cJSON_GetObjectItem(o, "output");
    ck_assert_int_eq(cJSON_GetArraySize(out), 3);
    const cJSON *rs = cJSON_GetArrayItem(out, 0), *msg = cJSON_GetArrayItem(out, 1),
                *fc = cJSON_GetArrayItem(out, 2);
    ck_assert_str_eq(str_at(rs, "type"), "reasoning");
    ck_assert(strncmp(str_at(rs, "id"), "rs_", 3) == 0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rs, "summary")), 0);
    const cJSON *rc0 = cJSON_GetArrayItem(cJSON_GetObjectItem(rs, "content"), 0);
    ck_assert_str_eq(str_at(rc0, "type"), "reasoning_text");
    ck_assert_str_eq(str_at(rc0, "text"), "plan");
    ck_assert_str_eq(str_at(msg, "type"), "message");
    ck_assert_str_eq(str_at(msg, "role"), "assistant");
    ck_assert_str_eq(str_at(msg, "status"), "completed");
    ck_assert(strncmp(str_at(msg, "id"), "msg_", 4) == 0);
    const cJSON *part = cJSON_GetArrayItem(cJSON_GetObjectItem(msg, "content"), 0);
    ck_assert_str_eq(str_at(part, "type"), "output_text");
    ck_assert_str_eq(str_at(part, "text"), "Checking.");
    ck_assert(cJSON_IsArray(cJSON_GetObjectItem(part, "annotations")));
    ck_assert_str_eq(str_at(fc, "type"), "function_call");
    ck_assert_str_eq(str_at(fc, "call_id"), "call_a");
    ck_assert_str_eq(str_at(fc, "name"), "get_weather");
    ck_assert_str_eq(str_at(fc, "arguments"), "{\"city\": \"Paris\"}");
    ck_assert(strncmp(str_at(fc, "id"), "fc_", 3) == 0);
    const cJSON *us = cJSON_GetObjectItem(o, "usage");
    ck_assert_int_eq(cJSON_GetObjectItem(us, "input_tokens")->valueint, 10);
    ck_assert_int_eq(cJSON_GetObjectItem(us, "output_tokens")->valueint, 20);
    ck_assert_int_eq(cJSON_GetObjectItem(us, "total_tokens")->valueint, 30);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(us, "input_tokens_details"),
                                         "cached_tokens")->valueint, 4);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(us, "output_tokens_details"),
                                         "reasoning_tokens")->valueint, 3);
    cJSON_Delete(o);

    /* cut at max_output_tokens, only calls (no message), raw text (one message) */
    struct st_oai_choice cut = { .text = "", .text_len = 0, .finish = ST_FINISH_LENGTH,
                                 .parsed = true, .tool_calls = calls,
                                 .tool_calls_len = strlen(calls) };
    st_buf_reset(&b);
    ck_assert_int_eq(st_resp_body(&b, g, &cut, &u, 0), ST_OK);
    o = cJSON_Parse(b.data);
    ck_assert_str_eq(str_at(o, "status"), "incomplete");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(o, "incomplete_details"), "reason"),
                     "max_output_tokens");
    out = cJSON_GetObjectItem(o, "output");
    ck_assert_int_eq(cJSON_GetArraySize(out), 1);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(out, 0), "type"), "function_call");
    cJSON_Delete(o);
    struct st_oai_choice raw = { .text = "a\xff", .text_len = 2, .finish = ST_FINISH_STOP };
    st_buf_reset(&b);
    ck_assert_int_eq(st_resp_body(&b, g, &raw, &u, 0), ST_OK);
    o = cJSON_Parse(b.data);
    out = cJSON_GetObjectItem(o, "output");
    ck_assert_int_eq(cJSON_GetArraySize(out), 1);
    part = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 0), "content"), 0);
    ck_assert_str_eq(str_at(part, "text"), "a\xef\xbf\xbd");   /* invalid UTF-8 repaired */
    cJSON_Delete(o);
    st_buf_fini(&b);
    st_gen_free(g);
}
END_TEST

/* ---- streams -------------------------------------------------------------- */

START_TEST(test_server_responses_stream)
{
    struct st_call c;
    struct st_gen *g = api_run_stream(resp_gen(true), api_reply, ST_FINISH_STOP, NULL, &c);
    struct events ev;
    api_split_events(g, true, &ev);
    ck_assert_int_ge(ev.n, 16);
    ck_assert_str_eq(str_at(ev.ev[0], "type"), "response.created");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(ev.ev[0], "response"), "status"), "in_progress");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(ev.ev[0],
                                                                                "response"),
                                                            "output")), 0);
    ck_assert_str_eq(str_at(ev.ev[1], "type"), "response.in_progress");
    /* reassemble as the SDK does: items by output_index, deltas appended */
    char texts[3][128] = { "", "", "" };
    const char *kinds[3] = { NULL, NULL, NULL };
    int done_items = 0;
    for (int i = 2; i < ev.n - 1; i++) {
        const char *t = str_at(ev.ev[i], "type");
        const cJSON *oi = cJSON_GetObjectItem(ev.ev[i], "output_index");
        ck_assert_ptr_nonnull(oi);
        int k = oi->valueint;
        ck_assert(k >= 0 && k < 3);
        if (strcmp(t, "response.output_item.added") == 0) {
            kinds[k] = str_at(cJSON_GetObjectItem(ev.ev[i], "item"), "type");
            ck_assert_str_eq(str_at(cJSON_GetObjectItem(ev.ev[i], "item"), "status"),
                             "in_progress");
        } else if (strstr(t, ".delta")) {
            ck_assert_ptr_nonnull(kinds[k]);
            strncat(texts[k], str_at(ev.ev[i], "delta"), sizeof(texts[k]) - strlen(texts[k]) - 1);
        } else if (strcmp(t, "response.output_item.done") == 0) {
            done_items++;
        }
    }
    ck_assert_str_eq(kinds[0], "reasoning");
    ck_assert_str_eq(kinds[1], "message");
    ck_assert_str_eq(kinds[2], "function_call");
    ck_assert_str_eq(texts[0], "plan it");
    ck_assert_str_eq(texts[1], "Checking.");
    ck_assert_str_eq(texts[2], "{\"city\": \"Paris\"}");
    ck_assert_int_eq(done_items, 3);
    const cJSON *last = ev.ev[ev.n - 1];
    ck_assert_str_eq(str_at(last, "type"), "response.completed");
    const cJSON *r = cJSON_GetObjectItem(last, "response");
    ck_assert_str_eq(str_at(r, "status"), "completed");
    const cJSON *out = cJSON_GetObjectItem(r, "output");
    ck_assert_int_eq(cJSON_GetArraySize(out), 3);
    const cJSON *fc = cJSON_GetArrayItem(out, 2);
    ck_assert_str_eq(str_at(fc, "name"), "get_weather");
    ck_assert_str_eq(str_at(fc, "arguments"), "{\"city\": \"Paris\"}");
    ck_assert(strncmp(str_at(fc, "call_id"), "call_", 5) == 0);
    ck_assert_int_gt(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "usage"),
                                                             "output_tokens_details"),
                                         "reasoning_tokens")->valueint, 0);
    ck_assert_ptr_null(strstr(g->out.data, "[DONE]"));
    /* the .done events carry the whole text */
    bool saw_text_done = false;
    for (int i = 0; i < ev.n; i++) {
        if (strcmp(str_at(ev.ev[i], "type"), "response.output_text.done") == 0) {
            ck_assert_str_eq(str_at(ev.ev[i], "text"), "Checking.");
            saw_text_done = true;
        }
        if (strcmp(str_at(ev.ev[i], "type"), "response.function_call_arguments.done") == 0)
            ck_assert_str_eq(str_at(ev.ev[i], "name"), "get_weather");
    }
    ck_assert(saw_text_done);
    free_events(&ev);
    st_gen_free(g);
}
END_TEST

START_TEST(test_server_responses_stream_ends)
{
    /* cut: response.incomplete, the open item incomplete */
    struct st_call c;
    struct st_gen *g = api_run_stream(resp_gen(true), "Hello the", ST_FINISH_LENGTH, NULL, &c);
    struct events ev;
    api_split_events(g, true, &ev);
    const cJSON *last = ev.ev[ev.n - 1];
    ck_assert_str_eq(str_at(last, "type"), "response.incomplete");
    const cJSON *r = cJSON_GetObjectItem(last, "response");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(r, "incomplete_details"), "reason"),
                     "max_output_tokens");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "output"), 0), "status"),
                     "incomplete");
    free_events(&ev);
    st_gen_free(g);

    /* nothing written: still one (empty) message */
    g = api_run_stream(resp_gen(true), "", ST_FINISH_STOP, NULL, &c);
    api_split_events(g, true, &ev);
    r = cJSON_GetObjectItem(ev.ev[ev.n - 1], "response");
    const cJSON *out = cJSON_GetObjectItem(r, "output");
    ck_assert_int_eq(cJSON_GetArraySize(out), 1);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(out, 0), "type"), "message");
    free_events(&ev);
    st_gen_free(g);

    /* reasoning only (cut in its think block): the reasoning item, then an empty message,
     * as the non-stream body has */
    g = api_run_stream(resp_gen(true), "<think>\nhmm", ST_FINISH_LENGTH, NULL, &c);
    api_split_events(g, true, &ev);
    out = cJSON_GetObjectItem(cJSON_GetObjectItem(ev.ev[ev.n - 1], "response"), "output");
    ck_assert_int_eq(cJSON_GetArraySize(out), 2);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(out, 0), "type"), "reasoning");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(out, 1), "type"), "message");
    free_events(&ev);
    st_gen_free(g);

    /* a failure after the stream began: error, then response.failed */
    struct st_api_error err;
    st_api_error_set(&err, ST_ERR_INTERNAL, NULL, NULL, "engine fell over");
    g = api_run_stream(resp_gen(true), "Hi", ST_FINISH_ERROR, &err, &c);
    api_split_events(g, true, &ev);
    const cJSON *e1 = ev.ev[ev.n - 2];
    ck_assert_str_eq(str_at(e1, "type"), "error");
    ck_assert_str_eq(str_at(e1, "message"), "engine fell over");
    ck_assert_str_eq(str_at(e1, "code"), "server_error");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(e1, "param")));
    last = ev.ev[ev.n - 1];
    ck_assert_str_eq(str_at(last, "type"), "response.failed");
    r = cJSON_GetObjectItem(last, "response");
    ck_assert_str_eq(str_at(r, "status"), "failed");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(r, "error"), "message"), "engine fell over");
    free_events(&ev);
    st_gen_free(g);
}
END_TEST

/* No parser (nothing to split): gen.c hands the raw text as content deltas. */
START_TEST(test_server_responses_stream_raw)
{
    struct st_gen *g = resp_gen(true);
    struct st_oai_delta d = { ST_OAI_DELTA_CONTENT, "ab", 2, 0, NULL };
    st_resp_stream_delta(g, &g->choices[0], &d);
    d.text = "c";
    d.len = 1;
    st_resp_stream_delta(g, &g->choices[0], &d);
    ck_assert(g->choices[0].produced);
    g->choices[0].finish = ST_FINISH_STOP;
    st_resp_stream_end(g, &g->choices[0], NULL, NULL);
    struct events ev;
    api_split_events(g, true, &ev);
    const cJSON *r = cJSON_GetObjectItem(ev.ev[ev.n - 1], "response");
    const cJSON *part = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "output"), 0), "content"), 0);
    ck_assert_str_eq(str_at(part, "text"), "abc");
    free_events(&ev);
    st_gen_free(g);
}
END_TEST

/* The routes: both paths, POST only, a generation (refused while draining). */
START_TEST(test_server_responses_routes)
{
    char allow[64];
    bool known = false;
    for (int i = 0; i < 2; i++) {
        const char *path = i ? "/responses" : "/v1/responses";
        const struct st_route *r = st_route_find(path, "POST", &known, allow, sizeof(allow));
        ck_assert_ptr_nonnull(r);
        ck_assert(r->fn == st_h_responses);
        ck_assert(r->auth && r->body && r->work);
        ck_assert_ptr_null(st_route_find(path, "GET", &known, allow, sizeof(allow)));
        ck_assert(known);
        ck_assert_str_eq(allow, "POST");
    }
}
END_TEST

static Suite *server_responses_suite(void)
{
    Suite *s = suite_create("server_responses");
    TCase *t = tcase_create("responses");
    tcase_add_test(t, test_server_responses_input_items);
    tcase_add_test(t, test_server_responses_tools_and_format);
    tcase_add_test(t, test_server_responses_parse_and_echo);
    tcase_add_test(t, test_server_responses_bad_requests);
    tcase_add_test(t, test_server_responses_grammar);
    tcase_add_test(t, test_server_responses_repeated_dropped_key);
    tcase_add_test(t, test_server_responses_body);
    tcase_add_test(t, test_server_responses_stream);
    tcase_add_test(t, test_server_responses_stream_ends);
    tcase_add_test(t, test_server_responses_stream_raw);
    tcase_add_test(t, test_server_responses_routes);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(server_responses_suite(), CK_FORK);
}
