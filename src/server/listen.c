/* listen.c -- the listening daemons: one libmicrohttpd daemon per --host
 * address, all on one port.
 *
 * --host takes llama-server's comma-separated list ("127.0.0.1,::1"); a
 * daemon listens on one socket, so each address gets its own daemon with
 * the same callbacks and settings (each its --http-threads pool). With
 * --port 0 the first address picks the port and the others take it. An
 * IPv6 address listens for IPv6 only, so "0.0.0.0,::" binds both families
 * without a clash; overlapping addresses fail to bind (a clear start-up
 * error, where llama-server leaves it undefined).
 */
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "strata/log.h"
#include "server/daemon.h"

/* Split srv->host into srv->listen[]: trimmed, empty items dropped. */
static enum st_status split_hosts(struct st_server *srv, struct st_err *err)
{
    for (const char *p = srv->host; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        const char *next = p + len;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0) {
            p = next;
            continue;
        }
        if (srv->n_listen == ST_LISTEN_MAX)
            return st_err_set(err, ST_ERR_BAD_CONFIG, "--host: at most %d addresses",
                              ST_LISTEN_MAX);
        if (!(srv->listen[srv->n_listen] = strndup(p, len)))
            return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
        srv->n_listen++;
        p = next;
    }
    if (srv->n_listen == 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "--host: expected an address (or "
                          "comma-separated addresses)");
    return ST_OK;
}

static enum st_status resolve_host(const char *host, uint16_t port,
                                   struct sockaddr_storage *ss, struct st_err *err)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[8];
    snprintf(ps, sizeof(ps), "%u", (unsigned)port);
    int gai = getaddrinfo(host, ps, &hints, &res);
    if (gai != 0 || !res)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "--host %s: cannot resolve it (%s)", host,
                          gai_strerror(gai));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return ST_OK;
}

/* 'hard_limit': libmicrohttpd's connection limit (st_conn_fit), per daemon;
 * --max-connections itself counts the connections of all of them. */
static enum st_status start_one(struct st_server *srv, size_t i, uint16_t port,
                                unsigned hard_limit, const struct st_listen_cbs *cb,
                                struct st_err *err)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    enum st_status rc = resolve_host(srv->listen[i], port, &ss, err);
    if (rc != ST_OK)
        return rc;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;   /* not MHD_USE_DUAL_STACK: IPv6 only */
    srv->mhd[i] = MHD_start_daemon(
        flags, port, NULL, NULL, cb->access, srv,
        MHD_OPTION_EXTERNAL_LOGGER, cb->log, NULL,   /* first, so it catches everything */
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)srv->cfg.http_threads,
        MHD_OPTION_NOTIFY_COMPLETED, cb->completed, srv,
        MHD_OPTION_NOTIFY_CONNECTION, st_conn_notify, srv,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->cfg.timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, hard_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, st_conn_per_ip_limit(srv),
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
        MHD_OPTION_END);
    if (!srv->mhd[i])
        return st_err_set(err, ST_ERR_IO,
                          "cannot listen on %s:%u (port in use, or no permission?)",
                          srv->listen[i], (unsigned)port);
    if (i == 0) {
        const union MHD_DaemonInfo *di =
            MHD_get_daemon_info(srv->mhd[0], MHD_DAEMON_INFO_BIND_PORT);
        srv->port = di ? di->port : port;
    }
    return ST_OK;
}

enum st_status st_listen_start(struct st_server *srv, const struct st_listen_cbs *cb,
                               struct st_err *err)
{
    enum st_status rc = split_hosts(srv, err);
    unsigned hard_limit = rc == ST_OK ? st_conn_fit(srv) : 0;
    for (size_t i = 0; rc == ST_OK && i < srv->n_listen; i++)
        rc = start_one(srv, i, i == 0 ? srv->cfg.port : srv->port, hard_limit, cb, err);
    return rc;
}

void st_listen_stop(struct st_server *srv)
{
    for (size_t i = 0; i < srv->n_listen; i++) {
        if (srv->mhd[i])
            MHD_stop_daemon(srv->mhd[i]);   /* every connection's CLOSED: records freed */
        srv->mhd[i] = NULL;
    }
}

void st_listen_fini(struct st_server *srv)
{
    for (size_t i = 0; i < srv->n_listen; i++)
        free(srv->listen[i]);
    srv->n_listen = 0;
}

const char *st_server_address(const struct st_server *srv, size_t i)
{
    return i < srv->n_listen ? srv->listen[i] : NULL;
}
