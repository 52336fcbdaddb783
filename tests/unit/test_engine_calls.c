/* test_engine_calls.c -- enforced tool calls (tool_choice "required" or a
 * named function, include/strata/call_grammar.h) in the sampler and
 * through the real engine loop:
 *
 *   - on a small hand-made vocabulary, along random walks, the mask
 *     (json_mask.c: first-byte and two-byte tables, the schema's fast paths
 *     inside the arguments, the think block's free text, walks across the
 *     frame / JSON boundary) allows exactly the tokens a brute-force feed
 *     of each token's bytes into the grammar allows;
 *   - inside an argument string with maxLength or a pattern (every JSON
 *     format, Qwen3-Coder / GLM JSON values) the bounded / pattern string
 *     fast path decides exactly what the grammar does, on every token of a
 *     few thousand;
 *   - sampled runs on random logits end only on a whole reply, and every
 *     whole reply parses (reply_parse.h) into calls of the allowed tools
 *     with arguments valid against their schema;
 *   - Qwen3-Coder's parameter blocks (typed, enum, optional, required) the
 *     same way: whole replies parse into arguments valid against the schema;
 *   - Magistral's think block spelt "<think>" or "[THINK]";
 *   - the CPU model runner (tiny synthetic model) under a named function,
 *     several seeds and temperatures: the reply is a call to that function
 *     with schema-valid arguments whenever it ends with STOP, a valid
 *     prefix otherwise; with --batch-mtp the tokens are the same as without.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "mask_fixture.h"
#include "model_fixture.h"
#include "strata/call_grammar.h"
#include "strata/json_schema.h"
#include "strata/reply_parse.h"
#include "support.h"

static const char tools[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
    "\"unit\":{\"enum\":[\"c\",\"f\"]}},\"required\":[\"city\"],"
    "\"additionalProperties\":false}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"set_temp\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"deg\":{\"type\":\"integer\"},"
    "\"on\":{\"type\":\"boolean\"},\"tags\":{\"type\":\"array\",\"items\":"
    "{\"type\":\"string\"}}},\"required\":[\"deg\"],\"additionalProperties\":false}}}]";

static const char weather_schema[] =
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
    "\"unit\":{\"enum\":[\"c\",\"f\"]}},\"required\":[\"city\"],"
    "\"additionalProperties\":false}";
static const char time_schema[] =
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";
static const char temp_schema[] =
    "{\"type\":\"object\",\"properties\":{\"deg\":{\"type\":\"integer\"},"
    "\"on\":{\"type\":\"boolean\"},\"tags\":{\"type\":\"array\",\"items\":"
    "{\"type\":\"string\"}}},\"required\":[\"deg\"],\"additionalProperties\":false}";

/* ---- the mask on a hand-made vocabulary ------------------------------ */

static const char *const vocab[] = {
    "<eos>", "<tool_call>", "\n", "{\"name\": \"", "get_weather", "get_time",
    "\", \"arguments\": ", "{", "}", "\"", "city", "\":", " ", "Paris", "}\n</tool_call>",
    "}\n", "</tool_call>", "<think>", "</think>", "hmm", "<", "/", "think", ">", "\n\n",
    "{\"", "\"}", "}}", "unit", "c", "f", "\": \"", ", ", "<tool", "_call>", "get",
    "_time", "\",", "x", "tool", "\"city\": \"", "<tool_call>\n{\"name\": \"get_time\"",
    "[TOOL_CALLS]", "[ARGS]", "[", "]", "THINK", "[/THINK]", "{}", "{}}\n</tool_call>",
    "", "\t", "  ", "call", "_", "name", "arguments", "}\n</tool_call>\n<tool_call>\n",
    "get_weather\", \"arguments\": {\"", "\"c\"}", "\"f\"}}", "a<b", "\", \"parameters\": ",
    " <tool_call>", "\n<tool_call>\n{\"name\": \"", "\n\n[TOOL_CALLS]", " {\"",
    "<function=", ">\n", "</function>", "\n</tool_call>", "<parameter=city>\n", "</parameter>\n",
    "</function>\n</tool_call>", "</", "function", "<tool_call>\n<function=get_time>\n",
    /* Qwen3-Coder parameter blocks */
    "set_temp", "<parameter=deg>\n", "<parameter=on>\n", "<parameter=unit>\n", "12", "-",
    "true", "\n</parameter>\n", "<parameter=", "deg", "tags", "[\"a\"]", "\n</",
    "parameter", "c\n</parameter>\n", "</parameter>", "Paris\n", "<think>\n", "\n</think>\n\n",
};
#define NV ((int32_t)(sizeof(vocab) / sizeof(vocab[0])))

struct gspec {
    enum st_call_format f;
    enum st_call_think think;
    bool parallel;
    const char *name;
    bool either;   /* Magistral: "<think>" or "[THINK]" */
};

static const struct gspec gspecs[] = {
    { ST_CALL_HERMES, ST_CALL_THINK_NONE, true, "get_weather", false },
    { ST_CALL_HERMES, ST_CALL_THINK_OPTIONAL, true, NULL, false },
    { ST_CALL_HERMES, ST_CALL_THINK_OPEN, false, "get_time", false },
    { ST_CALL_MISTRAL11, ST_CALL_THINK_OPTIONAL, true, NULL, false },
    { ST_CALL_LLAMA, ST_CALL_THINK_NONE, true, "get_weather", false },
    { ST_CALL_XML, ST_CALL_THINK_NONE, true, NULL, false },
    { ST_CALL_XML, ST_CALL_THINK_NONE, false, "set_temp", false },
    { ST_CALL_MISTRAL11, ST_CALL_THINK_OPTIONAL, true, NULL, true },
};
#define NG ((int)(sizeof(gspecs) / sizeof(gspecs[0])))

static struct st_call_grammar *compile(const struct gspec *s)
{
    struct st_call_spec sp = { .format = s->f, .think = s->think, .parallel = s->parallel,
                               .tools_json = tools, .tools_len = strlen(tools),
                               .name = s->name, .think_either = s->either };
    struct st_call_grammar *g = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_call_grammar_compile(&sp, &g, NULL, &err) == ST_OK, "%s", err.msg);
    return g;
}

static void make_sampler(struct st_sampler *s, struct st_call_grammar *g, float temp,
                         uint64_t seed)
{
    struct st_gen_params p = mask_params(temp, seed);
    p.tool_calls = g;   /* borrowed by the sampler */
    mask_sampler(s, &p, vocab, NV);
}

/* The mask's rule by brute force: end of generation when complete; no
 * blanks once no call may follow unless the end is banned; every other
 * token's bytes through the grammar. */
static bool expected(const struct st_sampler *s, int32_t id, bool eos_banned)
{
    const struct st_call_state *st = &s->cs;
    if (id == 0)
        return st_call_complete(st);
    const char *p = vocab[id];
    if (!p[0])
        return false;
    if (st_call_done(st) && !eos_banned && strchr(" \t\n\r", p[0]))
        return false;
    struct st_call_state j;
    st_call_state_copy(&j, st);
    return st_call_feed(&j, p, strlen(p));
}

START_TEST(test_engine_calls_mask_matches_grammar)
{
    for (int gi = 0; gi < NG; gi++) {
        struct st_call_grammar *g = compile(&gspecs[gi]);
        for (int run = 0; run < 40; run++) {
            struct st_sampler walk;
            char what[48];
            snprintf(what, sizeof(what), "grammar %d run %d", gi, run);
            make_sampler(&walk, g, 1.0f, (uint64_t)run);
            mask_walk_matches(&walk, vocab, NV, (uint64_t)run * 31 + (uint64_t)gi, 80, 0.0f,
                              expected, what);
            st_sampler_fini(&walk);
        }
        st_call_grammar_unref(g);
    }
}
END_TEST

/* ---- bounded and pattern strings inside the arguments -------------------
 * (json_mask.c step_calls: st_json_schema_run_view on st_call_args' state)
 * On a few thousand tokens (every single byte, letter and digit runs,
 * quotes, backslashes, '<' and the closing tags, UTF-8), at states inside
 * an argument string with maxLength or a pattern in every JSON call format
 * and in Qwen3-Coder / GLM JSON values: the fast path is on where it
 * should be and the mask allows exactly what the grammar does, token by
 * token; then along random walks from there. */

static const char run_tools[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"code\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}[0-9]{3,5}$\"},"
    "\"name\":{\"type\":\"string\",\"maxLength\":12},"
    "\"tag\":{\"type\":\"string\",\"pattern\":\"^[a-z ]+$\",\"maxLength\":20},"
    "\"obj\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\","
    "\"pattern\":\"^[a-z</> ]+$\",\"maxLength\":30}},\"additionalProperties\":false}},"
    "\"additionalProperties\":false}}}]";

#define NCV 3000
static char *cvocab[NCV];

static void cvocab_make(void)
{
    static const char *const bits[] = {
        "\xc3\xa9", "\xe6\x95\xb0", "\xc3", "\"", "\\", "\",", "\"}", "\"}}", "<", "</",
        "</parameter>", "\n</parameter>\n", "</tool_call>", "}\n</tool_call>", "</arg_value>",
        "\\u0041", "1", "42", "-", "_", "/", ">", "\t", "\xff", "{", ":", ", \"",
    };
    static const char *const lts[] = {   /* plain tokens a '<' makes a closing tag of */
        "ab</parameter>", "</param", "</parameter", "ab</tool_call>", "</tool", "a</arg_value>",
        "</arg_", "x</function>", "a<b", "ab</p", "</t", "<>", "a/>",
    };
    uint64_t rng = 777;
    int32_t n = 0;
    cvocab[n++] = strdup("<eos>");
    for (int b = 1; b < 256; b++) {
        char one[2] = { (char)b, 0 };
        cvocab[n++] = strdup(one);
    }
    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
        cvocab[n++] = strdup(bits[i]);
    for (size_t i = 0; i < sizeof(lts) / sizeof(lts[0]); i++)
        cvocab[n++] = strdup(lts[i]);
    while (n < NCV) {
        char t[ST_SAMPLE_MAX_PIECE + 1];
        size_t len = 0, cap = mask_lcg(&rng) % 40 == 0 ? 200 : mask_lcg(&rng) % 10 + 1;
        unsigned mix = (unsigned)(mask_lcg(&rng) % 4);   /* 0, 1: letters, digits, blanks */
        if (mask_lcg(&rng) % 3 == 0)
            t[len++] = ' ';
        while (len < cap) {
            uint64_t r = mask_lcg(&rng) % 64;
            if (mix >= 2 && r < 8) {
                const char *b = bits[mask_lcg(&rng) % (sizeof(bits) / sizeof(bits[0]))];
                size_t bl = strlen(b);
                if (len + bl > cap)
                    break;
                memcpy(t + len, b, bl);
                len += bl;
                continue;
            }
            t[len++] = r < 26 ? (char)('a' + r) : r < 40 ? (char)('A' + r - 26)
                     : r < 54 ? (char)('0' + r % 10) : r < 58 ? ' ' : (char)('a' + r % 26);
        }
        t[len] = '\0';
        if (len > 0)
            cvocab[n++] = strdup(t);
    }
}

static void cvocab_free(void)
{
    for (int32_t i = 0; i < NCV; i++)
        free(cvocab[i]);
}

/* expected() on cvocab. */
static bool cexpected(const struct st_sampler *s, int32_t id, bool eos_banned)
{
    const struct st_call_state *st = &s->cs;
    if (id == 0)
        return st_call_complete(st);
    const char *p = cvocab[id];
    if (st_call_done(st) && !eos_banned && strchr(" \t\n\r", p[0]))
        return false;
    struct st_call_state j;
    st_call_state_copy(&j, st);
    return st_call_feed(&j, p, strlen(p));
}

#define HPRE  "<tool_call>\n{\"name\": \"code\", \"arguments\": "
#define LPRE  "{\"name\": \"code\", \"parameters\": "
#define M7PRE "[TOOL_CALLS][{\"name\": \"code\", \"arguments\": "
#define XPRE  "<tool_call>\n<function=code>\n<parameter="

/* A format, the text that puts the grammar inside an argument's string,
 * the view expected there (ST_JS_RUN_NONE: walked, a raw xml value). */
static const struct {
    enum st_call_format f;
    const char *text;
    int kind;
} run_at[] = {
    { ST_CALL_HERMES, HPRE "{\"id\": \"", ST_JS_RUN_PATTERN },
    { ST_CALL_HERMES, HPRE "{\"id\": \"AB12", ST_JS_RUN_PATTERN },
    { ST_CALL_HERMES, HPRE "{\"tag\": \"ab c", ST_JS_RUN_PATTERN },
    { ST_CALL_HERMES, HPRE "{\"name\": \"abcdefghi", ST_JS_RUN_COUNT },
    { ST_CALL_HERMES, HPRE "{\"obj\": {\"k\": \"a</", ST_JS_RUN_PATTERN },
    { ST_CALL_LLAMA, LPRE "{\"tag\": \"", ST_JS_RUN_PATTERN },
    { ST_CALL_LLAMA, LPRE "{\"name\": \"\xc3\xa9", ST_JS_RUN_COUNT },
    { ST_CALL_MISTRAL11, "[TOOL_CALLS]code[ARGS]{\"id\": \"Q", ST_JS_RUN_PATTERN },
    { ST_CALL_MISTRAL11, "[TOOL_CALLS]code[ARGS]{\"name\": \"", ST_JS_RUN_COUNT },
    { ST_CALL_MISTRAL7, M7PRE "{\"tag\": \"xy", ST_JS_RUN_PATTERN },
    { ST_CALL_MISTRAL7, M7PRE "{\"id\": \"ZZ9", ST_JS_RUN_PATTERN },
    { ST_CALL_XML, XPRE "obj>\n{\"k\": \"ab", ST_JS_RUN_PATTERN },
    { ST_CALL_XML, XPRE "obj>\n{\"k\": \"a>", ST_JS_RUN_PATTERN },
    { ST_CALL_XML, XPRE "tag>\nab", ST_JS_RUN_NONE },
    { ST_CALL_GLM, "<tool_call>code\n<arg_key>obj</arg_key>\n<arg_value>{\"k\": \"",
      ST_JS_RUN_PATTERN },
    { ST_CALL_GLM, "<tool_call>code\n<arg_key>name</arg_key>\n<arg_value>abc", ST_JS_RUN_NONE },
};
#define NRA ((int)(sizeof(run_at) / sizeof(run_at[0])))

/* A sampler under the named "code" of run_tools in format f, fed 'text'. */
static struct st_call_grammar *run_sampler(struct st_sampler *s, enum st_call_format f,
                                           const char *text, uint64_t seed)
{
    struct st_call_spec sp = { .format = f, .think = ST_CALL_THINK_NONE, .parallel = false,
                               .tools_json = run_tools, .tools_len = strlen(run_tools),
                               .name = "code" };
    struct st_call_grammar *g = NULL;
    struct st_err err = { 0 };
    int32_t n_fallback = -1;
    ck_assert_msg(st_call_grammar_compile(&sp, &g, &n_fallback, &err) == ST_OK, "%s", err.msg);
    ck_assert_int_eq(n_fallback, 0);
    struct st_gen_params p = mask_params(1.0f, seed);
    p.tool_calls = g;
    mask_sampler(s, &p, (const char *const *)cvocab, NCV);
    ck_assert_msg(st_call_feed(&s->cs, text, strlen(text)), "'%s'", text);
    return g;
}

START_TEST(test_engine_calls_args_run_fast_path)
{
    cvocab_make();
    int64_t allowed = 0;
    for (int ci = 0; ci < NRA; ci++) {
        struct st_sampler s;
        struct st_call_grammar *g = run_sampler(&s, run_at[ci].f, run_at[ci].text, 1);
        for (int eb = 0; eb < 2; eb++) {
            struct st_json_step st;
            st_json_mask_step(&s, eb == 1, &st);
            ck_assert_msg(st.run.kind == run_at[ci].kind, "case %d: kind %d", ci,
                          (int)st.run.kind);
            for (int32_t id = 0; id < NCV; id++) {
                bool want = cexpected(&s, id, eb == 1);
                allowed += want;
                ck_assert_msg(st_json_mask_allows(&s, &st, id) == want,
                              "case %d eos_banned %d token %d '%s': want %d", ci, eb, (int)id,
                              cvocab[id], (int)want);
            }
        }
        st_sampler_fini(&s);
        st_call_grammar_unref(g);
        for (int run = 0; run < 4; run++) {   /* and along random walks from there */
            char what[48];
            snprintf(what, sizeof(what), "args case %d run %d", ci, run);
            g = run_sampler(&s, run_at[ci].f, run_at[ci].text, (uint64_t)run);
            mask_walk_matches(&s, (const char *const *)cvocab, NCV,
                              (uint64_t)run * 13 + (uint64_t)ci, 12, 0.0f, cexpected, what);
            st_sampler_fini(&s);
            st_call_grammar_unref(g);
        }
    }
    ck_assert_int_gt(allowed, NRA * 20);   /* the states let many tokens on */
    cvocab_free();
}
END_TEST

/* ---- checking a whole reply ------------------------------------------ */

struct calls {
    char name[8][64];
    char args[8][512];
    int  n;
    size_t content;
};

static enum st_status on_ev(void *ctx, const struct st_reply_event *ev)
{
    struct calls *c = ctx;
    size_t l;
    switch (ev->kind) {
    case ST_REPLY_TOOL_START:
        ck_assert_int_lt(c->n, 8);
        snprintf(c->name[c->n], sizeof(c->name[0]), "%.*s", (int)ev->len, ev->text);
        c->args[c->n][0] = '\0';
        c->n++;
        break;
    case ST_REPLY_TOOL_ARGS:
        l = strlen(c->args[c->n - 1]);
        snprintf(c->args[c->n - 1] + l, sizeof(c->args[0]) - l, "%.*s", (int)ev->len, ev->text);
        break;
    case ST_REPLY_CONTENT:
        c->content += ev->len;
        break;
    default:
        break;
    }
    return ST_OK;
}

static bool args_valid(const char *schema, const char *args)
{
    struct st_json_schema *s = NULL;
    ck_assert_int_eq(st_json_schema_compile(schema, strlen(schema), &s, NULL), ST_OK);
    struct st_json_schema_state st;
    st_json_schema_state_init(&st, s);
    bool ok = st_json_schema_feed(&st, args, strlen(args)) && st_json_schema_complete(&st);
    st_json_schema_unref(s);
    return ok;
}

/* A whole reply: parses into >= 1 call (exactly 1 when !parallel), no
 * content, each call to an allowed tool with valid arguments. */
static void check_reply(const struct gspec *gs, const char *text, size_t len)
{
    struct st_reply_opts o = { .reasoning = true, .tools = true,
                               .in_reasoning = gs->think == ST_CALL_THINK_OPEN,
                               .bare_json_calls = gs->f == ST_CALL_LLAMA,
                               .xml_calls = gs->f == ST_CALL_XML,
                               .tools_json = st_str_c(tools),
                               .mistral = gs->f == ST_CALL_MISTRAL11 };
    struct st_reply_parser p;
    struct calls c;
    memset(&c, 0, sizeof(c));
    st_reply_parser_init(&p, &o);
    ck_assert_int_eq(st_reply_parser_feed(&p, text, len, on_ev, &c), ST_OK);
    ck_assert_int_eq(st_reply_parser_finish(&p, on_ev, &c), ST_OK);
    st_reply_parser_fini(&p);
    ck_assert_msg(c.n >= 1 && (gs->parallel || c.n == 1), "%d calls in '%.*s'", c.n, (int)len,
                  text);
    ck_assert_msg(c.content == 0, "content in '%.*s'", (int)len, text);
    for (int i = 0; i < c.n; i++) {
        bool w = strcmp(c.name[i], "get_weather") == 0, t = strcmp(c.name[i], "set_temp") == 0;
        ck_assert_msg(w || t || strcmp(c.name[i], "get_time") == 0, "name '%s'", c.name[i]);
        if (gs->name)
            ck_assert_str_eq(c.name[i], gs->name);
        ck_assert_msg(args_valid(w ? weather_schema : t ? temp_schema : time_schema, c.args[i]),
                      "args '%s' in '%.*s'", c.args[i], (int)len, text);
    }
}

/* Runs on random logits: end only when whole, and every whole reply is
 * calls of the allowed tools; greedy checks only the top token, so both. */
START_TEST(test_engine_calls_runs_parse)
{
    const float temps[] = { 0.0f, 1.0f };
    char text[8192];
    for (int gi = 0; gi < NG; gi++) {
        struct st_call_grammar *g = compile(&gspecs[gi]);
        int ended = 0;
        for (int ti = 0; ti < 2; ti++) {
            for (int run = 0; run < 60; run++) {
                struct st_sampler s;
                make_sampler(&s, g, temps[ti], (uint64_t)run + 100);
                uint64_t rng = (uint64_t)run * 7919 + (uint64_t)ti;
                size_t len = 0;
                for (int step = 0; step < 300; step++) {
                    float logits[NV];
                    for (int32_t t = 0; t < NV; t++)
                        logits[t] = (float)(mask_lcg(&rng) % 1000) / 100.0f;
                    logits[0] += 3.0f;
                    bool done = st_call_complete(&s.cs);
                    struct st_sample_result res;
                    if (st_sampler_sample(&s, logits, NV, NULL, 0, &res) != ST_OK)
                        break;
                    st_sampler_accept(&s, res.token);
                    if (res.token == 0) {
                        ck_assert(done);
                        check_reply(&gspecs[gi], text, len);
                        ended++;
                        break;
                    }
                    size_t n = strlen(vocab[res.token]);
                    ck_assert(len + n < sizeof(text));
                    memcpy(text + len, vocab[res.token], n);
                    len += n;
                }
                st_sampler_fini(&s);
            }
        }
        fprintf(stderr, "grammar %d: %d of 120 runs completed\n", gi, ended);
        ck_assert_int_ge(ended, 5);   /* random logits: long strings keep some runs going */
        st_call_grammar_unref(g);
    }
}
END_TEST

/* ---- the engine loop on the tiny model ------------------------------- */

static char dir[256];

static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

static void use_calls(struct st_gen_params *p, void *g)
{
    st_call_grammar_ref(g);
    p->tool_calls = g;   /* the request's reference */
}

/* Two requests under grammar g; returns how many ended with STOP. */
static int run(const char *path, int32_t mtp, float temp, uint64_t seed,
               const struct gspec *gs, struct st_call_grammar *g, struct fixture_out *out)
{
    const struct fixture_pair pair = { { "The quick brown fox", "1 2 3" }, 200, seed };
    fixture_run_constrained_pair(path, mtp, temp, &pair, use_calls, g, out);
    int stops = 0;
    for (int32_t i = 0; i < 2; i++) {
        const struct fixture_out *o = &out[i];
        struct st_call_state st;
        st_call_state_init(&st, g);
        ck_assert_msg(st_call_feed(&st, o->text, o->len), "not valid: '%s'", o->text);
        if (o->finish == ST_FINISH_STOP) {
            ck_assert_msg(st_call_complete(&st), "stopped early: '%s'", o->text);
            check_reply(gs, o->text, o->len);
            stops++;
        }
    }
    return stops;
}

START_TEST(test_engine_calls_model_calls_named)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "mtp-demo", "q8_0", 3, false);
    static const struct gspec named[] = {
        { ST_CALL_LLAMA, ST_CALL_THINK_NONE, false, "get_time", false },
        { ST_CALL_HERMES, ST_CALL_THINK_NONE, true, "get_time", false },
        { ST_CALL_HERMES, ST_CALL_THINK_NONE, false, "get_weather", false },
        { ST_CALL_XML, ST_CALL_THINK_NONE, false, "set_temp", false },
    };
    const float temps[3] = { 0.0f, 0.7f, 1.2f };
    int stops = 0;
    for (int gi = 0; gi < 4; gi++) {
        struct st_call_grammar *g = compile(&named[gi]);
        for (int ti = 0; ti < 3; ti++) {
            struct fixture_out off[2], on[2];
            uint64_t seed = 11 + (uint64_t)ti * 5 + (uint64_t)gi;
            stops += run(path, 0, temps[ti], seed, &named[gi], g, off);
            fprintf(stderr, "engine calls %d t=%.1f: '%.100s'\n", gi, (double)temps[ti],
                    off[0].text);
            (void)run(path, 3, temps[ti], seed, &named[gi], g, on);
            for (int i = 0; i < 2; i++) {
                ck_assert_int_eq(off[i].n, on[i].n);
                ck_assert_str_eq(off[i].text, on[i].text);
            }
        }
        st_call_grammar_unref(g);
    }
    fprintf(stderr, "engine calls: %d of 24 replies whole\n", stops);
    ck_assert_int_gt(stops, 0);
}
END_TEST

static Suite *engine_calls_suite(void)
{
    Suite *s = suite_create("engine_calls");
    TCase *t = tcase_create("calls");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_engine_calls_model_calls_named);
    suite_add_tcase(s, t);
    /* the brute-force walks: ctest's engine_calls_slow (label slow) */
    TCase *brute = tcase_create("brute");
    tcase_set_tags(brute, "slow");
    tcase_add_checked_fixture(brute, setup, teardown);
    tcase_set_timeout(brute, 600);
    tcase_add_test(brute, test_engine_calls_mask_matches_grammar);
    tcase_add_test(brute, test_engine_calls_args_run_fast_path);
    tcase_add_test(brute, test_engine_calls_runs_parse);
    suite_add_tcase(s, brute);
    return s;
}

int main(void)
{
    return support_run_suite(engine_calls_suite(), CK_FORK);
}
