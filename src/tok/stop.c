/* stop.c -- stop strings on a text stream (see stop.h).
 *
 * Each push works on held + new text: the earliest occurrence of any stop
 * string ends the stream there; otherwise the longest tail that is a proper
 * prefix of some stop string is held back and the rest released. Held text
 * is shorter than the longest stop string, so each push costs
 * O((held + len) * total stop bytes) in the worst case and usually one
 * memmem per stop string.
 */
#include <stdlib.h>
#include <string.h>

#include "strata/stop.h"

enum st_status st_stop_init(struct st_stop *s, const struct st_str *stops,
                            int n, struct st_err *err)
{
    int i;

    memset(s, 0, sizeof(*s));
    st_buf_init(&s->held);
    s->matched = -1;
    if (n < 0 || n > ST_STOP_MAX)
        return st_err_set(err, ST_ERR_INVALID, "at most %d stop strings (got %d)",
                          ST_STOP_MAX, n);
    for (i = 0; i < n; i++) {
        if (stops[i].len == 0)
            continue;
        s->strs[s->n] = st_str_dup(stops[i]);
        if (!s->strs[s->n]) {
            st_stop_fini(s);
            return st_err_set(err, ST_ERR_NOMEM, "stop strings: out of memory");
        }
        s->lens[s->n] = stops[i].len;
        s->index[s->n++] = i;
    }
    return ST_OK;
}

void st_stop_fini(struct st_stop *s)
{
    int i;

    for (i = 0; i < s->n; i++)
        free(s->strs[i]);
    st_buf_fini(&s->held);
    memset(s, 0, sizeof(*s));
    s->matched = -1;
}

int st_stop_matched(const struct st_stop *s)
{
    return s->matched;
}

size_t st_stop_pending(const struct st_stop *s)
{
    return s->held.len;
}

/* Longest k < len(stop) such that buf ends with the first k bytes of a
 * stop string. */
static size_t partial_tail(const struct st_stop *s, const char *buf, size_t n)
{
    size_t best = 0, k;
    int i;

    for (i = 0; i < s->n; i++) {
        for (k = ST_MIN(s->lens[i] - 1, n); k > best; k--) {
            if (memcmp(buf + n - k, s->strs[i], k) == 0) {
                best = k;
                break;
            }
        }
    }
    return best;
}

enum st_status st_stop_push(struct st_stop *s, const char *text, size_t len,
                            struct st_buf *out)
{
    enum st_status rc;
    size_t first = SIZE_MAX, keep;
    int i, which = -1;

    if (s->matched >= 0)
        return ST_OK;
    if (s->n == 0)
        return st_buf_append(out, text, len);
    rc = st_buf_append(&s->held, text, len);
    if (rc != ST_OK)
        return rc;
    for (i = 0; i < s->n; i++) {
        const char *hit = memmem(s->held.data, s->held.len, s->strs[i], s->lens[i]);
        if (hit && (size_t)(hit - s->held.data) < first) {
            first = (size_t)(hit - s->held.data);
            which = i;
        }
    }
    if (which >= 0) {
        s->matched = s->index[which];
        rc = st_buf_append(out, s->held.data, first);
        st_buf_reset(&s->held);
        return rc;
    }
    keep = partial_tail(s, s->held.data, s->held.len);
    rc = st_buf_append(out, s->held.data, s->held.len - keep);
    if (rc == ST_OK) {
        memmove(s->held.data, s->held.data + s->held.len - keep, keep);
        s->held.len = keep;
        s->held.data[keep] = '\0';
    }
    return rc;
}

enum st_status st_stop_flush(struct st_stop *s, struct st_buf *out)
{
    enum st_status rc = ST_OK;

    if (s->matched < 0 && s->held.len)
        rc = st_buf_append(out, s->held.data, s->held.len);
    st_buf_reset(&s->held);
    return rc;
}
