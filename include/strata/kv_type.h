/* kv_type.h -- the element types of the KV cache (--cache-type-k / -v,
 * llama-server's names): F16 (the default) and Q8_0 (GGML's block of 32
 * int8 values and one f16 scale, 34 bytes per 32 elements).
 */
#ifndef STRATA_KV_TYPE_H
#define STRATA_KV_TYPE_H

#include <stdbool.h>

#include "strata/dtype.h"

enum st_kv_type {
    ST_KV_F16 = 0,   /* zero: the default of a zeroed struct */
    ST_KV_Q8_0 = 1,
};

/* "f16", "q8_0", NULL: indexed by enum st_kv_type. */
extern const char *const st_kv_type_names[];

/* The name, "?" when out of range. Thread: any. */
const char *st_kv_type_name(enum st_kv_type t);
/* Its tensor type (ST_DTYPE_F16 or ST_DTYPE_Q8_0). */
enum st_dtype st_kv_type_dtype(enum st_kv_type t);
/* One of the names; false (out untouched) otherwise. */
bool st_kv_type_parse(const char *s, enum st_kv_type *out);

#endif /* STRATA_KV_TYPE_H */
