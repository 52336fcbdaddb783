/* log.c -- levelled text/JSON log lines on stderr, one write(2) per line.
 *
 * The text format escapes every control byte of a message and of a value
 * (\n, \r, \t, \xNN): strings from requests (a model name, a role)
 * reach the log, and a raw newline in one would forge a whole line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "strata/log.h"
#include "strata/out.h"
#include "strata/str.h"

static enum st_log_level log_level = ST_LOG_INFO;
static enum st_log_format log_format = ST_LOG_TEXT;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void st_log_set_level(enum st_log_level level) { log_level = level; }
void st_log_set_format(enum st_log_format format) { log_format = format; }
bool st_log_enabled(enum st_log_level level) { return level >= log_level; }

bool st_log_parse_level(const char *name, enum st_log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum st_log_level)i;
            return true;
        }
    }
    return false;
}

static void timestamp(char *out, size_t cap)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ts.tv_nsec / 1000000) % 1000);
}

static void emit(struct st_buf *line)
{
    if (st_buf_append(line, "\n", 1) != ST_OK)
        return;
    size_t off = 0;
    while (off < line->len) {
        ssize_t n = write(STDERR_FILENO, line->data + off, line->len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
}

/* 's' with control bytes and DEL escaped; in a quoted value (quoted) also
 * '"' and '\\', so the quotes still delimit it. */
static void text_escaped(struct st_out *o, const char *s, bool quoted)
{
    for (const char *p = s; *p && st_out_ok(o); p++) {
        unsigned char ch = (unsigned char)*p;
        size_t run = 0;
        while (p[run] && (unsigned char)p[run] >= 0x20 && p[run] != 0x7f &&
               !(quoted && (p[run] == '"' || p[run] == '\\')))
            run++;
        if (run) {
            st_out_raw(o, p, run);
            p += run - 1;
        } else if (ch == '\n') {
            st_out_text(o, "\\n");
        } else if (ch == '\r') {
            st_out_text(o, "\\r");
        } else if (ch == '\t') {
            st_out_text(o, "\\t");
        } else if (ch == '"' || ch == '\\') {
            char esc[2] = { '\\', (char)ch };
            st_out_raw(o, esc, 2);
        } else {
            st_out_printf(o, "\\x%02x", ch);
        }
    }
}

/* s as a JSON string literal, bytes >= 0x80 as they are (st_buf_json_str). */
static void json_str(struct st_out *o, const char *s)
{
    if (st_out_ok(o))
        st_out_check(o, st_buf_json_str(o->buf, s, strlen(s)));
}

/* The common head of a line: time, level, module; then the message. A head
 * cut short by memory still goes out: its status is not kept. */
static void begin_line(struct st_buf *line, enum st_log_level level, const char *module,
                       const char *msg)
{
    char ts[64];
    struct st_out o;
    timestamp(ts, sizeof(ts));
    st_out_init(&o, line);
    if (log_format == ST_LOG_JSON) {
        st_out_printf(&o, "{\"time\":\"%s\",\"level\":\"%s\",\"module\":", ts,
                      level_names[level]);
        json_str(&o, module);
        st_out_text(&o, ",\"msg\":");
        json_str(&o, msg);
    } else {
        st_out_printf(&o, "%s %-5s %-6s ", ts, level_names[level], module);
        text_escaped(&o, msg, false);
    }
}

void st_log(enum st_log_level level, const char *module, const char *fmt, ...)
{
    if (!st_log_enabled(level))
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    struct st_buf line;
    st_buf_init(&line);
    begin_line(&line, level, module, msg);
    if (log_format != ST_LOG_JSON || st_buf_append(&line, "}", 1) == ST_OK)
        emit(&line);
    st_buf_fini(&line);
}

void st_log_kv(enum st_log_level level, const char *module, const char *msg, int n,
               const char *const *keys, const char *const *vals, const bool *numeric)
{
    if (!st_log_enabled(level))
        return;
    struct st_buf line;
    st_buf_init(&line);
    begin_line(&line, level, module, msg);
    struct st_out o;
    st_out_init(&o, &line);
    for (int i = 0; i < n && st_out_ok(&o); i++) {
        const char *v = vals[i] ? vals[i] : "";
        if (log_format == ST_LOG_JSON) {
            st_out_text(&o, ",");
            json_str(&o, keys[i]);
            st_out_text(&o, ":");
            if (numeric && numeric[i])
                st_out_text(&o, v);
            else
                json_str(&o, v);
        } else {
            bool quote = strpbrk(v, " \"\\") != NULL || *v == '\0';
            st_out_printf(&o, " %s=%s", keys[i], quote ? "\"" : "");
            text_escaped(&o, v, quote);
            if (quote)
                st_out_text(&o, "\"");
        }
    }
    if (log_format == ST_LOG_JSON)
        st_out_text(&o, "}");
    if (st_out_ok(&o))
        emit(&line);
    st_buf_fini(&line);
}
