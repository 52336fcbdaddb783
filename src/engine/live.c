/* live.c -- the requests the engine side holds, and how each one ends.
 *
 * Requests: submit (pool.c) takes the engine side's reference and
 * remembers the request in the live list, so shutdown can end every one of
 * them (in a slot: by the engine loop's end path, st_engine_end_slot;
 * still waiting: through st_sched_cancel and st_pool_end_unslotted).
 * Whoever ends a request emits END, forgets it and drops the engine's
 * reference; exactly one party does, decided by the scheduler's mutex
 * (st_sched_cancel returns true once, an admit hands the job to one
 * engine).
 *
 * Thread: st_engine_end_slot on the engine's own thread; the others on
 * any thread (the live list is under the pool's mu).
 */
#include "engine/pool.h"

static int64_t now_ns(const struct st_engine *e)
{
    return st_clock_now(e->pool->clock);
}

void st_pool_forget(struct st_engine_pool *p, struct st_request *req)
{
    pthread_mutex_lock(&p->mu);
    if (req->pool_prev)
        req->pool_prev->pool_next = req->pool_next;
    else if (p->live == req)
        p->live = req->pool_next;
    if (req->pool_next)
        req->pool_next->pool_prev = req->pool_prev;
    req->pool_prev = req->pool_next = NULL;
    pthread_mutex_unlock(&p->mu);
}

void st_pool_end_unslotted(struct st_engine_pool *p, struct st_request *req,
                           enum st_finish finish, enum st_status status, const char *error)
{
    req->end_ns = st_clock_now(p->clock);
    st_request_emit_end(req, finish, status, error, 0);
    st_pool_forget(p, req);
    st_request_unref(req);
}

void st_engine_end_slot(struct st_engine *e, struct st_engine_slot *sl, enum st_finish finish,
                        enum st_status status, const char *error, enum st_outcome outcome)
{
    struct st_request *req = sl->req;
    struct st_job_report report = {
        .first_token_ns = req->first_token_ns,
        .n_generated = sl->n_generated,
        .mtp_drafted = sl->mtp.drafted,
        .mtp_accepted = sl->mtp.accepted,
    };
    int64_t n_generated = sl->n_generated;
    req->end_ns = now_ns(e);
    /* Everything a client can read about the request and its slot is
     * settled before END goes out: a client that saw its reply finds the
     * request finished (scheduler, activity, /metrics), the slot idle with
     * the prefix it keeps (/slots, strata_slots, kv_usage) and the KV
     * events of that prefix sent. */
    st_sched_finish(e->pool->sched, &req->job, outcome, &report);
    st_engine_prefix_release(e, sl, outcome);   /* the KV stays for the next request */
    if (sl->stop_live)
        st_stop_fini(&sl->stop);
    sl->stop_live = false;
    sl->req = NULL;
    sl->decoding = false;
    sl->n_past = 0;
    if (atomic_fetch_sub(&e->busy, 1) == 1)
        e->idle_since_ns = req->end_ns;   /* the ttl counts from here */
    st_engine_update_views(e);
    st_request_emit_end(req, finish, status, error, n_generated);
    st_pool_forget(e->pool, req);
    st_request_unref(req);
}
