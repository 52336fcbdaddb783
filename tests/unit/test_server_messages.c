/* test_server_messages.c -- POST /v1/messages (Anthropic's Messages API) in
 * the server's pure parts, no network: the body's translation onto a chat
 * request (system, content blocks, tool_use / tool_result, tools,
 * tool_choice, stop_sequences, thinking), the 400s naming the Messages
 * field, Anthropic's error body, the non-stream message object, and the
 * stream's events driven through gen_reply.c one byte per token as the
 * engine would. */
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
    return api_translate(st_msg_translate_tree, body);
}

START_TEST(test_server_messages_translate_turns)
{
    cJSON *c = translate(
        "{\"model\":\"m\",\"max_tokens\":64,\"top_k\":5,\"metadata\":{\"user_id\":\"u\"},"
        "\"service_tier\":\"auto\",\"n\":3,"
        "\"system\":[{\"type\":\"text\",\"text\":\"be \"},{\"type\":\"text\",\"text\":\"brief\","
        "\"cache_control\":{\"type\":\"ephemeral\"}}],"
        "\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\","
        "\"signature\":\"s\"},{\"type\":\"redacted_thinking\",\"data\":\"x\"},"
        "{\"type\":\"text\",\"text\":\"Checking.\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\","
        "\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\","
        "\"content\":\"sunny\"},{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_2\","
        "\"is_error\":true,\"content\":[{\"type\":\"text\",\"text\":\"boom\"}]},"
        "{\"type\":\"text\",\"text\":\"thanks\"}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_3\"}]}]}");
    const cJSON *msgs = cJSON_GetObjectItem(c, "messages");
    ck_assert_int_eq(cJSON_GetArraySize(msgs), 7);
    const cJSON *m = cJSON_GetArrayItem(msgs, 0);
    ck_assert_str_eq(str_at(m, "role"), "system");
    ck_assert_str_eq(str_at(m, "content"), "be brief");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 1), "content"), "weather?");
    m = cJSON_GetArrayItem(msgs, 2);   /* thinking kept as reasoning; text + the call */
    ck_assert_str_eq(str_at(m, "role"), "assistant");
    ck_assert_str_eq(str_at(m, "content"), "Checking.");
    ck_assert_str_eq(str_at(m, "reasoning_content"), "t");   /* the redacted block dropped */
    const cJSON *call = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "tool_calls"), 0);
    ck_assert_str_eq(str_at(call, "id"), "toolu_1");
    ck_assert_str_eq(str_at(call, "type"), "function");
    const cJSON *fn = cJSON_GetObjectItem(call, "function");
    ck_assert_str_eq(str_at(fn, "name"), "get_weather");
    ck_assert_str_eq(str_at(fn, "arguments"), "{\"city\":\"Paris\"}");
    m = cJSON_GetArrayItem(msgs, 3);   /* tool results first, then the turn's text */
    ck_assert_str_eq(str_at(m, "role"), "tool");
    ck_assert_str_eq(str_at(m, "tool_call_id"), "toolu_1");
    ck_assert_str_eq(str_at(m, "content"), "sunny");
    m = cJSON_GetArrayItem(msgs, 4);
    ck_assert_str_eq(str_at(m, "tool_call_id"), "toolu_2");
    ck_assert_str_eq(str_at(m, "content"), "Error: boom");
    m = cJSON_GetArrayItem(msgs, 5);
    ck_assert_str_eq(str_at(m, "role"), "user");
    ck_assert_str_eq(str_at(m, "content"), "thanks");
    m = cJSON_GetArrayItem(msgs, 6);   /* results alone: no empty user message after */
    ck_assert_str_eq(str_at(m, "role"), "tool");
    ck_assert_str_eq(str_at(m, "content"), "");
    ck_assert_str_eq(str_at(c, "model"), "m");
    ck_assert_int_eq(cJSON_GetObjectItem(c, "max_tokens")->valueint, 64);
    ck_assert_int_eq(cJSON_GetObjectItem(c, "top_k")->valueint, 5);
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "metadata"));      /* ignored */
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "service_tier"));
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "n"));             /* not Anthropic's */
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "system"));
    cJSON_Delete(c);
}
END_TEST

/* A last assistant turn of text is continued (chat's continue_final_message,
 * which the chat parser takes); an empty one is dropped; one with a call is
 * history. */
START_TEST(test_server_messages_prefill)
{
    cJSON *c = translate("{\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":"
                         "\"name a color\"},{\"role\":\"assistant\",\"content\":[{\"type\":"
                         "\"text\",\"text\":\"The color is\"}]}]}");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "continue_final_message")));
    const cJSON *msgs = cJSON_GetObjectItem(c, "messages");
    ck_assert_int_eq(cJSON_GetArraySize(msgs), 2);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(msgs, 1), "content"), "The color is");
    cJSON_Delete(c);
    c = translate("{\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
                  "{\"role\":\"assistant\",\"content\":\"\"}]}");
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "continue_final_message"));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "messages")), 1);
    cJSON_Delete(c);
    c = translate("{\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
                  "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"a\","
                  "\"name\":\"f\",\"input\":{}}]}]}");
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "continue_final_message"));
    cJSON_Delete(c);

    struct st_oai_request oq;
    struct st_api_error e;
    static const char body[] = "{\"max_tokens\":8,\"messages\":[{\"role\":\"user\","
                               "\"content\":\"x\"},{\"role\":\"assistant\",\"content\":\"Yes\"}]}";
    ck_assert_int_eq(st_msg_parse(body, strlen(body), &oq, &e), ST_OK);
    ck_assert(oq.continue_final);
    ck_assert_int_eq(st_oai_chat_ending(&oq), ST_CHAT_END_CONTINUE);
    st_oai_request_fini(&oq);
}
END_TEST

START_TEST(test_server_messages_translate_tools)
{
    cJSON *c = translate(
        "{\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
        "\"tools\":[{\"name\":\"get_weather\",\"description\":\"w\",\"input_schema\":"
        "{\"type\":\"object\"}},{\"type\":\"custom\",\"name\":\"t2\",\"input_schema\":{}}],"
        "\"tool_choice\":{\"type\":\"tool\",\"name\":\"get_weather\","
        "\"disable_parallel_tool_use\":true},\"stop_sequences\":[\"END\"],"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}}");
    const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "tools"), 0);
    ck_assert_str_eq(str_at(t, "type"), "function");
    const cJSON *fn = cJSON_GetObjectItem(t, "function");
    ck_assert_str_eq(str_at(fn, "name"), "get_weather");
    ck_assert_str_eq(str_at(fn, "description"), "w");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(fn, "parameters"), "type"), "object");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "tools")), 2);
    const cJSON *tc = cJSON_GetObjectItem(c, "tool_choice");
    ck_assert_str_eq(str_at(tc, "type"), "function");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(tc, "function"), "name"), "get_weather");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "parallel_tool_calls")));
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "stop"), 0)->valuestring, "END");
    ck_assert_int_eq(cJSON_GetObjectItem(c, "thinking_budget")->valueint, 1024);
    cJSON_Delete(c);

    static const char *const choices[][2] = {
        { "{\"type\":\"auto\"}", "auto" },
        { "{\"type\":\"any\"}", "required" },
        { "{\"type\":\"none\"}", "none" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(choices); i++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"max_tokens\":8,\"messages\":[{\"role\":\"user\","
                 "\"content\":\"x\"}],\"tool_choice\":%s}", choices[i][0]);
        c = translate(body);
        ck_assert_str_eq(cJSON_GetObjectItem(c, "tool_choice")->valuestring, choices[i][1]);
        ck_assert_ptr_null(cJSON_GetObjectItem(c, "parallel_tool_calls"));
        cJSON_Delete(c);
    }
    c = translate("{\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"thinking\":{\"type\":\"disabled\"}}");
    const cJSON *kw = cJSON_GetObjectItem(c, "chat_template_kwargs");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(kw, "enable_thinking")));
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "thinking_budget"));
    cJSON_Delete(c);
}
END_TEST

/* st_msg_parse end to end: the chat request it means. */
START_TEST(test_server_messages_parse)
{
    static const char body[] =
        "{\"model\":\"m\",\"max_tokens\":50,\"stream\":true,\"temperature\":0.5,\"priority\":7,"
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop_sequences\":[\"a\",\"b\"],"
        "\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}],"
        "\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true},"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":99}}";
    struct st_oai_request oq;
    struct st_api_error e;
    ck_assert_int_eq(st_msg_parse(body, strlen(body), &oq, &e), ST_OK);
    ck_assert_int_eq(oq.kind, ST_OAI_CHAT);
    ck_assert_int_eq(oq.n, 1);
    ck_assert_str_eq(oq.model, "m");
    ck_assert(oq.stream);
    ck_assert_int_eq(oq.params.max_tokens, 50);
    ck_assert(oq.params.temperature > 0.49f && oq.params.temperature < 0.51f);
    ck_assert_int_eq(oq.params.n_stop, 2);
    ck_assert_str_eq(oq.params.stop[1], "b");
    ck_assert_int_eq(oq.tool_choice, ST_OAI_TOOLS_REQUIRED);
    ck_assert(oq.single_tool_call);
    ck_assert(oq.has_thinking_budget);
    ck_assert_int_eq(oq.thinking_budget, 99);
    ck_assert(oq.has_priority);
    ck_assert_int_eq(oq.priority, 7);
    ck_assert_ptr_nonnull(strstr(oq.chat.tools, "\"f\""));
    st_oai_request_fini(&oq);

    /* count_tokens: no max_tokens needed; a message does need it */
    static const char count[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    ck_assert_int_eq(st_msg_parse_count(count, strlen(count), &oq, &e), ST_OK);
    ck_assert_ptr_nonnull(strstr(json_text(oq.chat.messages), "\"x\""));
    st_oai_request_fini(&oq);
    ck_assert_int_eq(st_msg_parse(count, strlen(count), &oq, &e), ST_ERR_INVALID);
    ck_assert_str_eq(e.param, "max_tokens");
    st_oai_request_fini(&oq);
}
END_TEST

/* llama-server's `grammar` (GBNF) is carried onto the chat request, with
 * chat's 400s in Messages terms: not with tool_choice any / tool. */
/* An empty messages list (Anthropic's API: 400) is answered as llama-server
 * answers it: here, one empty user turn. */
START_TEST(test_server_messages_empty_list)
{
    static const char body[] = "{\"max_tokens\":5,\"messages\":[]}";
    struct st_oai_request oq;
    struct st_api_error e;
    ck_assert_int_eq(st_msg_parse(body, strlen(body), &oq, &e), ST_OK);
    ck_assert_int_eq(cJSON_GetArraySize(oq.chat.messages), 1);
    const cJSON *m = cJSON_GetArrayItem(oq.chat.messages, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(m, "role")->valuestring, "user");
    ck_assert_str_eq(cJSON_GetObjectItem(m, "content")->valuestring, "");
    ck_assert(!oq.continue_final);
    st_oai_request_fini(&oq);
}
END_TEST

START_TEST(test_server_messages_grammar)
{
    static const char body[] =
        "{\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
        "\"grammar\":\"root ::= \\\"yes\\\" | \\\"no\\\"\",\"tools\":[{\"name\":\"f\","
        "\"input_schema\":{\"type\":\"object\"}}],\"tool_choice\":{\"type\":\"auto\"}}";
    struct st_oai_request oq;
    struct st_api_error e;
    ck_assert_int_eq(st_msg_parse(body, strlen(body), &oq, &e), ST_OK);
    ck_assert_ptr_nonnull(oq.params.grammar);
    ck_assert_int_eq(oq.tool_choice, ST_OAI_TOOLS_AUTO);
    st_oai_request_fini(&oq);
    static const char empty[] = "{\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":"
                                "\"x\"}],\"grammar\":\"\"}";
    ck_assert_int_eq(st_msg_parse(empty, strlen(empty), &oq, &e), ST_OK);
    ck_assert_ptr_null(oq.params.grammar);   /* "" is none, as on chat */
    st_oai_request_fini(&oq);
    static const char *const bad[][2] = {
        { "\"grammar\":\"root ::= \\\"a\",\"tool_choice\":{\"type\":\"auto\"}", "line 1, column 10" },
        { "\"grammar\":\"rot ::= \\\"a\\\"\"", "no 'root' rule" },
        { "\"grammar\":7", "expected a string" },
        { "\"grammar\":\"root ::= <[42]>\"", "token references" },
        { "\"grammar\":\"root ::= \\\"a\\\"\",\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],"
          "\"tool_choice\":{\"type\":\"any\"}", "tool_choice {\"type\": \"any\"} or" },
        { "\"grammar\":\"root ::= \\\"a\\\"\",\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],"
          "\"tool_choice\":{\"type\":\"tool\",\"name\":\"f\"}", "{\"type\": \"tool\"}" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(bad); i++) {
        char b[512];
        snprintf(b, sizeof(b), "{\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":"
                 "\"x\"}],%s}", bad[i][0]);
        memset(&e, 0, sizeof(e));
        ck_assert_msg(st_msg_parse(b, strlen(b), &oq, &e) == ST_ERR_INVALID, "%s accepted", b);
        ck_assert_int_eq(st_api_error_http(&e), 400);
        ck_assert_str_eq(e.param, "grammar");
        ck_assert_msg(strstr(e.message, bad[i][1]) != NULL, "%s: %s", b, e.message);
        ck_assert_ptr_null(strstr(e.message, "required"));
        st_oai_request_fini(&oq);
    }
}
END_TEST

/* Every refused body: the Messages field named (param and message), never
 * the chat field it would have become. */
START_TEST(test_server_messages_bad_requests)
{
    static const char *const cases[][3] = {
        /* body (messages added when it has none), param, text in the message */
        { "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens", "max_tokens" },
        { "{\"max_tokens\":0,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens",
          "max_tokens" },
        { "{\"max_tokens\":5}", "messages", "messages" },
        { "{\"max_tokens\":5,\"messages\":{}}", "messages", "an array" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}", "messages",
          "messages[0].role" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\","
          "\"source\":{}}]}]}", "messages", "text only" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":"
          "\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"a\",\"content\":"
          "[{\"type\":\"document\"}]}]}]}", "messages", "messages[1].content[0].content[0]" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":"
          "\"tool_use\",\"id\":\"a\",\"name\":\"f\",\"input\":\"x\"}]}]}", "messages",
          "tool_use" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":"
          "\"thinking\",\"thinking\":3}]}]}", "messages", "messages[0].content[0]: a thinking" },
        { "{\"max_tokens\":5,\"system\":7,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
          "system", "system" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{"
          "\"type\":\"web_search_20250305\",\"name\":\"web_search\"}]}", "tools",
          "web_search_20250305" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{"
          "\"name\":\"f\"}]}", "tools", "tools[0].input_schema" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":"
          "{\"type\":\"tool\"}}", "tool_choice", "tool_choice" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
          "\"stop_sequences\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop_sequences",
          "'stop_sequences'" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
          "\"stop_sequences\":\"a\"}", "stop_sequences", "stop_sequences" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"thinking\":"
          "{\"type\":\"enabled\"}}", "thinking.budget_tokens", "thinking.budget_tokens" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"thinking\":"
          "{\"type\":\"sometimes\"}}", "thinking", "thinking" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
          "\"temperature\":-1}", "temperature", "temperature" },
        { "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":"
          "\"assistant\",\"content\":\"Sure \"}]}", "messages", "trailing whitespace" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(cases); i++) {
        struct st_oai_request oq;
        struct st_api_error e;
        memset(&e, 0, sizeof(e));
        enum st_status rc = st_msg_parse(cases[i][0], strlen(cases[i][0]), &oq, &e);
        ck_assert_msg(rc != ST_OK, "%s accepted", cases[i][0]);
        ck_assert_int_eq(st_api_error_http(&e), 400);
        ck_assert_msg(strcmp(e.param, cases[i][1]) == 0, "%s: param %s", cases[i][0], e.param);
        ck_assert_msg(strstr(e.message, cases[i][2]) != NULL, "%s: %s", cases[i][0], e.message);
        ck_assert_msg(!strstr(e.message, "'stop'") && !strstr(e.message, "thinking_budget") &&
                          !strstr(e.message, "function.parameters"),
                      "%s: a chat field leaked: %s", cases[i][0], e.message);
        st_oai_request_fini(&oq);
    }
}
END_TEST

/* Anthropic's error body: {"type":"error","error":{"type":..,"message":..}}. */
START_TEST(test_server_messages_error_shape)
{
    static const struct { enum st_status s; int http; const char *type; } cases[] = {
        { ST_ERR_INVALID, 0, "invalid_request_error" },
        { ST_ERR_TOO_LONG, 0, "invalid_request_error" },
        { ST_ERR_AUTH, 0, "authentication_error" },
        { ST_ERR_NOT_FOUND, 0, "not_found_error" },
        { ST_ERR_QUEUE_FULL, 0, "rate_limit_error" },
        { ST_ERR_LOADING, 0, "overloaded_error" },
        { ST_ERR_SHUTDOWN, 0, "overloaded_error" },
        { ST_ERR_INTERNAL, 0, "api_error" },
        { ST_ERR_NOMEM, 0, "api_error" },
        { ST_ERR_INVALID, 413, "request_too_large" },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(cases); i++) {
        struct st_api_error e;
        st_api_error_set(&e, cases[i].s, "max_tokens", "some_code", "bad \"thing\"");
        e.http = cases[i].http;
        struct st_buf b;
        st_buf_init(&b);
        ck_assert_int_eq(st_anthropic_error_json(&b, &e), ST_OK);
        cJSON *j = cJSON_ParseWithLength(b.data, b.len);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(cJSON_GetArraySize(j), 2);
        ck_assert_str_eq(str_at(j, "type"), "error");
        const cJSON *err = cJSON_GetObjectItem(j, "error");
        ck_assert_int_eq(cJSON_GetArraySize(err), 2);
        ck_assert_str_eq(str_at(err, "type"), cases[i].type);
        ck_assert_str_eq(str_at(err, "message"), "bad \"thing\"");
        cJSON_Delete(j);
        st_buf_fini(&b);
    }
}
END_TEST

/* ---- the answers ---------------------------------------------------------- */

static struct st_gen *msg_gen(bool stream)
{
    struct st_gen *g = api_gen(stream, st_msg_shape_new(), "msg_req-1");
    ck_assert_str_eq(g->shape->id_prefix, "msg_");
    return g;
}

START_TEST(test_server_messages_body)
{
    static const char calls[] =
        "[{\"id\":\"call_abc\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        "\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\"}}]";
    struct st_gen *g = msg_gen(false);
    struct st_oai_choice c = { .text = "Checking.", .text_len = 9, .finish = ST_FINISH_STOP,
                               .parsed = true, .reasoning = "plan", .reasoning_len = 4,
                               .tool_calls = calls, .tool_calls_len = sizeof(calls) - 1 };
    cJSON *j = api_body_of(g, &c);
    ck_assert_str_eq(str_at(j, "id"), "msg_req-1");
    ck_assert_str_eq(str_at(j, "type"), "message");
    ck_assert_str_eq(str_at(j, "role"), "assistant");
    ck_assert_str_eq(str_at(j, "model"), "m");
    ck_assert_str_eq(str_at(j, "stop_reason"), "tool_use");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "stop_sequence")));
    const cJSON *content = cJSON_GetObjectItem(j, "content");
    ck_assert_int_eq(cJSON_GetArraySize(content), 3);
    const cJSON *b = cJSON_GetArrayItem(content, 0);
    ck_assert_str_eq(str_at(b, "type"), "thinking");
    ck_assert_str_eq(str_at(b, "thinking"), "plan");
    ck_assert_str_eq(str_at(b, "signature"), "");
    b = cJSON_GetArrayItem(content, 1);
    ck_assert_str_eq(str_at(b, "type"), "text");
    ck_assert_str_eq(str_at(b, "text"), "Checking.");
    b = cJSON_GetArrayItem(content, 2);
    ck_assert_str_eq(str_at(b, "type"), "tool_use");
    ck_assert_str_eq(str_at(b, "id"), "toolu_abc");
    ck_assert_str_eq(str_at(b, "name"), "get_weather");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(b, "input"), "city"), "Paris");
    const cJSON *u = cJSON_GetObjectItem(j, "usage");
    /* 12 prompt tokens, 4 of them cache reads: input_tokens counts the other 8 */
    ck_assert_int_eq(cJSON_GetObjectItem(u, "input_tokens")->valueint, 8);
    ck_assert_int_eq(cJSON_GetObjectItem(u, "output_tokens")->valueint, 7);
    ck_assert_int_eq(cJSON_GetObjectItem(u, "cache_read_input_tokens")->valueint, 4);
    ck_assert_int_eq(cJSON_GetObjectItem(u, "cache_creation_input_tokens")->valueint, 0);
    cJSON_Delete(j);

    /* only a call: one block; arguments that are not an object -> input {} */
    static const char bad_args[] =
        "[{\"id\":\"call_x\",\"type\":\"function\",\"function\":{\"name\":\"f\","
        "\"arguments\":\"not json\"}}]";
    struct st_oai_choice only = { .text = "", .finish = ST_FINISH_STOP, .parsed = true,
                                  .content_null = true, .tool_calls = bad_args,
                                  .tool_calls_len = sizeof(bad_args) - 1 };
    j = api_body_of(g, &only);
    content = cJSON_GetObjectItem(j, "content");
    ck_assert_int_eq(cJSON_GetArraySize(content), 1);
    b = cJSON_GetArrayItem(content, 0);
    ck_assert_str_eq(str_at(b, "type"), "tool_use");
    ck_assert(cJSON_IsObject(cJSON_GetObjectItem(b, "input")));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(b, "input")), 0);
    cJSON_Delete(j);

    /* cut at max_tokens; raw text (no parser); nothing at all: one empty text block */
    struct st_oai_choice cut = { .text = "Hel", .text_len = 3, .finish = ST_FINISH_LENGTH };
    j = api_body_of(g, &cut);
    ck_assert_str_eq(str_at(j, "stop_reason"), "max_tokens");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "content"), 0), "text"),
                     "Hel");
    cJSON_Delete(j);
    struct st_oai_choice none = { .text = "", .finish = ST_FINISH_STOP };
    j = api_body_of(g, &none);
    ck_assert_str_eq(str_at(j, "stop_reason"), "end_turn");
    content = cJSON_GetObjectItem(j, "content");
    ck_assert_int_eq(cJSON_GetArraySize(content), 1);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(content, 0), "text"), "");
    cJSON_Delete(j);
    st_gen_free(g);
}
END_TEST

/* ---- streams -------------------------------------------------------------- */

static const char *delta_text(const cJSON *ev, const char *key)
{
    return str_at(cJSON_GetObjectItem(ev, "delta"), key);
}

START_TEST(test_server_messages_stream)
{
    struct st_call c;
    struct st_gen *g = api_run_stream(msg_gen(true), api_reply, ST_FINISH_STOP, NULL, &c);
    struct events ev;
    api_split_events(g, false, &ev);
    ck_assert_int_ge(ev.n, 10);
    ck_assert_str_eq(str_at(ev.ev[0], "type"), "message_start");
    const cJSON *m = cJSON_GetObjectItem(ev.ev[0], "message");
    ck_assert_str_eq(str_at(m, "id"), "msg_req-1");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "content")), 0);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(m, "stop_reason")));
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "usage"), "input_tokens")->valueint,
                     5);
    /* blocks: thinking 0, text 1, tool_use 2; each start .. deltas .. stop */
    char text[3][128] = { "", "", "" };
    const char *kinds[3] = { "thinking", "text", "tool_use" };
    int open = -1, starts = 0;
    for (int i = 1; i < ev.n - 2; i++) {
        const char *t = str_at(ev.ev[i], "type");
        int idx = cJSON_GetObjectItem(ev.ev[i], "index")->valueint;
        if (strcmp(t, "content_block_start") == 0) {
            ck_assert_int_eq(open, -1);
            ck_assert_int_eq(idx, starts++);
            open = idx;
            const cJSON *cb = cJSON_GetObjectItem(ev.ev[i], "content_block");
            ck_assert_str_eq(str_at(cb, "type"), kinds[idx]);
            if (idx == 2) {
                ck_assert_str_eq(str_at(cb, "name"), "get_weather");
                ck_assert(strncmp(str_at(cb, "id"), "toolu_", 6) == 0);
                ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(cb, "input")), 0);
            }
        } else if (strcmp(t, "content_block_delta") == 0) {
            ck_assert_int_eq(idx, open);
            static const char *const key[3][2] = { { "thinking_delta", "thinking" },
                                                   { "text_delta", "text" },
                                                   { "input_json_delta", "partial_json" } };
            ck_assert_str_eq(delta_text(ev.ev[i], "type"), key[idx][0]);
            strncat(text[idx], delta_text(ev.ev[i], key[idx][1]),
                    sizeof(text[idx]) - strlen(text[idx]) - 1);
        } else {
            ck_assert_str_eq(t, "content_block_stop");
            ck_assert_int_eq(idx, open);
            open = -1;
        }
    }
    ck_assert_int_eq(starts, 3);
    ck_assert_int_eq(open, -1);
    ck_assert_str_eq(text[0], "plan it");
    ck_assert_str_eq(text[1], "Checking.");
    cJSON *args = cJSON_Parse(text[2]);
    ck_assert_ptr_nonnull(args);
    ck_assert_str_eq(str_at(args, "city"), "Paris");
    cJSON_Delete(args);
    const cJSON *md = ev.ev[ev.n - 2];
    ck_assert_str_eq(str_at(md, "type"), "message_delta");
    ck_assert_str_eq(delta_text(md, "stop_reason"), "tool_use");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(md, "delta"), "stop_sequence")));
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(md, "usage"), "output_tokens")->valueint,
                     (int)strlen(api_reply));
    ck_assert_str_eq(str_at(ev.ev[ev.n - 1], "type"), "message_stop");
    ck_assert_ptr_null(strstr(g->out.data, "[DONE]"));
    free_events(&ev);
    st_gen_free(g);
}
END_TEST

START_TEST(test_server_messages_stream_ends)
{
    /* cut: stop_reason max_tokens */
    struct st_call c;
    struct st_gen *g = api_run_stream(msg_gen(true), "Hello the", ST_FINISH_LENGTH, NULL, &c);
    struct events ev;
    api_split_events(g, false, &ev);
    ck_assert_str_eq(delta_text(ev.ev[ev.n - 2], "stop_reason"), "max_tokens");
    free_events(&ev);
    st_gen_free(g);

    /* a failure after the stream began: the error event, nothing after it */
    struct st_api_error err;
    st_api_error_set(&err, ST_ERR_INTERNAL, NULL, NULL, "engine failed");
    g = api_run_stream(msg_gen(true), "Hi", ST_FINISH_ERROR, &err, &c);
    api_split_events(g, false, &ev);
    ck_assert_str_eq(str_at(ev.ev[0], "type"), "message_start");
    const cJSON *last = ev.ev[ev.n - 1];
    ck_assert_str_eq(str_at(last, "type"), "error");
    const cJSON *e = cJSON_GetObjectItem(last, "error");
    ck_assert_str_eq(str_at(e, "type"), "api_error");
    ck_assert_str_eq(str_at(e, "message"), "engine failed");
    for (int i = 0; i < ev.n; i++)
        ck_assert_str_ne(str_at(ev.ev[i], "type"), "message_stop");
    free_events(&ev);
    st_gen_free(g);

    /* nothing generated: still one (empty) text block */
    g = api_run_stream(msg_gen(true), "", ST_FINISH_STOP, NULL, &c);
    api_split_events(g, false, &ev);
    ck_assert_int_eq(ev.n, 5);
    ck_assert_str_eq(str_at(ev.ev[1], "type"), "content_block_start");
    ck_assert_str_eq(str_at(cJSON_GetObjectItem(ev.ev[1], "content_block"), "type"), "text");
    ck_assert_str_eq(str_at(ev.ev[2], "type"), "content_block_stop");
    ck_assert_str_eq(delta_text(ev.ev[3], "stop_reason"), "end_turn");
    free_events(&ev);
    st_gen_free(g);
}
END_TEST

/* The routes: POST only; messages start a generation (refused while
 * draining), count_tokens does not; both answer Anthropic's error shape. */
START_TEST(test_server_messages_routes)
{
    char allow[64];
    bool known = false;
    const struct st_route *r = st_route_find("/v1/messages", "POST", &known, allow, sizeof(allow));
    ck_assert_ptr_nonnull(r);
    ck_assert(r->fn == st_h_messages);
    ck_assert(r->auth && r->body && r->work);
    ck_assert(st_route_anthropic(r));
    r = st_route_find("/v1/messages/count_tokens", "POST", &known, allow, sizeof(allow));
    ck_assert_ptr_nonnull(r);
    ck_assert(r->fn == st_h_count_tokens);
    ck_assert(r->auth && r->body && !r->work);
    ck_assert(st_route_anthropic(r));
    ck_assert_ptr_null(st_route_find("/v1/messages", "GET", &known, allow, sizeof(allow)));
    ck_assert(known);
    ck_assert_str_eq(allow, "POST");
    r = st_route_find("/v1/chat/completions", "POST", &known, allow, sizeof(allow));
    ck_assert(!st_route_anthropic(r));
    ck_assert(!st_route_anthropic(NULL));
}
END_TEST

static Suite *server_messages_suite(void)
{
    Suite *s = suite_create("server_messages");
    TCase *t = tcase_create("messages");
    tcase_add_test(t, test_server_messages_translate_turns);
    tcase_add_test(t, test_server_messages_translate_tools);
    tcase_add_test(t, test_server_messages_prefill);
    tcase_add_test(t, test_server_messages_parse);
    tcase_add_test(t, test_server_messages_bad_requests);
    tcase_add_test(t, test_server_messages_empty_list);
    tcase_add_test(t, test_server_messages_grammar);
    tcase_add_test(t, test_server_messages_error_shape);
    tcase_add_test(t, test_server_messages_body);
    tcase_add_test(t, test_server_messages_stream);
    tcase_add_test(t, test_server_messages_stream_ends);
    tcase_add_test(t, test_server_messages_routes);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(server_messages_suite(), CK_FORK);
}
