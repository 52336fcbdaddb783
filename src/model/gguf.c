/* gguf.c -- the GGUF reader: header, key/values and tensor table, every
 * field bounds-checked against the file (docs/design/ENGINE.md section 1).
 *
 * Parsing walks a cursor over the mapping. Nothing is trusted: each count
 * is compared with what the bytes left could hold before anything is
 * allocated for it, each length before it is skipped, and each tensor's
 * [offset, offset + size) before it is exposed. Keys and tensor names go
 * into open-addressing hash tables (duplicates are errors; lookups O(1)).
 * String arrays get an offset index so element i is O(1).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "strata/gguf.h"

#define GGUF_MAGIC "GGUF"
#define KV_MIN_BYTES 14      /* key len 8 + 1 key byte + type 4 + 1 value byte */
#define TI_MIN_BYTES 25      /* name len 8 + 1 + n_dims 4 + type 4 + offset 8 */

struct st_gguf_kv {
    struct st_str     key;   /* borrowed from the mapping */
    enum st_gguf_type type;
    enum st_gguf_type elem;  /* ARRAY: element type; else ST_GGUF_TYPE_COUNT_ */
    uint64_t          n;     /* ARRAY: element count */
    const uint8_t    *val;   /* scalar: value bytes; STRING: chars; ARRAY: first element */
    uint64_t          slen;  /* STRING: length */
    uint64_t         *soff;  /* string ARRAY: file offset of each element's length (owned) */
};

struct st_gguf {
    const uint8_t         *base;      /* the mapping (or the borrowed buffer) */
    size_t                 size;      /* bytes */
    bool                   mapped;    /* munmap on close */
    uint32_t               version;
    uint32_t               alignment;
    size_t                 data_off;  /* file offset of the tensor data section */
    int64_t                n_kv;
    struct st_gguf_kv     *kvs;       /* owned, n_kv */
    int64_t                n_tensors;
    struct st_gguf_tensor *tensors;   /* owned, n_tensors */
    uint32_t              *kv_hash;   /* owned; slot = index + 1, 0 = empty */
    uint32_t              *t_hash;
    size_t                 kv_hcap, t_hcap; /* powers of two */
};

struct cur {
    const uint8_t *base;
    size_t         size, pos;
    struct st_err *err;
};

static const size_t scalar_size[ST_GGUF_TYPE_COUNT_] = {
    [ST_GGUF_U8] = 1, [ST_GGUF_I8] = 1, [ST_GGUF_U16] = 2, [ST_GGUF_I16] = 2,
    [ST_GGUF_U32] = 4, [ST_GGUF_I32] = 4, [ST_GGUF_F32] = 4, [ST_GGUF_BOOL] = 1,
    [ST_GGUF_U64] = 8, [ST_GGUF_I64] = 8, [ST_GGUF_F64] = 8,
};

const char *st_gguf_type_name(enum st_gguf_type t)
{
    static const char *const names[ST_GGUF_TYPE_COUNT_] = {
        "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
        "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
    };
    return (unsigned)t < ST_GGUF_TYPE_COUNT_ ? names[t] : "?";
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t left(const struct cur *c) { return c->size - c->pos; }

static enum st_status truncated(struct cur *c, const char *what)
{
    return st_err_set(c->err, ST_ERR_BAD_GGUF,
                      "gguf: truncated: %s at offset %zu runs past the end of the file (%zu bytes)",
                      what, c->pos, c->size);
}

static enum st_status rd_u32(struct cur *c, uint32_t *v, const char *what)
{
    if (left(c) < 4)
        return truncated(c, what);
    *v = le32(c->base + c->pos);
    c->pos += 4;
    return ST_OK;
}

static enum st_status rd_u64(struct cur *c, uint64_t *v, const char *what)
{
    if (left(c) < 8)
        return truncated(c, what);
    *v = le64(c->base + c->pos);
    c->pos += 8;
    return ST_OK;
}

/* A GGUF string: u64 length + bytes, the bytes within the file. */
static enum st_status rd_str(struct cur *c, struct st_str *s, const char *what)
{
    uint64_t len = 0;
    enum st_status rc = rd_u64(c, &len, what);
    if (rc != ST_OK)
        return rc;
    if (len > left(c)) {
        return st_err_set(c->err, ST_ERR_BAD_GGUF,
                          "gguf: %s at offset %zu claims %llu bytes but only %zu remain",
                          what, c->pos - 8, (unsigned long long)len, left(c));
    }
    s->ptr = (const char *)c->base + c->pos;
    s->len = (size_t)len;
    c->pos += (size_t)len;
    return ST_OK;
}

/* ---- hash tables of names --------------------------------------------- */

static uint64_t hash_str(struct st_str s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < s.len; i++)
        h = (h ^ (uint8_t)s.ptr[i]) * 0x100000001b3ull;
    return h;
}

static enum st_status hash_alloc(uint32_t **tab, size_t *cap, int64_t n, struct st_err *err)
{
    size_t c = 16;
    while (c < (size_t)n * 2)
        c *= 2;
    *tab = calloc(c, sizeof(**tab));
    if (!*tab)
        return st_err_set(err, ST_ERR_NOMEM, "gguf: no memory for a %zu-slot index", c);
    *cap = c;
    return ST_OK;
}

/* Slot of 'name' in the table: it holds index+1 of the match, or 0. */
static size_t hash_slot(const uint32_t *tab, size_t cap, struct st_str name,
                        struct st_str (*name_of)(const struct st_gguf *, uint32_t),
                        const struct st_gguf *g)
{
    size_t i = (size_t)hash_str(name) & (cap - 1);
    while (tab[i] != 0 && !st_str_eq(name_of(g, tab[i] - 1), name))
        i = (i + 1) & (cap - 1);
    return i;
}

static struct st_str kv_name(const struct st_gguf *g, uint32_t i) { return g->kvs[i].key; }
static struct st_str tensor_name(const struct st_gguf *g, uint32_t i) { return g->tensors[i].name; }

/* ---- key/values ---------------------------------------------------------- */

static enum st_status parse_array(struct cur *c, struct st_gguf_kv *kv)
{
    uint32_t et = 0;
    uint64_t n = 0;
    ST_TRY(rd_u32(c, &et, "array element type"));
    ST_TRY(rd_u64(c, &n, "array count"));
    if (et >= ST_GGUF_TYPE_COUNT_ || et == ST_GGUF_ARRAY)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: key '%.*s': %s element type %u",
                          (int)ST_MIN(kv->key.len, 80), kv->key.ptr,
                          et == ST_GGUF_ARRAY ? "arrays of arrays are not supported:" : "invalid array",
                          et);
    size_t esz = et == ST_GGUF_STRING ? 8 : scalar_size[et];
    if (n > left(c) / esz)
        return st_err_set(c->err, ST_ERR_BAD_GGUF,
                          "gguf: key '%.*s': array count %llu cannot fit in the %zu bytes left",
                          (int)ST_MIN(kv->key.len, 80), kv->key.ptr, (unsigned long long)n, left(c));
    kv->elem = (enum st_gguf_type)et;
    kv->n = n;
    kv->val = c->base + c->pos;
    if (et != ST_GGUF_STRING) {
        c->pos += (size_t)n * esz;
        return ST_OK;
    }
    kv->soff = malloc(ST_MAX((size_t)n, 1) * sizeof(*kv->soff));
    if (!kv->soff)
        return st_err_set(c->err, ST_ERR_NOMEM, "gguf: no memory to index %llu strings",
                          (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        struct st_str s;
        kv->soff[i] = c->pos;
        ST_TRY(rd_str(c, &s, "array string element"));
    }
    return ST_OK;
}

static enum st_status parse_kv(struct cur *c, struct st_gguf_kv *kv, int64_t idx)
{
    uint32_t t = 0;
    ST_TRY(rd_str(c, &kv->key, "key"));
    if (kv->key.len == 0)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: key #%lld is empty", (long long)idx);
    ST_TRY(rd_u32(c, &t, "value type"));
    if (t >= ST_GGUF_TYPE_COUNT_)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: key '%.*s': invalid value type %u",
                          (int)ST_MIN(kv->key.len, 80), kv->key.ptr, t);
    kv->type = (enum st_gguf_type)t;
    kv->elem = ST_GGUF_TYPE_COUNT_;
    if (t == ST_GGUF_ARRAY)
        return parse_array(c, kv);
    if (t == ST_GGUF_STRING) {
        struct st_str s;
        enum st_status rc = rd_str(c, &s, "string value");
        kv->val = (const uint8_t *)s.ptr;
        kv->slen = s.len;
        return rc;
    }
    if (left(c) < scalar_size[t])
        return truncated(c, "scalar value");
    kv->val = c->base + c->pos;
    c->pos += scalar_size[t];
    return ST_OK;
}

static enum st_status parse_kvs(struct st_gguf *g, struct cur *c)
{
    enum st_status rc;
    g->kvs = calloc((size_t)ST_MAX(g->n_kv, 1), sizeof(*g->kvs));
    if (!g->kvs)
        return st_err_set(c->err, ST_ERR_NOMEM, "gguf: no memory for %lld keys", (long long)g->n_kv);
    rc = hash_alloc(&g->kv_hash, &g->kv_hcap, g->n_kv, c->err);
    if (rc != ST_OK)
        return rc;
    for (int64_t i = 0; i < g->n_kv; i++) {
        rc = parse_kv(c, &g->kvs[i], i);
        if (rc != ST_OK)
            return rc;
        size_t slot = hash_slot(g->kv_hash, g->kv_hcap, g->kvs[i].key, kv_name, g);
        if (g->kv_hash[slot] != 0)
            return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: duplicate key '%.*s'",
                              (int)ST_MIN(g->kvs[i].key.len, 80), g->kvs[i].key.ptr);
        g->kv_hash[slot] = (uint32_t)i + 1;
    }
    return ST_OK;
}

static enum st_status parse_alignment(struct st_gguf *g, struct st_err *err)
{
    const struct st_gguf_kv *kv = st_gguf_find_kv(g, "general.alignment");
    g->alignment = ST_GGUF_DEFAULT_ALIGNMENT;
    if (!kv)
        return ST_OK;
    if (kv->type != ST_GGUF_U32)
        return st_err_set(err, ST_ERR_BAD_GGUF, "gguf: general.alignment must be UINT32, not %s",
                          st_gguf_type_name(kv->type));
    uint32_t a = le32(kv->val);
    if (a == 0 || (a & (a - 1)) != 0)
        return st_err_set(err, ST_ERR_BAD_GGUF,
                          "gguf: general.alignment %u is not a power of two", a);
    g->alignment = a;
    return ST_OK;
}

/* ---- tensor infos ---------------------------------------------------------- */

static enum st_status tensor_dims(struct cur *c, struct st_gguf_tensor *t)
{
    uint32_t nd = 0, type = 0;
    enum st_status rc = rd_u32(c, &nd, "tensor n_dims");
    if (rc != ST_OK)
        return rc;
    if (nd > ST_GGUF_MAX_DIMS)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: tensor '%.*s': n_dims %u > %d",
                          (int)t->name.len, t->name.ptr, nd, ST_GGUF_MAX_DIMS);
    t->n_dims = (int32_t)nd;
    for (int d = 0; d < ST_GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v = 0;
        rc = rd_u64(c, &v, "tensor dimension");
        if (rc != ST_OK)
            return rc;
        if (v > (uint64_t)INT64_MAX)
            return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: tensor '%.*s': dimension %u is negative",
                              (int)t->name.len, t->name.ptr, d);
        t->ne[d] = (int64_t)v;
    }
    rc = rd_u32(c, &type, "tensor type");
    if (rc != ST_OK)
        return rc;
    if (!st_gguf_ggml_type_name(type))
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: tensor '%.*s': unknown ggml type %u",
                          (int)t->name.len, t->name.ptr, type);
    t->type = (enum st_dtype)type;
    return rd_u64(c, &t->offset, "tensor offset");
}

/* Element count and byte size, with every overflow and block rule checked. */
static enum st_status tensor_size(const struct st_gguf *g, struct st_gguf_tensor *t,
                                  struct st_err *err)
{
    int64_t n = 1;
    int32_t blck, bsz;
    st_model_ggml_type_size((uint32_t)t->type, &blck, &bsz);
    for (int d = 0; d < ST_GGUF_MAX_DIMS; d++) {
        if (__builtin_mul_overflow(n, t->ne[d], &n))
            return st_err_set(err, ST_ERR_BAD_GGUF, "gguf: tensor '%.*s': element count overflows",
                              (int)t->name.len, t->name.ptr);
    }
    if (t->ne[0] % blck != 0)
        return st_err_set(err, ST_ERR_BAD_GGUF,
                          "gguf: tensor '%.*s': ne0 %lld is not a multiple of the %s block size %d",
                          (int)t->name.len, t->name.ptr, (long long)t->ne[0],
                          st_gguf_ggml_type_name((uint32_t)t->type), blck);
    if (__builtin_mul_overflow((uint64_t)(n / blck), (uint64_t)bsz, &t->nbytes))
        return st_err_set(err, ST_ERR_BAD_GGUF, "gguf: tensor '%.*s': byte size overflows",
                          (int)t->name.len, t->name.ptr);
    if (t->offset % g->alignment != 0)
        return st_err_set(err, ST_ERR_BAD_GGUF,
                          "gguf: tensor '%.*s': offset %llu is not a multiple of the alignment %u",
                          (int)t->name.len, t->name.ptr, (unsigned long long)t->offset, g->alignment);
    return ST_OK;
}

static enum st_status parse_tensor(struct st_gguf *g, struct cur *c, int64_t i)
{
    struct st_gguf_tensor *t = &g->tensors[i];
    ST_TRY(rd_str(c, &t->name, "tensor name"));
    if (t->name.len == 0 || t->name.len > ST_GGUF_MAX_NAME)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: tensor #%lld: name length %zu not in 1..%d",
                          (long long)i, t->name.len, ST_GGUF_MAX_NAME);
    ST_TRY(tensor_dims(c, t));
    ST_TRY(tensor_size(g, t, c->err));
    size_t slot = hash_slot(g->t_hash, g->t_hcap, t->name, tensor_name, g);
    if (g->t_hash[slot] != 0)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: duplicate tensor name '%.*s'",
                          (int)t->name.len, t->name.ptr);
    g->t_hash[slot] = (uint32_t)i + 1;
    return ST_OK;
}

static enum st_status parse_tensors(struct st_gguf *g, struct cur *c)
{
    if ((uint64_t)g->n_tensors > left(c) / TI_MIN_BYTES)
        return st_err_set(c->err, ST_ERR_BAD_GGUF,
                          "gguf: tensor count %lld cannot fit in the %zu bytes left",
                          (long long)g->n_tensors, left(c));
    g->tensors = calloc((size_t)ST_MAX(g->n_tensors, 1), sizeof(*g->tensors));
    if (!g->tensors)
        return st_err_set(c->err, ST_ERR_NOMEM, "gguf: no memory for %lld tensors",
                          (long long)g->n_tensors);
    ST_TRY(hash_alloc(&g->t_hash, &g->t_hcap, g->n_tensors, c->err));
    for (int64_t i = 0; i < g->n_tensors; i++)
        ST_TRY(parse_tensor(g, c, i));
    g->data_off = c->pos;
    if (g->n_tensors > 0)
        g->data_off += (g->alignment - c->pos % g->alignment) % g->alignment;
    if (g->data_off > g->size)
        return st_err_set(c->err, ST_ERR_BAD_GGUF,
                          "gguf: the data section (offset %zu) starts past the end of the file (%zu bytes)",
                          g->data_off, g->size);
    size_t room = g->size - g->data_off;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        struct st_gguf_tensor *t = &g->tensors[i];
        if (t->offset > room || t->nbytes > room - t->offset)
            return st_err_set(c->err, ST_ERR_BAD_GGUF,
                              "gguf: tensor '%.*s': data [%llu, +%zu) lies past the end of the "
                              "data section (%zu bytes)", (int)t->name.len, t->name.ptr,
                              (unsigned long long)t->offset, t->nbytes, room);
        t->data = g->base + g->data_off + t->offset;
    }
    return ST_OK;
}

static enum st_status parse_header(struct st_gguf *g, struct cur *c)
{
    uint64_t nt = 0, nkv = 0;
    if (c->size < 4 || memcmp(c->base, GGUF_MAGIC, 4) != 0)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: bad magic (not a GGUF file)");
    c->pos = 4;
    enum st_status rc = rd_u32(c, &g->version, "version");
    if (rc != ST_OK)
        return rc;
    if (g->version != 0 && (g->version & 0xffff) == 0)
        return st_err_set(c->err, ST_ERR_BAD_GGUF,
                          "gguf: version 0x%08x looks byte-swapped: big-endian files are not supported",
                          g->version);
    if (g->version == 1)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: version 1 is no longer supported");
    if (g->version != 2 && g->version != 3)
        return st_err_set(c->err, ST_ERR_BAD_GGUF, "gguf: unsupported version %u (2 and 3 are)",
                          g->version);
    ST_TRY(rd_u64(c, &nt, "tensor count"));
    ST_TRY(rd_u64(c, &nkv, "key/value count"));
    if (nt > INT32_MAX || nkv > INT32_MAX || nkv > left(c) / KV_MIN_BYTES)
        return st_err_set(c->err, ST_ERR_BAD_GGUF,
                          "gguf: counts (%llu tensors, %llu keys) cannot fit in the %zu bytes left",
                          (unsigned long long)nt, (unsigned long long)nkv, left(c));
    g->n_tensors = (int64_t)nt;
    g->n_kv = (int64_t)nkv;
    return ST_OK;
}

static enum st_status parse(struct st_gguf *g, struct st_err *err)
{
    struct cur c = { g->base, g->size, 0, err };
    ST_TRY(parse_header(g, &c));
    ST_TRY(parse_kvs(g, &c));
    ST_TRY(parse_alignment(g, err));
    return parse_tensors(g, &c);
}

void st_gguf_close(struct st_gguf *g)
{
    if (!g)
        return;
    for (int64_t i = 0; g->kvs && i < g->n_kv; i++)
        free(g->kvs[i].soff);
    free(g->kvs);
    free(g->tensors);
    free(g->kv_hash);
    free(g->t_hash);
    if (g->mapped)
        munmap((void *)g->base, g->size);
    free(g);
}

enum st_status st_gguf_open_mem(const void *buf, size_t size, struct st_gguf **out,
                                struct st_err *err)
{
    *out = NULL;
    struct st_gguf *g = calloc(1, sizeof(*g));
    if (!g)
        return st_err_set(err, ST_ERR_NOMEM, "gguf: no memory");
    g->base = buf;
    g->size = size;
    enum st_status rc = parse(g, err);
    if (rc != ST_OK) {
        st_gguf_close(g);
        return rc;
    }
    *out = g;
    return ST_OK;
}

enum st_status st_gguf_open(const char *path, struct st_gguf **out, struct st_err *err)
{
    struct stat sb;
    enum st_status rc;
    void *map;

    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return st_err_errno(err, ST_ERR_IO, "open %s", path);
    if (fstat(fd, &sb) != 0) {
        rc = st_err_errno(err, ST_ERR_IO, "fstat %s", path);
        goto out_close;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size < 24) {
        rc = st_err_set(err, S_ISREG(sb.st_mode) ? ST_ERR_BAD_GGUF : ST_ERR_IO,
                        "gguf: %s: %s", path, S_ISREG(sb.st_mode) ?
                        "too small for a GGUF header (24 bytes)" : "not a regular file");
        goto out_close;
    }
    map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        rc = st_err_errno(err, ST_ERR_IO, "mmap %s", path);
        goto out_close;
    }
    rc = st_gguf_open_mem(map, (size_t)sb.st_size, out, err);
    if (rc != ST_OK) {
        munmap(map, (size_t)sb.st_size);
        goto out_close;
    }
    (*out)->mapped = true;
    close(fd);                  /* the mapping outlives the descriptor */
    return ST_OK;

out_close:
    close(fd);
    return rc;
}

/* ---- accessors ------------------------------------------------------------ */

uint32_t st_gguf_version(const struct st_gguf *g) { return g->version; }
uint32_t st_gguf_alignment(const struct st_gguf *g) { return g->alignment; }
size_t st_gguf_data_offset(const struct st_gguf *g) { return g->data_off; }
size_t st_gguf_file_size(const struct st_gguf *g) { return g->size; }
int64_t st_gguf_n_tensors(const struct st_gguf *g) { return g->n_tensors; }
int64_t st_gguf_n_kv(const struct st_gguf *g) { return g->n_kv; }

bool st_gguf_is_strict_layout(const struct st_gguf *g)
{
    uint64_t expect = 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        if (g->tensors[i].offset != expect)
            return false;
        expect += g->tensors[i].nbytes;
        expect += (g->alignment - expect % g->alignment) % g->alignment;
    }
    return true;
}

const struct st_gguf_tensor *st_gguf_tensor(const struct st_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const struct st_gguf_tensor *st_gguf_find_tensor(const struct st_gguf *g, const char *name)
{
    size_t slot = hash_slot(g->t_hash, g->t_hcap, st_str_c(name), tensor_name, g);
    return g->t_hash[slot] ? &g->tensors[g->t_hash[slot] - 1] : NULL;
}

const struct st_gguf_kv *st_gguf_kv_at(const struct st_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? &g->kvs[i] : NULL;
}

const struct st_gguf_kv *st_gguf_find_kv(const struct st_gguf *g, const char *key)
{
    size_t slot = hash_slot(g->kv_hash, g->kv_hcap, st_str_c(key), kv_name, g);
    return g->kv_hash[slot] ? &g->kvs[g->kv_hash[slot] - 1] : NULL;
}

struct st_str st_gguf_kv_key(const struct st_gguf_kv *kv) { return kv->key; }
enum st_gguf_type st_gguf_kv_type(const struct st_gguf_kv *kv) { return kv->type; }
uint64_t st_gguf_arr_n(const struct st_gguf_kv *kv) { return kv->type == ST_GGUF_ARRAY ? kv->n : 0; }
enum st_gguf_type st_gguf_arr_type(const struct st_gguf_kv *kv) { return kv->elem; }

const void *st_gguf_arr_data(const struct st_gguf_kv *kv)
{
    return kv->type == ST_GGUF_ARRAY && kv->elem != ST_GGUF_STRING ? kv->val : NULL;
}

/* The value at p of scalar type t as the widest types (false for STRING/ARRAY). */
static bool scalar_num(enum st_gguf_type t, const uint8_t *p, int64_t *iv, uint64_t *uv,
                       double *fv, int *kind)
{
    uint32_t u32;
    uint64_t u64;
    float f = 0;
    switch (t) {
    case ST_GGUF_U8: case ST_GGUF_BOOL: *uv = p[0]; *kind = 1; return true;
    case ST_GGUF_I8: *iv = (int8_t)p[0]; *kind = 0; return true;
    case ST_GGUF_U16: *uv = (uint64_t)(p[0] | p[1] << 8); *kind = 1; return true;
    case ST_GGUF_I16: *iv = (int16_t)(uint16_t)(p[0] | p[1] << 8); *kind = 0; return true;
    case ST_GGUF_U32: *uv = le32(p); *kind = 1; return true;
    case ST_GGUF_I32: *iv = (int32_t)le32(p); *kind = 0; return true;
    case ST_GGUF_U64: *uv = le64(p); *kind = 1; return true;
    case ST_GGUF_I64: *iv = (int64_t)le64(p); *kind = 0; return true;
    case ST_GGUF_F32: u32 = le32(p); memcpy(&f, &u32, 4); *fv = f; *kind = 2; return true;
    case ST_GGUF_F64: u64 = le64(p); memcpy(fv, &u64, 8); *kind = 2; return true;
    default: return false;
    }
}

static bool num_i64(enum st_gguf_type t, const uint8_t *p, int64_t *out)
{
    int64_t iv = 0; uint64_t uv = 0; double fv; int kind;
    if (!scalar_num(t, p, &iv, &uv, &fv, &kind) || kind == 2)
        return false;
    if (kind == 1) {
        if (uv > (uint64_t)INT64_MAX)
            return false;
        iv = (int64_t)uv;
    }
    *out = iv;
    return true;
}

static bool num_f64(enum st_gguf_type t, const uint8_t *p, double *out)
{
    int64_t iv = 0; uint64_t uv = 0; double fv = 0; int kind;
    if (!scalar_num(t, p, &iv, &uv, &fv, &kind) || t == ST_GGUF_BOOL)
        return false;
    *out = kind == 0 ? (double)iv : kind == 1 ? (double)uv : fv;
    return true;
}

bool st_gguf_kv_i64(const struct st_gguf_kv *kv, int64_t *out) { return num_i64(kv->type, kv->val, out); }
bool st_gguf_kv_f64(const struct st_gguf_kv *kv, double *out) { return num_f64(kv->type, kv->val, out); }

bool st_gguf_kv_u64(const struct st_gguf_kv *kv, uint64_t *out)
{
    int64_t iv = 0; uint64_t uv = 0; double fv; int kind;
    if (!scalar_num(kv->type, kv->val, &iv, &uv, &fv, &kind) || kind == 2 || (kind == 0 && iv < 0))
        return false;
    *out = kind == 1 ? uv : (uint64_t)iv;
    return true;
}

bool st_gguf_kv_bool(const struct st_gguf_kv *kv, bool *out)
{
    int64_t v = 0;
    uint64_t u = 0;
    if (st_gguf_kv_i64(kv, &v))
        *out = v != 0;
    else if (st_gguf_kv_u64(kv, &u))
        *out = u != 0;
    else
        return false;
    return true;
}

bool st_gguf_kv_str(const struct st_gguf_kv *kv, struct st_str *out)
{
    if (kv->type != ST_GGUF_STRING)
        return false;
    out->ptr = (const char *)kv->val;
    out->len = (size_t)kv->slen;
    return true;
}

bool st_gguf_arr_str(const struct st_gguf_kv *kv, uint64_t i, struct st_str *out)
{
    if (kv->type != ST_GGUF_ARRAY || kv->elem != ST_GGUF_STRING || i >= kv->n)
        return false;
    /* kv->val points into the mapping at offset soff[0]; recover the base. */
    const uint8_t *p = kv->val + (kv->soff[i] - kv->soff[0]);
    out->len = (size_t)le64(p);
    out->ptr = (const char *)p + 8;
    return true;
}

bool st_gguf_arr_i64(const struct st_gguf_kv *kv, uint64_t i, int64_t *out)
{
    if (kv->type != ST_GGUF_ARRAY || kv->elem == ST_GGUF_STRING || i >= kv->n)
        return false;
    return num_i64(kv->elem, kv->val + i * scalar_size[kv->elem], out);
}

bool st_gguf_arr_f64(const struct st_gguf_kv *kv, uint64_t i, double *out)
{
    if (kv->type != ST_GGUF_ARRAY || kv->elem == ST_GGUF_STRING || i >= kv->n)
        return false;
    return num_f64(kv->elem, kv->val + i * scalar_size[kv->elem], out);
}
