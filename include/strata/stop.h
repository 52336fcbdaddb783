/* stop.h -- stop-string matching on a UTF-8 text stream.
 *
 * The engine composes: token -> st_detok (valid UTF-8) -> st_stop -> the
 * text sent to the client. The matcher holds back the longest tail of the
 * stream that could still grow into one of the stop strings, so a stop
 * string is never partly sent. On a match, the text before the stop string
 * is released, the stop string and everything after it are dropped, and the
 * matcher stays stopped (later pushes are ignored). Independent of any
 * tokenizer: the simulated engine uses it too.
 *
 * Storage: caller-owned struct; st_stop_init copies the stop strings (owned,
 * released by st_stop_fini). Threads: one stream per object.
 */
#ifndef STRATA_STOP_H
#define STRATA_STOP_H

#include <stdbool.h>
#include <stddef.h>

#include "strata/err.h"
#include "strata/str.h"

#define ST_STOP_MAX 4           /* OpenAI allows up to 4 stop strings */

struct st_stop {
    char          *strs[ST_STOP_MAX];   /* owned copies */
    size_t         lens[ST_STOP_MAX];   /* bytes, > 0 */
    int            n;                   /* stop strings in use */
    struct st_buf  held;                /* tail that may start a stop string */
    int            matched;             /* index into the caller's array, -1 = none */
    int            index[ST_STOP_MAX];  /* caller index of strs[i] */
};

/* Copy 'n' stop strings (views borrowed for the call). Empty strings are
 * ignored. Errors: ST_ERR_INVALID when n > ST_STOP_MAX or n < 0,
 * ST_ERR_NOMEM. On error nothing needs releasing. */
ST_MUST_CHECK
enum st_status st_stop_init(struct st_stop *s, const struct st_str *stops,
                            int n, struct st_err *err);
void st_stop_fini(struct st_stop *s);

/* Feed text; append what is safe to send to 'out'. After a match (see
 * st_stop_matched) the text from the stop string on is dropped and later
 * pushes append nothing. Errors: ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_stop_push(struct st_stop *s, const char *text, size_t len,
                            struct st_buf *out);

/* End of stream without a match: release the held tail to 'out'. */
ST_MUST_CHECK
enum st_status st_stop_flush(struct st_stop *s, struct st_buf *out);

/* Index (into the array given to st_stop_init) of the stop string that
 * matched, or -1. */
int st_stop_matched(const struct st_stop *s);

/* Bytes currently held back. */
size_t st_stop_pending(const struct st_stop *s);

#endif /* STRATA_STOP_H */
