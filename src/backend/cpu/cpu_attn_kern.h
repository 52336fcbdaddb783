/* cpu_attn_kern.h -- the tile kernels of the tiled (flash) CPU attention.
 *
 * cpu_attention.c walks the KV cache in tiles of ATTN_TILE positions; for
 * one tile these kernels turn the key and value rows (F16, Q8_0, F32 or
 * BF16) into floats once,
 * take every query of a block (the query heads of one GQA group times the
 * rows of one slot's chunk) against them, and fold the tile into running
 * (max, sum, acc) online-softmax state. A scalar set works for every head
 * dim; an AVX2+FMA+F16C set is picked at run time when the head dim is a
 * multiple of 8.
 */
#ifndef STRATA_BACKEND_CPU_ATTN_KERN_H
#define STRATA_BACKEND_CPU_ATTN_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "strata/dtype.h"

#define ATTN_TILE 32   /* KV positions per tile (a multiple of 4) */
#define ATTN_QMAX 64   /* queries per block (even) */

struct attn_kern {
    /* s[qi*ATTN_TILE + t] = q_qi . k_t for qi < nq (even), t < nt rounded
     * up to 4 (rows of k past nt must be readable finite numbers). */
    void (*qk)(const float *q, int nq, const float *k, int nt, int d, float *s);
    /* s[t] = exp(s[t] - m) for t < ATTN_TILE (exp(-inf) = 0); the sum. */
    float (*exp_sum)(float *s, float m);
    /* acc_qi = acc_qi * c[qi] + sum_{t < nt} p[qi*ATTN_TILE + t] * v_t
     * for qi < nq (even). */
    void (*pv)(const float *p, int nq, const float *v, int nt, int d, const float *c,
               float *acc);
};

/* Reading and writing cache rows of one element type (F16, Q8_0, F32,
 * BF16). */
struct attn_kv_io {
    /* y[t*d + i] = float of element i of the row at x + t*stride bytes,
     * for t < nt, i < d (Q8_0: d a multiple of 32, x on a block). */
    void (*load)(const void *x, size_t stride, int nt, int d, float *y);
    /* n floats -> one cache row at y. F16: round to nearest even (as
     * st_f32_to_fp16); Q8_0: as st_quantize_row_q8_0 (n whole blocks);
     * F32: a copy; BF16: as st_f32_to_bf16 (nearest even, NaN kept). */
    void (*store)(const float *x, void *y, int64_t n);
};

/* The kernels for head dim d on this CPU. Thread: any. */
const struct attn_kern *cpu_attn_kern(int d);
/* The row kernels of cache type t (ST_DTYPE_F16, _Q8_0, _F32, _BF16) for head
 * dim d on this CPU; NULL for any other type. Thread: any. */
const struct attn_kv_io *cpu_attn_kv_io(enum st_dtype t, int d);

#endif /* STRATA_BACKEND_CPU_ATTN_KERN_H */
