/* gguf_get.c -- typed metadata getters by key, and the table of every
 * ggml tensor type's block size (ENGINE.md 2.1, including the types strata
 * cannot compute on, so the reader can still bounds-check and inspect
 * such files).
 */
#include "internal.h"
#include "strata/gguf.h"

struct ggml_type_row {
    const char *name;
    int32_t     blck;
    int32_t     bytes;
};

static const struct ggml_type_row ggml_types[] = {
    [0] = { "F32", 1, 4 },        [1] = { "F16", 1, 2 },
    [2] = { "Q4_0", 32, 18 },     [3] = { "Q4_1", 32, 20 },
    [6] = { "Q5_0", 32, 22 },     [7] = { "Q5_1", 32, 24 },
    [8] = { "Q8_0", 32, 34 },     [9] = { "Q8_1", 32, 36 },
    [10] = { "Q2_K", 256, 84 },   [11] = { "Q3_K", 256, 110 },
    [12] = { "Q4_K", 256, 144 },  [13] = { "Q5_K", 256, 176 },
    [14] = { "Q6_K", 256, 210 },  [15] = { "Q8_K", 256, 292 },
    [16] = { "IQ2_XXS", 256, 66 }, [17] = { "IQ2_XS", 256, 74 },
    [18] = { "IQ3_XXS", 256, 98 }, [19] = { "IQ1_S", 256, 50 },
    [20] = { "IQ4_NL", 32, 18 },  [21] = { "IQ3_S", 256, 110 },
    [22] = { "IQ2_S", 256, 82 },  [23] = { "IQ4_XS", 256, 136 },
    [24] = { "I8", 1, 1 },        [25] = { "I16", 1, 2 },
    [26] = { "I32", 1, 4 },       [27] = { "I64", 1, 8 },
    [28] = { "F64", 1, 8 },       [29] = { "IQ1_M", 256, 56 },
    [30] = { "BF16", 1, 2 },      [34] = { "TQ1_0", 256, 54 },
    [35] = { "TQ2_0", 256, 66 },  [39] = { "MXFP4", 32, 17 },
    [40] = { "NVFP4", 64, 36 },   [41] = { "Q1_0", 128, 18 },
    [42] = { "Q2_0", 64, 18 },
};

bool st_model_ggml_type_size(uint32_t id, int32_t *blck, int32_t *bytes)
{
    if (id >= ST_ARRAY_LEN(ggml_types) || !ggml_types[id].name)
        return false;
    *blck = ggml_types[id].blck;
    *bytes = ggml_types[id].bytes;
    return true;
}

const char *st_gguf_ggml_type_name(uint32_t id)
{
    return id < ST_ARRAY_LEN(ggml_types) ? ggml_types[id].name : NULL;
}

/* The kv for 'key', or ST_ERR_NOT_FOUND with a message. */
static enum st_status need(const struct st_gguf *g, const char *key,
                           const struct st_gguf_kv **kv, struct st_err *err)
{
    *kv = st_gguf_find_kv(g, key);
    if (!*kv)
        return st_err_set(err, ST_ERR_NOT_FOUND, "gguf: key '%s' not found", key);
    return ST_OK;
}

static enum st_status bad_type(const struct st_gguf_kv *kv, const char *key, const char *want,
                               struct st_err *err)
{
    return st_err_set(err, ST_ERR_BAD_GGUF, "gguf: key '%s' is %s, expected %s", key,
                      st_gguf_type_name(st_gguf_kv_type(kv)), want);
}

enum st_status st_gguf_get_u32(const struct st_gguf *g, const char *key, uint32_t *out,
                               struct st_err *err)
{
    const struct st_gguf_kv *kv;
    uint64_t v;
    enum st_status rc = need(g, key, &kv, err);
    if (rc != ST_OK)
        return rc;
    if (!st_gguf_kv_u64(kv, &v) || v > UINT32_MAX)
        return bad_type(kv, key, "an integer in 0..2^32-1", err);
    *out = (uint32_t)v;
    return ST_OK;
}

enum st_status st_gguf_get_i64(const struct st_gguf *g, const char *key, int64_t *out,
                               struct st_err *err)
{
    const struct st_gguf_kv *kv;
    enum st_status rc = need(g, key, &kv, err);
    if (rc != ST_OK)
        return rc;
    if (!st_gguf_kv_i64(kv, out))
        return bad_type(kv, key, "an integer that fits int64", err);
    return ST_OK;
}

enum st_status st_gguf_get_f32(const struct st_gguf *g, const char *key, float *out,
                               struct st_err *err)
{
    const struct st_gguf_kv *kv;
    double v;
    enum st_status rc = need(g, key, &kv, err);
    if (rc != ST_OK)
        return rc;
    if (!st_gguf_kv_f64(kv, &v))
        return bad_type(kv, key, "a number", err);
    *out = (float)v;
    return ST_OK;
}

enum st_status st_gguf_get_bool(const struct st_gguf *g, const char *key, bool *out,
                                struct st_err *err)
{
    const struct st_gguf_kv *kv;
    enum st_status rc = need(g, key, &kv, err);
    if (rc != ST_OK)
        return rc;
    if (!st_gguf_kv_bool(kv, out))
        return bad_type(kv, key, "BOOL", err);
    return ST_OK;
}

enum st_status st_gguf_get_str(const struct st_gguf *g, const char *key, struct st_str *out,
                               struct st_err *err)
{
    const struct st_gguf_kv *kv;
    enum st_status rc = need(g, key, &kv, err);
    if (rc != ST_OK)
        return rc;
    if (!st_gguf_kv_str(kv, out))
        return bad_type(kv, key, "STRING", err);
    return ST_OK;
}

enum st_status st_gguf_get_arr(const struct st_gguf *g, const char *key,
                               const struct st_gguf_kv **out, struct st_err *err)
{
    const struct st_gguf_kv *kv;
    enum st_status rc = need(g, key, &kv, err);
    if (rc != ST_OK)
        return rc;
    if (st_gguf_kv_type(kv) != ST_GGUF_ARRAY)
        return bad_type(kv, key, "ARRAY", err);
    *out = kv;
    return ST_OK;
}
