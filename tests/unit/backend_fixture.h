/* backend_fixture.h -- what the backend op suites (test_backend_sample.c,
 * test_backend_score.c) share: one CPU backend per test, opened in the
 * Check fixture, and a dense tensor made and filled in one call.
 * Header-only. */
#ifndef STRATA_TEST_BACKEND_FIXTURE_H
#define STRATA_TEST_BACKEND_FIXTURE_H

#include <check.h>

#include "strata/backend.h"

/* The backend under test: opened by backend_open in the suite's checked
 * fixture, closed by backend_close. */
static struct st_backend *be;

/* n_threads workers including the caller (1 keeps every row on the
 * calling thread; 2 spreads rows over the pool). */
static inline void backend_open(int32_t n_threads)
{
    struct st_backend_config cfg = { n_threads, 0 };
    struct st_err err;
    ck_assert_int_eq(st_backend_open("cpu", &cfg, &be, &err), ST_OK);
}

static inline void backend_close(void)
{
    st_backend_close(be);
    be = NULL;
}

/* A [ne1, ne0] tensor of type t, filled from 'data' when it is not NULL
 * (st_tensor_nbytes bytes). Owned by the caller: st_backend_release. */
static inline struct st_tensor tensor_of(enum st_dtype t, int64_t ne0, int64_t ne1,
                                         const void *data)
{
    struct st_tensor out;
    struct st_err err;
    ck_assert_int_eq(st_backend_alloc(be, t, (int64_t[4]){ ne0, ne1, 1, 1 }, &out, &err), ST_OK);
    if (data)
        ck_assert_int_eq(st_backend_write(be, &out, 0, data, st_tensor_nbytes(&out), &err), ST_OK);
    return out;
}

#endif
