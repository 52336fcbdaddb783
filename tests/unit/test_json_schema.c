/* test_json_schema.c -- response_format json_schema's compiler and
 * byte-at-a-time validator (src/text/json_schema*.c): compile errors name
 * the keyword; each supported keyword accepts what it should and refuses,
 * at the first byte that breaks it, what it should not; $ref recursion;
 * anyOf; the whitespace cap; every prefix of a valid document is valid.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/json_schema.h"
#include "support.h"

static struct st_json_schema *compile_ok(const char *schema)
{
    struct st_json_schema *s = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_json_schema_compile(schema, strlen(schema), &s, &err);
    ck_assert_msg(rc == ST_OK, "compile %s: %s", schema, err.msg);
    return s;
}

static void compile_bad(const char *schema, const char *needle)
{
    struct st_json_schema *s = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_json_schema_compile(schema, strlen(schema), &s, &err);
    ck_assert_msg(rc == ST_ERR_INVALID, "should not compile: %s", schema);
    ck_assert(s == NULL);
    ck_assert_msg(strstr(err.msg, needle), "'%s': message '%s' lacks '%s'", schema, err.msg,
                  needle);
}

/* How many bytes of 'doc' the validator takes; *done: complete after them. */
static size_t taken(const struct st_json_schema *s, const char *doc, bool *done)
{
    struct st_json_schema_state st;
    st_json_schema_state_init(&st, s);
    size_t i = 0, n = strlen(doc);
    while (i < n && st_json_schema_push(&st, (unsigned char)doc[i]))
        i++;
    *done = i == n && st_json_schema_complete(&st);
    return i;
}

/* doc is a complete valid document, and each proper prefix is not complete
 * unless it ends in a number (then the document could stop there). */
static void accepts(const char *schema, const char *doc)
{
    struct st_json_schema *s = compile_ok(schema);
    bool done;
    size_t n = taken(s, doc, &done);
    ck_assert_msg(n == strlen(doc) && done, "%s should accept %s (took %zu bytes, done %d)",
                  schema, doc, n, (int)done);
    st_json_schema_unref(s);
}

/* doc is refused exactly at byte 'at' (at == strlen: taken but incomplete). */
static void refuses(const char *schema, const char *doc, size_t at)
{
    struct st_json_schema *s = compile_ok(schema);
    bool done;
    size_t n = taken(s, doc, &done);
    ck_assert_msg(n == at && !done, "%s should refuse %s at byte %zu (took %zu, done %d)",
                  schema, doc, at, n, (int)done);
    st_json_schema_unref(s);
}

START_TEST(test_json_schema_compile_errors)
{
    compile_bad("{\"type\":\"string\",\"pattern\":\"^a\"}", "'pattern'");
    compile_bad("{\"type\":\"string\",\"minLength\":1}", "'minLength'");
    compile_bad("{\"type\":\"integer\",\"minimum\":1}", "'minimum'");
    compile_bad("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\","
                "\"multipleOf\":2}}}", "'multipleOf'");
    compile_bad("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\","
                "\"maximum\":2}}}", "/properties/a");
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
    compile_bad("{\"type\":\"array\",\"items\":[{}]}", "tuple");
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
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(json_schema_suite(), CK_FORK);
}
