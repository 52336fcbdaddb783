/* kv_copy.c -- one slot's KV rows copied into another slot (prefix sharing
 * across slots, docs/BATCHING.md "Prefix reuse"): st_model_kv_copy for the
 * main layers, st_mtp_kv_copy for the MTP layer's cache and carried state.
 *
 * Layout (forward_internal.h): kcache and vcache are [Hkv*D, C, S, L] (any KV type),
 * so positions [from, to) of slot s in layer l are one contiguous run of
 * (to - from) rows starting at row ((l * S + s) * C + from). A copy is
 * therefore 2 * L device copies (K and V per layer; st_backend_copy), each
 * of (to - from) * Hkv*D * 2 bytes; the MTP cache ([.., C, S, 1]) adds 2.
 * Nothing is computed: the rows hold what the source's forwards wrote for
 * the same token ids at the same positions, which is what a read of those
 * ids in the destination would write (a row depends only on the ids up to
 * it; the caller guarantees the ids match).
 *
 * Threads: the model's thread (the engine thread), like st_model_forward.
 */
#include "mtp_internal.h"
#include "strata/log.h"

/* Rows [from, to) of slot 'src' -> the same rows of slot 'dst', in every
 * layer of the [row, C, S, L] cache (any KV type) 'c'. */
static enum st_status copy_rows(struct st_backend *be, const struct st_tensor *c, int32_t src,
                                int32_t dst, int64_t from, int64_t to, struct st_err *err)
{
    const size_t row = st_tensor_row_bytes(c);
    const int64_t C = c->ne[1], S = c->ne[2], L = c->ne[3];
    const size_t n = (size_t)(to - from) * row;
    for (int64_t l = 0; l < L; l++) {
        size_t s_off = (size_t)((l * S + src) * C + from) * row;
        size_t d_off = (size_t)((l * S + dst) * C + from) * row;
        ST_TRY(st_backend_copy(be, c, d_off, c, s_off, n, err));
    }
    return ST_OK;
}

static enum st_status check_args(int64_t S, int64_t C, int32_t src, int32_t dst, int64_t from,
                                 int64_t to, struct st_err *err)
{
    if (src < 0 || dst < 0 || src >= S || dst >= S || src == dst || from < 0 || to < from ||
        to > C)
        return st_err_set(err, ST_ERR_INVALID, "kv copy: slot %d -> %d, positions [%lld, "
                          "%lld) (%lld slots of %lld)", (int)src, (int)dst, (long long)from,
                          (long long)to, (long long)S, (long long)C);
    return ST_OK;
}

enum st_status st_model_kv_copy(struct st_model *m, int32_t src, int32_t dst, int64_t from,
                                int64_t to, struct st_err *err)
{
    if (!m->loaded)
        return st_err_set(err, ST_ERR_LOADING, "kv copy: the model is not loaded");
    enum st_status rc = check_args(m->p.n_slots, m->p.n_ctx, src, dst, from, to, err);
    if (rc != ST_OK || to == from)
        return rc;
    ST_TRY(copy_rows(m->be, &m->kcache, src, dst, from, to, err));
    return copy_rows(m->be, &m->vcache, src, dst, from, to, err);
}

/* hbuf row 'from_row' -> row 'to_row' (E floats). */
static enum st_status copy_hrow(struct st_mtp *t, int64_t to_row, int64_t from_row,
                                struct st_err *err)
{
    size_t row = st_tensor_row_bytes(&t->hbuf);
    return st_backend_copy(t->m->be, &t->hbuf, (size_t)to_row * row, &t->hbuf,
                           (size_t)from_row * row, row, err);
}

/* The state of slot src at position p: its carry, or the row of the last
 * upkeep chunk that computed it (as st_mtp_truncate finds it); -1 none. */
static int64_t state_row(const struct st_mtp *t, int32_t src, int64_t p)
{
    if (t->carry_pos[src] == p)
        return src;
    for (int64_t i = 0; i < t->chunk_n; i++)
        if (t->chunk_slot[i] == src && t->chunk_pos[i] == p)
            return t->S + 1 + i;
    return -1;
}

enum st_status st_mtp_kv_copy(struct st_mtp *t, int32_t src, int32_t dst, int64_t from,
                              int64_t to, struct st_err *err)
{
    enum st_status rc = check_args(t->S, t->kcache.ne[1], src, dst, from, to, err);
    if (rc != ST_OK || to == from)
        return rc;
    rc = copy_rows(t->m->be, &t->kcache, src, dst, from, to, err);
    if (rc == ST_OK)
        rc = copy_rows(t->m->be, &t->vcache, src, dst, from, to, err);
    /* dst now ends at to - 1: carry the source's state there when it is
     * still at hand, else none (the next row then sees zeros: one MTP
     * cache row off, never the output; mtp.h "Carried state") */
    int64_t from_row = rc == ST_OK ? state_row(t, src, to - 1) : -1;
    /* dst's rows of the last forward at >= from are states of the ids it
     * held before: no later cut or copy of dst may take them (position -1
     * matches no lookup) */
    for (int64_t i = 0; i < t->chunk_n; i++)
        if (t->chunk_slot[i] == dst && t->chunk_pos[i] >= from)
            t->chunk_pos[i] = -1;
    t->carry_pos[dst] = -1;
    st_mtp_stash_cut(t, dst, from);   /* its skipped positions from there are src's now */
    /* a state that fails to copy is left out like one not at hand: it
     * costs drafts, never the output, so it is not the copy's error */
    struct st_err state_err = { 0 };
    if (from_row >= 0 && copy_hrow(t, dst, from_row, &state_err) == ST_OK)
        t->carry_pos[dst] = to - 1;
    return rc;
}
