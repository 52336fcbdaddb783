/* test_json_schema_pattern.c -- "pattern", "format" and "multipleOf" in
 * response_format json_schema (src/grammar/regex/,
 * grammar/schema/pattern.c, grammar/schema/pstr.c): what is refused at compile
 * time (naming the construct); byte-by-byte accept / refuse at the edges
 * (anchors, classes, escapes in the JSON text, multibyte code points,
 * surrogate pairs, counted repetition, alternation, empty matches,
 * lengths); a brute-force comparison with POSIX regexec over every short
 * string of a small alphabet; each format's valid and invalid examples.
 */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/clock.h"
#include "strata/compiler.h"
#include "strata/json_schema.h"
#include "json_schema_fixture.h"
#include "support.h"

/* The schema {"type":"string","pattern":<pat as a JSON string>}<extra>. */
static const char *pschema(const char *pat, const char *extra)
{
    static char buf[8][8192];
    static int at;
    char *o = buf[at++ % 8];
    size_t n = (size_t)snprintf(o, 8192, "{\"type\":\"string\",\"pattern\":\"");
    for (const char *p = pat; *p && n < 8000; p++) {
        if (*p == '\\' || *p == '"')
            o[n++] = '\\';
        o[n++] = *p;
    }
    snprintf(o + n, 8192 - n, "\"%s}", extra ? extra : "");
    return o;
}

START_TEST(test_json_schema_pattern_refused)
{
    compile_bad(pschema("(a)\\1", NULL), "backreference");
    compile_bad(pschema("(?<x>a)\\k<x>", NULL), "backreference");
    compile_bad(pschema("a(?=b)", NULL), "lookaround");
    compile_bad(pschema("(?<!a)b", NULL), "lookaround");
    compile_bad(pschema("\\bword", NULL), "\\b");
    compile_bad(pschema("(?i)abc", NULL), "flags");
    compile_bad(pschema("\\p{L}+", NULL), "Unicode property");
    compile_bad(pschema("*a", NULL), "nothing to repeat");
    compile_bad(pschema("(ab", NULL), "without ')'");
    compile_bad(pschema("ab)", NULL), "without '('");
    compile_bad(pschema("[ab", NULL), "without ']'");
    compile_bad(pschema("a{3,2}", NULL), "m < n");
    compile_bad(pschema("a{1001}", NULL), "above 1000");
    compile_bad(pschema("[z-a]", NULL), "out of order");
    compile_bad(pschema("\\q", NULL), "'\\q'");
    compile_bad(pschema("a**", NULL), "quantifier on a quantifier");
    /* a counted quantifier with nothing before it is no literal (ECMA-262 B.1.2
     * takes "{" and "{,3}" as literals, not "{2}") */
    compile_bad(pschema("{2}", NULL), "nothing to repeat");
    compile_bad(pschema("a|{1,3}b", NULL), "nothing to repeat");
    compile_bad(pschema("^*", NULL), "after '^' or '$'");
    /* the subset construction's limit: the 20th symbol from the end */
    compile_bad(pschema("[ab]*a[ab]{20}", NULL), "automaton states");
    compile_bad("{\"type\":\"string\",\"pattern\":5}", "'pattern' must be a string");
    compile_bad(pschema("^(ab)*$", ",\"minLength\":3,\"maxLength\":3"), "no string matches");
    compile_bad(pschema("^a+$", ",\"maxLength\":100000"), "'maxLength'");
    /* the path is named */
    compile_bad("{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\","
                "\"pattern\":\"(?=x)\"}}}", "/properties/d");
    /* at most 128 distinct automata; equal ones are shared */
    static char big[32768];
    for (int same = 0; same < 2; same++) {
        size_t n = (size_t)snprintf(big, sizeof(big), "{\"type\":\"object\",\"properties\":{");
        for (int o = 0; o < 3; o++) {
            n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"o%d\":{\"type\":\"object\","
                                  "\"properties\":{", o ? "," : "", o);
            for (int i = 0; i < 50; i++)
                n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"p%d\":{\"type\":\"string\","
                                      "\"pattern\":\"^x%d$\"}", i ? "," : "", i,
                                      same ? i % 7 : o * 50 + i);
            n += (size_t)snprintf(big + n, sizeof(big) - n, "}}");
        }
        snprintf(big + n, sizeof(big) - n, "}}");
        if (same) {
            struct st_json_schema *sh = compile_ok(big);
            st_json_schema_unref(sh);
        } else {
            compile_bad(big, "more than 128 distinct");
        }
    }
    /* not a string type: the pattern is not compiled (nothing to check) */
    struct st_json_schema *s = compile_ok("{\"type\":\"integer\",\"pattern\":\"^a$\"}");
    st_json_schema_unref(s);
}
END_TEST

START_TEST(test_json_schema_pattern_anchors)
{
    const char *date = pschema("^[0-9]{4}-[0-9]{2}$", NULL);
    accepts(date, "\"2024-01\"");
    refuses(date, "\"2024-1\"", 7);
    refuses(date, "\"202a", 4);
    refuses(date, "\"2024-011", 8);
    /* unanchored: a search */
    const char *up = pschema("[A-Z]{3}", NULL);
    accepts(up, "\"xxABCyy\"");
    accepts(up, "\"ABC\"");
    refuses(up, "\"ABx\"", 4);
    refuses(up, "\"ab\"", 3);
    const char *both = pschema("^[A-Z]{3}$", NULL);
    accepts(both, "\"USD\"");
    refuses(both, "\"USDX", 4);
    refuses(both, "\"usd\"", 1);
    const char *start = pschema("^ab", NULL);
    accepts(start, "\"abzzz\"");
    refuses(start, "\"b", 1);
    const char *end = pschema("xy$", NULL);
    accepts(end, "\"zzxy\"");
    refuses(end, "\"xyz\"", 4);
    /* ^ / $ inside an alternation */
    const char *alt = pschema("^a|b$", NULL);
    accepts(alt, "\"azz\"");
    accepts(alt, "\"zzb\"");
    refuses(alt, "\"zz\"", 3);
    /* empty matches */
    accepts(pschema("^$", NULL), "\"\"");
    refuses(pschema("^$", NULL), "\"a", 1);
    accepts(pschema("", NULL), "\"anything\"");
    accepts(pschema("a*", NULL), "\"\"");
    accepts(pschema("^(a|)$", NULL), "\"\"");
    compile_bad(pschema("$^x", NULL), "no string matches");   /* nothing past the end */
    /* a group of an assertion may be repeated (only a bare ^ / $ may not) */
    accepts(pschema("(^)*a", NULL), "\"xa\"");
    accepts(pschema("^a(?:$)+", NULL), "\"a\"");
    refuses(pschema("^a(?:$)+", NULL), "\"ab", 2);
    /* an empty class matches nothing, [^] anything (the first set: "[]") */
    accepts(pschema("[]|^a", NULL), "\"ab\"");
    refuses(pschema("[]|^a", NULL), "\"b", 1);
    accepts(pschema("^[^]$", NULL), "\"\\n\"");
    /* literal braces */
    accepts(pschema("^a{,2}}{$", NULL), "\"a{,2}}{\"");
}
END_TEST

START_TEST(test_json_schema_pattern_escapes)
{
    /* JSON escapes decode before the automaton sees them */
    const char *dot = pschema("^a\\.b$", NULL);
    accepts(dot, "\"a.b\"");
    accepts(dot, "\"a\\u002eb\"");
    refuses(dot, "\"a\\u002fb\"", 7);      /* at the last hex digit */
    refuses(dot, "\"a\\n", 3);             /* no escape gives '.' but \u */
    refuses(dot, "\"axb\"", 2);
    const char *nl = pschema("^\\n$", NULL);
    accepts(nl, "\"\\n\"");
    accepts(nl, "\"\\u000a\"");
    refuses(nl, "\"\\t", 2);
    refuses(nl, "\"\n", 1);                /* raw control byte: never */
    const char *sl = pschema("^\\\\/\"$", NULL);   /* backslash, slash, quote */
    accepts(sl, "\"\\\\/\\\"\"");
    accepts(sl, "\"\\\\\\/\\\"\"");
    /* '.' is anything but a line terminator */
    accepts(pschema("^.$", NULL), "\"\\t\"");
    refuses(pschema("^.$", NULL), "\"\\n", 2);
    refuses(pschema("^.$", NULL), "\"\\u2028", 6);
    /* classes */
    const char *cls = pschema("^[^0-9\\s][\\w-]*$", NULL);
    accepts(cls, "\"a_b-9\"");
    refuses(cls, "\"9", 1);
    refuses(cls, "\" ", 1);
    refuses(cls, "\"\\u00a0", 6);          /* NBSP is \s */
    refuses(cls, "\"ab c", 3);
    accepts(pschema("^[\\d.]+$", NULL), "\"1.5\"");
    accepts(pschema("^\\x41\\u0042\\u{43}$", NULL), "\"ABC\"");
    accepts(pschema("^[\\]\\-]+$", NULL), "\"]-]\"");
    accepts(pschema("^a{2}{$", NULL), "\"aa{\"");   /* a '{' that is no quantifier */
    accepts("{\"type\":\"string\",\"pattern\":\"^\\\\\\\"$\"}", "\"\\\"\"");   /* \" in it */
    /* a NUL in the pattern (a JSON escape in the schema) and in the string */
    const char *nul = "{\"type\":\"string\",\"pattern\":\"^a\\u0000*b$\"}";
    accepts(nul, "\"a\\u0000\\u0000b\"");
    refuses(nul, "\"a\\u0001", 7);
}
END_TEST

START_TEST(test_json_schema_pattern_unicode)
{
    const char *e = pschema("^\xc3\xa9+$", NULL);          /* é+ */
    accepts(e, "\"\xc3\xa9\xc3\xa9\"");
    accepts(e, "\"\\u00e9\\u00E9\"");
    refuses(e, "\"e", 1);
    refuses(e, "\"\xc3\xa8", 2);                            /* è: at its second byte */
    refuses(e, "\"\xc3\xa9\xc3", 4);                       /* \" not after a lead byte */
    refuses(e, "\"\xc3\xa9\xc3\"", 4);
    const char *emoji = pschema("^\xf0\x9f\x98\x80$", NULL);   /* U+1F600 */
    accepts(emoji, "\"\xf0\x9f\x98\x80\"");
    accepts(emoji, "\"\\ud83d\\ude00\"");
    refuses(emoji, "\"\\ud83d\\ude01", 12);                 /* the last hex digit */
    refuses(emoji, "\"\\ud83d\"", 7);                       /* a lone high surrogate */
    refuses(emoji, "\"\xf0\x9f\x98\x81", 4);
    refuses(emoji, "\"\xf0\x9f\x99", 3);
    const char *any = pschema("^.$", NULL);
    accepts(any, "\"\\ud83d\\ude00\"");                     /* one code point */
    refuses(any, "\"\\udc00", 4);                           /* a lone low surrogate */
    refuses(any, "\"\xed\xa0", 2);                          /* a surrogate in UTF-8 */
    refuses(any, "\"\xe0\x80", 2);                          /* overlong */
    refuses(any, "\"\xc0", 1);
    refuses(any, "\"\xf5", 1);
    refuses(any, "\"ab", 2);
    accepts(pschema("^[\xe2\x82\xac$]{2}$", NULL), "\"\xe2\x82\xac$\"");   /* [€$] */
    /* a class over the supplementary planes: refused at the first byte */
    const char *supp = pschema("^[\\u{1F600}-\\u{1F64F}]$", NULL);
    accepts(supp, "\"\xf0\x9f\x98\x8a\"");
    refuses(supp, "\"\xe2", 1);
    refuses(supp, "\"\\u0", 3);
    accepts(supp, "\"\\uD83D\\uDE4F\"");
    refuses(supp, "\"\\uD83D\\uDE5", 11);
}
END_TEST

START_TEST(test_json_schema_pattern_repeat_lengths)
{
    const char *rep = pschema("^a{2,3}$", NULL);
    accepts(rep, "\"aa\"");
    accepts(rep, "\"aaa\"");
    refuses(rep, "\"a\"", 2);
    refuses(rep, "\"aaaa", 4);
    const char *word = pschema("^(cat|dog)s?$", NULL);
    accepts(word, "\"cats\"");
    accepts(word, "\"dog\"");
    refuses(word, "\"cow", 2);
    refuses(word, "\"catss", 5);
    accepts(pschema("^(?:ab)+?$", NULL), "\"abab\"");            /* lazy: same strings */
    accepts(pschema("^(?<y>[0-9]{2})$", NULL), "\"42\"");        /* a named group */
    /* long chains of pieces and of alternatives (no recursion as deep as them) */
    static char longp[4096], longd[4096];
    size_t ln = 0;
    longp[ln++] = '^';
    for (int i = 0; i < 1900; i++)
        longp[ln++] = (char)('a' + i % 3);
    longp[ln++] = '$';
    longp[ln] = '\0';
    snprintf(longd, sizeof(longd), "\"%.*s\"", 1900, longp + 1);
    accepts(pschema(longp, NULL), longd);
    ln = (size_t)snprintf(longp, sizeof(longp), "^(k0");
    for (int i = 1; i < 300; i++)
        ln += (size_t)snprintf(longp + ln, sizeof(longp) - ln, "|k%d", i);
    snprintf(longp + ln, sizeof(longp) - ln, ")$");
    accepts(pschema(longp, NULL), "\"k123\"");
    refuses(pschema(longp, NULL), "\"k300", 4);
    /* lengths are exact with a pattern */
    const char *mx = pschema("^[a-z]+$", ",\"maxLength\":3");
    accepts(mx, "\"abc\"");
    refuses(mx, "\"abcd", 4);
    const char *mn = pschema("^[a-z]+$", ",\"minLength\":2");
    refuses(mn, "\"a\"", 2);
    accepts(mn, "\"ab\"");
    const char *even = pschema("^(ab)*$", ",\"maxLength\":3");
    accepts(even, "\"ab\"");
    refuses(even, "\"aba", 3);          /* "abab" would be 4 */
    const char *pair = pschema("^(ab)*$", ",\"minLength\":3");
    refuses(pair, "\"ab\"", 3);
    accepts(pair, "\"abab\"");
    /* a code point of a surrogate pair counts once */
    accepts(pschema(".", ",\"maxLength\":1"), "\"\\ud83d\\ude00\"");
    /* enum values are kept only when they match */
    const char *en = "{\"type\":\"string\",\"enum\":[\"abc\",\"xyz\"],\"pattern\":\"^x\"}";
    accepts(en, "\"xyz\"");
    refuses(en, "\"a", 1);
    compile_bad("{\"type\":\"string\",\"enum\":[\"abc\"],\"pattern\":\"^x\"}", "'enum'");
    /* a type the pattern rules out is dropped when another is left */
    const char *sn = "{\"type\":[\"string\",\"null\"],\"pattern\":\"^(ab)*$\","
                     "\"minLength\":1,\"maxLength\":1}";
    accepts(sn, "null");
    refuses(sn, "\"", 0);
    /* a pattern string is no free string (the mask must test each token) */
    struct st_json_schema *s = compile_ok(pschema("^a", NULL));
    struct st_json_schema_state st;
    st_json_schema_state_init(&st, s);
    ck_assert(st_json_schema_feed(&st, "\"", 1));
    ck_assert(!st_json_schema_in_string(&st));
    ck_assert(st_json_schema_feed(&st, "a", 1));
    ck_assert(st_json_schema_in_string(&st));   /* "^a" found */
    st_json_schema_unref(s);
    /* ... until whatever follows matches: then raw bytes pass as in a free
     * string (the mask's fast path) between characters, UTF-8 is still
     * checked (a stray continuation byte is refused), escapes still decode */
    s = compile_ok(pschema("[0-9]", NULL));
    st_json_schema_state_init(&st, s);
    ck_assert(st_json_schema_feed(&st, "\"ab", 3));
    ck_assert(!st_json_schema_in_string(&st));
    ck_assert(st_json_schema_feed(&st, "7", 1));
    ck_assert(st_json_schema_in_string(&st));
    ck_assert(st_json_schema_feed(&st, "\xe4\xb8", 2));
    ck_assert(!st_json_schema_in_string(&st));   /* in mid-character */
    ck_assert(st_json_schema_feed(&st, "\xad", 1));
    ck_assert(st_json_schema_in_string(&st));
    struct st_json_schema_state stray;
    st_json_schema_state_copy(&stray, &st);
    ck_assert(!st_json_schema_push(&stray, 0xad));
    ck_assert(st_json_schema_feed(&st, "\\u", 2));
    ck_assert(!st_json_schema_in_string(&st));
    ck_assert(!st_json_schema_push(&st, 'x'));
    st_json_schema_state_init(&st, s);
    ck_assert(st_json_schema_feed(&st, "\"1\\ud83d\\ude00z\"", 16));
    ck_assert(st_json_schema_complete(&st));
    st_json_schema_unref(s);
    /* no type: the pattern holds for strings only */
    accepts("{\"pattern\":\"^a\"}", "5");
    accepts("{\"pattern\":\"^a\"}", "\"ab\"");
    refuses("{\"pattern\":\"^a\"}", "\"b", 1);
    /* a property named "pattern" is no keyword */
    accepts("{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\"},"
            "\"format\":{\"type\":\"integer\"}}}", "{\"pattern\":\"(\",\"format\":1}");
    /* in an object, beside a free string */
    const char *obj = "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\","
                      "\"pattern\":\"^[A-Z]{3}$\"},\"n\":{\"type\":\"string\"}},"
                      "\"required\":[\"code\"],\"additionalProperties\":false}";
    accepts(obj, "{\"code\":\"EUR\",\"n\":\"x\"}");
    refuses(obj, "{\"code\":\"EURO", 12);
}
END_TEST

/* ---- brute force against POSIX regexec ---------------------------------- */

/* Every string over {a, b, c} of up to 6 letters: the validator completes
 * '"s"' exactly when regexec finds the pattern in s; and a refused byte
 * means no string with that prefix (within the enumeration) matches. */
static void brute(const char *pat)
{
    regex_t re;
    ck_assert_msg(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) == 0, "regcomp %s", pat);
    struct st_json_schema *s = compile_ok(pschema(pat, NULL));
    static char match[1093];   /* 3^0 + ... + 3^6 strings, by index */
    char txt[8];
    int idx = 0;
    for (int len = 0; len <= 6; len++) {
        int total = 1;
        for (int i = 0; i < len; i++)
            total *= 3;
        for (int v = 0; v < total; v++, idx++) {
            for (int i = 0, x = v; i < len; i++, x /= 3)
                txt[len - 1 - i] = (char)('a' + x % 3);
            txt[len] = '\0';
            match[idx] = regexec(&re, txt, 0, NULL, 0) == 0;
            char doc[16];
            snprintf(doc, sizeof(doc), "\"%s\"", txt);
            bool done;
            size_t took = taken_n(s, doc, strlen(doc), &done);
            ck_assert_msg(done == (bool)match[idx], "pattern %s on '%s': regexec %d, "
                          "validator %d (took %zu)", pat, txt, match[idx], (int)done, took);
            if (took < (size_t)len + 1) {   /* refused at txt[took - 1]: no extension */
                char ext[8];
                memcpy(ext, txt, took);
                for (int l2 = (int)took; l2 <= 6; l2++) {
                    int t2 = 1;
                    for (int i = (int)took; i < l2; i++)
                        t2 *= 3;
                    for (int w = 0; w < t2; w++) {
                        for (int i = (int)took, x = w; i < l2; i++, x /= 3)
                            ext[i] = (char)('a' + x % 3);
                        ext[l2] = '\0';
                        ck_assert_msg(regexec(&re, ext, 0, NULL, 0) != 0, "pattern %s refused "
                                      "'%s' at byte %zu, yet '%s' matches", pat, txt, took, ext);
                    }
                }
            }
        }
    }
    regfree(&re);
    st_json_schema_unref(s);
}

START_TEST(test_json_schema_pattern_brute)
{
    static const char *const pats[] = {
        "a*b", "^(a|b)+c?$", "^a{1,2}b{2}$", "ab|ba", "^[^a]*$", "b.c", "^(a|ab)(c|bcd)?$",
        "^$", "a|^b", "c$", "^a?b?c?$", "(a*)*b", "^(ab)+$", "[a-b]{2}c", "^(a|b|c){3}$",
        "^a(b|c)*a$", "((a|b)c)+", "^[abc]{2,}$", "b{2,3}", "^(a*|b*)$", "^c|a$|^b$",
        "^(a{2})*(b|c)$", "[^ab]", "^.{1,2}$", "a.c|b.a",
    };
    for (size_t i = 0; i < sizeof(pats) / sizeof(*pats); i++)
        brute(pats[i]);
}
END_TEST

/* Random patterns of the subset POSIX EREs share with ECMA-262 (literals,
 * '.', classes, groups, alternation, quantifiers, ^ / $ at the ends;
 * node's RegExp agrees on the ones found to differ from regexec),
 * each through brute(). */
static uint64_t rng_next(uint64_t *x)
{
    *x = *x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *x >> 33;
}

static void gen_alt(uint64_t *r, char *o, size_t *n, int depth, bool top);

static void gen_piece(uint64_t *r, char *o, size_t *n, int depth)
{
    static const char *const atoms[] = { "a", "b", "c", ".", "[ab]", "[^c]", "[a-b]", "(ab)" };
    static const char *const quants[] = { "", "", "", "*", "+", "?", "{1,2}", "{2}", "{0,1}",
                                          "{2,}" };
    uint64_t k = rng_next(r) % 10;
    if (k >= 8 && depth > 0) {
        o[(*n)++] = '(';
        gen_alt(r, o, n, depth - 1, false);
        o[(*n)++] = ')';
    } else {
        const char *a = atoms[k % 8];
        memcpy(o + *n, a, strlen(a));
        *n += strlen(a);
    }
    const char *q = quants[rng_next(r) % 10];
    memcpy(o + *n, q, strlen(q));
    *n += strlen(q);
}

/* Anchors only at the top level: glibc's regexec mishandles a '^' inside
 * a repeated group (ECMA-262 and this validator agree there). */
static void gen_alt(uint64_t *r, char *o, size_t *n, int depth, bool top)
{
    int alts = 1 + (int)(rng_next(r) % 2);
    for (int i = 0; i < alts; i++) {
        if (i)
            o[(*n)++] = '|';
        if (top && rng_next(r) % 4 == 0)
            o[(*n)++] = '^';
        int pieces = 1 + (int)(rng_next(r) % 3);
        for (int j = 0; j < pieces; j++)
            gen_piece(r, o, n, depth);
        if (top && rng_next(r) % 4 == 0)
            o[(*n)++] = '$';
    }
}

START_TEST(test_json_schema_pattern_random)
{
    uint64_t r = 12345;
    for (int i = 0; i < 200; i++) {
        char pat[512];
        size_t n = 0;
        gen_alt(&r, pat, &n, 2, true);
        pat[n] = '\0';
        struct st_json_schema *s = NULL;
        struct st_err err = { 0 };
        const char *sc = pschema(pat, NULL);
        if (st_json_schema_compile(sc, strlen(sc), &s, &err) != ST_OK) {
            /* only a pattern nothing matches, or past the state limit, may fail */
            ck_assert_msg(strstr(err.msg, "no string matches") ||
                          strstr(err.msg, "automaton states"), "%s: %s", pat, err.msg);
            continue;
        }
        st_json_schema_unref(s);
        brute(pat);
    }
}
END_TEST

/* ---- formats ------------------------------------------------------------ */

static const char *fschema(const char *fmt)
{
    static char buf[4][128];
    static int at;
    char *o = buf[at++ % 4];
    snprintf(o, 128, "{\"type\":\"string\",\"format\":\"%s\"}", fmt);
    return o;
}

/* Each of good (NULL-ended) is accepted, each of bad is not complete. */
static void format_cases(const char *fmt, const char *const *good, const char *const *bad)
{
    struct st_json_schema *s = compile_ok(fschema(fmt));
    char doc[128];
    for (size_t i = 0; good[i]; i++) {
        snprintf(doc, sizeof(doc), "\"%s\"", good[i]);
        bool done;
        size_t n = taken_n(s, doc, strlen(doc), &done);
        ck_assert_msg(done, "format %s should accept %s (took %zu)", fmt, doc, n);
    }
    for (size_t i = 0; bad[i]; i++) {
        snprintf(doc, sizeof(doc), "\"%s\"", bad[i]);
        bool done;
        (void)taken_n(s, doc, strlen(doc), &done);
        ck_assert_msg(!done, "format %s should refuse %s", fmt, doc);
    }
    st_json_schema_unref(s);
}

START_TEST(test_json_schema_formats)
{
    format_cases("date", (const char *const[]){ "2024-02-29", "1999-12-31", "0000-01-01", NULL },
                 (const char *const[]){ "2024-2-29", "2024-13-01", "2024-04-31", "2024-02-30",
                                        "2024-00-10", "24-01-01", "2024-01-01T", NULL });
    /* February 29 only in leap years (a century only by 400) */
    format_cases("date", (const char *const[]){ "2000-02-29", "1996-02-29", "0000-02-29",
                                                "2023-02-28", NULL },
                 (const char *const[]){ "2023-02-29", "1900-02-29", "2100-02-29", "0001-02-29",
                                        NULL });
    format_cases("date-time", (const char *const[]){ "2024-02-29T23:59:60Z", NULL },
                 (const char *const[]){ "2023-02-29T00:00:00Z", NULL });
    /* a leap second is 23:59:60 UTC: another minute, or a local 23:59 with a
     * nonzero offset, is no time at all */
    format_cases("time", (const char *const[]){ "23:59:60z", "23:59:60.5+00:00",
                                                "23:59:60-00:00", NULL },
                 (const char *const[]){ "12:00:60Z", "00:00:60Z", "23:58:60Z", "22:59:60Z",
                                        "23:59:60+01:00", NULL });
    format_cases("time", (const char *const[]){ "23:59:60Z", "00:00:00+05:30",
                                                "12:34:56.789-08:00", "01:02:03z", NULL },
                 (const char *const[]){ "24:00:00Z", "12:60:00Z", "12:00:00", "12:00Z",
                                        "12:00:00+5:00", "12:00:00.Z", NULL });
    format_cases("date-time", (const char *const[]){ "2024-01-15T10:30:00Z",
                                                     "2024-01-15t10:30:00.5+01:00", NULL },
                 (const char *const[]){ "2024-01-15 10:30:00Z", "2024-01-15T10:30:00",
                                        "2024-01-15", NULL });
    format_cases("duration", (const char *const[]){ "P1D", "PT1H", "P1Y2M3DT4H5M6S", "P3W",
                                                    "PT5M30S", "P2M", NULL },
                 (const char *const[]){ "P", "PT", "P1H", "P1DT", "P1W2D", "1D", "PT1S2M",
                                        NULL });
    format_cases("uuid", (const char *const[]){ "123e4567-e89b-12d3-a456-426614174000",
                                                "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", NULL },
                 (const char *const[]){ "123e4567e89b12d3a456426614174000",
                                        "123e4567-e89b-12d3-a456-42661417400g",
                                        "123e4567-e89b-12d3-a456-4266141740001", NULL });
    format_cases("ipv4", (const char *const[]){ "0.0.0.0", "192.168.1.255", "255.255.255.255",
                                                NULL },
                 (const char *const[]){ "256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4.5", NULL });
    format_cases("ipv6", (const char *const[]){ "::", "::1", "fe80::1", "2001:db8::8a2e:370:7334",
                                                "1:2:3:4:5:6:7:8", "1::", NULL },
                 (const char *const[]){ "1:2:3:4:5:6:7:8:9", "1:::2", "12345::", ":1",
                                        "1::2::3", NULL });
    format_cases("hostname", (const char *const[]){ "example.com", "a", "xn--80ak6aa92e.com",
                                                    "a-b.c-d", NULL },
                 (const char *const[]){ "-a.com", "a-.com", "a..b", ".a", "a_b", NULL });
    format_cases("email", (const char *const[]){ "a@b.co", "first.last+tag@example.org", NULL },
                 (const char *const[]){ "a@", "@b", "a..b@c", "a@-b", "a b@c", NULL });
    /* refused at the first byte that breaks it */
    refuses(fschema("date"), "\"2024-2", 6);
    refuses(fschema("ipv4"), "\"256", 3);
    /* an unknown format is an annotation */
    accepts("{\"type\":\"string\",\"format\":\"color\"}", "\"anything\"");
    /* format with pattern: both hold */
    const char *both = "{\"type\":\"string\",\"format\":\"date\",\"pattern\":\"^2024-\"}";
    accepts(both, "\"2024-05-06\"");
    refuses(both, "\"2023", 4);
    /* hostname: at most 253 code points */
    char longname[300] = "\"";
    for (int i = 0; i < 42; i++)
        strcat(longname, "abcde.");
    strcat(longname, "ab");
    refuses(fschema("hostname"), longname, 254);
}
END_TEST


/* The subset construction's set table must hash every NFA state: its
 * sets differ only past the first 64 states here, and when the index saw
 * only the low bits of each word, every set collided and each pattern took
 * 0.2-0.9 s to compile (a schema of 128 such: about a minute). The probes
 * count as work, so such collisions would now exhaust the work budget:
 * these 48 compile only with a hash that spreads them (deterministic: no
 * clock; they take ~0.5 s). */
START_TEST(test_json_schema_pattern_compile_work)
{
    static char big[16384];
    size_t n = (size_t)snprintf(big, sizeof(big), "{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < 48; i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"p%d\":{\"type\":\"string\","
                              "\"pattern\":\"^\\\\d{0,10}\\\\w{0,10}\\\\s{0,10}\\\\D{0,10}.{0,10}"
                              "[a-c]{0,9}\\\\u%04x$\"}", i ? "," : "", i, 0x100 + i);
    snprintf(big + n, sizeof(big) - n, "}}");
    /* the schema's patterns share one work budget (5 patterns' worth, 200 M
     * steps): 5 of ~30 M steps each fit, 8 are a 400 */
    for (int k = 5; k <= 8; k += 3) {
        static char heavy[2048];
        size_t h = (size_t)snprintf(heavy, sizeof(heavy), "{\"type\":\"object\",\"properties\":{");
        for (int i = 0; i < k; i++)
            h += (size_t)snprintf(heavy + h, sizeof(heavy) - h, "%s\"p%d\":{\"type\":\"string\","
                                  "\"pattern\":\"(a?){1000}a{1000}%c\"}", i ? "," : "", i, 'b' + i);
        snprintf(heavy + h, sizeof(heavy) - h, "}}");
        if (k == 8) {
            compile_bad(heavy, "work budget of all the schema's patterns");
        } else {
            struct st_json_schema *hs = compile_ok(heavy);
            st_json_schema_unref(hs);
        }
    }
    struct st_json_schema *s = compile_ok(big);
    bool done;
    ck_assert(taken_n(s, "{\"p0\":\"12ab  x-zc\\u0100\"}", 25, &done) == 25 && done);
    ck_assert(taken_n(s, "{\"p1\":\"12ab  x-zc\\u0100\"", 24, &done) == 23);
    st_json_schema_unref(s);
}
END_TEST

/* ---- multipleOf ------------------------------------------------------- */

/* Every text of up to 4 bytes over "-0123456789": the validator completes
 * it exactly when it is a JSON integer (not "-0") in [lo, hi] and a
 * multiple of d; it takes a prefix only when some valid text starts so. */
static void multiple_brute(const char *schema, long lo, long hi, long d)
{
    static const char alpha[] = "-0123456789";
    struct st_json_schema *s = compile_ok(schema);
    char valid[4096][8];
    int nv = 0;
    for (long v = lo; v <= hi; v++) {
        if (v % d == 0 && nv < 4096)
            snprintf(valid[nv++], 8, "%ld", v);
    }
    char t[8];
    for (int len = 1; len <= 4; len++) {
        int total = 1;
        for (int i = 0; i < len; i++)
            total *= 11;
        for (int v = 0; v < total; v++) {
            for (int i = 0, x = v; i < len; i++, x /= 11)
                t[i] = alpha[x % 11];
            t[len] = '\0';
            bool want = false, pre = false;
            for (int i = 0; i < nv; i++) {
                want |= strcmp(valid[i], t) == 0;
                pre |= strncmp(valid[i], t, (size_t)len) == 0;
            }
            bool done;
            size_t took = taken_n(s, t, (size_t)len, &done);
            ck_assert_msg(done == want, "%s on %s: want %d, done %d", schema, t, want, done);
            ck_assert_msg((took == (size_t)len) == pre, "%s on %s: a valid text starts so: %d, "
                          "took %zu", schema, t, pre, took);
        }
    }
    st_json_schema_unref(s);
}

START_TEST(test_json_schema_multiple_of)
{
    multiple_brute("{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":-40,\"maximum\":95}",
                   -40, 95, 7);
    multiple_brute("{\"type\":\"integer\",\"multipleOf\":25,\"exclusiveMinimum\":0,"
                   "\"maximum\":1000}", 1, 1000, 25);
    multiple_brute("{\"type\":\"number\",\"multipleOf\":3,\"minimum\":-9.5,\"maximum\":31.2}",
                   -9, 31, 3);
    multiple_brute("{\"type\":\"integer\",\"multipleOf\":1000,\"minimum\":-999,"
                   "\"maximum\":999}", 0, 0, 1000);
    /* no bounds: whole documents */
    const char *m4 = "{\"type\":\"integer\",\"multipleOf\":4}";
    accepts(m4, "124");
    accepts(m4, "-1000000000004");
    refuses(m4, "[", 0);
    refuses(m4, "1.", 1);                          /* integers only */
    struct st_json_schema *s = compile_ok(m4);
    bool done;
    (void)taken_n(s, "122", 3, &done);
    ck_assert(!done);
    st_json_schema_unref(s);
    /* in an object; enum values filtered */
    const char *obj = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
                      "\"multipleOf\":5,\"maximum\":12}}}";
    accepts(obj, "{\"n\":10}");
    refuses(obj, "{\"n\":13", 6);
    refuses(obj, "{\"n\":11", 6);
    accepts("{\"enum\":[3,4,6],\"multipleOf\":2}", "4");
    refuses("{\"enum\":[3,4,6],\"multipleOf\":2}", "3", 0);
    compile_bad("{\"type\":\"number\",\"multipleOf\":0.01}", "fractional divisor");
    compile_bad("{\"type\":\"integer\",\"multipleOf\":0}", "positive");
    compile_bad("{\"type\":\"integer\",\"multipleOf\":-2}", "positive");
    compile_bad("{\"type\":\"integer\",\"multipleOf\":\"2\"}", "positive");
    compile_bad("{\"type\":\"integer\",\"multipleOf\":4,\"minimum\":1,\"maximum\":3}",
                "no integer");
}
END_TEST

static Suite *json_schema_pattern_suite(void)
{
    Suite *s = suite_create("json_schema_pattern");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_json_schema_pattern_refused);
    tcase_add_test(t, test_json_schema_pattern_anchors);
    tcase_add_test(t, test_json_schema_pattern_escapes);
    tcase_add_test(t, test_json_schema_pattern_unicode);
    tcase_add_test(t, test_json_schema_pattern_repeat_lengths);
    tcase_add_test(t, test_json_schema_formats);
    tcase_add_test(t, test_json_schema_pattern_compile_work);
    tcase_add_test(t, test_json_schema_multiple_of);
    suite_add_tcase(s, t);
    /* the brute-force and random runs: ctest's json_schema_pattern_slow (label slow) */
    TCase *brute = tcase_create("brute");
    tcase_set_tags(brute, "slow");
    tcase_set_timeout(brute, 300);
    tcase_add_test(brute, test_json_schema_pattern_brute);
    tcase_add_test(brute, test_json_schema_pattern_random);
    suite_add_tcase(s, brute);
    return s;
}

int main(void)
{
    return support_run_suite(json_schema_pattern_suite(), CK_FORK);
}
