/* cuda_internal.h -- private state of the CUDA backend, shared by its files:
 * cuda_backend.c (memory, errors, the op table), cuda_ops.c (per-row and
 * element-wise ops, attention), cuda_matmul.c (matmul, MoE), cuda_graph.c
 * (graph capture/replay, sampling).
 *
 * One struct cuda_backend is one device with one stream: every op enqueues
 * on that stream in call order, so buffers (including the scratch) can be
 * reused by the next op without events. Device errors surface at the next
 * call that checks the stream (sync, read) or at a launch.
 *
 * Errors (STYLE.md b.4): every CUDA / cuBLAS result goes through
 * cuda_status(), which maps it to a status with a message naming the call;
 * sticky errors (illegal address, launch failure, ...) poison the backend:
 * from then on every entry returns ST_ERR_DEVICE without touching the
 * device. Nothing here aborts.
 *
 * Threads: one backend is driven by one thread at a time; each entry calls
 * cudaSetDevice first, so backends of different GPUs can live on
 * different engine threads.
 */
#ifndef STRATA_BACKEND_CUDA_INTERNAL_H
#define STRATA_BACKEND_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "../internal.h"
#include "kernels.h"

/* Dense matmuls of up to this many rows use the dp4a kernels; more rows
 * (a prompt chunk) dequantize the weights to fp16 and call cuBLAS. */
#define CUDA_MMV_MAX_ROWS 16
/* Weight rows dequantized per cuBLAS call: at most this many fp16 elements. */
#define CUDA_GEMM_SLAB_ELEMS ((size_t)16 << 20)
/* Pinned staging for weight uploads: two buffers of this size. */
#define CUDA_STAGE_BYTES ((size_t)32 << 20)
#define CUDA_CUBLAS_WS_BYTES ((size_t)32 << 20)
#define CUDA_MAX_GRAPHS 64

struct cuda_graph_entry {
    uint64_t        key;       /* the caller's shape id; 0 = unused entry */
    uint32_t        seen;      /* begin() calls so far (capture on the 2nd) */
    cudaGraphExec_t exec;      /* NULL until captured */
};

struct cuda_backend {
    struct st_backend base;          /* must be first */
    int               device;
    cudaStream_t      stream;
    cublasHandle_t    blas;
    bool              poisoned;      /* a sticky CUDA error happened */
    char              poison_msg[200];

    unsigned         *err_flag;      /* device word of ST_KF_* bits */
    unsigned         *err_host;      /* pinned copy read at sync */

    void             *scratch;       /* device scratch, grown between steps */
    size_t            scratch_size;
    void             *aux;           /* second scratch: moe_route's logits (the router
                                      * matmul itself uses 'scratch') */
    size_t            aux_size;
    void             *blas_ws;       /* cuBLAS workspace (graph capture needs one) */

    void             *stage[2];      /* pinned upload staging */
    cudaEvent_t       stage_done[2];

    /* accounting, for describe() and the upload progress line */
    size_t            weight_bytes, buffer_bytes, next_log;
    int64_t           n_weights;
    size_t            total_mem;
    char              name[256];
    int               cc_major, cc_minor, n_sm;
    char              desc[512];

    /* CUDA graphs of decode steps (cuda_graph.c) */
    struct cuda_graph_entry graphs[CUDA_MAX_GRAPHS];
    int               capturing;     /* index+1 of the graph being captured, 0 = none */
};

static inline struct cuda_backend *cuda_of(struct st_backend *be)
{
    return (struct cuda_backend *)be;
}

/* Map a CUDA result to a status (ST_OK for cudaSuccess). Out of memory ->
 * ST_ERR_DEVICE_OOM; sticky errors poison the backend -> ST_ERR_DEVICE;
 * others -> ST_ERR_DEVICE. The message names 'what' and file:line. */
enum st_status cuda_status(struct cuda_backend *cb, cudaError_t e, const char *what,
                           const char *file, int line, struct st_err *err);
enum st_status cuda_blas_status(struct cuda_backend *cb, cublasStatus_t s, const char *what,
                                const char *file, int line, struct st_err *err);

/* An expression, no hidden return (STYLE.md b.4). */
#define ST_CUDA(cb, call, err) cuda_status((cb), (call), #call, __FILE__, __LINE__, (err))
#define ST_CUBLAS(cb, call, err) cuda_blas_status((cb), (call), #call, __FILE__, __LINE__, (err))

/* Every entry starts here: ST_ERR_DEVICE when poisoned, else selects the
 * backend's device. */
enum st_status cuda_enter(struct cuda_backend *cb, struct st_err *err);

/* At least n bytes of device scratch (contents lost when it grows). Growing
 * is not allowed while a graph is being captured: ST_ERR_INTERNAL then
 * (captures happen on a shape's second run, after the first sized it).
 * Growing moves the scratch, so it drops every captured graph first (their
 * kernel arguments point into the old one). */
enum st_status cuda_scratch(struct cuda_backend *cb, size_t n, void **out, struct st_err *err);

/* At least n bytes of the second scratch (cuda_backend.c 'aux'), same
 * rules as cuda_scratch: for a buffer that must live across a call that
 * uses the scratch itself (moe_route's logits around the router matmul). */
enum st_status cuda_aux(struct cuda_backend *cb, size_t n, void **out, struct st_err *err);

/* Carve 256-byte aligned pieces out of one scratch allocation: sizes[i]
 * bytes each; ptrs[i] receives the piece. */
enum st_status cuda_scratch_parts(struct cuda_backend *cb, int n, const size_t *sizes,
                                  void **ptrs, struct st_err *err);

/* Check the device error word (after a stream sync): ST_ERR_INVALID naming
 * the bad inputs, and the word is cleared. */
enum st_status cuda_check_flag(struct cuda_backend *cb, struct st_err *err);

/* "Q4_K" */
const char *cuda_type_name(enum st_dtype t);

/* y[n, O] = x[n, I] . W^T for f32 x and y (device pointers), any supported
 * weight type; picks the dp4a kernels or fp16 cuBLAS by n. Uses scratch
 * (the caller's buffers must not live there). */
enum st_status cuda_matmul_raw(struct cuda_backend *cb, float *y, const float *x, int64_t n,
                               const struct st_tensor *w, struct st_err *err);

/* The op entries (cuda_ops.c, cuda_matmul.c). */
#define CUDA_OP_DECL(name, params, args) enum st_status cuda_op_##name params;
ST_OP_MAP(CUDA_OP_DECL)
#undef CUDA_OP_DECL

/* Graph capture / replay and GPU sampling (cuda_graph.c); see docs/CUDA.md. */
enum st_status cuda_graph_begin(struct st_backend *be, uint64_t key, bool *replayed,
                                struct st_err *err);
enum st_status cuda_graph_end(struct st_backend *be, struct st_err *err);
void cuda_graphs_free(struct cuda_backend *cb);
/* Drop every captured graph (their kernels hold pointers into a scratch
 * that is about to move); keys start over (eager, capture, replay). */
void cuda_graphs_invalidate(struct cuda_backend *cb);
/* End and discard a capture left open by a failed op (no-op otherwise). */
void cuda_capture_abort(struct cuda_backend *cb);
enum st_status cuda_op_sample(struct st_backend *be, const struct st_tensor *ids,
                              const struct st_tensor *logits, const struct st_tensor *draws,
                              struct st_err *err);
/* st_backend_score (kernels/score.cu); a bad 'next' shows at the next read. */
enum st_status cuda_op_score(struct st_backend *be, const struct st_tensor *vals,
                             const struct st_tensor *ids, const struct st_tensor *logits,
                             const struct st_tensor *next, struct st_err *err);

#endif /* STRATA_BACKEND_CUDA_INTERNAL_H */
