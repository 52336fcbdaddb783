/* internal.h -- the op table every backend fills, and the registry.
 *
 * Private to src/backend. The public calls in include/strata/backend.h
 * dispatch through 'be->ops'; nothing outside this module sees the table.
 *
 * ST_OP_MAP names each compute op once, with its parameter list and the
 * argument list that forwards it. It generates the table fields, the
 * public st_backend_<op> wrappers (backend.c, whose prototypes in
 * backend.h the compiler checks them against), the op names and the
 * startup check that no entry is NULL. A CUDA backend fills the same
 * entries; the units and shapes of every argument are documented once, at
 * the public prototypes in backend.h.
 */
#ifndef STRATA_BACKEND_INTERNAL_H
#define STRATA_BACKEND_INTERNAL_H

#include "strata/backend.h"
#include "strata/backend_ssm.h"

#define ST_T const struct st_tensor *

#define ST_OP_MAP(X)                                                                   \
    X(embed, (struct st_backend *be, ST_T out, ST_T table, ST_T ids, struct st_err *err), \
      (be, out, table, ids, err))                                                      \
    X(rms_norm, (struct st_backend *be, ST_T out, ST_T x, ST_T w, float eps,            \
                 struct st_err *err),                                                  \
      (be, out, x, w, eps, err))                                                       \
    X(matmul, (struct st_backend *be, ST_T out, ST_T x, ST_T w, struct st_err *err),    \
      (be, out, x, w, err))                                                            \
    X(matmul3, (struct st_backend *be, ST_T out0, ST_T out1, ST_T out2, ST_T x, ST_T w0, \
                ST_T w1, ST_T w2, struct st_err *err),                                 \
      (be, out0, out1, out2, x, w0, w1, w2, err))                                      \
    X(add, (struct st_backend *be, ST_T out, ST_T a, ST_T b, struct st_err *err),       \
      (be, out, a, b, err))                                                            \
    X(silu_mul, (struct st_backend *be, ST_T out, ST_T gate, ST_T up, struct st_err *err), \
      (be, out, gate, up, err))                                                        \
    X(rope, (struct st_backend *be, ST_T out, ST_T x, ST_T pos, int32_t head_dim,       \
             const struct st_rope_params *rope, struct st_err *err),                   \
      (be, out, x, pos, head_dim, rope, err))                                          \
    X(attention, (struct st_backend *be, ST_T out, ST_T q, ST_T k, ST_T v, ST_T kcache, \
                  ST_T vcache, ST_T slot, ST_T pos, int32_t n_head, int32_t n_head_kv,  \
                  float scale, struct st_err *err),                                    \
      (be, out, q, k, v, kcache, vcache, slot, pos, n_head, n_head_kv, scale, err))    \
    X(add_rms_norm, (struct st_backend *be, ST_T h, ST_T x, ST_T o, ST_T w, float eps,  \
                     struct st_err *err),                                              \
      (be, h, x, o, w, eps, err))                                                      \
    X(rms_norm_rope, (struct st_backend *be, ST_T out, ST_T x, ST_T w, ST_T pos,        \
                      const struct st_rope_params *rope, float eps, struct st_err *err), \
      (be, out, x, w, pos, rope, eps, err))                                            \
    X(moe_route, (struct st_backend *be, ST_T sel, ST_T weights, ST_T x, ST_T router,   \
                  const struct st_moe_route_params *rp, struct st_err *err),           \
      (be, sel, weights, x, router, rp, err))                                          \
    X(moe_ffn, (struct st_backend *be, ST_T out, ST_T x, ST_T sel, ST_T weights,        \
                ST_T gate, ST_T up, ST_T down, struct st_err *err),                    \
      (be, out, x, sel, weights, gate, up, down, err))

/* The optional compute ops (strata/backend_ssm.h): the same shape as
 * ST_OP_MAP, but a backend may leave an entry NULL; the public call then
 * answers ST_ERR_UNSUPPORTED. */
#define ST_OPT_OP_MAP(X)                                                               \
    X(ssm_conv, (struct st_backend *be, ST_T out, ST_T x, ST_T w, ST_T state, ST_T slot, \
                 ST_T pos, struct st_err *err),                                        \
      (be, out, x, w, state, slot, pos, err))                                          \
    X(delta_net, (struct st_backend *be, ST_T out, ST_T qkv, ST_T alpha, ST_T beta,     \
                  ST_T dt_bias, ST_T a, ST_T state, ST_T slot, ST_T pos,                \
                  const struct st_delta_net_params *p, struct st_err *err),            \
      (be, out, qkv, alpha, beta, dt_bias, a, state, slot, pos, p, err))               \
    X(sigmoid_mul, (struct st_backend *be, ST_T out, ST_T x, ST_T g, struct st_err *err), \
      (be, out, x, g, err))

enum st_op {
#define ST_OP_ENUM(name, params, args) ST_OP_##name,
    ST_OP_MAP(ST_OP_ENUM)
#undef ST_OP_ENUM
    ST_OP_COUNT
};

struct st_backend_ops {
    const char *name;                          /* "cpu", "cuda" */

    enum st_status (*open)(const struct st_backend_config *cfg, struct st_backend **out,
                           struct st_err *err);
    void (*close)(struct st_backend *be);
    const char *(*describe)(const struct st_backend *be);

    /* memory (see backend.h for the contracts) */
    enum st_status (*alloc)(struct st_backend *be, struct st_tensor *t, size_t nbytes,
                            struct st_err *err);      /* t->type/ne set; fills data */
    enum st_status (*wrap)(struct st_backend *be, struct st_tensor *t, const void *host,
                           size_t nbytes, struct st_err *err);
    void (*release)(struct st_backend *be, struct st_tensor *t);
    enum st_status (*write)(struct st_backend *be, const struct st_tensor *t, size_t offset,
                            const void *src, size_t n, struct st_err *err);
    enum st_status (*read)(struct st_backend *be, const struct st_tensor *t, size_t offset,
                           void *dst, size_t n, struct st_err *err);
    enum st_status (*sync)(struct st_backend *be, struct st_err *err);
    /* device -> device copy of n bytes; ranges checked (in bounds, not
     * overlapping, dst writable) by backend.c */
    enum st_status (*copy)(struct st_backend *be, const struct st_tensor *dst, size_t dst_off,
                           const struct st_tensor *src, size_t src_off, size_t n,
                           struct st_err *err);

    /* the compute ops: enqueue; device errors may surface at sync() */
#define ST_OP_FIELD(name, params, args) enum st_status (*name) params;
    ST_OP_MAP(ST_OP_FIELD)
#undef ST_OP_FIELD

    /* optional (NULL = not offered; backend.h says what the public call
     * does then). Arguments are validated by backend.c. */
    enum st_status (*graph_begin)(struct st_backend *be, uint64_t key, bool *replayed,
                                  struct st_err *err);
    enum st_status (*graph_end)(struct st_backend *be, struct st_err *err);
    enum st_status (*sample)(struct st_backend *be, ST_T ids, ST_T logits, ST_T draws,
                             struct st_err *err);
    enum st_status (*score)(struct st_backend *be, ST_T vals, ST_T ids, ST_T logits,
                            ST_T next, struct st_err *err);
    /* the optional compute ops; NULL = not offered */
#define ST_OPT_OP_FIELD(name, params, args) enum st_status (*name) params;
    ST_OPT_OP_MAP(ST_OPT_OP_FIELD)
#undef ST_OPT_OP_FIELD
    /* lazy memory (backend.h st_backend_alloc_lazy); NULL = not offered.
     * alloc_lazy fills data like alloc; release frees either kind (it sees
     * ST_TENSOR_LAZY); discard gets a range inside the tensor and returns
     * the bytes given back; resident the bytes committed now. */
    enum st_status (*alloc_lazy)(struct st_backend *be, struct st_tensor *t, size_t nbytes,
                                 struct st_err *err);
    size_t (*discard)(struct st_backend *be, const struct st_tensor *t, size_t offset, size_t n);
    size_t (*resident)(struct st_backend *be, const struct st_tensor *t);
    /* adds the backend's own counters (kernels, ...) to *out, whose 'ops'
     * backend.c has filled from n_ops */
    void (*stats)(const struct st_backend *be, struct st_backend_stats *out);
};

/* Implementations embed this as their first member. */
struct st_backend {
    const struct st_backend_ops *ops;
    uint64_t n_ops;   /* op calls so far (backend.c counts; a graph replay adds its ops) */
};

/* "embed", "matmul", ...: static storage; "?" out of range. */
const char *st_op_name(enum st_op op);

extern const struct st_backend_ops st_backend_cpu_ops;
#ifdef STRATA_HAVE_CUDA
extern const struct st_backend_ops st_backend_cuda_ops;
/* cuda/cuda_copy.c: the 'copy' entry (declared here so the CUDA table in
 * cuda_backend.c needs no header of its own for it). */
enum st_status st_backend_cuda_copy(struct st_backend *be, const struct st_tensor *dst,
                                    size_t dst_off, const struct st_tensor *src, size_t src_off,
                                    size_t n, struct st_err *err);
#endif

#endif /* STRATA_BACKEND_INTERNAL_H */
