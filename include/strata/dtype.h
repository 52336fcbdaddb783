/* dtype.h -- element types of tensors, with GGUF's ggml_type ids.
 *
 * The numeric values are the ids stored in GGUF tensor infos (docs/design/ENGINE.md
 * 2.1), so a file's type field converts with a range check and a table
 * lookup. Backends take (dtype, shape, bytes); they never see GGUF.
 */
#ifndef STRATA_DTYPE_H
#define STRATA_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum st_dtype {
    ST_DTYPE_F32 = 0,
    ST_DTYPE_F16 = 1,
    ST_DTYPE_Q4_0 = 2,
    ST_DTYPE_Q4_1 = 3,
    ST_DTYPE_Q5_0 = 6,
    ST_DTYPE_Q5_1 = 7,
    ST_DTYPE_Q8_0 = 8,
    ST_DTYPE_Q8_1 = 9,      /* activations only */
    ST_DTYPE_Q2_K = 10,
    ST_DTYPE_Q3_K = 11,
    ST_DTYPE_Q4_K = 12,
    ST_DTYPE_Q5_K = 13,
    ST_DTYPE_Q6_K = 14,
    ST_DTYPE_Q8_K = 15,     /* activations only */
    ST_DTYPE_IQ3_XXS = 18,
    ST_DTYPE_IQ4_NL = 20,
    ST_DTYPE_IQ3_S = 21,
    ST_DTYPE_IQ4_XS = 23,
    ST_DTYPE_I32 = 26,      /* integer tensors of the backend (ids, positions); never a weight */
    ST_DTYPE_BF16 = 30,
    ST_DTYPE_COUNT_ = 43,   /* one past the largest id GGUF may hold */
};

struct st_dtype_info {
    const char *name;        /* "Q4_K"; NULL for ids we do not know */
    int32_t     block_elems; /* elements per block (1 for float types) */
    int32_t     block_bytes; /* bytes per block */
    bool        weights_ok;  /* a type a model tensor may use */
    bool        computes;    /* an enum st_dtype member: the backends compute on it */
};

/* NULL for an id we do not compute on. */
const struct st_dtype_info *st_dtype_info(uint32_t id);

/* Any ggml type id a GGUF may hold, the ones we cannot compute on
 * included (the reader still bounds-checks and names them); NULL for an
 * id ggml does not define. */
const struct st_dtype_info *st_ggml_type_info(uint32_t id);

/* Bytes of a row of 'n' elements; 0 when n is not a whole number of
 * blocks or the type is unknown. */
size_t st_dtype_row_bytes(enum st_dtype t, int64_t n);

/* Parse "q4_k", "Q4_K", "iq3_s", "f16" ... Returns false if unknown. */
bool st_dtype_parse(const char *name, enum st_dtype *out);

#endif /* STRATA_DTYPE_H */
