/* state_ckpt.c -- checkpoints of a slot's recurrent state (forward.h
 * st_model_state_ckpt_*): the runner keeps a few per slot at the ends of
 * prompt chunks, so a later prompt that shares only part of what the slot
 * read resumes from the longest one instead of position 0
 * (runner_ckpt.c, docs/ENGINE.md "Slots with recurrent state").
 *
 * Each checkpoint is one slot's state of every DeltaNet layer, laid out as
 * the live state with the slot dimension 1 (conv [C3, K-1, 1, Lr], delta
 * [Dv, Dv, Hv, Lr]); the live layout has one contiguous run per slot and
 * layer, so a put or get is 2 * Lr device copies. Device memory is taken
 * on a checkpoint's first put (lazily: a server that never reads a prompt
 * into a slot pays nothing) and counted in st_model_kv_bytes.
 */
#include <stdlib.h>

#include "forward_internal.h"

/* One checkpoint of one slot: conv [C3, K-1, 1, Lr], delta [Dv, Dv, Hv, Lr]. */
struct st_state_ckpt {
    struct st_tensor conv, delta;
};

enum st_status st_model_state_ckpt_reserve(struct st_model *m, int32_t per_slot,
                                           struct st_err *err)
{
    if (!m->loaded || m->desc->hp.n_recurrent == 0 || per_slot < 1)
        return st_err_set(err, ST_ERR_INVALID, "state checkpoints: %d per slot of a model "
                          "with %lld recurrent layers", (int)per_slot,
                          (long long)m->desc->hp.n_recurrent);
    st_model_state_ckpt_release(m);
    m->ckpt = calloc((size_t)m->p.n_slots * (size_t)per_slot, sizeof(*m->ckpt));
    if (!m->ckpt)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for %d state checkpoints per slot",
                          (int)per_slot);
    m->ckpt_per_slot = per_slot;
    return ST_OK;
}

void st_model_state_ckpt_release(struct st_model *m)
{
    size_t n = m->ckpt ? (size_t)m->p.n_slots * (size_t)m->ckpt_per_slot : 0;
    for (size_t i = 0; i < n; i++) {
        size_t bytes = st_tensor_nbytes(&m->ckpt[i].conv) + st_tensor_nbytes(&m->ckpt[i].delta);
        m->kv_bytes -= m->ckpt[i].conv.data ? bytes : 0;
        st_backend_release(m->be, &m->ckpt[i].conv);
        st_backend_release(m->be, &m->ckpt[i].delta);
    }
    free(m->ckpt);
    m->ckpt = NULL;
    m->ckpt_per_slot = 0;
}

/* Checkpoint k of slot s, or NULL (with err) when there is no such one. */
static struct st_state_ckpt *ckpt_of(struct st_model *m, int32_t s, int32_t k,
                                     struct st_err *err)
{
    if (!m->ckpt || s < 0 || s >= m->p.n_slots || k < 0 || k >= m->ckpt_per_slot) {
        st_err_set(err, ST_ERR_INVALID, "state checkpoint %d of slot %d: %d reserved per slot",
                   (int)k, (int)s, (int)m->ckpt_per_slot);
        return NULL;
    }
    return &m->ckpt[(size_t)s * (size_t)m->ckpt_per_slot + (size_t)k];
}

/* Slot s's run of each of the L layers of the live state 'live' (per_slot
 * floats a layer) to or from checkpoint tensor 'c'. */
static enum st_status copy_runs(struct st_backend *be, const struct st_tensor *live,
                                const struct st_tensor *c, int64_t per_slot, int64_t S,
                                int64_t L, int32_t s, bool put, struct st_err *err)
{
    size_t n = (size_t)per_slot * sizeof(float);
    enum st_status rc = ST_OK;
    for (int64_t l = 0; l < L && rc == ST_OK; l++) {
        size_t off_live = (size_t)(l * S + s) * n, off_c = (size_t)l * n;
        rc = put ? st_backend_copy(be, c, off_c, live, off_live, n, err)
                 : st_backend_copy(be, live, off_live, c, off_c, n, err);
    }
    return rc;
}

static enum st_status ckpt_copy(struct st_model *m, struct st_state_ckpt *c, int32_t s,
                                bool put, struct st_err *err)
{
    int64_t S = m->p.n_slots, L = m->desc->hp.n_recurrent;
    int64_t conv = m->conv_state.ne[0] * m->conv_state.ne[1];
    int64_t delta = m->delta_state.ne[0] * m->delta_state.ne[1] * m->delta_state.ne[2];
    enum st_status rc = copy_runs(m->be, &m->conv_state, &c->conv, conv, S, L, s, put, err);
    if (rc == ST_OK)
        rc = copy_runs(m->be, &m->delta_state, &c->delta, delta, S, L, s, put, err);
    return rc;
}

/* Checkpoint c's device memory, on its first use. */
static enum st_status ckpt_alloc(struct st_model *m, struct st_state_ckpt *c, struct st_err *err)
{
    if (c->conv.data)
        return ST_OK;
    int64_t L = m->desc->hp.n_recurrent;
    int64_t cne[ST_TENSOR_DIMS] = { m->conv_state.ne[0], m->conv_state.ne[1], 1, L };
    int64_t dne[ST_TENSOR_DIMS] = { m->delta_state.ne[0], m->delta_state.ne[1],
                                    m->delta_state.ne[2], L };
    enum st_status rc = st_backend_alloc(m->be, ST_DTYPE_F32, cne, &c->conv, err);
    if (rc == ST_OK)
        rc = st_backend_alloc(m->be, ST_DTYPE_F32, dne, &c->delta, err);
    if (rc != ST_OK) {
        st_backend_release(m->be, &c->conv);
        return rc;
    }
    m->kv_bytes += st_tensor_nbytes(&c->conv) + st_tensor_nbytes(&c->delta);
    return ST_OK;
}

enum st_status st_model_state_ckpt_put(struct st_model *m, int32_t slot, int32_t k,
                                       struct st_err *err)
{
    struct st_state_ckpt *c = ckpt_of(m, slot, k, err);
    if (!c)
        return ST_ERR_INVALID;
    enum st_status rc = ckpt_alloc(m, c, err);
    return rc != ST_OK ? rc : ckpt_copy(m, c, slot, true, err);
}

enum st_status st_model_state_ckpt_tensors(struct st_model *m, int32_t slot, int32_t k,
                                           const struct st_tensor **conv,
                                           const struct st_tensor **delta, struct st_err *err)
{
    struct st_state_ckpt *c = ckpt_of(m, slot, k, err);
    if (!c)
        return ST_ERR_INVALID;
    enum st_status rc = ckpt_alloc(m, c, err);
    if (rc != ST_OK)
        return rc;
    *conv = &c->conv;
    *delta = &c->delta;
    return ST_OK;
}

enum st_status st_model_state_ckpt_get(struct st_model *m, int32_t slot, int32_t k,
                                       struct st_err *err)
{
    struct st_state_ckpt *c = ckpt_of(m, slot, k, err);
    if (!c)
        return ST_ERR_INVALID;
    if (!c->conv.data)
        return st_err_set(err, ST_ERR_INVALID, "state checkpoint %d of slot %d was never put",
                          (int)k, (int)slot);
    return ckpt_copy(m, c, slot, false, err);
}
