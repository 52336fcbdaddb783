/* cors.c -- which browser origins may call the API (CORS), as pure
 * functions over the --cors-origins setting; reply.c adds the headers.
 *
 * The setting is "localhost" (the default: pages served from this machine,
 * http or https on localhost, 127.0.0.1 or [::1], any port), "*" (any
 * origin, as llama-server and vLLM), "none" (no CORS headers at all:
 * browsers then refuse cross-origin calls), or a comma-separated list of
 * origins ("https://a.example,http://localhost:5173", "localhost" among
 * them standing for the loopback origins), compared with the request's
 * Origin header case-insensitively (scheme and host are; browsers send
 * them lowercase). An echoed origin also gets Access-Control-Allow-
 * Credentials: true (reply.c; as llama-server), "*" never: browsers refuse
 * the pair, and any page must not send a user's credentials.
 *
 *   mode  Origin present   Access-Control-Allow-Origin        Vary
 *   any   yes              *                                   -
 *   list  listed           the origin, echoed (+ credentials)  Origin
 *   list  not listed       -                                   Origin
 *   off   any              -                                   -
 *
 * No request without an Origin header gets CORS headers (it is not a
 * browser's cross-origin call). CORS is not access control: the API key,
 * when set, still guards every route it guards (docs/API.md "CORS").
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/http/http.h"

/* One entry of the list: no blank, no control byte, not empty. */
static bool entry_ok(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* "a , b" -> "a,b" (blanks around entries dropped); false on a bad entry
 * or a "*" among others. 'out' has room for strlen(spec) + 1. */
static bool normalise(const char *spec, char *out)
{
    size_t o = 0, n_entries = 0;
    bool star = false;
    for (const char *p = spec;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strcspn(p, ",");
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (!entry_ok(p, len))
            return false;
        star |= len == 1 && p[0] == '*';
        if (o)
            out[o++] = ',';
        memcpy(out + o, p, len);
        o += len;
        n_entries++;
        p += strcspn(p, ",");
        if (*p == '\0')
            break;
        p++;
    }
    out[o] = '\0';
    return !(star && n_entries > 1);
}

enum st_status st_cors_init(struct st_cors *c, const char *spec, struct st_err *err)
{
    memset(c, 0, sizeof(*c));
    if (!spec || !spec[0] || strcasecmp(spec, "none") == 0) {
        c->mode = ST_CORS_OFF;
        return ST_OK;
    }
    char *list = malloc(strlen(spec) + 1);
    if (!list)
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    if (!normalise(spec, list)) {
        free(list);
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "--cors-origins: expected localhost, *, none, or comma-separated "
                          "origins such as https://app.example (no blanks inside one, * alone)");
    }
    if (strcmp(list, "*") == 0) {
        free(list);
        c->mode = ST_CORS_ANY;
        return ST_OK;
    }
    c->mode = ST_CORS_LIST;
    c->list = list;
    return ST_OK;
}

void st_cors_fini(struct st_cors *c)
{
    free(c->list);
    memset(c, 0, sizeof(*c));
}

/* http(s)://localhost, 127.0.0.1 or [::1], with an optional port. */
static bool loopback_origin(const char *origin)
{
    const char *p = origin;
    if (strncasecmp(p, "http://", 7) == 0)
        p += 7;
    else if (strncasecmp(p, "https://", 8) == 0)
        p += 8;
    else
        return false;
    static const char *const names[] = { "localhost", "127.0.0.1", "[::1]" };
    for (size_t i = 0; i < ST_ARRAY_LEN(names); i++) {
        size_t n = strlen(names[i]);
        if (strncasecmp(p, names[i], n) != 0)
            continue;
        const char *port = p + n;
        if (*port == '\0')
            return true;
        if (*port++ != ':' || *port == '\0')
            return false;
        return strspn(port, "0123456789") == strlen(port) && strlen(port) <= 5;
    }
    return false;
}

static bool listed(const char *list, const char *origin)
{
    size_t n = strlen(origin);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncasecmp(p, origin, n) == 0)
            return true;
        if (len == 9 && strncasecmp(p, "localhost", 9) == 0 && loopback_origin(origin))
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}

const char *st_cors_allow(const struct st_cors *c, const char *origin, bool *vary)
{
    *vary = c->mode == ST_CORS_LIST;
    if (!origin || !origin[0] || c->mode == ST_CORS_OFF)
        return NULL;
    if (c->mode == ST_CORS_ANY)
        return "*";
    return listed(c->list, origin) ? origin : NULL;
}

bool st_cors_request_headers_ok(const char *v)
{
    if (!v || !v[0] || strlen(v) > 512)
        return false;
    for (const char *p = v; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        bool token = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || strchr("-_.,", ch) || ch == ' ';
        if (!token)
            return false;
    }
    return true;
}
