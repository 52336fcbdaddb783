/* chat/json/json.h -- span-based JSON reading (json.c): for the chat
 * templates, the reply parser and the grammars' schema reader.
 */
#ifndef STRATA_CHAT_JSON_JSON_H
#define STRATA_CHAT_JSON_JSON_H

#include <stdbool.h>

#include "strata/out.h"
#include "strata/status.h"
#include "strata/str.h"

/* ---- json.c: span-based JSON reading for the chat templates ---- */
/* A value is a span of the input text; nothing is allocated. Every function
 * validates what it walks (depth <= 64) and returns false on bad JSON. */
enum st_json_type {
    ST_JSON_BAD, ST_JSON_NULL, ST_JSON_FALSE, ST_JSON_TRUE, ST_JSON_NUMBER,
    ST_JSON_STRING, ST_JSON_ARRAY, ST_JSON_OBJECT,
};

enum st_json_type st_json_type(struct st_str v);
/* Span of the first value in 'text' (leading/trailing blanks allowed, and
 * nothing else after it). false if 'text' is not exactly one JSON value. */
bool st_json_value(struct st_str text, struct st_str *v);
/* Iterate an array: *pos starts at 0; each call stores the next element in
 * *elem and returns true, false at the end (or on bad JSON: *bad = true). */
bool st_json_array_next(struct st_str arr, size_t *pos, struct st_str *elem, bool *bad);
/* Iterate an object: *pos starts at 0; each call stores the next member's
 * key (the JSON string, quotes included) and value; false at the end. */
bool st_json_object_next(struct st_str obj, size_t *pos, struct st_str *key, struct st_str *val);
/* Value of 'key' in object 'obj' (first match); false if absent or bad. */
bool st_json_object_get(struct st_str obj, const char *key, struct st_str *val);
/* Append the decoded contents of a JSON string value. */
enum st_status st_json_string_append(struct st_str v, struct st_buf *out);
/* Append 'v' the way Jinja's tojson renders it (Python json.dumps with
 * ensure_ascii=False: ", " and ": " separators, key order kept, strings
 * re-escaped, numbers as written). ST_ERR_INVALID on bad JSON. */
enum st_status st_json_tojson(struct st_str v, struct st_buf *out);
/* The same with tojson(indent=N): json.dumps(indent=N), items one a line,
 * "," ending each but the last, ": " after keys; [] and {} stay inline. */
enum st_status st_json_tojson_indent(struct st_str v, int indent, struct st_buf *out);
/* A string's decoded contents, or the tojson text of any other value (what
 * the Qwen and Llama templates print for a tool call's name and arguments). */
enum st_status st_json_text_append(struct st_str v, struct st_buf *out);
/* The appends above in the sticky form (strata/out.h): nothing happens
 * after a failure, and their own failure (ST_ERR_INVALID on bad JSON, or
 * out of memory) is recorded in o. */
void st_json_out_string(struct st_out *o, struct st_str v);              /* string_append */
void st_json_out_tojson(struct st_out *o, struct st_str v);
void st_json_out_tojson_indent(struct st_out *o, struct st_str v, int indent);
void st_json_out_text(struct st_out *o, struct st_str v);                /* text_append */
/* Jinja truthiness of a JSON value: false for null, false, 0, "", [], {}. */
bool st_json_truthy(struct st_str v);

#endif /* STRATA_CHAT_JSON_JSON_H */
