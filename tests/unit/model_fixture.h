/* model_fixture.h -- a synthetic model file for a test: `strata make-model`
 * run in-process (include/strata/make_model.h), failing the test when it
 * cannot be made. Header-only (static inline), for the suites that link
 * st_model. */
#ifndef STRATA_TEST_MODEL_FIXTURE_H
#define STRATA_TEST_MODEL_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "strata/make_model.h"

/* Write <dir>/<preset>-<quant>[-mtp]-<seed>.gguf and its path into path
 * (cap bytes); returns path. */
static inline const char *fixture_make_model(char *path, size_t cap, const char *dir,
                                             const char *preset, const char *quant,
                                             uint64_t seed, bool mtp)
{
    snprintf(path, cap, "%s/%s-%s%s-%llu.gguf", dir, preset, quant, mtp ? "-mtp" : "",
             (unsigned long long)seed);
    struct st_make_model_opts o = { .out_path = path, .preset = preset, .quant = quant,
                                    .seed = seed, .mtp = mtp };
    struct st_err err = { 0 };
    ck_assert_msg(st_make_model(&o, &err) == ST_OK, "make-model %s %s: %s", preset, quant,
                  err.msg);
    return path;
}

#endif /* STRATA_TEST_MODEL_FIXTURE_H */
