/* test_server_webui.c -- the dashboard's files as compiled in: every file
 * of webui/ is in the table byte for byte, with its content type and an
 * ETag; If-None-Match matching; "/" and "/ui/" routed without a key. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/daemon.h"
#include "server/webui/webui.h"
#include "support.h"

/* The file webui/<name> of the source tree, read whole; owned. */
static char *read_source(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", ST_WEBUI_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

START_TEST(test_webui_files_embedded_byte_for_byte)
{
    static const char *const names[] = { "index.html", "app.js", "api.js", "charts.js",
                                         "chat.js", "prom.js", "views.js", "style.css" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct st_webui_asset *a = st_webui_find(names[i]);
        ck_assert_msg(a != NULL, "%s is not embedded", names[i]);
        size_t len;
        char *want = read_source(names[i], &len);
        ck_assert_uint_eq(a->len, len);
        ck_assert_int_eq(memcmp(a->data, want, len), 0);
        ck_assert_int_eq(a->data[len], 0);   /* the NUL after the bytes */
        free(want);
        /* "\"" + 16 hex + "\"" */
        ck_assert_uint_eq(strlen(a->etag), 18);
        ck_assert_int_eq(a->etag[0], '"');
        ck_assert_int_eq(a->etag[17], '"');
    }
    ck_assert_ptr_null(st_webui_find("nope.js"));
    ck_assert_ptr_null(st_webui_find("../CMakeLists.txt"));
    ck_assert_ptr_null(st_webui_find(""));
}
END_TEST

START_TEST(test_webui_index_loads_its_files_from_ui)
{
    const struct st_webui_asset *a = st_webui_find("index.html");
    ck_assert_ptr_nonnull(a);
    const char *html = (const char *)a->data;
    ck_assert_ptr_nonnull(strstr(html, "src=\"" ST_WEBUI_PREFIX "app.js\""));
    ck_assert_ptr_nonnull(strstr(html, "href=\"" ST_WEBUI_PREFIX "style.css\""));
    ck_assert_ptr_null(strstr(html, "http://"));    /* no CDN */
    ck_assert_ptr_null(strstr(html, "https://"));
    ck_assert_ptr_null(strstr(html, "<script>"));   /* no inline script (CSP) */
}
END_TEST

START_TEST(test_webui_content_types)
{
    ck_assert_str_eq(st_webui_content_type("index.html"), "text/html; charset=utf-8");
    ck_assert_str_eq(st_webui_content_type("app.js"), "text/javascript; charset=utf-8");
    ck_assert_str_eq(st_webui_content_type("style.css"), "text/css; charset=utf-8");
    ck_assert_str_eq(st_webui_content_type("icon.svg"), "image/svg+xml");
    ck_assert_str_eq(st_webui_content_type("x.bin"), "application/octet-stream");
    ck_assert_str_eq(st_webui_content_type("noext"), "application/octet-stream");
    ck_assert_str_eq(st_webui_content_type("a.js.map"), "application/octet-stream");
}
END_TEST

START_TEST(test_webui_etag_match)
{
    const char *e = "\"0123456789abcdef\"";
    ck_assert(st_etag_match("\"0123456789abcdef\"", e));
    ck_assert(st_etag_match("W/\"0123456789abcdef\"", e));
    ck_assert(st_etag_match("\"x\", \"0123456789abcdef\"", e));
    ck_assert(st_etag_match("\"0123456789abcdef\",\"y\"", e));
    ck_assert(st_etag_match("*", e));
    ck_assert(!st_etag_match(NULL, e));
    ck_assert(!st_etag_match("", e));
    ck_assert(!st_etag_match("\"0123456789abcde\"", e));
    ck_assert(!st_etag_match("\"0123456789abcdef0\"", e));
    ck_assert(!st_etag_match("0123456789abcdef", e));
}
END_TEST

START_TEST(test_webui_routes_need_no_key)
{
    bool known;
    char allow[64];
    const struct st_route *r = st_route_find("/", "GET", &known, allow, sizeof(allow));
    ck_assert_ptr_nonnull(r);
    ck_assert(r->fn == st_h_webui);
    ck_assert(!r->auth && !r->work && !r->body);
    r = st_route_find("/ui/app.js", "HEAD", &known, allow, sizeof(allow));
    ck_assert_ptr_nonnull(r);
    ck_assert(r->fn == st_h_webui);
    ck_assert(!r->auth);
    ck_assert_ptr_null(st_route_find("/ui/", "GET", &known, allow, sizeof(allow)));
    ck_assert_ptr_null(st_route_find("/", "POST", &known, allow, sizeof(allow)));
    ck_assert(known);
    /* the data the page reads still needs a key */
    r = st_route_find("/slots", "GET", &known, allow, sizeof(allow));
    ck_assert(r && r->auth);
}
END_TEST

static Suite *webui_suite(void)
{
    Suite *s = suite_create("server_webui");
    TCase *files = tcase_create("files");
    tcase_add_test(files, test_webui_files_embedded_byte_for_byte);
    tcase_add_test(files, test_webui_index_loads_its_files_from_ui);
    tcase_add_test(files, test_webui_content_types);
    tcase_add_test(files, test_webui_etag_match);
    suite_add_tcase(s, files);
    TCase *routes = tcase_create("routes");
    tcase_add_test(routes, test_webui_routes_need_no_key);
    suite_add_tcase(s, routes);
    return s;
}

int main(void)
{
    return support_run_suite(webui_suite(), CK_FORK);
}
