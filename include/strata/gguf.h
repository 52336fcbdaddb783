/* gguf.h -- read-only view of a GGUF file (v2 and v3), mapped once with mmap.
 *
 * Nothing big is copied: tensor data, keys and string values point into
 * the mapping and stay valid until st_gguf_close(). GGUF strings are
 * length-prefixed and NOT NUL-terminated, so they come back as struct
 * st_str. Every offset, size, count and string of the file is checked
 * against the file size at open time; a bad file gives ST_ERR_BAD_GGUF and
 * a message naming the problem. The bookkeeping the reader allocates is
 * bounded by the file size (a count is refused when the bytes left could
 * not hold that many records).
 *
 * Tensor types are ggml ids; the reader knows the block sizes of every
 * ggml type (so it can bounds-check files strata cannot compute on), and
 * st_dtype_info() says whether strata supports a tensor's type.
 *
 * Threads: after st_gguf_open() returns, every reader may be called from
 * any thread; st_gguf_close() must not race with them.
 */
#ifndef STRATA_GGUF_H
#define STRATA_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/dtype.h"
#include "strata/err.h"
#include "strata/str.h"

#define ST_GGUF_DEFAULT_ALIGNMENT 32
#define ST_GGUF_MAX_DIMS 4
#define ST_GGUF_MAX_NAME 63          /* bytes in a tensor name (ggml: < 64) */

/* Metadata value types, with their ids in the file (docs/design/ENGINE.md 1.2). */
enum st_gguf_type {
    ST_GGUF_U8 = 0,
    ST_GGUF_I8 = 1,
    ST_GGUF_U16 = 2,
    ST_GGUF_I16 = 3,
    ST_GGUF_U32 = 4,
    ST_GGUF_I32 = 5,
    ST_GGUF_F32 = 6,
    ST_GGUF_BOOL = 7,
    ST_GGUF_STRING = 8,
    ST_GGUF_ARRAY = 9,
    ST_GGUF_U64 = 10,
    ST_GGUF_I64 = 11,
    ST_GGUF_F64 = 12,
    ST_GGUF_TYPE_COUNT_
};

/* "UINT32", "STRING", ...; "?" for an invalid id. Static storage. */
const char *st_gguf_type_name(enum st_gguf_type t);

/* The name of a ggml tensor type id ("Q4_K", "Q2_K", ...); NULL if the id
 * is not a ggml type. Covers types strata cannot compute on, for inspect. */
const char *st_gguf_ggml_type_name(uint32_t id);

struct st_gguf;                 /* opaque */
struct st_gguf_kv;              /* opaque: one metadata pair */

struct st_gguf_tensor {
    struct st_str  name;        /* borrowed from the mapping, <= 63 bytes */
    enum st_dtype  type;        /* ggml type id; may be one strata lacks */
    int32_t        n_dims;      /* 0..4 as stored */
    int64_t        ne[4];       /* elements per dim, missing dims = 1; ne[0] innermost */
    uint64_t       offset;      /* bytes from the start of the data section */
    const void    *data;        /* borrowed from the mapping */
    size_t         nbytes;      /* ne0*ne1*ne2*ne3 / block_elems * block_bytes */
};

/* Map 'path' and validate header, key/values and the tensor table.
 * On success *out owns the mapping: release it with st_gguf_close().
 * On failure *out is NULL and 'err' (may be NULL) says what is wrong:
 * ST_ERR_IO (open/mmap), ST_ERR_BAD_GGUF (format), ST_ERR_NOMEM. */
ST_MUST_CHECK
enum st_status st_gguf_open(const char *path, struct st_gguf **out,
                            struct st_err *err);

/* The same checks on a buffer in memory (the fuzzer, tests). 'buf' is
 * borrowed: it must outlive the returned object. */
ST_MUST_CHECK
enum st_status st_gguf_open_mem(const void *buf, size_t size, struct st_gguf **out,
                                struct st_err *err);

/* NULL is a no-op. */
void st_gguf_close(struct st_gguf *g);

uint32_t st_gguf_version(const struct st_gguf *g);
uint32_t st_gguf_alignment(const struct st_gguf *g);   /* general.alignment or 32 */
size_t st_gguf_data_offset(const struct st_gguf *g);   /* file offset of tensor data */
size_t st_gguf_file_size(const struct st_gguf *g);

/* True when every tensor's offset is the running sum of the earlier
 * tensors' sizes, each padded to the alignment (docs/design/ENGINE.md 1.4: the layout
 * ggml's own reader insists on and every writer produces). */
bool st_gguf_is_strict_layout(const struct st_gguf *g);

/* ---- tensors ----------------------------------------------------------- */

int64_t st_gguf_n_tensors(const struct st_gguf *g);
/* Borrowed; valid until st_gguf_close(g). i in [0, n_tensors). */
const struct st_gguf_tensor *st_gguf_tensor(const struct st_gguf *g, int64_t i);
/* Borrowed; NULL if absent. */
const struct st_gguf_tensor *st_gguf_find_tensor(const struct st_gguf *g,
                                                 const char *name);

/* ---- key/values -------------------------------------------------------- */

int64_t st_gguf_n_kv(const struct st_gguf *g);
/* Borrowed; i in [0, n_kv), in file order. */
const struct st_gguf_kv *st_gguf_kv_at(const struct st_gguf *g, int64_t i);
/* Borrowed; NULL if absent. */
const struct st_gguf_kv *st_gguf_find_kv(const struct st_gguf *g, const char *key);

struct st_str st_gguf_kv_key(const struct st_gguf_kv *kv);
enum st_gguf_type st_gguf_kv_type(const struct st_gguf_kv *kv);

/* Scalar conversions; false when the value's type does not fit:
 * _i64/_u64 take any integer type (and BOOL as 0/1) that is in range;
 * _f64 takes F32/F64 and any integer; _bool takes BOOL (non-zero = true)
 * and any integer; _str takes STRING (the view is borrowed). */
bool st_gguf_kv_i64(const struct st_gguf_kv *kv, int64_t *out);
bool st_gguf_kv_u64(const struct st_gguf_kv *kv, uint64_t *out);
bool st_gguf_kv_f64(const struct st_gguf_kv *kv, double *out);
bool st_gguf_kv_bool(const struct st_gguf_kv *kv, bool *out);
bool st_gguf_kv_str(const struct st_gguf_kv *kv, struct st_str *out);

/* Arrays (no arrays of arrays: the reader rejects them). For a non-array
 * kv: count 0 and element type ST_GGUF_TYPE_COUNT_. Element accessors are
 * O(1) (string arrays are indexed at open) and return false for an index
 * out of range or a type that does not convert (same rules as above). */
uint64_t st_gguf_arr_n(const struct st_gguf_kv *kv);
enum st_gguf_type st_gguf_arr_type(const struct st_gguf_kv *kv);
bool st_gguf_arr_str(const struct st_gguf_kv *kv, uint64_t i, struct st_str *out);
bool st_gguf_arr_i64(const struct st_gguf_kv *kv, uint64_t i, int64_t *out);
bool st_gguf_arr_f64(const struct st_gguf_kv *kv, uint64_t i, double *out);
/* Raw little-endian element bytes of a numeric array (unaligned; NULL for
 * string arrays and non-arrays). Borrowed from the mapping. */
const void *st_gguf_arr_data(const struct st_gguf_kv *kv);

/* ---- typed getters by key ---------------------------------------------
 * ST_OK and *out set; ST_ERR_NOT_FOUND when the key is absent (err says
 * which key; *out untouched); ST_ERR_BAD_GGUF when the value has a type
 * that does not convert or is out of range for the result. Any integer
 * width is accepted for the integer getters. */
ST_MUST_CHECK enum st_status st_gguf_get_u32(const struct st_gguf *g, const char *key,
                                             uint32_t *out, struct st_err *err);
ST_MUST_CHECK enum st_status st_gguf_get_i64(const struct st_gguf *g, const char *key,
                                             int64_t *out, struct st_err *err);
ST_MUST_CHECK enum st_status st_gguf_get_f32(const struct st_gguf *g, const char *key,
                                             float *out, struct st_err *err);
ST_MUST_CHECK enum st_status st_gguf_get_bool(const struct st_gguf *g, const char *key,
                                              bool *out, struct st_err *err);
/* *out is borrowed from the mapping. */
ST_MUST_CHECK enum st_status st_gguf_get_str(const struct st_gguf *g, const char *key,
                                             struct st_str *out, struct st_err *err);
/* An array under 'key' (any element type): ST_OK with *out = the kv. */
ST_MUST_CHECK enum st_status st_gguf_get_arr(const struct st_gguf *g, const char *key,
                                             const struct st_gguf_kv **out,
                                             struct st_err *err);

#endif /* STRATA_GGUF_H */
