/* state_copy.c -- a slot's recurrent state copied aside and back
 * (st_model_state_save / st_model_state_restore, forward.h): the runner
 * saves it before a step that verifies drafts, and when some are rejected
 * restores it and reads the accepted ones again (runner_rollback.c).
 *
 * Layout (forward_internal.h): conv_state [C3, K-1, S, Lr] and delta_state
 * [D, D, Hv, S*Lr], so one slot of one layer is one contiguous run of each:
 * 2 * Lr device copies per call, into twins of the same shape allocated by
 * the first save.
 */
#include "forward_internal.h"

/* Slot s's run in every layer of state tensor 'from' copied to 'to'. */
static enum st_status copy_slot(struct st_backend *be, const struct st_tensor *to,
                                const struct st_tensor *from, int64_t per_slot_elems,
                                int64_t S, int64_t L, int32_t s, struct st_err *err)
{
    size_t n = (size_t)per_slot_elems * sizeof(float);
    for (int64_t l = 0; l < L; l++) {
        size_t off = (size_t)(l * S + s) * n;
        ST_TRY(st_backend_copy(be, to, off, from, off, n, err));
    }
    return ST_OK;
}

static enum st_status copy_state(struct st_model *m, int32_t s, bool save, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    int64_t S = m->p.n_slots, L = hp->n_recurrent;
    if (!m->loaded || L == 0 || s < 0 || s >= S)
        return st_err_set(err, ST_ERR_INVALID, "state %s: slot %d of a model with %lld "
                          "recurrent layers", save ? "save" : "restore", (int)s, (long long)L);
    int64_t conv = m->conv_state.ne[0] * m->conv_state.ne[1];
    int64_t delta = m->delta_state.ne[0] * m->delta_state.ne[1] * m->delta_state.ne[2];
    const struct st_tensor *cs = &m->conv_state, *ds = &m->delta_state;
    const struct st_tensor *cb = &m->conv_saved, *db = &m->delta_saved;
    ST_TRY(copy_slot(m->be, save ? cb : cs, save ? cs : cb, conv, S, L, s, err));
    return copy_slot(m->be, save ? db : ds, save ? ds : db, delta, S, L, s, err);
}

enum st_status st_model_state_save(struct st_model *m, int32_t slot, struct st_err *err)
{
    if (m->loaded && m->desc->hp.n_recurrent > 0 && !m->conv_saved.data) {
        ST_TRY(st_backend_alloc(m->be, ST_DTYPE_F32, m->conv_state.ne, &m->conv_saved, err));
        ST_TRY(st_backend_alloc(m->be, ST_DTYPE_F32, m->delta_state.ne, &m->delta_saved, err));
        m->kv_bytes += st_tensor_nbytes(&m->conv_saved) + st_tensor_nbytes(&m->delta_saved);
    }
    return copy_state(m, slot, true, err);
}

enum st_status st_model_state_restore(struct st_model *m, int32_t slot, struct st_err *err)
{
    if (!m->conv_saved.data)
        return st_err_set(err, ST_ERR_INVALID, "state restore: nothing was saved");
    return copy_state(m, slot, false, err);
}
