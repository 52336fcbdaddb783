/* test_server_tools.c -- tool calls and reasoning on the server side, no
 * network: the request fields (tool_choice, parallel_tool_calls,
 * reasoning_format), the parsed message body and stream deltas, and
 * gen_reply.c driving a choice's parser, stream and non-stream, fed one
 * byte at a time. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai/oai.h"
#include "strata/think_block.h"
#include "support.h"

static const char tools1[] =
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
    "\"parameters\":{\"type\":\"object\"}}}]";

static enum st_status parse_chat(const char *extra, struct st_oai_request *r,
                                 struct st_api_error *e)
{
    char body[1024];
    snprintf(body, sizeof(body), "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]%s%s}",
             extra[0] ? "," : "", extra);
    memset(e, 0, sizeof(*e));
    return st_oai_parse(ST_OAI_CHAT, body, strlen(body), r, e);
}

static void expect_bad(const char *extra, const char *param)
{
    struct st_oai_request r;
    struct st_api_error e;
    ck_assert_msg(parse_chat(extra, &r, &e) != ST_OK, "accepted: %s", extra);
    ck_assert_int_eq(st_api_error_http(&e), 400);
    ck_assert_str_eq(e.param, param);
    st_oai_request_fini(&r);
}

START_TEST(test_server_tools_request_fields)
{
    struct st_oai_request r;
    struct st_api_error e;
    char extra[512];

    ck_assert_int_eq(parse_chat(tools1, &r, &e), ST_OK);
    ck_assert_int_eq(r.tool_choice, ST_OAI_TOOLS_AUTO);
    ck_assert_ptr_nonnull(r.chat.tools);
    ck_assert(!r.single_tool_call);
    ck_assert_int_eq(r.reasoning_format, ST_OAI_REASONING_DEFAULT);
    st_oai_request_fini(&r);

    /* "none": the template gets no tools */
    snprintf(extra, sizeof(extra), "%s,\"tool_choice\":\"none\"", tools1);
    ck_assert_int_eq(parse_chat(extra, &r, &e), ST_OK);
    ck_assert_int_eq(r.tool_choice, ST_OAI_TOOLS_NONE);
    ck_assert_ptr_null(r.chat.tools);
    st_oai_request_fini(&r);

    snprintf(extra, sizeof(extra),
             "%s,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},"
             "\"parallel_tool_calls\":false,\"reasoning_format\":\"none\"", tools1);
    ck_assert_int_eq(parse_chat(extra, &r, &e), ST_OK);
    ck_assert_int_eq(r.tool_choice, ST_OAI_TOOLS_FUNCTION);
    ck_assert_ptr_nonnull(r.chat.tools);
    ck_assert(r.single_tool_call);
    ck_assert_int_eq(r.reasoning_format, ST_OAI_REASONING_NONE);
    st_oai_request_fini(&r);

    ck_assert_int_eq(parse_chat("\"tool_choice\":\"required\",\"reasoning_format\":\"auto\","
                                "\"parallel_tool_calls\":null", &r, &e), ST_OK);
    ck_assert_int_eq(r.tool_choice, ST_OAI_TOOLS_REQUIRED);
    ck_assert_int_eq(r.reasoning_format, ST_OAI_REASONING_DEEPSEEK);
    ck_assert(!r.single_tool_call);
    st_oai_request_fini(&r);

    expect_bad("\"tool_choice\":\"sometimes\"", "tool_choice");
    expect_bad("\"tool_choice\":5", "tool_choice");
    expect_bad("\"tool_choice\":{\"type\":\"function\"}", "tool_choice");
    expect_bad("\"parallel_tool_calls\":\"no\"", "parallel_tool_calls");
    expect_bad("\"reasoning_format\":\"deepseek-legacy\"", "reasoning_format");
    expect_bad("\"reasoning_format\":1", "reasoning_format");
}
END_TEST

static const struct st_oai_meta chat_meta = { ST_OAI_CHAT, "chatcmpl-x", "m", 1700000000, false };

static cJSON *parse_buf(const struct st_buf *b)
{
    cJSON *j = cJSON_ParseWithLength(b->data, b->len);
    ck_assert_msg(j != NULL, "not JSON: %s", b->data);
    return j;
}

START_TEST(test_server_tools_body_and_deltas)
{
    static const char calls[] =
        "[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
        "\"arguments\":\"{}\"}}]";
    struct st_oai_usage u = { 1, 2, 0, 0 };
    struct st_oai_choice ch = { .index = 0, .text = "", .text_len = 0, .finish = ST_FINISH_STOP,
                                .parsed = true, .content_null = true, .tool_calls = calls,
                                .tool_calls_len = strlen(calls), .finish_reason = "tool_calls" };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_oai_body(&b, &chat_meta, &ch, 1, &u), ST_OK);
    cJSON *j = parse_buf(&b);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
    const cJSON *msg = cJSON_GetObjectItem(c0, "message");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(msg, "content")));
    ck_assert_ptr_null(cJSON_GetObjectItem(msg, "reasoning_content"));     /* omitted */
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "finish_reason")->valuestring, "tool_calls");
    const cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(msg, "tool_calls"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(tc, "function"), "arguments")
                         ->valuestring, "{}");
    cJSON_Delete(j);

    /* content and reasoning, no calls */
    st_buf_reset(&b);
    ch = (struct st_oai_choice){ .index = 0, .text = "hi", .text_len = 2,
                                 .finish = ST_FINISH_LENGTH, .parsed = true,
                                 .reasoning = "why", .reasoning_len = 3 };
    ck_assert_int_eq(st_oai_body(&b, &chat_meta, &ch, 1, &u), ST_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "\"content\":\"hi\",\"reasoning_content\":\"why\"},"
                                         "\"logprobs\":null,\"finish_reason\":\"length\""));

    /* deltas */
    struct st_oai_delta d = { ST_OAI_DELTA_TOOL_START, "get_weather", 11, 1, "call_abc" };
    st_buf_reset(&b);
    ck_assert_int_eq(st_oai_chunk_delta(&b, &chat_meta, 0, &d, NULL), ST_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":"
                                         "\"call_abc\",\"type\":\"function\",\"function\":"
                                         "{\"name\":\"get_weather\",\"arguments\":\"\"}}]}"));
    d = (struct st_oai_delta){ ST_OAI_DELTA_TOOL_ARGS, "{\"a\": 1}", 8, 1, NULL };
    st_buf_reset(&b);
    ck_assert_int_eq(st_oai_chunk_delta(&b, &chat_meta, 0, &d, NULL), ST_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":"
                                         "{\"arguments\":\"{\\\"a\\\": 1}\"}}]}"));
    d = (struct st_oai_delta){ ST_OAI_DELTA_REASONING, "hm", 2, 0, NULL };
    st_buf_reset(&b);
    ck_assert_int_eq(st_oai_chunk_delta(&b, &chat_meta, 3, &d, NULL), ST_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "{\"index\":3,\"delta\":{\"reasoning_content\":\"hm\"},"
                                         "\"logprobs\":null,\"finish_reason\":null}"));
    st_buf_reset(&b);
    ck_assert_int_eq(st_oai_chunk_finish_reason(&b, &chat_meta, 0, "tool_calls"), ST_OK);
    ck_assert_ptr_nonnull(strstr(b.data, "\"finish_reason\":\"tool_calls\""));
    st_buf_fini(&b);
}
END_TEST

/* ---- gen_reply.c over a fake generation -------------------------------- */

static const char reply_text[] =
    "<think>\nplan it\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", "
    "\"arguments\": {\"city\": \"Paris\", \"note\": \"} </tool_call>\"}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

/* Run 'text' through one choice after 'prompt', one byte per token; the
 * request has 'tools' (a "tools":[...] member) and extra_body. */
static struct st_gen *run_tools_text(bool stream, const char *tools, const char *extra_body,
                                     const char *prompt, const char *text, struct st_call *c)
{
    struct st_oai_request oq;
    struct st_api_error e;
    char extra[900];
    snprintf(extra, sizeof(extra), "%s%s%s", tools, extra_body[0] ? "," : "", extra_body);
    ck_assert_int_eq(parse_chat(extra, &oq, &e), ST_OK);
    struct st_gen *g = st_gen_new(1);
    ck_assert_ptr_nonnull(g);
    g->kind = ST_OAI_CHAT;
    g->stream = stream;
    g->shape = &st_oai_chat_shape;   /* renders what the parser reads */
    snprintf(g->id, sizeof(g->id), "chatcmpl-t");
    snprintf(g->model_name, sizeof(g->model_name), "m");
    memset(c, 0, sizeof(*c));
    c->gen = g;
    ck_assert_int_eq(st_gen_reply_setup(g, &oq, ST_REASONING_DEEPSEEK, prompt), ST_OK);
    st_oai_request_fini(&oq);
    struct st_gen_choice *ch = &g->choices[0];
    ck_assert_ptr_nonnull(ch->reply);
    for (size_t i = 0; text[i]; i++)
        st_gen_reply_token(c, g, ch, text + i, 1, NULL);
    ch->finish = ST_FINISH_STOP;
    ch->ended = true;
    st_gen_reply_end(c, g, ch);
    ck_assert(!g->broken);
    return g;
}

static struct st_gen *run_text(bool stream, const char *extra_body, const char *prompt,
                               const char *text, struct st_call *c)
{
    return run_tools_text(stream, tools1, extra_body, prompt, text, c);
}

static struct st_gen *run_choice(bool stream, const char *extra_body, struct st_call *c)
{
    return run_text(stream, extra_body, "assistant\n", reply_text, c);
}

static void check_id(const char *id)
{
    ck_assert_uint_eq(strlen(id), 29);
    ck_assert(strncmp(id, "call_", 5) == 0);
    for (int i = 5; i < 29; i++)
        ck_assert_msg(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                             id[i]) && id[i], "id %s", id);
}

START_TEST(test_server_tools_gen_reply_nonstream)
{
    struct st_call c;
    struct st_gen *g = run_choice(false, "", &c);
    struct st_oai_choice oc = { .index = 0, .text = "raw", .text_len = 3,
                                .finish = ST_FINISH_STOP };
    st_gen_reply_fill(&g->choices[0], &oc);
    ck_assert(oc.parsed);
    ck_assert_str_eq(oc.text, "Checking.");
    ck_assert_str_eq(oc.reasoning, "plan it");
    ck_assert_str_eq(oc.finish_reason, "tool_calls");
    cJSON *calls = cJSON_ParseWithLength(oc.tool_calls, oc.tool_calls_len);
    ck_assert_int_eq(cJSON_GetArraySize(calls), 2);
    const cJSON *c0 = cJSON_GetArrayItem(calls, 0), *c1 = cJSON_GetArrayItem(calls, 1);
    const cJSON *f0 = cJSON_GetObjectItem(c0, "function");
    ck_assert_str_eq(cJSON_GetObjectItem(f0, "name")->valuestring, "get_weather");
    ck_assert_str_eq(cJSON_GetObjectItem(f0, "arguments")->valuestring,
                     "{\"city\": \"Paris\", \"note\": \"} </tool_call>\"}");
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "type")->valuestring, "function");
    check_id(cJSON_GetObjectItem(c0, "id")->valuestring);
    check_id(cJSON_GetObjectItem(c1, "id")->valuestring);
    ck_assert_str_ne(cJSON_GetObjectItem(c0, "id")->valuestring,
                     cJSON_GetObjectItem(c1, "id")->valuestring);
    cJSON_Delete(calls);
    st_gen_free(g);

    /* parallel_tool_calls false: the first call only */
    g = run_choice(false, "\"parallel_tool_calls\":false", &c);
    st_gen_reply_fill(&g->choices[0], &oc);
    calls = cJSON_ParseWithLength(oc.tool_calls, oc.tool_calls_len);
    ck_assert_int_eq(cJSON_GetArraySize(calls), 1);
    cJSON_Delete(calls);
    st_gen_free(g);
}
END_TEST

/* continue_final_message whose text stops inside a think block (Qwen3
 * renders it after its own empty block): the reply goes on reasoning until
 * its "</think>", then content; without continue_final the same prompt's
 * "<think>" is the client's text and the reply is content. */
START_TEST(test_server_tools_continue_inside_think)
{
    static const char prompt[] = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
                                 "<think>\n\n</think>\n\n<think>\nLet me";
    struct st_call c;
    struct st_oai_choice oc = { .index = 0, .text = "raw", .text_len = 3,
                                .finish = ST_FINISH_STOP };
    struct st_gen *g = run_text(false, "\"continue_final_message\":true", prompt,
                                " see.\n</think>\n\nHello.", &c);
    st_gen_reply_fill(&g->choices[0], &oc);
    ck_assert(oc.parsed);
    ck_assert_str_eq(oc.reasoning, "see.");
    ck_assert_str_eq(oc.text, "Hello.");
    st_gen_free(g);
    /* a prefill after a closed block: content from the start */
    static const char closed[] = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
                                 "<think>\nx\n</think>\n\nSure";
    g = run_text(false, "\"continue_final_message\":true", closed, ", hello.", &c);
    st_gen_reply_fill(&g->choices[0], &oc);
    ck_assert_str_eq(oc.text, ", hello.");
    ck_assert(!oc.reasoning || !oc.reasoning[0]);
    st_gen_free(g);
    /* the constrained replies' think block starts open the same way */
    struct st_oai_request oq;
    struct st_api_error e;
    ck_assert_int_eq(parse_chat("\"continue_final_message\":true,\"response_format\":"
                                "{\"type\":\"json_object\"}", &oq, &e), ST_OK);
    struct st_gen_params p = oq.params;
    st_gen_reply_json_think(&oq, ST_REASONING_DEEPSEEK, prompt, 1u << ST_THINK_ANGLE, &p);
    ck_assert_int_eq(p.json_think, ST_THINK_OPEN);
    st_oai_request_fini(&oq);
}
END_TEST

/* GLM-4.5: the "\n" a fresh turn starts with is the format's and is
 * dropped, but a continued message's text (continue_final_message, an
 * Anthropic prefill) goes on where the prefill stopped: its leading blanks
 * are the client's text ("Sure" + " thing." is not "Surething."). */
START_TEST(test_server_tools_glm_continue_keeps_blanks)
{
    static const char fresh[] = "[gMASK]<sop><|user|>\nhi<|assistant|>";
    static const char cont[] = "[gMASK]<sop><|user|>\nhi<|assistant|>\n<think></think>\nSure";
    struct st_call c;
    struct st_oai_choice oc = { .index = 0, .finish = ST_FINISH_STOP };
    struct st_gen *g = run_text(false, "", fresh, "\n<think>x</think>\nHello.", &c);
    st_gen_reply_fill(&g->choices[0], &oc);
    ck_assert_str_eq(oc.text, "Hello.");
    ck_assert_str_eq(oc.reasoning, "x");
    st_gen_free(g);
    g = run_text(false, "\"chat_template_kwargs\":{\"enable_thinking\":false}", fresh,
                 "\nHello.", &c);
    st_gen_reply_fill(&g->choices[0], &oc);
    ck_assert_str_eq(oc.text, "Hello.");
    st_gen_free(g);
    for (int stream = 0; stream < 2; stream++) {
        g = run_text(stream, "\"continue_final_message\":true", cont, " thing.", &c);
        if (stream) {   /* the first content delta starts with the blank */
            ck_assert_ptr_nonnull(memmem(g->out.data, g->out.len, ST_LIT("\"content\":\" ")));
        } else {
            st_gen_reply_fill(&g->choices[0], &oc);
            ck_assert_str_eq(oc.text, " thing.");
        }
        st_gen_free(g);
    }
}
END_TEST

/* A Llama 3.1+ prompt (its tools header) makes a bare JSON reply a call;
 * after any other prompt the same reply is content. */
START_TEST(test_server_tools_llama_bare_json_call)
{
    static const char prompt[] = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>"
                                 "\n\nEnvironment: ipython\nCutting Knowledge Date: December "
                                 "2023\n<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
    static const char text[] = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}";
    struct st_oai_choice oc = { .index = 0, .text = "raw", .text_len = 3,
                                .finish = ST_FINISH_STOP };
    struct st_call c;
    struct st_gen *g = run_text(false, "", prompt, text, &c);
    st_gen_reply_fill(&g->choices[0], &oc);
    ck_assert_str_eq(oc.finish_reason, "tool_calls");
    cJSON *calls = cJSON_ParseWithLength(oc.tool_calls, oc.tool_calls_len);
    ck_assert_int_eq(cJSON_GetArraySize(calls), 1);
    const cJSON *f0 = cJSON_GetObjectItem(cJSON_GetArrayItem(calls, 0), "function");
    ck_assert_str_eq(cJSON_GetObjectItem(f0, "name")->valuestring, "get_weather");
    ck_assert_str_eq(cJSON_GetObjectItem(f0, "arguments")->valuestring, "{\"city\": \"Oslo\"}");
    cJSON_Delete(calls);
    st_gen_free(g);

    g = run_text(false, "", "<|im_start|>assistant\n", text, &c);
    memset(&oc, 0, sizeof(oc));
    oc.finish = ST_FINISH_STOP;
    st_gen_reply_fill(&g->choices[0], &oc);
    ck_assert_str_eq(oc.text, text);
    ck_assert_int_eq(oc.tool_calls_len, 0);
    st_gen_free(g);
}
END_TEST

/* A Qwen3-Coder prompt (its tools section's example call) makes the XML
 * call format parsed, values typed by the request's tool schema; the
 * request is freed before generation (the reply keeps its own copy). */
START_TEST(test_server_tools_coder_xml_call)
{
    static const char tools[] =
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
        "\"days\":{\"type\":\"integer\"}}}}}]";
    static const char prompt[] =
        "<|im_start|>system\n...\n</tools>\n\nIf you choose to call a function ONLY reply in the "
        "following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n"
        "<parameter=example_parameter_1>\nvalue_1\n</parameter>\n...<|im_end|>\n"
        "<|im_start|>assistant\n";
    static const char text[] =
        "Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    for (int stream = 0; stream < 2; stream++) {
        struct st_oai_choice oc = { .index = 0, .text = "raw", .text_len = 3,
                                    .finish = ST_FINISH_STOP };
        struct st_call c;
        struct st_gen *g = run_tools_text(stream, tools, "", prompt, text, &c);
        ck_assert_str_eq(st_gen_reply_finish_reason(&g->choices[0]), "tool_calls");
        if (stream) {       /* the call whole in the chunks, arguments escaped once */
            char *out = strndup(g->out.data, g->out.len);
            ck_assert_ptr_nonnull(strstr(out, "\"name\":\"get_weather\""));
            ck_assert_ptr_nonnull(strstr(out, "\"{\\\"city\\\": \\\"New York\\\", "
                                              "\\\"days\\\": 3}\""));
            ck_assert_ptr_null(strstr(out, "<function="));
            free(out);
            st_gen_free(g);
            continue;
        }
        st_gen_reply_fill(&g->choices[0], &oc);
        ck_assert_str_eq(oc.text, "Sure.");
        cJSON *calls = cJSON_ParseWithLength(oc.tool_calls, oc.tool_calls_len);
        ck_assert_int_eq(cJSON_GetArraySize(calls), 1);
        const cJSON *f0 = cJSON_GetObjectItem(cJSON_GetArrayItem(calls, 0), "function");
        ck_assert_str_eq(cJSON_GetObjectItem(f0, "name")->valuestring, "get_weather");
        ck_assert_str_eq(cJSON_GetObjectItem(f0, "arguments")->valuestring,
                         "{\"city\": \"New York\", \"days\": 3}");
        cJSON_Delete(calls);
        st_gen_free(g);
    }
    /* after another prompt the same reply stays content */
    struct st_oai_choice oc = { .index = 0, .finish = ST_FINISH_STOP };
    struct st_call c;
    struct st_gen *g = run_tools_text(false, tools, "", "<|im_start|>assistant\n", text, &c);
    st_gen_reply_fill(&g->choices[0], &oc);
    ck_assert_str_eq(oc.text, text);
    ck_assert_int_eq(oc.tool_calls_len, 0);
    st_gen_free(g);
}
END_TEST

START_TEST(test_server_tools_gen_reply_stream)
{
    struct st_call c;
    struct st_gen *g = run_choice(true, "", &c);
    char *text = strndup(g->out.data, g->out.len);
    struct st_buf content, reasoning, args[2];
    st_buf_init(&content);
    st_buf_init(&reasoning);
    st_buf_init(&args[0]);
    st_buf_init(&args[1]);
    int starts = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        ck_assert(strncmp(line, "data: ", 6) == 0);
        cJSON *j = cJSON_Parse(line + 6);
        ck_assert_ptr_nonnull(j);
        const cJSON *d = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"),
                                                                0), "delta");
        const cJSON *v;
        if ((v = cJSON_GetObjectItem(d, "content")))
            ck_assert_int_eq(st_buf_append(&content, v->valuestring, strlen(v->valuestring)), 0);
        if ((v = cJSON_GetObjectItem(d, "reasoning_content")))
            ck_assert_int_eq(st_buf_append(&reasoning, v->valuestring, strlen(v->valuestring)),
                             0);
        if ((v = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "tool_calls"), 0))) {
            int idx = cJSON_GetObjectItem(v, "index")->valueint;
            const cJSON *f = cJSON_GetObjectItem(v, "function");
            ck_assert(idx == 0 || idx == 1);
            if (cJSON_GetObjectItem(v, "id")) {         /* the first chunk of a call */
                ck_assert_int_eq(idx, starts++);
                check_id(cJSON_GetObjectItem(v, "id")->valuestring);
                ck_assert_str_eq(cJSON_GetObjectItem(f, "arguments")->valuestring, "");
                ck_assert_str_eq(cJSON_GetObjectItem(f, "name")->valuestring,
                                 idx ? "get_time" : "get_weather");
            }
            const char *a = cJSON_GetObjectItem(f, "arguments")->valuestring;
            ck_assert_int_eq(st_buf_append(&args[idx], a, strlen(a)), 0);
        }
        cJSON_Delete(j);
    }
    ck_assert_int_eq(starts, 2);
    ck_assert_str_eq(content.data, "Checking.");
    ck_assert_str_eq(reasoning.data, "plan it");
    ck_assert_str_eq(args[0].data, "{\"city\": \"Paris\", \"note\": \"} </tool_call>\"}");
    ck_assert_str_eq(args[1].data, "{}");
    ck_assert_str_eq(st_gen_reply_finish_reason(&g->choices[0]), "tool_calls");
    g->choices[0].finish = ST_FINISH_LENGTH;    /* cut off: "length" wins */
    ck_assert_str_eq(st_gen_reply_finish_reason(&g->choices[0]), "length");
    st_buf_fini(&content);
    st_buf_fini(&reasoning);
    st_buf_fini(&args[0]);
    st_buf_fini(&args[1]);
    free(text);
    st_gen_free(g);
}
END_TEST

/* Nothing to parse: no parser, the raw path stays. */
START_TEST(test_server_tools_setup_when_needed)
{
    struct st_oai_request oq;
    struct st_api_error e;
    ck_assert_int_eq(parse_chat("\"reasoning_format\":\"none\"", &oq, &e), ST_OK);
    struct st_gen *g = st_gen_new(2);
    g->kind = ST_OAI_CHAT;
    ck_assert_int_eq(st_gen_reply_setup(g, &oq, ST_REASONING_DEEPSEEK, ""), ST_OK);
    ck_assert_ptr_null(g->choices[0].reply);
    st_oai_request_fini(&oq);
    /* the server's default applies when the body says nothing */
    ck_assert_int_eq(parse_chat("", &oq, &e), ST_OK);
    ck_assert_int_eq(st_gen_reply_setup(g, &oq, ST_REASONING_NONE, ""), ST_OK);
    ck_assert_ptr_null(g->choices[0].reply);
    ck_assert_int_eq(st_gen_reply_setup(g, &oq, ST_REASONING_DEEPSEEK, ""), ST_OK);
    ck_assert_ptr_nonnull(g->choices[0].reply);     /* each choice its own */
    ck_assert_ptr_nonnull(g->choices[1].reply);
    ck_assert_ptr_ne(g->choices[0].reply, g->choices[1].reply);
    st_oai_request_fini(&oq);
    st_gen_free(g);
}
END_TEST

/* An optional think block before a JSON answer only for a model whose
 * vocabulary has the tags as tokens: Qwen2.5 renders the same ChatML as
 * Qwen3 but never thinks, and must not wander into a block it cannot
 * close. A prompt that opened the block starts the reply in it anyway.
 * Blanks before the block only for GLM-4.5, which writes "\n<think>". */
START_TEST(test_server_tools_json_think_needs_the_tags)
{
    struct st_oai_request oq;
    struct st_api_error e;
    ck_assert_int_eq(parse_chat("\"response_format\":{\"type\":\"json_object\"}", &oq, &e),
                     ST_OK);
    const char *chatml = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    const char *opened = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n";
    const char *glm = "[gMASK]<sop><|user|>\nhi<|assistant|>";
    const struct { const char *prompt; uint8_t vocab; uint8_t want; } cases[] = {
        { chatml, 1u << ST_THINK_ANGLE, ST_THINK_OPTIONAL },
        { glm, 1u << ST_THINK_ANGLE, ST_THINK_OPTIONAL_LEAD },   /* GLM writes "\n<think>" */
        { glm, 0, ST_THINK_NONE },
        { chatml, 0, ST_THINK_NONE },
        { chatml, 1u << ST_THINK_SQUARE, ST_THINK_NONE },   /* the other spelling */
        { opened, 0, ST_THINK_OPEN },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct st_gen_params p = oq.params;
        st_gen_reply_json_think(&oq, ST_REASONING_DEEPSEEK, cases[i].prompt, cases[i].vocab, &p);
        ck_assert_msg(p.json_think == cases[i].want, "case %zu: %d", i, (int)p.json_think);
    }
    st_oai_request_fini(&oq);
}
END_TEST

/* A stream's reasoning_content (parts[0]) and content (parts[1]) deltas,
 * joined. */
static void deltas(const struct st_gen *g, struct st_buf parts[2])
{
    static const char *const keys[2] = { "reasoning_content", "content" };
    char *text = strndup(g->out.data, g->out.len), *save = NULL;
    st_buf_init(&parts[0]);
    st_buf_init(&parts[1]);
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *j = cJSON_Parse(line + 6);
        ck_assert_ptr_nonnull(j);
        const cJSON *d = cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0), "delta");
        for (int k = 0; k < 2; k++) {
            const cJSON *v = cJSON_GetObjectItem(d, keys[k]);
            if (cJSON_IsString(v))
                ck_assert_int_eq(st_buf_append(&parts[k], v->valuestring,
                                               strlen(v->valuestring)), ST_OK);
        }
        cJSON_Delete(j);
    }
    free(text);
}

/* Magistral: 2506 writes <think>, 2507 [THINK]; where the vocabulary has
 * both tag pairs as tokens the constrained grammar takes either, else the
 * one it has; the reply parser splits both, streamed and not. */
START_TEST(test_server_tools_magistral_think_spellings)
{
    struct st_oai_request oq;
    struct st_api_error e;
    ck_assert_int_eq(parse_chat("\"response_format\":{\"type\":\"json_object\"}", &oq, &e),
                     ST_OK);
    const char *mistral = "<s>[SYSTEM_PROMPT]be brief[/SYSTEM_PROMPT][INST]hi[/INST]";
    const uint8_t both = 1u << ST_THINK_ANGLE | 1u << ST_THINK_SQUARE;
    const struct { uint8_t vocab; uint8_t mode, tags; } cases[] = {
        { both, ST_THINK_OPTIONAL, ST_THINK_EITHER },
        { 1u << ST_THINK_SQUARE, ST_THINK_OPTIONAL, ST_THINK_SQUARE },
        { 1u << ST_THINK_ANGLE, ST_THINK_OPTIONAL, ST_THINK_ANGLE },
        { 0, ST_THINK_NONE, ST_THINK_SQUARE },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct st_gen_params p = oq.params;
        st_gen_reply_json_think(&oq, ST_REASONING_DEEPSEEK, mistral, cases[i].vocab, &p);
        ck_assert_msg(p.json_think == cases[i].mode, "case %zu: %d", i, (int)p.json_think);
        if (p.json_think != ST_THINK_NONE)
            ck_assert_int_eq(p.json_think_tags, cases[i].tags);
        enum st_think_tags t;
        ck_assert_int_eq(st_gen_reply_budget_think(&oq, ST_REASONING_DEEPSEEK, mistral,
                                                   cases[i].vocab, true, &t), cases[i].mode);
    }
    st_oai_request_fini(&oq);
    /* the parser: either spelling, closed by its own partner */
    static const char *const replies[] = { "<think>\nhm [/THINK] ok\n</think>\n\nAnswer.",
                                           "[THINK]hm </think> ok[/THINK]Answer." };
    static const char *const want[] = { "hm [/THINK] ok", "hm </think> ok" };
    for (int k = 0; k < 2; k++) {
        for (int stream = 0; stream < 2; stream++) {
            struct st_call c;
            struct st_gen *g = run_tools_text(stream, "\"tools\":[]", "", mistral, replies[k],
                                              &c);
            if (!stream) {
                struct st_oai_choice oc = { .index = 0, .finish = ST_FINISH_STOP };
                st_gen_reply_fill(&g->choices[0], &oc);
                ck_assert_str_eq(oc.reasoning, want[k]);
                ck_assert_int_eq(oc.text_len, 7);
                ck_assert(memcmp(oc.text, "Answer.", 7) == 0);
            } else {
                struct st_buf parts[2];
                deltas(g, parts);
                ck_assert_str_eq(parts[0].data, want[k]);
                ck_assert_str_eq(parts[1].data, "Answer.");
                st_buf_fini(&parts[0]);
                st_buf_fini(&parts[1]);
            }
            st_gen_free(g);
        }
    }
}
END_TEST

/* thinking_budget and its other names: integers >= -1, 400 naming the
 * field otherwise; names that disagree are a 400; the budget's block
 * follows the JSON modes' rule, but an unconstrained reply may think with
 * reasoning_format none too, and a closed or impossible block ignores it. */
START_TEST(test_server_tools_thinking_budget_field)
{
    struct st_oai_request r;
    struct st_api_error e;
    ck_assert_int_eq(parse_chat("", &r, &e), ST_OK);
    ck_assert(!r.has_thinking_budget);
    st_oai_request_fini(&r);
    const char *ok[] = { "\"thinking_budget\":0", "\"thinking_token_budget\":512",
                         "\"thinking_budget_tokens\":-1", "\"thinking_budget\":null",
                         "\"thinking_budget\":7,\"thinking_token_budget\":7" };
    const int32_t want[] = { 0, 512, -1, -2, 7 };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ck_assert_msg(parse_chat(ok[i], &r, &e) == ST_OK, "%s: %s", ok[i], e.message);
        ck_assert_int_eq(r.has_thinking_budget, want[i] != -2);
        if (want[i] != -2)
            ck_assert_int_eq(r.thinking_budget, want[i]);
        st_oai_request_fini(&r);
    }
    expect_bad("\"thinking_budget\":-2", "thinking_budget");
    expect_bad("\"thinking_budget\":\"100\"", "thinking_budget");
    expect_bad("\"thinking_token_budget\":2.5", "thinking_token_budget");
    expect_bad("\"thinking_budget_tokens\":true", "thinking_budget_tokens");
    expect_bad("\"thinking_budget\":4294967296", "thinking_budget");
    expect_bad("\"thinking_budget\":1,\"thinking_budget_tokens\":2", "thinking_budget_tokens");

    ck_assert_int_eq(parse_chat("\"reasoning_format\":\"none\"", &r, &e), ST_OK);
    const char *chatml = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    const char *closed = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    const char *opened = "<|im_start|>assistant\n<think>\n";
    enum st_think_tags t;
    const uint8_t angle = 1u << ST_THINK_ANGLE;
    ck_assert_int_eq(st_gen_reply_budget_think(&r, ST_REASONING_DEEPSEEK, chatml, angle, false,
                                               &t), ST_THINK_OPTIONAL);
    ck_assert_int_eq(t, ST_THINK_ANGLE);
    ck_assert_int_eq(st_gen_reply_budget_think(&r, ST_REASONING_DEEPSEEK, chatml, angle, true,
                                               &t), ST_THINK_NONE);   /* the grammar has none */
    ck_assert_int_eq(st_gen_reply_budget_think(&r, ST_REASONING_DEEPSEEK, chatml, 0, false, &t),
                     ST_THINK_NONE);   /* Qwen2.5: no tags */
    ck_assert_int_eq(st_gen_reply_budget_think(&r, ST_REASONING_DEEPSEEK, closed, angle, false,
                                               &t), ST_THINK_NONE);
    ck_assert_int_eq(st_gen_reply_budget_think(&r, ST_REASONING_DEEPSEEK, opened, 0, false, &t),
                     ST_THINK_OPEN);
    st_oai_request_fini(&r);
}
END_TEST

static Suite *server_tools_suite(void)
{
    Suite *s = suite_create("server_tools");
    TCase *t = tcase_create("tools");
    tcase_add_test(t, test_server_tools_request_fields);
    tcase_add_test(t, test_server_tools_body_and_deltas);
    tcase_add_test(t, test_server_tools_gen_reply_nonstream);
    tcase_add_test(t, test_server_tools_continue_inside_think);
    tcase_add_test(t, test_server_tools_glm_continue_keeps_blanks);
    tcase_add_test(t, test_server_tools_gen_reply_stream);
    tcase_add_test(t, test_server_tools_llama_bare_json_call);
    tcase_add_test(t, test_server_tools_coder_xml_call);
    tcase_add_test(t, test_server_tools_setup_when_needed);
    tcase_add_test(t, test_server_tools_json_think_needs_the_tags);
    tcase_add_test(t, test_server_tools_magistral_think_spellings);
    tcase_add_test(t, test_server_tools_thinking_budget_field);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(server_tools_suite(), CK_FORK);
}
