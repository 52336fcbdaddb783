/* limits.c -- how many connections the server holds, so that one client,
 * or many slow ones, cannot take every descriptor (docs/SECURITY.md
 * "Connections").
 *
 * Three layers:
 *   - the descriptor limit is raised to its hard maximum at start, and the
 *     connection cap is lowered to fit under it with ST_FD_RESERVE
 *     descriptors left for the server's own files and sockets (models, logs,
 *     the KV-events socket), so accept() never takes the last of them;
 *   - libmicrohttpd closes a connection at once past cap + ST_PROBE_RESERVE;
 *   - between cap and that, only /health and /metrics are answered, and
 *     everything else gets 503 too_many_connections (st_conn_refuse), so a
 *     probe still sees the truth while the server is full.
 * --max-connections-per-ip works the same way per client address (its
 * count kept in conns.c).
 */
#include <microhttpd.h>
#include <sys/resource.h>

#include "strata/log.h"
#include "server/daemon.h"

void st_conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                    enum MHD_ConnectionNotificationCode toe)
{
    struct st_server *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        atomic_fetch_add(&srv->open_conns, 1);
        st_conns_open(srv, conn, socket_context);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        atomic_fetch_sub(&srv->open_conns, 1);
        st_conns_close(srv, socket_context);
    }
}

unsigned st_conn_fit(struct st_server *srv)
{
    int cap = srv->cfg.max_connections > 0 ? srv->cfg.max_connections : 1024;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {   /* as nginx's worker_rlimit_nofile */
            struct rlimit up = { rl.rlim_max, rl.rlim_max };
            if (setrlimit(RLIMIT_NOFILE, &up) == 0)
                rl.rlim_cur = rl.rlim_max;
        }
        rlim_t room = rl.rlim_cur > ST_FD_RESERVE + ST_PROBE_RESERVE + 8
                          ? rl.rlim_cur - ST_FD_RESERVE - ST_PROBE_RESERVE
                          : 8;
        if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)cap > room) {
            st_log(ST_LOG_INFO, "http", "--max-connections %d lowered to %d: the descriptor "
                   "limit is %llu (ulimit -n), and %d are kept for the server's own files",
                   cap, (int)room, (unsigned long long)rl.rlim_cur,
                   ST_FD_RESERVE + ST_PROBE_RESERVE);
            cap = (int)room;
        }
    }
    srv->conn_cap = cap;
    return (unsigned)cap + ST_PROBE_RESERVE;
}

unsigned st_conn_per_ip_limit(const struct st_server *srv)
{
    int32_t cap = srv->cfg.max_connections_per_ip;
    return cap > 0 ? (unsigned)cap + ST_PROBE_RESERVE : 0;
}

bool st_conn_refuse(struct st_call *c, struct st_api_error *e)
{
    struct st_server *srv = c->srv;
    if (c->route && (c->route->fn == st_h_health || c->route->fn == st_h_metrics))
        return false;   /* the probes' reserve */
    int32_t per_ip = srv->cfg.max_connections_per_ip;
    if (atomic_load(&srv->open_conns) > srv->conn_cap)
        st_api_error_set(e, ST_ERR_QUEUE_FULL, NULL, "too_many_connections",
                         "The server holds as many connections as it serves "
                         "(--max-connections %d); retry shortly.", srv->conn_cap);
    else if (per_ip > 0 && st_conns_of_addr(srv, c->mhd) > per_ip)
        st_api_error_set(e, ST_ERR_QUEUE_FULL, NULL, "too_many_connections",
                         "This address holds as many connections as one address is served "
                         "(--max-connections-per-ip %d); retry shortly.", (int)per_ip);
    else
        return false;
    e->http = 503;
    e->retry_after_s = 1;
    return true;
}
