/* webui/webui.h -- the dashboard (docs/DASHBOARD.md): the files of webui/
 * at the top of the tree, compiled in by cmake/StrataEmbed.cmake, and the
 * handler that serves them at "/" (index.html) and under "/ui/".
 *
 * The page and its files hold no data: they load without an API key. What
 * the page shows comes from the data endpoints (/slots, /metrics,
 * /api/activity, /v1/models), which need the key as before and keep their
 * per-key views. --no-webui turns "/" and "/ui/" into 404s.
 */
#ifndef STRATA_SERVER_WEBUI_WEBUI_H
#define STRATA_SERVER_WEBUI_WEBUI_H

#include <stddef.h>

#include "server/http/http.h"

/* Where the files other than index.html are served. */
#define ST_WEBUI_PREFIX "/ui/"

/* One embedded file. */
struct st_webui_asset {
    const char *name;                 /* relative to webui/: "app.js" */
    const unsigned char *data;        /* len bytes, then a NUL not counted */
    size_t len;                       /* bytes */
    const char *etag;                 /* "\"<16 hex of its SHA-256>\"" */
};

/* The generated table (build dir: webui/assets_data.c), sorted by name. */
extern const struct st_webui_asset st_webui_assets[];
extern const size_t st_webui_n_assets;

/* The file called 'name' ("index.html"), or NULL. */
const struct st_webui_asset *st_webui_find(const char *name);
/* The Content-Type for a file name, from its extension; static storage.
 * Unknown extensions: "application/octet-stream". */
const char *st_webui_content_type(const char *name);

/* GET "/" and GET "/ui/<name>". Thread: MHD only. */
st_route_fn st_h_webui;

#endif /* STRATA_SERVER_WEBUI_WEBUI_H */
