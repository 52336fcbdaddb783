/* gguf_write.h -- write GGUF v3 files that every GGUF reader accepts.
 *
 * Layout (docs/design/ENGINE.md 1.4, the strict rule ggml's reader insists on): the
 * key/values in the order they were set, the tensor infos in the order
 * they were added, zero padding to the alignment, then each tensor's data
 * in info order, each padded to the alignment, so info[i].offset is the
 * padded running sum of the earlier sizes.
 *
 * Errors are sticky: the set_* and add_* calls return nothing, and the
 * first problem (duplicate key or tensor name, bad shape, out of memory)
 * is reported by st_gguf_writer_write(). Keys, strings and names are
 * copied; tensor data passed by pointer is borrowed until the write.
 *
 * Threads: one writer belongs to one thread.
 */
#ifndef STRATA_GGUF_WRITE_H
#define STRATA_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "strata/dtype.h"
#include "strata/err.h"
#include "strata/gguf.h"

struct st_gguf_writer;          /* opaque */

/* Produce rows [row0, row0 + nrows) of a tensor into 'dst' (nrows * row
 * bytes). A row is ne0 elements; rows are numbered over ne1*ne2*ne3. */
typedef enum st_status (*st_gguf_fill_fn)(void *ctx, int64_t row0, int64_t nrows,
                                          void *dst, struct st_err *err);

/* alignment: a power of two, or 0 for the default 32. A non-default one is
 * written as general.alignment (UINT32) first. Returns owned; free with
 * st_gguf_writer_free (NULL is a no-op). Aborts only on out of memory for
 * the small writer object itself. */
struct st_gguf_writer *st_gguf_writer_new(uint32_t alignment);
void st_gguf_writer_free(struct st_gguf_writer *w);

/* Scalar of any type but STRING/ARRAY from its little-endian bytes. */
void st_gguf_writer_set_scalar(struct st_gguf_writer *w, const char *key,
                               enum st_gguf_type type, const void *le_bytes);
void st_gguf_writer_set_u32(struct st_gguf_writer *w, const char *key, uint32_t v);
void st_gguf_writer_set_i32(struct st_gguf_writer *w, const char *key, int32_t v);
void st_gguf_writer_set_u64(struct st_gguf_writer *w, const char *key, uint64_t v);
void st_gguf_writer_set_f32(struct st_gguf_writer *w, const char *key, float v);
void st_gguf_writer_set_bool(struct st_gguf_writer *w, const char *key, bool v);
void st_gguf_writer_set_str(struct st_gguf_writer *w, const char *key, const char *v);
void st_gguf_writer_set_strn(struct st_gguf_writer *w, const char *key, struct st_str v);
/* Numeric array: n elements of 'elem' (not STRING/ARRAY), little-endian. */
void st_gguf_writer_set_arr(struct st_gguf_writer *w, const char *key,
                            enum st_gguf_type elem, const void *data, size_t n);
void st_gguf_writer_set_arr_str(struct st_gguf_writer *w, const char *key,
                                const char *const *v, size_t n);

/* A tensor of any ggml type id; ne[0..n_dims) with ne[0] innermost (a
 * whole number of blocks). 'data' holds the nbytes, borrowed until the
 * write; or 'fill' produces them at write time in chunks of rows. */
void st_gguf_writer_add_tensor(struct st_gguf_writer *w, const char *name,
                               enum st_dtype type, int n_dims, const int64_t *ne,
                               const void *data);
void st_gguf_writer_add_tensor_fn(struct st_gguf_writer *w, const char *name,
                                  enum st_dtype type, int n_dims, const int64_t *ne,
                                  st_gguf_fill_fn fill, void *ctx);

/* Write everything to path (through path.tmp + rename, so a failed write
 * leaves no half file behind). ST_ERR_INVALID for a bad call recorded
 * earlier, ST_ERR_IO, ST_ERR_NOMEM, or whatever a fill callback returned. */
ST_MUST_CHECK enum st_status st_gguf_writer_write(struct st_gguf_writer *w, const char *path,
                                                  struct st_err *err);

#endif /* STRATA_GGUF_WRITE_H */
