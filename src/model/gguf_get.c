/* gguf_get.c -- typed metadata getters by key (the ggml type table is
 * ggml_types.c).
 */
#include "internal.h"
#include "strata/gguf.h"

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
