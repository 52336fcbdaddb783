/* test_engine_gbnf.c -- GBNF grammars (`grammar`) in the sampler and
 * through the real engine loop:
 *
 *   - on a small hand-made vocabulary, along random walks, the mask
 *     (json_mask.c: first-byte table from the stacks' tops, the grammar's
 *     loop fast path, leading blanks, the two-byte table, walks) allows
 *     exactly the tokens a brute-force feed of each token's bytes into the
 *     recognizer allows, for several grammars (JSON, lists, Unicode
 *     classes, characters split across tokens, a tree of rules that
 *     may be empty);
 *   - the same on the real Qwen3 vocabulary (151,936 tokens) when the e2e
 *     set-up installed its tokenizer.json (skipped otherwise);
 *   - sampled runs on random logits only build texts of the language's
 *     prefixes, end only where the grammar can, and many end;
 *   - a think block before the grammar's text (json_think optional);
 *   - the CPU model runner (tiny synthetic model) generates under a
 *     grammar: every text a prefix, complete when it ends with STOP; with
 *     --batch-mtp the tokens are the same as without.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hf_tokenizer.h"
#include "engine/pool.h"
#include "mask_fixture.h"
#include "model_fixture.h"
#include "strata/gbnf.h"
#include "gbnf_fixture.h"
#include "support.h"

static struct st_gbnf *gram(const char *text)
{
    struct st_gbnf *g = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_gbnf_compile(text, strlen(text), &g, &err) == ST_OK, "%s", err.msg);
    return g;
}

/* ---- the mask on a hand-made vocabulary ------------------------------ */

static const char *const vocab[] = {
    "<eos>", "{", "}", "\"", "a", "\":", ":", "1", "-0.5e+3", " ", "[", "]", ",", "true",
    "name", "{\"", "\"}", "null", "\\n", "x\"", "}}", "\n", "0", "\xc3\xa9", "\xc3", "\xa9",
    " }", "  ,", " \"", " name", " 1", "\t\n ", " {\"", " true", " :", "\"\\u00", "e9\"",
    "- ", "- milk\n", "eggs", "\n- ", "yes", "no", ".", "yes.", "y", "es", "\xce\xb1",
    "\xce", "\xb1\xce\x89", "\xe2\x82", "\xac", "\xe2\x82\xac", "\"a\": 1", ", \"", "\": ",
    "hello world", "                        ", "ok \xc3\xa9t\xc3\xa9", "\x01", "\\", "\\\\",
    "\"name", "\"ok \xc3\xa9t", " \"hi", "\"\xc3", "\"\xce\xb1\xce", "  \"a", "\t\t", "yes \xe2",
};
#define NV ((int32_t)(sizeof(vocab) / sizeof(vocab[0])))

static const char *const json_gbnf = FIXTURE_JSON_GBNF;

static const char *const grammars[] = {
    NULL,   /* json_gbnf */
    "root ::= (\"yes\" | \"no\") \".\"",
    "root ::= item+\nitem ::= \"- \" [^\\r\\n]+ \"\\n\"",
    "root ::= [\\u03b1-\\u03c9\\u20ac]+ ( \".\" | [ \\t\\n]* \"yes\" )",
    "root ::= ( [^\\x00-\\x1F] | \"\\\\\" . )* [ ]{0,3}",
    "root ::= \"{\" [ \\t\\n\\r]* ( \"\\\"a\\\": 1\" [ \\t\\n\\r]* )? \"}\"",
    "root ::= (\"yes\" | \"y\" | \"\" | \"yes.\" | \"no\" | \"name\") (\".\" | \" \" root)",
    /* 32 ways through the empty text after each character, each a stack
     * (the tree of test_gbnf_work_bound, smaller: the brute force is slow) */
    "root ::= (\"yes\" | \"no\") n0 \".\"\nn0 ::= n1 n1\nn1 ::= n2 n2\nn2 ::= n3 n3\n"
    "n3 ::= n4 n4\nn4 ::= n5 n5\nn5 ::= \"\" | \" \" | \"\\n\"",
};
#define NG ((int)(sizeof(grammars) / sizeof(grammars[0])))

static const char *grammar_text(int i)
{
    return grammars[i] ? grammars[i] : json_gbnf;
}

static void make_sampler(struct st_sampler *s, struct st_gbnf *g, float temp, uint64_t seed)
{
    struct st_gen_params p = mask_params(temp, seed);
    p.grammar = g;   /* borrowed by the sampler */
    mask_sampler(s, &p, vocab, NV);
}

/* The mask's rule by brute force: end of generation where the grammar
 * may end, any other token when its bytes all go through. */
static bool expected(const struct st_sampler *s, int32_t id, bool eos_banned)
{
    (void)eos_banned;
    if (id == 0)
        return st_gbnf_complete(&s->gs);
    const char *p = vocab[id];
    if (!p[0])
        return false;
    struct st_gbnf_state j;
    st_gbnf_state_copy(&j, &s->gs);
    return st_gbnf_feed(&j, p, strlen(p));
}

START_TEST(test_engine_gbnf_mask_matches_recognizer)
{
    for (int gi = 0; gi < NG; gi++) {
        struct st_gbnf *g = gram(grammar_text(gi));
        for (int run = 0; run < 30; run++) {
            struct st_sampler walk;
            char what[48];
            snprintf(what, sizeof(what), "grammar %d run %d", gi, run);
            make_sampler(&walk, g, 1.0f, (uint64_t)run);
            mask_walk_matches(&walk, vocab, NV, (uint64_t)run * 31 + (uint64_t)gi, 60, 2.0f,
                              expected, what);
            st_sampler_fini(&walk);
        }
        st_gbnf_unref(g);
    }
}
END_TEST

/* Runs on random logits: every text a prefix of the language, eos only
 * where it may end, the state tracks the text; greedy and sampled. */
START_TEST(test_engine_gbnf_runs_stay_valid)
{
    const float temps[] = { 0.0f, 1.0f };
    char text[8192];
    for (int gi = 0; gi < NG; gi++) {
        struct st_gbnf *g = gram(grammar_text(gi));
        int ended = 0;
        for (int ti = 0; ti < 2; ti++) {
            for (int run = 0; run < 40; run++) {
                struct st_sampler s;
                make_sampler(&s, g, temps[ti], (uint64_t)run);
                struct st_draw d;
                ck_assert(!st_sampler_backend_draw(&s, &d));
                uint64_t rng = (uint64_t)run * 7919 + (uint64_t)ti;
                size_t len = 0;
                for (int step = 0; step < 150; step++) {
                    float logits[NV];
                    for (int32_t t = 0; t < NV; t++)
                        logits[t] = (float)(mask_lcg(&rng) % 1000) / 100.0f;
                    logits[0] += 3.0f;
                    bool done = st_gbnf_complete(&s.gs);
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
                    struct st_gbnf_state chk;
                    st_gbnf_state_init(&chk, g);
                    ck_assert_msg(st_gbnf_feed(&chk, text, len), "not a prefix: %.*s",
                                  (int)len, text);
                    ck_assert_int_eq(st_gbnf_complete(&chk), st_gbnf_complete(&s.gs));
                }
                st_sampler_fini(&s);
            }
        }
        fprintf(stderr, "grammar %d: %d of 80 runs ended\n", gi, ended);
        ck_assert_int_gt(ended, 5);
        st_gbnf_unref(g);
    }
}
END_TEST

/* A think block before the text: "<think>", free text, "</think>", blanks,
 * then the grammar from its first byte. */
START_TEST(test_engine_gbnf_think_block_first)
{
    static const char *const tv[] = { "<eos>", "<think>", "</think>", "hmm", "yes", ".",
                                      "\n\n", "no", "<", "/think>", " yes" };
    const int32_t n = (int32_t)(sizeof(tv) / sizeof(tv[0]));
    struct st_gbnf *g = gram("root ::= (\"yes\" | \"no\") \".\"");
    struct st_gen_params p = mask_params(1.0f, 1);
    p.grammar = g;
    p.json_think = ST_THINK_OPTIONAL;
    p.json_think_tags = ST_THINK_ANGLE;
    struct st_sampler s;
    mask_sampler(&s, &p, tv, n);
    struct st_json_step st;
    const int32_t path[] = { 1, 3, 8, 9, 6, 4, 5 };   /* <think>hmm</think>\n\nyes. */
    for (size_t k = 0; k < sizeof(path) / sizeof(path[0]); k++) {
        st_json_mask_step(&s, false, &st);
        ck_assert_msg(st_json_mask_allows(&s, &st, path[k]), "step %zu token '%s'", k,
                      tv[path[k]]);
        ck_assert(!st_json_mask_allows(&s, &st, 0));
        if (k == 0) {
            ck_assert(st_json_mask_allows(&s, &st, 4));    /* "yes" at once: no block */
            ck_assert(!st_json_mask_allows(&s, &st, 3));   /* "hmm" is not the grammar's */
        }
        if (k == 5)
            ck_assert(st_json_mask_allows(&s, &st, 10));   /* " yes": the blank is the block's */
        st_sampler_accept(&s, path[k]);
    }
    st_json_mask_step(&s, false, &st);
    ck_assert(st_json_mask_allows(&s, &st, 0));
    for (int32_t id = 1; id < n; id++)
        ck_assert(!st_json_mask_allows(&s, &st, id));
    st_sampler_fini(&s);
    st_gbnf_unref(g);
}
END_TEST

/* The fast paths' corner cases, from chosen states rather than random
 * walks: tokens that end mid-character or start with a continuation
 * byte, loops over negated classes with non-ASCII members, `.`, bounded
 * repetitions, alternatives sharing prefixes, rules that match the empty
 * text, a root that may end and go on, a loop that starts after a
 * string's quote (the two-byte table's row loop). Each state: the mask
 * allows exactly what a feed of the token's bytes allows. */
static const char *const tricky_vocab[] = {
    "<eos>", "\"", "a", "ab", "abc", "abd", "b", "c", "d", "x", "xy", "y", "z", "q", "e",
    "ee", "eeq", "eq", "!", "a!", ".", "a.", "a.b", " ", "  ", " a", "a ", "\xc3\xa9",
    "\xc3\xa8", "\xc3", "\xa9", "a\xc3", "a\xc3\xa9", "a\xc3\xa8", "\xc3\xa8\xc3",
    "\xc3\xa9\"", "\xc3\xa8\"", "\"a", "\"ab\"", "\"\xc3\xa9", "\"\xc3\xa8", "\"\xc3",
    "a\"", "a\"b", "\"\"", "\xf0\x9f\x98\x80", "\xf0\x9f", "\xf0\x9f\x98", "\x98\x80",
    "\xf0\x9f\x98\x80\xf0", "\xe2\x82\xac", "\xe2\x82", "\xed\xa0\x80", "\xed", "\xc0\xaf",
    "\xff", "\xf4\x90", "\xf4\x8f\xbf\xbf", "\xe0\x80", "\xe0\xa0", "\x7f", "\t", "\n",
    "a\n", "\\", "\\\"", "xyz", "xxxx", "xxxxx", "xyxyz", "ab.", "abcab", "abdz",
};
#define NTV ((int32_t)(sizeof(tricky_vocab) / sizeof(tricky_vocab[0])))

static bool tricky_expected(const struct st_sampler *s, int32_t id)
{
    if (id == 0)
        return st_gbnf_complete(&s->gs);
    struct st_gbnf_state j;
    st_gbnf_state_copy(&j, &s->gs);
    return st_gbnf_feed(&j, tricky_vocab[id], strlen(tricky_vocab[id]));
}

static void tricky_check(const struct st_sampler *s, size_t gi, const char *where)
{
    struct st_json_step st;
    st_json_mask_step(s, false, &st);
    for (int32_t id = 0; id < NTV; id++) {
        bool want = tricky_expected(s, id);
        ck_assert_msg(st_json_mask_allows(s, &st, id) == want,
                      "grammar %zu after '%s' token '%s': want %d", gi, where, tricky_vocab[id],
                      (int)want);
    }
}

START_TEST(test_engine_gbnf_mask_tricky_states)
{
    static const char *const gs[] = {
        "root ::= [^\"\\u00e9]* \"\\\"\"",
        "root ::= [^\"]* \"\\\"\" [^\"]*",
        "root ::= .* \"!\"",
        "root ::= ( [^x\"] | \"x\" \"y\" ){2,4} \"z\"",
        "root ::= \"ab\" \"c\"* | \"abd\" | \"a\" [b-d]+ \"z\"?",
        "root ::= e e \"q\"\ne ::= \"\" | \"e\" | e2\ne2 ::= \"\"",
        "root ::= [a-z]* ( \".\" root )?",
        "root ::= ( [^\"] | \"\\\"\" [^\"]* \"\\\"\" )* \".\"",
        "root ::= [\\U0001F600-\\U0001F64F\\u20ac]+ [ ]?",
        "root ::= [a-z ]* [\\u00e9]? \"\\n\"?",
        "root ::= \"\\\"\" [\\x80-\\U0010FFFF]* \"\\\"\" | \"\\\"\" [a-c]{1,3} \"\\\"\"",
        "root ::= x{0,3} y?\nx ::= \"x\" | \"\"\ny ::= \"y\"+",
    };
    static const char *const prefixes[] = {
        "", "a", "ab", "\"", "\"a", "x", "xy", "xyx", "\xc3", "\xf0\x9f", "\xf0\x9f\x98",
        "e", "a.", "\xc3\xa8", "\xe2\x82\xac", "  ", "abc", "\"ab\"",
    };
    for (size_t gi = 0; gi < sizeof(gs) / sizeof(gs[0]); gi++) {
        struct st_gbnf *g = gram(gs[gi]);
        for (size_t pi = 0; pi < sizeof(prefixes) / sizeof(prefixes[0]); pi++) {
            struct st_gen_params p = mask_params(1.0f, 1);
            p.grammar = g;
            struct st_sampler s;
            mask_sampler(&s, &p, tricky_vocab, NTV);
            if (st_gbnf_feed(&s.gs, prefixes[pi], strlen(prefixes[pi])))
                tricky_check(&s, gi, prefixes[pi]);
            st_sampler_fini(&s);
        }
        uint64_t rng = gi + 1;
        for (int run = 0; run < 40; run++) {   /* random texts of the language, byte by byte */
            struct st_gen_params p = mask_params(1.0f, 1);
            p.grammar = g;
            struct st_sampler s;
            mask_sampler(&s, &p, tricky_vocab, NTV);
            char text[16] = "";
            for (int k = 0; k < 12; k++) {
                bool first[256];
                st_gbnf_first_bytes(&s.gs, first);
                int cand[256], nc = 0;
                for (int b = 1; b < 256; b++) {
                    if (first[b])
                        cand[nc++] = b;
                }
                if (nc == 0)
                    break;
                unsigned char b = (unsigned char)cand[mask_lcg(&rng) % (uint64_t)nc];
                ck_assert(st_gbnf_push(&s.gs, b));
                text[k] = (char)b;
                text[k + 1] = 0;
                tricky_check(&s, gi, text);
            }
            st_sampler_fini(&s);
        }
        st_gbnf_unref(g);
    }
}
END_TEST

/* ---- the real Qwen3 vocabulary -------------------------------------- */

static size_t tok_piece(const void *ctx, int32_t token, char *buf, size_t cap)
{
    struct st_str p = st_tok_piece(ctx, token);
    memcpy(buf, p.ptr, p.len < cap ? p.len : cap);
    return p.len;
}

static bool tok_eog(const void *ctx, int32_t token)
{
    return st_tok_is_eog(ctx, token);
}

/* Brute force over every token of tok along a random walk. */
static void real_walk(const struct st_tok *tok, struct st_gbnf *g, uint64_t seed, int steps)
{
    int32_t n = st_tok_n_vocab(tok);
    struct st_gen_params p = mask_params(1.0f, seed);
    p.grammar = g;
    struct st_sampler s;
    st_sampler_init(&s);
    st_sampler_reset(&s, &p);
    ck_assert_int_eq(st_sampler_json_vocab(&s, tok, 0, n, tok_piece, tok_eog, tok), ST_OK);
    float *logits = malloc((size_t)n * sizeof(*logits));
    uint64_t rng = seed;
    for (int step = 0; step < steps; step++) {
        struct st_json_step st;
        st_json_mask_step(&s, false, &st);
        for (int32_t id = 0; id < n; id++) {
            struct st_str pc = st_tok_piece(tok, id);
            size_t len = pc.len < ST_SAMPLE_MAX_PIECE ? pc.len : ST_SAMPLE_MAX_PIECE;
            bool want;
            if (st_tok_is_eog(tok, id)) {
                want = st_gbnf_complete(&s.gs);
            } else {
                struct st_gbnf_state j;
                st_gbnf_state_copy(&j, &s.gs);
                want = len > 0 && st_gbnf_feed(&j, pc.ptr, len);
            }
            ck_assert_msg(st_json_mask_allows(&s, &st, id) == want,
                          "seed %llu step %d token %d '%.*s': want %d", (unsigned long long)seed,
                          step, (int)id, (int)len, pc.ptr, (int)want);
        }
        for (int32_t t = 0; t < n; t++)
            logits[t] = (float)(mask_lcg(&rng) % 1000) / 100.0f;
        struct st_sample_result res;
        if (st_sampler_sample(&s, logits, n, NULL, 0, &res) != ST_OK ||
            st_tok_is_eog(tok, res.token))
            break;
        st_sampler_accept(&s, res.token);
    }
    free(logits);
    st_sampler_fini(&s);
}

START_TEST(test_engine_gbnf_real_vocab_walk)
{
    const char *path = support_qwen3_tokenizer();
    ck_assert_msg(path != NULL, "no real Qwen3 tokenizer.json in the build tree");
    struct st_tok *tok = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(hf_tokenizer_load(path, NULL, &tok, NULL, &err) == ST_OK, "%s", err.msg);
    for (int gi = 0; gi < NG; gi++) {
        struct st_gbnf *g = gram(grammar_text(gi));
        real_walk(tok, g, 11 + (uint64_t)gi, gi == 0 ? 24 : 8);
        st_gbnf_unref(g);
    }
    st_tok_free(tok);
}
END_TEST

/* ---- the engine loop on the tiny model ------------------------------- */

static char dir[256];

static void setup(void) { support_tmpdir(dir, sizeof(dir)); }
static void teardown(void) { support_rmtree(dir); }

static void use_grammar(struct st_gen_params *p, void *g)
{
    st_gbnf_ref(g);
    p->grammar = g;   /* the request's reference */
}

/* Two seeded requests under grammar g: each reply is in its language, and
 * complete where it stopped. */
static void run(const char *path, int32_t mtp, float temp, struct st_gbnf *g,
                struct fixture_out *out)
{
    static const struct fixture_pair pair = FIXTURE_PAIR_DEFAULT;
    fixture_run_constrained_pair(path, mtp, temp, &pair, use_grammar, g, out);
    for (int32_t i = 0; i < 2; i++) {
        const struct fixture_out *o = &out[i];
        struct st_gbnf_state st;
        st_gbnf_state_init(&st, g);
        ck_assert_msg(st_gbnf_feed(&st, o->text, o->len), "not in the language: '%s'", o->text);
        if (o->finish == ST_FINISH_STOP)
            ck_assert_msg(st_gbnf_complete(&st), "stopped early: '%s'", o->text);
    }
}

START_TEST(test_engine_gbnf_model_generates_in_language)
{
    char path[320];
    fixture_make_model(path, sizeof(path), dir, "mtp-demo", "q8_0", 3, false);
    const char *texts[2] = { "root ::= (\"yes\" | \"no\") \".\"", json_gbnf };
    const float temps[2] = { 0.0f, 0.7f };
    for (int gi = 0; gi < 2; gi++) {
        struct st_gbnf *g = gram(texts[gi]);
        struct fixture_out off[2], on[2];
        for (int ti = 0; ti < 2; ti++) {
            run(path, 0, temps[ti], g, off);
            fprintf(stderr, "engine grammar %d t=%.1f: '%.80s'\n", gi, (double)temps[ti],
                    off[0].text);
            if (gi == 0)
                ck_assert_int_eq(off[0].finish, ST_FINISH_STOP);   /* "yes." / "no." ends */
            run(path, 3, temps[ti], g, on);
            for (int i = 0; i < 2; i++) {
                ck_assert_int_eq(off[i].n, on[i].n);
                ck_assert_str_eq(off[i].text, on[i].text);
            }
        }
        st_gbnf_unref(g);
    }
}
END_TEST

static Suite *engine_gbnf_suite(void)
{
    Suite *s = suite_create("engine_gbnf");
    TCase *t = tcase_create("gbnf");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_engine_gbnf_mask_matches_recognizer);
    tcase_add_test(t, test_engine_gbnf_runs_stay_valid);
    tcase_add_test(t, test_engine_gbnf_think_block_first);
    tcase_add_test(t, test_engine_gbnf_mask_tricky_states);
    tcase_add_test(t, test_engine_gbnf_model_generates_in_language);
    suite_add_tcase(s, t);
    TCase *real = tcase_create("real_tokenizer");
    tcase_add_checked_fixture(real, setup, teardown);
    tcase_set_timeout(real, 600);
    tcase_set_tags(real, "real_tokenizer");
    tcase_add_test(real, test_engine_gbnf_real_vocab_walk);
    suite_add_tcase(s, real);
    return s;
}

int main(void)
{
    if (support_input_missing("real_tokenizer", support_qwen3_tokenizer() != NULL,
                              "no real Qwen3 tokenizer.json (the tokenizer_ref set-up, npm)"))
        return 77;
    return support_run_suite(engine_gbnf_suite(), CK_FORK);
}
