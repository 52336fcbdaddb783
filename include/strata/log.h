/* log.h -- levelled logging, text or JSON lines, to stderr.
 *
 * Library code logs only through st_log(), never printf. One call = one
 * line, written with a single write(2) so lines from threads never mix.
 * Thread: any.
 */
#ifndef STRATA_LOG_H
#define STRATA_LOG_H

#include <stdbool.h>

#include "strata/compiler.h"

enum st_log_level {
    ST_LOG_DEBUG,
    ST_LOG_INFO,
    ST_LOG_WARN,
    ST_LOG_ERROR,
};

enum st_log_format {
    ST_LOG_TEXT,
    ST_LOG_JSON,
};

/* Process-wide settings; call before starting threads. */
void st_log_set_level(enum st_log_level level);
void st_log_set_format(enum st_log_format format);
/* Returns false for an unknown name ("debug", "info", "warn", "error"). */
bool st_log_parse_level(const char *name, enum st_log_level *out);

bool st_log_enabled(enum st_log_level level);

/* 'module' is a short tag ("sched", "http"). */
void st_log(enum st_log_level level, const char *module, const char *fmt, ...)
    ST_PRINTF(3, 4);

/* A structured line: 'msg' plus pre-rendered key/value pairs. In text
 * format it prints "msg k1=v1 k2=v2"; in JSON format {"msg":..,"k1":"v1"}.
 * keys[i]/vals[i] are borrowed for the call. Numbers are passed as text and
 * emitted unquoted in JSON when 'numeric[i]' is true. */
void st_log_kv(enum st_log_level level, const char *module, const char *msg,
               int n, const char *const *keys, const char *const *vals,
               const bool *numeric);

#endif /* STRATA_LOG_H */
