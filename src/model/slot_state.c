/* slot_state.c -- a slot's prompt cache to a file and back
 * (include/strata/slot_state.h; docs/API.md "/slots").
 *
 * Layout (forward_internal.h): kcache and vcache are [Hkv*D, C, S, L] of
 * their --cache-type (f16, q8_0, f32, bf16),
 * so rows [0, n) of slot s in layer l are one contiguous run starting at
 * row ((l * S + s) * C); conv_state [C3, K-1, S, Lr] and delta_state
 * [D, D, Hv, S*Lr] hold one slot of one layer as one run each (as
 * state_copy.c copies them). Rows go through a host buffer of at most
 * CHUNK bytes (st_backend_read / st_backend_write). A state checkpoint
 * (state_ckpt.c) is two tensors of one contiguous run each, written whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forward_internal.h"
#include "strata/slot_state.h"

#define CHUNK ((size_t)1 << 20)

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

static uint64_t weights_hash(const struct st_model *m)
{
    const struct st_gguf_tensor *t = m->desc->tok_embd;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    if (!t || !t->data)
        return h;
    const size_t span = (size_t)64 << 10;
    const unsigned char *p = t->data;
    size_t n = t->nbytes < span ? t->nbytes : span;
    h = fnv1a(h, p, n);
    return fnv1a(h, p + t->nbytes - n, n);
}

/* V's code in bits 16..: its st_dtype, but F32 (id 0, which there means
 * "as K") written as KV_V_F32. */
#define KV_V_F32 0xffffu

/* The header's kv_dtype: K's st_dtype, V's in bits 16.. when it differs
 * (so an f16/f16 file reads as before the V type was recorded). */
static uint32_t kv_dtype_code(enum st_dtype k, enum st_dtype v)
{
    uint32_t vc = v == ST_DTYPE_F32 ? KV_V_F32 : (uint32_t)v;
    return (uint32_t)k | (v != k ? vc << 16 : 0u);
}

static const char *kv_dtype_name(uint32_t t)
{
    switch (t) {
    case ST_DTYPE_F16: return "f16";
    case ST_DTYPE_Q8_0: return "q8_0";
    case ST_DTYPE_F32: case KV_V_F32: return "f32";
    case ST_DTYPE_BF16: return "bf16";
    default: return "?";
    }
}

/* "f16/f16", "q8_0/f32": a kv_dtype code as the --cache-type names. */
static void kv_dtype_text(uint32_t code, char *out, size_t cap)
{
    uint32_t k = code & 0xffff, v = code >> 16 ? code >> 16 : k;
    snprintf(out, cap, "%s/%s", kv_dtype_name(k), kv_dtype_name(v));
}

static void head_of(const struct st_model *m, int64_t n_tokens, struct st_slot_file_head *h)
{
    const struct st_hparams *hp = &m->desc->hp;
    memset(h, 0, sizeof(*h));
    memcpy(h->magic, ST_SLOT_FILE_MAGIC, sizeof(h->magic));
    h->version = ST_SLOT_FILE_VERSION;
    h->kv_dtype = kv_dtype_code(m->kcache.type, m->vcache.type);
    snprintf(h->arch, sizeof(h->arch), "%s", hp->arch_name);
    const char *base = m->path ? strrchr(m->path, '/') : NULL;
    snprintf(h->model_file, sizeof(h->model_file), "%s", base ? base + 1 : m->path ? m->path : "");
    h->weights_hash = weights_hash(m);
    h->n_layer = hp->n_layer;
    h->n_attn_layer = m->kcache.data ? m->kcache.ne[3] : 0;
    h->n_head_kv = hp->n_head_kv;
    h->head_dim_k = hp->head_dim_k;
    h->head_dim_v = hp->head_dim_v;
    h->row_bytes = m->kcache.data ? (int64_t)st_tensor_row_bytes(&m->kcache) : 0;
    h->n_recurrent = hp->n_recurrent;
    if (hp->n_recurrent > 0) {
        h->conv_elems = m->conv_state.ne[0] * m->conv_state.ne[1];
        h->delta_elems = m->delta_state.ne[0] * m->delta_state.ne[1] * m->delta_state.ne[2];
    }
    h->n_vocab = hp->n_vocab;
    h->n_tokens = n_tokens;
}

/* One run of tensor t: n bytes at offset, device <-> file through buf. */
static enum st_status run_io(struct st_model *m, const struct st_tensor *t, size_t off, size_t n,
                             FILE *f, bool save, unsigned char *buf, int64_t *bytes,
                             struct st_err *err)
{
    while (n > 0) {
        size_t k = n < CHUNK ? n : CHUNK;
        enum st_status rc = ST_OK;
        if (save) {
            rc = st_backend_read(m->be, t, off, buf, k, err);
            if (rc == ST_OK && fwrite(buf, 1, k, f) != k)
                rc = st_err_set(err, ST_ERR_IO, "slot file: write failed");
        } else if (fread(buf, 1, k, f) != k) {
            rc = st_err_set(err, ST_ERR_INVALID, "slot file: shorter than its header says");
        } else {
            rc = st_backend_write(m->be, t, off, buf, k, err);
        }
        if (rc != ST_OK)
            return rc;
        off += k;
        n -= k;
        *bytes += (int64_t)k;
    }
    return ST_OK;
}

/* Rows [0, n) of slot s in every layer of cache c. */
static enum st_status rows_io(struct st_model *m, const struct st_tensor *c, int32_t s, int64_t n,
                              FILE *f, bool save, unsigned char *buf, int64_t *bytes,
                              struct st_err *err)
{
    const size_t row = st_tensor_row_bytes(c);
    const int64_t C = c->ne[1], S = c->ne[2], L = c->ne[3];
    enum st_status rc = ST_OK;
    for (int64_t l = 0; l < L && rc == ST_OK; l++)
        rc = run_io(m, c, (size_t)((l * S + s) * C) * row, (size_t)n * row, f, save, buf, bytes,
                    err);
    return rc;
}

/* Slot s's run of per_slot floats in each of the L layers of state t. */
static enum st_status state_io(struct st_model *m, const struct st_tensor *t, int64_t per_slot,
                               int32_t s, FILE *f, bool save, unsigned char *buf,
                               int64_t *bytes, struct st_err *err)
{
    const int64_t S = m->p.n_slots, L = m->desc->hp.n_recurrent;
    const size_t n = (size_t)per_slot * sizeof(float);
    enum st_status rc = ST_OK;
    for (int64_t l = 0; l < L && rc == ST_OK; l++)
        rc = run_io(m, t, (size_t)(l * S + s) * n, n, f, save, buf, bytes, err);
    return rc;
}

/* n bytes of f read past (checkpoints this model has no room for). */
static enum st_status skip_io(FILE *f, size_t n, unsigned char *buf, int64_t *bytes,
                              struct st_err *err)
{
    while (n > 0) {
        size_t k = n < CHUNK ? n : CHUNK;
        if (fread(buf, 1, k, f) != k)
            return st_err_set(err, ST_ERR_INVALID, "slot file: shorter than its header says");
        n -= k;
        *bytes += (int64_t)k;
    }
    return ST_OK;
}

/* Checkpoint k of slot s to or from f: its conv and its delta tensor. */
static enum st_status ckpt_io(struct st_model *m, int32_t s, int32_t k, FILE *f, bool save,
                              unsigned char *buf, int64_t *bytes, struct st_err *err)
{
    const struct st_tensor *conv = NULL, *delta = NULL;
    enum st_status rc = st_model_state_ckpt_tensors(m, s, k, &conv, &delta, err);
    if (rc == ST_OK)
        rc = run_io(m, conv, 0, st_tensor_nbytes(conv), f, save, buf, bytes, err);
    if (rc == ST_OK)
        rc = run_io(m, delta, 0, st_tensor_nbytes(delta), f, save, buf, bytes, err);
    return rc;
}

static enum st_status put_i64(FILE *f, int64_t v, int64_t *bytes, struct st_err *err)
{
    if (fwrite(&v, sizeof(v), 1, f) != 1)
        return st_err_set(err, ST_ERR_IO, "slot file: write failed");
    *bytes += (int64_t)sizeof(v);
    return ST_OK;
}

static enum st_status get_i64(FILE *f, int64_t *v, int64_t *bytes, struct st_err *err)
{
    if (fread(v, sizeof(*v), 1, f) != 1)
        return st_err_set(err, ST_ERR_INVALID, "slot file: shorter than its header says");
    *bytes += (int64_t)sizeof(*v);
    return ST_OK;
}

/* The checkpoints of slot s (pos[k] > 0 and at most n: checkpoint k's
 * position), the longest first: a restore into a server that keeps fewer
 * takes the longest. */
static enum st_status ckpts_save(struct st_model *m, int32_t s, int64_t n, const int64_t *pos,
                                 FILE *f, unsigned char *buf, int64_t *bytes,
                                 struct st_err *err)
{
    int32_t per = pos && m->desc->hp.n_recurrent > 0 ? m->ckpt_per_slot : 0;
    int64_t count = 0;
    for (int32_t k = 0; k < per; k++)
        count += pos[k] > 0 && pos[k] <= n;
    enum st_status rc = put_i64(f, count, bytes, err);
    int64_t last = INT64_MAX;   /* positions are distinct: each pick is below the last */
    for (int64_t i = 0; i < count && rc == ST_OK; i++) {
        int32_t best = -1;
        for (int32_t k = 0; k < per; k++)
            if (pos[k] > 0 && pos[k] <= n && pos[k] < last && (best < 0 || pos[k] > pos[best]))
                best = k;
        if (best < 0)
            break;   /* two at one position: the file says fewer (never happens) */
        last = pos[best];
        rc = put_i64(f, last, bytes, err);
        if (rc == ST_OK)
            rc = ckpt_io(m, s, best, f, true, buf, bytes, err);
    }
    return rc;
}

/* The file's checkpoints into slot s's entries 0, 1, ... (pos[k] their
 * positions, -1 the rest); those past what the model keeps per slot (all,
 * with pos NULL) are read past. */
static enum st_status ckpts_restore(struct st_model *m, int32_t s, int64_t n, int64_t *pos,
                                    FILE *f, unsigned char *buf, int64_t *bytes,
                                    struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    int32_t per = pos && hp->n_recurrent > 0 ? m->ckpt_per_slot : 0;
    for (int32_t k = 0; k < per; k++)
        pos[k] = -1;
    int64_t count = 0;
    enum st_status rc = get_i64(f, &count, bytes, err);
    if (rc != ST_OK)
        return rc;
    if (count < 0 || count > n || (count > 0 && hp->n_recurrent == 0))
        return st_err_set(err, ST_ERR_INVALID, "slot file: %lld state checkpoints for %lld "
                          "tokens", (long long)count, (long long)n);
    struct st_slot_file_head h;
    head_of(m, n, &h);
    size_t one = (size_t)hp->n_recurrent * (size_t)(h.conv_elems + h.delta_elems) * sizeof(float);
    int64_t last = INT64_MAX;
    for (int64_t i = 0; i < count && rc == ST_OK; i++) {
        int64_t at = 0;
        rc = get_i64(f, &at, bytes, err);
        if (rc != ST_OK)
            break;
        if (at <= 0 || at > n || at >= last)
            return st_err_set(err, ST_ERR_INVALID, "slot file: a state checkpoint at %lld "
                              "(of %lld tokens, after one at %lld)", (long long)at,
                              (long long)n, (long long)last);
        last = at;
        if (i < per) {
            rc = ckpt_io(m, s, (int32_t)i, f, false, buf, bytes, err);
            if (rc == ST_OK)
                pos[i] = at;
        } else {
            rc = skip_io(f, one, buf, bytes, err);
        }
    }
    return rc;
}

/* The body after the ids: KV rows, state, and (version >= 2) the state
 * checkpoints: saved from pos_in, restored into pos_out. */
static enum st_status body_io(struct st_model *m, int32_t s, int64_t n, FILE *f, bool save,
                              uint32_t version, const int64_t *pos_in, int64_t *pos_out,
                              int64_t *bytes, struct st_err *err)
{
    unsigned char *buf = malloc(CHUNK);
    if (!buf)
        return st_err_set(err, ST_ERR_NOMEM, "slot file: no memory for a buffer");
    enum st_status rc = ST_OK;
    if (m->kcache.data) {
        rc = rows_io(m, &m->kcache, s, n, f, save, buf, bytes, err);
        if (rc == ST_OK)
            rc = rows_io(m, &m->vcache, s, n, f, save, buf, bytes, err);
    }
    if (rc == ST_OK && m->desc->hp.n_recurrent > 0) {
        struct st_slot_file_head h;
        head_of(m, n, &h);
        rc = state_io(m, &m->conv_state, h.conv_elems, s, f, save, buf, bytes, err);
        if (rc == ST_OK)
            rc = state_io(m, &m->delta_state, h.delta_elems, s, f, save, buf, bytes, err);
    }
    if (rc == ST_OK && version >= 2)
        rc = save ? ckpts_save(m, s, n, pos_in, f, buf, bytes, err)
                  : ckpts_restore(m, s, n, pos_out, f, buf, bytes, err);
    free(buf);
    return rc;
}

static enum st_status check_slot(const struct st_model *m, int32_t slot, struct st_err *err)
{
    if (!m->loaded)
        return st_err_set(err, ST_ERR_LOADING, "slot file: the model is not loaded");
    if (slot < 0 || slot >= m->p.n_slots)
        return st_err_set(err, ST_ERR_INVALID, "slot file: no slot %d", (int)slot);
    return ST_OK;
}

enum st_status st_model_slot_save(struct st_model *m, int32_t slot, const int32_t *ids,
                                  int64_t n_tokens, const int64_t *ckpt_pos, FILE *f,
                                  int64_t *n_bytes, struct st_err *err)
{
    *n_bytes = 0;
    enum st_status rc = check_slot(m, slot, err);
    if (rc != ST_OK)
        return rc;
    if (n_tokens < 0 || n_tokens > m->p.n_ctx)
        return st_err_set(err, ST_ERR_INTERNAL, "slot file: %lld tokens", (long long)n_tokens);
    struct st_slot_file_head h;
    head_of(m, n_tokens, &h);
    size_t n_ids = (size_t)n_tokens;
    if (fwrite(&h, sizeof(h), 1, f) != 1 ||
        (n_ids && fwrite(ids, sizeof(*ids), n_ids, f) != n_ids))
        return st_err_set(err, ST_ERR_IO, "slot file: write failed");
    *n_bytes = (int64_t)(sizeof(h) + n_ids * sizeof(*ids));
    return body_io(m, slot, n_tokens, f, true, h.version, ckpt_pos, NULL, n_bytes, err);
}

/* The first field of 'got' that differs from 'want', or NULL. The file
 * name is for people only: a renamed copy of the model restores. */
static const char *head_mismatch(const struct st_slot_file_head *want,
                                 const struct st_slot_file_head *got)
{
    if (memcmp(got->magic, want->magic, sizeof(got->magic)) != 0)
        return "magic (not a Strata slot file)";
    if (got->version != want->version && got->version != 1)   /* 1: no checkpoints */
        return "version";
    if (strncmp(got->arch, want->arch, sizeof(got->arch)) != 0)
        return "architecture";
    if (got->weights_hash != want->weights_hash)
        return "weights";
    if (got->kv_dtype != want->kv_dtype)
        return "KV type";
    const int64_t *g = &got->n_layer, *w = &want->n_layer;
    static const char *const names[] = { "n_layer", "attention layers", "n_head_kv",
                                         "head_dim_k", "head_dim_v", "KV row size",
                                         "recurrent layers", "conv state", "delta state",
                                         "n_vocab" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (g[i] != w[i])
            return names[i];
    return NULL;
}

enum st_status st_model_slot_restore(struct st_model *m, int32_t slot, FILE *f, int32_t **ids,
                                     int64_t *n_tokens, int64_t *ckpt_pos, int64_t *n_bytes,
                                     struct st_err *err)
{
    *ids = NULL;
    *n_tokens = *n_bytes = 0;
    for (int32_t k = 0; ckpt_pos && k < m->ckpt_per_slot; k++)
        ckpt_pos[k] = -1;
    enum st_status rc = check_slot(m, slot, err);
    if (rc != ST_OK)
        return rc;
    struct st_slot_file_head got, want;
    if (fread(&got, sizeof(got), 1, f) != 1)
        return st_err_set(err, ST_ERR_INVALID, "slot file: too short for its header");
    head_of(m, got.n_tokens, &want);
    const char *bad = head_mismatch(&want, &got);
    if (bad && !strcmp(bad, "KV type")) {
        char g[24], w[24];
        kv_dtype_text(got.kv_dtype, g, sizeof(g));
        kv_dtype_text(want.kv_dtype, w, sizeof(w));
        return st_err_set(err, ST_ERR_INVALID, "slot file: its KV cache is %s (k/v), this "
                          "server's is %s (--cache-type-k/-v must match to restore)", g, w);
    }
    if (bad && !strcmp(bad, "version"))
        return st_err_set(err, ST_ERR_INVALID, "slot file: format version %u; this build reads "
                          "versions 1 to %d (a newer Strata wrote it?)", (unsigned)got.version,
                          ST_SLOT_FILE_VERSION);
    if (bad)
        return st_err_set(err, ST_ERR_INVALID, "slot file: made for another model (%s mismatch)",
                          bad);
    if (got.n_tokens < 0 || got.n_tokens > m->p.n_ctx)
        return st_err_set(err, ST_ERR_INVALID, "slot file: %lld tokens do not fit the slot's "
                          "%lld", (long long)got.n_tokens, (long long)m->p.n_ctx);
    size_t n = (size_t)got.n_tokens;
    int32_t *buf = malloc((n ? n : 1) * sizeof(*buf));
    if (!buf)
        return st_err_set(err, ST_ERR_NOMEM, "slot file: no memory for %zu ids", n);
    if (n && fread(buf, sizeof(*buf), n, f) != n) {
        free(buf);
        return st_err_set(err, ST_ERR_INVALID, "slot file: shorter than its header says");
    }
    for (size_t i = 0; i < n; i++)
        if (buf[i] < 0 || buf[i] >= m->desc->hp.n_vocab) {
            int32_t id = buf[i];
            free(buf);
            return st_err_set(err, ST_ERR_INVALID, "slot file: token id %d out of the "
                              "vocabulary", (int)id);
        }
    *n_bytes = (int64_t)(sizeof(got) + n * sizeof(*buf));
    rc = body_io(m, slot, got.n_tokens, f, false, got.version, NULL, ckpt_pos, n_bytes, err);
    if (rc != ST_OK) {
        free(buf);
        return rc;
    }
    *ids = buf;
    *n_tokens = got.n_tokens;
    return ST_OK;
}
