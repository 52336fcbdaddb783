/* kv_trim.c -- the unified KV pool's memory (docs/CLI.md --kv-unified):
 * with kv_lazy the caches are lazy tensors (st_backend_alloc_lazy), so a
 * slot's region of the full context costs memory only where it was
 * written; st_model_kv_discard gives a slot's tail back when the engine
 * cuts or empties it.
 *
 * Layout (forward_internal.h): kcache and vcache are [row, C, S, L], so
 * positions [from, to) of slot s in layer l are one contiguous byte range
 * starting at row ((l * S + s) * C + from): one discard per layer and
 * cache. Whole pages only: the partial pages at a range's ends stay
 * (at most two pages per layer and cache).
 *
 * Threads: the model's thread (the engine thread), like st_model_forward.
 */
#include "mtp_internal.h"

static size_t discard_rows(struct st_backend *be, const struct st_tensor *c, int32_t slot,
                           int64_t from, int64_t to)
{
    const size_t row = st_tensor_row_bytes(c);
    const int64_t C = c->ne[1], S = c->ne[2], L = c->ne[3];
    size_t n = 0;
    for (int64_t l = 0; l < L; l++)
        n += st_backend_discard(be, c, (size_t)((l * S + slot) * C + from) * row,
                                (size_t)(to - from) * row);
    return n;
}

size_t st_model_kv_discard(struct st_model *m, int32_t slot, int64_t from, int64_t to)
{
    if (!m->loaded || !m->p.kv_lazy || slot < 0 || slot >= m->p.n_slots)
        return 0;
    from = ST_MAX(from, (int64_t)0);
    to = ST_MIN(to, m->p.n_ctx);
    if (to <= from)
        return 0;
    return discard_rows(m->be, &m->kcache, slot, from, to) +
           discard_rows(m->be, &m->vcache, slot, from, to);
}

size_t st_model_kv_resident(const struct st_model *m)
{
    if (!m->loaded)
        return 0;
    return st_backend_resident(m->be, &m->kcache) + st_backend_resident(m->be, &m->vcache);
}

size_t st_mtp_kv_discard(struct st_mtp *t, int32_t slot, int64_t from, int64_t to)
{
    if (!t || !t->m->p.kv_lazy || slot < 0 || slot >= t->S)
        return 0;
    from = ST_MAX(from, (int64_t)0);
    to = ST_MIN(to, t->m->p.n_ctx);
    if (to <= from)
        return 0;
    return discard_rows(t->m->be, &t->kcache, slot, from, to) +
           discard_rows(t->m->be, &t->vcache, slot, from, to);
}
