/* cpu_attn_kern.h -- the tile kernels of the tiled (flash) CPU attention.
 *
 * cpu_attention.c walks the KV cache in tiles of ATTN_TILE positions; for
 * one tile these kernels turn the F16 key and value rows into floats once,
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

#define ATTN_TILE 32   /* KV positions per tile (a multiple of 4) */
#define ATTN_QMAX 64   /* queries per block (even) */

struct attn_kern {
    /* y[t*d + i] = f32(x[t*stride + i]) for t < nt, i < d (F16 rows). */
    void (*load)(const uint16_t *x, size_t stride, int nt, int d, float *y);
    /* s[qi*ATTN_TILE + t] = q_qi . k_t for qi < nq (even), t < nt rounded
     * up to 4 (rows of k past nt must be readable finite numbers). */
    void (*qk)(const float *q, int nq, const float *k, int nt, int d, float *s);
    /* s[t] = exp(s[t] - m) for t < ATTN_TILE (exp(-inf) = 0); the sum. */
    float (*exp_sum)(float *s, float m);
    /* acc_qi = acc_qi * c[qi] + sum_{t < nt} p[qi*ATTN_TILE + t] * v_t
     * for qi < nq (even). */
    void (*pv)(const float *p, int nq, const float *v, int nt, int d, const float *c,
               float *acc);
    /* n floats -> F16, round to nearest even (as st_f32_to_fp16). */
    void (*store)(const float *x, uint16_t *y, int64_t n);
};

/* The kernels for head dim d on this CPU. Thread: any. */
const struct attn_kern *cpu_attn_kern(int d);

#endif /* STRATA_BACKEND_CPU_ATTN_KERN_H */
