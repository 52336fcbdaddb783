/* slot_op.c -- POST /slots/{id}?action=save|restore|erase on the engine
 * (include/strata/slot_action.h; docs/API.md "/slots").
 *
 * The slots are the engine thread's, so an action is a struct st_slot_op
 * queued on the engine (e->slot_ops under e->mu) with its wake flag set;
 * the engine thread runs the queue between two steps (engine_main, pool.c)
 * and signals e->slot_cv; the HTTP thread waits on it. An engine thread
 * that ends fails what is still queued (st_engine_slot_ops_fail), and no
 * op is queued once its 'stop' is set, so no caller waits forever. In
 * st_engine_pool_step mode (tests: no engine threads) the caller's thread
 * is the engine thread and runs the op itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/pool.h"
#include "engine/kv_pool.h"
#include "engine/step.h"
#include "strata/log.h"
#include "strata/slot_action.h"

struct st_slot_op {
    int32_t slot;                         /* within the engine */
    enum st_slot_action action;
    const char *path;                     /* borrowed */
    struct st_slot_action_result *res;    /* borrowed */
    struct st_err *err;                   /* borrowed */
    enum st_status rc;
    bool done;                            /* under e->mu */
    struct st_slot_op *next;              /* e->slot_ops */
};

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static enum st_status do_save(struct st_engine *e, struct st_engine_slot *sl,
                              struct st_slot_op *op)
{
    /* written aside and renamed: a failed save never leaves half a file
     * under the name asked for */
    if (!st_runner_can_save_slots(e->runner))
        return st_err_set(op->err, ST_ERR_UNSUPPORTED, "the %s runner cannot save slots",
                          e->runner->ops->name);
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", op->path) >= (int)sizeof(tmp))
        return st_err_set(op->err, ST_ERR_INVALID, "slot file: path too long");
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return st_err_set(op->err, ST_ERR_IO, "slot file: cannot create %s: %s", tmp,
                          strerror(errno));
    op->res->n_tokens = sl->cache.n_kv;
    enum st_status rc = st_runner_slot_save(e->runner, sl->index, sl->cache.ids, sl->cache.n_kv,
                                            f, &op->res->n_bytes, op->err);
    if (fclose(f) != 0 && rc == ST_OK)
        rc = st_err_set(op->err, ST_ERR_IO, "slot file: cannot write %s: %s", tmp,
                        strerror(errno));
    if (rc == ST_OK && rename(tmp, op->path) != 0)
        rc = st_err_set(op->err, ST_ERR_IO, "slot file: cannot rename %s: %s", tmp,
                        strerror(errno));
    if (rc != ST_OK)
        (void)remove(tmp);
    return rc;
}

static enum st_status do_restore(struct st_engine *e, struct st_engine_slot *sl,
                                 struct st_slot_op *op)
{
    if (!st_runner_can_save_slots(e->runner))
        return st_err_set(op->err, ST_ERR_UNSUPPORTED, "the %s runner cannot restore slots",
                          e->runner->ops->name);
    FILE *f = fopen(op->path, "rb");
    if (!f)
        return st_err_set(op->err, errno == ENOENT ? ST_ERR_NOT_FOUND : ST_ERR_IO,
                          "slot file: cannot open it: %s", strerror(errno));
    (void)st_engine_prefix_set(e, sl, NULL, 0);   /* its old ids describe nothing now */
    int32_t *ids = NULL;
    int64_t n = 0;
    enum st_status rc = st_runner_slot_restore(e->runner, sl->index, f, &ids, &n,
                                               &op->res->n_bytes, op->err);
    fclose(f);
    if (rc == ST_OK && !st_engine_prefix_set(e, sl, ids, n))
        rc = st_err_set(op->err, ST_ERR_NOMEM, "slot file: no memory for %lld ids",
                        (long long)n);
    if (rc == ST_OK && !st_kv_pool_settle(e, sl))   /* --kv-unified: room beside busy slots */
        rc = st_err_set(op->err, ST_ERR_INVALID, "slot file: its %lld tokens do not fit the "
                        "unified KV pool of %lld beside what busy slots hold; try again when "
                        "they end", (long long)n, (long long)st_kv_pool_size(e));
    if (rc != ST_OK) {
        st_runner_kv_truncate(e->runner, sl->index, 0);
        (void)st_engine_prefix_set(e, sl, NULL, 0);
    }
    free(ids);
    op->res->n_tokens = rc == ST_OK ? n : 0;
    return rc;
}

static enum st_status run_op(struct st_engine *e, struct st_slot_op *op)
{
    if (!e->runner)
        return st_err_set(op->err, ST_ERR_LOADING, "slot %d: its engine has no model loaded",
                          (int)op->slot);
    if (op->slot >= e->n_active)
        return st_err_set(op->err, ST_ERR_NOT_FOUND, "slot %d: the loaded model does not use "
                          "it", (int)op->slot);
    struct st_engine_slot *sl = &e->slots[op->slot];
    if (sl->req) {
        op->res->busy = true;
        return st_err_set(op->err, ST_ERR_INVALID, "slot %d is processing a request",
                          (int)op->slot);
    }
    enum st_status rc = ST_OK;
    switch (op->action) {
    case ST_SLOT_ACTION_SAVE:
        rc = do_save(e, sl, op);
        break;
    case ST_SLOT_ACTION_RESTORE:
        rc = do_restore(e, sl, op);
        break;
    case ST_SLOT_ACTION_ERASE:
        op->res->n_tokens = sl->cache.n_kv;
        st_runner_kv_truncate(e->runner, sl->index, 0);
        (void)st_engine_prefix_set(e, sl, NULL, 0);
        break;
    }
    st_engine_update_views(e);
    return rc;
}

static void run_timed(struct st_engine *e, struct st_slot_op *op)
{
    double t0 = mono_ms();
    op->rc = run_op(e, op);
    op->res->ms = mono_ms() - t0;
}

void st_engine_slot_ops_run(struct st_engine *e)
{
    for (;;) {
        pthread_mutex_lock(&e->mu);
        struct st_slot_op *op = e->slot_ops;
        if (op)
            e->slot_ops = op->next;
        pthread_mutex_unlock(&e->mu);
        if (!op)
            return;
        run_timed(e, op);
        pthread_mutex_lock(&e->mu);
        op->done = true;
        pthread_cond_broadcast(&e->slot_cv);
        pthread_mutex_unlock(&e->mu);
    }
}

void st_engine_slot_ops_fail(struct st_engine *e)
{
    pthread_mutex_lock(&e->mu);
    for (struct st_slot_op *op = e->slot_ops; op; op = op->next) {
        op->rc = st_err_set(op->err, ST_ERR_SHUTDOWN, "the server is shutting down");
        op->done = true;
    }
    e->slot_ops = NULL;
    pthread_cond_broadcast(&e->slot_cv);
    pthread_mutex_unlock(&e->mu);
}

/* Engine and slot within it of the id'th slot of st_engine_pool_slots. */
static struct st_engine *find_slot(struct st_engine_pool *p, int32_t id, int32_t *slot)
{
    for (int32_t i = 0; id >= 0 && i < p->n_engines; i++) {
        if (id < p->engines[i].n_slots) {
            *slot = id;
            return &p->engines[i];
        }
        id -= p->engines[i].n_slots;
    }
    return NULL;
}

enum st_status st_engine_pool_slot_action(struct st_engine_pool *p, int32_t id,
                                          enum st_slot_action action, const char *path,
                                          struct st_slot_action_result *res, struct st_err *err)
{
    memset(res, 0, sizeof(*res));
    struct st_slot_op op = { .action = action, .path = path, .res = res, .err = err };
    struct st_engine *e = find_slot(p, id, &op.slot);
    if (!e)
        return st_err_set(err, ST_ERR_NOT_FOUND, "no slot %d", (int)id);
    if (atomic_load(&p->closing))
        return st_err_set(err, ST_ERR_SHUTDOWN, "the server is shutting down");
    if (!p->started) {   /* step mode: this thread is the engine's */
        run_timed(e, &op);
        return op.rc;
    }
    pthread_mutex_lock(&e->mu);
    if (atomic_load(&e->stop)) {
        pthread_mutex_unlock(&e->mu);
        return st_err_set(err, ST_ERR_SHUTDOWN, "the server is shutting down");
    }
    struct st_slot_op **tail = &e->slot_ops;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &op;
    e->wake = true;
    pthread_cond_signal(&e->cv);
    while (!op.done)
        pthread_cond_wait(&e->slot_cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return op.rc;
}
