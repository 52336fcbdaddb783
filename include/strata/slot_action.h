/* slot_action.h -- llama-server's POST /slots/{id}?action=save|restore|erase
 * on the engine pool (src/engine/slot_op.c; docs/API.md "/slots").
 *
 * A slot's prompt cache (the token ids its KV keeps for the next request,
 * their KV rows, a recurrent model's state) is the engine's: the action is
 * queued to the slot's engine and runs on its thread between two steps;
 * the caller waits for it. A slot that holds a request is never touched.
 */
#ifndef STRATA_SLOT_ACTION_H
#define STRATA_SLOT_ACTION_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/compiler.h"
#include "strata/err.h"

enum st_slot_action {
    ST_SLOT_ACTION_SAVE,      /* the cache to the file 'path' */
    ST_SLOT_ACTION_RESTORE,   /* the file 'path' into the (idle) slot's cache */
    ST_SLOT_ACTION_ERASE,     /* empty the cache */
};

struct st_slot_action_result {
    int64_t n_tokens;         /* tokens saved, restored or erased */
    int64_t n_bytes;          /* bytes written or read */
    double  ms;               /* the action's time on the engine thread */
    bool    busy;             /* refused: the slot holds a request (HTTP 409) */
};

struct st_engine_pool;

/* Run 'action' on slot 'id' (its index in the list st_engine_pool_slots
 * gives, across engines) and wait for it. ST_ERR_NOT_FOUND: no such slot;
 * ST_ERR_LOADING: its engine has no model loaded; ST_ERR_UNSUPPORTED: the
 * runner cannot save or restore (the sim); ST_ERR_INVALID: busy (res->busy)
 * or a file that does not fit (another model, truncated); ST_ERR_IO: the
 * file. A failed restore leaves the slot's cache empty. Thread: any but an
 * engine's (an HTTP thread). */
ST_MUST_CHECK
enum st_status st_engine_pool_slot_action(struct st_engine_pool *p, int32_t id,
                                          enum st_slot_action action, const char *path,
                                          struct st_slot_action_result *res, struct st_err *err);

#endif /* STRATA_SLOT_ACTION_H */
