/* status.h -- the one status table every fallible function returns.
 *
 * Generated from one X-macro (libuv style) so the enum, the names and the
 * messages never drift apart. The mapping to HTTP lives in the server
 * (server/errors.c), as a switch without default so -Wswitch flags a new
 * status that was not mapped.
 */
#ifndef STRATA_STATUS_H
#define STRATA_STATUS_H

#define ST_STATUS_MAP(X)                                              \
    X(OK,              "ok")                                          \
    X(ERR_NOMEM,       "out of memory")                               \
    X(ERR_IO,          "I/O error")                                   \
    X(ERR_BAD_GGUF,    "malformed GGUF file")                         \
    X(ERR_BAD_MODEL,   "model does not match its architecture")       \
    X(ERR_BAD_CONFIG,  "invalid configuration")                       \
    X(ERR_INVALID,     "invalid request")                             \
    X(ERR_NOT_FOUND,   "not found")                                   \
    X(ERR_AUTH,        "invalid API key")                             \
    X(ERR_TOO_LONG,    "prompt does not fit the context")             \
    X(ERR_QUEUE_FULL,  "the waiting queue is full")                   \
    X(ERR_LOADING,     "the model is loading")                        \
    X(ERR_CANCELLED,   "request cancelled")                           \
    X(ERR_SHUTDOWN,    "server is shutting down")                     \
    X(ERR_DEVICE,      "device error")                                \
    X(ERR_DEVICE_OOM,  "device out of memory")                        \
    X(ERR_UNSUPPORTED, "not supported")                               \
    X(ERR_INTERNAL,    "internal error")

enum st_status {
#define ST_STATUS_ENUM(name, msg) ST_##name,
    ST_STATUS_MAP(ST_STATUS_ENUM)
#undef ST_STATUS_ENUM
    ST_STATUS_COUNT
};

/* Return the status of 'call' unless it is ST_OK, so that a run of
 * fallible steps reads as a list: ST_TRY(read_a(...)); ST_TRY(read_b(...)); */
#define ST_TRY(call)                 \
    do {                             \
        enum st_status rc_ = (call); \
        if (rc_ != ST_OK)            \
            return rc_;              \
    } while (0)

/* "ERR_NOMEM"; static storage. */
const char *st_status_name(enum st_status s);
/* "out of memory"; static storage. */
const char *st_status_msg(enum st_status s);

#endif /* STRATA_STATUS_H */
