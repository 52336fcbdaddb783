/* test_json_schema.c -- response_format json_schema's compiler and
 * byte-at-a-time validator (src/grammar/schema/): compile errors name
 * the keyword; each supported keyword accepts what it should and refuses,
 * at the first byte that breaks it, what it should not; $ref recursion;
 * anyOf; the whitespace cap; every prefix of a valid document is valid.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/compiler.h"
#include "strata/json_schema.h"
#include "json_schema_fixture.h"
#include "support.h"

START_TEST(test_json_schema_compile_errors)
{
    compile_bad("{\"type\":\"object\",\"patternProperties\":{}}", "'patternProperties'");
    compile_bad("{\"type\":\"string\",\"minLength\":-1}", "'minLength'");
    compile_bad("{\"type\":\"integer\",\"minimum\":\"1\"}", "'minimum' must be a number");
    compile_bad("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\","
                "\"multipleOf\":0.5}}}", "'multipleOf'");
    compile_bad("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\","
                "\"maximum\":2,\"minimum\":3}}}", "/properties/a");
    compile_bad("{\"not\":{}}", "'not'");
    compile_bad("{\"if\":{}}", "'if'");
    compile_bad("{\"patternProperties\":{}}", "'patternProperties'");
    compile_bad("{\"allOf\":[{},{}]}", "allOf");
    compile_bad("{\"type\":\"strin\"}", "type");
    compile_bad("{\"type\":[]}", "empty");
    compile_bad("[1]", "schema must be an object");
    compile_bad("false", "false");
    compile_bad("{\"$ref\":\"#/$defs/Nope\"}", "undefined");
    compile_bad("{\"$ref\":\"http://x/y\"}", "$ref");
    compile_bad("{\"$defs\":{\"A\":{\"$ref\":\"#/$defs/A\"}},\"$ref\":\"#/$defs/A\"}",
                "circular");
    compile_bad("{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"x\"]}",
                "required");
    compile_bad("{\"enum\":[{\"a\":1}]}", "enum");
    compile_bad("{\"enum\":[]}", "enum");
    compile_bad("{\"type\":\"string\",\"enum\":[1,2]}", "enum");
    compile_bad("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "minItems");
    compile_bad("{\"type\":\"array\",\"prefixItems\":[{}],\"items\":[{}]}", "one form");
    compile_bad("{\"type\":\"array\",\"prefixItems\":{}}", "prefixItems");
    compile_bad("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"strin\"}]}",
                "/prefixItems/0");
    compile_bad("{\"type\":\"string\",\"anyOf\":[{}]}", "combined");
    compile_bad("{\"type\":\"array\",\"minItems\":-1}", "minItems");
    compile_bad("{\"type\":", "not valid JSON");
    /* no finite document: it would be refused only after tokens were spent */
    compile_bad("{\"type\":\"array\",\"items\":{\"$ref\":\"#\"},\"minItems\":1}",
                "levels of nesting");
    compile_bad("{\"$defs\":{\"N\":{\"type\":\"object\",\"required\":[\"n\"],\"properties\":"
                "{\"n\":{\"$ref\":\"#/$defs/N\"}}}},\"$ref\":\"#/$defs/N\"}", "levels of nesting");
    st_json_schema_unref(compile_ok("{\"type\":\"object\",\"required\":[\"kids\"],\"properties\":"
                                    "{\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}}}"));
    st_json_schema_unref(compile_ok("{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"array\","
                                    "\"items\":{\"$ref\":\"#\"},\"minItems\":1}]}"));
    /* keys and enum values the validator cannot count through */
    static char long_enum[8192], long_key[8192];
    snprintf(long_enum, sizeof(long_enum), "{\"enum\":[\"%05000d\"]}", 7);
    snprintf(long_key, sizeof(long_key), "{\"properties\":{\"%05000d\":{}}}", 7);
    compile_bad(long_enum, "longer than");
    compile_bad(long_key, "longer than");
    /* too deep, too many properties */
    char deep[4096] = "", props[8192] = "{\"type\":\"object\",\"properties\":{";
    for (int i = 0; i < 30; i++)
        strcat(deep, "{\"type\":\"array\",\"items\":");
    strcat(deep, "{}");
    for (int i = 0; i < 30; i++)
        strcat(deep, "}");
    compile_bad(deep, "levels deep");
    for (int i = 0; i < 65; i++)
        snprintf(props + strlen(props), sizeof(props) - strlen(props), "%s\"k%d\":{}",
                 i ? "," : "", i);
    strcat(props, "}}");
    compile_bad(props, "more than 64 properties");
    /* format is ignored; annotations too */
    struct st_json_schema *s = compile_ok("{\"type\":\"string\",\"format\":\"date\","
                                          "\"description\":\"d\",\"title\":\"t\"}");
    st_json_schema_unref(s);
}
END_TEST

START_TEST(test_json_schema_types)
{
    accepts("{\"type\":\"string\"}", "\"a\\\"b\\u00e9\"");
    refuses("{\"type\":\"string\"}", "1", 0);
    accepts("{\"type\":\"integer\"}", "-120");
    refuses("{\"type\":\"integer\"}", "1.5", 1);
    refuses("{\"type\":\"integer\"}", "1e3", 1);
    refuses("{\"type\":\"integer\"}", "01", 1);
    accepts("{\"type\":\"number\"}", "-1.5e+3");
    accepts("{\"type\":\"number\"}", "7");
    accepts("{\"type\":\"boolean\"}", "false");
    refuses("{\"type\":\"boolean\"}", "null", 0);
    refuses("{\"type\":\"boolean\"}", "tru", 3);
    accepts("{\"type\":\"null\"}", "null");
    accepts("{\"type\":[\"string\",\"null\"]}", "null");
    accepts("{\"type\":[\"string\",\"null\"]}", "\"x\"");
    refuses("{\"type\":[\"string\",\"null\"]}", "true", 0);
    accepts("{\"type\":\"string\",\"nullable\":true}", "null");
    accepts("{}", "{\"a\":[1,{\"b\":null}],\"c\":\"d\"}");
    accepts("true", "[1,\"x\"]");
    /* whitespace between tokens, capped */
    accepts("{\"type\":\"array\"}", " [ 1 , 2 ]");
    char ws[64] = "[";
    memset(ws + 1, ' ', ST_JSON_SCHEMA_MAX_WS + 1);
    refuses("{\"type\":\"array\"}", ws, 1 + ST_JSON_SCHEMA_MAX_WS);
}
END_TEST

static const char *const person =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},"
    "\"age\":{\"type\":\"integer\"},"
    "\"nick\":{\"type\":\"string\"}},"
    "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";

START_TEST(test_json_schema_objects)
{
    accepts(person, "{\"name\":\"Ann\",\"age\":30}");
    accepts(person, "{ \"age\" : 30 , \"nick\":\"a\", \"name\":\"Ann\" }");
    refuses(person, "{\"name\":\"Ann\"}", 13);               /* '}' before "age" */
    refuses(person, "{\"name\":\"Ann\",\"name\":\"B\"", 16);  /* the key again */
    refuses(person, "{\"nam\":1}", 5);                       /* not a key: its '"' */
    refuses(person, "{\"x\":1}", 2);                          /* no key starts with x */
    refuses(person, "{\"age\":\"30\"}", 7);                    /* wrong type */
    refuses(person, "{\"name\":\"A\",\"age\":1,\"nick\":\"n\",", 30);   /* no key left */
    refuses(person, "{\"name\":\"A\",\"age\":1,\"nick\":\"n\"", 30);    /* not done */
    /* additionalProperties true / absent / a schema */
    const char *open = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
                       "\"required\":[\"a\"]}";
    accepts(open, "{\"ab\":[true],\"a\":1,\"z\":{}}");
    refuses(open, "{\"a\":1,\"a\":2}", 9);
    refuses(open, "{\"a\\n\":1}", 3);                     /* no escapes in extra keys */
    const char *typed = "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}";
    accepts(typed, "{\"x\":\"1\",\"y\":\"2\"}");
    refuses(typed, "{\"x\":1}", 5);
    /* required names a key that properties lacks: an additional one */
    accepts("{\"type\":\"object\",\"required\":[\"k\"]}", "{\"k\":1}");
    refuses("{\"type\":\"object\",\"required\":[\"k\"]}", "{}", 1);
    /* keys written as the server writes them */
    accepts("{\"type\":\"object\",\"properties\":{\"a\\u0022b\":{}},"
            "\"additionalProperties\":false}", "{\"a\\\"b\":1}");
    accepts("{\"type\":\"object\",\"additionalProperties\":false}", "{}");
    refuses("{\"type\":\"object\",\"additionalProperties\":false}", "{\"", 1);
}
END_TEST

START_TEST(test_json_schema_arrays_enums)
{
    const char *arr = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,"
                      "\"maxItems\":2}";
    accepts(arr, "[1]");
    accepts(arr, "[1, 2]");
    refuses(arr, "[]", 1);
    refuses(arr, "[1,2,", 4);
    refuses(arr, "[\"a\"]", 1);
    refuses("{\"type\":\"array\",\"maxItems\":0}", "[1", 1);
    accepts("{\"type\":\"array\",\"maxItems\":0}", "[]");
    /* tuples: prefixItems (2020-12) then items for the rest; an array
     * 'items' (drafts 4 to 2019-09) then additionalItems */
    const char *tup = "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},"
                      "{\"type\":\"integer\"}],\"items\":{\"type\":\"boolean\"}}";
    accepts(tup, "[]");
    accepts(tup, "[\"a\"]");
    accepts(tup, "[\"a\",1,true,false]");
    refuses(tup, "[1", 1);
    refuses(tup, "[\"a\",\"b\"", 5);
    refuses(tup, "[\"a\",1,2", 7);
    const char *closed = "{\"type\":\"array\",\"items\":[{\"const\":1},{\"const\":2}],"
                         "\"additionalItems\":false,\"minItems\":2}";
    accepts(closed, "[1,2]");
    refuses(closed, "[1]", 2);
    refuses(closed, "[1,2,", 4);
    refuses(closed, "[2", 1);
    accepts("{\"prefixItems\":[{\"type\":\"null\"}],\"items\":false}", "[null]");
    refuses("{\"prefixItems\":[{\"type\":\"null\"}],\"items\":false}", "[null,", 5);
    /* a tuple item that must hold an array like itself cannot be finished */
    compile_bad("{\"type\":\"array\",\"prefixItems\":[{\"$ref\":\"#\"}],\"minItems\":1}",
                "levels of nesting");
    const char *en = "{\"enum\":[\"red\",\"green\",1,12.5,true,null]}";
    accepts(en, "\"red\"");
    accepts(en, "\"green\"");
    accepts(en, "1");
    accepts(en, "12.5");
    accepts(en, "true");
    accepts(en, "null");
    refuses(en, "\"re\"", 3);
    refuses(en, "\"redd\"", 4);
    refuses(en, "12", 2);   /* "12" is a prefix of 12.5 but not a value */
    refuses(en, "false", 0);
    accepts("{\"type\":\"object\",\"properties\":{\"c\":{\"enum\":[1,12]}}}", "{\"c\":12}");
    accepts("{\"type\":\"object\",\"properties\":{\"c\":{\"enum\":[1,12]}}}", "{\"c\":1}");
    accepts("{\"const\":\"x\\u00e9\"}", "\"x\xc3\xa9\"");
    refuses("{\"const\":\"x\"}", "\"y\"", 1);
    /* enum filtered by type */
    accepts("{\"type\":\"string\",\"enum\":[\"a\",1]}", "\"a\"");
    refuses("{\"type\":\"string\",\"enum\":[\"a\",1]}", "1", 0);
}
END_TEST

START_TEST(test_json_schema_ref_recursion)
{
    const char *tree = "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{"
                       "\"v\":{\"type\":\"integer\"},"
                       "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},"
                       "\"required\":[\"v\"],\"additionalProperties\":false}},"
                       "\"$ref\":\"#/$defs/node\"}";
    accepts(tree, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[{\"v\":4,\"kids\":[]}]}]}");
    refuses(tree, "{\"v\":1,\"kids\":[{\"w\":2}]}", 17);
    accepts("{\"definitions\":{\"s\":{\"type\":\"string\"}},\"type\":\"array\","
            "\"items\":{\"$ref\":\"#/definitions/s\"}}", "[\"a\",\"b\"]");
    /* "#": the root itself */
    const char *list = "{\"type\":[\"array\",\"integer\"],\"items\":{\"$ref\":\"#\"}}";
    accepts(list, "[1,[2,[3,[]]]]");
    refuses(list, "[1,[\"x\"", 4);
    /* recursion deeper than the stack: refused at the limit */
    char deep[128] = "";
    memset(deep, '[', ST_JSON_SCHEMA_MAX_DEPTH + 1);
    refuses(list, deep, ST_JSON_SCHEMA_MAX_DEPTH);
    /* allOf with one member */
    accepts("{\"allOf\":[{\"type\":\"integer\"}],\"description\":\"x\"}", "5");
}
END_TEST

START_TEST(test_json_schema_any_of)
{
    const char *u = "{\"anyOf\":["
                    "{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"a\"},"
                    "\"x\":{\"type\":\"integer\"}},\"required\":[\"kind\",\"x\"],"
                    "\"additionalProperties\":false},"
                    "{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"b\"},"
                    "\"y\":{\"type\":\"string\"}},\"required\":[\"kind\",\"y\"],"
                    "\"additionalProperties\":false},"
                    "{\"type\":\"null\"}]}";
    accepts(u, "{\"kind\":\"a\",\"x\":1}");
    accepts(u, "{\"kind\":\"b\",\"y\":\"s\"}");
    accepts(u, "{\"y\":\"s\",\"kind\":\"b\"}");
    accepts(u, "null");
    refuses(u, "{\"kind\":\"a\",\"y\":", 13);     /* "a" chose the first: no y */
    refuses(u, "{\"x\":1,\"kind\":\"b\"", 15);    /* x chose the first: kind is "a" */
    refuses(u, "[", 0);
    /* oneOf as anyOf; nested unions flatten; nullable through a $ref */
    const char *o = "{\"$defs\":{\"n\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}},"
                    "\"oneOf\":[{\"$ref\":\"#/$defs/n\"},{\"type\":\"string\"}]}";
    accepts(o, "3");
    accepts(o, "null");
    accepts(o, "\"s\"");
    refuses(o, "true", 0);
    /* overlapping members: both stay in play until one fails */
    const char *ov = "{\"type\":\"array\",\"items\":{\"anyOf\":[{\"type\":\"integer\"},"
                     "{\"type\":\"number\"},{\"enum\":[1.5,\"q\"]}]}}";
    accepts(ov, "[1,2.25,1.5,\"q\"]");
    refuses(ov, "[\"r\"", 2);
    /* 16 object members, all taking '{': every one stays writable */
    char many[4096] = "{\"anyOf\":[";
    for (int i = 0; i < 16; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many),
                 "%s{\"type\":\"object\",\"properties\":{\"k%d\":{\"const\":%d}},"
                 "\"required\":[\"k%d\"],\"additionalProperties\":false}", i ? "," : "", i, i,
                 i);
    strcat(many, "]}");
    accepts(many, "{\"k0\":0}");
    accepts(many, "{\"k15\":15}");
    refuses(many, "{\"k15\":14}", 8);
    refuses(many, "{\"k16\":16}", 4);
}
END_TEST

/* Every prefix of a valid document is accepted, and copies continue alike. */
START_TEST(test_json_schema_prefixes_and_copy)
{
    struct st_json_schema *s = compile_ok(person);
    const char *doc = "{\"nick\":\"x\", \"name\":\"A\\u00e9\",\"age\":-0}";
    struct st_json_schema_state a, b;
    st_json_schema_state_init(&a, s);
    ck_assert(st_json_schema_empty(&a));
    for (size_t i = 0; doc[i]; i++) {
        st_json_schema_state_copy(&b, &a);
        ck_assert_msg(st_json_schema_push(&a, (unsigned char)doc[i]), "byte %zu", i);
        ck_assert(st_json_schema_push(&b, (unsigned char)doc[i]));
        ck_assert_int_eq(st_json_schema_complete(&a), st_json_schema_complete(&b));
        ck_assert(!st_json_schema_empty(&a));
    }
    ck_assert(st_json_schema_complete(&a));
    ck_assert(!st_json_schema_push(&a, 'x'));
    ck_assert(!st_json_schema_valid(&a));
    ck_assert(!st_json_schema_push(&a, ' '));   /* sticky */
    /* in_string / between */
    uint16_t left = 0;
    st_json_schema_state_init(&a, s);
    ck_assert(st_json_schema_between(&a, &left) && left == ST_JSON_SCHEMA_MAX_WS);
    ck_assert(st_json_schema_feed(&a, "{  ", 3));
    ck_assert(st_json_schema_between(&a, &left) && left == ST_JSON_SCHEMA_MAX_WS - 2);
    ck_assert(st_json_schema_feed(&a, "\"nick\":\"", 8));
    ck_assert(st_json_schema_in_string(&a));
    ck_assert(!st_json_schema_between(&a, &left));
    st_json_schema_state_init(&a, s);
    ck_assert(st_json_schema_feed(&a, "{\"na", 4));
    ck_assert(!st_json_schema_in_string(&a));   /* a key is no free string */
    st_json_schema_unref(s);
}
END_TEST

/* ---- ranges and lengths ---------------------------------------------- */

/* 'text' with every ' made a " (schemas and documents stay readable);
 * 128 rotating buffers: a test keeps its schemas while it makes fewer. */
static const char *q(const char *text)
{
    static char buf[128][512];
    static int next;
    char *b = buf[next++ & 127];
    size_t i = 0;
    for (; text[i] && i + 1 < sizeof(buf[0]); i++)
        b[i] = text[i] == '\'' ? '"' : text[i];
    b[i] = '\0';
    return b;
}

START_TEST(test_json_schema_int_range)
{
    const char *week = q("{'type':'integer','minimum':1,'maximum':7}");
    accepts(week, "1");
    accepts(week, "7");
    accepts(week, "5");
    refuses(week, "0", 0);
    refuses(week, "8", 0);
    refuses(week, "-1", 0);
    refuses(week, "10", 1);
    refuses(week, "07", 0);
    const char *neg = q("{'type':'integer','minimum':-5,'maximum':-2}");
    accepts(neg, "-5");
    accepts(neg, "-2");
    refuses(neg, "-1", 1);
    refuses(neg, "-6", 1);
    refuses(neg, "-0", 1);
    refuses(neg, "0", 0);
    refuses(neg, "-50", 2);
    /* a range that excludes 0 and single digits: "1" is a prefix, not a value */
    const char *teens = q("{'type':'integer','minimum':10,'maximum':20}");
    accepts(teens, "10");
    accepts(teens, "20");
    refuses(teens, "1", 1);
    refuses(teens, "21", 1);
    refuses(teens, "9", 0);
    refuses(teens, "0", 0);
    refuses(teens, "100", 2);
    /* -0 is never written under a range; 0 is when the range holds it */
    const char *sym = q("{'type':'integer','minimum':-10,'maximum':10}");
    accepts(sym, "0");
    accepts(sym, "-10");
    refuses(sym, "-0", 1);
    refuses(sym, "00", 1);
    refuses(sym, "-11", 2);
    refuses(sym, "11", 1);
    /* exclusive bounds, both forms; non-integral bounds round inward */
    const char *ex = q("{'type':'integer','exclusiveMinimum':0,'exclusiveMaximum':3}");
    refuses(ex, "0", 0);
    accepts(ex, "1");
    accepts(ex, "2");
    refuses(ex, "3", 0);
    const char *d4 = q("{'type':'integer','minimum':0,'exclusiveMinimum':true,"
                       "'maximum':3,'exclusiveMaximum':true}");
    refuses(d4, "0", 0);
    accepts(d4, "2");
    refuses(d4, "3", 0);
    accepts(q("{'type':'integer','minimum':0,'exclusiveMinimum':false}"), "0");
    const char *fr = q("{'type':'integer','minimum':-2.5,'maximum':2.5}");
    accepts(fr, "-2");
    accepts(fr, "2");
    refuses(fr, "-3", 1);
    refuses(fr, "3", 0);
    accepts(q("{'type':'integer','minimum':1e2}"), "100");
    refuses(q("{'type':'integer','minimum':1e2}"), "99", 2);
    refuses(q("{'type':'integer','maximum':-0.5}"), "0", 0);
    accepts(q("{'type':'integer','maximum':-0.5}"), "-1");
    accepts(q("{'type':'integer','minimum':9007199254740992}"), "9007199254740992");
    refuses(q("{'type':'integer','minimum':9007199254740992}"), "9007199254740991", 16);
    /* one open side: an integer of up to 18 digits */
    accepts(q("{'type':'integer','minimum':0}"), "999999999999999999");
    refuses(q("{'type':'integer','minimum':0}"), "1000000000000000001", 18);
    /* inside documents: the number ends only in range */
    const char *tool = q("{'type':'object','properties':{'days':{'type':'integer',"
                         "'minimum':1,'maximum':7}},'required':['days']}");
    accepts(tool, q("{'days':3}"));
    refuses(tool, q("{'days':8}"), 8);
    refuses(tool, q("{'days':10}"), 9);
    refuses(q("{'type':'array','items':{'type':'integer','minimum':10}}"), "[1]", 2);
    accepts(q("{'type':['integer','null'],'minimum':1}"), "null");
    refuses(q("{'type':['integer','null'],'minimum':1}"), "0", 0);
    accepts(q("{'type':'string','minimum':1}"), q("'x'"));   /* not a number: n/a */
    /* enum values out of range drop out */
    const char *en = q("{'type':'integer','enum':[1,5,9],'maximum':6}");
    accepts(en, "5");
    refuses(en, "9", 0);
    /* refused */
    compile_bad(q("{'type':'integer','minimum':9007199254740993}"), "2^53");
    compile_bad(q("{'type':'integer','maximum':1e300}"), "2^53");
    compile_bad(q("{'type':'integer','minimum':3,'maximum':2}"), "nothing is valid");
    compile_bad(q("{'type':'integer','exclusiveMinimum':1,'exclusiveMaximum':2}"),
                "nothing is valid");
    compile_bad(q("{'type':'integer','enum':[9],'maximum':6}"), "enum");
}
END_TEST

START_TEST(test_json_schema_string_length)
{
    const char *s23 = q("{'type':'string','minLength':2,'maxLength':3}");
    accepts(s23, q("'ab'"));
    accepts(s23, q("'abc'"));
    accepts(s23, q("'\xc3\xa9\xe2\x82\xac'"));                 /* 2 code points, 5 bytes */
    accepts(s23, q("'\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80'")); /* 3, the last 4 bytes */
    accepts(s23, q("'\\n\\t'"));
    accepts(s23, q("'\\uD83D\\uDE00x'"));    /* a pair is one code point */
    accepts(s23, q("'ab\\uD83D\\uDE00'"));
    accepts(s23, q("'\\u00e9ab'"));
    refuses(s23, q("'a'"), 2);
    refuses(s23, q("'\\uD83D\\uDE00'"), 13);
    refuses(s23, q("'abcd'"), 4);
    refuses(s23, q("'abc\\n'"), 4);
    refuses(s23, q("'ab\xc3\xa9\xc3\xa9'"), 5);
    /* after a high surrogate with no room left, only its low half fits */
    refuses(s23, q("'abc\\uD83D'"), 4);
    refuses(s23, q("'ab\\uD83D\\u0041'"), 11);
    refuses(s23, q("'ab\\uD83D\\uDBFF'"), 12);
    refuses(s23, q("'ab\\uD83D\\n'"), 10);
    accepts(q("{'type':'string','maxLength':4}"), q("'ab\\uD83D\\u0041'"));  /* lone high */
    accepts(q("{'type':'string','maxLength':0}"), q("''"));
    refuses(q("{'type':'string','maxLength':0}"), q("'a'"), 1);
    accepts(q("{'type':'string','minLength':1}"), q("'\\u0000'"));
    /* enum values filtered by length; keys are not strings of the node */
    const char *en = q("{'type':'string','enum':['a','abcd','\xc3\xa9'],'maxLength':1}");
    accepts(en, q("'a'"));
    accepts(en, q("'\xc3\xa9'"));
    refuses(en, q("'abcd'"), 2);
    accepts(q("{'type':'object','maxLength':1}"), q("{'long key':1}"));
    accepts(q("{'type':['string','null'],'minLength':5}"), "null");
    compile_bad(q("{'type':'string','minLength':3,'maxLength':2}"), "nothing is valid");
    compile_bad(q("{'type':'string','enum':['abc'],'maxLength':2}"), "enum");
    compile_bad(q("{'type':'string','maxLength':1.5}"), "'maxLength'");
    /* the free-string fast path only while 256 more code points fit */
    struct st_json_schema *s = compile_ok(q("{'type':'string','maxLength':300}"));
    struct st_json_schema_state st;
    st_json_schema_state_init(&st, s);
    ck_assert(st_json_schema_push(&st, '"'));
    ck_assert(st_json_schema_in_string(&st));
    for (int i = 0; i < 44; i++)
        ck_assert(st_json_schema_push(&st, 'a'));
    ck_assert(st_json_schema_in_string(&st));
    ck_assert(st_json_schema_push(&st, 'a'));
    ck_assert(!st_json_schema_in_string(&st));
    st_json_schema_unref(s);
}
END_TEST

/* ---- string lengths over UTF-8 split byte by byte --------------------
 * Every string of up to U8_DEPTH bytes from an alphabet of ASCII, lead,
 * continuation and never-valid bytes (each second-byte range edge of
 * Unicode's table 3-7 on both sides) is read one byte at a time, as
 * tokens that split a character would bring it: the validator takes a
 * byte iff the oracle below says the string so far is valid UTF-8 (its
 * last character maybe cut short) of at most maxLength code points, and
 * takes the closing quote iff every character is whole and the count is
 * at least minLength. So a lone continuation byte never counts as none. */
#define U8_DEPTH 7

static const unsigned char u8_alpha[] = {
    'a', 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xee,
    0xf0, 0xf4, 0xf5, 0xff,
};

/* p[0..n): -1 if no continuation makes it valid UTF-8, else its code
 * points (a cut-short last one counts); *whole: no character cut short. */
static int u8_oracle(const unsigned char *p, size_t n, bool *whole)
{
    int cps = 0;
    *whole = true;
    for (size_t i = 0; i < n; cps++) {
        unsigned c = p[i], len, lo = 0x80, hi = 0xbf;
        if (c < 0x80)
            len = 1;
        else if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4;
        else
            return -1;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
        for (size_t k = 1; k < len; k++) {
            if (i + k == n) {
                *whole = false;
                return cps + 1;
            }
            unsigned b = p[i + k];
            if (k == 1 ? b < lo || b > hi : b < 0x80 || b > 0xbf)
                return -1;
        }
        i += len;
    }
    return cps;
}

struct u8_walk {
    uint32_t min, max;
    unsigned char text[U8_DEPTH];
    long n_states;
};

static void u8_walk(struct u8_walk *w, const struct st_json_schema_state *st, size_t len)
{
    w->n_states++;
    bool whole;
    int cps = u8_oracle(w->text, len, &whole);
    struct st_json_schema_state nx;
    st_json_schema_state_copy(&nx, st);
    bool closes = whole && (uint32_t)cps >= w->min;
    if (st_json_schema_push(&nx, '"') != closes || (closes && !st_json_schema_complete(&nx)))
        ck_abort_msg("[%u, %u] closing after %zu bytes (%d code points, whole %d)", w->min,
                     w->max, len, cps, (int)whole);
    if (len == U8_DEPTH)
        return;
    for (size_t a = 0; a < sizeof(u8_alpha); a++) {
        w->text[len] = u8_alpha[a];
        int c = u8_oracle(w->text, len + 1, &whole);
        bool want = c >= 0 && (uint32_t)c <= w->max;
        st_json_schema_state_copy(&nx, st);
        bool took = st_json_schema_push(&nx, u8_alpha[a]);
        if (took != want)   /* (no ck_assert: it logs each pass) */
            ck_abort_msg("[%u, %u]: byte %zu 0x%02x taken %d, want %d", w->min, w->max, len,
                         u8_alpha[a], (int)took, (int)want);
        if (took)
            u8_walk(w, &nx, len + 1);
    }
}

START_TEST(test_json_schema_length_utf8_bytewise)
{
    /* free strings, and the same lengths folded into a pattern's automaton (pstr.c) */
    static const char *const pattern[] = { "", "\"pattern\":\"^[^x]*$\"," };
    static const uint32_t lens[][2] = { { 0, 0 }, { 1, 1 }, { 1, 2 }, { 2, 2 } };
    for (size_t f = 0; f < 2; f++) {
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            char schema[160];
            snprintf(schema, sizeof(schema),
                     "{\"type\":\"string\",%s\"minLength\":%u,\"maxLength\":%u}", pattern[f],
                     lens[i][0], lens[i][1]);
            struct st_json_schema *s = compile_ok(schema);
            struct st_json_schema_state st;
            st_json_schema_state_init(&st, s);
            ck_assert(st_json_schema_push(&st, '"'));
            struct u8_walk w = { .min = lens[i][0], .max = lens[i][1] };
            u8_walk(&w, &st, 0);
            ck_assert_int_gt(w.n_states, w.max ? 100 : 0);
            st_json_schema_unref(s);
        }
    }
    /* and whole, as a document: a stray continuation byte is no character */
    refuses(q("{'type':'string','maxLength':1}"), q("'a\x80'"), 2);
    refuses(q("{'type':'string','minLength':2}"), q("'\xc3\xa9\xa9'"), 3);
    refuses(q("{'type':'string'}"), q("'\xe2\x82'"), 3);
}
END_TEST

/* Brute force over every text of up to DEPTH bytes from "-0123456789":
 * the complete ones are exactly the canonical integers in [lo, hi], and
 * every accepted prefix can still be completed. */
#define DEPTH 4

struct brute {
    long long lo, hi;
    int n_complete;
    char text[DEPTH + 1];
};

/* Whether some completion of the state's text (within DEPTH) is complete. */
static bool walk(struct brute *b, const struct st_json_schema_state *st, int len)
{
    static const char alpha[] = "-0123456789";
    bool done = st_json_schema_complete(st), any = done;
    if (done) {
        char canon[32];
        b->text[len] = '\0';
        long long x = strtoll(b->text, NULL, 10);
        snprintf(canon, sizeof(canon), "%lld", x);
        if (strcmp(canon, b->text) != 0 || x < b->lo || x > b->hi)   /* (no ck_assert:
                                                                       * it logs each pass) */
            ck_abort_msg("[%lld, %lld] completes '%s'", b->lo, b->hi, b->text);
        b->n_complete++;
    }
    if (len == DEPTH)
        return true;
    for (const char *a = alpha; *a; a++) {
        struct st_json_schema_state nx;
        st_json_schema_state_copy(&nx, st);
        if (!st_json_schema_push(&nx, (unsigned char)*a))
            continue;
        b->text[len] = *a;
        any |= walk(b, &nx, len + 1);
    }
    if (!any)
        ck_abort_msg("[%lld, %lld]: '%.*s' is a dead end", b->lo, b->hi, len, b->text);
    return any;
}

static int expected(long long lo, long long hi)
{
    int n = 0;
    for (long long x = ST_MAX(lo, -999LL); x <= ST_MIN(hi, 9999LL); x++)
        n++;
    return n;
}

START_TEST(test_json_schema_int_range_brute)
{
    static const long long b[] = { -120, -15, -10, -1, 0, 1, 9, 10, 15, 99, 100, 120 };
    const int nb = (int)(sizeof(b) / sizeof(b[0]));
    for (int i = -1; i < nb; i++) {
        for (int j = -1; j < nb; j++) {
            if (i >= 0 && j >= 0 && b[i] > b[j])
                continue;
            long long lo = i < 0 ? -9999 : b[i], hi = j < 0 ? 99999 : b[j];
            char forms[4][160];
            /* the same range written four ways */
            snprintf(forms[0], 160, "{\"type\":\"integer\"");
            snprintf(forms[1], 160, "{\"type\":\"integer\"");
            snprintf(forms[2], 160, "{\"type\":\"integer\"");
            snprintf(forms[3], 160, "{\"type\":\"integer\"");
            if (i >= 0) {
                snprintf(forms[0] + strlen(forms[0]), 80, ",\"minimum\":%lld", lo);
                snprintf(forms[1] + strlen(forms[1]), 80, ",\"exclusiveMinimum\":%lld", lo - 1);
                snprintf(forms[2] + strlen(forms[2]), 80, ",\"minimum\":%.1f", (double)lo - 0.5);
                snprintf(forms[3] + strlen(forms[3]), 80,
                         ",\"minimum\":%lld,\"exclusiveMinimum\":true", lo - 1);
            }
            if (j >= 0) {
                snprintf(forms[0] + strlen(forms[0]), 80, ",\"maximum\":%lld", hi);
                snprintf(forms[1] + strlen(forms[1]), 80, ",\"exclusiveMaximum\":%lld", hi + 1);
                snprintf(forms[2] + strlen(forms[2]), 80, ",\"maximum\":%.1f", (double)hi + 0.5);
                snprintf(forms[3] + strlen(forms[3]), 80,
                         ",\"maximum\":%lld,\"exclusiveMaximum\":true", hi + 1);
            }
            for (int f = 0; f < 4; f++) {
                if (i < 0 && j < 0)
                    continue;   /* no range: -0 and the like are fine there */
                strcat(forms[f], "}");
                struct st_json_schema *s = compile_ok(forms[f]);
                struct st_json_schema_state st;
                st_json_schema_state_init(&st, s);
                struct brute br = { .lo = lo, .hi = hi };
                walk(&br, &st, 0);
                ck_assert_msg(br.n_complete == expected(lo, hi), "%s: %d complete, want %d",
                              forms[f], br.n_complete, expected(lo, hi));
                st_json_schema_unref(s);
            }
        }
    }
}
END_TEST

START_TEST(test_json_schema_number_range)
{
    const char *unit = q("{'type':'number','minimum':0,'maximum':1}");
    accepts(unit, "0");
    accepts(unit, "1");
    accepts(unit, "0.5");
    accepts(unit, "1.000");
    accepts(unit, "0.999");
    accepts(unit, "-0.0");   /* -0 is 0 */
    refuses(unit, "1.01", 3);
    refuses(unit, "-0.1", 3);
    refuses(unit, "2", 0);
    refuses(unit, "10", 1);
    refuses(unit, "-1", 1);
    refuses(unit, "1e0", 1);   /* no exponent under a range */
    refuses(unit, "0.5E1", 3);
    const char *pos = q("{'type':'number','exclusiveMinimum':0,'maximum':2}");
    refuses(pos, "0", 1);
    refuses(pos, "0.000", 5);
    accepts(pos, "0.000000000000000000001");   /* past the 18th digit, still above 0 */
    accepts(pos, "2.000000000000000000");
    refuses(pos, "2.0000000000000000001", 20);
    refuses(pos, "-0", 0);
    const char *neg = q("{'type':'number','minimum':-1.5,'maximum':-0.5}");
    accepts(neg, "-1");
    accepts(neg, "-1.5");
    accepts(neg, "-0.5");
    accepts(neg, "-0.75");
    refuses(neg, "-1.6", 3);
    refuses(neg, "-0.4", 3);
    refuses(neg, "-0", 2);
    refuses(neg, "0", 0);
    refuses(neg, "-2", 1);
    const char *big = q("{'type':'number','maximum':9007199254740992}");
    accepts(big, "9007199254740992");
    accepts(big, "-9007199254740993.5");
    refuses(big, "9007199254740993", 15);
    refuses(big, "9007199254740992.5", 17);
    accepts(q("{'type':'number','minimum':1e-3,'maximum':2E1}"), "0.001");
    accepts(q("{'type':'number','minimum':1e-3,'maximum':2E1}"), "20");
    refuses(q("{'type':'number','minimum':1e-3,'maximum':2E1}"), "0.0009", 4);   /* 0.000... never reaches 0.001 */
    /* draft-4 booleans; untyped schemas; inside a tool's arguments */
    const char *d4 = q("{'type':'number','maximum':1,'exclusiveMaximum':true}");
    accepts(d4, "0.9");
    refuses(d4, "1", 0);   /* nothing that starts with 1 is below 1 */
    const char *any = q("{'minimum':1}");
    accepts(any, q("'x'"));
    accepts(any, "1.5");
    refuses(any, "0", 0);
    const char *tool = q("{'type':'object','properties':{'temperature':{'type':'number',"
                         "'minimum':0,'maximum':2}},'required':['temperature']}");
    accepts(tool, q("{'temperature':1.5}"));
    refuses(tool, q("{'temperature':2.5}"), 17);
    refuses(tool, q("{'temperature':2}x"), 17);
    const char *en = q("{'type':'number','enum':[0.5,1.5,3],'maximum':2}");
    accepts(en, "1.5");
    refuses(en, "3", 0);
    compile_bad(q("{'type':'number','minimum':0.0000000000000000001}"), "18 fraction digits");
    compile_bad(q("{'type':'number','minimum':2,'exclusiveMaximum':2}"), "nothing is valid");
    compile_bad(q("{'type':'number','minimum':1e16}"), "2^53");
    st_json_schema_unref(compile_ok(q("{'type':['number','null'],'minimum':2,'maximum':1}")));
}
END_TEST

/* Brute force for numbers: every JSON number of up to NDEPTH bytes
 * without exponent, valued exactly in thousandths. */
#define NDEPTH 5

struct nbrute {
    long long lo, hi;   /* thousandths; LLONG_MIN / LLONG_MAX: no bound */
    bool lo_x, hi_x;    /* exclusive */
    int n_complete;
    char text[NDEPTH + 1];
};

/* The text as a JSON number (no exponent) in thousandths; false: not one. */
static bool milli(const char *t, long long *out)
{
    const char *p = t;
    bool neg = *p == '-';
    p += neg;
    if (!(*p >= '0' && *p <= '9') || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
        return false;
    long long v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    v *= 1000;
    if (*p == '.') {
        long long w = 100;
        if (!(p[1] >= '0' && p[1] <= '9'))
            return false;
        for (p++; *p >= '0' && *p <= '9'; p++, w /= 10)
            v += (*p - '0') * w;
    }
    *out = neg ? -v : v;
    return *p == '\0';
}

static bool in_milli(const struct nbrute *b, long long v)
{
    return (b->lo_x ? v > b->lo : v >= b->lo) && (b->hi_x ? v < b->hi : v <= b->hi);
}

static bool nwalk(struct nbrute *b, const struct st_json_schema_state *st, int len)
{
    static const char alpha[] = "-0123456789.";
    bool any = false;
    if (st_json_schema_complete(st)) {
        long long v;
        b->text[len] = '\0';
        if (!milli(b->text, &v) || !in_milli(b, v))
            ck_abort_msg("%c%lld, %lld%c completes '%s'", b->lo_x ? '(' : '[', b->lo, b->hi,
                         b->hi_x ? ')' : ']', b->text);
        b->n_complete++;
        any = true;
    }
    if (len == NDEPTH)
        return true;
    for (const char *a = alpha; *a; a++) {
        struct st_json_schema_state nx;
        st_json_schema_state_copy(&nx, st);
        if (!st_json_schema_push(&nx, (unsigned char)*a))
            continue;
        b->text[len] = *a;
        any |= nwalk(b, &nx, len + 1);
    }
    if (!any && len < NDEPTH - 1)
        ck_abort_msg("[%lld, %lld]: '%.*s' is a dead end", b->lo, b->hi, len, b->text);
    return any;
}

/* Every text of up to NDEPTH bytes over the alphabet that is a number. */
static int count_numbers(const struct nbrute *b, char *t, int len)
{
    static const char alpha[] = "-0123456789.";
    int n = 0;
    long long v;
    t[len] = '\0';
    if (len > 0 && milli(t, &v) && in_milli(b, v))
        n++;
    for (const char *a = alpha; len < NDEPTH && *a; a++) {
        t[len] = *a;
        n += count_numbers(b, t, len + 1);
    }
    return n;
}

static void bound_text(char *out, size_t cap, const char *kw, long long v)
{
    snprintf(out + strlen(out), cap - strlen(out), ",\"%s\":%s%lld.%03lld", kw,
             v < 0 ? "-" : "", (v < 0 ? -v : v) / 1000, (v < 0 ? -v : v) % 1000);
}

START_TEST(test_json_schema_number_range_brute)
{
    static const long long b[] = { -1500, -500, 0, 250, 1000, 10500 };
    const int nb = (int)(sizeof(b) / sizeof(b[0]));
    for (int i = -1; i < nb; i++) {
        for (int j = -1; j < nb; j++) {
            for (int x = 0; x < 4; x++) {
                if ((i < 0 && j < 0) || (i >= 0 && j >= 0 && b[i] > b[j]))
                    continue;
                struct nbrute br = { .lo = i < 0 ? LLONG_MIN : b[i],
                                     .hi = j < 0 ? LLONG_MAX : b[j],
                                     .lo_x = x & 1, .hi_x = x & 2 };
                char schema[200] = "{\"type\":\"number\"";
                if (i >= 0)
                    bound_text(schema, sizeof(schema), br.lo_x ? "exclusiveMinimum"
                               : "minimum", br.lo);
                if (j >= 0)
                    bound_text(schema, sizeof(schema), br.hi_x ? "exclusiveMaximum"
                               : "maximum", br.hi);
                strcat(schema, "}");
                struct st_json_schema *s = NULL;
                struct st_err err = { 0 };
                if (st_json_schema_compile(schema, strlen(schema), &s, &err) != ST_OK) {
                    ck_assert_msg(strstr(err.msg, "nothing is valid"), "%s: %s", schema,
                                  err.msg);
                    continue;   /* an empty range (lo == hi, one exclusive) */
                }
                struct st_json_schema_state st;
                st_json_schema_state_init(&st, s);
                nwalk(&br, &st, 0);
                char t[NDEPTH + 1];
                int want = count_numbers(&br, t, 0);
                ck_assert_msg(br.n_complete == want, "%s: %d complete, want %d", schema,
                              br.n_complete, want);
                st_json_schema_unref(s);
            }
        }
    }
}
END_TEST

static Suite *json_schema_suite(void)
{
    Suite *s = suite_create("json_schema");
    TCase *t = tcase_create("json_schema");
    tcase_add_test(t, test_json_schema_compile_errors);
    tcase_add_test(t, test_json_schema_types);
    tcase_add_test(t, test_json_schema_objects);
    tcase_add_test(t, test_json_schema_arrays_enums);
    tcase_add_test(t, test_json_schema_ref_recursion);
    tcase_add_test(t, test_json_schema_any_of);
    tcase_add_test(t, test_json_schema_prefixes_and_copy);
    tcase_add_test(t, test_json_schema_int_range);
    tcase_add_test(t, test_json_schema_string_length);
    tcase_add_test(t, test_json_schema_length_utf8_bytewise);
    tcase_add_test(t, test_json_schema_int_range_brute);
    tcase_add_test(t, test_json_schema_number_range);
    tcase_add_test(t, test_json_schema_number_range_brute);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(json_schema_suite(), CK_FORK);
}
