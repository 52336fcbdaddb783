/* clock.c -- the real monotonic clock and the manual clock for tests. */
#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include "strata/clock.h"

static int64_t real_now_ns(const struct st_clock *c)
{
    struct timespec ts;
    (void)c;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * ST_NS_PER_SEC + ts.tv_nsec;
}

static void real_sleep_until(const struct st_clock *c, int64_t deadline_ns)
{
    struct timespec ts = {
        .tv_sec = (time_t)(deadline_ns / ST_NS_PER_SEC),
        .tv_nsec = (long)(deadline_ns % ST_NS_PER_SEC),
    };
    (void)c;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static const struct st_clock real_clock = {
    .now_ns = real_now_ns,
    .sleep_until = real_sleep_until,
    .ctx = NULL,
};

const struct st_clock *st_clock_real(void)
{
    return &real_clock;
}

static int64_t manual_now_ns(const struct st_clock *c)
{
    struct st_clock_manual *m = c->ctx;
    return __atomic_load_n(&m->now_ns, __ATOMIC_SEQ_CST);
}

/* A manual clock never blocks: sleeping moves time forward to the deadline. */
static void manual_sleep_until(const struct st_clock *c, int64_t deadline_ns)
{
    struct st_clock_manual *m = c->ctx;
    int64_t cur = __atomic_load_n(&m->now_ns, __ATOMIC_SEQ_CST);
    while (cur < deadline_ns &&
           !__atomic_compare_exchange_n(&m->now_ns, &cur, deadline_ns, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
}

void st_clock_manual_init(struct st_clock_manual *m, int64_t start_ns)
{
    m->clock.now_ns = manual_now_ns;
    m->clock.sleep_until = manual_sleep_until;
    m->clock.ctx = m;
    m->now_ns = start_ns;
}

void st_clock_manual_advance(struct st_clock_manual *m, int64_t delta_ns)
{
    __atomic_add_fetch(&m->now_ns, delta_ns, __ATOMIC_SEQ_CST);
}

int64_t st_unix_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}
