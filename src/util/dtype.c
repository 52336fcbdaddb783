/* dtype.c -- the one table of ggml tensor types: names, block sizes, what
 * strata computes on (docs/design/ENGINE.md 2.1). */
#include <strings.h>

#include "strata/compiler.h"
#include "strata/dtype.h"

/* Every ggml type id a GGUF may hold (docs/design/ENGINE.md 2.1), the ones
 * strata cannot compute on included so the GGUF reader can still
 * bounds-check and name them. computes marks the enum st_dtype members. */
static const struct st_dtype_info ggml_types[ST_DTYPE_COUNT_] = {
    [ST_DTYPE_F32]     = { "F32", 1, 4, true, true },
    [ST_DTYPE_F16]     = { "F16", 1, 2, true, true },
    [ST_DTYPE_Q4_0]    = { "Q4_0", 32, 18, true, true },
    [ST_DTYPE_Q4_1]    = { "Q4_1", 32, 20, true, true },
    [ST_DTYPE_Q5_0]    = { "Q5_0", 32, 22, true, true },
    [ST_DTYPE_Q5_1]    = { "Q5_1", 32, 24, true, true },
    [ST_DTYPE_Q8_0]    = { "Q8_0", 32, 34, true, true },
    [ST_DTYPE_Q8_1]    = { "Q8_1", 32, 36, false, true },
    [ST_DTYPE_Q2_K]    = { "Q2_K", 256, 84, true, true },
    [ST_DTYPE_Q3_K]    = { "Q3_K", 256, 110, true, true },
    [ST_DTYPE_Q4_K]    = { "Q4_K", 256, 144, true, true },
    [ST_DTYPE_Q5_K]    = { "Q5_K", 256, 176, true, true },
    [ST_DTYPE_Q6_K]    = { "Q6_K", 256, 210, true, true },
    [ST_DTYPE_Q8_K]    = { "Q8_K", 256, 292, false, true },
    [16]               = { "IQ2_XXS", 256, 66, false, false },
    [17]               = { "IQ2_XS", 256, 74, false, false },
    [ST_DTYPE_IQ3_XXS] = { "IQ3_XXS", 256, 98, true, true },
    [19]               = { "IQ1_S", 256, 50, false, false },
    [ST_DTYPE_IQ4_NL]  = { "IQ4_NL", 32, 18, false, true },
    [ST_DTYPE_IQ3_S]   = { "IQ3_S", 256, 110, true, true },
    [22]               = { "IQ2_S", 256, 82, false, false },
    [ST_DTYPE_IQ4_XS]  = { "IQ4_XS", 256, 136, true, true },
    [24]               = { "I8", 1, 1, false, false },
    [25]               = { "I16", 1, 2, false, false },
    [ST_DTYPE_I32]     = { "I32", 1, 4, false, true },
    [27]               = { "I64", 1, 8, false, false },
    [28]               = { "F64", 1, 8, false, false },
    [29]               = { "IQ1_M", 256, 56, false, false },
    [ST_DTYPE_BF16]    = { "BF16", 1, 2, true, true },
    [34]               = { "TQ1_0", 256, 54, false, false },
    [35]               = { "TQ2_0", 256, 66, false, false },
    [39]               = { "MXFP4", 32, 17, false, false },
    [40]               = { "NVFP4", 64, 36, false, false },
    [41]               = { "Q1_0", 128, 18, false, false },
    [42]               = { "Q2_0", 64, 18, false, false },
};

const struct st_dtype_info *st_ggml_type_info(uint32_t id)
{
    if (id >= ST_DTYPE_COUNT_ || !ggml_types[id].name)
        return NULL;
    return &ggml_types[id];
}

const struct st_dtype_info *st_dtype_info(uint32_t id)
{
    const struct st_dtype_info *info = st_ggml_type_info(id);
    return info && info->computes ? info : NULL;
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
        const struct st_dtype_info *info = st_dtype_info(id);
        if (info && strcasecmp(info->name, name) == 0) {
            *out = (enum st_dtype)id;
            return true;
        }
    }
    return false;
}
