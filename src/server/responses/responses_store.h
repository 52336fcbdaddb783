/* responses/responses_store.h -- the bounded store of /v1/responses objects
 * (responses_store.c; in memory, or in SQLite under --state-dir): what GET
 * /v1/responses/{id}, its input_items, DELETE and a later request's
 * previous_response_id read (docs/API.md "/v1/responses", "Stored
 * responses").
 *
 * Each entry, keyed by the response id ("resp_..."), holds three JSON
 * texts, copied in and out (no pointer into the store escapes its lock):
 *   input     the request's input items after expansion: the previous
 *             response's input and output items (when it chained one),
 *             then its own input items, each with an "id"; a JSON array
 *   output    the response's output items; a JSON array
 *   response  the whole response object, as GET answers it
 * and its owner, who alone may read, chain or delete it (OpenAI scopes
 * stored responses to the project that made them): 0 when the server has
 * no API keys (every caller the same owner), else the caller's key as
 * st_auth_owner (http/http.h) names it. Another owner's entry is answered
 * as an id never stored, so a foreign id's existence does not show, and
 * a refused get is no use of it.
 * Least-recently-used eviction (a get counts as a use) keeps the sum of
 * the entries' sizes (their texts, id and bookkeeping) within the byte
 * budget (and, in SQLite, the row limit). Thread-safe: one mutex around
 * the table or the connection (a leaf lock: nothing else is taken while
 * it is held).
 *
 * Reference counted: the server holds one reference, and every response
 * that is to be stored holds one from its parse to its end, so an engine
 * thread finishing a response after the server was freed still has a
 * live store to put it into. The last unref frees every entry (in memory)
 * or closes the database (SQLite: the entries stay on disk).
 */
#ifndef STRATA_SERVER_RESPONSES_STORE_H
#define STRATA_SERVER_RESPONSES_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/err.h"
#include "strata/status.h"

struct st_resp_store;

/* /metrics: strata_responses_stored, _stored_bytes, _evicted_total. */
struct st_resp_store_stats {
    uint64_t entries;     /* responses held now */
    uint64_t bytes;       /* their size, as counted against the budget */
    uint64_t evicted;     /* entries dropped to make room, since start */
    uint64_t budget;      /* bytes */
};

/* A new store in memory of at most 'budget' bytes (> 0), one reference (the
 * caller's). ST_ERR_NOMEM. */
ST_MUST_CHECK enum st_status st_resp_store_new(size_t budget, struct st_resp_store **out);
/* The same kept in the --state-dir database (responses_store_sqlite.c):
 * what it holds survives a restart. At most 'budget' bytes and 'max_rows'
 * (> 0) entries; what a previous run left past them is pruned now.
 * ST_ERR_IO (err says why: the database cannot be read or written),
 * ST_ERR_NOMEM. A put that cannot be written (disk full) fails with
 * ST_ERR_IO, the store stays as it was. */
struct st_state_db;
ST_MUST_CHECK enum st_status st_resp_store_open(struct st_state_db *sd, size_t budget,
                                                int64_t max_rows, struct st_resp_store **out,
                                                struct st_err *err);
/* NULL is a no-op for both. */
void st_resp_store_ref(struct st_resp_store *s);
void st_resp_store_unref(struct st_resp_store *s);

/* Store copies of the three texts under 'id', owned by 'owner' (an entry
 * of that id is replaced: ids are the server's random ones), as the most
 * recently used, evicting the least recently used until it fits.
 * ST_ERR_TOO_LONG: the entry alone exceeds the budget (nothing stored,
 * nothing evicted); ST_ERR_NOMEM. */
ST_MUST_CHECK enum st_status st_resp_store_put(struct st_resp_store *s, uint64_t owner,
                                               const char *id,
                                               const char *input, size_t input_len,
                                               const char *output, size_t output_len,
                                               const char *response, size_t response_len);
/* Owned, NUL-terminated copies of the texts of owner's entry 'id' (a NULL
 * out pointer: that text not wanted); the entry becomes the most recently
 * used. ST_ERR_NOT_FOUND (never stored, evicted, deleted, another owner's;
 * s NULL), ST_ERR_NOMEM; on failure every *out is NULL. */
ST_MUST_CHECK enum st_status st_resp_store_get(struct st_resp_store *s, uint64_t owner,
                                               const char *id, char **input, char **output,
                                               char **response);
/* Drop owner's entry 'id'. ST_ERR_NOT_FOUND when there is none (another
 * owner's is left alone). */
ST_MUST_CHECK enum st_status st_resp_store_delete(struct st_resp_store *s, uint64_t owner,
                                                  const char *id);
/* A snapshot of the counters (all zero for NULL). */
void st_resp_store_stats(struct st_resp_store *s, struct st_resp_store_stats *out);

/* What one entry of these text sizes counts against the budget of the
 * in-memory store (the SQLite one counts the texts and 64 bytes). */
size_t st_resp_store_entry_size(size_t id_len, size_t input_len, size_t output_len,
                                size_t response_len);

#endif /* STRATA_SERVER_RESPONSES_STORE_H */
