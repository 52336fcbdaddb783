/* test_server_resp_store.c -- stored /v1/responses (docs/API.md "Stored
 * responses"): the store itself (put, get, delete, replace, each entry
 * seen by its owner alone, LRU eviction by bytes, an entry over the
 * budget, many threads at once, the last reference freeing everything:
 * run under ASan), a body's store and previous_response_id against it
 * (the expanded conversation, 404 for an unknown id or another key's, no
 * instructions carried over, a repeated "input" key, the stored items in
 * OpenAI's item shape), and a finished response put into the store by its
 * renderer (non-stream and stream, under its owner; a failed stream is not
 * kept; a cut reply keeps the same item statuses either way), plus the
 * GET / DELETE routes. */
#include <check.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_api_fixture.h"
#include "support.h"

static struct st_resp_store *store_of(size_t budget)
{
    struct st_resp_store *s = NULL;
    ck_assert_int_eq(st_resp_store_new(budget, &s), ST_OK);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* Two API keys' owners (st_auth_owner: 1 + the key's index); 0 is the
 * owner of every entry of a server without keys. */
#define OWNER_A 1
#define OWNER_B 2

static void put_as(struct st_resp_store *s, uint64_t owner, const char *id, const char *in,
                   const char *out, const char *obj)
{
    ck_assert_int_eq(st_resp_store_put(s, owner, id, in, strlen(in), out, strlen(out), obj,
                                       strlen(obj)), ST_OK);
}

static void put(struct st_resp_store *s, const char *id, const char *in, const char *out,
                const char *obj)
{
    put_as(s, 0, id, in, out, obj);
}

static bool has_as(struct st_resp_store *s, uint64_t owner, const char *id)
{
    char *obj = NULL;
    enum st_status rc = st_resp_store_get(s, owner, id, NULL, NULL, &obj);
    free(obj);
    return rc == ST_OK;
}

static bool has(struct st_resp_store *s, const char *id)
{
    return has_as(s, 0, id);
}

START_TEST(test_server_resp_store_put_get_delete)
{
    struct st_resp_store *s = store_of(1 << 20);
    put(s, "resp_a", "[1]", "[2]", "{\"id\":\"resp_a\"}");
    char *in = NULL, *out = NULL, *obj = NULL;
    ck_assert_int_eq(st_resp_store_get(s, 0, "resp_a", &in, &out, &obj), ST_OK);
    ck_assert_str_eq(in, "[1]");
    ck_assert_str_eq(out, "[2]");
    ck_assert_str_eq(obj, "{\"id\":\"resp_a\"}");
    free(in);
    free(out);
    free(obj);
    obj = (char *)"untouched";
    ck_assert_int_eq(st_resp_store_get(s, 0, "resp_b", NULL, NULL, &obj), ST_ERR_NOT_FOUND);
    ck_assert_ptr_null(obj);
    put(s, "resp_a", "[3]", "[]", "{}");   /* replaced, counted once */
    ck_assert_int_eq(st_resp_store_get(s, 0, "resp_a", &in, NULL, NULL), ST_OK);
    ck_assert_str_eq(in, "[3]");
    free(in);
    struct st_resp_store_stats st;
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 1);
    ck_assert_uint_eq(st.bytes, st_resp_store_entry_size(6, 3, 2, 2));
    ck_assert_uint_eq(st.evicted, 0);
    ck_assert_int_eq(st_resp_store_delete(s, 0, "resp_a"), ST_OK);
    ck_assert_int_eq(st_resp_store_delete(s, 0, "resp_a"), ST_ERR_NOT_FOUND);
    ck_assert(!has(s, "resp_a"));
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 0);
    ck_assert_uint_eq(st.bytes, 0);
    /* storing off: a NULL store holds nothing */
    ck_assert_int_eq(st_resp_store_get(NULL, 0, "resp_a", NULL, NULL, &obj), ST_ERR_NOT_FOUND);
    ck_assert_int_eq(st_resp_store_delete(NULL, 0, "resp_a"), ST_ERR_NOT_FOUND);
    st_resp_store_unref(s);
}
END_TEST

/* An entry is its owner's: another owner (or a server's keyless 0) can
 * neither read nor delete it, and a refused read is no use of it. */
START_TEST(test_server_resp_store_owner_only)
{
    struct st_resp_store *s = store_of(1 << 20);
    put_as(s, OWNER_A, "resp_a", "[1]", "[2]", "{\"id\":\"resp_a\"}");
    char *in = (char *)"untouched", *out = (char *)"untouched", *obj = (char *)"untouched";
    ck_assert_int_eq(st_resp_store_get(s, OWNER_B, "resp_a", &in, &out, &obj), ST_ERR_NOT_FOUND);
    ck_assert_ptr_null(in);
    ck_assert_ptr_null(out);
    ck_assert_ptr_null(obj);
    ck_assert(!has_as(s, 0, "resp_a"));
    ck_assert_int_eq(st_resp_store_delete(s, OWNER_B, "resp_a"), ST_ERR_NOT_FOUND);
    ck_assert_int_eq(st_resp_store_delete(s, 0, "resp_a"), ST_ERR_NOT_FOUND);
    /* still there for A, whole */
    ck_assert_int_eq(st_resp_store_get(s, OWNER_A, "resp_a", &in, &out, &obj), ST_OK);
    ck_assert_str_eq(in, "[1]");
    ck_assert_str_eq(obj, "{\"id\":\"resp_a\"}");
    free(in);
    free(out);
    free(obj);
    struct st_resp_store_stats st;
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 1);
    ck_assert_int_eq(st_resp_store_delete(s, OWNER_A, "resp_a"), ST_OK);
    ck_assert(!has_as(s, OWNER_A, "resp_a"));
    st_resp_store_unref(s);

    /* room for two: B's refused read of A's older entry does not make it
     * newer, so a third entry evicts it (a use would have evicted resp_2) */
    size_t one = st_resp_store_entry_size(6, 2, 2, 2);
    s = store_of(2 * one + one / 2);
    put_as(s, OWNER_A, "resp_1", "[]", "[]", "{}");
    put_as(s, OWNER_A, "resp_2", "[]", "[]", "{}");
    ck_assert(!has_as(s, OWNER_B, "resp_1"));
    put_as(s, OWNER_B, "resp_3", "[]", "[]", "{}");
    ck_assert(!has_as(s, OWNER_A, "resp_1"));
    ck_assert(has_as(s, OWNER_A, "resp_2"));
    ck_assert(has_as(s, OWNER_B, "resp_3"));
    st_resp_store_unref(s);
}
END_TEST

/* Room for three entries of this shape: the fourth evicts the least
 * recently used (a get counts as a use). */
START_TEST(test_server_resp_store_lru_by_bytes)
{
    const char *body = "{\"a\":\"0123456789012345678901234567890123456789\"}";
    size_t one = st_resp_store_entry_size(6, 2, 2, strlen(body));
    struct st_resp_store *s = store_of(3 * one + one / 2);
    put(s, "resp_1", "[]", "[]", body);
    put(s, "resp_2", "[]", "[]", body);
    put(s, "resp_3", "[]", "[]", body);
    ck_assert(has(s, "resp_1"));   /* 1 is now newer than 2 */
    put(s, "resp_4", "[]", "[]", body);
    ck_assert(!has(s, "resp_2"));
    ck_assert(has(s, "resp_1") && has(s, "resp_3") && has(s, "resp_4"));
    struct st_resp_store_stats st;
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 3);
    ck_assert_uint_eq(st.bytes, 3 * one);
    ck_assert_uint_eq(st.evicted, 1);
    /* a bigger entry evicts as many as it needs, least recently used first
     * (the has() calls above left the order 4, 3, 1): 1 then 3 */
    size_t big_len = 2 * one + 10 - (one - strlen(body));   /* entry: 2 * one + 10 */
    char *big = malloc(big_len + 1);
    memset(big, 'x', big_len);
    big[big_len] = '\0';
    ck_assert_uint_eq(st_resp_store_entry_size(6, 2, 2, big_len), 2 * one + 10);
    put(s, "resp_5", "[]", "[]", big);
    free(big);
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.evicted, 3);
    ck_assert(!has(s, "resp_1") && !has(s, "resp_3"));
    ck_assert(has(s, "resp_4") && has(s, "resp_5"));
    ck_assert_uint_le(st.bytes, st.budget);
    st_resp_store_unref(s);
}
END_TEST

START_TEST(test_server_resp_store_too_big)
{
    struct st_resp_store *s = store_of(4096);
    put(s, "resp_small", "[]", "[]", "{}");
    char *huge = malloc(5000);
    memset(huge, 'y', 4999);
    huge[4999] = '\0';
    ck_assert_int_eq(st_resp_store_put(s, 0, "resp_huge", "[]", 2, "[]", 2, huge, 4999),
                     ST_ERR_TOO_LONG);
    free(huge);
    ck_assert(!has(s, "resp_huge"));
    ck_assert(has(s, "resp_small"));   /* nothing evicted for it */
    struct st_resp_store_stats st;
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 1);
    ck_assert_uint_eq(st.evicted, 0);
    st_resp_store_unref(s);
}
END_TEST

/* Enough entries to grow the table several times: every one still found. */
START_TEST(test_server_resp_store_many)
{
    struct st_resp_store *s = store_of((size_t)64 << 20);
    char id[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(id, sizeof(id), "resp_%d", i);
        put(s, id, "[]", "[]", id);
    }
    for (int i = 0; i < 5000; i++) {
        snprintf(id, sizeof(id), "resp_%d", i);
        char *obj = NULL;
        ck_assert_int_eq(st_resp_store_get(s, 0, id, NULL, NULL, &obj), ST_OK);
        ck_assert_str_eq(obj, id);
        free(obj);
    }
    struct st_resp_store_stats st;
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 5000);
    st_resp_store_unref(s);
}
END_TEST

/* ---- many threads ------------------------------------------------------- */

struct worker {
    struct st_resp_store *s;
    int t;
    int found;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    char id[32], obj[64];
    for (int i = 0; i < 3000; i++) {
        snprintf(id, sizeof(id), "resp_%d_%d", w->t, i % 97);
        snprintf(obj, sizeof(obj), "{\"id\":\"%s\"}", id);
        if (i % 3 == 0) {
            if (st_resp_store_put(w->s, 0, id, "[]", 2, "[]", 2, obj, strlen(obj)) != ST_OK)
                return NULL;
        } else if (i % 3 == 1) {
            char *got = NULL;
            if (st_resp_store_get(w->s, 0, id, NULL, NULL, &got) == ST_OK) {
                w->found += strcmp(got, obj) == 0;   /* never another id's text */
                w->found -= strcmp(got, obj) != 0 ? 100000 : 0;
            }
            free(got);
        } else if (i % 7 == 2) {
            enum st_status drc = st_resp_store_delete(w->s, 0, id);   /* either is fine */
            if (drc != ST_OK && drc != ST_ERR_NOT_FOUND)
                return NULL;
        }
    }
    return w;
}

START_TEST(test_server_resp_store_threads)
{
    /* small: eviction runs all the time */
    struct st_resp_store *s = store_of(40 * st_resp_store_entry_size(12, 2, 2, 28));
    pthread_t th[6];
    struct worker w[6];
    for (int t = 0; t < 6; t++) {
        w[t] = (struct worker){ .s = s, .t = t };
        st_resp_store_ref(s);   /* as a response in flight holds one */
        ck_assert_int_eq(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    for (int t = 0; t < 6; t++) {
        void *ret = NULL;
        ck_assert_int_eq(pthread_join(th[t], &ret), 0);
        ck_assert_ptr_eq(ret, &w[t]);
        ck_assert_int_ge(w[t].found, 0);
        st_resp_store_unref(s);
    }
    struct st_resp_store_stats st;
    st_resp_store_stats(s, &st);
    ck_assert_uint_le(st.bytes, st.budget);
    ck_assert_uint_gt(st.evicted, 0);
    ck_assert_uint_gt(st.entries, 0);
    st_resp_store_unref(s);   /* the last reference frees the entries (ASan: no leak) */
}
END_TEST

/* ---- a body against the store ------------------------------------------- */

static const char prev_input[] =
    "[{\"id\":\"msg_u1\",\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"
    "\"input_text\",\"text\":\"first question\"}]}]";
static const char prev_output[] =
    "[{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[],\"content\":[{\"type\":"
    "\"reasoning_text\",\"text\":\"secret plan\"}],\"status\":\"completed\"},"
    "{\"id\":\"msg_a1\",\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\","
    "\"content\":[{\"type\":\"output_text\",\"text\":\"first answer\",\"annotations\":[]}]}]";

static enum st_status parse_as(struct st_resp_store *s, uint64_t owner, const char *body,
                               struct st_oai_request *oq, struct st_resp_parsed *rp,
                               struct st_api_error *e)
{
    memset(e, 0, sizeof(*e));
    return st_resp_parse_stored(body, strlen(body), s, owner, oq, rp, e);
}

static enum st_status parse_with(struct st_resp_store *s, const char *body,
                                 struct st_oai_request *oq, struct st_resp_parsed *rp,
                                 struct st_api_error *e)
{
    return parse_as(s, 0, body, oq, rp, e);
}

static cJSON *echo_of(const struct st_resp_parsed *rp)
{
    char wrapped[4096];
    snprintf(wrapped, sizeof(wrapped), "{%s}", rp->echo);
    cJSON *o = cJSON_Parse(wrapped);
    ck_assert_msg(o != NULL, "%s", rp->echo);
    return o;
}

START_TEST(test_server_resp_store_previous_response)
{
    struct st_resp_store *s = store_of(1 << 20);
    put(s, "resp_prev", prev_input, prev_output, "{}");
    struct st_oai_request oq;
    struct st_resp_parsed rp;
    struct st_api_error e;
    ck_assert_int_eq(parse_with(s, "{\"input\":\"second question\",\"instructions\":\"new sys\","
                                   "\"previous_response_id\":\"resp_prev\"}", &oq, &rp, &e),
                     ST_OK);
    /* the chat messages: new instructions, the earlier turn, then the new input */
    cJSON *m = cJSON_Duplicate(oq.chat.messages, true);
    ck_assert_int_eq(cJSON_GetArraySize(m), 4);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 0), "content"), "new sys");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 1), "content"), "first question");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 2), "role"), "assistant");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 2), "content"), "first answer");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 3), "content"), "second question");
    /* the reasoning item: the reasoning of the assistant turn it opened */
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 2), "reasoning_content"), "secret plan");
    cJSON_Delete(m);
    /* what is stored with this response: all items, each with an id */
    ck_assert(rp.store);
    cJSON *items = cJSON_Parse(rp.input);
    ck_assert_int_eq(cJSON_GetArraySize(items), 4);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(items, 0), "id"), "msg_u1");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(items, 1), "id"), "rs_1");
    const cJSON *last = cJSON_GetArrayItem(items, 3);
    ck_assert(strncmp(str_at(last, "id"), "msg_", 4) == 0);
    ck_assert_str_eq(str_at(last, "role"), "user");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(last, "content"), 0), "text"),
                     "second question");
    cJSON_Delete(items);
    cJSON *o = echo_of(&rp);
    ck_assert_str_eq(str_at(o, "previous_response_id"), "resp_prev");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "store")));
    ck_assert_str_eq(str_at(o, "instructions"), "new sys");
    cJSON_Delete(o);
    st_resp_parsed_fini(&rp);
    st_oai_request_fini(&oq);

    /* unknown (or deleted) id: 404 on previous_response_id naming it */
    ck_assert_int_eq(st_resp_store_delete(s, 0, "resp_prev"), ST_OK);
    ck_assert_int_ne(parse_with(s, "{\"input\":\"x\",\"previous_response_id\":\"resp_prev\"}",
                                &oq, &rp, &e), ST_OK);
    ck_assert_int_eq(st_api_error_http(&e), 404);
    ck_assert_str_eq(e.param, "previous_response_id");
    ck_assert_str_eq(st_server_error_type(e.status), "invalid_request_error");
    ck_assert_ptr_nonnull(strstr(e.message, "resp_prev"));
    ck_assert_ptr_null(rp.echo);
    ck_assert_ptr_null(rp.input);
    st_oai_request_fini(&oq);
    /* storing off: every id is unknown */
    ck_assert_int_ne(parse_with(NULL, "{\"input\":\"x\",\"previous_response_id\":\"resp_1\"}",
                                &oq, &rp, &e), ST_OK);
    ck_assert_int_eq(st_api_error_http(&e), 404);
    st_oai_request_fini(&oq);
    st_resp_store_unref(s);
}
END_TEST

/* previous_response_id of another key's response: the 404 of an id never
 * stored, word for word; the owner chains it. */
START_TEST(test_server_resp_store_previous_response_owner)
{
    struct st_resp_store *s = store_of(1 << 20);
    put_as(s, OWNER_A, "resp_prev", prev_input, prev_output, "{}");
    static const char body[] = "{\"input\":\"x\",\"previous_response_id\":\"resp_prev\"}";
    struct st_oai_request oq;
    struct st_resp_parsed rp;
    struct st_api_error foreign, unknown;
    ck_assert_int_ne(parse_as(s, OWNER_B, body, &oq, &rp, &foreign), ST_OK);
    ck_assert_ptr_null(rp.input);
    st_oai_request_fini(&oq);
    ck_assert_int_eq(parse_as(s, OWNER_A, body, &oq, &rp, &unknown), ST_OK);
    cJSON *m = cJSON_Duplicate(oq.chat.messages, true);
    ck_assert_int_eq(cJSON_GetArraySize(m), 3);   /* the earlier turn, then "x" */
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 0), "content"), "first question");
    cJSON_Delete(m);
    st_resp_parsed_fini(&rp);
    st_oai_request_fini(&oq);
    ck_assert_int_eq(st_resp_store_delete(s, OWNER_A, "resp_prev"), ST_OK);
    ck_assert_int_ne(parse_as(s, OWNER_A, body, &oq, &rp, &unknown), ST_OK);
    st_oai_request_fini(&oq);
    ck_assert_int_eq(st_api_error_http(&foreign), 404);
    ck_assert_int_eq(st_api_error_http(&foreign), st_api_error_http(&unknown));
    ck_assert_str_eq(foreign.param, unknown.param);
    ck_assert_str_eq(foreign.message, unknown.message);
    st_resp_store_unref(s);
}
END_TEST

/* A body that repeats "input" (JSON allows it; the first counts, as
 * everywhere in the parser): the expanded conversation replaces every
 * "input", so the chain is what is translated and what is stored. */
START_TEST(test_server_resp_store_repeated_input_key)
{
    struct st_resp_store *s = store_of(1 << 20);
    put(s, "resp_prev", prev_input, prev_output, "{}");
    struct st_oai_request oq;
    struct st_resp_parsed rp;
    struct st_api_error e;
    ck_assert_int_eq(parse_with(s, "{\"input\":\"second question\",\"input\":\"other\","
                                   "\"previous_response_id\":\"resp_prev\"}", &oq, &rp, &e),
                     ST_OK);
    cJSON *m = cJSON_Duplicate(oq.chat.messages, true);
    ck_assert_int_eq(cJSON_GetArraySize(m), 3);
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 0), "content"), "first question");
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(m, 2), "content"), "second question");
    cJSON_Delete(m);
    cJSON *items = cJSON_Parse(rp.input);
    ck_assert(cJSON_IsArray(items));
    ck_assert_int_eq(cJSON_GetArraySize(items), 4);
    cJSON_Delete(items);
    st_resp_parsed_fini(&rp);
    st_oai_request_fini(&oq);
    st_resp_store_unref(s);
}
END_TEST

/* Items the client sent with one id twice: the stored copies get distinct
 * ids (the first keeps its own), so input_items' 'after' names one item
 * and a pager cannot start over. */
START_TEST(test_server_resp_store_repeated_item_ids)
{
    struct st_resp_store *s = store_of(1 << 20);
    put(s, "resp_prev", prev_input, prev_output, "{}");
    struct st_oai_request oq;
    struct st_resp_parsed rp;
    struct st_api_error e;
    /* an id twice in the input (stored or not), or a stored item sent
     * again: OpenAI's 400 */
    static const char *const bodies[] = {
        "{\"input\":[{\"id\":\"msg_x\",\"role\":\"user\",\"content\":\"a\"},"
        "{\"id\":\"msg_x\",\"role\":\"assistant\",\"content\":\"b\"}]}",
        "{\"store\":false,\"input\":[{\"id\":\"msg_x\",\"role\":\"user\",\"content\":\"a\"},"
        "{\"id\":\"msg_x\",\"role\":\"assistant\",\"content\":\"b\"}]}",
        "{\"previous_response_id\":\"resp_prev\",\"store\":false,\"input\":["
        "{\"id\":\"msg_u1\",\"role\":\"user\",\"content\":\"c\"}]}",
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(bodies); i++) {
        memset(&e, 0, sizeof(e));
        ck_assert_int_ne(parse_with(s, bodies[i], &oq, &rp, &e), ST_OK);
        ck_assert_int_eq(st_api_error_http(&e), 400);
        ck_assert_str_eq(e.param, "input");
        ck_assert_msg(strstr(e.message, i < 2 ? "'msg_x'" : "'msg_u1'"), "%s",
                      e.message);
    }
    /* distinct ids (and items without one) are fine */
    ck_assert_int_eq(parse_with(s, "{\"previous_response_id\":\"resp_prev\",\"input\":["
                                   "{\"id\":\"msg_x\",\"role\":\"user\",\"content\":\"a\"},"
                                   "{\"role\":\"user\",\"content\":\"c\"}]}",
                                &oq, &rp, &e), ST_OK);
    cJSON *items = cJSON_Parse(rp.input);
    ck_assert_int_eq(cJSON_GetArraySize(items), 5);
    cJSON_Delete(items);
    st_resp_parsed_fini(&rp);
    st_oai_request_fini(&oq);
    st_resp_store_unref(s);
}
END_TEST

START_TEST(test_server_resp_store_store_flag)
{
    struct st_resp_store *s = store_of(1 << 20);
    struct st_oai_request oq;
    struct st_resp_parsed rp;
    struct st_api_error e;
    static const char *const bodies[] = {
        "{\"input\":\"hi\",\"store\":false}", "{\"input\":\"hi\"}",
        "{\"input\":[{\"role\":\"user\",\"content\":\"hi\"}],\"store\":true}",
    };
    for (int off = 0; off < 2; off++) {
        for (size_t i = 0; i < ST_ARRAY_LEN(bodies); i++) {
            ck_assert_int_eq(parse_with(off ? NULL : s, bodies[i], &oq, &rp, &e), ST_OK);
            bool want = !off && i > 0;
            ck_assert_int_eq(rp.store, want);
            ck_assert(want ? rp.input != NULL : rp.input == NULL);
            if (want) {
                ck_assert_ptr_nonnull(strstr(rp.input, "\"id\":\"msg_"));
                /* OpenAI's item shape, also for {role, content: "hi"} */
                cJSON *its = cJSON_Parse(rp.input);
                const cJSON *m0 = cJSON_GetArrayItem(its, 0);
                ck_assert_str_eq(str_at(m0, "type"), "message");
                const cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(m0, "content"), 0);
                ck_assert_str_eq(str_at(p0, "type"), "input_text");
                ck_assert_str_eq(str_at(p0, "text"), "hi");
                cJSON_Delete(its);
            }
            cJSON *o = echo_of(&rp);
            ck_assert_int_eq(cJSON_IsTrue(cJSON_GetObjectItem(o, "store")), want);
            ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "previous_response_id")));
            cJSON_Delete(o);
            st_resp_parsed_fini(&rp);
            st_oai_request_fini(&oq);
        }
    }
    st_resp_store_unref(s);
}
END_TEST

/* ---- a finished response into the store ---------------------------------- */

static struct st_gen *stored_gen_as(struct st_resp_store *s, uint64_t owner, bool stream,
                                    const char *id)
{
    return api_gen(stream,
                   st_resp_new_stored(strdup("\"store\":true"), s, owner, strdup(prev_input)),
                   id);
}

static struct st_gen *stored_gen(struct st_resp_store *s, bool stream, const char *id)
{
    return stored_gen_as(s, 0, stream, id);
}

START_TEST(test_server_resp_store_reply_kept)
{
    struct st_resp_store *s = store_of(1 << 20);
    /* non-stream: the body and the stored object are the same text */
    struct st_gen *g = stored_gen(s, false, "resp_body");
    struct st_oai_choice c = { .text = "Hello.", .text_len = 6, .finish = ST_FINISH_STOP };
    struct st_oai_usage u = { 3, 2, 0, 0 };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_resp_body(&b, g, &c, &u, 0), ST_OK);
    char *in = NULL, *out = NULL, *obj = NULL;
    ck_assert_int_eq(st_resp_store_get(s, 0, "resp_body", &in, &out, &obj), ST_OK);
    ck_assert_str_eq(obj, b.data);
    ck_assert_str_eq(in, prev_input);
    cJSON *items = cJSON_Parse(out);
    ck_assert_int_eq(cJSON_GetArraySize(items), 1);
    const cJSON *part = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(items, 0),
                                                               "content"), 0);
    ck_assert_str_eq(str_at(part, "text"), "Hello.");
    cJSON_Delete(items);
    free(in);
    free(out);
    free(obj);
    st_buf_fini(&b);
    st_gen_free(g);

    /* stream: kept at response.completed, the object its event carries */
    struct st_call call;
    g = api_run_stream(stored_gen(s, true, "resp_stream"), api_reply, ST_FINISH_STOP, NULL,
                       &call);
    ck_assert_int_eq(st_resp_store_get(s, 0, "resp_stream", NULL, &out, &obj), ST_OK);
    ck_assert_ptr_nonnull(strstr(g->out.data, obj));
    items = cJSON_Parse(out);
    ck_assert_int_eq(cJSON_GetArraySize(items), 3);   /* reasoning, message, call */
    ck_assert_str_eq(str_at(cJSON_GetArrayItem(items, 2), "type"), "function_call");
    cJSON_Delete(items);
    free(out);
    free(obj);
    st_gen_free(g);

    /* kept under the owner of the request: its key's, no other's */
    g = stored_gen_as(s, OWNER_A, false, "resp_owned");
    st_buf_init(&b);
    ck_assert_int_eq(st_resp_body(&b, g, &c, &u, 0), ST_OK);
    st_buf_fini(&b);
    st_gen_free(g);
    ck_assert(has_as(s, OWNER_A, "resp_owned"));
    ck_assert(!has_as(s, OWNER_B, "resp_owned") && !has(s, "resp_owned"));

    /* a stream that failed is not kept */
    struct st_api_error err;
    st_api_error_set(&err, ST_ERR_INTERNAL, NULL, NULL, "boom");
    g = api_run_stream(stored_gen(s, true, "resp_failed"), "Hi", ST_FINISH_STOP, &err, &call);
    ck_assert(!has(s, "resp_failed"));
    st_gen_free(g);
    /* the generation's reference outlives the server's */
    g = stored_gen(s, false, "resp_late");
    st_resp_store_unref(s);
    st_buf_init(&b);
    ck_assert_int_eq(st_resp_body(&b, g, &c, &u, 0), ST_OK);
    st_buf_fini(&b);
    st_gen_free(g);   /* frees the store with it (ASan: no leak, no use after free) */
}
END_TEST

/* The statuses of the stored output items of 'id', comma-joined. */
static void stored_statuses(struct st_resp_store *s, const char *id, char *out, size_t cap)
{
    char *items_text = NULL;
    ck_assert_int_eq(st_resp_store_get(s, 0, id, NULL, &items_text, NULL), ST_OK);
    cJSON *items = cJSON_Parse(items_text);
    out[0] = '\0';
    const cJSON *it;
    cJSON_ArrayForEach(it, items) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s", n ? "," : "", str_at(it, "status"));
    }
    cJSON_Delete(items);
    free(items_text);
}

/* A reply cut at the token limit: the stream and the non-stream body keep
 * the same items (the reasoning finished, the message cut). */
START_TEST(test_server_resp_store_cut_stream_same_as_body)
{
    struct st_resp_store *s = store_of(1 << 20);
    struct st_call call;
    struct st_gen *g = api_run_stream(stored_gen(s, true, "resp_cut_stream"),
                                      "<think>\nplan it\n</think>\n\nPartial", ST_FINISH_LENGTH,
                                      NULL, &call);
    st_gen_free(g);
    char streamed[128], body[128];
    stored_statuses(s, "resp_cut_stream", streamed, sizeof(streamed));
    ck_assert_str_eq(streamed, "completed,incomplete");
    g = stored_gen(s, false, "resp_cut_body");
    struct st_oai_choice c = { .text = "Partial", .text_len = 7, .finish = ST_FINISH_LENGTH,
                               .parsed = true, .reasoning = "plan it", .reasoning_len = 7 };
    struct st_oai_usage u = { 5, 12, 0, 0 };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert_int_eq(st_resp_body(&b, g, &c, &u, 4), ST_OK);
    st_buf_fini(&b);
    st_gen_free(g);
    stored_statuses(s, "resp_cut_body", body, sizeof(body));
    ck_assert_str_eq(body, streamed);
    /* cut inside the reasoning: it and the empty message are incomplete */
    g = api_run_stream(stored_gen(s, true, "resp_cut_think"), "<think>\nplan", ST_FINISH_LENGTH,
                       NULL, &call);
    st_gen_free(g);
    stored_statuses(s, "resp_cut_think", streamed, sizeof(streamed));
    ck_assert_str_eq(streamed, "incomplete,incomplete");
    g = stored_gen(s, false, "resp_cut_think_body");
    c = (struct st_oai_choice){ .text = "", .finish = ST_FINISH_LENGTH, .parsed = true,
                                .reasoning = "plan", .reasoning_len = 4 };
    st_buf_init(&b);
    ck_assert_int_eq(st_resp_body(&b, g, &c, &u, 4), ST_OK);
    st_buf_fini(&b);
    st_gen_free(g);
    stored_statuses(s, "resp_cut_think_body", body, sizeof(body));
    ck_assert_str_eq(body, streamed);
    st_resp_store_unref(s);
}
END_TEST

START_TEST(test_server_resp_store_routes)
{
    char allow[64];
    bool known = false;
    for (int i = 0; i < 2; i++) {
        const char *path = i ? "/responses/resp_1" : "/v1/responses/resp_1/input_items";
        const struct st_route *r = st_route_find(path, "GET", &known, allow, sizeof(allow));
        ck_assert_ptr_nonnull(r);
        ck_assert(r->fn == st_h_response_get);
        ck_assert(r->auth && !r->body && !r->work);
        r = st_route_find(path, "DELETE", &known, allow, sizeof(allow));
        ck_assert_ptr_nonnull(r);
        ck_assert(r->fn == st_h_response_delete);
        ck_assert(r->auth);
        ck_assert_ptr_null(st_route_find(path, "POST", &known, allow, sizeof(allow)));
        ck_assert(known);
        ck_assert_str_eq(allow, "GET, HEAD, DELETE");
    }
}
END_TEST

static Suite *server_resp_store_suite(void)
{
    Suite *s = suite_create("server_resp_store");
    TCase *t = tcase_create("store");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_server_resp_store_put_get_delete);
    tcase_add_test(t, test_server_resp_store_owner_only);
    tcase_add_test(t, test_server_resp_store_lru_by_bytes);
    tcase_add_test(t, test_server_resp_store_too_big);
    tcase_add_test(t, test_server_resp_store_many);
    tcase_add_test(t, test_server_resp_store_threads);
    tcase_add_test(t, test_server_resp_store_previous_response);
    tcase_add_test(t, test_server_resp_store_previous_response_owner);
    tcase_add_test(t, test_server_resp_store_repeated_input_key);
    tcase_add_test(t, test_server_resp_store_repeated_item_ids);
    tcase_add_test(t, test_server_resp_store_store_flag);
    tcase_add_test(t, test_server_resp_store_reply_kept);
    tcase_add_test(t, test_server_resp_store_cut_stream_same_as_body);
    tcase_add_test(t, test_server_resp_store_routes);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(server_resp_store_suite(), CK_FORK);
}
