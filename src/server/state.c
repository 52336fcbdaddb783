/* state.c -- what the server keeps under --state-dir (docs/OPERATIONS.md
 * "State that survives a restart"): the stored responses
 * (responses/responses_store_sqlite.c) and the activity log
 * (state/activity_db.c), in one SQLite database (state/state_db.c).
 *
 * The scheduler tells of each finished dispatch under its lock
 * (st_sched_set_activity_hook), so the record is only copied into a
 * bounded queue there; one writer thread renders it as /api/activity shows
 * it and writes it, off every request's path. A write that fails is
 * logged and the record is not kept; the request it describes is long
 * answered. What the queue holds at shutdown is written before the
 * database closes. The same thread checkpoints the WAL every
 * CHECKPOINT_S seconds, so the response store's puts (on engine threads)
 * never do (responses_store_sqlite.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/log.h"
#include "server/daemon.h"
#include "server/responses/responses_store.h"
#include "server/state/activity_db.h"
#include "server/state/state_db.h"

#define QUEUE_CAP 1024          /* records waiting for the writer at most */
#define BATCH 64                /* records the writer takes at a time */
#define CHECKPOINT_S 2          /* seconds between the writer's WAL checkpoints */

struct st_keeper {
    struct st_server *srv;
    struct st_state_db *sd;     /* owned: holds the directory's lock while the server runs */
    struct st_activity_db *adb;
    pthread_mutex_t lock;       /* a leaf lock: taken under the scheduler's */
    pthread_cond_t cond;
    struct st_activity queue[QUEUE_CAP];   /* a ring: head, len */
    size_t head, len;
    uint64_t dropped;           /* records the full queue could not take */
    bool stop;
    pthread_t thread;
    bool running;
};

/* The scheduler's hook (under its lock): copy and wake the writer. */
static void on_finished(void *ctx, const struct st_activity *a)
{
    struct st_keeper *k = ctx;
    pthread_mutex_lock(&k->lock);
    if (k->len < QUEUE_CAP) {
        k->queue[(k->head + k->len) % QUEUE_CAP] = *a;
        k->len++;
        pthread_cond_signal(&k->cond);
    } else {
        k->dropped++;
    }
    pthread_mutex_unlock(&k->lock);
}

/* Render and write one record; a failure is logged. */
static void keep_one(struct st_keeper *k, const struct st_activity *a)
{
    struct st_server *srv = k->srv;
    uint64_t owner = srv->owners ? st_owners_find(srv->owners, a->request_id) : 0;
    struct st_buf b;
    st_buf_init(&b);
    struct st_out o;
    st_out_init(&o, &b);
    st_activity_json(&o, srv, a);
    enum st_status rc = st_out_finish(&o);
    if (rc == ST_OK)
        rc = st_activity_db_add(k->adb, a->id, owner, b.data, b.len);
    if (rc != ST_OK)
        st_log(ST_LOG_WARN, "state", "activity record %llu (request %s) not kept: %s",
               (unsigned long long)a->id, a->request_id, st_status_msg(rc));
    st_buf_fini(&b);
}

/* The deadline CHECKPOINT_S from now, for pthread_cond_timedwait (k->cond
 * runs on CLOCK_MONOTONIC). */
static struct timespec next_checkpoint(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += CHECKPOINT_S;
    return t;
}

static void *writer(void *arg)
{
    struct st_keeper *k = arg;
    struct st_activity batch[BATCH];
    struct timespec due = next_checkpoint();
    pthread_mutex_lock(&k->lock);
    for (;;) {
        while (!k->stop && k->len == 0) {
            if (pthread_cond_timedwait(&k->cond, &k->lock, &due) == ETIMEDOUT) {
                pthread_mutex_unlock(&k->lock);
                st_activity_db_checkpoint(k->adb);
                due = next_checkpoint();
                pthread_mutex_lock(&k->lock);
            }
        }
        if (k->len == 0)   /* stopping, and everything written */
            break;
        size_t n = 0;
        for (; n < BATCH && k->len > 0; n++) {
            batch[n] = k->queue[k->head];
            k->head = (k->head + 1) % QUEUE_CAP;
            k->len--;
        }
        uint64_t dropped = k->dropped;
        k->dropped = 0;
        pthread_mutex_unlock(&k->lock);
        if (dropped)
            st_log(ST_LOG_WARN, "state", "%llu activity record(s) not kept: the writer fell "
                   "behind", (unsigned long long)dropped);
        for (size_t i = 0; i < n; i++)
            keep_one(k, &batch[i]);
        pthread_mutex_lock(&k->lock);
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

/* Each key's owner tag, the same after a restart (state_db.h). */
static void tag_keys(struct st_server *srv, const struct st_state_db *sd)
{
    for (size_t i = 0; i < srv->cfg.n_keys; i++)
        srv->key_owners[i] = st_state_db_owner(sd, srv->keys[i].key);
}

/* The keeper, taking over 'sd' (freed by st_state_stop, or here on failure). */
static enum st_status keeper_new(struct st_server *srv, struct st_state_db *sd,
                                 struct st_err *err)
{
    struct st_keeper *k = calloc(1, sizeof(*k));
    if (!k) {
        st_state_db_free(sd);
        return st_err_set(err, ST_ERR_NOMEM, "server: out of memory");
    }
    k->srv = srv;
    k->sd = sd;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->cond, &ca);
    pthread_condattr_destroy(&ca);
    srv->keeper = k;
    return ST_OK;
}

/* The activity log: open, continue the numbering, start the writer, hook. */
static enum st_status keeper_start(struct st_server *srv, struct st_keeper *k,
                                   struct st_err *err)
{
    enum st_status rc = st_activity_db_open(k->sd, srv->cfg.state_max_rows, &k->adb, err);
    if (rc != ST_OK)
        return rc;
    if (!st_sched_activity_continue(srv->sched, st_activity_db_last_id(k->adb)))
        st_log(ST_LOG_WARN, "state", "the scheduler dispatched before the activity log was "
               "opened: its ids start again at 1");
    if (pthread_create(&k->thread, NULL, writer, k) != 0)
        return st_err_set(err, ST_ERR_NOMEM, "server: cannot start the activity writer");
    k->running = true;
    st_sched_set_activity_hook(srv->sched, on_finished, k);
    return ST_OK;
}

enum st_status st_state_start(struct st_server *srv, struct st_err *err)
{
    if (!srv->cfg.state_dir || !srv->cfg.state_dir[0])
        return ST_OK;
    struct st_state_db *sd = NULL;
    ST_TRY(st_state_db_open(srv->cfg.state_dir, &sd, err));
    ST_TRY(keeper_new(srv, sd, err));   /* st_state_stop frees it from here on */
    tag_keys(srv, sd);
    if (srv->cfg.responses_store_bytes)
        ST_TRY(st_resp_store_open(sd, srv->cfg.responses_store_bytes, srv->cfg.state_max_rows,
                                  &srv->resp_store, err));
    ST_TRY(keeper_start(srv, srv->keeper, err));
    st_log(ST_LOG_INFO, "state", "keeping stored responses and the activity log in %s",
           st_state_db_path(sd));
    return ST_OK;
}

void st_state_stop(struct st_server *srv)
{
    struct st_keeper *k = srv->keeper;
    if (!k)
        return;
    st_sched_set_activity_hook(srv->sched, NULL, NULL);
    if (k->running) {
        pthread_mutex_lock(&k->lock);
        k->stop = true;
        pthread_cond_signal(&k->cond);
        pthread_mutex_unlock(&k->lock);
        pthread_join(k->thread, NULL);
    }
    st_activity_db_close(k->adb);
    st_state_db_free(k->sd);
    pthread_cond_destroy(&k->cond);
    pthread_mutex_destroy(&k->lock);
    free(k);
    srv->keeper = NULL;
}

enum st_status st_state_activity(struct st_call *c, uint64_t before, size_t max,
                                 struct st_buf *out, size_t *n)
{
    *n = 0;
    struct st_keeper *k = c->srv->keeper;
    if (!k || max == 0)
        return ST_OK;
    bool all = c->srv->cfg.n_keys == 0 || (c->key && c->key->admin);
    return st_activity_db_read(k->adb, before, all, st_auth_owner(c), max, out, n);
}
