/* err.c -- filling struct st_err, and st_panic for broken invariants. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/err.h"
#include "strata/log.h"

enum st_status st_err_set(struct st_err *err, enum st_status code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

enum st_status st_err_errno(struct st_err *err, enum st_status code, const char *fmt, ...)
{
    int saved = errno;
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(err->msg))
        snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(saved));
    err->code = code;
    return code;
}

void st_err_clear(struct st_err *err)
{
    if (!err)
        return;
    err->code = ST_OK;
    err->msg[0] = '\0';
}

_Noreturn void st_panic(const char *what, const char *file, int line)
{
    st_log(ST_LOG_ERROR, "panic", "assertion failed: %s at %s:%d", what, file, line);
    abort();
}
