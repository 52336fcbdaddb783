/* guard.c -- what a request must look like before any route runs, so
 * that a web page a user opens cannot drive a local server
 * (docs/SECURITY.md):
 *
 *   - Host (--allowed-hosts): DNS rebinding points a name the attacker
 *     owns at 127.0.0.1, so the browser sends "Host: evil.example"; only
 *     loopback names, IP literals, the bound host and the listed names
 *     are served (403 otherwise).
 *   - Content-Type on a POST body: application/json. A page may send
 *     text/plain, a form or a typeless Blob cross-origin without a CORS
 *     preflight; application/json always needs one (415 otherwise).
 *
 * Pure functions over strings; ../http.c applies them.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/http/http.h"

/* A DNS name or an IP literal as a Host carries it, without the port:
 * letters, digits, '-', '.', '_', ':' and brackets (for [v6]). */
static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!isalnum(ch) && !strchr("-._:[]", ch))
            return false;
    }
    return true;
}

/* The host part of a Host value: "[::1]:8080" -> "[::1]", "a.example:80"
 * -> "a.example"; a trailing dot dropped. Writes at most cap - 1 bytes,
 * lowercase; false when it does not fit or has no host. */
static bool host_part(const char *v, char *out, size_t cap)
{
    size_t n;
    if (v[0] == '[') {
        const char *end = strchr(v, ']');
        if (!end)
            return false;
        n = (size_t)(end - v) + 1;
    } else {
        n = strcspn(v, ":");
    }
    if (n && v[n - 1] == '.')
        n--;
    if (n == 0 || n >= cap)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)v[i]);
    out[n] = '\0';
    return true;
}

static bool ip_literal(const char *h)
{
    unsigned char addr[16];
    size_t n = strlen(h);
    if (n > 2 && h[0] == '[' && h[n - 1] == ']') {
        char v6[64];
        if (n - 2 >= sizeof(v6))
            return false;
        memcpy(v6, h + 1, n - 2);
        v6[n - 2] = '\0';
        return inet_pton(AF_INET6, v6, addr) == 1;
    }
    return inet_pton(AF_INET, h, addr) == 1;
}

static bool wildcard(const char *bound)
{
    return strcmp(bound, "0.0.0.0") == 0 || strcmp(bound, "::") == 0 ||
           strcmp(bound, "[::]") == 0 || bound[0] == '\0';
}

/* Append 'name' (n bytes, lowercased; a bare IPv6 address bracketed) to
 * h->list. */
static enum st_status list_add(struct st_hosts *h, const char *name, size_t n)
{
    bool bracket = memchr(name, ':', n) && name[0] != '[';
    size_t old = h->list ? strlen(h->list) : 0;
    char *grown = realloc(h->list, old + n + 4);
    if (!grown)
        return ST_ERR_NOMEM;
    h->list = grown;
    char *p = grown + old;
    if (old)
        *p++ = ',';
    if (bracket)
        *p++ = '[';
    for (size_t i = 0; i < n; i++)
        *p++ = (char)tolower((unsigned char)name[i]);
    if (bracket)
        *p++ = ']';
    *p = '\0';
    return ST_OK;
}

enum st_status st_hosts_init(struct st_hosts *h, const char *spec, const char *bound,
                             struct st_err *err)
{
    memset(h, 0, sizeof(*h));
    if (spec && strcmp(spec, "*") == 0) {
        h->any = true;
        return ST_OK;
    }
    for (const char *p = spec ? spec : ""; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0)
            continue;
        if (!name_ok(p, len)) {
            st_hosts_fini(h);
            return st_err_set(err, ST_ERR_BAD_CONFIG,
                              "--allowed-hosts: '%.*s' is not a host name (expected * or "
                              "comma-separated names such as strata.example, without ports)",
                              (int)(len > 80 ? 80 : len), p);
        }
        if (list_add(h, p, len) != ST_OK) {
            st_hosts_fini(h);
            return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
        }
        p += strcspn(p, ",");
    }
    for (const char *p = bound ? bound : ""; *p;) {   /* --host: one address or several */
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        char one[256];
        snprintf(one, sizeof(one), "%.*s", (int)len, p);
        p += len;
        for (size_t n = strlen(one); n && (one[n - 1] == ' ' || one[n - 1] == '\t');)
            one[--n] = '\0';
        if (one[0] && !wildcard(one) && list_add(h, one, strlen(one)) != ST_OK) {
            st_hosts_fini(h);
            return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
        }
    }
    return ST_OK;
}

void st_hosts_fini(struct st_hosts *h)
{
    free(h->list);
    memset(h, 0, sizeof(*h));
}

static bool in_list(const char *list, const char *host)
{
    size_t n = strlen(host);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && memcmp(p, host, n) == 0)
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}

bool st_hosts_allow(const struct st_hosts *h, const char *host_header)
{
    if (h->any || !host_header || !host_header[0])
        return true;
    char host[256];
    if (!host_part(host_header, host, sizeof(host)))
        return false;
    if (strcmp(host, "localhost") == 0 || ip_literal(host))
        return true;
    return in_list(h->list, host);
}

bool st_content_type_json(const char *ctype)
{
    if (!ctype)
        return false;
    while (*ctype == ' ' || *ctype == '\t')
        ctype++;
    static const char want[] = "application/json";
    if (strncasecmp(ctype, want, sizeof(want) - 1) != 0)
        return false;
    char next = ctype[sizeof(want) - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}
