/* json_schema_fixture.h -- the validator driven byte by byte, shared by
 * test_json_schema.c and test_json_schema_pattern.c: compile a schema (or
 * expect a 400 naming something), count how many bytes of a document it
 * takes, and the two verdicts every case is written in (accepts: whole and
 * complete; refuses: refused exactly at a byte). Header-only; the includer
 * includes check.h first. */
#ifndef STRATA_TEST_JSON_SCHEMA_FIXTURE_H
#define STRATA_TEST_JSON_SCHEMA_FIXTURE_H

#include <string.h>

#include "strata/json_schema.h"

static inline struct st_json_schema *compile_ok(const char *schema)
{
    struct st_json_schema *s = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_json_schema_compile(schema, strlen(schema), &s, &err);
    ck_assert_msg(rc == ST_OK, "compile %s: %s", schema, err.msg);
    return s;
}

/* A 400 (ST_ERR_INVALID) whose message holds needle. */
static inline void compile_bad(const char *schema, const char *needle)
{
    struct st_json_schema *s = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_json_schema_compile(schema, strlen(schema), &s, &err);
    ck_assert_msg(rc == ST_ERR_INVALID, "should not compile: %s", schema);
    ck_assert(s == NULL);
    ck_assert_msg(strstr(err.msg, needle), "'%s': message '%s' lacks '%s'", schema, err.msg,
                  needle);
}

/* How many of doc's n bytes the validator takes; *done: complete after them. */
static inline size_t taken_n(const struct st_json_schema *s, const char *doc, size_t n,
                             bool *done)
{
    struct st_json_schema_state st;
    st_json_schema_state_init(&st, s);
    size_t i = 0;
    while (i < n && st_json_schema_push(&st, (unsigned char)doc[i]))
        i++;
    *done = i == n && st_json_schema_complete(&st);
    return i;
}

static inline size_t taken(const struct st_json_schema *s, const char *doc, bool *done)
{
    return taken_n(s, doc, strlen(doc), done);
}

/* doc is a complete valid document. */
static inline void accepts(const char *schema, const char *doc)
{
    struct st_json_schema *s = compile_ok(schema);
    bool done;
    size_t n = taken(s, doc, &done);
    ck_assert_msg(n == strlen(doc) && done, "%s should accept %s (took %zu bytes, done %d)",
                  schema, doc, n, (int)done);
    st_json_schema_unref(s);
}

/* doc is refused exactly at byte 'at' (at == strlen: taken, not complete). */
static inline void refuses(const char *schema, const char *doc, size_t at)
{
    struct st_json_schema *s = compile_ok(schema);
    bool done;
    size_t n = taken(s, doc, &done);
    ck_assert_msg(n == at && !done, "%s should refuse %s at byte %zu (took %zu, done %d)",
                  schema, doc, at, n, (int)done);
    st_json_schema_unref(s);
}

#endif
