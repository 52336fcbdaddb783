/* random_id.c -- random bytes for the ids the server makes up (request,
 * tool-call, response and item ids). getrandom() when the kernel has
 * entropy; before that (early boot) the clock and a process-wide counter,
 * mixed, which are still unique per process but guessable (a stored
 * response's id is all a GET needs: docs/API.md "Stored responses").
 */
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

#include "server/http/http.h"

void st_random_id_bytes(unsigned char *out, size_t n)
{
    if (getrandom(out, n, GRND_NONBLOCK) == (ssize_t)n)
        return;
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    x ^= (uint64_t)atomic_fetch_add(&counter, 1) * 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;   /* an LCG step per byte */
        out[i] = (unsigned char)(x >> 56);
    }
}

void st_random_hex_id(char *out, size_t cap, const char *prefix, size_t n_bytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[32];
    n_bytes = n_bytes < sizeof(b) ? n_bytes : sizeof(b);
    st_random_id_bytes(b, n_bytes);
    int n = snprintf(out, cap, "%s", prefix);
    size_t at = n < 0 ? 0 : (size_t)n;
    for (size_t i = 0; i < n_bytes && at + 2 < cap; i++) {
        out[at++] = hex[b[i] >> 4];
        out[at++] = hex[b[i] & 15];
    }
    if (at < cap)
        out[at] = '\0';
}
