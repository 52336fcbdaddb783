/* test_server_embed.c -- POST /v1/embeddings in the server's pure parts
 * (embeddings_request.c, embeddings_reply.c): every input form, the caps,
 * the 400s naming the field, Matryoshka truncation, base64 that decodes
 * back to the same floats, and the body's shape.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/daemon.h"
#include "support.h"

static enum st_status parse(const char *body, struct st_embed_request *r,
                            struct st_api_error *e)
{
    memset(e, 0, sizeof(*e));
    return st_embed_parse(body, strlen(body), r, e);
}

START_TEST(test_server_embed_input_forms)
{
    struct st_embed_request r;
    struct st_api_error e;
    ck_assert_int_eq(parse("{\"input\":\"hello\",\"model\":\"m\"}", &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_items, 1);
    ck_assert_str_eq(r.items[0].text, "hello");
    ck_assert_str_eq(r.model, "m");
    ck_assert(!r.base64);
    ck_assert_int_eq(r.dimensions, 0);
    st_embed_request_fini(&r);

    ck_assert_int_eq(parse("{\"input\":[\"a\",\"b c\",\"d\"]}", &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_items, 3);
    ck_assert_str_eq(r.items[1].text, "b c");
    ck_assert_ptr_null(r.model);
    st_embed_request_fini(&r);

    ck_assert_int_eq(parse("{\"input\":[1,2,3]}", &r, &e), ST_OK);   /* ONE token item */
    ck_assert_uint_eq(r.n_items, 1);
    ck_assert_uint_eq(r.items[0].n_tokens, 3);
    ck_assert_int_eq(r.items[0].tokens[2], 3);
    ck_assert_ptr_null(r.items[0].text);
    st_embed_request_fini(&r);

    ck_assert_int_eq(parse("{\"input\":[[1,2],[3],[4,5,6]],\"encoding_format\":\"base64\","
                           "\"dimensions\":8,\"user\":\"u\",\"priority\":5}", &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_items, 3);
    ck_assert_uint_eq(r.items[2].n_tokens, 3);
    ck_assert_int_eq(r.items[1].tokens[0], 3);
    ck_assert(r.base64);
    ck_assert_int_eq(r.dimensions, 8);
    ck_assert_str_eq(r.user, "u");
    ck_assert(r.has_priority);
    ck_assert_int_eq(r.priority, 5);
    st_embed_request_fini(&r);

    ck_assert_int_eq(parse("{\"input\":\"x\",\"encoding_format\":\"float\",\"dimensions\":null}",
                           &r, &e), ST_OK);
    ck_assert(!r.base64);
    st_embed_request_fini(&r);
}
END_TEST

static void expect_400(const char *body, const char *param)
{
    struct st_embed_request r;
    struct st_api_error e;
    ck_assert_msg(parse(body, &r, &e) == ST_ERR_INVALID, "accepted: %s", body);
    ck_assert_msg(strcmp(e.param, param) == 0, "%s: param '%s', want '%s'", body, e.param,
                  param);
    ck_assert_uint_eq(r.n_items, 0);
    ck_assert_ptr_null(r.items);
    st_embed_request_fini(&r);
}

START_TEST(test_server_embed_errors_name_the_field)
{
    expect_400("{}", "input");
    expect_400("{\"input\":null}", "input");
    expect_400("{\"input\":\"\"}", "input");               /* an empty string: as OpenAI */
    expect_400("{\"input\":[\"a\",\"\"]}", "input");
    expect_400("{\"input\":[]}", "input");
    expect_400("{\"input\":[[]]}", "input");
    expect_400("{\"input\":[[1],[]]}", "input");
    expect_400("{\"input\":[1,-2]}", "input");
    expect_400("{\"input\":[1.5]}", "input");
    expect_400("{\"input\":[[[1]]]}", "input");
    expect_400("{\"input\":[\"a\",3]}", "input");
    expect_400("{\"input\":{\"a\":1}}", "input");
    expect_400("{\"input\":7}", "input");
    expect_400("{\"input\":\"a\",\"encoding_format\":\"hex\"}", "encoding_format");
    expect_400("{\"input\":\"a\",\"encoding_format\":1}", "encoding_format");
    expect_400("{\"input\":\"a\",\"dimensions\":0}", "dimensions");
    expect_400("{\"input\":\"a\",\"dimensions\":-3}", "dimensions");
    expect_400("{\"input\":\"a\",\"dimensions\":2.5}", "dimensions");
    expect_400("{\"input\":\"a\",\"dimensions\":\"8\"}", "dimensions");
    expect_400("{\"input\":\"a\",\"model\":3}", "model");
    expect_400("{\"input\":\"a\",\"user\":[]}", "user");
    struct st_embed_request r;
    struct st_api_error e;
    ck_assert_int_eq(parse("{\"input\":", &r, &e), ST_ERR_INVALID);   /* not JSON */
    ck_assert_int_eq(parse("[1]", &r, &e), ST_ERR_INVALID);           /* not an object */
}
END_TEST

/* An input of n items "x" (strings) or n token arrays of k tokens each. */
static char *many_items(size_t n, size_t k)
{
    size_t cap = 64 + n * (k * 2 + 8);
    char *b = malloc(cap), *p = b;
    p += sprintf(p, "{\"input\":[");
    for (size_t i = 0; i < n; i++) {
        *p++ = i ? ',' : ' ';
        if (k == 0) {
            p += sprintf(p, "\"x\"");
            continue;
        }
        *p++ = '[';
        for (size_t j = 0; j < k; j++)
            p += sprintf(p, j ? ",1" : "1");
        *p++ = ']';
    }
    sprintf(p, "]}");
    return b;
}

START_TEST(test_server_embed_caps)
{
    struct st_embed_request r;
    struct st_api_error e;
    char *b = many_items(ST_EMBED_MAX_ITEMS, 0);
    ck_assert_int_eq(parse(b, &r, &e), ST_OK);
    ck_assert_uint_eq(r.n_items, ST_EMBED_MAX_ITEMS);
    st_embed_request_fini(&r);
    free(b);
    b = many_items(ST_EMBED_MAX_ITEMS + 1, 0);
    expect_400(b, "input");
    free(b);
    /* 2000 x 150 = 300000 tokens: at the cap; 2000 x 151: over it */
    b = many_items(2000, 150);
    ck_assert_int_eq(parse(b, &r, &e), ST_OK);
    st_embed_request_fini(&r);
    free(b);
    b = many_items(2000, 151);
    expect_400(b, "input");
    free(b);
}
END_TEST

START_TEST(test_server_embed_truncate_renormalizes)
{
    const float v[4] = { 0.5f, 0.5f, 0.5f, 0.5f };
    float out[4];
    st_embed_truncate(v, 4, 2, out);
    ck_assert(fabsf(out[0] - 0.70710678f) < 1e-6f && fabsf(out[1] - 0.70710678f) < 1e-6f);
    st_embed_truncate(v, 4, 0, out);   /* all of it, already unit length */
    for (int i = 0; i < 4; i++)
        ck_assert(fabsf(out[i] - 0.5f) < 1e-6f);
    const float w[3] = { 3.0f, 4.0f, 12.0f };
    st_embed_truncate(w, 3, 2, out);
    ck_assert(fabsf(out[0] - 0.6f) < 1e-6f && fabsf(out[1] - 0.8f) < 1e-6f);
}
END_TEST

static int b64_val(char c)
{
    const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = strchr(t, c);
    return c && p ? (int)(p - t) : -1;
}

/* Decode standard base64 (padding required) into out; returns bytes. */
static size_t b64_decode(const char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    ck_assert_uint_eq(n % 4, 0);
    for (size_t i = 0; i < n; i += 4) {
        int a = b64_val(s[i]), b = b64_val(s[i + 1]);
        int c = s[i + 2] == '=' ? 0 : b64_val(s[i + 2]);
        int d = s[i + 3] == '=' ? 0 : b64_val(s[i + 3]);
        ck_assert(a >= 0 && b >= 0 && c >= 0 && d >= 0);
        out[o++] = (unsigned char)(a << 2 | b >> 4);
        if (s[i + 2] != '=')
            out[o++] = (unsigned char)((b & 15) << 4 | c >> 2);
        if (s[i + 3] != '=')
            out[o++] = (unsigned char)((c & 3) << 6 | d);
    }
    return o;
}

START_TEST(test_server_embed_base64_round_trip)
{
    /* 1..5 floats: every padding case (4n bytes mod 3 = 1, 2, 0) */
    const float v[5] = { 1.0f, -0.25f, 3.1415927f, 1e-20f, -65504.5f };
    for (int32_t n = 1; n <= 5; n++) {
        struct st_buf b;
        st_buf_init(&b);
        ck_assert(st_embed_base64(&b, v, n) == ST_OK);
        ck_assert(b.len >= 2 && b.data[0] == '"' && b.data[b.len - 1] == '"');
        ck_assert_uint_eq(b.len - 2, ((size_t)n * 4 + 2) / 3 * 4);
        unsigned char raw[32];
        size_t got = b64_decode(b.data + 1, b.len - 2, raw);
        ck_assert_uint_eq(got, (size_t)n * 4);
        for (int32_t i = 0; i < n; i++) {   /* little-endian float32 */
            uint32_t u = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
                         (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
            float f;
            memcpy(&f, &u, sizeof(f));
            ck_assert(f == v[i]);
        }
        st_buf_fini(&b);
    }
    struct st_buf b;   /* a known vector: 1.0f = 00 00 80 3f */
    st_buf_init(&b);
    const float one = 1.0f;
    ck_assert(st_embed_base64(&b, &one, 1) == ST_OK);
    ck_assert_str_eq(b.data, "\"AACAPw==\"");
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_server_embed_body_shape)
{
    const float a[3] = { 0.6f, 0.8f, 0.0f }, c[3] = { 0.0f, -1.0f, 0.0f };
    const float *const vecs[2] = { a, c };
    struct st_buf b;
    st_buf_init(&b);
    ck_assert(st_embed_body(&b, "qwen3-embed", vecs, 2, 3, false, 17) == ST_OK);
    cJSON *root = cJSON_ParseWithLength(b.data, b.len);
    ck_assert_ptr_nonnull(root);
    ck_assert_str_eq(cJSON_GetObjectItem(root, "object")->valuestring, "list");
    ck_assert_str_eq(cJSON_GetObjectItem(root, "model")->valuestring, "qwen3-embed");
    cJSON *data = cJSON_GetObjectItem(root, "data");
    ck_assert_int_eq(cJSON_GetArraySize(data), 2);
    for (int i = 0; i < 2; i++) {
        cJSON *d = cJSON_GetArrayItem(data, i);
        ck_assert_str_eq(cJSON_GetObjectItem(d, "object")->valuestring, "embedding");
        ck_assert_int_eq(cJSON_GetObjectItem(d, "index")->valueint, i);
        cJSON *emb = cJSON_GetObjectItem(d, "embedding");
        ck_assert_int_eq(cJSON_GetArraySize(emb), 3);
        for (int k = 0; k < 3; k++)
            ck_assert((float)cJSON_GetArrayItem(emb, k)->valuedouble == vecs[i][k]);
    }
    cJSON *u = cJSON_GetObjectItem(root, "usage");
    ck_assert_int_eq(cJSON_GetObjectItem(u, "prompt_tokens")->valueint, 17);
    ck_assert_int_eq(cJSON_GetObjectItem(u, "total_tokens")->valueint, 17);
    cJSON_Delete(root);
    st_buf_fini(&b);

    st_buf_init(&b);   /* base64: each embedding is a string */
    ck_assert(st_embed_body(&b, "m", vecs, 2, 3, true, 4) == ST_OK);
    root = cJSON_ParseWithLength(b.data, b.len);
    ck_assert_ptr_nonnull(root);
    cJSON *e0 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "data"), 0),
                                    "embedding");
    ck_assert(cJSON_IsString(e0));
    ck_assert_uint_eq(strlen(e0->valuestring), 16);   /* 12 bytes */
    cJSON_Delete(root);
    st_buf_fini(&b);
}
END_TEST

START_TEST(test_server_embed_routes)
{
    bool known = false;
    char allow[64];
    const struct st_route *r = st_route_find("/v1/embeddings", "POST", &known, allow,
                                             sizeof(allow));
    ck_assert_ptr_nonnull(r);
    ck_assert(r->fn == st_h_embeddings && r->auth && r->body && r->work);
    r = st_route_find("/embeddings", "POST", &known, allow, sizeof(allow));
    ck_assert(r && r->fn == st_h_embeddings);
    ck_assert_ptr_null(st_route_find("/v1/embeddings", "GET", &known, allow, sizeof(allow)));
    ck_assert(known);
    ck_assert_str_eq(allow, "POST");
}
END_TEST

static Suite *server_embed_suite(void)
{
    Suite *s = suite_create("server_embed");
    TCase *tc = tcase_create("embed");
    tcase_add_test(tc, test_server_embed_input_forms);
    tcase_add_test(tc, test_server_embed_errors_name_the_field);
    tcase_add_test(tc, test_server_embed_caps);
    tcase_add_test(tc, test_server_embed_truncate_renormalizes);
    tcase_add_test(tc, test_server_embed_base64_round_trip);
    tcase_add_test(tc, test_server_embed_body_shape);
    tcase_add_test(tc, test_server_embed_routes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(server_embed_suite(), CK_FORK);
}
