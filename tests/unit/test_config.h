/* test_config.h -- what the two files of the config suite share. */
#ifndef STRATA_TEST_CONFIG_H
#define STRATA_TEST_CONFIG_H

#include <check.h>

#include "strata/config.h"

/* Load 'yaml' as "t.yaml" onto fresh defaults (c is initialised here). */
enum st_status tc_load(struct st_config *c, const char *yaml, struct st_err *err);
/* Loading and resolving 'yaml' fails with a message containing 'want'. */
void tc_expect_error(const char *yaml, const char *want);
/* The command-line tests (test_config_cli.c). */
TCase *config_cli_tcase(void);

#endif /* STRATA_TEST_CONFIG_H */
