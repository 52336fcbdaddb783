/* err.h -- a status plus a message the user can act on.
 *
 * Passed as an explicit, optional (may be NULL) out-parameter: no global
 * "last error". The message is fixed-size so filling it never allocates.
 */
#ifndef STRATA_ERR_H
#define STRATA_ERR_H

#include "strata/compiler.h"
#include "strata/status.h"

struct st_err {
    enum st_status code;
    char           msg[256];
};

/* Record code + formatted message in *err (if err != NULL) and return code,
 * so a caller can write: return st_err_set(err, ST_ERR_BAD_GGUF, "...");
 * Thread: any. */
enum st_status st_err_set(struct st_err *err, enum st_status code,
                          const char *fmt, ...) ST_PRINTF(3, 4);

/* Same, appending ": strerror(errno)". Call right after the failing call. */
enum st_status st_err_errno(struct st_err *err, enum st_status code,
                            const char *fmt, ...) ST_PRINTF(3, 4);

/* Reset to ST_OK with an empty message. NULL is a no-op. */
void st_err_clear(struct st_err *err);

#endif /* STRATA_ERR_H */
