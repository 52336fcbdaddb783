/* responses_store_sqlite.c -- the response store kept in the --state-dir
 * database (responses_store.h, state/state_db.h), so GET and
 * previous_response_id reach responses made before a restart.
 *
 * One table, responses(id, owner, used, size, input, output, response);
 * 'used' orders eviction as the in-memory store's use list does: a counter
 * (not a clock, which may step back) bumped by each put and get. The
 * entries' count and bytes are read once at open and then kept beside the
 * table, changed only once a transaction has committed.
 *
 * One connection behind one mutex: a put is one transaction (replace,
 * evict, insert), so a failed write (disk full, I/O error) rolls back and
 * leaves the table and the counters as they were. A put may run on an
 * engine thread, so it must not wait on the disk: in WAL mode with
 * synchronous=NORMAL a commit only appends to the WAL, and this
 * connection never checkpoints (wal_autocheckpoint=0); the activity log's
 * writer thread does, off every request's path (../state.c).
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "strata/log.h"
#include "server/responses/responses_store_impl.h"
#include "server/state/state_db.h"

/* Bytes an entry counts besides its texts: the row's keys and numbers. */
#define ROW_OVERHEAD 64

struct sql_store {
    pthread_mutex_t lock;            /* guards everything below */
    sqlite3 *db;
    size_t budget;
    int64_t max_rows;
    uint64_t n, bytes, evicted;
    int64_t used;                    /* the last 'used' handed out */
};

static size_t row_size(size_t id_len, size_t input_len, size_t output_len, size_t response_len)
{
    return ROW_OVERHEAD + id_len + input_len + output_len + response_len;
}

/* Run a statement with no rows wanted; SQLITE_OK or the error. */
static int run_done(sqlite3_stmt *st)
{
    if (!st)
        return SQLITE_ERROR;
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static void log_db_error(struct sql_store *s, const char *doing)
{
    st_log(ST_LOG_WARN, "state", "responses store: %s: %s", doing, sqlite3_errmsg(s->db));
}

/* ---- eviction and the write of a put (in its transaction) -------------------- */

/* Delete the row 'id' if any; *size its size (0: none). */
static int drop_row(struct sql_store *s, const char *id, int64_t *size)
{
    *size = 0;
    sqlite3_stmt *st = st_state_db_prep(s->db, "DELETE FROM responses WHERE id = ? RETURNING size");
    if (!st)
        return SQLITE_ERROR;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        *size += sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Delete the least recently used row; *size its size, *found whether there was one. */
static int drop_oldest(struct sql_store *s, int64_t *size, bool *found)
{
    *size = 0;
    *found = false;
    const char *sql = "DELETE FROM responses WHERE id = (SELECT id FROM responses ORDER BY used "
                      "LIMIT 1) RETURNING size";
    sqlite3_stmt *st = st_state_db_prep(s->db, sql);
    if (!st)
        return SQLITE_ERROR;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *size += sqlite3_column_int64(st, 0);
        *found = true;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Evict until 'add' more bytes and one more row fit (n, bytes: the counts
 * inside the transaction, updated). */
static int make_room(struct sql_store *s, size_t add, uint64_t *n, uint64_t *bytes,
                     uint64_t *evicted)
{
    while (*n > 0 && (*bytes + add > s->budget || (int64_t)*n + (add ? 1 : 0) > s->max_rows)) {
        int64_t size;
        bool found;
        int rc = drop_oldest(s, &size, &found);
        if (rc != SQLITE_OK)
            return rc;
        if (!found)
            break;
        *n -= 1;
        *bytes -= (uint64_t)size;
        *evicted += 1;
    }
    return SQLITE_OK;
}

static enum st_status sql_put(void *impl, uint64_t owner, const char *id, const char *input,
                              size_t input_len, const char *output, size_t output_len,
                              const char *response, size_t response_len)
{
    struct sql_store *s = impl;
    size_t size = row_size(strlen(id), input_len, output_len, response_len);
    if (size > s->budget)
        return ST_ERR_TOO_LONG;
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->n, bytes = s->bytes, evicted = s->evicted;
    int64_t old;
    int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK && (rc = drop_row(s, id, &old)) == SQLITE_OK && old > 0) {
        n--;
        bytes -= (uint64_t)old;
    }
    if (rc == SQLITE_OK)
        rc = make_room(s, size, &n, &bytes, &evicted);
    if (rc == SQLITE_OK) {
        const char *sql = "INSERT INTO responses(id, owner, used, size, input, output, response) "
                          "VALUES(?, ?, ?, ?, ?, ?, ?)";
        sqlite3_stmt *st = st_state_db_prep(s->db, sql);
        if (st) {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)owner);
            sqlite3_bind_int64(st, 3, s->used + 1);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)size);
            sqlite3_bind_blob64(st, 5, input, input_len, SQLITE_STATIC);
            sqlite3_bind_blob64(st, 6, output, output_len, SQLITE_STATIC);
            sqlite3_bind_blob64(st, 7, response, response_len, SQLITE_STATIC);
        }
        rc = run_done(st);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    enum st_status out = ST_OK;
    if (rc == SQLITE_OK) {
        s->n = n + 1;
        s->bytes = bytes + size;
        s->evicted = evicted;
        s->used++;
    } else {
        log_db_error(s, "cannot store a response");
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        out = rc == SQLITE_NOMEM ? ST_ERR_NOMEM : ST_ERR_IO;
    }
    pthread_mutex_unlock(&s->lock);
    return out;
}

/* ---- get, delete, stats --------------------------------------------------------- */

/* An owned NUL-terminated copy of column i, when out is wanted. */
static bool column_out(sqlite3_stmt *st, int i, char **out)
{
    if (!out)
        return true;
    const void *p = sqlite3_column_blob(st, i);
    return st_resp_store_copy_out(out, p, (size_t)sqlite3_column_bytes(st, i));
}

static enum st_status sql_get(void *impl, uint64_t owner, const char *id, char **input,
                              char **output, char **response)
{
    struct sql_store *s = impl;
    st_resp_store_clear_outs(input, output, response, false);
    pthread_mutex_lock(&s->lock);
    enum st_status rc = ST_ERR_NOT_FOUND;
    const char *sql = "SELECT input, output, response FROM responses WHERE id = ? AND owner = ?";
    sqlite3_stmt *st = st_state_db_prep(s->db, sql);
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)owner);
        if (sqlite3_step(st) == SQLITE_ROW) {
            bool ok = column_out(st, 0, input) && column_out(st, 1, output) &&
                      column_out(st, 2, response);
            rc = ok ? ST_OK : ST_ERR_NOMEM;
        }
        sqlite3_finalize(st);
    }
    if (rc == ST_OK) {   /* a use: the newest to evict; not kept is no failure of the get */
        sqlite3_stmt *up = st_state_db_prep(s->db, "UPDATE responses SET used = ? WHERE id = ?");
        if (up) {
            sqlite3_bind_int64(up, 1, s->used + 1);
            sqlite3_bind_text(up, 2, id, -1, SQLITE_STATIC);
        }
        if (run_done(up) == SQLITE_OK)
            s->used++;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc != ST_OK)
        st_resp_store_clear_outs(input, output, response, true);
    return rc;
}

static enum st_status sql_delete(void *impl, uint64_t owner, const char *id)
{
    struct sql_store *s = impl;
    pthread_mutex_lock(&s->lock);
    int64_t size = 0;
    bool found = false;
    const char *sql = "DELETE FROM responses WHERE id = ? AND owner = ? RETURNING size";
    sqlite3_stmt *st = st_state_db_prep(s->db, sql);
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)owner);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            size += sqlite3_column_int64(st, 0);
            found = true;
        }
        if (rc != SQLITE_DONE) {
            log_db_error(s, "cannot delete a response");
            found = false;
        }
        sqlite3_finalize(st);
    }
    if (found) {
        s->n--;
        s->bytes -= (uint64_t)size;
    }
    pthread_mutex_unlock(&s->lock);
    return found ? ST_OK : ST_ERR_NOT_FOUND;
}

static void sql_stats(void *impl, struct st_resp_store_stats *out)
{
    struct sql_store *s = impl;
    pthread_mutex_lock(&s->lock);
    out->entries = s->n;
    out->bytes = s->bytes;
    out->evicted = s->evicted;
    out->budget = s->budget;
    pthread_mutex_unlock(&s->lock);
}

static void sql_free(void *impl)
{
    struct sql_store *s = impl;
    if (!s)
        return;
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static const struct st_resp_store_ops sql_ops = {
    .put = sql_put, .get = sql_get, .del = sql_delete, .stats = sql_stats, .free = sql_free,
};

/* ---- open --------------------------------------------------------------------------- */

/* Read the counts, then prune what a run with a larger budget left. */
static int load(struct sql_store *s)
{
    const char *sql = "SELECT COUNT(*), COALESCE(SUM(size), 0), COALESCE(MAX(used), 0) FROM "
                      "responses";
    sqlite3_stmt *st = st_state_db_prep(s->db, sql);
    if (!st)
        return SQLITE_ERROR;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        s->n = (uint64_t)sqlite3_column_int64(st, 0);
        s->bytes = (uint64_t)sqlite3_column_int64(st, 1);
        s->used = sqlite3_column_int64(st, 2);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return rc;
    uint64_t n = s->n, bytes = s->bytes, evicted = 0;
    rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = make_room(s, 0, &n, &bytes, &evicted);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    s->n = n;
    s->bytes = bytes;
    return SQLITE_OK;
}

enum st_status st_resp_store_open(struct st_state_db *sd, size_t budget, int64_t max_rows,
                                  struct st_resp_store **out, struct st_err *err)
{
    *out = NULL;
    struct sql_store *s = calloc(1, sizeof(*s));
    if (!s || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return st_err_set(err, ST_ERR_NOMEM, "responses store: out of memory");
    }
    s->budget = budget;
    s->max_rows = max_rows > 0 ? max_rows : 1;
    enum st_status rc = st_state_db_connect(sd, &s->db, err);
    if (rc == ST_OK && (sqlite3_exec(s->db, "PRAGMA wal_autocheckpoint=0", NULL, NULL, NULL) !=
                        SQLITE_OK || load(s) != SQLITE_OK))
        rc = st_err_set(err, ST_ERR_IO, "--state-dir: cannot read the stored responses in "
                        "%s: %s", st_state_db_path(sd), sqlite3_errmsg(s->db));
    if (rc != ST_OK) {
        sql_free(s);
        return rc;
    }
    return st_resp_store_wrap(&sql_ops, s, out) == ST_OK
               ? ST_OK
               : st_err_set(err, ST_ERR_NOMEM, "responses store: out of memory");
}
