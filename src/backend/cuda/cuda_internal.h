/* cuda_internal.h -- private state of the CUDA backend, shared by its files:
 * cuda_backend.c (open/close, tensors, the op table), cuda_status.c
 * (errors), cuda_mem.c (device allocation, scratch), cuda_ops.c (per-row
 * and element-wise ops), cuda_attention.c, cuda_matmul.c (matmul, MoE),
 * cuda_ssm.c (the recurrent ops), cuda_fuse.c (the q8_1 record, counters),
 * cuda_graph.c (graph capture/replay, sampling), cuda_graph_drop.c
 * (dropping graphs). Calls point down that list's layers: the op table
 * calls the ops, the ops call the services, never back.
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
    uint64_t        kernels;   /* kernel launches and ops captured (added per replay) */
    uint64_t        ops;
};

/* What the q8_1 activation buffer 'actq' holds (cuda_fuse.c): the q8_1
 * rows [0, rows) of the dense f32 activation x [cols, >= rows], stride
 * st_kern_q8_1_row_bytes(cols). Kept only while no op since has written
 * any byte of x's rows; every write path calls cuda_actq_wrote(). */
struct cuda_actq_rec {
    const void *x;             /* device address of the f32 rows; NULL = holds nothing */
    int64_t     cols, rows;
};

/* A routing whose grouping is already done (cuda_matmul.c): moe_route
 * with fusion on, for a step of at most CUDA_MOE_GRP_PAIRS pairs, groups
 * the pairs of its sel in the same launch into moe_grp; moe_ffn of that
 * sel (n rows, k choices, n_exp experts) then launches no moe_group.
 * Dropped like the q8_1 record: when sel's bytes are written, at release
 * and at graph begin/end. */
struct cuda_moe_rec {
    const void *sel;           /* NULL = moe_grp holds nothing */
    int64_t     n, k, n_exp;
};
#define CUDA_MOE_GRP_PAIRS 512   /* 16 decode rows x 32 choices */
/* int32s of moe_grp: groups (2 + 2 * pairs), pair_row, pair_of */
#define CUDA_MOE_GRP_INTS (2 + 4 * CUDA_MOE_GRP_PAIRS)

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
    uint64_t          step_kernels0, step_ops0;  /* counters at the last graph_begin */

    /* fusion (cuda_fuse.c): STRATA_CUDA_FUSE=0 at open turns it all off */
    bool              fuse;
    /* STRATA_CUDA_DELTA_CHUNK=0 at open: no chunked delta rule (cuda_ssm.c) */
    bool              delta_recurrent;
    /* decode rows of <= attn_short positions take attention's short path
     * (cuda_attention.c; STRATA_CUDA_ATTN_SHORT at open, 0 = off) */
    int32_t           attn_short;
    void             *actq;          /* q8_1 activation rows (rows <= CUDA_MMV_MAX_ROWS) */
    size_t            actq_size;
    struct cuda_actq_rec actq_rec;
    int32_t          *moe_grp;       /* CUDA_MOE_GRP_INTS: a routing's groups */
    struct cuda_moe_rec moe_rec;

    /* counters (st_backend_stats) */
    uint64_t          kernels, quant_skipped, graph_replays;
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

/* The result of a kernels.h launcher: cudaErrorInvalidValue is its answer
 * to a shape it does not take (nothing was enqueued) -> ST_ERR_UNSUPPORTED
 * naming 'what'; anything else as cuda_status. */
enum st_status cuda_launched(struct cuda_backend *cb, cudaError_t e, const char *what,
                             const char *file, int line, struct st_err *err);

/* Expressions, no hidden return (STYLE.md b.4). ST_CUDA_LAUNCH evaluates
 * 'launch' (a kernels.h call) once: rc = ST_CUDA_LAUNCH(cb, st_kern_x(...),
 * "x", err). */
#define ST_CUDA(cb, call, err) cuda_status((cb), (call), #call, __FILE__, __LINE__, (err))
#define ST_CUBLAS(cb, call, err) cuda_blas_status((cb), (call), #call, __FILE__, __LINE__, (err))
#define ST_CUDA_LAUNCH(cb, launch, what, err) \
    cuda_launched((cb), (launch), (what), __FILE__, __LINE__, (err))

/* Every entry starts here: ST_ERR_DEVICE when poisoned, else selects the
 * backend's device. */
enum st_status cuda_enter(struct cuda_backend *cb, struct st_err *err);

/* cudaMalloc of nbytes (at least 1) into *p: out of memory is
 * ST_ERR_DEVICE_OOM naming 'what', the size and what the device has free;
 * ST_ERR_INTERNAL during a graph capture (nothing may allocate there). */
enum st_status cuda_dev_alloc(struct cuda_backend *cb, size_t nbytes, void **p, const char *what,
                              struct st_err *err);

/* At least n bytes of device scratch (contents lost when it grows). Growing
 * is not allowed while a graph is being captured: ST_ERR_INTERNAL then
 * (captures happen on a shape's second run, after the first sized it).
 * Growing moves the scratch, so it drops every captured graph first (their
 * kernel arguments point into the old one). */
enum st_status cuda_scratch(struct cuda_backend *cb, size_t n, void **out, struct st_err *err);

/* Grow the device buffer *buf (*size bytes) to at least n bytes (25%
 * headroom when it fits): the rules of cuda_scratch. */
enum st_status cuda_grow(struct cuda_backend *cb, void **buf, size_t *size, size_t n,
                         const char *what, struct st_err *err);

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

/* ---- fusion and counters (cuda_fuse.c) ----------------------------------- */

/* Read STRATA_CUDA_FUSE once (open): "0" turns off quantize reuse, the
 * norm's q8_1 epilogue and the fused kernels of add_rms_norm /
 * rms_norm_rope (they then run as two launches each). */
void cuda_fuse_init(struct cuda_backend *cb);
/* n kernels were enqueued (launch counter). */
static inline void cuda_count(struct cuda_backend *cb, int64_t n)
{
    cb->kernels += (uint64_t)n;
}
/* Launches a launcher makes for n_rows rows cut into grid.y chunks. */
static inline int64_t cuda_row_chunks(int64_t n_rows)
{
    return n_rows < 1 ? 1 : (n_rows + 65534) / 65535;
}
/* Bytes [p, p + n) of device memory are about to be written by an op, a
 * write or a copy: forget the q8_1 record when they overlap its rows. */
void cuda_actq_wrote(struct cuda_backend *cb, const void *p, size_t n);
static inline void cuda_actq_wrote_t(struct cuda_backend *cb, const struct st_tensor *t)
{
    cuda_actq_wrote(cb, t->data, st_tensor_nbytes(t));
}
/* Forget the record (graph begin/end, release, anything unknown). */
void cuda_actq_forget(struct cuda_backend *cb);
/* Forget the routing's groups (graph begin/end, release). */
static inline void cuda_moe_forget(struct cuda_backend *cb)
{
    cb->moe_rec.sel = NULL;
}
/* The actq buffer sized for rows q8_1 rows of cols (grows between steps
 * like the scratch; growing forgets the record). */
enum st_status cuda_actq_buffer(struct cuda_backend *cb, int64_t cols, int64_t rows, void **out,
                                struct st_err *err);
/* Record that actq now holds the q8_1 of x [cols, rows] (no-op unfused). */
void cuda_actq_set(struct cuda_backend *cb, const void *x, int64_t cols, int64_t rows);
/* q8_1 rows of x [cols, rows] (rows <= CUDA_MMV_MAX_ROWS) for a dp4a
 * matmul: actq as it is when the record says it holds them (no launch,
 * counted in quant_skipped), else quantized into actq and recorded.
 * *stride = st_kern_q8_1_row_bytes(cols). */
enum st_status cuda_actq_quantize(struct cuda_backend *cb, const float *x, int64_t cols,
                                  int64_t rows, const void **q, size_t *stride,
                                  struct st_err *err);
/* The 'stats' entry of the op table. */
void cuda_stats(const struct st_backend *be, struct st_backend_stats *out);
/* Debug log line of a step's launches (graph_end, or a replay). */
void cuda_log_step(struct cuda_backend *cb, const char *how, uint64_t kernels, uint64_t ops);

/* The op entries (cuda_ops.c, cuda_matmul.c) and the optional recurrent
 * ones (cuda_ssm.c). */
#define CUDA_OP_DECL(name, params, args) enum st_status cuda_op_##name params;
ST_OP_MAP(CUDA_OP_DECL)
ST_OPT_OP_MAP(CUDA_OP_DECL)
#undef CUDA_OP_DECL

/* The short-path bound of decode attention (cuda_attention.c): rows of at
 * most this many positions; STRATA_CUDA_ATTN_SHORT=N sets it, 0 turns the
 * path off (the A/B baseline). Logged. */
int32_t cuda_attn_short_max(int device);

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
