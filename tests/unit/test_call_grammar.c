/* test_call_grammar.c -- the tool-call grammar (include/strata/call_grammar.h):
 * byte by byte accept / refuse for each format, the think block, several
 * calls, end only after a whole call, the named function vs "required",
 * the "any object" fallback for a schema the compiler refuses; and every
 * text it accepts as complete parses (reply_parse.h) into calls of the
 * allowed tools.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/call_grammar.h"
#include "strata/reply_parse.h"
#include "support.h"

static const char tools[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"d\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
    "\"unit\":{\"enum\":[\"c\",\"f\"]}},\"required\":[\"city\"],"
    "\"additionalProperties\":false}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"grep\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"pattern\":\"^a\"}}}}}]";

static struct st_call_grammar *compile(enum st_call_format f, enum st_call_think think,
                                       bool parallel, const char *name)
{
    struct st_call_spec sp = { .format = f, .think = think, .parallel = parallel,
                               .tools_json = tools, .tools_len = strlen(tools), .name = name };
    struct st_call_grammar *g = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_call_grammar_compile(&sp, &g, NULL, &err) == ST_OK, "%s", err.msg);
    return g;
}

/* Feed 'text': every byte accepted, complete exactly at the end (and at
 * no earlier byte unless 'early' says at which lengths it may be). */
static void accepts(const struct st_call_grammar *g, const char *text, bool complete)
{
    struct st_call_state st;
    st_call_state_init(&st, g);
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(st_call_push(&st, (unsigned char)text[i]), "refused byte %zu of '%s'",
                      i, text);
    ck_assert_msg(st_call_complete(&st) == complete, "complete %d for '%s'",
                  (int)st_call_complete(&st), text);
}

/* 'text' is refused, at byte 'at' (SIZE_MAX: its last byte). */
static void refuses(const struct st_call_grammar *g, const char *text, size_t at)
{
    if (at == SIZE_MAX)
        at = strlen(text) - 1;
    struct st_call_state st;
    st_call_state_init(&st, g);
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        bool ok = st_call_push(&st, (unsigned char)text[i]);
        if (i < at)
            ck_assert_msg(ok, "refused byte %zu of '%s' (want %zu)", i, text, at);
        else {
            ck_assert_msg(!ok, "took byte %zu of '%s'", i, text);
            ck_assert(!st_call_valid(&st));
            return;
        }
    }
    ck_abort_msg("'%s' not refused", text);
}

/* Parse 'text' with the options of 'fmt'; the calls' names joined by ','
 * into names, the last call's arguments into args. */
struct got { char names[256]; char args[256]; int n; size_t content; };

static enum st_status on_ev(void *ctx, const struct st_reply_event *ev)
{
    struct got *g = ctx;
    size_t l;
    switch (ev->kind) {
    case ST_REPLY_TOOL_START:
        l = strlen(g->names);
        snprintf(g->names + l, sizeof(g->names) - l, "%s%.*s", g->n ? "," : "", (int)ev->len,
                 ev->text);
        g->args[0] = '\0';
        g->n++;
        break;
    case ST_REPLY_TOOL_ARGS:
        l = strlen(g->args);
        snprintf(g->args + l, sizeof(g->args) - l, "%.*s", (int)ev->len, ev->text);
        break;
    case ST_REPLY_CONTENT:
        g->content += ev->len;
        break;
    default:
        break;
    }
    return ST_OK;
}

static void parse(enum st_call_format f, bool open_think, const char *text, struct got *out)
{
    struct st_reply_opts o = { .reasoning = true, .tools = true, .in_reasoning = open_think,
                               .xml_calls = f == ST_CALL_XML,
                               .bare_json_calls = f == ST_CALL_LLAMA,
                               .mistral = f == ST_CALL_MISTRAL11 || f == ST_CALL_MISTRAL7 };
    struct st_reply_parser p;
    memset(out, 0, sizeof(*out));
    st_reply_parser_init(&p, &o);
    ck_assert_int_eq(st_reply_parser_feed(&p, text, strlen(text), on_ev, out), ST_OK);
    ck_assert_int_eq(st_reply_parser_finish(&p, on_ev, out), ST_OK);
    st_reply_parser_fini(&p);
}

#define W1 "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " \
           "{\"city\": \"Paris\"}}\n</tool_call>"
#define T1 "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"

START_TEST(test_call_grammar_hermes_named)
{
    struct st_call_grammar *g = compile(ST_CALL_HERMES, ST_CALL_THINK_NONE, true, "get_weather");
    ck_assert_int_eq(st_call_grammar_n_tools(g), 1);
    accepts(g, W1, true);
    accepts(g, "\n" W1, true);
    accepts(g, W1 "\n" W1 "\n", true);
    accepts(g, W1 "\n<tool_call>", false);
    /* never complete before the end of a call */
    const char *w = W1;
    for (size_t k = 0; k < strlen(w); k++) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%.*s", (int)k, w);
        accepts(g, buf, false);
    }
    refuses(g, "<tool_call>\n{\"name\": \"get_t", SIZE_MAX);
    refuses(g, "Sure! " W1, 0);
    refuses(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}", SIZE_MAX);   /* city */
    refuses(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\":  ", SIZE_MAX);   /* blank */
    refuses(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"x", SIZE_MAX);
    refuses(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 1", SIZE_MAX);
    refuses(g, W1 " h", SIZE_MAX);
    refuses(g, "<think>", 2);   /* no think block unless asked */
    struct got got;
    parse(ST_CALL_HERMES, false, W1 "\n" W1, &got);
    ck_assert_str_eq(got.names, "get_weather,get_weather");
    ck_assert_str_eq(got.args, "{\"city\": \"Paris\"}");
    ck_assert_int_eq((int)got.content, 0);
    st_call_grammar_unref(g);
}
END_TEST

START_TEST(test_call_grammar_required_and_single)
{
    struct st_call_grammar *g = compile(ST_CALL_HERMES, ST_CALL_THINK_NONE, false, NULL);
    ck_assert_int_eq(st_call_grammar_n_tools(g), 3);
    accepts(g, W1, true);
    accepts(g, T1, true);
    accepts(g, T1 "\n\n", true);
    refuses(g, T1 "\n<", SIZE_MAX);   /* parallel_tool_calls false: one call */
    refuses(g, "<tool_call>\n{\"name\": \"get_d", SIZE_MAX);
    refuses(g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"", SIZE_MAX);
    /* grep's schema uses "pattern": any object */
    accepts(g, "<tool_call>\n{\"name\": \"grep\", \"arguments\": "
               "{\"q\": 5, \"z\": [1]}}\n</tool_call>",
            true);
    refuses(g, "<tool_call>\n{\"name\": \"grep\", \"arguments\": [", SIZE_MAX);
    struct st_call_spec sp = { .format = ST_CALL_HERMES, .tools_json = tools,
                               .tools_len = strlen(tools), .name = NULL };
    struct st_call_grammar *h = NULL;
    int32_t fb = -1;
    ck_assert_int_eq(st_call_grammar_compile(&sp, &h, &fb, NULL), ST_OK);
    ck_assert_int_eq(fb, 1);
    st_call_grammar_unref(h);
    /* arguments are an object also when the schema does not say so: an
     * empty schema, properties without "type", a type that is not object */
    static const char loose[] =
        "[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"b\",\"parameters\":"
        "{\"properties\":{\"x\":{\"type\":\"integer\"}},\"required\":[\"x\"]}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"c\",\"parameters\":"
        "{\"type\":\"string\"}}}]";
    struct st_call_spec lsp = { .format = ST_CALL_HERMES, .parallel = true,
                                .tools_json = loose, .tools_len = strlen(loose) };
    fb = -1;
    ck_assert_int_eq(st_call_grammar_compile(&lsp, &h, &fb, NULL), ST_OK);
    ck_assert_int_eq(fb, 1);   /* c: its documents are strings */
    for (int i = 0; i < 3; i++) {
        const char *nm[] = { "a", "b", "c" };
        char head[64];
        snprintf(head, sizeof(head), "<tool_call>\n{\"name\": \"%s\", \"arguments\": ", nm[i]);
        const char *bad[] = { "1", "\"", "n", "[" };
        for (int j = 0; j < 4; j++) {
            char text[96];
            snprintf(text, sizeof(text), "%s%s", head, bad[j]);
            refuses(h, text, SIZE_MAX);
        }
    }
    accepts(h, "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>", true);
    accepts(h, "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": 3}}\n</tool_call>", true);
    refuses(h, "<tool_call>\n{\"name\": \"b\", \"arguments\": {}", SIZE_MAX);   /* x required */
    st_call_grammar_unref(h);
    sp.name = "nope";
    ck_assert_int_eq(st_call_grammar_compile(&sp, &h, NULL, NULL), ST_ERR_NOT_FOUND);
    ck_assert_ptr_null(h);
    sp.tools_json = "{}";
    sp.tools_len = 2;
    ck_assert_int_eq(st_call_grammar_compile(&sp, &h, NULL, NULL), ST_ERR_INVALID);
    st_call_grammar_unref(g);
}
END_TEST

START_TEST(test_call_grammar_think)
{
    struct st_call_grammar *g = compile(ST_CALL_HERMES, ST_CALL_THINK_OPTIONAL, true, NULL);
    const char *r = "<think>\nMaybe <b>x</b> </thin k>. Then get_time.\n</think>\n\n" T1;
    accepts(g, r, true);
    accepts(g, "<think>\n</think>\n\n", false);
    accepts(g, "<think>\nnot done", false);
    accepts(g, T1, true);   /* the think block is optional */
    refuses(g, "<think>\n</think>\n\nN", SIZE_MAX);
    refuses(g, "<think></think>" T1 "<th", SIZE_MAX);   /* only before the first */
    struct got got;
    parse(ST_CALL_HERMES, false, r, &got);
    ck_assert_str_eq(got.names, "get_time");
    ck_assert_int_eq((int)got.content, 0);
    st_call_grammar_unref(g);

    g = compile(ST_CALL_HERMES, ST_CALL_THINK_OPEN, true, "get_time");
    accepts(g, "okay </think>\n" T1, true);
    accepts(g, "<tool_call> is what I will write</think>" T1, true);
    refuses(g, "</think>\n<tool_call>\n{\"name\": \"get_w", SIZE_MAX);
    parse(ST_CALL_HERMES, true, "okay </think>\n" T1, &got);
    ck_assert_str_eq(got.names, "get_time");
    st_call_grammar_unref(g);
}
END_TEST

START_TEST(test_call_grammar_llama_mistral)
{
    struct got got;
    struct st_call_grammar *g = compile(ST_CALL_LLAMA, ST_CALL_THINK_NONE, true, NULL);
    const char *l = "{\"name\": \"get_weather\", \"parameters\": "
                    "{\"city\": \"Oslo\", \"unit\": \"c\"}}";
    accepts(g, l, true);
    refuses(g, "{\"name\": \"get_time\", \"parameters\": {}} {", SIZE_MAX);
    refuses(g, "{\"name\": \"get_weather\", \"parameters\": {\"unit\": \"k", SIZE_MAX);
    parse(ST_CALL_LLAMA, false, l, &got);
    ck_assert_str_eq(got.names, "get_weather");
    ck_assert_str_eq(got.args, "{\"city\": \"Oslo\", \"unit\": \"c\"}");
    st_call_grammar_unref(g);

    g = compile(ST_CALL_MISTRAL11, ST_CALL_THINK_OPTIONAL, true, NULL);
    const char *m = "[THINK]hmm [x][/THINK][TOOL_CALLS]get_time[ARGS]{}"
                    "[TOOL_CALLS]get_weather[ARGS]{\"city\":\"Rome\"}";
    accepts(g, m, true);
    accepts(g, "[TOOL_CALLS]get_time[ARGS]", false);
    refuses(g, "[TOOL_CALLS]get_time[ARGS] ", SIZE_MAX);
    refuses(g, "[TOOL_CALLS]get_time[ARGS]{}}", SIZE_MAX);
    parse(ST_CALL_MISTRAL11, false, m, &got);
    ck_assert_str_eq(got.names, "get_time,get_weather");
    ck_assert_str_eq(got.args, "{\"city\":\"Rome\"}");
    st_call_grammar_unref(g);

    g = compile(ST_CALL_MISTRAL7, ST_CALL_THINK_NONE, true, NULL);
    const char *v = "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}, "
                    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bern\"}}]";
    accepts(g, v, true);
    accepts(g, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}", false);
    accepts(g, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}} ]", true);
    refuses(g, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}]]", SIZE_MAX);
    parse(ST_CALL_MISTRAL7, false, v, &got);
    ck_assert_str_eq(got.names, "get_time,get_weather");
    st_call_grammar_unref(g);
}
END_TEST

/* Qwen3-Coder: the frame and the name are enforced, the body is free up
 * to "</function>". */
START_TEST(test_call_grammar_xml_frame)
{
    struct st_call_grammar *g = compile(ST_CALL_XML, ST_CALL_THINK_NONE, true, "get_weather");
    const char *x = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis <b>\n"
                    "</parameter>\n</function>\n</tool_call>";
    accepts(g, x, true);
    accepts(g, "<tool_call>\n<function=get_weather>\n</function", false);
    accepts(g, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>\n", true);
    refuses(g, "<tool_call>\n<function=get_t", SIZE_MAX);
    refuses(g, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>\no", SIZE_MAX);
    refuses(g, "<tool_call>\n<function=get_weather>\n</function>x", SIZE_MAX);
    struct got got;
    parse(ST_CALL_XML, false, x, &got);
    ck_assert_str_eq(got.names, "get_weather");
    ck_assert_str_eq(got.args, "{\"city\": \"Paris <b>\"}");
    st_call_grammar_unref(g);
}
END_TEST

static Suite *call_grammar_suite(void)
{
    Suite *s = suite_create("call_grammar");
    TCase *t = tcase_create("grammar");
    tcase_add_test(t, test_call_grammar_hermes_named);
    tcase_add_test(t, test_call_grammar_required_and_single);
    tcase_add_test(t, test_call_grammar_think);
    tcase_add_test(t, test_call_grammar_llama_mistral);
    tcase_add_test(t, test_call_grammar_xml_frame);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(call_grammar_suite(), CK_FORK);
}
