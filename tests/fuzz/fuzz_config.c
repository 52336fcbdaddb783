/* fuzz_config.c -- libFuzzer target for the YAML config loader.
 *
 * Any bytes go through st_config_load_buffer() and, when they load,
 * st_config_resolve(); then everything is freed. What it finds: crashes,
 * UB and leaks (ASan/UBSan are on), libyaml events not deleted on an error
 * path, unbounded recursion on deep nesting, and a status that is neither
 * ST_OK nor a config/memory error. Seed corpus: configs/ (the example).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strata/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_config c;
    struct st_err err = { 0 };
    enum st_status rc;

    st_config_init(&c);
    rc = st_config_load_buffer(&c, "fuzz.yaml", (const char *)data, size, &err);
    if (rc == ST_OK)
        rc = st_config_resolve(&c, &err);
    if (rc != ST_OK && rc != ST_ERR_BAD_CONFIG && rc != ST_ERR_NOMEM)
        abort();
    /* Every error message names its source. */
    if (rc == ST_ERR_BAD_CONFIG && strncmp(err.msg, "fuzz.yaml:", 10) != 0)
        abort();
    st_config_fini(&c);
    return 0;
}
