/* idle.c -- memory given back when the server goes idle (issue 25: after a
 * load spike RSS stayed ~14 MiB above the idle start).
 *
 * Where it stayed: glibc's malloc. Every thread that allocates gets an
 * arena of its own (the HTTP pool's threads, the engines', the watcher),
 * and a chunk freed in the middle of an arena's heap stays resident: glibc
 * hands memory back by itself only from the top of a heap. Large buffers
 * (request bodies near --body-limit, long prompts' token arrays, a
 * /tokenize reply) add to it: after the first large block freed glibc
 * raises its mmap threshold, so the later ones come from the heaps too.
 * malloc_trim(0) walks every arena and gives back each whole free page
 * (madvise), wherever it lies.
 *
 * When: the watcher (watch.c) ticks every 100 ms. After work (an HTTP
 * response, or a connection opened or closed: a keep-alive connection's
 * buffers are freed when it closes, often seconds after its last reply),
 * once the server has been quiet for ST_IDLE_TICKS ticks in a row
 * (nothing waiting or running, no call live: no body being read, no reply
 * being written), it trims once; not again within ST_IDLE_GAP_TICKS of the
 * last trim (work then waits for the gap), so health probes on an idle
 * server cost one trim in 10 s at most. Nothing on the hot path: a tick
 * reads a few counters; the trim (well under a millisecond when there is
 * little to give back) runs on the watcher's thread while nothing runs,
 * and a steady stream of requests leaves it no quiet second.
 */
#include "server/daemon.h"
#include "strata/log.h"
#include "strata/rss.h"

#ifdef __GLIBC__
#include <malloc.h>
#define trim_heap() malloc_trim(0)
#else
#define trim_heap() 0   /* another C library: its own policy, nothing to call */
#endif

bool st_idle_should_trim(struct st_idle *s, bool quiet, uint64_t work)
{
    s->ticks++;
    if (!quiet) {
        s->quiet_ticks = 0;
        return false;
    }
    s->quiet_ticks++;
    if (work == s->trimmed_work || s->quiet_ticks < ST_IDLE_TICKS ||
        (s->trims > 0 && s->ticks - s->trimmed_tick < ST_IDLE_GAP_TICKS))
        return false;
    s->trimmed_work = work;
    s->trimmed_tick = s->ticks;
    s->trims++;
    return true;
}

static bool calls_live(struct st_server *srv)
{
    pthread_mutex_lock(&srv->calls_lock);
    bool live = srv->calls != NULL;
    pthread_mutex_unlock(&srv->calls_lock);
    return live;
}

void st_idle_tick(struct st_server *srv, struct st_idle *s)
{
    if (!srv->sched)
        return;
    struct st_sched_stats ss;
    st_sched_stats(srv->sched, &ss);
    bool quiet = ss.waiting == 0 && ss.running == 0 && !calls_live(srv);
    uint64_t work = 0;   /* changes with every response and connection */
    for (int i = 0; i < ST_HTTP_CODES_TRACKED; i++)
        work += atomic_load(&srv->responses[i]);
    work = (work << 20) ^ (uint64_t)(uint32_t)atomic_load(&srv->open_conns);
    if (!st_idle_should_trim(s, quiet, work))
        return;
    long before = (long)(st_rss_bytes() / 1024);
    int gave = trim_heap();
    long after = (long)(st_rss_bytes() / 1024);
    st_log(ST_LOG_DEBUG, "http", "idle: memory given back (malloc_trim %s): RSS %ld -> %ld KiB",
           gave ? "freed pages" : "found none", before, after);
}
