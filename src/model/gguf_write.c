/* gguf_write.c -- the GGUF v3 writer (strict layout; see gguf_write.h).
 *
 * Key/values are serialized into one buffer as they are set; tensor infos
 * are kept as records and serialized at write time, when their offsets
 * (the padded running sum of sizes) are known. Tensor data is streamed:
 * borrowed buffers are written as they are, fill callbacks are called in
 * chunks of about 4 MiB so a model bigger than memory can be written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "strata/gguf_write.h"
#include "strata/xalloc.h"

#define CHUNK_BYTES (4u << 20)

struct wtensor {
    char            *name;    /* owned */
    enum st_dtype    type;
    int              n_dims;
    int64_t          ne[4];
    size_t           nbytes;
    size_t           row_bytes;
    const void      *data;    /* borrowed, or NULL when fill is set */
    st_gguf_fill_fn  fill;
    void            *ctx;
};

struct st_gguf_writer {
    uint32_t        alignment;
    struct st_buf   kv;       /* serialized key/values */
    int64_t         n_kv;
    char          **keys;     /* owned copies, for duplicate checks */
    struct wtensor *t;        /* owned, n_t of cap_t */
    int64_t         n_t, cap_t;
    struct st_err   err;      /* first error (sticky) */
};

struct st_gguf_writer *st_gguf_writer_new(uint32_t alignment)
{
    struct st_gguf_writer *w = st_xcalloc(1, sizeof(*w));
    st_buf_init(&w->kv);
    w->alignment = alignment ? alignment : ST_GGUF_DEFAULT_ALIGNMENT;
    if ((w->alignment & (w->alignment - 1)) != 0)
        st_err_set(&w->err, ST_ERR_INVALID, "gguf write: alignment %u is not a power of two",
                   alignment);
    else if (w->alignment != ST_GGUF_DEFAULT_ALIGNMENT)
        st_gguf_writer_set_u32(w, "general.alignment", w->alignment);
    return w;
}

void st_gguf_writer_free(struct st_gguf_writer *w)
{
    if (!w)
        return;
    for (int64_t i = 0; i < w->n_kv; i++)
        free(w->keys[i]);
    free(w->keys);
    for (int64_t i = 0; i < w->n_t; i++)
        free(w->t[i].name);
    free(w->t);
    st_buf_fini(&w->kv);
    free(w);
}

static void put(struct st_gguf_writer *w, const void *p, size_t n)
{
    if (w->err.code == ST_OK && st_buf_append(&w->kv, p, n) != ST_OK)
        st_err_set(&w->err, ST_ERR_NOMEM, "gguf write: out of memory for metadata");
}

static void put_u32(struct st_gguf_writer *w, uint32_t v)
{
    uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    put(w, b, 4);
}

static void put_u64(struct st_gguf_writer *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put(w, b, 8);
}

static void put_str(struct st_gguf_writer *w, const char *s, size_t n)
{
    put_u64(w, n);
    put(w, s, n);
}

/* Start a key/value: key string + type id. False if the key is a duplicate. */
static bool begin_kv(struct st_gguf_writer *w, const char *key, enum st_gguf_type type)
{
    if (w->err.code != ST_OK)
        return false;
    for (int64_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->keys[i], key) == 0) {
            st_err_set(&w->err, ST_ERR_INVALID, "gguf write: duplicate key '%s'", key);
            return false;
        }
    }
    w->keys = st_xrealloc(w->keys, (size_t)(w->n_kv + 1) * sizeof(*w->keys));
    w->keys[w->n_kv++] = st_xstrdup(key);
    put_str(w, key, strlen(key));
    put_u32(w, (uint32_t)type);
    return true;
}

static size_t scalar_bytes(enum st_gguf_type t)
{
    static const size_t sz[ST_GGUF_TYPE_COUNT_] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    return (unsigned)t < ST_GGUF_TYPE_COUNT_ ? sz[t] : 0;
}

void st_gguf_writer_set_scalar(struct st_gguf_writer *w, const char *key,
                               enum st_gguf_type type, const void *le_bytes)
{
    if (scalar_bytes(type) == 0) {
        if (w->err.code == ST_OK)
            st_err_set(&w->err, ST_ERR_INVALID, "gguf write: key '%s': not a scalar type", key);
        return;
    }
    if (begin_kv(w, key, type))
        put(w, le_bytes, scalar_bytes(type));
}

void st_gguf_writer_set_u32(struct st_gguf_writer *w, const char *key, uint32_t v)
{
    if (begin_kv(w, key, ST_GGUF_U32))
        put_u32(w, v);
}

void st_gguf_writer_set_i32(struct st_gguf_writer *w, const char *key, int32_t v)
{
    if (begin_kv(w, key, ST_GGUF_I32))
        put_u32(w, (uint32_t)v);
}

void st_gguf_writer_set_u64(struct st_gguf_writer *w, const char *key, uint64_t v)
{
    if (begin_kv(w, key, ST_GGUF_U64))
        put_u64(w, v);
}

void st_gguf_writer_set_f32(struct st_gguf_writer *w, const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    if (begin_kv(w, key, ST_GGUF_F32))
        put_u32(w, u);
}

void st_gguf_writer_set_bool(struct st_gguf_writer *w, const char *key, bool v)
{
    uint8_t b = v ? 1 : 0;
    if (begin_kv(w, key, ST_GGUF_BOOL))
        put(w, &b, 1);
}

void st_gguf_writer_set_strn(struct st_gguf_writer *w, const char *key, struct st_str v)
{
    if (begin_kv(w, key, ST_GGUF_STRING))
        put_str(w, v.ptr, v.len);
}

void st_gguf_writer_set_str(struct st_gguf_writer *w, const char *key, const char *v)
{
    st_gguf_writer_set_strn(w, key, st_str_c(v));
}

void st_gguf_writer_set_arr(struct st_gguf_writer *w, const char *key,
                            enum st_gguf_type elem, const void *data, size_t n)
{
    size_t esz = scalar_bytes(elem), bytes;
    if (esz == 0 || !st_mul_ok(n, esz, &bytes)) {
        if (w->err.code == ST_OK)
            st_err_set(&w->err, ST_ERR_INVALID, "gguf write: key '%s': bad array", key);
        return;
    }
    if (!begin_kv(w, key, ST_GGUF_ARRAY))
        return;
    put_u32(w, (uint32_t)elem);
    put_u64(w, n);
    put(w, data, bytes);
}

void st_gguf_writer_set_arr_str(struct st_gguf_writer *w, const char *key,
                                const char *const *v, size_t n)
{
    if (!begin_kv(w, key, ST_GGUF_ARRAY))
        return;
    put_u32(w, ST_GGUF_STRING);
    put_u64(w, n);
    for (size_t i = 0; i < n; i++)
        put_str(w, v[i], strlen(v[i]));
}

static void add_tensor(struct st_gguf_writer *w, const char *name, enum st_dtype type,
                       int n_dims, const int64_t *ne, struct wtensor proto)
{
    int32_t blck, bsz;
    if (w->err.code != ST_OK)
        return;
    if (!st_model_ggml_type_size((uint32_t)type, &blck, &bsz) || n_dims < 1 || n_dims > 4 ||
        strlen(name) == 0 || strlen(name) > ST_GGUF_MAX_NAME) {
        st_err_set(&w->err, ST_ERR_INVALID, "gguf write: tensor '%s': bad type, rank or name", name);
        return;
    }
    for (int64_t i = 0; i < w->n_t; i++) {
        if (strcmp(w->t[i].name, name) == 0) {
            st_err_set(&w->err, ST_ERR_INVALID, "gguf write: duplicate tensor '%s'", name);
            return;
        }
    }
    proto.type = type;
    proto.n_dims = n_dims;
    int64_t rows = 1;
    for (int d = 0; d < 4; d++) {
        proto.ne[d] = d < n_dims ? ne[d] : 1;
        if (proto.ne[d] < 0 || (d > 0 && __builtin_mul_overflow(rows, proto.ne[d], &rows))) {
            st_err_set(&w->err, ST_ERR_INVALID, "gguf write: tensor '%s': bad shape", name);
            return;
        }
    }
    if (proto.ne[0] % blck != 0 ||
        !st_mul_ok((size_t)(proto.ne[0] / blck), (size_t)bsz, &proto.row_bytes) ||
        !st_mul_ok(proto.row_bytes, (size_t)rows, &proto.nbytes)) {
        st_err_set(&w->err, ST_ERR_INVALID,
                   "gguf write: tensor '%s': ne0 %lld is not a whole number of %d-blocks", name,
                   (long long)proto.ne[0], blck);
        return;
    }
    if (w->n_t == w->cap_t) {
        w->cap_t = w->cap_t ? 2 * w->cap_t : 64;
        w->t = st_xrealloc(w->t, (size_t)w->cap_t * sizeof(*w->t));
    }
    proto.name = st_xstrdup(name);
    w->t[w->n_t++] = proto;
}

void st_gguf_writer_add_tensor(struct st_gguf_writer *w, const char *name, enum st_dtype type,
                               int n_dims, const int64_t *ne, const void *data)
{
    struct wtensor p = { .data = data };
    add_tensor(w, name, type, n_dims, ne, p);
}

void st_gguf_writer_add_tensor_fn(struct st_gguf_writer *w, const char *name,
                                  enum st_dtype type, int n_dims, const int64_t *ne,
                                  st_gguf_fill_fn fill, void *ctx)
{
    struct wtensor p = { .fill = fill, .ctx = ctx };
    add_tensor(w, name, type, n_dims, ne, p);
}

static size_t pad_to(size_t x, size_t a) { return (a - x % a) % a; }

/* Header, key/values and tensor infos, serialized into 'out'. */
static enum st_status write_head(struct st_gguf_writer *w, struct st_buf *out)
{
    struct st_buf save = w->kv;        /* reuse the put_* helpers on 'out' */
    w->kv = *out;
    put(w, "GGUF", 4);
    put_u32(w, 3);
    put_u64(w, (uint64_t)w->n_t);
    put_u64(w, (uint64_t)w->n_kv);
    put(w, save.data, save.len);
    uint64_t off = 0;
    for (int64_t i = 0; i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        put_str(w, t->name, strlen(t->name));
        put_u32(w, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++)
            put_u64(w, (uint64_t)t->ne[d]);
        put_u32(w, (uint32_t)t->type);
        put_u64(w, off);
        off += t->nbytes + pad_to(t->nbytes, w->alignment);
    }
    *out = w->kv;
    w->kv = save;
    return w->err.code;
}

static const uint8_t zeros[4096];

static enum st_status write_pad(FILE *f, size_t n, const char *path, struct st_err *err)
{
    while (n > 0) {
        size_t k = ST_MIN(n, sizeof(zeros));
        if (fwrite(zeros, 1, k, f) != k)
            return st_err_errno(err, ST_ERR_IO, "write %s", path);
        n -= k;
    }
    return ST_OK;
}

static enum st_status write_tensor(FILE *f, const struct wtensor *t, uint8_t **chunk,
                                   const char *path, struct st_err *err)
{
    if (!t->fill) {
        if (t->nbytes && fwrite(t->data, 1, t->nbytes, f) != t->nbytes)
            return st_err_errno(err, ST_ERR_IO, "write %s", path);
        return ST_OK;
    }
    int64_t rows = t->row_bytes ? (int64_t)(t->nbytes / t->row_bytes) : 0;
    int64_t per = t->row_bytes ? ST_MAX(1, (int64_t)(CHUNK_BYTES / t->row_bytes)) : 1;
    if (rows > 0 && !*chunk) {
        *chunk = malloc(ST_MAX(CHUNK_BYTES, t->row_bytes));
        if (!*chunk)
            return st_err_set(err, ST_ERR_NOMEM, "gguf write: no memory for a tensor chunk");
    }
    for (int64_t r = 0; r < rows; r += per) {
        int64_t n = ST_MIN(per, rows - r);
        enum st_status rc = t->fill(t->ctx, r, n, *chunk, err);
        if (rc != ST_OK)
            return rc;
        if (fwrite(*chunk, 1, (size_t)n * t->row_bytes, f) != (size_t)n * t->row_bytes)
            return st_err_errno(err, ST_ERR_IO, "write %s", path);
    }
    return ST_OK;
}

static enum st_status write_file(struct st_gguf_writer *w, FILE *f, const char *path,
                                 struct st_err *err)
{
    struct st_buf head;
    uint8_t *chunk = NULL;
    enum st_status rc;

    st_buf_init(&head);
    rc = write_head(w, &head);
    if (rc != ST_OK) {
        st_buf_fini(&head);
        return st_err_set(err, ST_ERR_NOMEM, "gguf write: out of memory for the header");
    }
    if (fwrite(head.data, 1, head.len, f) != head.len)
        rc = st_err_errno(err, ST_ERR_IO, "write %s", path);
    if (rc == ST_OK && w->n_t > 0)
        rc = write_pad(f, pad_to(head.len, w->alignment), path, err);
    for (int64_t i = 0; rc == ST_OK && i < w->n_t; i++) {
        rc = write_tensor(f, &w->t[i], &chunk, path, err);
        if (rc == ST_OK)
            rc = write_pad(f, pad_to(w->t[i].nbytes, w->alignment), path, err);
    }
    free(chunk);
    st_buf_fini(&head);
    return rc;
}

enum st_status st_gguf_writer_write(struct st_gguf_writer *w, const char *path,
                                    struct st_err *err)
{
    char tmp[4096];
    enum st_status rc;

    if (w->err.code != ST_OK)
        return st_err_set(err, w->err.code, "%s", w->err.msg);
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return st_err_set(err, ST_ERR_INVALID, "gguf write: path too long");
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return st_err_errno(err, ST_ERR_IO, "create %s", tmp);
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    rc = write_file(w, f, tmp, err);
    if (fclose(f) != 0 && rc == ST_OK)
        rc = st_err_errno(err, ST_ERR_IO, "close %s", tmp);
    if (rc == ST_OK && rename(tmp, path) != 0)
        rc = st_err_errno(err, ST_ERR_IO, "rename %s to %s", tmp, path);
    if (rc != ST_OK)
        remove(tmp);
    return rc;
}
