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
#include "strata/json_schema.h"
#include "strata/str.h"
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
    "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"pattern\":\"(?=a)\"}}}}}]";

#define LITERAL_ARGS(s) (s), strlen(s)

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
struct got { char names[256]; char args[4096]; int n; size_t content; };

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
                               .xml_calls = f == ST_CALL_XML, .glm = f == ST_CALL_GLM,
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
    /* grep's schema has a lookahead pattern (refused): any object */
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
    refuses(g, "<think>", 0);   /* [THINK] only */
    st_call_grammar_unref(g);

    /* Magistral: either spelling, each closed by its partner */
    struct st_call_spec esp = { .format = ST_CALL_MISTRAL11, .think = ST_CALL_THINK_OPTIONAL,
                                .parallel = true, .tools_json = tools,
                                .tools_len = strlen(tools), .think_either = true };
    ck_assert_int_eq(st_call_grammar_compile(&esp, &g, NULL, NULL), ST_OK);
    const char *e = "<think>hmm [/THINK] </think>\n[TOOL_CALLS]get_time[ARGS]{}";
    accepts(g, e, true);
    accepts(g, m, true);
    accepts(g, "[TOOL_CALLS]get_time[ARGS]{}", true);
    accepts(g, "<think>x[/THINK][TOOL_CALLS]get_time[ARGS]{}", false);   /* still thinking */
    refuses(g, "[THINK]x</think>[TOOL_CALLS]get_time[ARGS]{}[/THINK]x", SIZE_MAX);
    parse(ST_CALL_MISTRAL11, false, e, &got);
    ck_assert_str_eq(got.names, "get_time");
    ck_assert_int_eq((int)got.content, 0);
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

/* Qwen3-Coder: the parameter blocks are enforced (call_grammar_xml.c). */
START_TEST(test_call_grammar_xml_frame)
{
    struct st_call_grammar *g = compile(ST_CALL_XML, ST_CALL_THINK_NONE, true, "get_weather");
    const char *x = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis <b>\n"
                    "</parameter>\n</function>\n</tool_call>";
    accepts(g, x, true);
    accepts(g, "<tool_call>\n<function=get_weather>\n<parameter=city>\n\n</parameter>\n"
               "</function>\n</tool_call>\n", true);
    refuses(g, "<tool_call>\n<function=get_weather>\n</", SIZE_MAX);   /* city is required */
    refuses(g, "<tool_call>\n<function=get_t", SIZE_MAX);
    refuses(g, "<tool_call>\n<function=get_weather>\n<parameter=x", SIZE_MAX);
    refuses(g, "<tool_call>\n<function=get_weather>\n<parameter=unit>\nk", SIZE_MAX);
    struct got got;
    parse(ST_CALL_XML, false, x, &got);
    ck_assert_str_eq(got.names, "get_weather");
    ck_assert_str_eq(got.args, "{\"city\": \"Paris <b>\"}");
    st_call_grammar_unref(g);
}
END_TEST

/* Tools for the Qwen3-Coder body: typed, raw, enum, nested, nullable,
 * and one whose other names are allowed. */
#define P_EDIT "{\"type\":\"object\"," \
    "\"properties\":{\"path\":{\"type\":\"string\"},\"line\":{\"type\":\"integer\"}," \
    "\"mode\":{\"enum\":[\"ab\",\"a<b\"]},\"flags\":{\"type\":\"array\",\"items\":" \
    "{\"type\":\"boolean\"},\"maxItems\":3},\"opts\":{\"type\":\"object\",\"properties\":" \
    "{\"x\":{\"type\":\"number\"}},\"required\":[\"x\"],\"additionalProperties\":false}," \
    "\"note\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"path\",\"line\"]," \
    "\"additionalProperties\":false}"
#define P_FREE "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\"}}," \
    "\"required\":[\"n\"]}"
static const char xtools[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"edit\",\"parameters\":" P_EDIT "}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"free\",\"parameters\":" P_FREE "}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"bad\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"k\":{\"enum\":[1,2]}},\"required\":[\"k\"]}}}]";

static struct st_call_grammar *xcompile(const char *name, int32_t *fb)
{
    struct st_call_spec sp = { .format = ST_CALL_XML, .parallel = true, .tools_json = xtools,
                               .tools_len = strlen(xtools), .name = name };
    struct st_call_grammar *g = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_call_grammar_compile(&sp, &g, fb, &err) == ST_OK, "%s", err.msg);
    return g;
}

/* Parse an xml (or glm) reply with the tools' types; returns the calls. */
static void fparse(enum st_call_format f, const char *text, size_t n, struct got *out)
{
    struct st_reply_opts o = { .reasoning = true, .tools = true, .xml_calls = f == ST_CALL_XML,
                               .glm = f == ST_CALL_GLM, .tools_json = st_str_c(xtools) };
    struct st_reply_parser p;
    memset(out, 0, sizeof(*out));
    st_reply_parser_init(&p, &o);
    ck_assert_int_eq(st_reply_parser_feed(&p, text, n, on_ev, out), ST_OK);
    ck_assert_int_eq(st_reply_parser_finish(&p, on_ev, out), ST_OK);
    st_reply_parser_fini(&p);
}

static void xparse(const char *text, size_t n, struct got *out)
{
    fparse(ST_CALL_XML, text, n, out);
}

#define XE(body) "<tool_call>\n<function=edit>\n" body "</function>\n</tool_call>"
#define XH(body) "<tool_call>\n<function=edit>\n" body
#define XP(k, v) "<parameter=" k ">\n" v "\n</parameter>\n"

START_TEST(test_call_grammar_xml_params)
{
    int32_t fb = -1;
    struct st_call_grammar *g = xcompile("edit", &fb);
    ck_assert_int_eq(fb, 0);
    const char *ok = XE(XP("line", "12") XP("path", "/a b.py") XP("mode", "a<b")
                        XP("flags", "[true, false]") XP("opts", "{\"x\": -1.5e3}")
                        XP("note", "null"));
    accepts(g, ok, true);
    struct got got;
    xparse(ok, strlen(ok), &got);
    ck_assert_str_eq(got.names, "edit");
    ck_assert_str_eq(got.args, "{\"line\": 12, \"path\": \"/a b.py\", \"mode\": \"a<b\", "
                               "\"flags\": [true, false], \"opts\": {\"x\": -1.5e3}, "
                               "\"note\": \"null\"}");
    /* raw text keeps quotes, backslashes, newlines; "</parameter" without '>' */
    const char *raw = XE(XP("path", "a\"\\\n\n</paramete</parameterx\n") XP("line", "0"));
    accepts(g, raw, true);
    xparse(raw, strlen(raw), &got);
    ck_assert_str_eq(got.args, "{\"path\": \"a\\\"\\\\\\n\\n</paramete</parameterx\\n\", "
                               "\"line\": 0}");
    refuses(g, XH(XP("path", "x") "</"), SIZE_MAX);                   /* line is required */
    refuses(g, XH(XP("path", "x") XP("line", "1") "<parameter=p"), SIZE_MAX);   /* twice */
    refuses(g, XH("<parameter=z"), SIZE_MAX);                         /* not listed */
    refuses(g, XH("<parameter=line>\n1x"), SIZE_MAX);
    refuses(g, XH("<parameter=line>\n 1"), strlen(XH("<parameter=line>\n")));   /* no blank */
    refuses(g, XH("<parameter=line>\n1 "), SIZE_MAX);
    refuses(g, XH("<parameter=line>\n1.5"), strlen(XH("<parameter=line>\n1")));
    refuses(g, XH("<parameter=line>\n\"1\""), strlen(XH("<parameter=line>\n")));
    refuses(g, XH("<parameter=path>\na</parameter>"), SIZE_MAX);     /* cut by the parser */
    refuses(g, XH("<parameter=path>\n</parameter>"), SIZE_MAX);      /* the format's "\n" */
    refuses(g, XH("<parameter=mode>\nb"), SIZE_MAX);
    refuses(g, XH("<parameter=mode>\nab\n</parameter>x"), SIZE_MAX);
    refuses(g, XH("<parameter=mode>\na\n</parameter>"),   /* "a" is no value: held '\n' */
            strlen(XH("<parameter=mode>\na")));
    refuses(g, XH("<parameter=flags>\n[true, true, true, true"),
            strlen(XH("<parameter=flags>\n[true, true, true")));
    refuses(g, XH("<parameter=opts>\n{}"), SIZE_MAX);
    refuses(g, XH("<parameter=path>\nx\n</parameter>\n\n"), SIZE_MAX);   /* exact frame */
    refuses(g, XH("<parameter=path>\nx\n</tool_call>"), SIZE_MAX);   /* ends the body */
    accepts(g, XE(XP("path", "") XP("line", "-3")), true);
    xparse(XE(XP("path", "") XP("line", "-3")), strlen(XE(XP("path", "") XP("line", "-3"))),
           &got);
    ck_assert_str_eq(got.args, "{\"path\": \"\", \"line\": -3}");
    st_call_grammar_unref(g);

    /* additionalProperties absent: other names, raw values; "bad" cannot be
     * written (its required k takes no string as the parser types it) */
    g = xcompile(NULL, &fb);
    ck_assert_int_eq(fb, 1);
    const char *fr = "<tool_call>\n<function=free>\n" XP("n", "7") XP("any-thing", "x y")
                     "</function>\n</tool_call>";
    accepts(g, fr, true);
    xparse(fr, strlen(fr), &got);
    ck_assert_str_eq(got.args, "{\"n\": 7, \"any-thing\": \"x y\"}");
    refuses(g, "<tool_call>\n<function=free>\n" XP("n", "7") "<parameter=n>", SIZE_MAX);
    refuses(g, "<tool_call>\n<function=free>\n<parameter=a ", SIZE_MAX);
    accepts(g, "<tool_call>\n<function=bad>\n<parameter=k>\n1\n</parameter>\n</function>\n"
               "</tool_call>", true);   /* the fallback: a free body */
    st_call_grammar_unref(g);
}
END_TEST

/* The mask's fast paths (st_call_free_text: any token without *stop;
 * st_call_args in a string: any plain token without '<') hold only where
 * the grammar takes such a token: never while part of "</tool_call>" or
 * "</parameter>" is matched in a value. */
static void fast_path_sound(const struct st_call_grammar *g, const char *pre, const char *tok)
{
    struct st_call_state st, c;
    st_call_state_init(&st, g);
    ck_assert(st_call_feed(&st, pre, strlen(pre)));
    unsigned char stop = 0;
    bool free_text = st_call_free_text(&st, &stop) && !strchr(tok, stop);
    const struct st_json_schema_state *a = st_call_args(&st);
    bool in_str = a && st_json_schema_in_string(a) && !strpbrk(tok, "<\"\\\n");
    st_call_state_copy(&c, &st);
    bool took = st_call_feed(&c, tok, strlen(tok));
    ck_assert_msg(took || !(free_text || in_str), "fast path lets '%s' after '%s'", tok, pre);
}

START_TEST(test_call_grammar_xml_fast_paths)
{
    static const char ht[] = "[{\"type\":\"function\",\"function\":{\"name\":\"h\","
                             "\"parameters\":{\"type\":\"object\",\"properties\":{\"s\":"
                             "{\"type\":\"string\"},\"o\":{\"type\":\"object\"}}}}}]";
    struct st_call_spec sp = { .format = ST_CALL_XML, .tools_json = ht, .tools_len = strlen(ht),
                               .name = "h" };
    struct st_call_grammar *g = NULL;
    ck_assert_int_eq(st_call_grammar_compile(&sp, &g, NULL, NULL), ST_OK);
#define HH(body) "<tool_call>\n<function=h>\n" body
    fast_path_sound(g, HH("<parameter=s>\nab</t"), "ool_call>");
    fast_path_sound(g, HH("<parameter=s>\nab\n</t"), "ool_call>");
    fast_path_sound(g, HH("<parameter=o>\n{\"y\": \"</param"), "eter>");
    fast_path_sound(g, HH("<parameter=o>\n{\"y\": \"</t"), "ool_call>");
    fast_path_sound(g, HH("<parameter=s>\nab</t"), "able>");   /* and still taken */
    accepts(g, HH("<parameter=s>\n</table></tool_cal\n</parameter>\n"), false);
#undef HH
    st_call_grammar_unref(g);
}
END_TEST

/* The oracle: random texts the validator accepts (guided towards the
 * literals so that calls complete), every one of which (1) never reaches
 * a dead end (some byte is taken, or it is complete) and (2) once
 * complete parses into calls whose arguments the tool's schema (compiled
 * on its own) accepts as a whole document. */
static const char *const snippets[] = {
    "\n</parameter>\n", "</function>", "\n</tool_call>", "<tool_call>\n<function=", "edit",
    "free", ">\n", "<parameter=", "path", "line", "mode", "flags", "opts", "note", "n", "ab",
    "a<b", "[true]", "{\"x\": 1}", "12", "-0.5", "\"", "\\", "\n", "</parameter>", "<",
    "</tool_call>", "\n</function>",
};

static bool args_valid(const char *name, const char *args)
{
    const char *params = strcmp(name, "edit") == 0 ? P_EDIT : P_FREE;
    struct st_json_schema *sc = NULL;
    ck_assert_int_eq(st_json_schema_compile(params, strlen(params), &sc, NULL), ST_OK);
    struct st_json_schema_state j;
    st_json_schema_state_init(&j, sc);
    bool ok = st_json_schema_feed(&j, args, strlen(args)) && st_json_schema_complete(&j);
    st_json_schema_unref(sc);
    return ok;
}

/* Random walks over grammar g (format f), guided by 'sn' snippets. */
static void oracle(const struct st_call_grammar *g, enum st_call_format f,
                   const char *const *sn_list, size_t n_sn, const char *fallback)
{
    uint64_t seed = 12345;
    int completed = 0;
    for (int run = 0; run < 400; run++) {
        struct st_call_state st;
        st_call_state_init(&st, g);
        char text[1024];
        size_t n = 0;
        while (n < sizeof(text) - 32) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            if (st_call_complete(&st) && (seed >> 60) < 6)
                break;   /* end here now and then */
            bool took = false;
            if ((seed >> 62) != 0) {   /* a snippet, as far as it is taken */
                const char *sn = sn_list[(seed >> 33) % n_sn];
                for (size_t k = 0; sn[k] && n < sizeof(text) - 32; k++) {
                    struct st_call_state c;
                    st_call_state_copy(&c, &st);
                    if (!st_call_push(&c, (unsigned char)sn[k]))
                        break;
                    st_call_state_copy(&st, &c);
                    text[n++] = sn[k];
                    took = true;
                }
            }
            if (took)
                continue;
            unsigned char ok[256];
            int n_ok = 0;
            for (int b = 0; b < 256; b++) {
                struct st_call_state c;
                st_call_state_copy(&c, &st);
                if (st_call_push(&c, (unsigned char)b))
                    ok[n_ok++] = (unsigned char)b;
            }
            ck_assert_msg(n_ok > 0 || st_call_complete(&st), "dead end after '%.*s'", (int)n,
                          text);
            if (n_ok == 0)
                break;
            unsigned char b = ok[(seed >> 20) % (uint64_t)n_ok];
            ck_assert(st_call_push(&st, b));
            text[n++] = (char)b;
        }
        if (!st_call_complete(&st))
            continue;
        if (fallback && memmem(text, n, fallback, strlen(fallback)))
            continue;   /* the fallback's free body need not parse */
        completed++;
        struct got got;
        fparse(f, text, n, &got);
        ck_assert_msg(got.n >= 1 && got.content == 0, "not calls: '%.*s'", (int)n, text);
        /* the last call's arguments against its schema */
        const char *last = strrchr(got.names, ',');
        last = last ? last + 1 : got.names;
        if (strcmp(last, "bad") != 0)
            ck_assert_msg(args_valid(last, got.args), "invalid arguments %s for '%.*s'",
                          got.args, (int)n, text);
    }
    ck_assert_int_gt(completed, 50);
}

START_TEST(test_call_grammar_xml_oracle)
{
    struct st_call_grammar *g = xcompile(NULL, NULL);
    oracle(g, ST_CALL_XML, snippets, sizeof(snippets) / sizeof(*snippets), "<function=bad>");
    st_call_grammar_unref(g);
}
END_TEST

/* ---- GLM-4.5 (<arg_key>/<arg_value> pairs; call_grammar_xml.c, GLM tags) - */

static struct st_call_grammar *gcompile(const char *name, enum st_call_think think,
                                        int32_t *fb)
{
    struct st_call_spec sp = { .format = ST_CALL_GLM, .think = think, .parallel = true,
                               .tools_json = xtools, .tools_len = strlen(xtools), .name = name };
    struct st_call_grammar *g = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_call_grammar_compile(&sp, &g, fb, &err) == ST_OK, "%s", err.msg);
    return g;
}

#define GE(body) "<tool_call>edit\n" body "</tool_call>"
#define GH(body) "<tool_call>edit\n" body
#define GP(k, v) "<arg_key>" k "</arg_key>\n<arg_value>" v "</arg_value>\n"

/* The frame as GLM-4.5's template writes calls (chat/formats/glm45.c): an optional
 * think block, "<tool_call>NAME\n", the pairs, "</tool_call>", blanks
 * between calls. */
START_TEST(test_call_grammar_glm_frame)
{
    struct st_call_grammar *g = gcompile(NULL, ST_CALL_THINK_OPTIONAL, NULL);
    const char *one = GE(GP("path", "/a.py") GP("line", "3"));
    accepts(g, one, true);
    accepts(g, "\n<think>plan</think>\n" GE(GP("path", "x") GP("line", "1")) "\n"
               "<tool_call>free\n" GP("n", "2") "</tool_call>", true);
    accepts(g, "<tool_call>free\n" GP("n", "2") "</tool_call>\n<tool_call>", false);
    for (size_t k = 0; k < strlen(one); k++) {   /* never complete inside a call */
        char buf[256];
        snprintf(buf, sizeof(buf), "%.*s", (int)k, one);
        accepts(g, buf, false);
    }
    refuses(g, "<tool_call>edi ", SIZE_MAX);
    refuses(g, "<tool_call>edit ", SIZE_MAX);       /* the name ends with "\n" */
    refuses(g, "Sure. " GE(GP("path", "x") GP("line", "1")), 0);
    st_call_grammar_unref(g);
    /* named, one call */
    struct st_call_spec sp = { .format = ST_CALL_GLM, .tools_json = xtools,
                               .tools_len = strlen(xtools), .name = "free" };
    ck_assert_int_eq(st_call_grammar_compile(&sp, &g, NULL, NULL), ST_OK);
    ck_assert_int_eq(st_call_grammar_n_tools(g), 1);
    accepts(g, "<tool_call>free\n" GP("n", "2") "</tool_call>\n\n", true);
    refuses(g, "<tool_call>free\n" GP("n", "2") "</tool_call><", SIZE_MAX);
    refuses(g, "<tool_call>e", SIZE_MAX);
    st_call_grammar_unref(g);
}
END_TEST

START_TEST(test_call_grammar_glm_params)
{
    int32_t fb = -1;
    struct st_call_grammar *g = gcompile("edit", ST_CALL_THINK_NONE, &fb);
    ck_assert_int_eq(fb, 0);
    /* string types raw (note's list holds "string"), the rest JSON */
    const char *ok = GE(GP("line", "12") GP("path", "/a b.py") GP("mode", "\"a<b\"")
                        GP("flags", "[true, false]") GP("opts", "{\"x\": -1.5e3}")
                        GP("note", "null"));
    accepts(g, ok, true);
    struct got got;
    fparse(ST_CALL_GLM, ok, strlen(ok), &got);
    ck_assert_str_eq(got.names, "edit");
    ck_assert_str_eq(got.args, "{\"line\": 12, \"path\": \"/a b.py\", \"mode\": \"a<b\", "
                               "\"flags\": [true, false], \"opts\": {\"x\": -1.5e3}, "
                               "\"note\": \"null\"}");
    /* raw text is exact: quotes, backslashes, newlines, blanks at the ends,
     * "</arg_value" without '>' */
    const char *raw = GE(GP("path", " a\"\\\n</arg_valu</arg_valuex\n") GP("line", "0"));
    accepts(g, raw, true);
    fparse(ST_CALL_GLM, raw, strlen(raw), &got);
    ck_assert_str_eq(got.args, "{\"path\": \" a\\\"\\\\\\n</arg_valu</arg_valuex\\n\", "
                               "\"line\": 0}");
    refuses(g, GH(GP("path", "x") "</"), SIZE_MAX);                   /* line is required */
    refuses(g, GH(GP("path", "x") GP("line", "1") "<arg_key>p"), SIZE_MAX);   /* twice */
    refuses(g, GH("<arg_key>z"), SIZE_MAX);                           /* not listed */
    refuses(g, GH("<arg_key>line</arg_key>\n<arg_value>1x"), SIZE_MAX);
    refuses(g, GH("<arg_key>line</arg_key>\n<arg_value> 1"),              /* no blank */
            strlen(GH("<arg_key>line</arg_key>\n<arg_value>")));
    refuses(g, GH("<arg_key>line</arg_key>\n<arg_value>1 "), SIZE_MAX);
    refuses(g, GH("<arg_key>line</arg_key>\n<arg_value>\"1\""), strlen(GH("<arg_key>line"
                                                                      "</arg_key>\n<arg_value>")));
    refuses(g, GH("<arg_key>mode</arg_key>\n<arg_value>a"), SIZE_MAX);   /* JSON: quoted */
    refuses(g, GH("<arg_key>mode</arg_key>\n<arg_value>\"b"), SIZE_MAX);
    refuses(g, GH("<arg_key>opts</arg_key>\n<arg_value>{}"), SIZE_MAX);   /* x required */
    refuses(g, GH("<arg_key>path</arg_key>\n<arg_value>a</tool_call>"), SIZE_MAX);
    refuses(g, GH(GP("path", "x") "\n"), SIZE_MAX);                   /* exact frame */
    refuses(g, GH("<arg_key>path</arg_key><"), SIZE_MAX);
    accepts(g, GE(GP("path", "") GP("line", "-3")), true);
    fparse(ST_CALL_GLM, GE(GP("path", "") GP("line", "-3")), strlen(GE(GP("path", "")
           GP("line", "-3"))), &got);
    ck_assert_str_eq(got.args, "{\"path\": \"\", \"line\": -3}");
    st_call_grammar_unref(g);

    /* additionalProperties absent: other names, JSON values (the parser
     * reads a value with no type as JSON); "bad"'s k has no type: JSON */
    g = gcompile(NULL, ST_CALL_THINK_NONE, &fb);
    ck_assert_int_eq(fb, 0);
    const char *fr = "<tool_call>free\n" GP("n", "7") GP("any-thing", "\"x y\"")
                     GP("m", "[1]") "</tool_call>";
    accepts(g, fr, true);
    fparse(ST_CALL_GLM, fr, strlen(fr), &got);
    ck_assert_str_eq(got.args, "{\"n\": 7, \"any-thing\": \"x y\", \"m\": [1]}");
    refuses(g, "<tool_call>free\n" GP("n", "7") "<arg_key>n<", SIZE_MAX);
    refuses(g, "<tool_call>free\n<arg_key>a ", SIZE_MAX);
    refuses(g, "<tool_call>free\n<arg_key>m</arg_key>\n<arg_value>[\"a</arg_value>", SIZE_MAX);
    refuses(g, "<tool_call>free\n<arg_key>a</arg_key>\n<arg_value>x", SIZE_MAX);
    accepts(g, "<tool_call>bad\n" GP("k", "2") "</tool_call>", true);
    refuses(g, "<tool_call>bad\n" GP("k", "3"), strlen("<tool_call>bad\n<arg_key>k</arg_key>\n"
                                                     "<arg_value>"));
    st_call_grammar_unref(g);
}
END_TEST

START_TEST(test_call_grammar_glm_fast_paths)
{
    static const char ht[] = "[{\"type\":\"function\",\"function\":{\"name\":\"h\","
                             "\"parameters\":{\"type\":\"object\",\"properties\":{\"s\":"
                             "{\"type\":\"string\"},\"o\":{\"type\":\"object\"}}}}}]";
    struct st_call_spec sp = { .format = ST_CALL_GLM, .tools_json = ht, .tools_len = strlen(ht),
                               .name = "h" };
    struct st_call_grammar *g = NULL;
    ck_assert_int_eq(st_call_grammar_compile(&sp, &g, NULL, NULL), ST_OK);
#define HH(body) "<tool_call>h\n" body
    fast_path_sound(g, HH("<arg_key>s</arg_key>\n<arg_value>ab</t"), "ool_call>");
    fast_path_sound(g, HH("<arg_key>s</arg_key>\n<arg_value>ab</arg"), "_value>");
    fast_path_sound(g, HH("<arg_key>o</arg_key>\n<arg_value>{\"y\": \"</arg_v"), "alue>");
    fast_path_sound(g, HH("<arg_key>o</arg_key>\n<arg_value>{\"y\": \"</t"), "ool_call>");
    fast_path_sound(g, HH("<arg_key>s</arg_key>\n<arg_value>ab</t"), "able>");
    accepts(g, HH("<arg_key>s</arg_key>\n<arg_value></table></tool_cal</arg_value>\n"), false);
    struct st_call_state st;
    st_call_state_init(&st, g);
    ck_assert(st_call_feed(&st, LITERAL_ARGS(HH("<arg_key>o</arg_key>\n<arg_value>{"))));
    ck_assert(st_call_lt_matters(&st));
#undef HH
    st_call_grammar_unref(g);
}
END_TEST

static const char *const gsnippets[] = {
    "</arg_value>\n", "</tool_call>", "<tool_call>", "edit", "free", "bad", "\n", "<arg_key>",
    "</arg_key>\n<arg_value>", "path", "line", "mode", "flags", "opts", "note", "n", "k", "ab",
    "\"a<b\"", "[true]", "{\"x\": 1}", "12", "-0.5", "\"", "\\", "</arg_value>", "<",
    "</arg_valu", "null",
};

START_TEST(test_call_grammar_glm_oracle)
{
    struct st_call_grammar *g = gcompile(NULL, ST_CALL_THINK_NONE, NULL);
    oracle(g, ST_CALL_GLM, gsnippets, sizeof(gsnippets) / sizeof(*gsnippets), NULL);
    st_call_grammar_unref(g);
}
END_TEST

/* A tool whose schema the compiler refuses (here 'not') falls back to "any
 * object": its keys are other names, and GLM's other names take JSON
 * values. The parser still types them by the request's tools, so a
 * string-typed key would be forced into quotes that it keeps ("\"abc\"").
 * Such a tool gets a free body; one whose keys are all JSON-typed keeps
 * the pairs. Also a name the parser cannot read back is not callable. */
START_TEST(test_call_grammar_glm_fallback_and_names)
{
    static const char ft[] =
        "[{\"type\":\"function\",\"function\":{\"name\":\"find\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"not\":"
        "{\"const\":\"\"}},\"n\":{\"type\":\"integer\"}}}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"count\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"not\":"
        "{\"const\":0}}}}}}]";
    struct st_call_spec sp = { .format = ST_CALL_GLM, .parallel = true, .tools_json = ft,
                               .tools_len = strlen(ft) };
    struct st_call_grammar *g = NULL;
    int32_t fb = 0;
    ck_assert_int_eq(st_call_grammar_compile(&sp, &g, &fb, NULL), ST_OK);
    ck_assert_int_eq(fb, 2);
    static const char text[] = "<tool_call>find\n<arg_key>q</arg_key>\n<arg_value>abc"
                               "</arg_value>\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n"
                               "</tool_call>";
    accepts(g, text, true);   /* as the template writes it: the string raw */
    struct st_reply_opts o = { .reasoning = true, .tools = true, .glm = true,
                               .tools_json = st_str_c(ft) };
    struct st_reply_parser p;
    struct got got = { 0 };
    st_reply_parser_init(&p, &o);
    ck_assert_int_eq(st_reply_parser_feed(&p, LITERAL_ARGS(text), on_ev, &got), ST_OK);
    ck_assert_int_eq(st_reply_parser_finish(&p, on_ev, &got), ST_OK);
    st_reply_parser_fini(&p);
    ck_assert_str_eq(got.args, "{\"q\": \"abc\", \"n\": 3}");
    /* JSON-typed keys only: the pairs stay, their values JSON text */
    accepts(g, "<tool_call>count\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n"
               "</tool_call>", true);
    refuses(g, "<tool_call>count\n<arg_key>n</arg_key>\n<arg_value>x", SIZE_MAX);
    st_call_grammar_unref(g);
    /* a name starting with '{' cannot be written: the parser would read
     * "<tool_call>{f}\n..." as a JSON call and give it back as content */
    static const char bt[] = "[{\"type\":\"function\",\"function\":{\"name\":\"{f}\"}}]";
    struct st_call_spec bs = { .format = ST_CALL_GLM, .tools_json = bt, .tools_len = strlen(bt),
                               .name = "{f}" };
    ck_assert_int_eq(st_call_grammar_compile(&bs, &g, NULL, NULL), ST_ERR_NOT_FOUND);
    ck_assert_ptr_null(g);
    bs.format = ST_CALL_XML;   /* "<function={f}>" is fine */
    ck_assert_int_eq(st_call_grammar_compile(&bs, &g, NULL, NULL), ST_OK);
    st_call_grammar_unref(g);
}
END_TEST

/* A raw value's pattern that only the parser's own tags would complete
 * ("</tool_call>", the value close): the body cannot write them in a value,
 * so such a tool gets the free body, never a dead end. */
static void not_stuck(enum st_call_format f, const char *param, const char *prefix)
{
    char tl[512];
    snprintf(tl, sizeof(tl), "[{\"type\":\"function\",\"function\":{\"name\":\"t\","
             "\"parameters\":{\"type\":\"object\",\"properties\":{\"p\":%s}}}}]", param);
    struct st_call_spec sp = { .format = f, .tools_json = tl, .tools_len = strlen(tl) };
    struct st_call_grammar *g = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_call_grammar_compile(&sp, &g, NULL, &err) == ST_OK, "%s", err.msg);
    struct st_call_state st, c;
    st_call_state_init(&st, g);
    ck_assert_msg(st_call_feed(&st, prefix, strlen(prefix)), "refused '%s'", prefix);
    bool some = st_call_complete(&st);
    for (int b = 0; b < 256 && !some; b++) {
        c = st;
        some = st_call_push(&c, (unsigned char)b);
    }
    ck_assert_msg(some, "'%s' with %s: a dead end", prefix, param);
    st_call_grammar_unref(g);
}

START_TEST(test_call_grammar_pattern_tags)
{
    not_stuck(ST_CALL_XML, "{\"type\":\"string\",\"pattern\":\"^a</tool_call>$\"}",
              "<tool_call>\n<function=t>\n<parameter=p>\na</tool_call");
    not_stuck(ST_CALL_XML, "{\"type\":\"string\",\"pattern\":\"^</parameter>\"}",
              "<tool_call>\n<function=t>\n<parameter=p>\n</parameter");
    not_stuck(ST_CALL_XML, "{\"type\":\"string\",\"pattern\":\"^<[a-z_/]*>$\","
              "\"maxLength\":12}", "<tool_call>\n<function=t>\n<parameter=p>\n</tool_call");
    not_stuck(ST_CALL_GLM, "{\"type\":\"string\",\"pattern\":\"^a</arg_value>b\"}",
              "<tool_call>t\n<arg_key>p</arg_key>\n<arg_value>a</arg_value");
    not_stuck(ST_CALL_GLM, "{\"type\":\"string\",\"pattern\":\"</tool_call>\"}",
              "<tool_call>t\n<arg_key>p</arg_key>\n<arg_value>x</tool_call");
    /* a pattern that other text can complete keeps the grammar */
    static const char tl[] = "[{\"type\":\"function\",\"function\":{\"name\":\"t\","
                             "\"parameters\":{\"type\":\"object\",\"properties\":{\"p\":"
                             "{\"type\":\"string\",\"pattern\":\"^<[a-z_/]*>$\"}}}}}]";
    struct st_call_spec sp = { .format = ST_CALL_XML, .tools_json = tl, .tools_len = strlen(tl) };
    struct st_call_grammar *g = NULL;
    int32_t fb = -1;
    ck_assert_int_eq(st_call_grammar_compile(&sp, &g, &fb, NULL), ST_OK);
    ck_assert_int_eq(fb, 0);
    refuses(g, "<tool_call>\n<function=t>\n<parameter=p>\n</tool_call>", SIZE_MAX);
    accepts(g, "<tool_call>\n<function=t>\n<parameter=p>\n</tool_callx>\n</parameter>\n"
               "</function>\n</tool_call>", true);
    st_call_grammar_unref(g);
}
END_TEST

static Suite *call_grammar_suite(void)
{
    Suite *s = suite_create("call_grammar");
    TCase *t = tcase_create("grammar");
    tcase_set_timeout(t, 60);   /* the oracle's walks, under sanitizers on a loaded machine */
    tcase_add_test(t, test_call_grammar_hermes_named);
    tcase_add_test(t, test_call_grammar_required_and_single);
    tcase_add_test(t, test_call_grammar_think);
    tcase_add_test(t, test_call_grammar_llama_mistral);
    tcase_add_test(t, test_call_grammar_xml_frame);
    tcase_add_test(t, test_call_grammar_xml_params);
    tcase_add_test(t, test_call_grammar_xml_oracle);
    tcase_add_test(t, test_call_grammar_xml_fast_paths);
    tcase_add_test(t, test_call_grammar_glm_frame);
    tcase_add_test(t, test_call_grammar_glm_params);
    tcase_add_test(t, test_call_grammar_glm_fast_paths);
    tcase_add_test(t, test_call_grammar_glm_oracle);
    tcase_add_test(t, test_call_grammar_glm_fallback_and_names);
    tcase_add_test(t, test_call_grammar_pattern_tags);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(call_grammar_suite(), CK_FORK);
}
