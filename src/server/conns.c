/* conns.c -- what the server keeps of each open connection, for the limits
 * a connection's count alone cannot enforce (docs/SECURITY.md
 * "Connections"):
 *
 *   - per address: how many connections each client address holds, so
 *     past --max-connections-per-ip its requests get 503 (as past
 *     --max-connections; /health and /metrics answer from the same
 *     reserve), and libmicrohttpd closes at once past that reserve;
 *   - a header deadline: a request's headers must be complete within
 *     --header-timeout seconds of the connection's start (or of the end of
 *     its previous request), however steadily they trickle in; --timeout
 *     alone is reset by every byte (slowloris).
 *
 * The record lives in libmicrohttpd's socket context, from the connection's
 * STARTED notice to its CLOSED one. The watcher (watch.c) cuts a connection
 * past its deadline with shutdown(): libmicrohttpd then reads the end of
 * the stream and closes it itself. It notifies CLOSED before it closes the
 * socket, and a record leaves the table under the same lock the watcher
 * holds while it cuts, so a descriptor the watcher shuts is never one
 * already closed and reused.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "strata/log.h"
#include "server/daemon.h"

#define ADDR_BUCKETS 256

/* The connections of one client address. */
struct addr_count {
    struct addr_count *next;            /* its bucket's chain */
    uint8_t key[17];                    /* family, then the address's bytes */
    size_t key_len;
    int32_t n;
};

struct st_conn_rec {
    struct st_conn_rec *prev, *next;    /* every open connection */
    struct addr_count *addr;            /* NULL: an address we could not read */
    int fd;
    int64_t since_ns;                   /* waiting for headers since; 0: they are in */
    bool cut;
};

struct st_conn_table {
    pthread_mutex_t lock;
    struct st_conn_rec *head;
    struct addr_count *buckets[ADDR_BUCKETS];
};

static int64_t now_ns(void)
{
    return st_clock_now(st_clock_real());
}

struct st_conn_table *st_conns_new(void)
{
    struct st_conn_table *t = calloc(1, sizeof(*t));
    if (t)
        pthread_mutex_init(&t->lock, NULL);
    return t;
}

void st_conns_free(struct st_conn_table *t)
{
    if (!t)
        return;
    for (size_t b = 0; b < ADDR_BUCKETS; b++) {
        while (t->buckets[b]) {
            struct addr_count *a = t->buckets[b];
            t->buckets[b] = a->next;
            free(a);
        }
    }
    pthread_mutex_destroy(&t->lock);
    free(t);   /* records are freed on CLOSED, which MHD_stop_daemon sends */
}

/* The address without the port; 0 for a family we do not count. */
static size_t addr_key(const struct sockaddr *sa, uint8_t key[17])
{
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        key[0] = 4;
        memcpy(key + 1, &in->sin_addr, 4);
        return 5;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        key[0] = 6;
        memcpy(key + 1, &in6->sin6_addr, 16);
        return 17;
    }
    return 0;
}

static size_t bucket_of(const uint8_t *key, size_t len)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ key[i]) * 16777619u;
    return h % ADDR_BUCKETS;
}

/* The address's count, made at 0 when new (t->lock held); NULL on OOM. */
static struct addr_count *addr_get(struct st_conn_table *t, const uint8_t *key, size_t len)
{
    struct addr_count **head = &t->buckets[bucket_of(key, len)];
    for (struct addr_count *a = *head; a; a = a->next) {
        if (a->key_len == len && memcmp(a->key, key, len) == 0)
            return a;
    }
    struct addr_count *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    memcpy(a->key, key, len);
    a->key_len = len;
    a->next = *head;
    *head = a;
    return a;
}

static void addr_put(struct st_conn_table *t, struct addr_count *a)
{
    if (!a || --a->n > 0)
        return;
    struct addr_count **p = &t->buckets[bucket_of(a->key, a->key_len)];
    while (*p != a)
        p = &(*p)->next;
    *p = a->next;
    free(a);
}

void st_conns_open(struct st_server *srv, struct MHD_Connection *conn, void **socket_context)
{
    struct st_conn_table *t = srv->conns;
    struct st_conn_rec *r = calloc(1, sizeof(*r));
    *socket_context = r;
    if (!r)
        return;   /* untracked: no per-address count, no header deadline */
    const union MHD_ConnectionInfo *fi =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ai =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    uint8_t key[17];
    size_t len = addr_key(ai ? ai->client_addr : NULL, key);
    r->fd = fi ? fi->connect_fd : -1;
    r->since_ns = now_ns();
    pthread_mutex_lock(&t->lock);
    r->addr = len ? addr_get(t, key, len) : NULL;
    if (r->addr)
        r->addr->n++;
    r->next = t->head;
    if (t->head)
        t->head->prev = r;
    t->head = r;
    pthread_mutex_unlock(&t->lock);
}

void st_conns_close(struct st_server *srv, void **socket_context)
{
    struct st_conn_table *t = srv->conns;
    struct st_conn_rec *r = *socket_context;
    *socket_context = NULL;
    if (!r)
        return;
    pthread_mutex_lock(&t->lock);
    if (r->prev)
        r->prev->next = r->next;
    else
        t->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    addr_put(t, r->addr);
    pthread_mutex_unlock(&t->lock);
    free(r);
}

static struct st_conn_rec *rec_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* 'since' 0: the headers are in; else the clock of the next request. */
static void set_since(struct st_server *srv, struct MHD_Connection *conn, int64_t since)
{
    struct st_conn_rec *r = rec_of(conn);
    if (!r)
        return;
    pthread_mutex_lock(&srv->conns->lock);
    r->since_ns = since;
    pthread_mutex_unlock(&srv->conns->lock);
}

void st_conns_headers_in(struct st_server *srv, struct MHD_Connection *conn)
{
    set_since(srv, conn, 0);
}

void st_conns_request_done(struct st_server *srv, struct MHD_Connection *conn)
{
    set_since(srv, conn, now_ns());
}

int32_t st_conns_of_addr(struct st_server *srv, struct MHD_Connection *conn)
{
    struct st_conn_rec *r = rec_of(conn);
    int32_t n = 0;
    if (!r)
        return 0;
    pthread_mutex_lock(&srv->conns->lock);
    n = r->addr ? r->addr->n : 0;
    pthread_mutex_unlock(&srv->conns->lock);
    return n;
}

void st_conns_sweep(struct st_server *srv)
{
    int32_t limit_s = srv->cfg.header_timeout_s;
    if (limit_s <= 0)
        return;
    int64_t deadline = now_ns() - (int64_t)limit_s * 1000000000;
    int32_t cut = 0;
    pthread_mutex_lock(&srv->conns->lock);
    for (struct st_conn_rec *r = srv->conns->head; r; r = r->next) {
        if (r->cut || r->since_ns == 0 || r->since_ns > deadline || r->fd < 0)
            continue;
        r->cut = true;
        shutdown(r->fd, SHUT_RDWR);   /* MHD reads the end and closes it */
        cut++;
    }
    pthread_mutex_unlock(&srv->conns->lock);
    if (cut)
        st_log(ST_LOG_DEBUG, "http", "%d connection(s) closed: no complete request headers "
               "within %d s (--header-timeout)", (int)cut, (int)limit_s);
}
