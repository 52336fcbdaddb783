/* server_api_fixture.h -- the harness the suites of the endpoints
 * translated onto chat share (test_server_responses.c,
 * test_server_messages.c): a body translated into the chat JSON it means,
 * a generation rendered by an endpoint's shape (struct st_gen_shape), a
 * stream fed one byte per token through gen_reply.c as the engine would,
 * and the stream's SSE events split into parsed JSON.
 * Header-only (static inline), for the suites that link st_server and
 * have src/ on their include path (the server's private headers, by path:
 * server/daemon.h includes every folder's). */
#ifndef STRATA_TEST_SERVER_API_FIXTURE_H
#define STRATA_TEST_SERVER_API_FIXTURE_H

#include <check.h>
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/daemon.h"

/* st_resp_translate_tree, st_msg_translate_tree */
typedef enum st_status (*api_translate_fn)(const cJSON *root, cJSON **chat,
                                           struct st_api_error *e);

/* o's string member 'key' (the test fails when there is none). */
static inline const char *str_at(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsString(v), "no string '%s'", key);
    return v->valuestring;
}

/* The chat body 'fn' makes of 'body' (which must translate); owned. */
static inline cJSON *api_translate(api_translate_fn fn, const char *body)
{
    cJSON *root = cJSON_Parse(body);
    ck_assert_ptr_nonnull(root);
    cJSON *c = NULL;
    struct st_api_error e;
    memset(&e, 0, sizeof(e));
    ck_assert_msg(fn(root, &c, &e) == ST_OK, "%s: %s", body, e.message);
    cJSON_Delete(root);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* A parsed value as JSON text (what the parsers printed before the chat
 * request kept trees): valid until the next call. */
static inline const char *json_text(const cJSON *v)
{
    static char buf[8192];
    char *p = v ? cJSON_PrintUnformatted(v) : NULL;
    snprintf(buf, sizeof(buf), "%s", p ? p : "");
    cJSON_free(p);
    return buf;
}

/* A one-choice chat generation rendered by 'shape' (taken): model "m",
 * id 'id', created 1700000000. Freed by st_gen_free. */
static inline struct st_gen *api_gen(bool stream, struct st_gen_shape *shape, const char *id)
{
    ck_assert_ptr_nonnull(shape);
    struct st_gen *g = st_gen_new(1);
    ck_assert_ptr_nonnull(g);
    g->kind = ST_OAI_CHAT;
    g->stream = stream;
    g->created = 1700000000;
    g->shape = shape;
    snprintf(g->id, sizeof(g->id), "%s", id);
    snprintf(g->model_name, sizeof(g->model_name), "m");
    return g;
}

/* The non-stream body of choice 'c' (usage 12 in, 7 out, 4 cached; 3
 * reasoning tokens), parsed; owned. */
static inline cJSON *api_body_of(struct st_gen *g, const struct st_oai_choice *c)
{
    struct st_oai_usage u = { 12, 7, 4, 0 };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(g->shape->body(&b, g, c, &u, 3), ST_OK);
    cJSON *j = cJSON_ParseWithLength(b.data, b.len);
    ck_assert_msg(j != NULL, "%.*s", (int)b.len, b.data);
    st_buf_fini(&b);
    return j;
}

struct events {
    cJSON *ev[256];
    int n;
};

/* Split g->out into events; each has an "event:" line naming its data's
 * type; seq: sequence numbers count from 0 one by one (Responses). */
static inline void api_split_events(const struct st_gen *g, bool seq, struct events *out)
{
    char *text = strndup(g->out.data ? g->out.data : "", g->out.len);
    out->n = 0;
    char *save = NULL;
    for (char *blk = strtok_r(text, "\n", &save); blk; blk = strtok_r(NULL, "\n", &save)) {
        ck_assert_msg(strncmp(blk, "event: ", 7) == 0, "%s", blk);
        char *data = strtok_r(NULL, "\n", &save);
        ck_assert_ptr_nonnull(data);
        ck_assert(strncmp(data, "data: ", 6) == 0);
        cJSON *j = cJSON_Parse(data + 6);
        ck_assert_ptr_nonnull(j);
        ck_assert_str_eq(str_at(j, "type"), blk + 7);
        if (seq)
            ck_assert_int_eq(cJSON_GetObjectItem(j, "sequence_number")->valueint, out->n);
        ck_assert_int_lt(out->n, 256);
        out->ev[out->n++] = j;
    }
    free(text);
}

static inline void free_events(struct events *e)
{
    for (int i = 0; i < e->n; i++)
        cJSON_Delete(e->ev[i]);
}

/* Feed 'text' one byte per token through a chat parser (a get_weather tool
 * given, deepseek reasoning) into g (from api_gen, stream), then end the
 * choice with 'finish' or 'err' through g's shape (5 prompt tokens).
 * c: the call the generation hangs on. Returns g. */
static inline struct st_gen *api_run_stream(struct st_gen *g, const char *text,
                                            enum st_finish finish,
                                            const struct st_api_error *err, struct st_call *c)
{
    static const char body[] =
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\","
        "\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}}]}";
    struct st_oai_request oq;
    struct st_api_error e;
    ck_assert_int_eq(st_oai_parse(ST_OAI_CHAT, body, strlen(body), &oq, &e), ST_OK);
    memset(c, 0, sizeof(*c));
    c->gen = g;
    ck_assert_int_eq(st_gen_reply_setup(g, &oq, ST_REASONING_DEEPSEEK, "assistant\n"), ST_OK);
    st_oai_request_fini(&oq);
    struct st_gen_choice *ch = &g->choices[0];
    ch->n_prompt = 5;
    for (size_t i = 0; text[i]; i++)
        st_gen_reply_token(c, g, ch, text + i, 1, NULL);
    ch->finish = finish;
    ch->ended = true;
    st_gen_reply_end(c, g, ch);
    struct st_oai_usage u = { 5, (int64_t)strlen(text), 0, 0 };
    g->shape->stream_end(g, ch, err, &u);
    ck_assert(!g->broken);
    return g;
}

/* The reply both stream tests feed: reasoning, text, then one call. */
static const char api_reply[] =
    "<think>\nplan it\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", "
    "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

#endif
