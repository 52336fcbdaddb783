/* mtp_rows.c -- st_mtp_rows_write and st_mtp_rows_ops: the nextn block
 * over n rows, which both MTP passes run (the upkeep in mtp.c, the catch-up
 * in mtp_catch.c, drafting in mtp_draft.c); mtp.c's header says what the
 * block computes.
 */
#include "mtp_internal.h"

/* The model's activation buffers cut to n rows, with the MTP pass's own
 * position and slot columns. */
static void cut_rows(const struct st_mtp *t, int64_t n, struct st_fwd_rows *r)
{
    st_fwd_cut_rows(&t->m->act, n, r);
    r->pos = st_fwd_column(&t->pos, 0, n);
    r->slot = st_fwd_column(&t->slot, 0, n);
}

/* Upload n per-row integers (from int32 or int64 source) into column c. */
static enum st_status put_i32(struct st_mtp *t, const struct st_tensor *c, const int32_t *s32,
                              const int64_t *s64, int64_t n, struct st_err *err)
{
    for (int64_t i = 0; i < n; i++)
        t->i32_host[i] = s32 ? s32[i] : (int32_t)s64[i];
    return st_backend_write(t->m->be, c, 0, t->i32_host, (size_t)n * sizeof(int32_t), err);
}

/* The row integers of a pass over n rows: ids, h rows, positions, slots
 * and the interleave indices (every host->device write of the pass, so a
 * graph of its ops can follow). */
enum st_status st_mtp_rows_write(struct st_mtp *t, int64_t n, const int32_t *tokens,
                                 const int32_t *slots, const int64_t *pos,
                                 const int32_t *hrows, struct st_err *err)
{
    struct st_tensor ids = st_fwd_column(&t->ids, 0, n), hidx = st_fwd_column(&t->hidx, 0, n);
    struct st_tensor cidx = st_fwd_column(&t->cidx, 0, 2 * n);
    struct st_tensor pc = st_fwd_column(&t->pos, 0, n), sc = st_fwd_column(&t->slot, 0, n);
    TRY(put_i32(t, &ids, tokens, NULL, n, err));
    TRY(put_i32(t, &hidx, hrows, NULL, n, err));
    TRY(put_i32(t, &pc, NULL, pos, n, err));
    TRY(put_i32(t, &sc, slots, NULL, n, err));
    for (int64_t i = 0; i < n; i++) {
        t->i32_host[2 * i] = (int32_t)i;
        t->i32_host[2 * i + 1] = (int32_t)(n + i);
    }
    return st_backend_write(t->m->be, &cidx, 0, t->i32_host, (size_t)(2 * n) * sizeof(int32_t),
                            err);
}

/* The block's input u = eh_proj . [enorm(emb); hnorm(h)] into act.x rows
 * [0, n) (the row integers already written). */
static enum st_status block_input(struct st_mtp *t, int64_t n, const struct st_tensor *htable,
                                  struct st_err *err)
{
    struct st_backend *be = t->m->be;
    float eps = t->m->desc->hp.rms_eps;
    struct st_tensor ids = st_fwd_column(&t->ids, 0, n), hidx = st_fwd_column(&t->hidx, 0, n);
    struct st_tensor cidx = st_fwd_column(&t->cidx, 0, 2 * n);
    struct st_tensor ee = st_tensor_slice(&t->esrc, 1, 0, n);
    struct st_tensor eh = st_tensor_slice(&t->esrc, 1, n, n);
    struct st_tensor e2 = st_tensor_slice(&t->esrc, 1, 0, 2 * n);
    struct st_tensor c = st_tensor_slice(&t->cat, 1, 0, n);
    const int64_t ne[ST_TENSOR_DIMS] = { t->E, 2 * n, 1, 1 };
    struct st_tensor cv = st_tensor_reshape(&c, ne), x = st_tensor_slice(&t->m->act.x, 1, 0, n);
    TRY(st_backend_embed(be, &ee, t->embed, &ids, err));
    TRY(st_backend_rms_norm(be, &ee, &ee, &t->enorm, eps, err));
    TRY(st_backend_embed(be, &eh, htable, &hidx, err));
    TRY(st_backend_rms_norm(be, &eh, &eh, &t->hnorm, eps, err));
    TRY(st_backend_embed(be, &cv, &e2, &cidx, err));
    return st_backend_matmul(be, &x, &c, &t->eh_proj, err);
}

/* The nextn layer runs forward.c's blocks with the MTP weights and KV
 * cache. An upkeep row's block output is never used (no logits come from
 * it), and its k and v depend on its own input only, so upkeep (kv_only)
 * stops at the cache write: about a fifth of the layer. */
enum st_status st_mtp_rows_ops(struct st_mtp *t, int64_t n, const struct st_tensor *htable,
                               bool kv_only, struct st_err *err)
{
    struct st_fwd_rows r;
    cut_rows(t, n, &r);
    TRY(block_input(t, n, htable, err));
    if (kv_only)
        return st_fwd_attn_kv_only(t->m, &t->w, &t->kcache, &t->vcache, &r, err);
    if (st_arch_is_hybrid(t->m->desc->hp.arch))
        return st_fwd_hybrid_block(t->m, &t->w, &t->kcache, &t->vcache, &r, false, NULL, err);
    return st_fwd_layer_block(t->m, &t->w, &t->kcache, &t->vcache, &r, false, NULL, err);
}
