/* cpu_attn_op.h -- what the two CPU attention paths share: the tiled one
 * (cpu_attention.c) and the per-row reference (cpu_attention_plain.c).
 *
 * That is the op's limits and argument checks, and the work estimate that
 * decides whether a step's attention is worth a parallel region. The
 * arithmetic stays in each path.
 *
 * Layout (backend.h): kcache/vcache are [n_kv*D, n_ctx, n_slots] of F16
 * or Q8_0 (each its own), so the key of slot s, position t, KV head g
 * starts at byte (s*n_ctx + t)*row_bytes + g*head_bytes, a Q8_0 head on a
 * block boundary.
 *
 * Thread: any (pure).
 */
#ifndef STRATA_BACKEND_CPU_ATTN_OP_H
#define STRATA_BACKEND_CPU_ATTN_OP_H

#include <stddef.h>
#include <stdint.h>

#include "../internal.h"

#define ATTN_D_MAX  512   /* head dim */
#define ATTN_GQ_MAX 32    /* query heads per KV head */
/* Rows up to which the caller writes the KV rows itself and the items run
 * in a barrier-free region (decode); below ATTN_PAR_MIN_WORK elements of
 * q.k and p.v work a region costs more than it saves and the caller does
 * it all. */
#define ATTN_FEW_ROWS     16
#define ATTN_PAR_MIN_WORK (1 << 17)

/* ST_OK when the head dim and the group fit the limits above and every
 * row's slot and position lie inside the cache; otherwise the status
 * (ST_ERR_UNSUPPORTED, ST_ERR_INVALID) with its message in err. */
enum st_status cpu_attn_check(ST_T q, ST_T kcache, ST_T slot, ST_T pos, int32_t n_head,
                              int32_t n_head_kv, struct st_err *err);

/* Rough element count of a step's attention work (q.k and p.v) over n
 * rows at positions pos. */
int64_t cpu_attn_work(const int32_t *pos, int64_t n, int64_t n_head, int64_t d);

#endif /* STRATA_BACKEND_CPU_ATTN_OP_H */
