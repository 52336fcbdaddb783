/* kv_type.h -- the element types of the KV cache (--cache-type-k / -v,
 * llama-server's names): F16 (the default, 2 bytes an element), Q8_0
 * (GGML's block of 32 int8 values and one f16 scale, 34 bytes per 32
 * elements), F32 (4 bytes) and BF16 (2 bytes, the top half of an f32).
 * F32 and BF16 are on the cpu backend only (model_load.c check_kv_types).
 */
#ifndef STRATA_KV_TYPE_H
#define STRATA_KV_TYPE_H

#include <stdbool.h>

#include "strata/dtype.h"

enum st_kv_type {
    ST_KV_F16 = 0,   /* zero: the default of a zeroed struct */
    ST_KV_Q8_0 = 1,
    ST_KV_F32 = 2,
    ST_KV_BF16 = 3,
    ST_KV_COUNT_   /* one past the last */
};

/* "f16", "q8_0", "f32", "bf16", NULL: indexed by enum st_kv_type. */
extern const char *const st_kv_type_names[];

/* The name, "?" when out of range. Thread: any. */
const char *st_kv_type_name(enum st_kv_type t);
/* Its tensor type (ST_DTYPE_F16, _Q8_0, _F32 or _BF16). */
enum st_dtype st_kv_type_dtype(enum st_kv_type t);
/* One of the names; false (out untouched) otherwise. */
bool st_kv_type_parse(const char *s, enum st_kv_type *out);

#endif /* STRATA_KV_TYPE_H */
