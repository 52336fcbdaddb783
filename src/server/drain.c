/* drain.c -- a graceful shutdown (--shutdown-timeout): the server stops
 * taking new generations while the ones in progress finish.
 *
 * Once draining, a request to a "work" route (routes.c: the completion
 * endpoints) is answered 503 "The server is shutting down." before its body
 * is read, and /health answers 503 too, so a load balancer stops sending
 * here; everything else (models, metrics, tokenize) still answers. Requests
 * already in -- queued or running -- go on as usual. main() polls
 * st_server_in_progress() until it reaches 0 or the timeout passes, then
 * frees the server, which ends whatever is left (ST_ERR_SHUTDOWN).
 */
#include "server/daemon.h"

void st_server_drain(struct st_server *srv)
{
    atomic_store(&srv->draining, true);
}

bool st_server_draining(const struct st_server *srv)
{
    return atomic_load(&srv->draining);
}

int64_t st_server_in_progress(struct st_server *srv)
{
    int64_t calls = 0;
    pthread_mutex_lock(&srv->calls_lock);
    for (const struct st_call *c = srv->calls; c; c = c->next)
        calls++;
    pthread_mutex_unlock(&srv->calls_lock);
    /* A request can outlive its HTTP exchange for a moment (a client gone
     * while its job is still held), and the other way round: count both. */
    struct st_sched_stats ss;
    st_sched_stats(srv->sched, &ss);
    return ST_MAX(calls, ss.waiting + ss.running);
}
