/* clock.h -- a clock the code is handed, so tests can control time.
 *
 * The server uses st_clock_real(); tests use a manual clock whose now_ns
 * only moves when the test (or a sleep through the clock) moves it. Every
 * time in the scheduler and the engines comes from one of these.
 */
#ifndef STRATA_CLOCK_H
#define STRATA_CLOCK_H

#include <stdint.h>

struct st_clock {
    /* Nanoseconds since an arbitrary fixed epoch; monotonic. */
    int64_t (*now_ns)(const struct st_clock *c);
    /* Block until now_ns() >= deadline_ns. A manual clock jumps instead. */
    void (*sleep_until)(const struct st_clock *c, int64_t deadline_ns);
    void *ctx;
};

/* The process-wide monotonic clock (CLOCK_MONOTONIC). Static storage. */
const struct st_clock *st_clock_real(void);

/* A manual clock: time moves only through st_clock_manual_advance() or
 * sleep_until(). Thread-safe (atomic). */
struct st_clock_manual {
    struct st_clock clock;   /* pass &m.clock to the code under test */
    int64_t         now_ns;  /* accessed atomically */
};

void st_clock_manual_init(struct st_clock_manual *m, int64_t start_ns);
void st_clock_manual_advance(struct st_clock_manual *m, int64_t delta_ns);

static inline int64_t st_clock_now(const struct st_clock *c) { return c->now_ns(c); }

#define ST_NS_PER_MS  INT64_C(1000000)
#define ST_NS_PER_SEC INT64_C(1000000000)

/* Wall-clock seconds since the Unix epoch (for "created" fields). */
int64_t st_unix_seconds(void);

#endif /* STRATA_CLOCK_H */
