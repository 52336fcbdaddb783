/* webui.c -- serving the dashboard's embedded files (webui.h).
 *
 * GET /          index.html
 * GET /ui/NAME   the file webui/NAME (exact names from the table only:
 *                nothing is read from disk, so no path can escape it)
 *
 * Caching: "Cache-Control: no-cache" with an ETag per file, so a browser
 * asks again each load and gets a bodiless 304 while the binary is the
 * same; a new build's files are never served stale. The files are fixed
 * bytes, so a Content-Security-Policy allows only themselves: no inline
 * script or style, no other origin, no framing.
 */
#include <string.h>

#include "server/webui/webui.h"

static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                          "form-action 'none'; frame-ancestors 'none'";

const struct st_webui_asset *st_webui_find(const char *name)
{
    for (size_t i = 0; i < st_webui_n_assets; i++)
        if (strcmp(st_webui_assets[i].name, name) == 0)
            return &st_webui_assets[i];
    return NULL;
}

const char *st_webui_content_type(const char *name)
{
    static const struct { const char *ext, *type; } types[] = {
        { ".html", "text/html; charset=utf-8" },
        { ".js",   "text/javascript; charset=utf-8" },
        { ".css",  "text/css; charset=utf-8" },
        { ".svg",  "image/svg+xml" },
        { ".json", "application/json" },
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < ST_ARRAY_LEN(types); i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

static enum st_route_result not_found(struct st_call *c)
{
    struct st_api_error e;
    st_api_error_set(&e, ST_ERR_NOT_FOUND, NULL, "not_found", "Invalid URL (%.16s %.100s).",
                     c->method, c->url);
    return st_reply_error(c, &e);
}

enum st_route_result st_h_webui(struct st_call *c)
{
    if (!c->srv->cfg.webui)
        return not_found(c);
    const char *name = strcmp(c->url, "/") == 0 ? "index.html" : c->url + strlen(ST_WEBUI_PREFIX);
    const struct st_webui_asset *a = st_webui_find(name);
    if (!a)
        return not_found(c);
    const char *hdrs[] = {
        "Cache-Control", "no-cache",
        "ETag", a->etag,
        "X-Content-Type-Options", "nosniff",
        "Content-Security-Policy", csp,
        "Referrer-Policy", "no-referrer",
        NULL,
    };
    if (st_etag_match(st_call_header(c, "If-None-Match"), a->etag))
        return st_reply_static(c, 304, NULL, "", 0, hdrs);
    return st_reply_static(c, 200, st_webui_content_type(name), a->data, a->len, hdrs);
}
