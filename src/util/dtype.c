/* dtype.c -- the block size table of ENGINE.md 2.1. */
#include <strings.h>

#include "strata/compiler.h"
#include "strata/dtype.h"

static const struct st_dtype_info dtype_table[ST_DTYPE_COUNT_] = {
    [ST_DTYPE_F32]     = { "F32", 1, 4, true },
    [ST_DTYPE_F16]     = { "F16", 1, 2, true },
    [ST_DTYPE_Q4_0]    = { "Q4_0", 32, 18, true },
    [ST_DTYPE_Q4_1]    = { "Q4_1", 32, 20, true },
    [ST_DTYPE_Q5_0]    = { "Q5_0", 32, 22, true },
    [ST_DTYPE_Q5_1]    = { "Q5_1", 32, 24, true },
    [ST_DTYPE_Q8_0]    = { "Q8_0", 32, 34, true },
    [ST_DTYPE_Q8_1]    = { "Q8_1", 32, 36, false },
    [ST_DTYPE_Q2_K]    = { "Q2_K", 256, 84, true },
    [ST_DTYPE_Q3_K]    = { "Q3_K", 256, 110, true },
    [ST_DTYPE_Q4_K]    = { "Q4_K", 256, 144, true },
    [ST_DTYPE_Q5_K]    = { "Q5_K", 256, 176, true },
    [ST_DTYPE_Q6_K]    = { "Q6_K", 256, 210, true },
    [ST_DTYPE_Q8_K]    = { "Q8_K", 256, 292, false },
    [ST_DTYPE_IQ3_XXS] = { "IQ3_XXS", 256, 98, true },
    [ST_DTYPE_IQ4_NL]  = { "IQ4_NL", 32, 18, false },
    [ST_DTYPE_IQ3_S]   = { "IQ3_S", 256, 110, true },
    [ST_DTYPE_IQ4_XS]  = { "IQ4_XS", 256, 136, true },
    [ST_DTYPE_I32]     = { "I32", 1, 4, false },
    [ST_DTYPE_BF16]    = { "BF16", 1, 2, true },
};

const struct st_dtype_info *st_dtype_info(uint32_t id)
{
    if (id >= ST_DTYPE_COUNT_ || !dtype_table[id].name)
        return NULL;
    return &dtype_table[id];
}

size_t st_dtype_row_bytes(enum st_dtype t, int64_t n)
{
    const struct st_dtype_info *info = st_dtype_info((uint32_t)t);
    if (!info || n < 0 || n % info->block_elems != 0)
        return 0;
    return (size_t)(n / info->block_elems) * (size_t)info->block_bytes;
}

bool st_dtype_parse(const char *name, enum st_dtype *out)
{
    for (uint32_t id = 0; id < ST_DTYPE_COUNT_; id++) {
        if (dtype_table[id].name && strcasecmp(dtype_table[id].name, name) == 0) {
            *out = (enum st_dtype)id;
            return true;
        }
    }
    return false;
}
