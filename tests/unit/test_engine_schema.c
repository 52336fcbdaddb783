/* test_engine_schema.c -- response_format json_schema in the sampler and
 * through the real engine loop:
 *
 *   - on a small hand-made vocabulary, along random walks, the mask
 *     (json_mask.c: first-byte table, string and whitespace fast paths,
 *     walks) allows exactly the tokens a brute-force feed of each token's
 *     bytes into the validator allows, for several schemas (objects,
 *     enums, anyOf, $ref recursion, a top-level number, ranges and
 *     string lengths);
 *   - sampled runs on random logits only build valid prefixes, end only on
 *     a complete document, and many complete;
 *   - pattern / format strings (a vocabulary of their own): the mask
 *     matches the validator, and every document a random-logits run
 *     completes decodes to a string POSIX regexec matches with the
 *     pattern;
 *   - bounded and pattern strings on a 3000-token vocabulary: at chosen
 *     states and along random walks the string fast path (a count of code
 *     points, a chain of the pattern's DFA) allows exactly what the
 *     validator does, token by token;
 *   - random schemas (pattern, format, lengths, enum, anyOf, nullable,
 *     nested in objects and arrays) on a random vocabulary of odd bytes
 *     and long runs: the same, along random walks;
 *   - the CPU model runner (tiny synthetic model) generates under a schema:
 *     every text is a valid prefix, complete when it ends with STOP; with
 *     --batch-mtp the tokens are the same as without.
 */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pool.h"
#include "mask_fixture.h"
#include "model_fixture.h"
#include "strata/json_schema.h"
#include "support.h"

/* ---- the mask on a hand-made vocabulary ------------------------------ */

static const char *const vocab[] = {
    "<eos>", "{", "}", "\"", "a", "\":", ":", "1", "-0.5e+3", " ", "[", "]", ",", "true",
    "name", "{\"", "\"}", "null", "\\n", "x\"", "}}", "\n", "0", "\xc3\xa9", "",
    " }", "  ,", " \"", " name", " 1", "\t\n ", " {\"", " true", " :", "\"\\u00", "e9\"",
    "age", "\":\"", "\",\"", "ag", "e\":", "red", "green", "\"red\"", "12", "2", ".5", "kids",
    "\"v\":", "\"kids\":[", "v", "]}", "false", "                        ", "hello world",
    "\"name\":\"", "false,", "e", "ds", "na", "me", "\"age\":1}",
};
#define NV ((int32_t)(sizeof(vocab) / sizeof(vocab[0])))

static const char *const schemas[] = {
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"age\":{\"type\":\"integer\"},\"a\":{\"enum\":[\"red\",\"green\",12,true]}},"
    "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}",
    "{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
    "\"kids\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"$ref\":\"#/$defs/n\"}}},"
    "\"required\":[\"v\"],\"additionalProperties\":false}},\"$ref\":\"#/$defs/n\"}",
    "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"}},"
    "\"required\":[\"a\"],\"additionalProperties\":false},{\"type\":\"array\","
    "\"items\":{\"type\":[\"number\",\"null\"]}},{\"type\":\"string\"}]}",
    "{\"type\":\"number\"}",
    "{\"type\":\"object\"}",
    /* ranges and lengths (the string's 270: the free-string fast path ends
     * 256 code points before its end) */
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":1,"
    "\"maxLength\":3},\"age\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":21},"
    "\"a\":{\"type\":\"number\",\"exclusiveMinimum\":-1,\"maximum\":2.5}},"
    "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}",
    "{\"type\":\"number\",\"minimum\":-0.5,\"maximum\":12.5}",
    "{\"type\":\"string\",\"minLength\":2,\"maxLength\":270}",
};
#define NS ((int)(sizeof(schemas) / sizeof(schemas[0])))

static void make_sampler(struct st_sampler *s, struct st_json_schema *sc, float temp,
                         uint64_t seed)
{
    struct st_gen_params p = mask_params(temp, seed);
    p.json_schema = sc;   /* borrowed by the sampler */
    mask_sampler(s, &p, vocab, NV);
}

/* The mask's rule by brute force: the first byte under the whitespace
 * policy (none before the document, none after it unless eos is banned),
 * then every byte through the validator. */
static bool expected(const struct st_sampler *s, int32_t id, bool eos_banned)
{
    const struct st_json_schema_state *st = &s->jss;
    if (id == 0)
        return st_json_schema_complete(st);
    const char *p = vocab[id];
    if (!p[0])
        return false;
    if (mask_is_ws(p[0]) && (st_json_schema_empty(st) ||
                        (st_json_schema_complete(st) && !eos_banned)))
        return false;
    struct st_json_schema_state j;
    st_json_schema_state_copy(&j, st);
    return st_json_schema_feed(&j, p, strlen(p));
}

START_TEST(test_engine_schema_mask_matches_validator)
{
    for (int si = 0; si < NS; si++) {
        struct st_json_schema *sc = mask_schema(schemas[si]);
        for (int run = 0; run < 30; run++) {
            struct st_sampler walk;
            char what[48];
            snprintf(what, sizeof(what), "schema %d run %d", si, run);
            make_sampler(&walk, sc, 1.0f, (uint64_t)run);
            mask_walk_matches(&walk, vocab, NV, (uint64_t)run * 31 + (uint64_t)si, 80, 2.0f,
                              expected, what);
            st_sampler_fini(&walk);
        }
        st_json_schema_unref(sc);
    }
}
END_TEST

/* Runs on random logits: every text a valid prefix, eos only when
 * complete (and then the only choice), the accepted state tracks the text;
 * greedy checks only the top token, so run both. */
START_TEST(test_engine_schema_runs_stay_valid)
{
    const float temps[] = { 0.0f, 1.0f };
    char text[8192];
    for (int si = 0; si < NS; si++) {
        struct st_json_schema *sc = mask_schema(schemas[si]);
        int ended = 0;
        for (int ti = 0; ti < 2; ti++) {
            for (int run = 0; run < 60; run++) {
                struct st_sampler s;
                make_sampler(&s, sc, temps[ti], (uint64_t)run);
                struct st_draw d;
                ck_assert(!st_sampler_backend_draw(&s, &d));
                uint64_t rng = (uint64_t)run * 7919 + (uint64_t)ti;
                size_t len = 0;
                for (int step = 0; step < 200; step++) {
                    float logits[NV];
                    for (int32_t t = 0; t < NV; t++)
                        logits[t] = (float)(mask_lcg(&rng) % 1000) / 100.0f;
                    logits[0] += 4.0f;
                    bool done = st_json_schema_complete(&s.jss);
                    struct st_sample_result res;
                    if (st_sampler_sample(&s, logits, NV, NULL, 0, &res) != ST_OK)
                        break;
                    st_sampler_accept(&s, res.token);
                    if (res.token == 0) {
                        ck_assert(done);
                        ended++;
                        break;
                    }
                    size_t n = strlen(vocab[res.token]);
                    ck_assert(len + n < sizeof(text));
                    memcpy(text + len, vocab[res.token], n);
                    len += n;
                    struct st_json_schema_state chk;
                    st_json_schema_state_init(&chk, sc);
                    ck_assert_msg(st_json_schema_feed(&chk, text, len), "invalid: %.*s",
                                  (int)len, text);
                    ck_assert_int_eq(st_json_schema_complete(&chk),
                                     st_json_schema_complete(&s.jss));
                }
                st_sampler_fini(&s);
            }
        }
        fprintf(stderr, "schema %d: %d of 120 runs completed\n", si, ended);
        ck_assert_int_gt(ended, 10);
        st_json_schema_unref(sc);
    }
}
END_TEST

/* ---- pattern and format strings ---------------------------------------- */

static const char *const pvocab[] = {
    "<eos>", "\"", "a", "b", "c", "ab", "abc", "-", "\\u002d", "\\u0061", "0", "1", "2", "9",
    "12", "2024", "-0", "01", "31", "-12-", "\"2024-", "\"a", "b\"", "1\"", " ", "\\", "u00",
    "\\n", "x", "\"ab-", "\xc3\xa9", "T", "Z", ":", "00:", "2\"",
};
#define NPV ((int32_t)(sizeof(pvocab) / sizeof(pvocab[0])))

/* A schema and the POSIX ERE every completed string must match. */
static const struct { const char *schema, *ere; } pcases[] = {
    { "{\"type\":\"string\",\"pattern\":\"^[a-c]+-[0-9]{2}$\"}", "^[a-c]+-[0-9]{2}$" },
    { "{\"type\":\"string\",\"pattern\":\"ab|12\",\"maxLength\":6}", "ab|12" },
    { "{\"type\":\"string\",\"format\":\"date\"}",
      "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$" },
    { "{\"type\":\"string\",\"pattern\":\"^(a|b)*c?$\",\"minLength\":3}", "^(a|b)*c?$" },
};
#define NPC ((int)(sizeof(pcases) / sizeof(pcases[0])))

static bool pexpected(const struct st_sampler *s, int32_t id, bool eos_banned)
{
    const struct st_json_schema_state *st = &s->jss;
    if (id == 0)
        return st_json_schema_complete(st);
    const char *p = pvocab[id];
    if (mask_is_ws(p[0]) && (st_json_schema_empty(st) ||
                        (st_json_schema_complete(st) && !eos_banned)))
        return false;
    struct st_json_schema_state j;
    st_json_schema_state_copy(&j, st);
    return st_json_schema_feed(&j, p, strlen(p));
}

/* The JSON string text (quotes included, nothing after but blanks)
 * decoded to out (UTF-8; the vocabulary spells \u00XX escapes only). */
static void decode_string(const char *t, size_t n, char *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < n && t[i] == ' ')
        i++;
    ck_assert(i < n && t[i] == '"');
    for (i++; i < n && t[i] != '"'; i++) {
        ck_assert(o + 2 < cap);
        if (t[i] != '\\') {
            out[o++] = t[i];
            continue;
        }
        const char *e = strchr("n\nt\tr\rb\bf\f\"\"\\\\//", t[++i]);
        if (t[i] != 'u') {
            ck_assert(e && t[i]);
            out[o++] = e[1];
            continue;
        }
        unsigned v = 0;
        ck_assert(sscanf(t + i + 1, "%4x", &v) == 1);
        ck_assert(v < 0x800);   /* the vocabulary spells \u00XX only */
        if (v >= 0x80) {
            out[o++] = (char)(0xc0 | v >> 6);
            v = 0x80 | (v & 0x3f);
        }
        out[o++] = (char)v;
        i += 4;
    }
    out[o] = '\0';
}

START_TEST(test_engine_schema_pattern_runs)
{
    char text[4096], str[4096];
    for (int ci = 0; ci < NPC; ci++) {
        struct st_json_schema *sc = mask_schema(pcases[ci].schema);
        regex_t re;
        ck_assert(regcomp(&re, pcases[ci].ere, REG_EXTENDED | REG_NOSUB) == 0);
        int ended = 0;
        for (int run = 0; run < 80; run++) {
            struct st_gen_params p = mask_params(run % 2 ? 1.0f : 0.0f, (uint64_t)run);
            p.json_schema = sc;
            struct st_sampler s;
            mask_sampler(&s, &p, pvocab, NPV);
            if (run < 20) {   /* the mask allows exactly what the validator does */
                char what[48];
                snprintf(what, sizeof(what), "pattern %d run %d", ci, run);
                mask_walk_matches(&s, pvocab, NPV, (uint64_t)run * 17 + (uint64_t)ci, 60, 1.0f,
                                  pexpected, what);
                st_sampler_fini(&s);
                continue;
            }
            uint64_t rng = (uint64_t)run * 104729 + (uint64_t)ci;
            size_t len = 0;
            for (int step = 0; step < 120; step++) {
                float logits[NPV];
                for (int32_t t = 0; t < NPV; t++)
                    logits[t] = (float)(mask_lcg(&rng) % 1000) / 100.0f;
                logits[0] += 3.0f;
                logits[1] += 2.0f;   /* the closing quote, so that strings end */
                struct st_sample_result res;
                if (st_sampler_sample(&s, logits, NPV, NULL, 0, &res) != ST_OK)
                    break;
                st_sampler_accept(&s, res.token);
                if (res.token == 0) {
                    decode_string(text, len, str, sizeof(str));
                    ck_assert_msg(regexec(&re, str, 0, NULL, 0) == 0, "case %d: '%.*s' -> "
                                  "'%s' does not match %s", ci, (int)len, text, str,
                                  pcases[ci].ere);
                    ended++;
                    break;
                }
                size_t n = strlen(pvocab[res.token]);
                ck_assert(len + n < sizeof(text));
                memcpy(text + len, pvocab[res.token], n);
                len += n;
            }
            st_sampler_fini(&s);
        }
        fprintf(stderr, "pattern case %d: %d of 60 runs completed\n", ci, ended);
        ck_assert_int_gt(ended, 10);
        regfree(&re);
        st_json_schema_unref(sc);
    }
}
END_TEST

/* ---- bounded and pattern strings on a large vocabulary ------------------
 * (json_mask.c run_allows, st_json_schema_run_view): a few thousand
 * tokens (every single byte, letter runs with and without a blank, mixed
 * with digits, punctuation, quotes, backslashes, UTF-8 and broken UTF-8,
 * runs up to 256 bytes), so that the fast path meets what it decides and
 * what it must hand to the DFA. */

#define NRV 3000
static char *rvocab[NRV];

static void rvocab_make(void)
{
    static const char *const bits[] = {
        "\xc3\xa9", "\xe6\x95\xb0", "\xf0\x9f\x98\x80", "\xc3", "\x80", "\"", "\\", "\",",
        "\\u0041", "1", "42", "-", "_", ".", "\t", "\xff", "\x7f", "{", ":",
    };
    uint64_t rng = 12345;
    int32_t n = 0;
    rvocab[n++] = strdup("<eos>");
    for (int b = 1; b < 256; b++) {
        char one[2] = { (char)b, 0 };
        rvocab[n++] = strdup(one);
    }
    while (n < NRV) {
        char t[ST_SAMPLE_MAX_PIECE + 1];
        size_t len = 0, cap = mask_lcg(&rng) % 50 == 0 ? 256 : mask_lcg(&rng) % 12 + 1;
        unsigned mix = (unsigned)(mask_lcg(&rng) % 4);   /* 0, 1: letters and blanks only */
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
            t[len++] = r < 26 ? (char)('a' + r) : r < 52 ? (char)('A' + r - 26)
                                                        : r < 58 ? ' ' : (char)('a' + r % 26);
        }
        t[len] = '\0';
        if (len > 0)   /* an empty piece is never allowed: not what is tested here */
            rvocab[n++] = strdup(t);
    }
}

static void rvocab_free(void)
{
    for (int32_t i = 0; i < NRV; i++)
        free(rvocab[i]);
}

/* The validator on the token's bytes, under the whitespace policy. */
static bool rexpected(const struct st_sampler *s, int32_t id, bool eos_banned)
{
    const struct st_json_schema_state *st = &s->jss;
    if (id == 0)
        return st_json_schema_complete(st);
    const char *p = rvocab[id];
    if (mask_is_ws(p[0]) && (st_json_schema_empty(st) ||
                        (st_json_schema_complete(st) && !eos_banned)))
        return false;
    struct st_json_schema_state j;
    st_json_schema_state_copy(&j, st);
    return st_json_schema_feed(&j, p, strlen(p));
}

/* A schema, texts that put its state where the fast path is on (or off:
 * kind), the kind each leads to. */
static const struct {
    const char *schema;
    struct { const char *text; int kind; uint32_t room; } at[4];
} rcases[] = {
    { "{\"type\":\"string\",\"pattern\":\"^[a-zA-Z ]+$\",\"maxLength\":40}",
      { { "\"", ST_JS_RUN_PATTERN, 40 }, { "\"Hello World", ST_JS_RUN_PATTERN, 29 },
        { "\"abcdefghijabcdefghijabcdefghijabcdefgh", ST_JS_RUN_PATTERN, 2 },
        { "\"abcdefghijabcdefghijabcdefghijabcdefghij", ST_JS_RUN_NONE, 0 } } },
    { "{\"type\":\"string\",\"maxLength\":40}",
      { { "\"", ST_JS_RUN_COUNT, 40 }, { "\"\xc3\xa9t\xc3\xa9 \\n", ST_JS_RUN_COUNT, 35 },
        { "\"abcdefghijabcdefghijabcdefghijabcdefghij", ST_JS_RUN_COUNT, 0 },
        { "\"ab\\u00", ST_JS_RUN_NONE, 0 } } },
    { "{\"type\":\"string\",\"pattern\":\"^[a-zA-Z ]+$\"}",
      { { "\"", ST_JS_RUN_PATTERN, 0 }, { "\"Hello", ST_JS_RUN_PATTERN, UINT32_MAX },
        { "\"Hello \\u0041", ST_JS_RUN_PATTERN, UINT32_MAX } } },
    { "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"string\",\"pattern\":"
      "\"^[A-Z][a-z]*( [A-Z][a-z]*)*$\",\"maxLength\":30},\"c\":{\"type\":\"string\","
      "\"minLength\":2,\"maxLength\":5}},\"required\":[\"n\",\"c\"],"
      "\"additionalProperties\":false}",
      { { "{\"n\":\"Ada", ST_JS_RUN_PATTERN, 0 }, { "{\"n\":\"Ada \\u0042yr", ST_JS_RUN_PATTERN, 0 },
        { "{\"c\":\"a", ST_JS_RUN_COUNT, 4 }, { "{\"c\":", ST_JS_RUN_NONE, 0 } } },
    { "{\"type\":\"string\",\"pattern\":\"^[a-c]+x[0-9]{2,4}$\"}",
      { { "\"ab", ST_JS_RUN_PATTERN, UINT32_MAX }, { "\"abx1", ST_JS_RUN_PATTERN, 0 } } },
    { "{\"type\":\"string\",\"pattern\":\"\\u00e9[a-z]{2}\",\"maxLength\":12}",
      { { "\"ab", ST_JS_RUN_PATTERN, 0 }, { "\"ab\xc3\xa9q", ST_JS_RUN_PATTERN, 0 },
        { "\"ab\xc3", ST_JS_RUN_NONE, 0 }, { "\"ab\\", ST_JS_RUN_NONE, 0 } } },
    { "{\"type\":\"string\",\"pattern\":\"^\\\\w{0,300}$\"}",
      { { "\"", ST_JS_RUN_PATTERN, ST_JSON_SCHEMA_RUN_MAX } } },
    { "{\"type\":\"string\",\"pattern\":\"^[a-z][a-c]+[A-Z]?$\"}",   /* the set splits */
      { { "\"", ST_JS_RUN_PATTERN, 1 }, { "\"xa", ST_JS_RUN_PATTERN, UINT32_MAX } } },
    { "{\"type\":[\"string\",\"null\"],\"maxLength\":8}",
      { { "\"abc", ST_JS_RUN_COUNT, 5 }, { "", ST_JS_RUN_NONE, 0 } } },
    /* a character split across tokens: no view in its middle (walked) */
    { "{\"type\":\"string\",\"maxLength\":3}",
      { { "\"a\xe2\x82", ST_JS_RUN_NONE, 0 }, { "\"a\xe2\x82\xac", ST_JS_RUN_COUNT, 1 },
        { "\"\xf0\x9f\x98\x80\xc3\xa9", ST_JS_RUN_COUNT, 1 }, { "\"\xc3", ST_JS_RUN_NONE, 0 } } },
};
#define NRC ((int)(sizeof(rcases) / sizeof(rcases[0])))

/* At each listed state: the view is the one expected and the mask allows
 * exactly what the validator does, token by token, over the whole
 * vocabulary (with end of generation banned and not). */
static void run_states(struct st_json_schema *sc, int ci)
{
    for (int a = 0; a < 4 && rcases[ci].at[a].text; a++) {
        struct st_gen_params p = mask_params(1.0f, 1);
        p.json_schema = sc;
        struct st_sampler s;
        mask_sampler(&s, &p, (const char *const *)rvocab, NRV);
        const char *t = rcases[ci].at[a].text;
        ck_assert_msg(st_json_schema_feed(&s.jss, t, strlen(t)) || !t[0], "case %d: '%s'", ci,
                      t);
        for (int eb = 0; eb < 2; eb++) {
            struct st_json_step st;
            st_json_mask_step(&s, eb == 1, &st);
            ck_assert_msg(st.run.kind == rcases[ci].at[a].kind, "case %d '%s': kind %d", ci, t,
                          (int)st.run.kind);
            if (st.run.kind != ST_JS_RUN_NONE && rcases[ci].at[a].room)
                ck_assert_msg(st.run.room == rcases[ci].at[a].room, "case %d '%s': room %u",
                              ci, t, (unsigned)st.run.room);
            int32_t allowed = 0;
            for (int32_t id = 0; id < NRV; id++) {
                bool want = rexpected(&s, id, eb == 1);
                allowed += want;
                ck_assert_msg(st_json_mask_allows(&s, &st, id) == want,
                              "case %d '%s' eos_banned %d token %d '%s': want %d", ci, t, eb,
                              (int)id, rvocab[id], (int)want);
            }
            ck_assert_int_gt(allowed, 0);
        }
        st_sampler_fini(&s);
    }
}

START_TEST(test_engine_schema_run_fast_path)
{
    rvocab_make();
    for (int ci = 0; ci < NRC; ci++) {
        struct st_json_schema *sc = mask_schema(rcases[ci].schema);
        run_states(sc, ci);
        for (int run = 0; run < 6; run++) {   /* and along random walks */
            struct st_gen_params p = mask_params(1.0f, (uint64_t)run);
            p.json_schema = sc;
            struct st_sampler s;
            mask_sampler(&s, &p, (const char *const *)rvocab, NRV);
            char what[48];
            snprintf(what, sizeof(what), "run case %d run %d", ci, run);
            mask_walk_matches(&s, (const char *const *)rvocab, NRV,
                              (uint64_t)run * 7 + (uint64_t)ci, 30, 1.0f, rexpected, what);
            st_sampler_fini(&s);
        }
        st_json_schema_unref(sc);
    }
    rvocab_free();
}
END_TEST

/* ---- random string schemas on a random vocabulary ---------------------
 * (review 2026-11-30) The fast path against the validator where the
 * chosen states above do not reach: random schemas that mix pattern,
 * format, minLength / maxLength, enum, anyOf and nullable strings inside
 * objects and arrays, on a vocabulary of every byte alone, runs of one
 * byte (letters, digits, blanks, 0x7F, lone 0x80, a cut 0xC3) up to 256
 * bytes, and random tokens with quotes, backslashes, escapes, control
 * bytes, UTF-8 and broken UTF-8 in the middle. Every token at every step
 * of random walks, with end of generation banned and not. */

#define NFV 1500
static char *fvocab[NFV];

static void fv_add(int32_t *n, const char *t, size_t len)
{
    char *c = malloc(len + 1);
    ck_assert_ptr_nonnull(c);
    memcpy(c, t, len);
    c[len] = '\0';
    fvocab[(*n)++] = c;
}

/* A random token: letters, digits and blanks, with pieces mixed in. */
static size_t fv_random(char *t, uint64_t *rng)
{
    static const char *const bits[] = {
        "\xc3\xa9", "\xe6\x95\xb0", "\xf0\x9f\x98\x80", "\xc3", "\x80", "\xbf", "\"", "\\",
        "\",", "\\u0041", "\\u00e9", "\\ud83d\\ude00", "\\ud83d", "\\n", "\\u", "-", "_", ".",
        "\t", "\xff", "\x7f", "{", ":", "\x01", "\xc0\x80", "\xed\xa0\x80", "@", "/", "T",
    };
    uint64_t r0 = mask_lcg(rng) % 100;
    size_t len = 0, cap = r0 < 5 ? mask_lcg(rng) % 256 + 1 : mask_lcg(rng) % 10 + 1;
    unsigned mix = (unsigned)(mask_lcg(rng) % 5);
    while (len < cap) {
        uint64_t r = mask_lcg(rng) % 72;
        if (mix >= 2 && r < 10) {
            const char *b = bits[mask_lcg(rng) % ST_ARRAY_LEN(bits)];
            size_t bl = strlen(b);
            if (len + bl > cap)
                break;
            memcpy(t + len, b, bl);
            len += bl;
        } else if (mix == 4 && r < 20) {
            t[len++] = (char)(mask_lcg(rng) % 255 + 1);   /* any byte but NUL */
        } else {
            t[len++] = r < 26 ? (char)('a' + r) : r < 52 ? (char)('A' + r - 26)
                     : r < 58 ? ' ' : r < 68 ? (char)('0' + r - 58) : 'a';
        }
    }
    return len;
}

static void fvocab_make(uint64_t rng)
{
    static const unsigned char fills[] = { 'a', 'Z', '1', ' ', 0x7f, 0x80, 0xc3, '-' };
    static const size_t lens[] = { 2, 3, 8, 40, 255, 256 };
    char t[ST_SAMPLE_MAX_PIECE + 1];
    int32_t n = 0;
    fv_add(&n, "<eos>", 5);
    for (int b = 1; b < 256; b++) {
        t[0] = (char)b;
        fv_add(&n, t, 1);
    }
    for (size_t f = 0; f < sizeof(fills); f++) {
        for (size_t l = 0; l < ST_ARRAY_LEN(lens); l++) {
            memset(t, fills[f], lens[l]);
            fv_add(&n, t, lens[l]);
            t[lens[l] - 1] = '0';   /* and one that leaves the run at its end */
            fv_add(&n, t, lens[l]);
        }
    }
    while (n < NFV) {
        size_t len = fv_random(t, &rng);
        if (len > 0)
            fv_add(&n, t, len);
    }
}

static bool fexpected(const struct st_sampler *s, int32_t id, bool eos_banned)
{
    const struct st_json_schema_state *st = &s->jss;
    if (id == 0)
        return st_json_schema_complete(st);
    const char *p = fvocab[id];
    if (mask_is_ws(p[0]) && (st_json_schema_empty(st) ||
                        (st_json_schema_complete(st) && !eos_banned)))
        return false;
    struct st_json_schema_state j;
    st_json_schema_state_copy(&j, st);
    return st_json_schema_feed(&j, p, strlen(p));
}

/* A string leaf: a pattern, a format or none, lengths or none, nullable
 * or not (JSON text of the schema, written at o). */
static size_t fschema_string(char *o, size_t cap, uint64_t *rng)
{
    static const char *const pats[] = {
        "^[a-zA-Z ]+$", "^[a-z]{2,5}$", "^[A-Z][a-z]*( [A-Z][a-z]*)*$", "ab+c",
        "^\\\\d{3}-\\\\d{4}$", "^.{0,5}$", "^[\\u00e9a-z]*$", "x", "^(foo|bar)+$",
        "^[a-c]+x[0-9]{2,4}$", "^\\\\w{0,300}$", "^[ -~]{3,}$", "^[^a]*$", "^a.*",
        "^[a-z]*[0-9]*$", "^[a-z ]{0,3}[A-Z]+$", "^\\\\S+$", "^[0-9a-f]{8}$", "^(a|bc)*d?$",
        "^.*z$", "^[ab]{3}[cd]{3}$", "^\\\\w+@\\\\w+$", "^[a-z]+(\\\\.[a-z]+)*$", "^\\u00e9+$",
    };
    static const char *const fmts[] = { "date", "time", "date-time", "uuid", "ipv4",
                                        "email", "hostname", "duration", "ipv6" };
    char lens[64] = "";
    unsigned lm = (unsigned)(mask_lcg(rng) % 4), k = (unsigned)(mask_lcg(rng) % 4);
    if (lm == 1)
        snprintf(lens, sizeof(lens), ",\"maxLength\":%u", (unsigned)(mask_lcg(rng) % 14));
    else if (lm == 2)
        snprintf(lens, sizeof(lens), ",\"minLength\":%u,\"maxLength\":%u",
                 (unsigned)(mask_lcg(rng) % 4), (unsigned)(mask_lcg(rng) % 10 + 4));
    else if (lm == 3)   /* the free-string fast path hands over 256 before the end */
        snprintf(lens, sizeof(lens), ",\"maxLength\":%u", (unsigned)(mask_lcg(rng) % 40 + 250));
    const char *ty = mask_lcg(rng) % 4 == 0 ? "[\"string\",\"null\"]" : "\"string\"";
    if (k < 2)
        return (size_t)snprintf(o, cap, "{\"type\":%s,\"pattern\":\"%s\"%s}", ty,
                                pats[mask_lcg(rng) % ST_ARRAY_LEN(pats)], lens);
    if (k == 2)
        return (size_t)snprintf(o, cap, "{\"type\":%s,\"format\":\"%s\"%s}", ty,
                                fmts[mask_lcg(rng) % ST_ARRAY_LEN(fmts)], lens);
    return (size_t)snprintf(o, cap, "{\"type\":%s%s}", ty, lens);
}

/* A random schema: string leaves, an enum, anyOf, arrays and objects. */
static size_t fschema(char *o, size_t cap, uint64_t *rng, int depth)
{
    unsigned k = depth > 2 ? 0 : (unsigned)(mask_lcg(rng) % 7);
    size_t n = 0;
    const char *sep[3] = { "", "", "" };
    switch (k) {
    case 0: case 1: case 2:
        return fschema_string(o, cap, rng);
    case 3:
        return (size_t)snprintf(o, cap, "{\"enum\":[\"abc\",\"abd\",\"x y\",null,\"\\u00e9\"]}");
    case 4:
        sep[0] = "{\"anyOf\":[", sep[1] = ",", sep[2] = "]}";
        break;
    case 5:
        sep[0] = "{\"type\":\"array\",\"maxItems\":3,\"items\":", sep[2] = "}";
        break;
    default:
        sep[0] = "{\"type\":\"object\",\"properties\":{\"a\":", sep[1] = ",\"b\":";
        sep[2] = "},\"required\":[\"a\",\"b\"],\"additionalProperties\":false}";
        break;
    }
    n += (size_t)snprintf(o + n, cap - n, "%s", sep[0]);
    n += fschema(o + n, cap - n, rng, depth + 1);
    if (sep[1][0]) {
        n += (size_t)snprintf(o + n, cap - n, "%s", sep[1]);
        n += fschema(o + n, cap - n, rng, depth + 1);
    }
    n += (size_t)snprintf(o + n, cap - n, "%s", sep[2]);
    ck_assert_uint_lt(n, cap);
    return n;
}

/* One walk of up to 'steps' tokens (single bytes favoured, so that the
 * walk stops at every room left): the mask against fexpected at each;
 * returns the steps taken on the fast path. */
static int fwalk(struct st_sampler *s, uint64_t rng, int steps, const char *what)
{
    float *logits = malloc(NFV * sizeof(*logits));
    int fast = 0;
    ck_assert_ptr_nonnull(logits);
    for (int step = 0; step < steps; step++) {
        for (int eb = 0; eb < 2; eb++) {
            struct st_json_step st;
            st_json_mask_step(s, eb == 1, &st);
            fast += st.run.kind != ST_JS_RUN_NONE;
            for (int32_t id = 0; id < NFV; id++)
                ck_assert_msg(st_json_mask_allows(s, &st, id) == fexpected(s, id, eb == 1),
                              "%s step %d eos_banned %d token %d '%s': kind %d room %u", what,
                              step, eb, (int)id, fvocab[id], (int)st.run.kind,
                              (unsigned)st.run.room);
        }
        for (int32_t t = 0; t < NFV; t++)
            logits[t] = (float)(mask_lcg(&rng) % 1000) / 100.0f + (fvocab[t][1] ? 0.0f : 3.0f);
        struct st_sample_result res;
        if (st_sampler_sample(s, logits, NFV, NULL, 0, &res) != ST_OK || res.token == 0)
            break;
        st_sampler_accept(s, res.token);
    }
    free(logits);
    return fast;
}

START_TEST(test_engine_schema_run_random_schemas)
{
    int fast = 0, compiled = 0;
    for (int it = 0; it < 48; it++) {
        uint64_t rng = 7000 + (uint64_t)it * 131;
        char text[4096], what[4200];
        fvocab_make(rng * 77 + 5);
        fschema(text, sizeof(text), &rng, 0);
        struct st_json_schema *sc = NULL;
        struct st_err err = { 0 };
        /* lengths a format cannot meet: nothing valid, refused at compile */
        if (st_json_schema_compile(text, strlen(text), &sc, &err) == ST_OK) {
            compiled++;
            for (int run = 0; run < 2; run++) {
                struct st_gen_params p = mask_params(1.0f, rng + (uint64_t)run);
                p.json_schema = sc;
                struct st_sampler s;
                mask_sampler(&s, &p, (const char *const *)fvocab, NFV);
                snprintf(what, sizeof(what), "%s run %d", text, run);
                fast += fwalk(&s, rng + (uint64_t)run, 20, what);
                st_sampler_fini(&s);
            }
            st_json_schema_unref(sc);
        }
        for (int32_t i = 0; i < NFV; i++)
            free(fvocab[i]);
    }
    ck_assert_int_ge(compiled, 30);
    ck_assert_int_ge(fast, 200);   /* the walks spend many steps on the fast path */
}
END_TEST

/* ---- the engine loop on the tiny model ------------------------------- */

static char dir[256];

static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

static const char *const engine_schema =
    "{\"type\":\"object\",\"properties\":{"
    "\"color\":{\"enum\":[\"red\",\"green\",\"blue\"]},"
    "\"n\":{\"type\":\"integer\"},\"ok\":{\"type\":\"boolean\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":2},"
    "\"next\":{\"anyOf\":[{\"type\":\"null\"},{\"$ref\":\"#\"}]}},"
    "\"required\":[\"color\",\"n\",\"ok\"],\"additionalProperties\":false}";

static void use_schema(struct st_gen_params *p, void *sc)
{
    st_json_schema_ref(sc);
    p->json_schema = sc;   /* the request's reference */
}

/* Two seeded requests under schema sc: each reply is a valid prefix of a
 * document of it, and complete where it stopped. */
static void run(const char *path, int32_t mtp, float temp, struct st_json_schema *sc,
                struct fixture_out *out)
{
    static const struct fixture_pair pair = FIXTURE_PAIR_DEFAULT;
    fixture_run_constrained_pair(path, mtp, temp, &pair, use_schema, sc, out);
    for (int32_t i = 0; i < 2; i++) {
        const struct fixture_out *o = &out[i];
        struct st_json_schema_state st;
        st_json_schema_state_init(&st, sc);
        ck_assert_msg(o->len > 0 && o->text[0] == '{', "'%s'", o->text);
        ck_assert_msg(st_json_schema_feed(&st, o->text, o->len), "not valid: '%s'", o->text);
        if (o->finish == ST_FINISH_STOP)
            ck_assert_msg(st_json_schema_complete(&st), "stopped early: '%s'", o->text);
    }
}

START_TEST(test_engine_schema_model_generates_valid)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "mtp-demo", "q8_0", 3, false);
    struct json_schema_ref { struct st_json_schema *s; } r = { mask_schema(engine_schema) };
    struct fixture_out off[2], on[2];
    const float temps[2] = { 0.0f, 0.7f };
    for (int ti = 0; ti < 2; ti++) {
        run(path, 0, temps[ti], r.s, off);
        fprintf(stderr, "engine schema t=%.1f: '%.80s'\n", (double)temps[ti], off[0].text);
        run(path, 3, temps[ti], r.s, on);
        for (int i = 0; i < 2; i++) {
            ck_assert_int_eq(off[i].n, on[i].n);
            ck_assert_str_eq(off[i].text, on[i].text);
        }
    }
    st_json_schema_unref(r.s);
}
END_TEST

static Suite *engine_schema_suite(void)
{
    Suite *s = suite_create("engine_schema");
    TCase *t = tcase_create("schema");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_engine_schema_model_generates_valid);
    suite_add_tcase(s, t);
    /* the brute-force walks: ctest's engine_schema_slow (label slow) */
    TCase *brute = tcase_create("brute");
    tcase_set_tags(brute, "slow");
    tcase_add_checked_fixture(brute, setup, teardown);
    tcase_set_timeout(brute, 600);
    tcase_add_test(brute, test_engine_schema_mask_matches_validator);
    tcase_add_test(brute, test_engine_schema_runs_stay_valid);
    tcase_add_test(brute, test_engine_schema_pattern_runs);
    tcase_add_test(brute, test_engine_schema_run_fast_path);
    tcase_add_test(brute, test_engine_schema_run_random_schemas);
    suite_add_tcase(s, brute);
    return s;
}

int main(void)
{
    return support_run_suite(engine_schema_suite(), CK_FORK);
}
