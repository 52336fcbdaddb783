/* intake.c -- a request's priority (SCHEDULER.md section 2), bands and the
 * names the scheduler prints.
 *
 * Junk never errors: an unparseable header or a non-integral body value
 * counts as absent and the request is served at its default. All pure
 * functions: no lock, any thread.
 */
#include <math.h>
#include <stdint.h>
#include <strings.h>

#include "internal.h"

const char *st_band_name(enum st_band b)
{
    switch (b) {
    case ST_BAND_INTERACTIVE: return "interactive";
    case ST_BAND_NORMAL:      return "normal";
    case ST_BAND_BATCH:       return "batch";
    case ST_BAND_COUNT:       break;
    }
    return "unknown";
}

enum st_band st_band_of(int64_t effective_priority)
{
    if (effective_priority >= 50)
        return ST_BAND_INTERACTIVE;
    if (effective_priority <= -50)
        return ST_BAND_BATCH;
    return ST_BAND_NORMAL;
}

const char *st_outcome_name(enum st_outcome o)
{
    switch (o) {
    case ST_OUTCOME_COMPLETED: return "completed";
    case ST_OUTCOME_CANCELLED: return "cancelled";
    case ST_OUTCOME_REJECTED:  return "rejected";
    case ST_OUTCOME_FAILED:    return "failed";
    case ST_OUTCOME_COUNT:     break;
    }
    return "unknown";
}

const char *st_job_state_name(enum st_job_state s)
{
    switch (s) {
    case ST_JOB_NEW:      return "new";
    case ST_JOB_WAITING:  return "waiting";
    case ST_JOB_ADMITTED: return "admitted";
    case ST_JOB_READING:  return "reading";
    case ST_JOB_PARKED:   return "parked";
    case ST_JOB_DECODING: return "decoding";
    case ST_JOB_DONE:     return "done";
    }
    return "unknown";
}

bool st_sched_policy_parse(const char *name, enum st_sched_policy *out)
{
    if (name && strcasecmp(name, "serial") == 0)
        *out = ST_SCHED_SERIAL;
    else if (name && strcasecmp(name, "fifo") == 0)
        *out = ST_SCHED_FIFO;
    else
        return false;
    return true;
}

const char *st_sched_policy_name(enum st_sched_policy p)
{
    return p == ST_SCHED_FIFO ? "fifo" : "serial";
}

bool st_priority_order_parse(const char *name, enum st_priority_order *out)
{
    if (name && strcasecmp(name, "high-first") == 0)
        *out = ST_PRIORITY_HIGH_FIRST;
    else if (name && strcasecmp(name, "low-first") == 0)
        *out = ST_PRIORITY_LOW_FIRST;
    else
        return false;
    return true;
}

const char *st_priority_order_name(enum st_priority_order o)
{
    return o == ST_PRIORITY_LOW_FIRST ? "low-first" : "high-first";
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* [+-]digits, nothing else, inside int32. */
static bool parse_int32(const char *p, size_t n, int32_t *out)
{
    bool neg = false;
    size_t i = 0;
    int64_t v = 0;

    if (n > 0 && (p[0] == '+' || p[0] == '-')) {
        neg = p[0] == '-';
        i = 1;
    }
    if (i == n)
        return false;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
        if (v > (int64_t)INT32_MAX + 1)
            return false;
    }
    if (neg)
        v = -v;
    if (v > INT32_MAX || v < INT32_MIN)
        return false;
    *out = (int32_t)v;
    return true;
}

bool st_priority_parse_header_ex(struct st_str value, int32_t *out, bool *is_alias)
{
    static const struct { const char *name; int32_t value; } aliases[] = {
        { "interactive", 100 }, { "normal", 0 }, { "batch", -100 },
    };
    const char *p = value.ptr;
    size_t n = value.len;

    if (is_alias)
        *is_alias = false;
    if (!p)
        return false;
    while (n > 0 && is_blank(p[0])) {
        p++;
        n--;
    }
    while (n > 0 && is_blank(p[n - 1]))
        n--;
    for (size_t i = 0; i < ST_ARRAY_LEN(aliases); i++) {
        if (st_str_ieq_c((struct st_str){ p, n }, aliases[i].name)) {
            *out = aliases[i].value;
            if (is_alias)
                *is_alias = true;
            return true;
        }
    }
    return parse_int32(p, n, out);
}

bool st_priority_parse_header(struct st_str value, int32_t *out)
{
    return st_priority_parse_header_ex(value, out, NULL);
}

bool st_priority_from_json(bool is_number, double value, int32_t *out)
{
    if (!is_number || !isfinite(value) || value != trunc(value))
        return false;
    if (value < (double)INT32_MIN || value > (double)INT32_MAX)
        return false;
    *out = (int32_t)value;
    return true;
}

int32_t st_priority_resolve(const struct st_priority_inputs *in)
{
    bool low = in->order == ST_PRIORITY_LOW_FIRST;
    int64_t v = 0;

    if (in->has_body)
        v = low ? -(int64_t)in->body : in->body;
    else if (in->has_header)
        v = (low && !in->has_alias) ? -(int64_t)in->header : in->header;
    else if (in->has_key_default)
        v = in->key_default;
    if (in->has_key_max && v > in->key_max)
        v = in->key_max;
    v += in->model_priority;
    if (v > INT32_MAX)
        v = INT32_MAX;
    if (v < INT32_MIN)
        v = INT32_MIN;
    return (int32_t)v;
}
