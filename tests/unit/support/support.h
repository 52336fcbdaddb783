/* support.h -- helpers shared by the Check suites. */
#ifndef STRATA_TEST_SUPPORT_H
#define STRATA_TEST_SUPPORT_H

#include <check.h>
#include <stdbool.h>
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
/* The whole file at 'path' as a NUL-terminated string (owned, free()); NULL
 * when it cannot be read. */
char *support_read_file(const char *path);
const char *support_binary_dir(void);

/* The real Qwen3 tokenizer.json that the tokenizer_ref set-up installs in
 * the build tree, or NULL when it is not there (static storage). */
const char *support_qwen3_tokenizer(void);

/* For main(): true when this run is the ctest entry of the tcases tagged
 * 'tag' (st_add_check_test INPUT_CASES) and 'have' is false; then it has
 * said on stderr what is missing, and main returns 77 (skipped). */
bool support_input_missing(const char *tag, bool have, const char *what);

#endif /* STRATA_TEST_SUPPORT_H */
