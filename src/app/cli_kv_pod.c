/* cli_kv_pod.c -- the pod's "ADDR:PORT" in the KV events' topic
 * kv@ADDR:PORT@MODEL (docs/KV-EVENTS.md "Topic"): llm-d's indexer keys a
 * pod by the address and port the router reaches it at.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"

static bool wildcard(const char *h)
{
    return !h || !h[0] || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0 ||
           strcmp(h, "*") == 0;
}

/* The first IPv4 address of an interface that is up and not loopback. */
static bool first_ipv4(char *out, size_t cap)
{
    struct ifaddrs *all = NULL;
    bool found = false;
    if (getifaddrs(&all) != 0)
        return false;
    for (struct ifaddrs *i = all; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)i->ifa_addr;
        if ((ntohl(a->sin_addr.s_addr) >> 24) == 127)
            continue;
        found = inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)cap) != NULL;
    }
    freeifaddrs(all);
    return found;
}

void st_cli_kv_pod(const struct st_config *c, unsigned port, char *out, size_t cap)
{
    char addr[64] = "127.0.0.1", host[64];
    const char *env = getenv("POD_IP");
    /* --host may list several addresses: the first is the pod's */
    const char *h = c->host ? c->host + strspn(c->host, " \t") : "";
    size_t n = strcspn(h, ",");
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    snprintf(host, sizeof(host), "%.*s", (int)n, h);
    if (c->kv_events_host && c->kv_events_host[0])
        snprintf(addr, sizeof(addr), "%s", c->kv_events_host);
    else if (env && env[0])
        snprintf(addr, sizeof(addr), "%s", env);
    else if (!wildcard(host))
        snprintf(addr, sizeof(addr), "%s", host);
    else if (!first_ipv4(addr, sizeof(addr)))
        snprintf(addr, sizeof(addr), "127.0.0.1");
    snprintf(out, cap, "%s:%u", addr, port);
}
