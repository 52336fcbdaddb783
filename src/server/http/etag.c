/* etag.c -- If-None-Match against one ETag (RFC 9110 13.1.2): a list of
 * entity tags separated by commas, each maybe weak ("W/"), or "*". GET
 * uses the weak comparison, so "W/\"x\"" matches "\"x\"". Used by the
 * dashboard's files (../webui/webui.c) for their 304s.
 */
#include <string.h>

#include "server/http/http.h"

bool st_etag_match(const char *inm, const char *etag)
{
    if (!inm || !etag || !etag[0])
        return false;
    size_t n = strlen(etag);
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ' ||
                                         p[n] == '\t'))
            return true;
        while (*p && *p != ',')
            p++;
    }
    return false;
}
