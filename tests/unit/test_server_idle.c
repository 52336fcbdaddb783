/* test_server_idle.c -- when the server gives memory back (src/server/
 * idle.c st_idle_should_trim, issue 25): only after work, only once the
 * server has been quiet for ST_IDLE_TICKS ticks in a row, once per quiet
 * spell, and not again within ST_IDLE_GAP_TICKS of the last trim; never
 * while busy. And malloc_trim gives back what a freed spike left. */
#include <check.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/daemon.h"
#include "strata/rss.h"
#include "support.h"

/* Ticks until the first trim (at most 'max'); -1 none. */
static int ticks_to_trim(struct st_idle *s, bool quiet, uint64_t work, int max)
{
    for (int t = 1; t <= max; t++)
        if (st_idle_should_trim(s, quiet, work))
            return t;
    return -1;
}

START_TEST(test_idle_trims_once_after_work)
{
    struct st_idle s = { 0 };
    ck_assert_int_eq(ticks_to_trim(&s, true, 0, 1000), -1);            /* no work yet */
    ck_assert_int_eq(ticks_to_trim(&s, false, 5, 1000), -1);           /* busy */
    ck_assert_int_eq(ticks_to_trim(&s, true, 5, 1000), ST_IDLE_TICKS); /* quiet 1 s: trim */
    ck_assert_int_eq(ticks_to_trim(&s, true, 5, 1000), -1);            /* once a spell */
}
END_TEST

START_TEST(test_idle_busy_resets_the_quiet_spell)
{
    struct st_idle s = { 0 };
    for (int i = 0; i < 5; i++) {   /* a request every 0.5 s: never a quiet second */
        ck_assert_int_eq(ticks_to_trim(&s, true, (uint64_t)i + 1, ST_IDLE_TICKS - 1), -1);
        ck_assert(!st_idle_should_trim(&s, false, (uint64_t)i + 1));
    }
    ck_assert_int_eq(ticks_to_trim(&s, true, 6, 1000), ST_IDLE_TICKS);
}
END_TEST

START_TEST(test_idle_gap_between_trims)
{
    struct st_idle s = { 0 };
    ck_assert_int_eq(ticks_to_trim(&s, true, 1, 1000), ST_IDLE_TICKS);
    /* new work (a probe: one busy tick) and quiet again: the next trim
     * comes ST_IDLE_GAP_TICKS ticks after the first */
    ck_assert(!st_idle_should_trim(&s, false, 2));
    int t = ticks_to_trim(&s, true, 2, 10 * ST_IDLE_GAP_TICKS);
    ck_assert_int_eq(t, ST_IDLE_GAP_TICKS - 1);
}
END_TEST

/* The effect counted on: blocks a second thread freed in the middle of its
 * arena come back to the system only through malloc_trim. */
static void *spike(void *arg)
{
    enum { N = 2000 };
    char **p = malloc(N * sizeof(*p));
    for (int i = 0; i < N; i++) {
        p[i] = malloc(16 << 10);
        memset(p[i], 1, 16 << 10);
    }
    for (int i = 0; i < N - 1; i++)   /* the last stays: the heap's top is in use */
        free(p[i]);
    *(char **)arg = p[N - 1];
    free(p);
    return NULL;
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static long resident_kib(void)
{
    int64_t rss = st_rss_bytes();
    ck_assert_int_gt(rss, 0);
    return (long)(rss / 1024);
}

START_TEST(test_idle_trim_gives_back_a_spike)
{
    if (SANITIZED)
        return;   /* ASan's allocator is not glibc's */
    pthread_t th;
    char *last = NULL;
    ck_assert_int_eq(pthread_create(&th, NULL, spike, &last), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    long held = resident_kib();
    malloc_trim(0);
    long after = resident_kib();
    ck_assert_msg(after < held - 16 * 1024, "RSS %ld -> %ld KiB: the 31 MiB freed stayed", held,
                  after);
    free(last);
}
END_TEST

static Suite *idle_suite(void)
{
    Suite *s = suite_create("server_idle");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_idle_trims_once_after_work);
    tcase_add_test(tc, test_idle_busy_resets_the_quiet_spell);
    tcase_add_test(tc, test_idle_gap_between_trims);
    tcase_add_test(tc, test_idle_trim_gives_back_a_spike);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return support_run_suite(idle_suite(), CK_FORK);
}
