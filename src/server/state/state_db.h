/* state/state_db.h -- the SQLite database under --state-dir (docs/OPERATIONS.md
 * "State that survives a restart"): one file, DIR/strata.db, in WAL mode,
 * holding the stored /v1/responses (responses/responses_store_sqlite.c)
 * and the activity log (activity_db.c). Each of them opens its own
 * connection to it (WAL: readers do not wait for the writer).
 *
 * Opening checks the file whole (PRAGMA quick_check) and writes to it once,
 * so a corrupt file, a file that is not a database, an unwritable
 * directory or file is a start-up error with one line that names it,
 * never a crash later.
 *
 * Owners: a stored row names the API key that made it by a tag that is
 * the same after a restart (st_state_db_owner): a keyed hash (SipHash-2-4)
 * of the key under a random salt kept in the database, so the file holds
 * no key, and reordering or removing keys in the config never hands one
 * key's rows to another.
 */
#ifndef STRATA_SERVER_STATE_DB_H
#define STRATA_SERVER_STATE_DB_H

#include <stdint.h>

#include "strata/compiler.h"
#include "strata/err.h"

struct sqlite3;
struct sqlite3_stmt;
struct st_state_db;

/* The database file's name inside the state directory, and the lock
 * file's that keeps a second server out of it while one has it open. */
#define ST_STATE_DB_FILE "strata.db"
#define ST_STATE_LOCK_FILE "strata.lock"

/* Make 'dir' when missing (0700), lock it (DIR/strata.lock, until
 * st_state_db_free), open DIR/strata.db (made when missing), check it,
 * create the tables, read (or make) the owner salt.
 * ST_ERR_IO with a message naming the directory or file and why (cannot
 * create, not a directory, in use by another server, read-only, corrupt,
 * not a database, from a newer Strata); ST_ERR_NOMEM. */
ST_MUST_CHECK enum st_status st_state_db_open(const char *dir, struct st_state_db **out,
                                              struct st_err *err);
void st_state_db_free(struct st_state_db *sd);   /* NULL: no-op */

/* A new connection to the database (WAL, a busy timeout, serialized
 * threading mode); close it with sqlite3_close. ST_ERR_IO, with why. */
ST_MUST_CHECK enum st_status st_state_db_connect(const struct st_state_db *sd,
                                                 struct sqlite3 **out, struct st_err *err);

/* A prepared statement of 'sql' on db (finalize it with sqlite3_finalize);
 * NULL when it does not prepare. */
struct sqlite3_stmt *st_state_db_prep(struct sqlite3 *db, const char *sql);

/* The stable owner tag of an API key: never 0 (no keys) nor UINT64_MAX
 * (http/access.h's ST_OWNER_AMBIGUOUS). */
uint64_t st_state_db_owner(const struct st_state_db *sd, const char *key);

/* The database file's path (for messages). */
const char *st_state_db_path(const struct st_state_db *sd);

#endif /* STRATA_SERVER_STATE_DB_H */
