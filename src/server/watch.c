/* watch.c -- notices clients that leave while their connection is
 * suspended, which libmicrohttpd itself cannot see (its docs: "While a
 * connection is suspended, MHD will not detect disconnects by the client").
 *
 * One thread for the whole server, not one per connection: every 100 ms it
 * polls the sockets of the suspended calls for a hang-up (POLLRDHUP, POLLHUP,
 * POLLERR) and cancels their requests. A waiting request then leaves the
 * queue at once, a running one frees its slot at its engine's next step,
 * and the END resumes the connection so MHD closes it.
 *
 * The same pass sends SSE keep-alive comments to idle streams
 * (keepalive.c) and cuts connections whose request headers are late
 * (conns.c); then the tick that gives memory back when idle (idle.c).
 *
 * The socket of a suspended connection stays open (MHD closes it only
 * after a resume, which the watcher would see as a changed suspend_gen),
 * so polling it never touches a reused descriptor that matters.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>

#include "server/daemon.h"

#define WATCH_PERIOD_MS 100

struct watch_set {
    struct pollfd *fds;
    struct st_call **calls;
    uint64_t *gens;
    size_t n, cap;
};

static bool set_grow(struct watch_set *w)
{
    size_t cap = w->cap ? w->cap * 2 : 64;
    struct pollfd *f = realloc(w->fds, cap * sizeof(*f));
    if (!f)
        return false;
    w->fds = f;
    struct st_call **c = realloc(w->calls, cap * sizeof(*c));
    if (!c)
        return false;
    w->calls = c;
    uint64_t *g = realloc(w->gens, cap * sizeof(*g));
    if (!g)
        return false;
    w->gens = g;
    w->cap = cap;
    return true;
}

/* Take a reference on every suspended call that could still be cancelled. */
static void collect(struct st_server *srv, struct watch_set *w)
{
    w->n = 0;
    pthread_mutex_lock(&srv->calls_lock);
    for (struct st_call *c = srv->calls; c; c = c->next) {
        if (w->n == w->cap && !set_grow(w))
            break;
        pthread_mutex_lock(&c->lock);
        bool take = c->suspended && !c->client_gone && (c->gen || c->resume) && c->fd >= 0;
        if (take) {
            w->fds[w->n] = (struct pollfd){ .fd = c->fd, .events = POLLRDHUP };
            w->calls[w->n] = c;
            w->gens[w->n] = c->suspend_gen;
            st_call_ref(c);
            w->n++;
        }
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_unlock(&srv->calls_lock);
}

/* Streams idle for --sse-keepalive seconds get a comment and are resumed
 * (keepalive.c); a call resumed or gone since collect() is left alone. */
static void keepalive(struct watch_set *w)
{
    int64_t now = st_clock_now(st_clock_real());
    for (size_t i = 0; i < w->n; i++) {
        struct st_call *c = w->calls[i];
        pthread_mutex_lock(&c->lock);
        if (!c->client_gone && c->suspend_gen == w->gens[i] && st_keepalive_due_locked(c, now))
            st_call_resume_locked(c);
        pthread_mutex_unlock(&c->lock);
    }
}

/* The peer shut its side (POLLRDHUP alone): gone, or only done sending
 * (shutdown(SHUT_WR) after its request) and still reading. A stream tells
 * them apart by writing: it is sent a keep-alive comment once, which a
 * client fully gone answers with a reset (POLLHUP / POLLERR on a later
 * pass); a client still reading gets its whole answer. Anything else is
 * taken as gone. True when the call is left to go on. c->lock held. */
static bool half_closed_locked(struct st_call *c, short revents)
{
    if (revents & (POLLHUP | POLLERR | POLLNVAL) || !c->gen || !c->gen->stream)
        return false;
    if (!c->half_closed && st_keepalive_probe_locked(c, st_clock_now(st_clock_real())))
        st_call_resume_locked(c);
    c->half_closed = true;
    return true;
}

static void scan(struct st_server *srv, struct watch_set *w)
{
    collect(srv, w);
    if (w->n && poll(w->fds, w->n, 0) > 0) {
        for (size_t i = 0; i < w->n; i++) {
            if (!(w->fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
                continue;
            struct st_call *c = w->calls[i];
            pthread_mutex_lock(&c->lock);
            bool gone = c->suspended && c->suspend_gen == w->gens[i] && !c->conn_done &&
                        !half_closed_locked(c, w->fds[i].revents);
            if (gone)
                c->client_gone = true;
            if (gone && c->resume)
                st_call_resume_locked(c);   /* it cancels its sub-calls (gcp.c) */
            pthread_mutex_unlock(&c->lock);
            if (gone)
                st_gen_cancel_all(c);
        }
    }
    keepalive(w);
    for (size_t i = 0; i < w->n; i++)
        st_call_unref(w->calls[i]);
    st_conns_sweep(srv);   /* request headers past --header-timeout (conns.c) */
}

static void *watch_main(void *arg)
{
    struct st_server *srv = arg;
    struct watch_set w = { 0 };
    struct st_idle idle = { 0 };
    pthread_mutex_lock(&srv->watch_lock);
    while (!atomic_load(&srv->stopping)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += WATCH_PERIOD_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        int r = pthread_cond_timedwait(&srv->watch_cond, &srv->watch_lock, &ts);
        if (r != ETIMEDOUT || atomic_load(&srv->stopping))
            continue;
        pthread_mutex_unlock(&srv->watch_lock);
        scan(srv, &w);
        st_idle_tick(srv, &idle);   /* memory back to the system when idle (idle.c) */
        pthread_mutex_lock(&srv->watch_lock);
    }
    pthread_mutex_unlock(&srv->watch_lock);
    free(w.fds);
    free(w.calls);
    free(w.gens);
    return NULL;
}

enum st_status st_watch_start(struct st_server *srv, struct st_err *err)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv->watch_cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&srv->watch_lock, NULL);
    srv->watch_init = true;
    if (pthread_create(&srv->watcher, NULL, watch_main, srv) != 0)
        return st_err_set(err, ST_ERR_INTERNAL, "server: cannot start the disconnect watcher");
    srv->watcher_running = true;
    return ST_OK;
}

void st_watch_stop(struct st_server *srv)
{
    if (!srv->watch_init)
        return;
    pthread_mutex_lock(&srv->watch_lock);
    atomic_store(&srv->stopping, true);
    pthread_cond_broadcast(&srv->watch_cond);
    pthread_mutex_unlock(&srv->watch_lock);
    if (srv->watcher_running)
        pthread_join(srv->watcher, NULL);
    srv->watcher_running = false;
    pthread_cond_destroy(&srv->watch_cond);
    pthread_mutex_destroy(&srv->watch_lock);
    srv->watch_init = false;
}
