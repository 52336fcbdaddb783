/* desc_keys.c -- reading one <arch>.* key and binding one tensor, checked:
 * the pieces model_desc.c and model_desc_hybrid.c build descriptions from
 * (desc_internal.h).
 */
#include <stdio.h>
#include <string.h>

#include "desc_internal.h"
#include "strata/backend.h"
#include "strata/quant.h"

/* <arch>.<suffix> as an integer >= 0 (an array of equal values, as the
 * per-layer head counts may be, counts as that value). */
enum st_status st_desc_key_int(struct st_desc_ctx *c, const char *suffix, bool required,
                               int64_t def, int64_t *out)
{
    char key[128];
    snprintf(key, sizeof(key), "%s.%s", c->arch, suffix);
    const struct st_gguf_kv *kv = st_gguf_find_kv(c->g, key);
    int64_t v = 0;
    if (!kv) {
        if (required)
            return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: missing required key '%s'", key);
        *out = def;
        return ST_OK;
    }
    if (st_gguf_kv_type(kv) == ST_GGUF_ARRAY) {
        uint64_t n = st_gguf_arr_n(kv);
        bool ok = n > 0 && st_gguf_arr_i64(kv, 0, &v);
        for (uint64_t i = 1; ok && i < n; i++) {
            int64_t w;
            ok = st_gguf_arr_i64(kv, i, &w) && w == v;
        }
        if (!ok)
            return st_err_set(c->err, ST_ERR_BAD_MODEL,
                              "model: key '%s': per-layer values that differ are not supported",
                              key);
    } else if (!st_gguf_kv_i64(kv, &v)) {
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: key '%s' is %s, expected an integer",
                          key, st_gguf_type_name(st_gguf_kv_type(kv)));
    }
    if (v < 0 || v > INT32_MAX)      /* keeps every product of two counts within int64 */
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: key '%s' = %lld is out of range",
                          key, (long long)v);
    *out = v;
    return ST_OK;
}

/* Look up 'name'; check type and shape ne[0..3] (trailing 1s implied). */
enum st_status st_desc_bind(struct st_desc_ctx *c, const char *name, enum st_desc_kind k,
                            bool required, int64_t ne0, int64_t ne1, int64_t ne2,
                            const struct st_gguf_tensor **out)
{
    const struct st_gguf_tensor *t = st_gguf_find_tensor(c->g, name);
    int64_t want[4] = { ne0, ne1, ne2, 1 };
    *out = NULL;
    if (!t) {
        if (!required)
            return ST_OK;
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: tensor '%s' is missing", name);
    }
    if (memcmp(t->ne, want, sizeof(want)) != 0)
        return st_err_set(c->err, ST_ERR_BAD_MODEL,
                          "model: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected "
                          "[%lld, %lld, %lld, 1]", name, (long long)t->ne[0], (long long)t->ne[1],
                          (long long)t->ne[2], (long long)t->ne[3], (long long)ne0, (long long)ne1,
                          (long long)ne2);
    const struct st_dtype_info *info = st_dtype_info((uint32_t)t->type);
    const char *tn = st_gguf_ggml_type_name((uint32_t)t->type);
    if (k == ST_DESC_NORM && t->type != ST_DTYPE_F32)
        return st_err_set(c->err, ST_ERR_BAD_MODEL, "model: tensor '%s' is %s; norms must be F32",
                          name, tn ? tn : "?");
    if (!info || !info->weights_ok || !st_quant_supported(t->type))
        return st_err_set(c->err, ST_ERR_BAD_MODEL,
                          "model: tensor '%s' has type %s, which strata does not support", name,
                          tn ? tn : "?");
    *out = t;
    return ST_OK;
}

enum st_status st_desc_bind_blk(struct st_desc_ctx *c, int64_t il, const char *what,
                                enum st_desc_kind k, bool required, int64_t ne0, int64_t ne1,
                                int64_t ne2, const struct st_gguf_tensor **out)
{
    char name[96];
    snprintf(name, sizeof(name), "blk.%lld.%s.weight", (long long)il, what);
    return st_desc_bind(c, name, k, required, ne0, ne1, ne2, out);
}

enum st_status st_desc_key_ints(struct st_desc_ctx *c, const struct st_desc_int_key *keys,
                                size_t n)
{
    for (size_t i = 0; i < n; i++)
        ST_TRY(st_desc_key_int(c, keys[i].suffix, keys[i].required, keys[i].def, keys[i].out));
    return ST_OK;
}

enum st_status st_desc_bind_table(struct st_desc_ctx *c, int64_t il,
                                  const struct st_desc_tensor *t, size_t n)
{
    char name[96];
    for (size_t i = 0; i < n; i++) {
        if (!t[i].when)
            continue;
        if (il >= 0)
            snprintf(name, sizeof(name), "blk.%lld.%s", (long long)il, t[i].name);
        else
            snprintf(name, sizeof(name), "%s", t[i].name);
        ST_TRY(st_desc_bind(c, name, t[i].kind, t[i].required, t[i].ne0, t[i].ne1, t[i].ne2,
                            t[i].out));
    }
    return ST_OK;
}

enum st_status st_desc_bind_shexp(struct st_desc_ctx *c, int64_t il, int64_t E, int64_t Fs,
                                  struct st_layer_desc *L)
{
    const struct st_desc_tensor t[] = {
        { true, "ffn_gate_shexp.weight", ST_DESC_WEIGHT, true, E, Fs, 1, &L->ffn_gate_shexp },
        { true, "ffn_up_shexp.weight", ST_DESC_WEIGHT, true, E, Fs, 1, &L->ffn_up_shexp },
        { true, "ffn_down_shexp.weight", ST_DESC_WEIGHT, true, Fs, E, 1, &L->ffn_down_shexp },
    };
    return st_desc_bind_table(c, il, t, ST_ARRAY_LEN(t));
}
