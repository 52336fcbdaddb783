/* test_chat.c -- chat template recognition, the renderers on fixed
 * conversations, the errors templates raise, and the tojson re-serializer.
 * Output equality with real Jinja is checked by tests/e2e/tokenizer_ref. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/json/json.h"
#include "strata/chat.h"
#include "support.h"

static struct st_chat_msg msg(const char *role, const char *content)
{
    struct st_chat_msg m;

    memset(&m, 0, sizeof(m));
    m.role = st_str_c(role);
    m.content = st_str_c(content);
    return m;
}

static enum st_status render(const char *src, const struct st_chat_msg *msgs, size_t n,
                             const char *tools, int thinking, struct st_buf *out,
                             struct st_err *err)
{
    struct st_chat_tmpl t;
    struct st_chat_req req;

    memset(&req, 0, sizeof(req));
    st_chat_tmpl_init(&t, src, src ? strlen(src) : 0, "<s>", "</s>", "unit");
    req.msgs = msgs;
    req.n_msgs = n;
    req.tools = st_str_c(tools);
    if (!tools)
        req.tools.ptr = NULL;
    req.add_generation_prompt = true;
    req.enable_thinking = thinking;
    st_buf_init(out);
    return st_chat_render(&t, &req, out, err);
}

/* Enough of each real template for the fingerprints. */
static const char qwen3_src[] =
    "{%- if tools %}<|im_start|>system ... <tool_call> ... reasoning_content ... <think>"
    "{%- if enable_thinking is defined and enable_thinking is false %}";
static const char qwen3_thinking_src[] =
    "<|im_start|> <tool_call> </think> {{- '<|im_start|>assistant\\n<think>\\n' }}";
static const char qwen25_src[] =
    "{%- if tools %}<|im_start|>system ... {{- 'You are Qwen, created by Alibaba Cloud. "
    "You are a helpful assistant.' }} ... <tool_call>";

static const char qwen3coder_src[] =
    "<|im_start|>system\nYou are Qwen, a helpful AI assistant that can interact with a computer "
    "... <tool_call> ... '\n<tool_call>\n<function=' + tool_call.name ... '<parameter=' ...";

START_TEST(test_chat_recognizes_templates)
{
    struct st_chat_tmpl t;
    static const struct { const char *src; enum st_chat_kind kind; } cases[] = {
        { qwen3_src, ST_CHAT_QWEN3 },
        { qwen25_src, ST_CHAT_QWEN25 },
        { "{{'<|im_start|>' + message['role']}}", ST_CHAT_CHATML },
        { "<|im_start|> <tool_call> (Hermes-style, no Qwen system prompt)", ST_CHAT_CHATML },
        { "<|start_header_id|>' + role + '<|end_header_id|>", ST_CHAT_LLAMA3 },
        { "<|start_header_id|>system<|end_header_id|> Cutting Knowledge Date:", ST_CHAT_LLAMA31 },
        { "'[INST] ' + content + '[/INST]'", ST_CHAT_MISTRAL },
        { "<start_of_turn>model", ST_CHAT_GEMMA },
        { qwen3coder_src, ST_CHAT_QWEN3_CODER },
        { "'[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' [INST] [TOOL_CALLS] [",
          ST_CHAT_MISTRAL_V7 },
        { "[SYSTEM_PROMPT] [INST] (Small 3 2501: no tools)", ST_CHAT_MISTRAL_V7 },
        { "[SYSTEM_PROMPT] [INST] '[TOOL_CALLS]' + name + '[ARGS]' + arguments",
          ST_CHAT_MISTRAL_V11 },
        { "[INST] '[TOOL_CALLS]' + name + '[ARGS]' (no system prompt)", ST_CHAT_MISTRAL_V11 },
    };
    size_t i;

    for (i = 0; i < ST_ARRAY_LEN(cases); i++) {
        st_chat_tmpl_init(&t, cases[i].src, strlen(cases[i].src), NULL, NULL, "m");
        ck_assert_int_eq(t.kind, cases[i].kind);
        ck_assert(t.known);
    }
    st_chat_tmpl_init(&t, qwen3_src, strlen(qwen3_src), NULL, NULL, "m");
    ck_assert(t.thinking_flag && !t.think_open);
    ck_assert(st_chat_renders_tools(&t));
    st_chat_tmpl_init(&t, qwen3_thinking_src, strlen(qwen3_thinking_src), NULL, NULL, "m");
    ck_assert(t.think_open);
    st_chat_tmpl_init(&t, "{{ weird }}", 11, NULL, NULL, "m");
    ck_assert_int_eq(t.kind, ST_CHAT_CHATML);
    ck_assert(!t.known);
    ck_assert(!st_chat_renders_tools(&t));   /* ChatML has no place for tools */
    st_chat_tmpl_init(&t, NULL, 0, NULL, NULL, NULL);
    ck_assert(!t.known);
    ck_assert_str_eq(st_chat_kind_name(ST_CHAT_GEMMA), "gemma");
    ck_assert_str_eq(st_chat_kind_name(ST_CHAT_QWEN3_CODER), "qwen3-coder");
    st_chat_tmpl_init(&t, qwen3coder_src, strlen(qwen3coder_src), NULL, NULL, "m");
    ck_assert(st_chat_renders_tools(&t));
}
END_TEST

START_TEST(test_chat_qwen3_thinking_switch)
{
    struct st_chat_msg m[] = { msg("system", "S"), msg("user", "U") };
    struct st_buf out;

    ck_assert_int_eq(render(qwen3_src, m, 2, NULL, 0, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
                               "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    st_buf_fini(&out);
    ck_assert_int_eq(render(qwen3_src, m, 2, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
                               "<|im_start|>assistant\n");
    st_buf_fini(&out);
    ck_assert_int_eq(render(qwen3_thinking_src, m, 2, NULL, 0, &out, NULL), ST_OK);
    ck_assert_ptr_nonnull(strstr(out.data, "<|im_start|>assistant\n<think>\n"));
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_chat_qwen3_history_and_tools)
{
    struct st_chat_msg m[] = {
        msg("user", "Q1"), msg("assistant", "<think>\nr1\n</think>\n\nA1"), msg("user", "Q2"),
        msg("assistant", ""), msg("tool", "T1"), msg("tool", "T2"),
    };
    struct st_buf out;

    m[3].tool_calls = st_str_c("[{\"type\":\"function\",\"function\":{\"name\":\"f\","
                               "\"arguments\":{\"x\":\"\\u00e9\\/\",\"n\":[1, 2]}}}]");
    m[3].reasoning_content = st_str_c("why");
    ck_assert_int_eq(render(qwen3_src, m, 6, "[{\"name\":\"f\"}]", -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data,
        "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        "{\"name\": \"f\"}\n</tools>\n\nFor each function call, return a json object with function name and "
        "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
        "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\nQ1<|im_end|>\n"
        "<|im_start|>assistant\nA1<|im_end|>\n"                     /* earlier think removed */
        "<|im_start|>user\nQ2<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nwhy\n</think>\n\n"        /* after the last query: kept */
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": \"\xc3\xa9/\", \"n\": [1, 2]}}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nT1\n</tool_response>\n<tool_response>\nT2\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n");
    st_buf_fini(&out);
}
END_TEST

/* Qwen2.5: the default system prompt (alone, and ahead of the tools), the
 * assistant content as given (no </think> split), no think block at the end. */
START_TEST(test_chat_qwen25_default_system_and_tools)
{
    struct st_chat_msg m[] = { msg("user", "Q"), msg("assistant", "<think>x</think>A"),
                               msg("user", "R"), msg("assistant", "C"), msg("tool", "T") };
    struct st_buf out;

    ck_assert_int_eq(render(qwen25_src, m, 3, NULL, 0, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data,
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n"
        "<|im_start|>assistant\n<think>x</think>A<|im_end|>\n"
        "<|im_start|>user\nR<|im_end|>\n<|im_start|>assistant\n");
    st_buf_fini(&out);
    m[3].tool_calls = st_str_c("[{\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": 1}\"}}]");
    ck_assert_int_eq(render(qwen25_src, m, 5, "[{\"name\":\"f\"}]", -1, &out, NULL), ST_OK);
    ck_assert_ptr_nonnull(strstr(out.data,
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.\n\n# Tools\n\nYou may call"));
    ck_assert_ptr_nonnull(strstr(out.data,
        "<|im_start|>assistant\nC\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}"
        "\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nT\n</tool_response>"
        "<|im_end|>\n<|im_start|>assistant\n"));
    st_buf_fini(&out);
    /* A system message of its own replaces the default. */
    m[0] = msg("system", "S");
    ck_assert_int_eq(render(qwen25_src, m, 1, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "<|im_start|>system\nS<|im_end|>\n<|im_start|>assistant\n");
    st_buf_fini(&out);
}
END_TEST

/* The local date 'days' from now as "%d %b %Y" (static buffer). */
static const char *today_plus(int days)
{
    static char buf[2][32];
    static int next;
    char *b = buf[next++ % 2];
    time_t now = time(NULL) + (time_t)days * 86400;
    struct tm tm;
    ck_assert_ptr_nonnull(localtime_r(&now, &tm));
    ck_assert_uint_gt(strftime(b, 32, "%d %b %Y", &tm), 0);
    return b;
}

/* Llama 3.1+: the date header (given, the 3.1 default, today for 3.2), and
 * the errors its template raises. Full renderings are compared with the
 * Jinja in tests/e2e/tokenizer_ref. */
START_TEST(test_chat_llama31_dates_and_errors)
{
    static const char l31[] = "<|start_header_id|> <|end_header_id|> Cutting Knowledge Date";
    static const char l32[] = "<|start_header_id|> <|end_header_id|> Cutting Knowledge Date "
                              "strftime_now(\"%d %b %Y\")";
    struct st_chat_msg m[] = { msg("system", " S "), msg("user", "U"), msg("assistant", "") };
    struct st_chat_tmpl t;
    struct st_chat_req req;
    struct st_err err = { 0 };
    struct st_buf out;

    ck_assert_int_eq(render(l31, m, 2, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "<s><|start_header_id|>system<|end_header_id|>\n\n"
                               "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                               "S<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|>"
                               "<|start_header_id|>assistant<|end_header_id|>\n\n");
    st_buf_fini(&out);
    ck_assert_int_eq(render(l32, m + 1, 1, NULL, -1, &out, NULL), ST_OK);
    const char *d = strstr(out.data, "Today Date: ");
    ck_assert_ptr_nonnull(d);
    d += strlen("Today Date: ");     /* "%d %b %Y" of the local date (either side of midnight) */
    ck_assert_msg(strncmp(d, today_plus(-1), 11) == 0 || strncmp(d, today_plus(0), 11) == 0, "%.11s", d);
    st_buf_fini(&out);

    memset(&req, 0, sizeof(req));
    st_chat_tmpl_init(&t, l32, strlen(l32), "", "", "m");
    req.msgs = m + 1;
    req.n_msgs = 1;
    req.date_string = st_str_c("01 Jan 2030");
    st_buf_init(&out);
    ck_assert_int_eq(st_chat_render(&t, &req, &out, NULL), ST_OK);
    ck_assert_ptr_nonnull(strstr(out.data, "Today Date: 01 Jan 2030\n\n<|eot_id|>"));
    st_buf_fini(&out);

    /* Two calls in one message, and tools with no message to carry them. */
    m[2].tool_calls = st_str_c("[{\"function\":{\"name\":\"a\"}},{\"function\":{\"name\":\"b\"}}]");
    ck_assert_int_eq(render(l31, m, 3, NULL, -1, &out, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "single tool-calls"));
    st_buf_fini(&out);
    ck_assert_int_eq(render(l31, m, 1, "[{\"name\":\"f\"}]", -1, &out, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "no first user message"));
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_chat_simple_renderers)
{
    struct st_chat_msg m[] = { msg("system", "S"), msg("user", " U "), msg("assistant", " A "),
                               msg("user", "V") };
    struct st_buf out;

    ck_assert_int_eq(render("<|start_header_id|><|end_header_id|>", m, 2, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "<s><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
                               "<|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|>"
                               "<|start_header_id|>assistant<|end_header_id|>\n\n");
    st_buf_fini(&out);
    ck_assert_int_eq(render("[INST]", m, 4, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "<s>[INST]  U [/INST] A</s>[INST] S\n\nV[/INST]");
    st_buf_fini(&out);
    ck_assert_int_eq(render("<start_of_turn>", m, 4, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "<s><start_of_turn>user\nS\n\nU<end_of_turn>\n<start_of_turn>model\n"
                               "A<end_of_turn>\n<start_of_turn>user\nV<end_of_turn>\n<start_of_turn>model\n");
    st_buf_fini(&out);
    ck_assert_int_eq(render(NULL, m + 1, 1, NULL, -1, &out, NULL), ST_OK);     /* fallback */
    ck_assert_str_eq(out.data, "<|im_start|>user\n U <|im_end|>\n<|im_start|>assistant\n");
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_chat_errors)
{
    struct st_chat_msg m[] = { msg("user", "a"), msg("user", "b") };
    struct st_buf out;
    struct st_err err = { 0 };

    ck_assert_int_eq(render("[INST]", m, 2, NULL, -1, &out, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "alternate"));
    st_buf_fini(&out);
    ck_assert_int_eq(render(qwen3_src, m, 1, "[{\"a\": }]", -1, &out, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "tools"));
    st_buf_fini(&out);
    ck_assert_int_eq(render(qwen3_src, m, 0, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
    m[0].tool_calls = st_str_c("{\"not\": \"an array\"}");
    ck_assert_int_eq(render(qwen3_src, m, 1, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
}
END_TEST

/* continue_final: every template's prompt ends right after the last
 * message's text (what the template writes before it kept, its closing
 * dropped), so it is a prefix of the closed turns' rendering; only an
 * assistant's text can be continued. */
static enum st_status render_ending(const char *src, const struct st_chat_msg *msgs, size_t n,
                                    bool cont, struct st_buf *out, struct st_err *err)
{
    struct st_chat_tmpl t;
    struct st_chat_req req = { .msgs = msgs, .n_msgs = n, .continue_final = cont,
                               .enable_thinking = -1 };
    st_chat_tmpl_init(&t, src, src ? strlen(src) : 0, "<s>", "</s>", "unit");
    st_buf_init(out);
    return st_chat_render(&t, &req, out, err);
}

START_TEST(test_chat_continue_final)
{
    static const char *const srcs[] = {
        qwen3_src, qwen25_src, qwen3coder_src, qwen3_thinking_src, NULL, "[INST]",
        "<start_of_turn>", "<|start_header_id|><|end_header_id|>",
        "<|start_header_id|> <|end_header_id|> Cutting Knowledge Date",
        "{%- set default_system_message = '' %}[SYSTEM_PROMPT] '[TOOL_CALLS]' + n + '[ARGS]'",
    };
    struct st_chat_msg m[] = { msg("user", "Hi"), msg("assistant", "Sure, he  ") };
    struct st_err err = { 0 };
    struct st_buf closed, cont;

    for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
        ck_assert_int_eq(render_ending(srcs[i], m, 2, false, &closed, NULL), ST_OK);
        ck_assert_msg(render_ending(srcs[i], m, 2, true, &cont, &err) == ST_OK, "%zu: %s", i,
                      err.msg);
        ck_assert_msg(cont.len < closed.len && memcmp(cont.data, closed.data, cont.len - 2) == 0,
                      "%zu: '%s' is not where '%s' ends the text", i, cont.data, closed.data);
        /* the client's text as written, its blanks too (Llama trims a closed turn) */
        ck_assert_msg(cont.len >= 10 && strcmp(cont.data + cont.len - 10, "Sure, he  ") == 0,
                      "%zu: %s", i, cont.data);
        st_buf_fini(&closed);
        st_buf_fini(&cont);
    }
    ck_assert_int_eq(render_ending(qwen3_src, m, 2, true, &cont, NULL), ST_OK);
    ck_assert_str_eq(cont.data, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
                                "<think>\n\n</think>\n\nSure, he  ");
    st_buf_fini(&cont);
    ck_assert_int_eq(render_ending(qwen3_src, m, 1, true, &cont, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "only an assistant message"));
    st_buf_fini(&cont);
    m[1].tool_calls = st_str_c("[{\"type\":\"function\",\"function\":{\"name\":\"f\","
                               "\"arguments\":\"{}\"}}]");
    ck_assert_int_eq(render_ending(qwen3_src, m, 2, true, &cont, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "tool calls"));
    st_buf_fini(&cont);
}
END_TEST

/* Mistral v7: default system message read from the template (concatenated
 * literals, escapes, today's date), tools before the last user message
 * printed by hand, calls with the last 9 characters of their ids. */
START_TEST(test_chat_mistral_v7)
{
    static const char src[] =
        "{%- set today = strftime_now(\"%Y-%m-%d\") %}\n"
        "{%- set default_system_message = \"Sys \\\"q\\\"\\n\" + today + 'x\\'y\\\n' %}\n"
        "{%- set parallel_tool_prompt = \"Call tools.\" %}\n"
        "{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }} [TOOL_CALLS] [";
    struct st_chat_msg m[6];
    struct st_buf out;
    struct st_err err = { 0 };
    struct st_chat_tmpl t;
    char today[32], want[512];
    time_t now = time(NULL);
    struct tm tm;

    st_chat_tmpl_init(&t, src, strlen(src), "<s>", "</s>", "m");
    ck_assert_int_eq(t.kind, ST_CHAT_MISTRAL_V7);
    ck_assert(t.has_default_system && t.tools_last_user);
    ck_assert_str_eq(t.mistral_tools_prompt, "Call tools.");
    ck_assert(localtime_r(&now, &tm) && strftime(today, sizeof(today), "%Y-%m-%d", &tm));
    m[0] = msg("user", "hi");
    ck_assert_int_eq(render(src, m, 1, NULL, -1, &out, &err), ST_OK);
    snprintf(want, sizeof(want),
             "<s>[SYSTEM_PROMPT]Sys \"q\"\n%sx'y[/SYSTEM_PROMPT][INST]hi[/INST]", today);
    ck_assert_str_eq(out.data, want);
    st_buf_fini(&out);

    m[0] = msg("system", "S");
    m[1] = msg("user", "a");
    m[2] = msg("assistant", "b");
    m[3] = msg("user", "c");
    m[4] = msg("assistant", "");
    m[4].tool_calls = st_str_c("[{\"id\": \"call_123456789\", \"function\": {\"name\": \"f\", "
                               "\"arguments\": \"{\\\"x\\\":1}\"}}]");
    m[5] = msg("tool", "{\"r\": 2}");
    m[5].tool_call_id = st_str_c("call_123456789");
    ck_assert_int_eq(render(src, m, 6,
                            "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":"
                            "\"say \\\"hi\\\"\",\"parameters\":{\"type\":\"object\"},"
                            "\"return\":1}}]",
                            -1, &out, &err), ST_OK);
    ck_assert_str_eq(out.data,
        "<s>[SYSTEM_PROMPT]Call tools.\n\nS[/SYSTEM_PROMPT][INST]a[/INST]b</s>"
        "[AVAILABLE_TOOLS] [{\"type\": \"function\", \"function\": {\"name\": \"f\", "
        "\"description\": \"say \"hi\"\", \"parameters\": {\"type\": \"object\"}}}]"
        "[/AVAILABLE_TOOLS][INST]c[/INST][TOOL_CALLS] [{\"name\": \"f\", "
        "\"arguments\": {\"x\": 1}, \"id\": \"123456789\"}]</s>"
        "[TOOL_RESULTS] {\"content\": {\"r\": 2}, \"call_id\": \"123456789\"}[/TOOL_RESULTS]");
    st_buf_fini(&out);

    m[5].tool_call_id = st_str_c("short");               /* ids need 9 characters */
    ck_assert_int_eq(render(src, m, 6, NULL, -1, &out, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "message 5"));
    st_buf_fini(&out);
    m[2] = msg("developer", "x");
    ck_assert_int_eq(render(src, m, 4, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
}
END_TEST

/* Mistral v11: [TOOL_CALLS]name[ARGS]args, results without ids, tools after
 * the system prompt or before the last user message. */
START_TEST(test_chat_mistral_v11)
{
    static const char after_sys[] =
        "{%- set default_system_message = '' %}[SYSTEM_PROMPT] '[TOOL_CALLS]' + n + '[ARGS]'";
    static const char last_user[] =
        "{%- set default_system_message = 'D {today}' %}\n[SYSTEM_PROMPT] [TOOL_CALLS] [ARGS] "
        "{%- if message == user_messages[-1] %}";
    struct st_chat_msg m[6];
    struct st_buf out;
    struct st_err err = { 0 };
    const char *tools = "[{\"type\": \"function\", \"function\": {\"name\": \"g\"}}]";

    m[0] = msg("user", "a");
    m[1] = msg("assistant", "ok");
    m[1].tool_calls = st_str_c("[{\"id\": \"1\", \"function\": {\"name\": \"g\", "
                               "\"arguments\": \"\"}}, {\"id\": \"2\", \"function\": "
                               "{\"name\": \"g\", \"arguments\": {\"k\": [1]}}}]");
    m[2] = msg("tool", "r1");
    m[3] = msg("tool", "r2");
    m[4] = msg("assistant", "done");
    m[5] = msg("user", "b");
    ck_assert_int_eq(render(after_sys, m, 6, tools, -1, &out, &err), ST_OK);
    ck_assert_str_eq(out.data,
        "<s>[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"g\"}}]"
        "[/AVAILABLE_TOOLS]"
        "[INST]a[/INST]ok[TOOL_CALLS]g[ARGS]{}[TOOL_CALLS]g[ARGS]{\"k\": [1]}</s>"
        "[TOOL_RESULTS]r1[/TOOL_RESULTS][TOOL_RESULTS]r2[/TOOL_RESULTS]done</s>[INST]b[/INST]");
    st_buf_fini(&out);
    ck_assert_int_eq(render(last_user, m, 6, tools, -1, &out, &err), ST_OK);
    ck_assert_str_eq(out.data,
        "<s>[SYSTEM_PROMPT]D {today}[/SYSTEM_PROMPT][INST]a[/INST]ok[TOOL_CALLS]g[ARGS]{}"
        "[TOOL_CALLS]g[ARGS]{\"k\": [1]}</s>[TOOL_RESULTS]r1[/TOOL_RESULTS][TOOL_RESULTS]r2"
        "[/TOOL_RESULTS]done</s>[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": "
        "{\"name\": \"g\"}}][/AVAILABLE_TOOLS][INST]b[/INST]");
    st_buf_fini(&out);
    /* alternation: two user messages in a row; an empty assistant turn */
    m[1] = msg("user", "again");
    ck_assert_int_eq(render(after_sys, m, 2, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
    m[1] = msg("assistant", "");
    ck_assert_int_eq(render(after_sys, m, 2, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
}
END_TEST

/* The default-system scanner on odd template text: whatever it cannot read
 * leaves no default (and never reads past the source). */
START_TEST(test_chat_mistral_scan_edges)
{
    static const char *const bad[] = {
        "[SYSTEM_PROMPT] {%- set default_system_message = 'unterminated",
        "[SYSTEM_PROMPT] {%- set default_system_message = 'a' + ",
        "[SYSTEM_PROMPT] {%- set default_system_message = 'a' ~ 'b' %}",
        "[SYSTEM_PROMPT] {%- set default_system_message = foo %}",
        "[SYSTEM_PROMPT] {%- set default_system_message = 'a' ",
        "[SYSTEM_PROMPT] {%- set default_system_message = tod",
    };
    struct st_chat_tmpl t;
    struct st_chat_msg m = msg("user", "u");
    struct st_buf out;
    struct st_err err = { 0 };
    char *big;
    size_t i, n = 20000;

    for (i = 0; i < ST_ARRAY_LEN(bad); i++) {
        st_chat_tmpl_init(&t, bad[i], strlen(bad[i]), "<s>", "</s>", "m");
        ck_assert_int_eq(t.kind, ST_CHAT_MISTRAL_V7);
        ck_assert_msg(!t.has_default_system && t.mistral_system[0] == '\0', "%s", bad[i]);
    }
    /* "\t", an unknown escape kept as written, and no default: "[SYSTEM_PROMPT]" empty */
    {
        static const char esc[] =
            "[SYSTEM_PROMPT] {% set default_system_message = \"a\\tb\\qc\" -%}";
        st_chat_tmpl_init(&t, esc, strlen(esc), "<s>", "</s>", "m");
    }
    ck_assert(t.has_default_system);
    ck_assert_str_eq(t.mistral_system, "a\tb\\qc");
    ck_assert_int_eq(render(bad[0], &m, 1, NULL, -1, &out, &err), ST_OK);
    ck_assert_str_eq(out.data, "<s>[SYSTEM_PROMPT][/SYSTEM_PROMPT][INST]u[/INST]");
    st_buf_fini(&out);
    /* longer than the buffer: dropped */
    big = malloc(n + 100);
    ck_assert_ptr_nonnull(big);
    i = (size_t)snprintf(big, 100, "[SYSTEM_PROMPT] {%%- set default_system_message = '");
    memset(big + i, 'x', n);
    strcpy(big + i + n, "' %}");
    st_chat_tmpl_init(&t, big, strlen(big), "<s>", "</s>", "m");
    ck_assert(!t.has_default_system);
    free(big);
    /* malformed tools / tool_calls JSON are refused; null means none */
    ck_assert_int_eq(render(bad[0], &m, 1, "{\"not\": \"an array\"}", -1, &out, &err),
                     ST_ERR_INVALID);
    st_buf_fini(&out);
    ck_assert_int_eq(render(bad[0], &m, 1, "null", -1, &out, &err), ST_OK);
    st_buf_fini(&out);
    struct st_chat_msg two[2] = { msg("user", "u"), msg("assistant", "a") };
    two[1].tool_calls = st_str_c("[{oops");
    ck_assert_int_eq(render(bad[0], two, 2, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
    ck_assert_int_eq(render("[TOOL_CALLS] [ARGS]", two, 2, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
    two[1].tool_calls = st_str_c("null");
    ck_assert_int_eq(render("[TOOL_CALLS] [ARGS]", two, 2, NULL, -1, &out, &err), ST_OK);
    ck_assert_str_eq(out.data, "<s>[INST]u[/INST]a</s>");
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_chat_tojson)
{
    struct st_str v;
    struct st_buf out;
    char deep[200];
    size_t i;

    st_buf_init(&out);
    ck_assert(st_json_value(st_str_c(" {\"a\" :[1,2.5e3, true,null ,{}],\n\"b\\n\":\"\\ud83d\\ude00\\t\\\"\"} "), &v));
    ck_assert_int_eq(st_json_tojson(v, &out), ST_OK);
    ck_assert_str_eq(out.data, "{\"a\": [1, 2.5e3, true, null, {}], \"b\\n\": \"\xf0\x9f\x98\x80\\t\\\"\"}");
    st_buf_reset(&out);
    ck_assert_int_eq(st_json_tojson_indent(v, 2, &out), ST_OK);   /* json.dumps(indent=2) */
    ck_assert_str_eq(out.data, "{\n  \"a\": [\n    1,\n    2.5e3,\n    true,\n    null,\n    {}\n  ],"
                               "\n  \"b\\n\": \"\xf0\x9f\x98\x80\\t\\\"\"\n}");
    ck_assert(!st_json_value(st_str_c("[1,]"), &v));
    ck_assert(!st_json_value(st_str_c("{\"a\":1} x"), &v));
    ck_assert(!st_json_value(st_str_c("\"bad \\x escape\""), &v));
    for (i = 0; i < sizeof(deep) - 1; i++)
        deep[i] = i < 100 ? '[' : ']';
    deep[sizeof(deep) - 1] = '\0';
    ck_assert(!st_json_value(st_str_c(deep), &v));           /* depth limit */
    ck_assert(!st_json_truthy(st_str_c("[ ]")));
    ck_assert(st_json_truthy(st_str_c("[0]")));
    st_buf_fini(&out);
}
END_TEST

/* Qwen3-Coder where Python's Jinja (which we follow) and @huggingface/jinja
 * differ, so tokenizer_ref cannot check it: str() of booleans, None and
 * lists; and arguments given as a JSON string (parsed first). */
START_TEST(test_chat_qwen3coder_python_values)
{
    static const char tools[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \" D \", "
        "\"strict\": true, \"parameters\": {\"type\": \"object\", \"properties\": {\"a\": "
        "{\"type\": [\"string\", \"null\"], \"description\": \"it's \\\"x\\\"\", "
        "\"default\": null}, \"b\": {\"type\": \"boolean\", \"enum\": [true, false]}}, "
        "\"additionalProperties\": false}}}]";
    static const char want_tools[] =
        "<|im_start|>system\nYou are Qwen, a helpful AI assistant that can interact with a "
        "computer to solve tasks.\n\n# Tools\n\nYou have access to the following functions:"
        "\n\n<tools>\n<function>\n<name>f</name>\n<description>D</description>\n<parameters>\n"
        "<parameter>\n<name>a</name>\n<type>['string', 'null']</type>\n"
        "<description>it's \"x\"</description>\n<default>None</default>\n</parameter>\n"
        "<parameter>\n<name>b</name>\n<type>boolean</type>\n<enum>[true, false]</enum>\n"
        "</parameter>\n<additionalProperties>False</additionalProperties>\n</parameters>\n"
        "<strict>True</strict>\n</function>\n</tools>\n\nIf you choose";
    static const char want_tail[] =
        "</IMPORTANT><|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
        "<tool_call>\n<function=f>\n<parameter=a>\nNone\n</parameter>\n<parameter=b>\nTrue\n"
        "</parameter>\n<parameter=c>\n1.5\n</parameter>\n<parameter=d>\n{\"k\": [1, \"\xc3\xa9\"]}"
        "\n</parameter>\n<parameter=e>\nmulti\nline\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=g>\n</function>\n</tool_call><|im_end|>\n<|im_start|>user\n"
        "<tool_response>\nR1\n</tool_response>\n<tool_response>\nR2\n</tool_response>\n"
        "<|im_end|>\n<|im_start|>assistant\n";
    struct st_chat_msg m[] = { msg("user", "U"), msg("assistant", NULL), msg("tool", "R1"),
                               msg("tool", "R2") };
    struct st_err err = { 0 };
    struct st_buf out;
    size_t n;

    m[1].content.ptr = NULL;
    m[1].tool_calls = st_str_c(
        "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": null, "
        "\\\"b\\\": true, \\\"c\\\": 1.5, \\\"d\\\": {\\\"k\\\":[1,\\\"\\\\u00e9\\\"]}, "
        "\\\"e\\\": \\\"multi\\\\nline\\\"}\"}}, {\"function\":{\"name\":\"g\",\"arguments\":"
        "\"not json\"}}]");
    ck_assert_int_eq(render(qwen3coder_src, m, 4, tools, -1, &out, NULL), ST_OK);
    ck_assert_msg(strncmp(out.data, want_tools, strlen(want_tools)) == 0, "%s", out.data);
    n = strlen(want_tail);
    ck_assert_msg(out.len >= n && strcmp(out.data + out.len - n, want_tail) == 0, "%s", out.data);
    st_buf_fini(&out);
    /* a system message replaces the default text; without tools it is ChatML */
    m[0] = msg("system", "S");
    m[1] = msg("user", "U");
    ck_assert_int_eq(render(qwen3coder_src, m, 2, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
                               "<|im_start|>assistant\n");
    st_buf_fini(&out);
    m[1].tool_calls = st_str_c("{");
    ck_assert_int_eq(render(qwen3coder_src, m, 2, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
}
END_TEST

/* GLM-4.5: the goldens below are Python Jinja's renderings (transformers'
 * settings: trim_blocks, lstrip_blocks) of zai-org's GLM-4.5 / 4.6
 * chat_template.jinja, as published on the Hugging Face hub and copied in
 * llama.cpp's models/templates/GLM-4.6.jinja (transcribed in
 * tests/e2e/tokenizer_ref/templates/glm45.jinja). */
static const char glm45_src[] =
    "[gMASK]<sop>\n{%- if tools -%}\n<|system|>\n# Tools ... <arg_key>{arg-key-1}</arg_key> ... "
    "{{- '/nothink' if (enable_thinking is defined and not enable_thinking ...";

START_TEST(test_chat_glm45_turns_and_thinking)
{
    struct st_chat_msg m[] = { msg("system", "You are helpful."), msg("user", "Hi"),
                               msg("assistant", "B"), msg("user", "C /nothink") };
    struct st_chat_tmpl t;
    struct st_buf out;

    st_chat_tmpl_init(&t, glm45_src, strlen(glm45_src), "[gMASK]", "<|endoftext|>", "glm");
    ck_assert_int_eq(t.kind, ST_CHAT_GLM45);
    ck_assert(t.known && t.thinking_flag && st_chat_renders_tools(&t));
    ck_assert_str_eq(st_chat_kind_name(ST_CHAT_GLM45), "glm4.5");
    /* system + user, thinking not given: the bare generation prompt */
    ck_assert_int_eq(render(glm45_src, m, 2, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "[gMASK]<sop><|system|>\nYou are helpful.<|user|>\nHi<|assistant|>");
    st_buf_fini(&out);
    ck_assert_int_eq(render(glm45_src, m + 1, 1, NULL, 1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "[gMASK]<sop><|user|>\nHi<|assistant|>");
    st_buf_fini(&out);
    /* enable_thinking false: "/nothink" after every user text that lacks it,
     * and the generation prompt closes an empty think block */
    m[1] = msg("user", "A");
    ck_assert_int_eq(render(glm45_src, m + 1, 3, NULL, 0, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "[gMASK]<sop><|user|>\nA/nothink<|assistant|>\n<think></think>\nB"
                               "<|user|>\nC /nothink<|assistant|>\n<think></think>");
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_chat_glm45_history_reasoning)
{
    struct st_chat_msg m[] = { msg("user", "Q1"), msg("assistant", "<think>\nr1\n</think>\n\nA1"),
                               msg("user", "Q2"), msg("assistant", "  A2 "),
                               msg("developer", "dropped") };
    struct st_buf out;

    /* reasoning before the last user message is dropped; after it, kept
     * and stripped; content stripped; an unknown role renders nothing */
    m[3].reasoning_content = st_str_c(" r2 ");
    ck_assert_int_eq(render(glm45_src, m, 5, NULL, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "[gMASK]<sop><|user|>\nQ1<|assistant|>\n<think></think>\nA1"
                               "<|user|>\nQ2<|assistant|>\n<think>r2</think>\nA2<|assistant|>");
    st_buf_fini(&out);
    /* think split from the content: the text before the first </think>
     * after its last <think>, the content after the last </think> */
    m[3] = msg("assistant", "x<think>a</think>b<think>\nR\n</think>\n\n C ");
    ck_assert_int_eq(render(glm45_src, m, 4, NULL, -1, &out, NULL), ST_OK);
    ck_assert_ptr_nonnull(strstr(out.data, "<|user|>\nQ2<|assistant|>\n<think>a</think>\nC"
                                           "<|assistant|>"));
    st_buf_fini(&out);
}
END_TEST

START_TEST(test_chat_glm45_tools_and_calls)
{
    static const char tools[] =
        "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":"
        "\"Weather in a city, \\u00e9t\xc3\xa9\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"}},"
        "\"required\":[\"city\"]}}}]";
    static const char want[] =
        "[gMASK]<sop><|system|>\n# Tools\n\nYou may call one or more functions to assist w"
        "ith the user query.\n\nYou are provided with function signatures within <tools></"
        "tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"ge"
        "t_weather\", \"description\": \"Weather in a city, \xc3\xa9t\xc3\xa9\", \"paramet"
        "ers\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, "
        "\"days\": {\"type\": \"integer\"}}, \"required\": [\"city\"]}}}\n"
        "</tools>\n\nFor each function call, output the function name and arguments within"
        " the following XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg"
        "_key>\n<arg_value>{arg-value-1}</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n"
        "<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call><|user|>\n"
        "Weather in Paris?<|assistant|>\n<think>Need the tool.</think>\n"
        "Let me check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
        "<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n"
        "<arg_key>opts</arg_key>\n<arg_value>{\"u\": \"\xc2\xb0" "C\", \"l\": [1, null, true]"
        "}</arg_value>\n</tool_call>\n<tool_call>noargs\n</tool_call><|observation|>\n"
        "<tool_response>\nsunny\n</tool_response>\n<tool_response>\n{\"ok\": true}\n"
        "</tool_response><|assistant|>";
    struct st_chat_msg m[] = { msg("user", "Weather in Paris?"), msg("assistant", "Let me check."),
                               msg("tool", "sunny"), msg("tool", "{\"ok\": true}") };
    struct st_err err = { 0 };
    struct st_buf out;

    m[1].reasoning_content = st_str_c("Need the tool.");
    /* arguments as OpenAI clients send them (a JSON string), and as an object */
    m[1].tool_calls = st_str_c(
        "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\",\\\"days\\\":3,\\\"opts\\\":{\\\"u\\\":"
        "\\\"\\u00b0C\\\",\\\"l\\\":[1,null,true]}}\"}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"noargs\",\"arguments\":{}}}]");
    m[2].tool_call_id = st_str_c("c1");
    ck_assert_int_eq(render(glm45_src, m, 4, tools, -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, want);
    st_buf_fini(&out);
    /* a tool message first opens <|observation|>; null content is "" */
    m[0] = msg("tool", NULL);
    m[0].content.ptr = NULL;
    ck_assert_int_eq(render(glm45_src, m, 1, "[]", -1, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "[gMASK]<sop><|observation|>\n<tool_response>\n\n"
                               "</tool_response><|assistant|>");
    st_buf_fini(&out);
    ck_assert_int_eq(render(glm45_src, m, 1, "{\"a\":1}", -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
    m[0] = msg("assistant", "x");
    m[0].tool_calls = st_str_c("[{");
    ck_assert_int_eq(render(glm45_src, m, 1, NULL, -1, &out, &err), ST_ERR_INVALID);
    st_buf_fini(&out);
}
END_TEST

/* continue_final (chat/continue.c): the prompt ends inside the assistant's
 * text, after its think block. */
START_TEST(test_chat_glm45_continue)
{
    struct st_chat_msg m[] = { msg("user", "U"), msg("assistant", "Hello, ") };
    struct st_chat_tmpl t;
    struct st_chat_req req = { .msgs = m, .n_msgs = 2, .continue_final = true,
                               .add_generation_prompt = true, .enable_thinking = -1 };
    struct st_buf out;

    st_chat_tmpl_init(&t, glm45_src, strlen(glm45_src), NULL, NULL, "glm");
    st_buf_init(&out);
    m[1].reasoning_content = st_str_c("R");
    ck_assert_int_eq(st_chat_render(&t, &req, &out, NULL), ST_OK);
    ck_assert_str_eq(out.data, "[gMASK]<sop><|user|>\nU<|assistant|>\n<think>R</think>\nHello, ");
    st_buf_fini(&out);
}
END_TEST

static Suite *chat_suite(void)
{
    Suite *s = suite_create("chat");
    TCase *tc = tcase_create("templates");
    TCase *js = tcase_create("json");

    tcase_add_test(tc, test_chat_recognizes_templates);
    tcase_add_test(tc, test_chat_qwen3_thinking_switch);
    tcase_add_test(tc, test_chat_qwen3_history_and_tools);
    tcase_add_test(tc, test_chat_qwen25_default_system_and_tools);
    tcase_add_test(tc, test_chat_llama31_dates_and_errors);
    tcase_add_test(tc, test_chat_qwen3coder_python_values);
    tcase_add_test(tc, test_chat_simple_renderers);
    tcase_add_test(tc, test_chat_errors);
    tcase_add_test(tc, test_chat_continue_final);
    tcase_add_test(tc, test_chat_mistral_v7);
    tcase_add_test(tc, test_chat_mistral_v11);
    tcase_add_test(tc, test_chat_mistral_scan_edges);
    tcase_add_test(tc, test_chat_glm45_turns_and_thinking);
    tcase_add_test(tc, test_chat_glm45_history_reasoning);
    tcase_add_test(tc, test_chat_glm45_tools_and_calls);
    tcase_add_test(tc, test_chat_glm45_continue);
    tcase_add_test(js, test_chat_tojson);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, js);
    return s;
}

int main(void)
{
    return support_run_suite(chat_suite(), CK_FORK);
}
