/* state/activity_db.h -- the activity log's table in the --state-dir
 * database (state_db.h): finished dispatch records as /api/activity shows
 * them (one JSON object each), by id, with the owner tag of the key that
 * made the request, so /api/activity keeps its history across restarts and
 * still shows each key only its own (docs/SECURITY.md "Per-key views").
 * At most max_rows records; the oldest go first. Thread-safe (one mutex
 * around one connection).
 */
#ifndef STRATA_SERVER_STATE_ACTIVITY_DB_H
#define STRATA_SERVER_STATE_ACTIVITY_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/err.h"
#include "strata/str.h"

struct st_state_db;
struct st_activity_db;

/* Open the table (made by st_state_db_open) and prune it to max_rows (> 0).
 * ST_ERR_IO with why, ST_ERR_NOMEM. */
ST_MUST_CHECK enum st_status st_activity_db_open(struct st_state_db *sd, int64_t max_rows,
                                                 struct st_activity_db **out,
                                                 struct st_err *err);
void st_activity_db_close(struct st_activity_db *a);   /* NULL: no-op */

/* The largest id held (0: none): where this run's ids continue. */
uint64_t st_activity_db_last_id(struct st_activity_db *a);

/* Keep record 'id' (replacing one of that id), the oldest pruned past
 * max_rows. ST_ERR_IO when it cannot be written (logged by the caller). */
ST_MUST_CHECK enum st_status st_activity_db_add(struct st_activity_db *a, uint64_t id,
                                                uint64_t owner, const char *rec, size_t len);

/* The newest 'max' records with an id below 'before', owner's only unless
 * 'all', appended to 'out' oldest first, separated by commas; *n how many.
 * ST_ERR_IO, ST_ERR_NOMEM (out may hold a part). */
ST_MUST_CHECK enum st_status st_activity_db_read(struct st_activity_db *a, uint64_t before,
                                                 bool all, uint64_t owner, size_t max,
                                                 struct st_buf *out, size_t *n);

/* Copy what the WAL holds (every connection's commits) into the database
 * file, as far as readers allow (a passive checkpoint: it waits for no
 * one, but syncs the file). For a background thread. */
void st_activity_db_checkpoint(struct st_activity_db *a);

#endif /* STRATA_SERVER_STATE_ACTIVITY_DB_H */
