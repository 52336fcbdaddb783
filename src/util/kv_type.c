/* kv_type.c -- the spellings of enum st_kv_type (strata/kv_type.h), shared
 * by the config parser, the CLI commands and the model loader. */
#include <string.h>

#include "strata/kv_type.h"

const char *const st_kv_type_names[] = { "f16", "q8_0", "f32", "bf16", NULL };

const char *st_kv_type_name(enum st_kv_type t)
{
    return (int)t >= ST_KV_F16 && t < ST_KV_COUNT_ ? st_kv_type_names[t] : "?";
}

enum st_dtype st_kv_type_dtype(enum st_kv_type t)
{
    switch (t) {
    case ST_KV_Q8_0: return ST_DTYPE_Q8_0;
    case ST_KV_F32: return ST_DTYPE_F32;
    case ST_KV_BF16: return ST_DTYPE_BF16;
    default: return ST_DTYPE_F16;
    }
}

bool st_kv_type_parse(const char *s, enum st_kv_type *out)
{
    for (int i = ST_KV_F16; i < ST_KV_COUNT_; i++)
        if (!strcmp(s, st_kv_type_names[i])) {
            *out = (enum st_kv_type)i;
            return true;
        }
    return false;
}
