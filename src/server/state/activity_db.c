/* activity_db.c -- the activity log kept in SQLite (activity_db.h). */
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/activity_db.h"
#include "server/state/state_db.h"

struct st_activity_db {
    pthread_mutex_t lock;
    sqlite3 *db;
    int64_t max_rows;
    int64_t n;                 /* rows held */
};

/* One integer answer of 'sql', or 'dflt'. */
static int64_t query_int(sqlite3 *db, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = st_state_db_prep(db, sql);
    int64_t v = dflt;
    if (st && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Drop the oldest rows past max_rows (lock held). */
static int prune(struct st_activity_db *a)
{
    if (a->n <= a->max_rows)
        return SQLITE_OK;
    const char *sql = "DELETE FROM activity WHERE id IN (SELECT id FROM activity ORDER BY id "
                      "LIMIT ?)";
    sqlite3_stmt *st = st_state_db_prep(a->db, sql);
    if (!st)
        return SQLITE_ERROR;
    sqlite3_bind_int64(st, 1, a->n - a->max_rows);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rc;
    a->n = query_int(a->db, "SELECT COUNT(*) FROM activity", a->max_rows);
    return SQLITE_OK;
}

enum st_status st_activity_db_open(struct st_state_db *sd, int64_t max_rows,
                                   struct st_activity_db **out, struct st_err *err)
{
    *out = NULL;
    struct st_activity_db *a = calloc(1, sizeof(*a));
    if (!a || pthread_mutex_init(&a->lock, NULL) != 0) {
        free(a);
        return st_err_set(err, ST_ERR_NOMEM, "activity log: out of memory");
    }
    a->max_rows = max_rows > 0 ? max_rows : 1;
    enum st_status rc = st_state_db_connect(sd, &a->db, err);
    if (rc == ST_OK) {
        a->n = query_int(a->db, "SELECT COUNT(*) FROM activity", -1);
        if (a->n < 0 || prune(a) != SQLITE_OK)
            rc = st_err_set(err, ST_ERR_IO, "--state-dir: cannot read the activity log in %s: "
                            "%s", st_state_db_path(sd), sqlite3_errmsg(a->db));
    }
    if (rc != ST_OK) {
        st_activity_db_close(a);
        return rc;
    }
    *out = a;
    return ST_OK;
}

void st_activity_db_close(struct st_activity_db *a)
{
    if (!a)
        return;
    sqlite3_close(a->db);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

uint64_t st_activity_db_last_id(struct st_activity_db *a)
{
    pthread_mutex_lock(&a->lock);
    int64_t v = query_int(a->db, "SELECT COALESCE(MAX(id), 0) FROM activity", 0);
    pthread_mutex_unlock(&a->lock);
    return (uint64_t)v;
}

enum st_status st_activity_db_add(struct st_activity_db *a, uint64_t id, uint64_t owner,
                                  const char *rec, size_t len)
{
    pthread_mutex_lock(&a->lock);
    const char *sql = "INSERT OR REPLACE INTO activity(id, owner, rec) VALUES(?, ?, ?)";
    sqlite3_stmt *st = st_state_db_prep(a->db, sql);
    int rc = SQLITE_ERROR;
    if (st) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)owner);
        sqlite3_bind_blob64(st, 3, rec, len, SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
    }
    if (rc == SQLITE_DONE) {
        a->n++;   /* a replaced id counts twice until the next prune recounts */
        rc = prune(a);
    }
    pthread_mutex_unlock(&a->lock);
    return rc == SQLITE_OK || rc == SQLITE_DONE ? ST_OK : ST_ERR_IO;
}

void st_activity_db_checkpoint(struct st_activity_db *a)
{
    pthread_mutex_lock(&a->lock);
    (void)sqlite3_wal_checkpoint_v2(a->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    pthread_mutex_unlock(&a->lock);
}

/* The statement's records, comma-separated, appended to out (*n: how
 * many). */
static enum st_status read_rows(sqlite3_stmt *st, struct st_buf *out, size_t *n)
{
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n > 0)
            ST_TRY(st_buf_append(out, ",", 1));
        ST_TRY(st_buf_append(out, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0)));
        (*n)++;
    }
    return step == SQLITE_DONE ? ST_OK : ST_ERR_IO;
}

enum st_status st_activity_db_read(struct st_activity_db *a, uint64_t before, bool all,
                                   uint64_t owner, size_t max, struct st_buf *out, size_t *n)
{
    *n = 0;
    /* the newest 'max' first, then turned oldest first */
    const char *sql = all ? "SELECT rec FROM (SELECT id, rec FROM activity WHERE id < ?1 "
                            "ORDER BY id DESC LIMIT ?2) ORDER BY id"
                          : "SELECT rec FROM (SELECT id, rec FROM activity WHERE id < ?1 AND "
                            "owner = ?3 ORDER BY id DESC LIMIT ?2) ORDER BY id";
    pthread_mutex_lock(&a->lock);
    sqlite3_stmt *st = st_state_db_prep(a->db, sql);
    enum st_status rc = st ? ST_OK : ST_ERR_IO;
    if (st) {
        sqlite3_bind_int64(st, 1, before > INT64_MAX ? INT64_MAX : (sqlite3_int64)before);
        sqlite3_bind_int64(st, 2, max > INT64_MAX ? INT64_MAX : (sqlite3_int64)max);
        if (!all)
            sqlite3_bind_int64(st, 3, (sqlite3_int64)owner);
        rc = read_rows(st, out, n);
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}
