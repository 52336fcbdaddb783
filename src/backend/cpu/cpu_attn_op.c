/* cpu_attn_op.c -- the argument checks and the work estimate both CPU
 * attention paths share (cpu_attn_op.h). */
#include "cpu_attn_op.h"

enum st_status cpu_attn_check(ST_T q, ST_T kcache, ST_T slot, ST_T pos, int32_t n_head,
                              int32_t n_head_kv, struct st_err *err)
{
    const int32_t *sl = slot->data, *ps = pos->data;
    int64_t d = q->ne[0] / n_head, n = q->ne[1], n_ctx = kcache->ne[1], n_slots = kcache->ne[2];

    if (d > ATTN_D_MAX || n_head / n_head_kv > ATTN_GQ_MAX)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "attention: head_dim %lld or group %d too big",
                          (long long)d, n_head / n_head_kv);
    for (int64_t r = 0; r < n; r++) {
        if (sl[r] < 0 || sl[r] >= n_slots || ps[r] < 0 || ps[r] >= n_ctx)
            return st_err_set(err, ST_ERR_INVALID,
                              "attention: row %lld has slot %d pos %d (cache: %lld slots x %lld)",
                              (long long)r, sl[r], ps[r], (long long)n_slots, (long long)n_ctx);
    }
    return ST_OK;
}

int64_t cpu_attn_work(const int32_t *pos, int64_t n, int64_t n_head, int64_t d)
{
    int64_t w = 0;
    for (int64_t r = 0; r < n; r++)
        w += 2 * ((int64_t)pos[r] + 1) * n_head * d;
    return w;
}
