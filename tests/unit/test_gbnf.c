/* test_gbnf.c -- the GBNF compiler and recognizer (include/strata/gbnf.h):
 *
 *   - every construct parses and means what the format says (literals and
 *     their escapes, classes, ranges, negation, '.', groups, alternatives,
 *     * + ? {m} {m,} {m,n}, comments, newlines inside groups and after '|');
 *   - every error names its line and column (columns count characters);
 *   - a dozen grammars (llama.cpp's well-known json / arithmetic / list
 *     grammars written from the format) accept and refuse texts, fed whole
 *     and byte by byte, complete or only a prefix;
 *   - UTF-8: characters split anywhere, invalid bytes refused, the first
 *     byte table agrees with push for every byte along texts;
 *   - the stack depth bound and the loop fast path's claim (the state is
 *     unchanged after a looping byte);
 *   - the work bound: grammars whose expansion after a character could
 *     outgrow the recognizer's budget are refused up front, naming a rule;
 *     equivalents of llama.cpp's example grammars stay far below it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/gbnf.h"
#include "support.h"

static struct st_gbnf *compile_ok(const char *text)
{
    struct st_gbnf *g = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_gbnf_compile(text, strlen(text), &g, &err);
    ck_assert_msg(rc == ST_OK, "'%s': %s", text, err.msg);
    return g;
}

static void compile_err(const char *text, const char *want)
{
    struct st_gbnf *g = NULL;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_gbnf_compile(text, strlen(text), &g, &err), ST_ERR_INVALID);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err.msg, want) != NULL, "'%s': got '%s', want '%s'", text, err.msg,
                  want);
}

enum { REJECT, PREFIX, FULL };

/* What the grammar says of text: fed whole, then byte by byte with the
 * first-byte table checked before every byte. */
static int judge(const struct st_gbnf *g, const char *text, size_t n)
{
    struct st_gbnf_state a, b;
    st_gbnf_state_init(&a, g);
    bool ok = st_gbnf_feed(&a, text, n);
    st_gbnf_state_init(&b, g);
    for (size_t i = 0; i < n; i++) {
        bool first[256];
        st_gbnf_first_bytes(&b, first);
        struct st_gbnf_state c;
        for (int x = 0; x < 256; x += 17) {   /* spot-check against push */
            st_gbnf_state_copy(&c, &b);
            ck_assert_int_eq(first[x], st_gbnf_push(&c, (unsigned char)x));
        }
        bool took = st_gbnf_push(&b, (unsigned char)text[i]);
        ck_assert_int_eq(took, first[(unsigned char)text[i]]);
        if (!took)
            break;
    }
    ck_assert_int_eq(ok, st_gbnf_valid(&b));
    if (!ok)
        return REJECT;
    return st_gbnf_complete(&a) ? FULL : PREFIX;
}

#define J(g, s) judge((g), (s), strlen(s))

START_TEST(test_gbnf_literals_alternatives_groups)
{
    struct st_gbnf *g = compile_ok("root ::= (\"yes\" | \"no\") \".\"");
    ck_assert_int_eq(J(g, "yes."), FULL);
    ck_assert_int_eq(J(g, "no."), FULL);
    ck_assert_int_eq(J(g, "ye"), PREFIX);
    ck_assert_int_eq(J(g, ""), PREFIX);
    ck_assert_int_eq(J(g, "yes"), PREFIX);
    ck_assert_int_eq(J(g, "yes.."), REJECT);
    ck_assert_int_eq(J(g, "maybe"), REJECT);
    ck_assert_int_eq(J(g, " yes."), REJECT);
    st_gbnf_unref(g);
    g = compile_ok("root ::= \"\\x41\\u00e9\\U0001F600\\n\\t\\r\\\\\\\"\"");
    ck_assert_int_eq(J(g, "A\xc3\xa9\xf0\x9f\x98\x80\n\t\r\\\""), FULL);
    ck_assert_int_eq(J(g, "A\xc3\xa9\xf0\x9f\x98\x81"), REJECT);
    st_gbnf_unref(g);
    g = compile_ok("root ::= \"\"");   /* the empty text only */
    ck_assert_int_eq(J(g, ""), FULL);
    ck_assert_int_eq(J(g, "a"), REJECT);
    st_gbnf_unref(g);
}
END_TEST

START_TEST(test_gbnf_classes_and_dot)
{
    struct st_gbnf *g = compile_ok("root ::= [a-cx] [^a-z0-9] [\\]\\[\\-] [-a] . [\\x00-\\x1F]");
    ck_assert_int_eq(J(g, "xA]-\xe2\x82\xac\t"), FULL);   /* euro sign for '.' */
    ck_assert_int_eq(J(g, "bZ[a\n\x01"), FULL);
    ck_assert_int_eq(J(g, "d"), REJECT);
    ck_assert_int_eq(J(g, "aa"), REJECT);
    ck_assert_int_eq(J(g, "a5"), REJECT);
    ck_assert_int_eq(J(g, "a\xc3\xa9]-"), PREFIX);    /* non-ASCII in [^a-z0-9] */
    ck_assert_int_eq(J(g, "aA]-x "), REJECT);
    st_gbnf_unref(g);
    g = compile_ok("root ::= [\\u03b1-\\u03c9]+ [^a]");
    ck_assert_int_eq(J(g, "\xce\xb1\xcf\x89" "b"), FULL);   /* alpha omega b */
    ck_assert_int_eq(J(g, "\xce\xb1" "a"), REJECT);
    ck_assert_int_eq(J(g, "\xce\x91"), REJECT);           /* capital alpha */
    ck_assert_int_eq(J(g, "\xce"), PREFIX);                /* may still be alpha */
    ck_assert_int_eq(J(g, "\xd0"), REJECT);                /* Cyrillic: no */
    st_gbnf_unref(g);
}
END_TEST

START_TEST(test_gbnf_repetitions)
{
    struct st_gbnf *g = compile_ok("root ::= [a-c]{2,4} \"x\"{3} [0-9]{2,} \"-\"? \"ab\"* \"!\"+");
    ck_assert_int_eq(J(g, "abxxx12!"), FULL);
    ck_assert_int_eq(J(g, "abccxxx123-ababab!!!"), FULL);
    ck_assert_int_eq(J(g, "axxx12!"), REJECT);
    ck_assert_int_eq(J(g, "abcccxxx12!"), REJECT);
    ck_assert_int_eq(J(g, "abxx12!"), REJECT);
    ck_assert_int_eq(J(g, "abxxx1!"), REJECT);
    ck_assert_int_eq(J(g, "abxxx12--"), REJECT);
    ck_assert_int_eq(J(g, "abxxx12aba"), PREFIX);
    ck_assert_int_eq(J(g, "abxxx12a!"), REJECT);
    st_gbnf_unref(g);
    g = compile_ok("root ::= \"a\"{0} \"b\"{0,0} \"c\"{1} ( \"d\" \"e\" ){0,2}");
    ck_assert_int_eq(J(g, "c"), FULL);
    ck_assert_int_eq(J(g, "cdede"), FULL);
    ck_assert_int_eq(J(g, "cdedede"), REJECT);
    ck_assert_int_eq(J(g, "a"), REJECT);
    st_gbnf_unref(g);
    g = compile_ok("root ::= \"a\"? [b]*");
    ck_assert_int_eq(J(g, ""), FULL);
    ck_assert_int_eq(J(g, "abbb"), FULL);
    ck_assert_int_eq(J(g, "bb"), FULL);
    ck_assert_int_eq(J(g, "ba"), REJECT);
    st_gbnf_unref(g);
}
END_TEST

START_TEST(test_gbnf_comments_newlines)
{
    const char *text =
        "# a comment first\n"
        "\n"
        "root ::= a |   # after the bar, a newline may come\n"
        "   b\n"
        "a ::= \"A\"   # trailing\n"
        "b ::= ( \"B\"\n"
        "  # inside a group too\n"
        "  \"C\" )\r\n"
        "c::=\"unused\"";
    struct st_gbnf *g = compile_ok(text);
    ck_assert_int_eq(J(g, "A"), FULL);
    ck_assert_int_eq(J(g, "BC"), FULL);
    ck_assert_int_eq(J(g, "B"), PREFIX);
    ck_assert_int_eq(J(g, "unused"), REJECT);
    ck_assert_uint_gt(st_gbnf_n_rules(g), 3);
    ck_assert_uint_gt(st_gbnf_n_elements(g), 8);
    st_gbnf_unref(g);
}
END_TEST

START_TEST(test_gbnf_errors_name_line_and_column)
{
    compile_err("root ::= foo", "line 1, column 10: undefined rule 'foo'");
    compile_err("root ::= \"\xc3\xa9\" foo", "line 1, column 14: undefined rule 'foo'");
    compile_err("root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice");
    compile_err("a ::= \"x\"", "no 'root' rule");
    compile_err("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"",
                "line 2, column 1: rule 'expr' is left-recursive");
    compile_err("root ::= a\na ::= b? \"x\" | \"y\"\nb ::= \"z\"? a",
                "is left-recursive");
    compile_err("root ::= (\"a\"?)*",
                "line 1, column 16: this repeats something that may be empty");
    compile_err("root ::= \"abc", "line 1, column 10: unterminated literal");
    compile_err("root ::= [a-", "line 1, column 10: unterminated character class");
    compile_err("root ::= [z-a]", "line 1, column 11: reversed range");
    compile_err("root ::= \"\\q\"", "line 1, column 11: unknown escape '\\q'");
    compile_err("root ::= \"\\x4\"", "line 1, column 11: '\\x' needs 2 hex digits");
    compile_err("root ::= \"\\uD800\"", "surrogate");
    compile_err("root ::= \"\\U00110000\"", "past the last code point");
    compile_err("root ::= \"a\" )", "line 1, column 14: unmatched ')'");
    compile_err("root ::= (\"a\"", "line 1, column 10: unclosed '('");
    compile_err("root ::= \"a\"{3,2}", "line 1, column 13: repetition {3,2}");
    compile_err("root ::= \"a\"{1001}", "repetition count above 1000");
    compile_err("root ::= \"a\"{2", "line 1, column 13: expected '}'");
    compile_err("root ::= *", "line 1, column 10: '*' must follow an item");
    compile_err("root \"a\"", "line 1, column 6: expected '::=' after the rule name 'root'");
    compile_err("root ::= \"a\" b ::= \"c\"", "line 1, column 14: a new rule 'b' must start");
    compile_err("root ::= <think>", "line 1, column 10: token references");
    compile_err("root ::= \"a\" <[151643]>", "line 1, column 14: token references");
    compile_err("root ::= \"a\" !<[12]> \"b\"", "line 1, column 14: token references");
    compile_err("root ::= x\nx ::= \"a\" x", "line 2, column 1: rule 'x' cannot produce any text");
    compile_err("root ::= \"a\" @", "line 1, column 14: unexpected '@'");
    compile_err("\n\n  ::= \"a\"", "line 3, column 3: expected a rule name");
    compile_err("root ::= \"\xff\"", "line 1, column 11: invalid UTF-8");
    compile_err("", "no 'root' rule");
}
END_TEST

static const char *const json_gbnf =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? "
    "([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "\n"
    "# Optional space: by convention, applied in this grammar after literal chars when allowed\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

START_TEST(test_gbnf_json_grammar)
{
    struct st_gbnf *g = compile_ok(json_gbnf);
    ck_assert_int_eq(J(g, "{}"), FULL);
    ck_assert_int_eq(J(g, "{\"a\": 1, \"b\": [true, null, -0.5e+3, \"x\\u00e9\\n\"]}"), FULL);
    ck_assert_int_eq(J(g, "{\"k\": {\"n\": {\"m\": []}}}\n  "), FULL);
    ck_assert_int_eq(J(g, "{\"caf\xc3\xa9\": \"\xe6\x97\xa5\xe6\x9c\xac\"}"), FULL);
    ck_assert_int_eq(J(g, "{\"a\": 1"), PREFIX);
    ck_assert_int_eq(J(g, "{\"a\": tru"), PREFIX);
    ck_assert_int_eq(J(g, "{\"a\":  1}"), REJECT);   /* ws is one blank, or a newline and indent */
    ck_assert_int_eq(J(g, "{\"a\": 01}"), REJECT);
    ck_assert_int_eq(J(g, "{\"a\": \"\x01\"}"), REJECT);
    ck_assert_int_eq(J(g, "{\"a\": \"\\q\"}"), REJECT);
    ck_assert_int_eq(J(g, "[1]"), REJECT);
    ck_assert_int_eq(J(g, "{,}"), REJECT);
    ck_assert_int_eq(J(g, "{\"a\": 1}}"), REJECT);
    ck_assert_int_eq(J(g, "{\"a\": \"\xc3\x28\"}"), REJECT);   /* invalid UTF-8 */
    ck_assert_int_eq(J(g, "{\"a\": \"\xed\xa0\x80\"}"), REJECT);   /* a surrogate */
    ck_assert_int_eq(J(g, "{\"a\": \"\xe0\x80\xaf\"}"), REJECT);   /* overlong */
    st_gbnf_unref(g);
}
END_TEST

START_TEST(test_gbnf_arithmetic_and_list)
{
    struct st_gbnf *g = compile_ok("root  ::= expr\n"
                                   "expr  ::= term ([-+*/] term)*\n"
                                   "term  ::= num | \"(\" space expr \")\" space\n"
                                   "num   ::= [0-9]+ space\n"
                                   "space ::= [ \\t\\n]*\n");
    ck_assert_int_eq(J(g, "1+2*3"), FULL);
    ck_assert_int_eq(J(g, "(1 +2) *(3-4)/5 "), FULL);
    ck_assert_int_eq(J(g, "1 + 2"), REJECT);   /* blanks come only after a term */
    ck_assert_int_eq(J(g, "((( 7 )))"), FULL);
    ck_assert_int_eq(J(g, "((1+"), PREFIX);
    ck_assert_int_eq(J(g, "1++2"), REJECT);
    ck_assert_int_eq(J(g, ")"), REJECT);
    ck_assert_int_eq(J(g, "1 2"), REJECT);
    st_gbnf_unref(g);
    g = compile_ok("root ::= item+\n"
                   "# Excludes various line break characters\n"
                   "item ::= \"- \" [^\\r\\n\\x0b\\x0c\\x85\\u2028\\u2029]+ \"\\n\"\n");
    ck_assert_int_eq(J(g, "- milk\n- eggs \xf0\x9f\xa5\x9a\n"), FULL);
    ck_assert_int_eq(J(g, "- milk\n- "), PREFIX);
    ck_assert_int_eq(J(g, "- \n"), REJECT);
    ck_assert_int_eq(J(g, "- a\xe2\x80\xa8"), REJECT);   /* U+2028 */
    ck_assert_int_eq(J(g, "milk\n"), REJECT);
    st_gbnf_unref(g);
}
END_TEST

START_TEST(test_gbnf_ambiguity_and_depth)
{
    struct st_gbnf *g = compile_ok("root ::= [a-z]* \"z\" | \"q\"+ \"z\"");
    ck_assert_int_eq(J(g, "z"), FULL);
    ck_assert_int_eq(J(g, "zzz"), FULL);
    ck_assert_int_eq(J(g, "qqz"), FULL);
    ck_assert_int_eq(J(g, "abc"), PREFIX);
    ck_assert_int_eq(J(g, "ab1"), REJECT);
    st_gbnf_unref(g);
    /* nesting: each level keeps one entry; the depth bound refuses the
     * '(' that could not be closed any more, never strands the text */
    g = compile_ok("root ::= \"(\" root \")\" | \"x\"");
    char text[2 * ST_GBNF_MAX_DEPTH + 8];
    memset(text, '(', ST_GBNF_MAX_DEPTH + 4);
    struct st_gbnf_state st;
    st_gbnf_state_init(&st, g);
    int opened = 0;
    while (opened < ST_GBNF_MAX_DEPTH + 4) {
        struct st_gbnf_state c;
        st_gbnf_state_copy(&c, &st);
        if (!st_gbnf_push(&c, '('))
            break;
        st_gbnf_state_copy(&st, &c);
        opened++;
    }
    ck_assert_int_gt(opened, ST_GBNF_MAX_DEPTH / 2);
    ck_assert_int_lt(opened, ST_GBNF_MAX_DEPTH + 1);
    ck_assert(st_gbnf_push(&st, 'x'));
    for (int i = 0; i < opened; i++)
        ck_assert(st_gbnf_push(&st, ')'));
    ck_assert(st_gbnf_complete(&st));
    ck_assert(!st_gbnf_may_continue(&st));
    st_gbnf_unref(g);
}
END_TEST

/* A grammar text of 'levels' rules, each two references to the next, the
 * last 'leaf' (2^levels ways through the empty text), after 'head'. */
static void tree_grammar(char *text, size_t cap, const char *head, int levels, const char *leaf)
{
    int o = snprintf(text, cap, "root ::= %s n0 \"b\"\n", head);
    for (int i = 0; i < levels; i++)
        o += snprintf(text + o, cap - (size_t)o, "n%d ::= n%d n%d\n", i, i + 1, i + 1);
    snprintf(text + o, cap - (size_t)o, "n%d ::= %s\n", levels, leaf);
}

/* The work bound: one stack's expansion after a character may take at
 * most ST_GBNF_MAX_WORK element visits, or the grammar is refused up
 * front, naming a rule. Before the bound, the 18-level tree after "a"
 * compiled and then ran the recognizer out of its budget at the 'a' the
 * first-byte table allowed: the request failed part-way. */
START_TEST(test_gbnf_work_bound)
{
    char text[2048];
    tree_grammar(text, sizeof(text), "", 18, "\"\"");   /* before the first character */
    compile_err(text, "is too costly to follow");
    tree_grammar(text, sizeof(text), "\"a\"", 18, "\"\" | \"x\"");   /* used to fail part-way */
    compile_err(text, "is too costly to follow");
    compile_err(text, "line 7, column 1: rule 'n5'");   /* the deepest rule over the bound */
    tree_grammar(text, sizeof(text), "\"a\"", 13, "\"\" | \"x\"");   /* 2^15 visits: just over */
    compile_err(text, "more than 16384 steps");
    /* near the bound: compiled, and every byte the table allows is taken */
    tree_grammar(text, sizeof(text), "\"a\"", 12, "\"\" | \"\\n\"");
    struct st_gbnf *g = compile_ok(text);
    ck_assert_uint_le(st_gbnf_max_work(g), ST_GBNF_MAX_WORK);
    ck_assert_uint_ge(st_gbnf_max_work(g), ST_GBNF_MAX_WORK / 2);
    ck_assert_int_eq(J(g, "a\n\n\n"), PREFIX);   /* the first of 4096 ways of each are kept */
    ck_assert_int_eq(J(g, "axb"), REJECT);
    st_gbnf_unref(g);
    tree_grammar(text, sizeof(text), "\"a\"", 12, "\"\"");
    g = compile_ok(text);
    ck_assert_uint_ge(st_gbnf_max_work(g), ST_GBNF_MAX_WORK / 2);
    ck_assert_int_eq(J(g, "ab"), FULL);   /* through all 4096 empty leaves */
    ck_assert_int_eq(J(g, "aab"), REJECT);
    st_gbnf_unref(g);
    /* a long row of references to a chain of rules that may be empty */
    size_t o = (size_t)snprintf(text, sizeof(text), "root ::= \"a\"");
    for (int i = 0; i < 200; i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o, " c0");
    o += (size_t)snprintf(text + o, sizeof(text) - o, " \"b\"\n");
    for (int i = 0; i < 100; i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o, "c%d ::= c%d\n", i, i + 1);
    snprintf(text + o, sizeof(text) - o, "c100 ::= \"\" | \"y\"\n");
    compile_err(text, "rule 'root' is too costly");
    /* nesting whose closing part may be empty in three ways: 3^depth ways
     * back down the stack; one way (blanks) is linear in the depth */
    compile_err("root ::= \"(\" root o | \"x\"\no ::= (\"z\"?)? | \"\"\n", "too costly");
    g = compile_ok("root ::= \"(\" root ws | \"x\"\nws ::= [ ]*\n");
    ck_assert_uint_le(st_gbnf_max_work(g), 4 * ST_GBNF_MAX_DEPTH + 64);
    struct st_gbnf_state st;
    st_gbnf_state_init(&st, g);
    for (int i = 0; i < 100; i++)
        ck_assert(st_gbnf_push(&st, '('));
    ck_assert(st_gbnf_feed(&st, "x  ", 3) && st_gbnf_complete(&st));
    st_gbnf_unref(g);
}
END_TEST

/* Equivalents of llama.cpp's example grammars (written from the format):
 * each compiles with a small work bound and reads a sample. */
static const char *const c_gbnf =
    "root ::= func*\n"
    "func ::= type name \"(\" (type name)? \")\" \"{\" stmt* \"}\"\n"
    "type ::= (\"int\" | \"float\" | \"char\") sp\n"
    "name ::= [a-zA-Z_] [a-zA-Z_0-9]*\n"
    "stmt ::= type name sp \"=\" sp expr \";\" | name sp \"=\" sp expr \";\" |\n"
    "         \"return\" sp expr \";\" | \"while\" \"(\" cond \")\" \"{\" stmt* \"}\" |\n"
    "         \"if\" \"(\" cond \")\" \"{\" stmt* \"}\" (\"else\" \"{\" stmt* \"}\")? |\n"
    "         \"//\" [^\\n]* \"\\n\" | \"/*\" ([^*] | \"*\" [^/])* \"*/\"\n"
    "cond ::= expr (\"<=\" | \"<\" | \"==\" | \"!=\" | \">=\" | \">\") expr\n"
    "expr ::= term ((\"+\" | \"-\") term)*\n"
    "term ::= fact ((\"*\" | \"/\") fact)*\n"
    "fact ::= name | [0-9]+ | \"-\" fact | name \"(\" (expr (\",\" sp expr)*)? \")\" |\n"
    "         \"(\" sp expr sp \")\"\n"
    "sp ::= [ \\t\\n]+\n";

START_TEST(test_gbnf_known_grammars)
{
    static const struct {
        const char *grammar, *sample;
    } k[] = {
        { NULL, "int main(){int x = 1+f(2);while(x<3){x = x*2;}return x;}" },
        { "root ::= \"1. \" mv \" \" mv \"\\n\" ([1-9] [0-9]? \". \" mv \" \" mv \"\\n\")+\n"
          "mv ::= (pawn | piece | castle) [+#]?\n"
          "pawn ::= ([a-h] \"x\")? [a-h] [1-8] (\"=\" [NBRQ])?\n"
          "piece ::= [NBRQK] [a-h]? [1-8]? \"x\"? [a-h] [1-8]\n"
          "castle ::= \"O-O\" (\"-O\")?\n",
          "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n4. O-O Nxe4+\n" },
        { "root ::= ch+ ([ \\t\\n] ch+)*\nch ::= [a-zA-Z] | [0-9] | [!-/:-@\\[-`{-~]\n",
          "Hello, world! It's 42." },
        { "root ::= jp+ ([ \\t\\n] jp+)*\n"
          "jp ::= [\\u3041-\\u309F] | [\\u30A0-\\u30FF] | [\\u3001-\\u303E] | [\\u4E00-\\u9FFF]\n",
          "\xe3\x81\x93\xe3\x82\x93\xe3\x81\xab\xe3\x81\xa1\xe3\x81\xaf\xe3\x80\x81"
          "\xe4\xb8\x96\xe7\x95\x8c" },
        { "root ::= \"[\\n\" ws (val (\",\\n\" ws val)*)? \"]\"\n"
          "val ::= \"{\" ws (str \":\" ws val (\",\" ws str \":\" ws val)*)? \"}\" ws |\n"
          "        \"[\" ws (val (\",\" ws val)*)? \"]\" ws | str | [0-9]+ ws\n"
          "str ::= \"\\\"\" [^\"\\\\]* \"\\\"\" ws\n"
          "ws ::= ([ \\t\\n] ws)?\n",
          "[\n{\"a\": [1, 2]},\n \"x\"]" },
    };
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        struct st_gbnf *g = compile_ok(k[i].grammar ? k[i].grammar : c_gbnf);
        ck_assert_uint_le(st_gbnf_max_work(g), 64);
        ck_assert_int_eq(J(g, k[i].sample), FULL);
        st_gbnf_unref(g);
    }
    struct st_gbnf *g = compile_ok(json_gbnf);
    ck_assert_uint_le(st_gbnf_max_work(g), 64);
    st_gbnf_unref(g);
}
END_TEST

/* An alternation of 200 words: every word can be written (each is a
 * way of reading the text until its letters decide). */
START_TEST(test_gbnf_many_alternatives)
{
    static char text[200 * 16 + 64];
    size_t len = (size_t)snprintf(text, sizeof(text), "root ::= (");
    for (int i = 0; i < 200; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\"w%03d\"", i ? " | " : "", i);
    snprintf(text + len, sizeof(text) - len, ") \".\"");
    struct st_gbnf *g = compile_ok(text);
    ck_assert_int_eq(J(g, "w000."), FULL);
    ck_assert_int_eq(J(g, "w199."), FULL);
    ck_assert_int_eq(J(g, "w1"), PREFIX);
    ck_assert_int_eq(J(g, "w200"), REJECT);
    st_gbnf_unref(g);
    /* shared prefixes are merged: every word and the empty one still end */
    g = compile_ok("root ::= (\"word1\" | \"word12\" | \"\" | \"word123\" | \"wx\") \".\" | \"w\"");
    ck_assert_int_eq(J(g, "word1."), FULL);
    ck_assert_int_eq(J(g, "word12."), FULL);
    ck_assert_int_eq(J(g, "word123."), FULL);
    ck_assert_int_eq(J(g, "."), FULL);
    ck_assert_int_eq(J(g, "wx."), FULL);
    ck_assert_int_eq(J(g, "w"), FULL);
    ck_assert_int_eq(J(g, "word"), PREFIX);
    ck_assert_int_eq(J(g, "word2."), REJECT);
    ck_assert_int_eq(J(g, "word1234."), REJECT);
    st_gbnf_unref(g);
}
END_TEST

START_TEST(test_gbnf_loop_bytes)
{
    struct st_gbnf *g = compile_ok("root ::= \"\\\"\" [^\"\\\\]* \"\\\"\" [ ]*");
    struct st_gbnf_state st;
    bool loop[256];
    st_gbnf_state_init(&st, g);
    ck_assert(!st_gbnf_loop_bytes(&st, loop));
    ck_assert(st_gbnf_feed(&st, "\"ab", 3));
    ck_assert(st_gbnf_loop_bytes(&st, loop));
    ck_assert(loop['a'] && loop[' '] && loop[0xc3] && !loop['"'] && !loop['\\']);
    /* the claim: a looping character leaves the state as it is */
    struct st_gbnf_state c;
    st_gbnf_state_copy(&c, &st);
    ck_assert(st_gbnf_feed(&c, "xyz \xc3\xa9", 6));
    ck_assert_int_eq(c.n, st.n);
    ck_assert_int_eq(memcmp(c.e, st.e, st.off[st.n] * sizeof(st.e[0])), 0);
    st_gbnf_state_copy(&c, &st);
    ck_assert(st_gbnf_push(&c, 0xc3));
    ck_assert(!st_gbnf_loop_bytes(&c, loop));   /* in the middle of a character */
    ck_assert(st_gbnf_feed(&st, "\" ", 2));
    ck_assert(st_gbnf_loop_bytes(&st, loop));
    ck_assert(loop[' '] && !loop['a']);
    st_gbnf_unref(g);
    g = compile_ok("root ::= [a-z]* \"z\"");   /* 'z' is taken by two stacks */
    st_gbnf_state_init(&st, g);
    ck_assert(st_gbnf_loop_bytes(&st, loop));
    ck_assert(loop['a'] && !loop['z'] && !loop[0xc3]);
    st_gbnf_unref(g);
}
END_TEST

static Suite *gbnf_suite(void)
{
    Suite *s = suite_create("gbnf");
    TCase *t = tcase_create("gbnf");
    tcase_add_test(t, test_gbnf_literals_alternatives_groups);
    tcase_add_test(t, test_gbnf_classes_and_dot);
    tcase_add_test(t, test_gbnf_repetitions);
    tcase_add_test(t, test_gbnf_comments_newlines);
    tcase_add_test(t, test_gbnf_errors_name_line_and_column);
    tcase_add_test(t, test_gbnf_json_grammar);
    tcase_add_test(t, test_gbnf_arithmetic_and_list);
    tcase_add_test(t, test_gbnf_ambiguity_and_depth);
    tcase_add_test(t, test_gbnf_many_alternatives);
    tcase_add_test(t, test_gbnf_work_bound);
    tcase_add_test(t, test_gbnf_known_grammars);
    tcase_add_test(t, test_gbnf_loop_bytes);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(gbnf_suite(), CK_FORK);
}
