/* cpu.h -- private interface of the CPU backend: kernels, worker pool, state.
 *
 * Kernels. For every weight type there is one dot kernel with the
 * signature cpu_dot_fn: it takes ONE weight row and nx activation rows
 * already quantized to the type's dot type (ENGINE.md 2.11, see
 * cpu_dot_type) and writes nx floats. Taking several activation rows per
 * call is what lets a batch reuse each weight load (and the decoding of
 * its blocks) instead of streaming the weights once per row.
 *
 * Each instruction set has a table of kernels (scalar, avx2, avx-vnni,
 * avx512-vnni); a NULL entry means "use a lower level". The scalar table
 * is complete and is the reference every SIMD entry is tested against.
 * The choice happens once at run time with __builtin_cpu_supports; the
 * SIMD files compile with per-function target attributes, never with a
 * global -march, so one binary runs on any x86-64.
 */
#ifndef STRATA_BACKEND_CPU_H
#define STRATA_BACKEND_CPU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../internal.h"
#include "strata/quant.h"

/* y[j * ys] = dot(w, x_j) for j < nx, x_j = (const char *)x + j * xs.
 * n: elements per row (a whole number of blocks of the weight type);
 * w: one weight row; x: nx rows of the dot type; 1 <= nx <= CPU_NX_MAX. */
typedef void (*cpu_dot_fn)(int64_t n, const void *w, const void *x, size_t xs, int nx,
                           float *y, size_t ys);

#define CPU_NX_MAX 8

/* Like cpu_dot_fn over CPU_NW consecutive weight rows (row r at
 * (const char *)w + r * ws): y[j * ys + r] = dot(w_r, x_j). Optional per
 * type and level; when present it is bitwise equal to calling that
 * level's dot once per weight row (tested), so a row's result does not
 * depend on which of the two computed it. Used where few activation rows
 * meet many weight rows (decode). */
typedef void (*cpu_dotw_fn)(int64_t n, const void *w, size_t ws, const void *x, size_t xs,
                            int nx, float *y, size_t ys);

#define CPU_NW 4

/* Quantize n floats (whole blocks) to one row of an activation type. */
typedef void (*cpu_quant_fn)(const float *x, void *dst, int64_t n);

enum cpu_isa {
    CPU_ISA_SCALAR,
    CPU_ISA_AVX2,        /* avx2 + fma + f16c, maddubs for int8 dots */
    CPU_ISA_AVXVNNI,     /* the avx2 kernels with VEX vpdpbusd/vpdpwssd */
    CPU_ISA_AVX512,      /* avx512f/bw/vl + vnni: 32 vector registers, EVEX dpbusd */
    CPU_ISA_COUNT
};

struct cpu_kernels {
    const char *name;                    /* "scalar", "avx2", "avx-vnni", "avx512-vnni" */
    int         nx;                      /* activation rows a call handles best */
    cpu_dot_fn  dot[ST_DTYPE_COUNT_];    /* by weight type; NULL = not at this level */
    cpu_dotw_fn dotw[ST_DTYPE_COUNT_];   /* CPU_NW rows at once; NULL = use dot */
    /* Activation rows up to which the matmul calls dotw (0 = 2): set where
     * dotw handles more than 2 rows in one pass (sharing the activation
     * side across its CPU_NW weight rows) and beats dot there. */
    unsigned char dotw_nx[ST_DTYPE_COUNT_];
    cpu_quant_fn quant[ST_DTYPE_COUNT_]; /* activation quantizer by dot type; NULL = reference */
};

/* The type activations are quantized to before a dot with weight type t:
 * F32->F32, F16->F16, BF16->BF16, Q4_0/Q4_1/Q5_0/Q5_1/Q8_0->Q8_0 (not Q8_1:
 * the min term's sum of activations is taken exactly from the Q8_0 codes),
 * K and IQ types->Q8_K.
 * Returns ST_DTYPE_COUNT_ for a type without a kernel. */
enum st_dtype cpu_dot_type(enum st_dtype t);

/* The kernel table of one instruction set; NULL when this CPU (or this
 * build) cannot run it. Thread: any. */
const struct cpu_kernels *cpu_kernels_for(enum cpu_isa isa);
/* F16C conversions (cpuid once, then cached; clang 14's
 * __builtin_cpu_supports lacks it). Thread: any. */
bool cpu_has_f16c(void);
/* AVX2 + FMA + F16C: the attention and KV-write fast paths (cached). */
bool cpu_has_avx2_f16c(void);

/* The best available kernel per type, merged across levels (computed once).
 * STRATA_CPU_ISA=scalar|avx2|avx-vnni|avx512-vnni caps the level (tests,
 * benchmarks). Thread: any. */
const struct cpu_kernels *cpu_kernels_best(void);

/* Per-ISA tables, defined in kern_*.c. */
extern const struct cpu_kernels cpu_kernels_scalar;
#if defined(__x86_64__)
extern const struct cpu_kernels cpu_kernels_avx2;
extern const struct cpu_kernels cpu_kernels_avxvnni;
extern const struct cpu_kernels cpu_kernels_avx512;
#endif

/* Quantize n floats of x to 'dot_type' (F32 copy, F16, BF16, Q8_0, Q8_K)
 * at dst (st_dtype_row_bytes(dot_type, n) bytes), with k's SIMD quantizer
 * when it has one (bit-exact with the quant.h reference). */
void cpu_quantize_act(const struct cpu_kernels *k, enum st_dtype dot_type, const float *x,
                      void *dst, int64_t n);

/* Half precision helpers for the scalar paths. */
static inline float cpu_h2f(uint16_t h) { return st_fp16_to_f32(h); }

/* ---- worker pool ------------------------------------------------------- */

struct cpu_pool;

/* One parallel region: fn(ctx, ith, nth) runs on every thread, ith = 0 on
 * the caller. cpu_pool_barrier() inside fn waits for all nth threads. */
typedef void (*cpu_task_fn)(void *ctx, int ith, int nth);

/* n_threads >= 1 (the caller counts as one). NULL on failure. */
struct cpu_pool *cpu_pool_new(int n_threads);
void cpu_pool_free(struct cpu_pool *p);
int cpu_pool_size(const struct cpu_pool *p);
/* Run fn on min(nth, pool size) threads and return when all are done. */
void cpu_pool_run(struct cpu_pool *p, cpu_task_fn fn, void *ctx, int nth);
/* Like cpu_pool_run, but the caller may close the region as soon as its
 * own fn returns: threads that have not joined by then never run it. So
 * fn must take its work from a shared counter (cpu_claim), never from a
 * static split by ith, and must not call cpu_pool_barrier. ith is still
 * unique among the threads that run (per-thread scratch is safe). */
void cpu_pool_run_dyn(struct cpu_pool *p, cpu_task_fn fn, void *ctx, int nth);
/* Wait for every thread of the current region (call from inside fn only;
 * cpu_pool_run regions only). */
void cpu_pool_barrier(struct cpu_pool *p);

/* Next chunk index of a dynamic region (one atomic add). */
static inline int64_t cpu_claim(atomic_llong *next)
{
    return atomic_fetch_add(next, 1);
}

/* ---- the backend ------------------------------------------------------- */

struct cpu_backend {
    struct st_backend          base;     /* must be first */
    struct cpu_pool           *pool;
    int                        n_threads;
    const struct cpu_kernels  *kern;
    char                       desc[96];
    /* scratch, grown on demand, 64-byte aligned; owned */
    void                      *scratch;
    size_t                     scratch_size;
};

/* At least 'n' bytes of scratch (previous contents lost); NULL on OOM. */
void *cpu_scratch(struct cpu_backend *cb, size_t n);
/* Frees the scratch (cpu_close). */
void cpu_scratch_free(struct cpu_backend *cb);

/* Split [0, n) into nth nearly equal parts; part ith is [*lo, *hi). */
static inline void cpu_split(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi)
{
    *lo = n * ith / nth;
    *hi = n * (ith + 1) / nth;
}

/* Run fn over rows [0, n_rows) split across the pool when the total work
 * (n_rows * work_per_row, roughly elements touched) is worth a dispatch,
 * else on the calling thread. fn(ctx, r0, r1) handles rows [r0, r1). */
typedef void (*cpu_rows_fn)(void *ctx, int64_t r0, int64_t r1);
void cpu_parallel_rows(struct cpu_backend *cb, int64_t n_rows, int64_t work_per_row,
                       cpu_rows_fn fn, void *ctx);

/* Ops implemented in cpu_matmul.c / cpu_attention.c / cpu_ops.c. */
#define CPU_OP_DECL(name, params, args) enum st_status cpu_op_##name params;
ST_OP_MAP(CPU_OP_DECL)
#undef CPU_OP_DECL

/* The per-row attention path before tiling (cpu_attention_plain.c): the
 * same contract as cpu_op_attention, kept as a benchmark baseline. */
enum st_status cpu_attention_plain(struct st_backend *be, ST_T out, ST_T q, ST_T k, ST_T v,
                                   ST_T kcache, ST_T vcache, ST_T slot, ST_T pos,
                                   int32_t n_head, int32_t n_head_kv, float scale,
                                   struct st_err *err);

/* The optional recurrent ops (cpu_ssm.c; strata/backend_ssm.h). */
#define CPU_OPT_OP_DECL(name, params, args) enum st_status cpu_op_##name params;
ST_OPT_OP_MAP(CPU_OPT_OP_DECL)
#undef CPU_OPT_OP_DECL

/* The optional sampler (cpu_sample.c; backend.h st_backend_sample). */
enum st_status cpu_op_sample(struct st_backend *be, ST_T ids, ST_T logits, ST_T draws,
                             struct st_err *err);
/* The optional scorer (cpu_score.c; backend.h st_backend_score). */
enum st_status cpu_op_score(struct st_backend *be, ST_T vals, ST_T ids, ST_T logits, ST_T next,
                            struct st_err *err);

/* y[r, :] (n_rows rows, row stride ys floats) = x . W^T over weight rows
 * [o0, o1), with x already quantized (xq rows of xq_stride bytes). Used by
 * matmul and the MoE expert passes; runs on the calling thread. */
void cpu_matmul_rows(const struct cpu_kernels *k, enum st_dtype wtype, const void *w,
                     size_t w_stride, int64_t n_in, int64_t o0, int64_t o1, const void *xq,
                     size_t xq_stride, int64_t n_rows, float *y, size_t ys);

/* Weight rows per dynamically claimed chunk for n rows on nth threads. */
int64_t cpu_chunk_rows(int64_t n, int nth);

/* y[n_rows, O] = x[n_rows, I] . W^T on the pool: activations quantized into
 * the backend scratch (so the caller's buffers must not live there). */
enum st_status cpu_matmul_f32(struct cpu_backend *cb, float *y, const float *x,
                              int64_t n_rows, const struct st_tensor *w, struct st_err *err);

#endif /* STRATA_BACKEND_CPU_H */
