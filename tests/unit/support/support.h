/* support.h -- helpers shared by the Check suites. */
#ifndef STRATA_TEST_SUPPORT_H
#define STRATA_TEST_SUPPORT_H

#include <check.h>
#include <stddef.h>

/* Run every test of 's' with the given fork mode; returns the process exit
 * status (0 when all passed). Honours CK_RUN_CASE etc. as Check does. */
int support_run_suite(Suite *s, enum fork_status fork);

/* A fresh private directory under $TMPDIR for this test; written to 'out'.
 * Removed (recursively) by support_rmtree. */
void support_tmpdir(char *out, size_t cap);
void support_rmtree(const char *path);

/* $STRATA_SOURCE_DIR / $STRATA_BINARY_DIR as set by ctest ("." if unset). */
const char *support_source_dir(void);
const char *support_binary_dir(void);

#endif /* STRATA_TEST_SUPPORT_H */
