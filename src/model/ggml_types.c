/* ggml_types.c -- the block size and name of a ggml tensor type id, from the
 * one table in src/util/dtype.c (which knows the types strata cannot compute
 * on too, so the reader can still bounds-check and inspect such files).
 */
#include "internal.h"
#include "strata/dtype.h"
#include "strata/gguf.h"

bool st_model_ggml_type_size(uint32_t id, int32_t *blck, int32_t *bytes)
{
    const struct st_dtype_info *info = st_ggml_type_info(id);
    if (!info)
        return false;
    *blck = info->block_elems;
    *bytes = info->block_bytes;
    return true;
}

const char *st_gguf_ggml_type_name(uint32_t id)
{
    const struct st_dtype_info *info = st_ggml_type_info(id);
    return info ? info->name : NULL;
}
