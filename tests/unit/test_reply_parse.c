/* test_reply_parse.c -- the incremental reply parser (strata/reply_parse.h):
 * every split of a reply gives what the whole reply gives; reasoning,
 * content and tool calls come apart as docs/API.md says; malformed and
 * unterminated calls come back as content; the detokenizer renders the
 * markers (USER_DEFINED tokens) with special=false. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/chat.h"
#include "strata/detok.h"
#include "strata/reply_parse.h"
#include "strata/tokenizer.h"
#include "support.h"

#define MAX_CALLS 8
#define LIT(s) (s), (sizeof(s) - 1)

/* What a parse produced, plus a check that events came in a sane order. */
struct result {
    struct st_buf content, reasoning;
    struct st_buf name[MAX_CALLS], args[MAX_CALLS];
    int32_t n_calls;
    bool in_call;          /* between START and END */
    int n_events;
    bool order_ok;
};

static void result_init(struct result *r)
{
    memset(r, 0, sizeof(*r));
    st_buf_init(&r->content);
    st_buf_init(&r->reasoning);
    ck_assert_int_eq(st_buf_append(&r->content, "", 0), ST_OK);
    ck_assert_int_eq(st_buf_append(&r->reasoning, "", 0), ST_OK);
    for (int i = 0; i < MAX_CALLS; i++) {
        st_buf_init(&r->name[i]);
        st_buf_init(&r->args[i]);
    }
    r->order_ok = true;
}

static void result_fini(struct result *r)
{
    st_buf_fini(&r->content);
    st_buf_fini(&r->reasoning);
    for (int i = 0; i < MAX_CALLS; i++) {
        st_buf_fini(&r->name[i]);
        st_buf_fini(&r->args[i]);
    }
}

static enum st_status collect(void *ctx, const struct st_reply_event *ev)
{
    struct result *r = ctx;
    r->n_events++;
    switch (ev->kind) {
    case ST_REPLY_CONTENT:
        r->order_ok &= !r->in_call && ev->len > 0;
        return st_buf_append(&r->content, ev->text, ev->len);
    case ST_REPLY_REASONING:
        r->order_ok &= !r->in_call && ev->len > 0 && r->content.len == 0 && r->n_calls == 0;
        return st_buf_append(&r->reasoning, ev->text, ev->len);
    case ST_REPLY_TOOL_START:
        r->order_ok &= !r->in_call && ev->index == r->n_calls && ev->index < MAX_CALLS;
        r->in_call = true;
        return st_buf_append(&r->name[r->n_calls], ev->text, ev->len);
    case ST_REPLY_TOOL_ARGS:
        r->order_ok &= r->in_call && ev->index == r->n_calls;
        return st_buf_append(&r->args[r->n_calls], ev->text, ev->len);
    case ST_REPLY_TOOL_END:
        r->order_ok &= r->in_call && ev->index == r->n_calls;
        r->in_call = false;
        r->n_calls++;
        return ST_OK;
    }
    return ST_ERR_INTERNAL;
}

/* Parse 'text' fed at the given cut points (ascending offsets). */
static void parse_cuts(const struct st_reply_opts *o, const char *text, const size_t *cuts,
                       size_t n_cuts, struct result *r)
{
    struct st_reply_parser p;
    size_t len = strlen(text), at = 0;
    result_init(r);
    st_reply_parser_init(&p, o);
    for (size_t i = 0; i <= n_cuts; i++) {
        size_t end = i < n_cuts ? cuts[i] : len;
        ck_assert_int_eq(st_reply_parser_feed(&p, text + at, end - at, collect, r), ST_OK);
        at = end;
    }
    ck_assert_int_eq(st_reply_parser_finish(&p, collect, r), ST_OK);
    st_reply_parser_fini(&p);
    ck_assert(r->order_ok);
    ck_assert(!r->in_call);
}

static void same(const struct result *a, const struct result *b, const char *what)
{
    ck_assert_msg(strcmp(a->content.data, b->content.data) == 0, "%s: content '%s' vs '%s'",
                  what, a->content.data, b->content.data);
    ck_assert_msg(strcmp(a->reasoning.data, b->reasoning.data) == 0, "%s: reasoning", what);
    ck_assert_int_eq(a->n_calls, b->n_calls);
    for (int32_t i = 0; i < a->n_calls; i++) {
        ck_assert_msg(a->name[i].len == b->name[i].len &&
                      memcmp(a->name[i].data, b->name[i].data, a->name[i].len) == 0, "%s", what);
        ck_assert_msg(a->args[i].len == b->args[i].len &&
                      memcmp(a->args[i].data, b->args[i].data, a->args[i].len) == 0, "%s", what);
    }
}

/* Parse whole, then at every single cut, every pair of cuts (short texts)
 * and byte by byte: all must agree. Returns the whole parse in *whole. */
static void parse_all_splits(const struct st_reply_opts *o, const char *text,
                             struct result *whole)
{
    size_t len = strlen(text);
    struct result r;
    parse_cuts(o, text, NULL, 0, whole);
    for (size_t i = 0; i <= len; i++) {
        parse_cuts(o, text, &i, 1, &r);
        same(whole, &r, "one cut");
        result_fini(&r);
        for (size_t j = i; len <= 160 && j <= len; j++) {
            size_t cuts[2] = { i, j };
            parse_cuts(o, text, cuts, 2, &r);
            same(whole, &r, "two cuts");
            result_fini(&r);
        }
    }
    size_t *every = malloc((len + 1) * sizeof(*every));
    ck_assert_ptr_nonnull(every);
    for (size_t i = 0; i < len; i++)
        every[i] = i;
    parse_cuts(o, text, every, len, &r);
    same(whole, &r, "byte by byte");
    result_fini(&r);
    free(every);
}

static const struct st_reply_opts all_on = { true, true, false, 0, false, false, { NULL, 0 },
                                             false, false, false };

START_TEST(test_reply_parse_reasoning_then_content)
{
    struct result r;
    parse_all_splits(&all_on, "<think>\nThe user greets me.\nBe brief.\n</think>\n\nHello there!",
                     &r);
    ck_assert_str_eq(r.reasoning.data, "The user greets me.\nBe brief.");
    ck_assert_str_eq(r.content.data, "Hello there!");
    ck_assert_int_eq(r.n_calls, 0);
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_reasoning_only)
{
    struct result r;
    parse_all_splits(&all_on, "  <think>\nthinking hard </think>\n\n", &r);
    ck_assert_str_eq(r.reasoning.data, "thinking hard");
    ck_assert_str_eq(r.content.data, "");
    result_fini(&r);
    /* unclosed at the end (max_tokens): still reasoning */
    parse_all_splits(&all_on, "<think>\nstill going \n", &r);
    ck_assert_str_eq(r.reasoning.data, "still going");
    ck_assert_str_eq(r.content.data, "");
    result_fini(&r);
    /* the empty think block of enable_thinking=false: nothing at all */
    parse_all_splits(&all_on, "<think>\n\n</think>\n\nok", &r);
    ck_assert_str_eq(r.reasoning.data, "");
    ck_assert_str_eq(r.content.data, "ok");
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_lone_close_think)
{
    /* the prompt opened <think>: text before a lone </think> is reasoning */
    struct st_reply_opts o = { true, true, true, 0, false, false, { NULL, 0 },
                               false, false, false };
    struct result r;
    parse_all_splits(&o, "step one\nstep two\n</think>\n\nAnswer: 4", &r);
    ck_assert_str_eq(r.reasoning.data, "step one\nstep two");
    ck_assert_str_eq(r.content.data, "Answer: 4");
    result_fini(&r);
    /* without it, a lone </think> is content; <think> later is content */
    parse_all_splits(&all_on, "a</think>b <think>c", &r);
    ck_assert_str_eq(r.reasoning.data, "");
    ck_assert_str_eq(r.content.data, "a</think>b <think>c");
    result_fini(&r);
    ck_assert(st_reply_prompt_opens_think(LIT("<|im_start|>assistant\n<think>\n")));
    ck_assert(!st_reply_prompt_opens_think(LIT("assistant\n<think>\n\n</think>\n\n")));
    ck_assert(!st_reply_prompt_opens_think(LIT("think>")));
    ck_assert(!st_reply_prompt_opens_think(NULL, 0));
}
END_TEST

START_TEST(test_reply_parse_content_and_two_calls)
{
    static const char reply[] =
        "<think>\nNeed weather twice.\n</think>\n\nLet me check.\n<tool_call>\n"
        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n"
        "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    struct result r;
    parse_all_splits(&all_on, reply, &r);
    ck_assert_str_eq(r.reasoning.data, "Need weather twice.");
    ck_assert_str_eq(r.content.data, "Let me check.");
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[0].data, "get_weather");
    ck_assert_str_eq(r.args[0].data, "{\"city\": \"Paris\", \"days\": 2}");   /* as written */
    ck_assert_str_eq(r.name[1].data, "get_time");
    ck_assert_str_eq(r.args[1].data, "{}");
    result_fini(&r);
    /* parallel_tool_calls false: the first call only */
    struct st_reply_opts one = all_on;
    one.max_calls = 1;
    parse_all_splits(&one, reply, &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.name[0].data, "get_weather");
    ck_assert_str_eq(r.content.data, "Let me check.");
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_markers_inside_json_strings)
{
    static const char reply[] =
        "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"a } b </tool_call> "
        "\\\"q\\\" \\\\\", \"n\": [1, {\"x\": \"]\"}]}}\n</tool_call>after";
    struct result r;
    parse_all_splits(&all_on, reply, &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.name[0].data, "write");
    ck_assert_str_eq(r.args[0].data,
                     "{\"text\": \"a } b </tool_call> \\\"q\\\" \\\\\", \"n\": [1, {\"x\": \"]\"}]}");
    ck_assert_str_eq(r.content.data, "after");
    result_fini(&r);
    /* arguments given as a JSON string: decoded; "parameters" accepted; escaped name */
    parse_all_splits(&all_on,
                     "<tool_call>{\"name\":\"f\\u006f\",\"arguments\":\"{\\\"a\\\":1}\"}"
                     "</tool_call><tool_call>{\"name\":\"g\",\"parameters\":{\"b\":2}}</tool_call>"
                     "<tool_call>{\"name\":\"h\"}</tool_call>",
                     &r);
    ck_assert_int_eq(r.n_calls, 3);
    ck_assert_str_eq(r.name[0].data, "fo");
    ck_assert_str_eq(r.args[0].data, "{\"a\":1}");
    ck_assert_str_eq(r.args[1].data, "{\"b\":2}");
    ck_assert_str_eq(r.args[2].data, "{}");
    ck_assert_str_eq(r.content.data, "");
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_malformed_calls_are_content)
{
    static const char *const bad[] = {
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,}}\n</tool_call>",  /* bad JSON */
        "<tool_call>\n{\"arguments\": {}}\n</tool_call>",                          /* no name */
        "<tool_call>\n{\"name\": \"\"}\n</tool_call>",                             /* empty name */
        "<tool_call>\n{\"name\": 5}\n</tool_call>",                                /* not a string */
        "<tool_call>\nget_weather(city=Paris)\n</tool_call>",                      /* not JSON */
        "<tool_call>\n{\"name\": \"f\"} trailing\n</tool_call>",                   /* junk after */
        "<tool_call>\n[1, 2]\n</tool_call>",                                       /* not an object */
    };
    struct result r;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "Before.\n%s\nAfter.", bad[i]);
        parse_all_splits(&all_on, text, &r);
        ck_assert_int_eq(r.n_calls, 0);
        ck_assert_str_eq(r.content.data, text);    /* every byte back, in order */
        result_fini(&r);
    }
    /* a bad call between two good ones: the good ones are calls */
    parse_all_splits(&all_on,
                     "<tool_call>{\"name\":\"a\"}</tool_call>\n<tool_call>{oops}</tool_call>\n"
                     "<tool_call>{\"name\":\"b\"}</tool_call>",
                     &r);
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[1].data, "b");
    ck_assert_str_eq(r.content.data, "<tool_call>{oops}</tool_call>");   /* blanks around calls go */
    result_fini(&r);
    /* a call whose JSON never closes (a dropped brace) ends at its tag as
     * content; the next call is still a call (review find: it used to hold
     * everything to the end of generation) */
    parse_all_splits(&all_on,
                     "A<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":1}\n</tool_call>\n"
                     "B<tool_call>{\"name\":\"g\",\"arguments\":{}}</tool_call>",
                     &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.name[0].data, "g");
    ck_assert_str_eq(r.content.data, "A<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":1}\n"
                                     "</tool_call>\nB");
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_unterminated_at_end)
{
    static const char *const cut[] = {
        "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x",   /* in a string */
        "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_",  /* in the tag */
        "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}",           /* no tag */
        "Sure.\n<tool_ca",                                                    /* open tag cut */
        "Sure.\n<tool_call>",
    };
    struct result r;
    for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
        parse_all_splits(&all_on, cut[i], &r);
        ck_assert_int_eq(r.n_calls, 0);
        ck_assert_str_eq(r.content.data, cut[i]);
        result_fini(&r);
    }
}
END_TEST

START_TEST(test_reply_parse_options_off)
{
    static const char reply[] = "<think>r</think>c<tool_call>{\"name\":\"f\"}</tool_call>";
    struct st_reply_opts none = { .reasoning = false };
    struct st_reply_opts think_only = { .reasoning = true };
    struct st_reply_opts tools_only = { .tools = true };
    struct result r;
    parse_all_splits(&none, reply, &r);
    ck_assert_str_eq(r.content.data, reply);
    ck_assert_int_eq(r.n_calls, 0);
    result_fini(&r);
    parse_all_splits(&think_only, reply, &r);
    ck_assert_str_eq(r.reasoning.data, "r");
    ck_assert_str_eq(r.content.data, "c<tool_call>{\"name\":\"f\"}</tool_call>");
    result_fini(&r);
    parse_all_splits(&tools_only, reply, &r);
    ck_assert_str_eq(r.reasoning.data, "");
    ck_assert_str_eq(r.content.data, "<think>r</think>c");
    ck_assert_int_eq(r.n_calls, 1);
    result_fini(&r);
}
END_TEST

/* Llama 3.1+ (bare_json_calls): a reply that is one {"name", "parameters"}
 * object is a call; anything else is content, even when it starts with "{". */
START_TEST(test_reply_parse_bare_json_calls)
{
    struct st_reply_opts o = { .reasoning = true, .tools = true, .bare_json_calls = true };
    struct result r;

    parse_all_splits(&o, " {\"name\": \"get_time\", \"parameters\": {\"city\": \"}{\"}}\n", &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.name[0].data, "get_time");
    ck_assert_str_eq(r.args[0].data, "{\"city\": \"}{\"}");
    ck_assert_str_eq(r.content.data, "");
    result_fini(&r);
    static const char *const not_calls[] = {
        "{\"name\": \"f\"} and then words",     /* text after the object */
        "{\"answer\": 42}",                        /* no name */
        "{\"name\": \"Alice\", \"age\": 30}",     /* a JSON answer: no parameters */
        "{ not json at all }",
        "{\"name\": \"f\", \"parameters\": {",   /* never closed */
        "Sure: {\"name\": \"f\"}",               /* does not start the reply */
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(not_calls); i++) {
        parse_all_splits(&o, not_calls[i], &r);
        ck_assert_int_eq(r.n_calls, 0);
        ck_assert_str_eq(r.content.data, not_calls[i]);
        result_fini(&r);
    }
    /* An object that is not the whole reply is content up to what follows
     * it; a tagged call after it is still a call, whatever the chunking
     * (a fuzz find: it used to depend on where the chunks fell). */
    parse_all_splits(&o, " {}\xff<tool_call>{\"name\":\"g\"}</tool_call>", &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.name[0].data, "g");
    ck_assert_str_eq(r.content.data, " {}\xff");
    result_fini(&r);
    /* the same when the object breaks off at a byte JSON cannot have ('<'
     * outside a string): content up to it, the rest read again (fuzz find) */
    parse_all_splits(&o, " {g<x} y<tool_call>{\"name\":\"g\"}</tool_call>", &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.content.data, " {g<x} y");
    result_fini(&r);
    /* After reasoning, and with the option off the same text stays content. */
    parse_all_splits(&o, "<think>hm</think>\n{\"name\": \"f\", \"parameters\": {}}", &r);
    ck_assert_str_eq(r.reasoning.data, "hm");
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.args[0].data, "{}");
    result_fini(&r);
    /* the blanks after </think> are dropped before a bare object that is
     * not a call, as for any content there */
    parse_all_splits(&o, "<think>hm</think>\n\n{\"a\": 1} x", &r);
    ck_assert_int_eq(r.n_calls, 0);
    ck_assert_str_eq(r.content.data, "{\"a\": 1} x");
    result_fini(&r);
    o.bare_json_calls = false;
    parse_all_splits(&o, "{\"name\": \"f\"}", &r);
    ck_assert_int_eq(r.n_calls, 0);
    result_fini(&r);
    /* Only the Llama 3.1+ tools header asks for it. */
    static const char hdr[] = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                              "Environment: ipython\nCutting Knowledge Date: December 2023\n";
    ck_assert(st_reply_prompt_wants_json_calls(LIT(hdr)));
    ck_assert(!st_reply_prompt_wants_json_calls(LIT("<|im_start|>system\nEnvironment: ipython\n")));
}
END_TEST

/* Content that cannot be a bare call streams at once: only a leading "{" is held. */
START_TEST(test_reply_parse_bare_mode_streams_plain_text)
{
    struct st_reply_opts o = { .tools = true, .bare_json_calls = true };
    struct st_reply_parser p;
    struct result r;
    result_init(&r);
    st_reply_parser_init(&p, &o);
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT("  "), collect, &r), ST_OK);
    ck_assert_int_eq(r.n_events, 0);                    /* blanks: "{" may still come */
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT("Hello"), collect, &r), ST_OK);
    ck_assert_str_eq(r.content.data, "  Hello");
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT(" {\"name\": \"f\"}"), collect, &r), ST_OK);
    ck_assert_int_eq(st_reply_parser_finish(&p, collect, &r), ST_OK);
    ck_assert_int_eq(r.n_calls, 0);
    st_reply_parser_fini(&p);
    result_fini(&r);
}
END_TEST

/* Only what may still become a marker is held: plain content streams at once. */
START_TEST(test_reply_parse_holds_only_marker_prefixes)
{
    struct st_reply_parser p;
    struct result r;
    result_init(&r);
    st_reply_parser_init(&p, &all_on);
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT("Hello"), collect, &r), ST_OK);
    ck_assert_str_eq(r.content.data, "Hello");
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT(" wor<tool"), collect, &r), ST_OK);
    ck_assert_str_eq(r.content.data, "Hello wor");
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT("kit>"), collect, &r), ST_OK);
    ck_assert_str_eq(r.content.data, "Hello wor<toolkit>");      /* released: not a marker */
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT(" \n"), collect, &r), ST_OK);
    ck_assert_str_eq(r.content.data, "Hello wor<toolkit>");      /* blanks: a call may follow */
    ck_assert_int_eq(st_reply_parser_finish(&p, collect, &r), ST_OK);
    ck_assert_str_eq(r.content.data, "Hello wor<toolkit> \n");   /* none did: kept */
    st_reply_parser_fini(&p);
    result_fini(&r);
    /* reasoning streams too, minus a possible "</think>" tail */
    result_init(&r);
    st_reply_parser_init(&p, &all_on);
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT("<think>\nab</th"), collect, &r), ST_OK);
    ck_assert_str_eq(r.reasoning.data, "ab");
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT("ink>"), collect, &r), ST_OK);
    ck_assert_int_eq(st_reply_parser_feed(&p, LIT("\n\nX"), collect, &r), ST_OK);
    ck_assert_str_eq(r.content.data, "X");
    ck_assert_int_eq(st_reply_parser_finish(&p, collect, &r), ST_OK);
    st_reply_parser_fini(&p);
    result_fini(&r);
}
END_TEST

/* <think> and <tool_call> are USER_DEFINED in Qwen3 (special=false in
 * tokenizer.json): generated text (detok with special=false) keeps them,
 * while CONTROL tokens like <|im_end|> are dropped. */
START_TEST(test_reply_parse_detok_renders_markers)
{
    static const char *const texts[] = { "<think>", "</think>", "<tool_call>", "</tool_call>",
                                         "<|im_end|>", "hi" };
    int32_t types[6] = { ST_TOK_USER_DEFINED, ST_TOK_USER_DEFINED, ST_TOK_USER_DEFINED,
                         ST_TOK_USER_DEFINED, ST_TOK_CONTROL, ST_TOK_NORMAL };
    static const int32_t gen[] = { 0, 5, 1, 5, 2, 3, 4 };
    struct st_str toks[6];
    struct st_tok_desc desc;
    struct st_tok *tok = NULL;
    struct st_detok d;
    struct st_buf out;
    struct st_err err = { 0 };
    for (int i = 0; i < 6; i++)
        toks[i] = st_str_c(texts[i]);
    memset(&desc, 0, sizeof(desc));
    desc.n_tokens = 6;
    desc.tokens = toks;
    desc.types = types;
    desc.bos_id = desc.eos_id = desc.pad_id = -1;
    ck_assert_int_eq(st_tok_new(&desc, &tok, NULL), ST_OK);
    st_buf_init(&out);
    ck_assert_int_eq(st_buf_append(&out, "", 0), ST_OK);
    st_detok_init(&d, tok, false);
    for (size_t i = 0; i < sizeof(gen) / sizeof(gen[0]); i++)
        ck_assert_int_eq(st_detok_push_token(&d, gen[i], &out, &err), ST_OK);
    ck_assert_str_eq(out.data, "<think>hi</think>hi<tool_call></tool_call>");
    st_buf_fini(&out);
    st_tok_free(tok);
    /* Mistral's markers are CONTROL tokens, and still show (st_tok_is_marker) */
    static const char *const mtexts[] = { "[THINK]", "[/THINK]", "[TOOL_CALLS]", "[ARGS]",
                                          "</s>", "[INST]" };
    static const int32_t mgen[] = { 0, 1, 2, 3, 4, 5 };
    for (int i = 0; i < 6; i++) {
        toks[i] = st_str_c(mtexts[i]);
        types[i] = ST_TOK_CONTROL;
    }
    ck_assert_int_eq(st_tok_new(&desc, &tok, NULL), ST_OK);
    st_buf_init(&out);
    ck_assert_int_eq(st_buf_append(&out, "", 0), ST_OK);
    st_detok_init(&d, tok, false);
    for (size_t i = 0; i < 6; i++)
        ck_assert_int_eq(st_detok_push_token(&d, mgen[i], &out, &err), ST_OK);
    ck_assert_str_eq(out.data, "[THINK][/THINK][TOOL_CALLS][ARGS]");
    st_buf_fini(&out);
    st_tok_free(tok);
}
END_TEST

/* Send the parsed reply r back as the assistant turn after a user "Q"
 * (each call's arguments as the JSON string we returned) and render it with
 * the template 'src', which must be recognized as 'kind'; the prompt is
 * checked to be that turn around the model's own text 'reply'. */
static void expect_render_back(const struct result *r, const char *src, enum st_chat_kind kind,
                               const char *reply)
{
    struct st_buf calls, out;
    st_buf_init(&calls);
    ck_assert_int_eq(st_buf_append(&calls, "[", 1), ST_OK);
    for (int32_t i = 0; i < r->n_calls; i++) {
        ck_assert_int_eq(st_buf_printf(&calls, "%s{\"id\":\"call_%d\",\"type\":\"function\","
                                       "\"function\":{\"name\":\"%s\",\"arguments\":",
                                       i ? "," : "", (int)i, r->name[i].data), ST_OK);
        ck_assert_int_eq(st_buf_json_str(&calls, r->args[i].data, r->args[i].len), ST_OK);
        ck_assert_int_eq(st_buf_append(&calls, "}}", 2), ST_OK);
    }
    ck_assert_int_eq(st_buf_append(&calls, "]", 1), ST_OK);
    struct st_chat_msg m[2];
    memset(m, 0, sizeof(m));
    m[0].role = st_str_c("user");
    m[0].content = st_str_c("Q");
    m[1].role = st_str_c("assistant");
    m[1].content = st_str_c(r->content.data);
    m[1].reasoning_content = st_str_c(r->reasoning.data);
    m[1].tool_calls = st_str_c(calls.data);
    struct st_chat_tmpl t;
    st_chat_tmpl_init(&t, src, strlen(src), NULL, NULL, "test");
    ck_assert_int_eq(t.kind, kind);
    struct st_chat_req req = { .msgs = m, .n_msgs = 2, .enable_thinking = -1 };
    st_buf_init(&out);
    ck_assert_int_eq(st_chat_render(&t, &req, &out, NULL), ST_OK);
    char want[1024];
    snprintf(want, sizeof(want), "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n%s"
             "<|im_end|>\n", reply);
    ck_assert_str_eq(out.data, want);
    ck_assert(!st_reply_prompt_wants_xml_calls(out.data, out.len));   /* no tools given */
    st_buf_fini(&out);
    st_buf_fini(&calls);
}

/* Round trip: a parsed reply, sent back by a client as an assistant message
 * (arguments as the JSON string we returned), renders through the Qwen3
 * template into exactly the text the model generated -- the reason the
 * arguments' text is kept as written (the prompt cache reuses that turn). */
START_TEST(test_reply_parse_round_trips_through_qwen3_template)
{
    static const char reply[] =
        "<think>\nplan it\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", "
        "\"arguments\": {\"city\": \"Paris\", \"days\": [1, 2]}}\n</tool_call>\n<tool_call>\n"
        "{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    static const char qwen3_src[] =
        "{%- if tools %}<|im_start|>system ... <tool_call> ... reasoning_content ... <think>"
        "{%- if enable_thinking is defined and enable_thinking is false %}";
    struct result r;
    parse_cuts(&all_on, reply, NULL, 0, &r);
    ck_assert_int_eq(r.n_calls, 2);
    expect_render_back(&r, qwen3_src, ST_CHAT_QWEN3, reply);
    result_fini(&r);
}
END_TEST

/* ---- Qwen3-Coder's XML calls (opts.xml_calls) ---------------------------- */

static const char coder_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"execute_bash\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"cmd\": {\"type\": \"string\"}, "
    "\"timeout\": {\"type\": \"number\"}}}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"edit\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}, "
    "\"new_str\": {\"type\": \"string\"}, \"lines\": {\"type\": \"array\"}, "
    "\"force\": {\"type\": \"boolean\"}, \"count\": {\"type\": \"integer\"}, "
    "\"maybe\": {\"type\": [\"integer\", \"null\"]}, \"text\": {\"type\": [\"string\", \"null\"]}, "
    "\"any\": {}}}}}]";

static struct st_reply_opts coder_opts(bool with_tools)
{
    struct st_reply_opts o = { true, true, false, 0, false, true, { NULL, 0 },
                               false, false, false };
    if (with_tools)
        o.tools_json = st_str_c(coder_tools);
    return o;
}

static const char coder_reply[] =
    "I'll run it.\n\n<tool_call>\n<function=execute_bash>\n<parameter=cmd>\nls -la\n"
    "</parameter>\n<parameter=timeout>\n30\n</parameter>\n</function>\n</tool_call>\n"
    "<tool_call>\n<function=edit>\n<parameter=path>\n/a.py\n</parameter>\n"
    "<parameter=new_str>\n\nx = \"</parameter>\"\n\n</parameter>\n<parameter=lines>\n[1, 2]\n"
    "</parameter>\n<parameter=force>\nTrue\n</parameter>\n<parameter=count>\nmany\n</parameter>\n"
    "<parameter=maybe>\nnull\n</parameter>\n<parameter=text>\n7\n</parameter>\n"
    "<parameter=any>\n{}\n</parameter>\n<parameter=extra>\n5\n</parameter>\n</function>\n"
    "</tool_call>";

START_TEST(test_reply_parse_xml_calls_typed_by_schema)
{
    struct st_reply_opts o = coder_opts(true);
    struct result r;
    parse_all_splits(&o, coder_reply, &r);
    ck_assert_str_eq(r.content.data, "I'll run it.");
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[0].data, "execute_bash");
    ck_assert_str_eq(r.args[0].data, "{\"cmd\": \"ls -la\", \"timeout\": 30}");
    ck_assert_str_eq(r.name[1].data, "edit");
    ck_assert_str_eq(r.args[1].data,
                     "{\"path\": \"/a.py\", \"new_str\": \"\\nx = \\\"</parameter>\\\"\\n\", "
                     "\"lines\": [1, 2], \"force\": true, \"count\": \"many\", \"maybe\": null, "
                     "\"text\": \"7\", \"any\": \"{}\", \"extra\": \"5\"}");
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_xml_calls_untyped_and_edge_forms)
{
    struct st_reply_opts o = coder_opts(false);
    struct result r;
    parse_all_splits(&o, coder_reply, &r);      /* no tools: every value a string */
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.args[0].data, "{\"cmd\": \"ls -la\", \"timeout\": \"30\"}");
    result_fini(&r);
    /* no parameters; blanks between the parts; a JSON body is still a call */
    parse_all_splits(&o, "<tool_call><function=finish></function></tool_call>\n"
                         "<tool_call>\n  <function=f>  <parameter=a>x</parameter>\t</function>\n"
                         "</tool_call><tool_call>\n{\"name\": \"g\", \"arguments\": {\"b\": 1}}\n"
                         "</tool_call>", &r);
    ck_assert_int_eq(r.n_calls, 3);
    ck_assert_str_eq(r.name[0].data, "finish");
    ck_assert_str_eq(r.args[0].data, "{}");
    ck_assert_str_eq(r.args[1].data, "{\"a\": \"x\"}");
    ck_assert_str_eq(r.name[2].data, "g");
    ck_assert_str_eq(r.args[2].data, "{\"b\": 1}");
    ck_assert_str_eq(r.content.data, "");
    result_fini(&r);
    /* without xml_calls the same text is a malformed JSON call: content */
    parse_all_splits(&all_on, "<tool_call>\n<function=f>\n</function>\n</tool_call>", &r);
    ck_assert_int_eq(r.n_calls, 0);
    ck_assert_str_eq(r.content.data, "<tool_call>\n<function=f>\n</function>\n</tool_call>");
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_xml_malformed_calls_are_content)
{
    static const char *const bad[] = {
        "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</tool_call>", /* no end */
        "<tool_call>\n<function=>\n</function>\n</tool_call>",                  /* empty name */
        "<tool_call>\n<function=f x>\n</function>\n</tool_call>",               /* blank in name */
        "<tool_call>\n<function=f>\n<parameter=a>\n1\n</function>\n</tool_call>", /* open param */
        "<tool_call>\n<function=f>\n<parameter=>\n1\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=f>\njunk\n</function>\n</tool_call>",           /* text between */
        "<tool_call>\n<function=f>\n</function>\ntrailing\n</tool_call>",       /* after */
        "<tool_call>\nfunction=f\n</tool_call>",                                /* no tag */
        "<tool_call>\n\n</tool_call>",                                          /* empty */
    };
    struct st_reply_opts o = coder_opts(true);
    struct result r;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "Before.\n%s\nAfter.", bad[i]);
        parse_all_splits(&o, text, &r);
        ck_assert_msg(r.n_calls == 0, "case %zu", i);
        ck_assert_str_eq(r.content.data, text);    /* every byte back, in order */
        result_fini(&r);
    }
    /* never closed: all of it back at the end */
    parse_all_splits(&o, "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\nxx", &r);
    ck_assert_int_eq(r.n_calls, 0);
    ck_assert_str_eq(r.content.data, "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\nxx");
    result_fini(&r);
    /* a bad call between two good ones */
    parse_all_splits(&o, "<tool_call><function=a></function></tool_call>\n<tool_call>oops"
                         "</tool_call>\n<tool_call><function=b></function></tool_call>", &r);
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[1].data, "b");
    ck_assert_str_eq(r.content.data, "<tool_call>oops</tool_call>");
    result_fini(&r);
}
END_TEST

/* Round trip through the Qwen3-Coder template: the parsed call, sent back
 * with its arguments as the JSON string we returned, renders into exactly
 * the text the model generated; and the rendered prompt selects xml_calls. */
START_TEST(test_reply_parse_xml_round_trips_through_coder_template)
{
    static const char reply[] =
        "Let me check.\n\n<tool_call>\n<function=edit>\n<parameter=path>\n/a b.py\n</parameter>\n"
        "<parameter=lines>\n[1, 2]\n</parameter>\n<parameter=count>\n3\n</parameter>\n"
        "</function>\n</tool_call>";
    static const char coder_src[] = "<|im_start|> ... '<function=' ... '<parameter=' ...";
    struct st_reply_opts o = coder_opts(true);
    struct result r;
    parse_cuts(&o, reply, NULL, 0, &r);
    ck_assert_int_eq(r.n_calls, 1);
    expect_render_back(&r, coder_src, ST_CHAT_QWEN3_CODER, reply);
    /* with tools, the prompt asks for XML calls (and not for bare JSON ones) */
    struct st_chat_msg q;
    memset(&q, 0, sizeof(q));
    q.role = st_str_c("user");
    q.content = st_str_c("Q");
    struct st_chat_tmpl t;
    st_chat_tmpl_init(&t, coder_src, strlen(coder_src), NULL, NULL, "test");
    struct st_chat_req req = { .msgs = &q, .n_msgs = 1, .enable_thinking = -1,
                               .tools = st_str_c(coder_tools) };
    struct st_buf out;
    st_buf_init(&out);
    ck_assert_int_eq(st_chat_render(&t, &req, &out, NULL), ST_OK);
    ck_assert(st_reply_prompt_wants_xml_calls(out.data, out.len));
    ck_assert(!st_reply_prompt_wants_json_calls(out.data, out.len));
    st_buf_fini(&out);
    result_fini(&r);
}
END_TEST


/* ---- GLM-4.5's calls (opts.glm) --------------------------------------------
 * The reply forms are those GLM-4.5's chat template writes for an assistant
 * turn (zai-org chat_template.jinja; tests/e2e/tokenizer_ref/templates/
 * glm45.jinja): "\n<think>R</think>\nCONTENT\n<tool_call>NAME\n<arg_key>K
 * </arg_key>\n<arg_value>V</arg_value>\n...</tool_call>", string values
 * raw, others as JSON; vLLM's glm45 parser types values by the schema. */

static const char glm_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, "
    "\"days\": {\"type\": \"integer\"}, \"code\": {\"type\": [\"string\", \"null\"]}, "
    "\"n\": {\"type\": \"number\"}}}}}]";

static struct st_reply_opts glm_opts(bool with_tools)
{
    struct st_reply_opts o = { .reasoning = true, .tools = true, .glm = true };
    if (with_tools)
        o.tools_json = st_str_c(glm_tools);
    return o;
}

START_TEST(test_reply_parse_glm_calls_typed_by_schema)
{
    static const char reply[] =
        "\n<think>The user wants weather.</think>\nLet me check.\n<tool_call>get_weather\n"
        "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n"
        "<arg_value>3</arg_value>\n<arg_key>code</arg_key>\n<arg_value>x</arg_value> y\n"
        "</arg_value>\n<arg_key>n</arg_key>\n<arg_value>many</arg_value>\n<arg_key>opts</arg_key>"
        "\n<arg_value>{\"u\": \"C\"}</arg_value>\n<arg_key> flag </arg_key><arg_value> True "
        "</arg_value>\n<arg_key>s</arg_key>\n<arg_value>plain text</arg_value>\n</tool_call>\n"
        "<tool_call>get_time\n</tool_call>";
    struct st_reply_opts o = glm_opts(true);
    struct result r;
    parse_all_splits(&o, reply, &r);
    ck_assert_str_eq(r.reasoning.data, "The user wants weather.");
    ck_assert_str_eq(r.content.data, "Let me check.");
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[0].data, "get_weather");
    /* string types: exact text (one holding "</arg_value>"); integer: JSON;
     * number that is not JSON: a string; no schema: JSON when it parses,
     * Python's True too, else a string */
    ck_assert_str_eq(r.args[0].data,
                     "{\"city\": \"Paris\", \"days\": 3, \"code\": \"x</arg_value> y\\n\", "
                     "\"n\": \"many\", \"opts\": {\"u\": \"C\"}, \"flag\": true, "
                     "\"s\": \"plain text\"}");
    ck_assert_str_eq(r.name[1].data, "get_time");
    ck_assert_str_eq(r.args[1].data, "{}");
    result_fini(&r);
    /* without the tools, every value that parses is JSON: "3" too */
    o = glm_opts(false);
    parse_all_splits(&o, "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>3</arg_value>\n"
                         "<arg_key>b</arg_key>\n<arg_value>\"q\"</arg_value>\n</tool_call>", &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.args[0].data, "{\"a\": 3, \"b\": \"q\"}");
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_glm_content_and_thinking_off)
{
    struct st_reply_opts o = glm_opts(false);
    struct result r;
    /* thinking off: the prompt closed the block; the "\n" before the content
     * is the format's */
    parse_all_splits(&o, "\nHello there.\n", &r);
    ck_assert_str_eq(r.reasoning.data, "");
    ck_assert_str_eq(r.content.data, "Hello there.\n");
    result_fini(&r);
    o.reasoning = false;
    parse_all_splits(&o, "\n\nHi <tool_call>f\n</tool_call>", &r);
    ck_assert_str_eq(r.content.data, "Hi");
    ck_assert_int_eq(r.n_calls, 1);
    result_fini(&r);
    /* a JSON body is read as a JSON call */
    o = glm_opts(false);
    parse_all_splits(&o, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>", &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.args[0].data, "{\"a\": 1}");
    result_fini(&r);
    /* a continued message (cont): the blanks are the text's, with or
     * without reasoning */
    o = glm_opts(false);
    o.cont = true;
    parse_all_splits(&o, " more.\n", &r);
    ck_assert_str_eq(r.content.data, " more.\n");
    result_fini(&r);
    o.reasoning = false;
    parse_all_splits(&o, "\n- item", &r);
    ck_assert_str_eq(r.content.data, "\n- item");
    result_fini(&r);
    ck_assert(st_reply_prompt_is_glm(LIT("[gMASK]<sop><|user|>\nhi<|assistant|>")));
    ck_assert(!st_reply_prompt_is_glm(LIT("<|user|>\n[gMASK]<sop>")));
    ck_assert(!st_reply_prompt_is_glm(NULL, 0));
}
END_TEST

START_TEST(test_reply_parse_glm_malformed_calls_are_content)
{
    static const char *const bad[] = {
        "<tool_call>\n</tool_call>",                                            /* no name */
        "<tool_call>let me call f\n</tool_call>",                               /* blanks */
        "<tool_call>f\n<arg_key>a\n<arg_value>1</arg_value>\n</tool_call>",     /* open key */
        "<tool_call>f\n<arg_key>a</arg_key>\n1</arg_value>\n</tool_call>",      /* no value tag */
        "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1\n</tool_call>",       /* open value */
        "<tool_call>f\n<arg_key> </arg_key><arg_value>1</arg_value></tool_call>", /* empty key */
        "<tool_call>f\njunk<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
        "<tool_call>f\n<arg_key>a</arg_key><arg_value>1</arg_value>tail</tool_call>",
        "<tool_call>f<x>\n</tool_call>",                                        /* '<' in name */
    };
    struct st_reply_opts o = glm_opts(true);
    struct result r;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "Before.\n%s\nAfter.", bad[i]);
        parse_all_splits(&o, text, &r);
        ck_assert_msg(r.n_calls == 0, "case %zu", i);
        ck_assert_str_eq(r.content.data, text);    /* every byte back, in order */
        result_fini(&r);
    }
    /* never closed: all of it back at the end */
    parse_all_splits(&o, "Sure.\n<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>xx", &r);
    ck_assert_int_eq(r.n_calls, 0);
    ck_assert_str_eq(r.content.data, "Sure.\n<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>xx");
    result_fini(&r);
    /* a bad call between two good ones */
    parse_all_splits(&o, "<tool_call>a</tool_call>\n<tool_call>a b</tool_call>\n"
                         "<tool_call>b\n</tool_call>", &r);
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[1].data, "b");
    ck_assert_str_eq(r.content.data, "<tool_call>a b</tool_call>");
    result_fini(&r);
}
END_TEST

/* Round trip through the GLM-4.5 template: the parsed reply, sent back as
 * the assistant message (arguments as the JSON string we returned),
 * renders into exactly the text the model generated after <|assistant|>. */
START_TEST(test_reply_parse_glm_round_trips_through_template)
{
    static const char reply[] =
        "\n<think>plan it</think>\nLet me check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
        "<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>[1, 2]</arg_value>\n"
        "</tool_call>\n<tool_call>get_time\n</tool_call>";
    static const char glm_src[] = "[gMASK]<sop>{%- if tools -%}<|system|> ... enable_thinking";
    struct st_reply_opts o = glm_opts(true);
    struct result r;
    struct st_buf calls, out;
    parse_cuts(&o, reply, NULL, 0, &r);
    ck_assert_int_eq(r.n_calls, 2);
    st_buf_init(&calls);
    ck_assert_int_eq(st_buf_append(&calls, "[", 1), ST_OK);
    for (int32_t i = 0; i < r.n_calls; i++) {
        ck_assert_int_eq(st_buf_printf(&calls, "%s{\"function\":{\"name\":\"%s\",\"arguments\":",
                                       i ? "," : "", r.name[i].data), ST_OK);
        ck_assert_int_eq(st_buf_json_str(&calls, r.args[i].data, r.args[i].len), ST_OK);
        ck_assert_int_eq(st_buf_append(&calls, "}}", 2), ST_OK);
    }
    ck_assert_int_eq(st_buf_append(&calls, "]", 1), ST_OK);
    struct st_chat_msg m[2];
    memset(m, 0, sizeof(m));
    m[0].role = st_str_c("user");
    m[0].content = st_str_c("Q");
    m[1].role = st_str_c("assistant");
    m[1].content = st_str_c(r.content.data);
    m[1].reasoning_content = st_str_c(r.reasoning.data);
    m[1].tool_calls = st_str_c(calls.data);
    struct st_chat_tmpl t;
    st_chat_tmpl_init(&t, glm_src, strlen(glm_src), NULL, NULL, "test");
    ck_assert_int_eq(t.kind, ST_CHAT_GLM45);
    struct st_chat_req req = { .msgs = m, .n_msgs = 2, .enable_thinking = -1 };
    st_buf_init(&out);
    ck_assert_int_eq(st_chat_render(&t, &req, &out, NULL), ST_OK);
    char want[1024];
    snprintf(want, sizeof(want), "[gMASK]<sop><|user|>\nQ<|assistant|>%s", reply);
    ck_assert_str_eq(out.data, want);
    ck_assert(st_reply_prompt_is_glm(out.data, out.len));
    st_buf_fini(&out);
    st_buf_fini(&calls);
    result_fini(&r);
}
END_TEST

/* ---- Mistral ([THINK], [TOOL_CALLS]; opts.mistral) ------------------------ */

static const struct st_reply_opts mistral_on = { .reasoning = true, .tools = true,
                                                 .mistral = true };

START_TEST(test_reply_parse_mistral_args_calls)
{
    struct result r;
    parse_all_splits(&mistral_on,
                     "[THINK]plan: two calls[/THINK]Let me check. [TOOL_CALLS]get_weather[ARGS]"
                     "{\"city\": \"Paris\", \"q\": \"[ARGS]}\"}[TOOL_CALLS]get_time[ARGS]{}\n", &r);
    ck_assert_str_eq(r.reasoning.data, "plan: two calls");
    ck_assert_str_eq(r.content.data, "Let me check.");
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[0].data, "get_weather");
    ck_assert_str_eq(r.args[0].data, "{\"city\": \"Paris\", \"q\": \"[ARGS]}\"}");
    ck_assert_str_eq(r.name[1].data, "get_time");
    ck_assert_str_eq(r.args[1].data, "{}");
    result_fini(&r);
    /* [CALL_ID] between name and [ARGS]; NAME{...} without [ARGS]; content after */
    parse_all_splits(&mistral_on, "[TOOL_CALLS]f[CALL_ID]a1B2c3D4e[ARGS]{\"x\": 1}"
                     "[TOOL_CALLS]g{\"y\": [2]}  done", &r);
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[0].data, "f");
    ck_assert_str_eq(r.args[0].data, "{\"x\": 1}");
    ck_assert_str_eq(r.name[1].data, "g");
    ck_assert_str_eq(r.args[1].data, "{\"y\": [2]}");
    ck_assert_str_eq(r.content.data, "done");
    result_fini(&r);
    /* Magistral 2506 thinks in <think> tags; then [/THINK] is text */
    parse_all_splits(&mistral_on, "<think>\nhm [/THINK]\n</think>\nOK[TOOL_CALLS]f[ARGS]{}", &r);
    ck_assert_str_eq(r.reasoning.data, "hm [/THINK]");
    ck_assert_str_eq(r.content.data, "OK");
    ck_assert_int_eq(r.n_calls, 1);
    result_fini(&r);
}
END_TEST

START_TEST(test_reply_parse_mistral_json_array_calls)
{
    struct result r;
    parse_all_splits(&mistral_on,
                     "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": \"]\"}, \"id\": "
                     "\"abcdefghi\"}, {\"name\": \"g\", \"arguments\": \"{\\\"b\\\": 2}\"}]", &r);
    ck_assert_int_eq(r.n_calls, 2);
    ck_assert_str_eq(r.name[0].data, "f");
    ck_assert_str_eq(r.args[0].data, "{\"a\": \"]\"}");
    ck_assert_str_eq(r.name[1].data, "g");
    ck_assert_str_eq(r.args[1].data, "{\"b\": 2}");
    ck_assert_str_eq(r.content.data, "");
    result_fini(&r);
    parse_all_splits(&mistral_on, "[TOOL_CALLS]{\"name\": \"h\"}", &r);   /* one object */
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.name[0].data, "h");
    ck_assert_str_eq(r.args[0].data, "{}");
    result_fini(&r);
}
END_TEST

/* Whatever is not a well-formed call comes back as content, byte for byte;
 * what follows the broken spot is read again (a later call still counts). */
START_TEST(test_reply_parse_mistral_malformed_calls_are_content)
{
    static const char *const bad[] = {
        "[TOOL_CALLS]hello world",
        "[TOOL_CALLS]f[ARGS]{\"a\": ",
        "[TOOL_CALLS]f[ARGS][1, 2]",
        "[TOOL_CALLS]f[ARGZ]{}",
        "[TOOL_CALLS] [{\"nome\": \"f\"}]",
        "[TOOL_CALLS] []",
        "[TOOL_CALLS]",
        "x [TOOL_CALLS]f[ARGS]{} y}",
        "[TOOL_CALLS]\"f\"[ARGS]{}",
        "[TOOL_CALLS]f[CALL_ID]a b[ARGS]{}",
        "[TOOL_CALLS]f[ARGS]<x>",
        "[TOOL_CALLS]f[AR",
    };
    struct result r;
    for (size_t i = 0; i < ST_ARRAY_LEN(bad); i++) {
        parse_all_splits(&mistral_on, bad[i], &r);
        if (i == 7) {           /* a good call, then "y}" as content */
            ck_assert_int_eq(r.n_calls, 1);
            ck_assert_str_eq(r.content.data, "xy}");
        } else {
            ck_assert_msg(r.n_calls == 0, "%s", bad[i]);
            ck_assert_str_eq(r.content.data, bad[i]);
        }
        result_fini(&r);
    }
    /* a broken call, then a good one */
    parse_all_splits(&mistral_on, "[TOOL_CALLS]a b[TOOL_CALLS]c[ARGS]{\"k\": 1}", &r);
    ck_assert_int_eq(r.n_calls, 1);
    ck_assert_str_eq(r.content.data, "[TOOL_CALLS]a b");
    ck_assert_str_eq(r.name[0].data, "c");
    result_fini(&r);
    /* without tools, or in Qwen mode, the markers are plain text */
    struct st_reply_opts no_tools = { .reasoning = true, .mistral = true };
    parse_all_splits(&no_tools, "[THINK]r[/THINK][TOOL_CALLS]f[ARGS]{}", &r);
    ck_assert_str_eq(r.reasoning.data, "r");
    ck_assert_str_eq(r.content.data, "[TOOL_CALLS]f[ARGS]{}");
    result_fini(&r);
    parse_all_splits(&all_on, "[THINK]r[/THINK][TOOL_CALLS]f[ARGS]{}", &r);
    ck_assert_str_eq(r.content.data, "[THINK]r[/THINK][TOOL_CALLS]f[ARGS]{}");
    ck_assert_int_eq(r.n_calls, 0);
    result_fini(&r);
}
END_TEST

/* Round trip through the v11 template: the parsed reply, sent back as the
 * assistant message, renders into exactly what the model generated. The
 * prompt is recognized as a Mistral one. */
START_TEST(test_reply_parse_mistral_round_trips_through_v11_template)
{
    static const char reply[] =
        "Let me check.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": [1, 2]}"
        "[TOOL_CALLS]get_time[ARGS]{}";
    static const char src[] = "[SYSTEM_PROMPT] '[TOOL_CALLS]' + name + '[ARGS]' + arguments";
    struct result r;
    struct st_buf calls, out;
    struct st_chat_msg m[2];
    struct st_chat_tmpl t;

    parse_cuts(&mistral_on, reply, NULL, 0, &r);
    ck_assert_int_eq(r.n_calls, 2);
    st_buf_init(&calls);
    ck_assert_int_eq(st_buf_append(&calls, "[", 1), ST_OK);
    for (int32_t i = 0; i < r.n_calls; i++) {
        ck_assert_int_eq(st_buf_printf(&calls, "%s{\"id\":\"call_%d\",\"type\":\"function\","
                                       "\"function\":{\"name\":\"%s\",\"arguments\":",
                                       i ? "," : "", (int)i, r.name[i].data), ST_OK);
        ck_assert_int_eq(st_buf_json_str(&calls, r.args[i].data, r.args[i].len), ST_OK);
        ck_assert_int_eq(st_buf_append(&calls, "}}", 2), ST_OK);
    }
    ck_assert_int_eq(st_buf_append(&calls, "]", 1), ST_OK);
    memset(m, 0, sizeof(m));
    m[0].role = st_str_c("user");
    m[0].content = st_str_c("Q");
    m[1].role = st_str_c("assistant");
    m[1].content = st_str_c(r.content.data);
    m[1].tool_calls = st_str_c(calls.data);
    st_chat_tmpl_init(&t, src, strlen(src), "<s>", "</s>", "test");
    ck_assert_int_eq(t.kind, ST_CHAT_MISTRAL_V11);
    struct st_chat_req req = { .msgs = m, .n_msgs = 2, .enable_thinking = -1 };
    st_buf_init(&out);
    ck_assert_int_eq(st_chat_render(&t, &req, &out, NULL), ST_OK);
    char want[1024];
    snprintf(want, sizeof(want), "<s>[INST]Q[/INST]%s</s>", reply);
    ck_assert_str_eq(out.data, want);
    ck_assert(st_reply_prompt_is_mistral(out.data, out.len));
    ck_assert(!st_reply_prompt_wants_json_calls(out.data, out.len));
    ck_assert(!st_reply_prompt_is_mistral("<|im_start|>user\n[INST]", 23));
    ck_assert(st_reply_prompt_is_mistral("[SYSTEM_PROMPT]x", 16));
    st_buf_fini(&out);
    st_buf_fini(&calls);
    result_fini(&r);
}
END_TEST

static Suite *reply_parse_suite(void)
{
    Suite *s = suite_create("reply_parse");
    TCase *t = tcase_create("reply_parse");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_reply_parse_reasoning_then_content);
    tcase_add_test(t, test_reply_parse_reasoning_only);
    tcase_add_test(t, test_reply_parse_lone_close_think);
    tcase_add_test(t, test_reply_parse_content_and_two_calls);
    tcase_add_test(t, test_reply_parse_markers_inside_json_strings);
    tcase_add_test(t, test_reply_parse_malformed_calls_are_content);
    tcase_add_test(t, test_reply_parse_unterminated_at_end);
    tcase_add_test(t, test_reply_parse_options_off);
    tcase_add_test(t, test_reply_parse_bare_json_calls);
    tcase_add_test(t, test_reply_parse_bare_mode_streams_plain_text);
    tcase_add_test(t, test_reply_parse_holds_only_marker_prefixes);
    tcase_add_test(t, test_reply_parse_detok_renders_markers);
    tcase_add_test(t, test_reply_parse_round_trips_through_qwen3_template);
    tcase_add_test(t, test_reply_parse_xml_calls_typed_by_schema);
    tcase_add_test(t, test_reply_parse_xml_calls_untyped_and_edge_forms);
    tcase_add_test(t, test_reply_parse_xml_malformed_calls_are_content);
    tcase_add_test(t, test_reply_parse_xml_round_trips_through_coder_template);
    tcase_add_test(t, test_reply_parse_glm_calls_typed_by_schema);
    tcase_add_test(t, test_reply_parse_glm_content_and_thinking_off);
    tcase_add_test(t, test_reply_parse_glm_malformed_calls_are_content);
    tcase_add_test(t, test_reply_parse_glm_round_trips_through_template);
    tcase_add_test(t, test_reply_parse_mistral_args_calls);
    tcase_add_test(t, test_reply_parse_mistral_json_array_calls);
    tcase_add_test(t, test_reply_parse_mistral_malformed_calls_are_content);
    tcase_add_test(t, test_reply_parse_mistral_round_trips_through_v11_template);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(reply_parse_suite(), CK_FORK);
}
