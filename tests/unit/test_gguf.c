/* test_gguf.c -- st_gguf reader and writer: a good file round trip through
 * the writer (every metadata type, arrays, tensors), the strict layout,
 * and handcrafted bad files (bad magic and versions, duplicates, tensors
 * past the end, huge counts, misalignment, bad shapes, truncation at every
 * byte). Bad files are built byte by byte with the little builder below.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "strata/gguf.h"
#include "strata/gguf_write.h"
#include "support.h"

/* ---- a byte builder for handcrafted files ------------------------------- */

struct gb {
    uint8_t *p;
    size_t   n, cap;
};

static void gb_put(struct gb *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void gb_u32(struct gb *b, uint32_t v) { gb_put(b, &v, 4); }  /* host is little-endian */
static void gb_u64(struct gb *b, uint64_t v) { gb_put(b, &v, 8); }

static void gb_str(struct gb *b, const char *s)
{
    gb_u64(b, strlen(s));
    gb_put(b, s, strlen(s));
}

static void gb_header(struct gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_put(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

static void gb_kv_u32(struct gb *b, const char *key, uint32_t v)
{
    gb_str(b, key);
    gb_u32(b, ST_GGUF_U32);
    gb_u32(b, v);
}

static void gb_tensor(struct gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                      uint32_t type, uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        gb_u64(b, ne[i]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

static void gb_pad(struct gb *b, size_t align)
{
    static const uint8_t z[256];
    gb_put(b, z, (align - b->n % align) % align);
}

/* Parse b's bytes; returns the status and leaves the message in err. */
static enum st_status parse(const struct gb *b, struct st_err *err)
{
    struct st_gguf *g = NULL;
    enum st_status rc = st_gguf_open_mem(b->p, b->n, &g, err);
    if (rc == ST_OK)
        ck_assert_ptr_nonnull(g);
    else
        ck_assert_ptr_null(g);
    st_gguf_close(g);
    return rc;
}

static void expect_bad(struct gb *b, const char *needle)
{
    struct st_err err = { 0 };
    ck_assert_int_eq(parse(b, &err), ST_ERR_BAD_GGUF);
    ck_assert_msg(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
    free(b->p);
}

/* One F32 tensor "t" of 8 elements at offset 0, with one key. */
static void gb_minimal(struct gb *b, uint32_t version)
{
    uint64_t ne[1] = { 8 };
    float data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    gb_header(b, version, 1, 1);
    gb_kv_u32(b, "a.key", 7);
    gb_tensor(b, "t", 1, ne, 0, 0);
    gb_pad(b, 32);
    gb_put(b, data, sizeof(data));
}

/* ---- the good file, through the writer ------------------------------------ */

static char tmpdir[256];
static char path[512];

static void setup(void)
{
    support_tmpdir(tmpdir, sizeof(tmpdir));
    snprintf(path, sizeof(path), "%s/m.gguf", tmpdir);
}

static void teardown(void)
{
    support_rmtree(tmpdir);
}

static float f32data[4 * 6];
static uint8_t q8data[2 * 34];
static uint8_t q4kdata[3 * 144];

static void write_good(uint32_t alignment)
{
    struct st_gguf_writer *w = st_gguf_writer_new(alignment);
    struct st_err err = { 0 };
    uint8_t u8 = 200;
    int8_t i8 = -100;
    uint16_t u16 = 60000;
    int16_t i16 = -30000;
    double f64 = 2.5e300;
    int64_t i64 = -5000000000ll;
    const char *strs[] = { "alpha", "", "gamma \xe2\x9c\x93" };
    int32_t ints[4] = { -1, 0, 1, 2147483647 };
    float fl[2] = { 0.5f, -1.25f };
    st_gguf_writer_set_scalar(w, "t.u8", ST_GGUF_U8, &u8);
    st_gguf_writer_set_scalar(w, "t.i8", ST_GGUF_I8, &i8);
    st_gguf_writer_set_scalar(w, "t.u16", ST_GGUF_U16, &u16);
    st_gguf_writer_set_scalar(w, "t.i16", ST_GGUF_I16, &i16);
    st_gguf_writer_set_u32(w, "t.u32", 4000000000u);
    st_gguf_writer_set_i32(w, "t.i32", -7);
    st_gguf_writer_set_f32(w, "t.f32", 1e-6f);
    st_gguf_writer_set_bool(w, "t.bool", true);
    st_gguf_writer_set_str(w, "t.str", "hello");
    st_gguf_writer_set_u64(w, "t.u64", 1ull << 40);
    st_gguf_writer_set_scalar(w, "t.i64", ST_GGUF_I64, &i64);
    st_gguf_writer_set_scalar(w, "t.f64", ST_GGUF_F64, &f64);
    st_gguf_writer_set_arr_str(w, "t.astr", strs, 3);
    st_gguf_writer_set_arr(w, "t.ai32", ST_GGUF_I32, ints, 4);
    st_gguf_writer_set_arr(w, "t.af32", ST_GGUF_F32, fl, 2);
    st_gguf_writer_set_arr(w, "t.aempty", ST_GGUF_U8, NULL, 0);
    for (size_t i = 0; i < sizeof(f32data) / 4; i++)
        f32data[i] = (float)i * 0.5f;
    for (size_t i = 0; i < sizeof(q8data); i++)
        q8data[i] = (uint8_t)(i * 7);
    for (size_t i = 0; i < sizeof(q4kdata); i++)
        q4kdata[i] = (uint8_t)(i * 13);
    st_gguf_writer_add_tensor(w, "f32.weight", ST_DTYPE_F32, 2, (int64_t[]){ 4, 6 }, f32data);
    st_gguf_writer_add_tensor(w, "q8.weight", ST_DTYPE_Q8_0, 2, (int64_t[]){ 32, 2 }, q8data);
    st_gguf_writer_add_tensor(w, "q4k.weight", ST_DTYPE_Q4_K, 3, (int64_t[]){ 256, 1, 3 }, q4kdata);
    ck_assert_int_eq(st_gguf_writer_write(w, path, &err), ST_OK);
    st_gguf_writer_free(w);
}

START_TEST(test_gguf_round_trip_every_type)
{
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    struct st_str s;
    int64_t iv;
    uint64_t uv;
    double fv;
    bool bv;

    write_good(0);
    ck_assert_int_eq(st_gguf_open(path, &g, &err), ST_OK);
    ck_assert_uint_eq(st_gguf_version(g), 3);
    ck_assert_int_eq(st_gguf_n_kv(g), 16);
    ck_assert(st_gguf_kv_i64(st_gguf_find_kv(g, "t.u8"), &iv) && iv == 200);
    ck_assert(st_gguf_kv_i64(st_gguf_find_kv(g, "t.i8"), &iv) && iv == -100);
    ck_assert(st_gguf_kv_i64(st_gguf_find_kv(g, "t.u16"), &iv) && iv == 60000);
    ck_assert(st_gguf_kv_i64(st_gguf_find_kv(g, "t.i16"), &iv) && iv == -30000);
    ck_assert(st_gguf_kv_u64(st_gguf_find_kv(g, "t.u32"), &uv) && uv == 4000000000u);
    ck_assert(st_gguf_kv_i64(st_gguf_find_kv(g, "t.i32"), &iv) && iv == -7);
    ck_assert(st_gguf_kv_f64(st_gguf_find_kv(g, "t.f32"), &fv) && (float)fv == 1e-6f);
    ck_assert(st_gguf_kv_bool(st_gguf_find_kv(g, "t.bool"), &bv) && bv);
    ck_assert(st_gguf_kv_str(st_gguf_find_kv(g, "t.str"), &s) && st_str_eq_c(s, "hello"));
    ck_assert(st_gguf_kv_u64(st_gguf_find_kv(g, "t.u64"), &uv) && uv == 1ull << 40);
    ck_assert(st_gguf_kv_i64(st_gguf_find_kv(g, "t.i64"), &iv) && iv == -5000000000ll);
    ck_assert(st_gguf_kv_f64(st_gguf_find_kv(g, "t.f64"), &fv) && fv == 2.5e300);
    ck_assert_int_eq(st_gguf_kv_type(st_gguf_find_kv(g, "t.f64")), ST_GGUF_F64);
    ck_assert(!st_gguf_kv_str(st_gguf_find_kv(g, "t.u8"), &s));     /* no silent conversion */
    ck_assert(!st_gguf_kv_i64(st_gguf_find_kv(g, "t.f32"), &iv));
    ck_assert(!st_gguf_kv_u64(st_gguf_find_kv(g, "t.i8"), &uv));     /* negative */
    ck_assert_ptr_null(st_gguf_find_kv(g, "t.missing"));
    st_gguf_close(g);
}
END_TEST

START_TEST(test_gguf_arrays)
{
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    struct st_str s;
    int64_t iv;
    double fv;

    write_good(0);
    ck_assert_int_eq(st_gguf_open(path, &g, &err), ST_OK);
    const struct st_gguf_kv *a = st_gguf_find_kv(g, "t.astr");
    ck_assert_int_eq(st_gguf_kv_type(a), ST_GGUF_ARRAY);
    ck_assert_int_eq(st_gguf_arr_type(a), ST_GGUF_STRING);
    ck_assert_uint_eq(st_gguf_arr_n(a), 3);
    ck_assert(st_gguf_arr_str(a, 2, &s) && st_str_eq_c(s, "gamma \xe2\x9c\x93"));
    ck_assert(st_gguf_arr_str(a, 1, &s) && s.len == 0);
    ck_assert(st_gguf_arr_str(a, 0, &s) && st_str_eq_c(s, "alpha"));
    ck_assert(!st_gguf_arr_str(a, 3, &s));
    ck_assert(!st_gguf_arr_i64(a, 0, &iv));
    ck_assert_ptr_null(st_gguf_arr_data(a));
    const struct st_gguf_kv *b = st_gguf_find_kv(g, "t.ai32");
    ck_assert(st_gguf_arr_i64(b, 0, &iv) && iv == -1);
    ck_assert(st_gguf_arr_i64(b, 3, &iv) && iv == 2147483647);
    ck_assert(!st_gguf_arr_i64(b, 4, &iv));
    ck_assert_ptr_nonnull(st_gguf_arr_data(b));
    ck_assert(st_gguf_arr_f64(st_gguf_find_kv(g, "t.af32"), 1, &fv) && fv == -1.25);
    ck_assert_uint_eq(st_gguf_arr_n(st_gguf_find_kv(g, "t.aempty")), 0);
    ck_assert_uint_eq(st_gguf_arr_n(st_gguf_find_kv(g, "t.u8")), 0);  /* not an array */
    const struct st_gguf_kv *out;
    ck_assert_int_eq(st_gguf_get_arr(g, "t.astr", &out, &err), ST_OK);
    ck_assert_ptr_eq(out, a);
    ck_assert_int_eq(st_gguf_get_arr(g, "t.u8", &out, &err), ST_ERR_BAD_GGUF);
    st_gguf_close(g);
}
END_TEST

START_TEST(test_gguf_typed_getters_accept_any_int_width)
{
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    uint32_t u;
    int64_t i;
    float f;
    bool b;
    struct st_str s;

    write_good(0);
    ck_assert_int_eq(st_gguf_open(path, &g, &err), ST_OK);
    ck_assert_int_eq(st_gguf_get_u32(g, "t.u8", &u, &err), ST_OK);
    ck_assert_uint_eq(u, 200);
    ck_assert_int_eq(st_gguf_get_u32(g, "t.u16", &u, &err), ST_OK);
    ck_assert_uint_eq(u, 60000);
    ck_assert_int_eq(st_gguf_get_u32(g, "t.u64", &u, &err), ST_ERR_BAD_GGUF);  /* > 2^32 */
    ck_assert_ptr_nonnull(strstr(err.msg, "t.u64"));
    ck_assert_int_eq(st_gguf_get_u32(g, "t.i32", &u, &err), ST_ERR_BAD_GGUF);  /* negative */
    ck_assert_int_eq(st_gguf_get_i64(g, "t.i16", &i, &err), ST_OK);
    ck_assert_int_eq(i, -30000);
    ck_assert_int_eq(st_gguf_get_i64(g, "t.str", &i, &err), ST_ERR_BAD_GGUF);
    ck_assert_int_eq(st_gguf_get_f32(g, "t.f32", &f, &err), ST_OK);
    ck_assert(f == 1e-6f);
    ck_assert_int_eq(st_gguf_get_f32(g, "t.u32", &f, &err), ST_OK);          /* int -> float */
    ck_assert(f == 4e9f);
    ck_assert_int_eq(st_gguf_get_bool(g, "t.bool", &b, &err), ST_OK);
    ck_assert(b);
    ck_assert_int_eq(st_gguf_get_str(g, "t.str", &s, &err), ST_OK);
    ck_assert(st_str_eq_c(s, "hello"));
    u = 12345;
    ck_assert_int_eq(st_gguf_get_u32(g, "no.such.key", &u, &err), ST_ERR_NOT_FOUND);
    ck_assert_uint_eq(u, 12345);
    ck_assert_ptr_nonnull(strstr(err.msg, "no.such.key"));
    st_gguf_close(g);
}
END_TEST

START_TEST(test_gguf_tensors_and_strict_layout)
{
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };

    write_good(0);
    ck_assert_int_eq(st_gguf_open(path, &g, &err), ST_OK);
    ck_assert_int_eq(st_gguf_n_tensors(g), 3);
    ck_assert_uint_eq(st_gguf_alignment(g), 32);
    ck_assert_uint_eq(st_gguf_data_offset(g) % 32, 0);
    ck_assert(st_gguf_is_strict_layout(g));
    const struct st_gguf_tensor *f = st_gguf_find_tensor(g, "f32.weight");
    const struct st_gguf_tensor *q = st_gguf_find_tensor(g, "q8.weight");
    const struct st_gguf_tensor *k = st_gguf_find_tensor(g, "q4k.weight");
    ck_assert_ptr_eq(f, st_gguf_tensor(g, 0));
    ck_assert_int_eq(f->n_dims, 2);
    ck_assert(f->ne[0] == 4 && f->ne[1] == 6 && f->ne[2] == 1 && f->ne[3] == 1);
    ck_assert_uint_eq(f->nbytes, sizeof(f32data));
    ck_assert_int_eq(memcmp(f->data, f32data, sizeof(f32data)), 0);
    /* offsets: running sum of sizes, each padded to 32 */
    ck_assert_uint_eq(f->offset, 0);
    ck_assert_uint_eq(q->offset, 96);
    ck_assert_uint_eq(k->offset, 96 + 96);
    ck_assert_int_eq(q->type, ST_DTYPE_Q8_0);
    ck_assert_int_eq(memcmp(q->data, q8data, sizeof(q8data)), 0);
    ck_assert_int_eq(k->n_dims, 3);
    ck_assert(k->ne[0] == 256 && k->ne[1] == 1 && k->ne[2] == 3);
    ck_assert_uint_eq(k->nbytes, sizeof(q4kdata));
    ck_assert_int_eq(memcmp(k->data, q4kdata, sizeof(q4kdata)), 0);
    ck_assert_ptr_null(st_gguf_find_tensor(g, "nope"));
    ck_assert_ptr_null(st_gguf_tensor(g, 3));
    /* the file ends right after the last tensor's padding */
    ck_assert_uint_eq(st_gguf_file_size(g), st_gguf_data_offset(g) + 192 + 448);
    st_gguf_close(g);
}
END_TEST

START_TEST(test_gguf_custom_alignment)
{
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    uint32_t a;

    write_good(64);
    ck_assert_int_eq(st_gguf_open(path, &g, &err), ST_OK);
    ck_assert_uint_eq(st_gguf_alignment(g), 64);
    ck_assert_int_eq(st_gguf_get_u32(g, "general.alignment", &a, &err), ST_OK);
    ck_assert_uint_eq(a, 64);
    ck_assert_uint_eq(st_gguf_data_offset(g) % 64, 0);
    ck_assert_uint_eq(st_gguf_tensor(g, 1)->offset, 128);
    ck_assert_uint_eq(st_gguf_tensor(g, 2)->offset, 256);
    ck_assert(st_gguf_is_strict_layout(g));
    st_gguf_close(g);
}
END_TEST

START_TEST(test_gguf_reads_version_2)
{
    struct gb b = { 0 };
    struct st_err err = { 0 };
    gb_minimal(&b, 2);
    ck_assert_int_eq(parse(&b, &err), ST_OK);
    free(b.p);
}
END_TEST

START_TEST(test_gguf_tolerates_gaps_but_reports_layout)
{
    struct gb b = { 0 };
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    uint64_t ne[1] = { 8 };
    static const uint8_t data[128];
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "a", 1, ne, 0, 0);
    gb_tensor(&b, "b", 1, ne, 0, 64);             /* strict would be 32 */
    gb_pad(&b, 32);
    gb_put(&b, data, 96);
    ck_assert_int_eq(st_gguf_open_mem(b.p, b.n, &g, &err), ST_OK);
    ck_assert(!st_gguf_is_strict_layout(g));
    st_gguf_close(g);
    free(b.p);
}
END_TEST

START_TEST(test_gguf_writer_rejects_bad_calls)
{
    struct st_err err = { 0 };
    struct st_gguf_writer *w = st_gguf_writer_new(0);
    st_gguf_writer_set_u32(w, "k", 1);
    st_gguf_writer_set_u32(w, "k", 2);
    ck_assert_int_eq(st_gguf_writer_write(w, path, &err), ST_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "duplicate key"));
    st_gguf_writer_free(w);
    w = st_gguf_writer_new(0);
    st_gguf_writer_add_tensor(w, "x", ST_DTYPE_Q4_K, 1, (int64_t[]){ 100 }, q4kdata);
    ck_assert_int_eq(st_gguf_writer_write(w, path, &err), ST_ERR_INVALID);
    st_gguf_writer_free(w);
    struct stat sb;
    ck_assert_int_ne(stat(path, &sb), 0);          /* nothing written */
}
END_TEST

/* ---- bad files ------------------------------------------------------------ */

START_TEST(test_gguf_rejects_bad_magic)
{
    struct gb b = { 0 };
    gb_minimal(&b, 3);
    b.p[0] = 'X';
    expect_bad(&b, "magic");
}
END_TEST

START_TEST(test_gguf_rejects_bad_versions)
{
    static const uint32_t versions[] = { 0, 1, 4, 0x03000000 };
    static const char *const needles[] = { "version 0", "version 1", "version 4", "byte-swapped" };
    for (int i = 0; i < 4; i++) {
        struct gb b = { 0 };
        gb_minimal(&b, versions[i]);
        expect_bad(&b, needles[i]);
    }
}
END_TEST

START_TEST(test_gguf_rejects_duplicate_key)
{
    struct gb b = { 0 };
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "dup.key", 1);
    gb_kv_u32(&b, "dup.key", 2);
    expect_bad(&b, "duplicate key 'dup.key'");
}
END_TEST

START_TEST(test_gguf_rejects_duplicate_tensor)
{
    struct gb b = { 0 };
    uint64_t ne[1] = { 8 };
    static const uint8_t data[64];
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "same", 1, ne, 0, 0);
    gb_tensor(&b, "same", 1, ne, 0, 32);
    gb_pad(&b, 32);
    gb_put(&b, data, 64);
    expect_bad(&b, "duplicate tensor name 'same'");
}
END_TEST

START_TEST(test_gguf_rejects_tensor_past_end)
{
    struct gb b = { 0 };
    uint64_t ne[1] = { 8 };
    static const uint8_t data[32];
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "far", 1, ne, 0, 1ull << 40);
    gb_pad(&b, 32);
    gb_put(&b, data, 32);
    expect_bad(&b, "'far'");
    b = (struct gb){ 0 };
    gb_minimal(&b, 3);
    b.n -= 1;                                      /* last data byte missing */
    expect_bad(&b, "past the end");
}
END_TEST

START_TEST(test_gguf_rejects_huge_counts)
{
    struct gb b = { 0 };
    gb_header(&b, 3, 0, 1ull << 60);
    expect_bad(&b, "cannot fit");
    b = (struct gb){ 0 };
    gb_header(&b, 3, 1ull << 60, 0);
    expect_bad(&b, "cannot fit");
    b = (struct gb){ 0 };                          /* array count */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "arr");
    gb_u32(&b, ST_GGUF_ARRAY);
    gb_u32(&b, ST_GGUF_U32);
    gb_u64(&b, 1ull << 62);
    expect_bad(&b, "array count");
    b = (struct gb){ 0 };                          /* string array count */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "arr");
    gb_u32(&b, ST_GGUF_ARRAY);
    gb_u32(&b, ST_GGUF_STRING);
    gb_u64(&b, UINT64_MAX);
    expect_bad(&b, "array count");
    b = (struct gb){ 0 };                          /* string length */
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, UINT64_MAX);
    gb_pad(&b, 64);                                /* room for the key count check */
    expect_bad(&b, "claims");
    b = (struct gb){ 0 };                          /* element count overflow */
    uint64_t ne[4] = { 1ull << 32, 1ull << 32, 1ull << 32, 1 };
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "big", 4, ne, 0, 0);
    expect_bad(&b, "overflow");
    b = (struct gb){ 0 };                          /* a dimension that is negative as i64 */
    uint64_t neg[1] = { 1ull << 63 };
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "neg", 1, neg, 0, 0);
    expect_bad(&b, "negative");
}
END_TEST

START_TEST(test_gguf_rejects_misaligned_offset)
{
    struct gb b = { 0 };
    uint64_t ne[1] = { 8 };
    static const uint8_t data[64];
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "t", 1, ne, 0, 8);
    gb_pad(&b, 32);
    gb_put(&b, data, 64);
    expect_bad(&b, "not a multiple of the alignment");
}
END_TEST

START_TEST(test_gguf_rejects_bad_alignment_key)
{
    struct gb b = { 0 };
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 48);
    expect_bad(&b, "power of two");
    b = (struct gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 0);
    expect_bad(&b, "power of two");
    b = (struct gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, ST_GGUF_U64);
    gb_u64(&b, 32);
    expect_bad(&b, "UINT32");
}
END_TEST

START_TEST(test_gguf_rejects_bad_tensor_shapes)
{
    struct gb b = { 0 };
    uint64_t ne5[5] = { 1, 1, 1, 1, 1 }, ne100[1] = { 100 }, ne32[1] = { 32 };
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "five", 5, ne5, 0, 0);
    expect_bad(&b, "n_dims 5");
    b = (struct gb){ 0 };
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "k", 1, ne100, 12, 0);             /* Q4_K row of 100 */
    expect_bad(&b, "not a multiple of the Q4_K block size 256");
    b = (struct gb){ 0 };
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "gone", 1, ne32, 4, 0);            /* id 4 was removed from ggml */
    expect_bad(&b, "unknown ggml type 4");
    b = (struct gb){ 0 };
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "0123456789012345678901234567890123456789012345678901234567890123", 1, ne32,
              0, 0);                                 /* 64 bytes: too long */
    expect_bad(&b, "name length 64");
}
END_TEST

START_TEST(test_gguf_rejects_bad_value_types)
{
    struct gb b = { 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "k");
    gb_u32(&b, 13);
    gb_u32(&b, 0);
    expect_bad(&b, "invalid value type 13");
    b = (struct gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "nested");
    gb_u32(&b, ST_GGUF_ARRAY);
    gb_u32(&b, ST_GGUF_ARRAY);
    gb_u64(&b, 0);
    expect_bad(&b, "arrays of arrays");
    b = (struct gb){ 0 };
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "");
    gb_u32(&b, ST_GGUF_U8);
    gb_put(&b, "x", 1);
    gb_pad(&b, 64);
    expect_bad(&b, "empty");
}
END_TEST

/* Every proper prefix of a small valid file fails cleanly, up to the end
 * of the last tensor's data; past that only padding is missing. */
START_TEST(test_gguf_truncated_at_every_byte)
{
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    write_good(0);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    uint8_t *buf = malloc(1 << 16);
    size_t n = fread(buf, 1, 1 << 16, f);
    fclose(f);
    ck_assert_int_eq(st_gguf_open_mem(buf, n, &g, &err), ST_OK);
    const struct st_gguf_tensor *last = st_gguf_tensor(g, st_gguf_n_tensors(g) - 1);
    size_t need = st_gguf_data_offset(g) + last->offset + last->nbytes;
    st_gguf_close(g);
    for (size_t len = 0; len < n; len++) {
        uint8_t *copy = malloc(len ? len : 1);      /* exact size: ASan sees any overread */
        memcpy(copy, buf, len);
        enum st_status rc = st_gguf_open_mem(copy, len, &g, &err);
        ck_assert_msg(len >= need ? rc == ST_OK : rc == ST_ERR_BAD_GGUF,
                      "prefix %zu of %zu: status %d (%s)", len, n, rc, err.msg);
        st_gguf_close(g);
        g = NULL;
        free(copy);
    }
    free(buf);
}
END_TEST

START_TEST(test_gguf_open_reports_io_errors)
{
    struct st_gguf *g = NULL;
    struct st_err err = { 0 };
    char p2[600];
    ck_assert_int_eq(st_gguf_open("/nonexistent/x.gguf", &g, &err), ST_ERR_IO);
    ck_assert_ptr_null(g);
    ck_assert_int_eq(st_gguf_open(tmpdir, &g, &err), ST_ERR_IO);   /* a directory */
    snprintf(p2, sizeof(p2), "%s/short.gguf", tmpdir);
    FILE *f = fopen(p2, "wb");
    fwrite("GGUF\3\0\0\0", 1, 8, f);
    fclose(f);
    ck_assert_int_eq(st_gguf_open(p2, &g, &err), ST_ERR_BAD_GGUF);
    ck_assert_ptr_null(g);
}
END_TEST

static Suite *gguf_suite(void)
{
    Suite *s = suite_create("gguf");
    TCase *good = tcase_create("good");
    TCase *bad = tcase_create("bad");

    tcase_add_checked_fixture(good, setup, teardown);
    tcase_add_checked_fixture(bad, setup, teardown);
    tcase_add_test(good, test_gguf_round_trip_every_type);
    tcase_add_test(good, test_gguf_arrays);
    tcase_add_test(good, test_gguf_typed_getters_accept_any_int_width);
    tcase_add_test(good, test_gguf_tensors_and_strict_layout);
    tcase_add_test(good, test_gguf_custom_alignment);
    tcase_add_test(good, test_gguf_reads_version_2);
    tcase_add_test(good, test_gguf_tolerates_gaps_but_reports_layout);
    tcase_add_test(good, test_gguf_writer_rejects_bad_calls);
    tcase_add_test(bad, test_gguf_rejects_bad_magic);
    tcase_add_test(bad, test_gguf_rejects_bad_versions);
    tcase_add_test(bad, test_gguf_rejects_duplicate_key);
    tcase_add_test(bad, test_gguf_rejects_duplicate_tensor);
    tcase_add_test(bad, test_gguf_rejects_tensor_past_end);
    tcase_add_test(bad, test_gguf_rejects_huge_counts);
    tcase_add_test(bad, test_gguf_rejects_misaligned_offset);
    tcase_add_test(bad, test_gguf_rejects_bad_alignment_key);
    tcase_add_test(bad, test_gguf_rejects_bad_tensor_shapes);
    tcase_add_test(bad, test_gguf_rejects_bad_value_types);
    tcase_add_test(bad, test_gguf_truncated_at_every_byte);
    tcase_add_test(bad, test_gguf_open_reports_io_errors);
    tcase_set_timeout(bad, 30);
    suite_add_tcase(s, good);
    suite_add_tcase(s, bad);
    return s;
}

int main(void)
{
    return support_run_suite(gguf_suite(), CK_FORK);
}
