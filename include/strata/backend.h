/* backend.h -- the op table the layer program is written against.
 *
 * A backend is a device (the CPU with SIMD and a worker pool, later a CUDA
 * GPU) that owns memory and runs a fixed set of ops. The architecture code
 * (src/model) is written once against the st_backend_* calls below; every
 * backend fills the same table (src/backend/internal.h, ST_OP_MAP), so the
 * CUDA backend plugs in without touching the model.
 *
 * Tensors. A struct st_tensor is a small value: dtype, shape ne[4] (GGML
 * order: ne[0] is the innermost, contiguous dimension; unused dims are 1)
 * and a handle to backend-owned storage. Storage is always dense and
 * row-major: element (i0, i1, i2, i3) of a float type sits at
 * ((i3*ne2 + i2)*ne1 + i1)*ne0 + i0; a quantized row (ne[0] elements) is
 * ne[0]/block_elems packed blocks. 'data' is a host pointer on the CPU and
 * a device pointer on CUDA: callers never dereference it, they use
 * st_backend_write/read. Views (st_tensor_slice, st_tensor_reshape) alias
 * their parent's storage and are never released.
 *
 * Rows. Every op works on a batch of rows: "x [n, E]" means a tensor with
 * ne[0] = E (elements per row) and ne[1] = n rows. One call per op per
 * step covers every row of the step (all slots' decode tokens plus the
 * read chunk); the number of rows is always taken from the tensors, so a
 * step with fewer rows than the buffers hold passes row slices
 * (st_tensor_slice(t, 1, 0, n)). Per-row integers (token ids, positions,
 * slots, selected experts) are I32 tensors the caller fills once per step
 * with st_backend_write, so a device backend uploads them once, not once
 * per layer.
 *
 * Execution. Ops are enqueued in call order; a backend may run them
 * asynchronously (CUDA) and report a device error at the next op or at
 * st_backend_sync(). The CPU backend runs each op to completion before it
 * returns. Outputs may not alias inputs unless an op says so.
 *
 * Errors. Shape or dtype mismatches are caller bugs but are still reported
 * as ST_ERR_INVALID with a message naming the op and the shapes, never an
 * abort. A dtype an op has no kernel for gives ST_ERR_UNSUPPORTED.
 *
 * Threads: one backend is driven by one thread at a time (the engine
 * thread that owns it). Different backends are independent. The pure
 * st_tensor_* helpers may be called from any thread.
 */
#ifndef STRATA_BACKEND_H
#define STRATA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/draw.h"
#include "strata/dtype.h"
#include "strata/err.h"
#include "strata/rope.h"

struct st_backend;   /* opaque; one per device */

#define ST_TENSOR_DIMS 4

/* Flags of struct st_tensor. */
enum {
    ST_TENSOR_OWNED = 1u << 0,   /* storage allocated by the backend: release frees it */
    ST_TENSOR_WRAPPED = 1u << 1, /* wraps caller memory (CPU zero-copy) or a weight upload */
    ST_TENSOR_VIEW = 1u << 2,    /* aliases another tensor's storage; never released */
    ST_TENSOR_LAZY = 1u << 3,    /* (with OWNED) st_backend_alloc_lazy: committed as written */
};

struct st_tensor {
    enum st_dtype      type;
    int64_t            ne[ST_TENSOR_DIMS]; /* elements per dimension, ne[0] innermost */
    void              *data;   /* backend storage (host or device pointer); opaque to callers */
    struct st_backend *be;     /* the backend that owns 'data'; NULL for an empty tensor */
    uint32_t           flags;  /* ST_TENSOR_* */
};

struct st_backend_config {
    int32_t n_threads;   /* CPU: worker threads including the caller; 0 = online cores */
    int32_t device;      /* CUDA: device ordinal; ignored by the CPU backend */
};

/* ---- backends ---------------------------------------------------------- */

/* Open the backend called 'name' ("cpu"; "cuda" when built with CUDA).
 * cfg may be NULL (defaults). On success *out is owned by the caller and
 * freed with st_backend_close. Unknown or not-built names give
 * ST_ERR_UNSUPPORTED with the list of built backends in the message.
 * Thread: any. */
enum st_status st_backend_open(const char *name, const struct st_backend_config *cfg,
                               struct st_backend **out, struct st_err *err);

/* Free the backend and its worker threads. Every tensor it allocated must
 * have been released first. NULL is a no-op. */
void st_backend_close(struct st_backend *be);

/* "cpu", "cuda": static storage. */
const char *st_backend_name(const struct st_backend *be);

/* A one-line description of the device and what it picked at run time,
 * e.g. "cpu: 2 threads, kernels avx512-vnni". Static or backend storage,
 * valid until close. */
const char *st_backend_describe(const struct st_backend *be);

/* True when 'name' was built into this binary. Thread: any. */
bool st_backend_available(const char *name);

/* Check that every required entry of the backend's op table is filled in;
 * ST_ERR_INTERNAL naming the first missing op otherwise. Thread: any. */
enum st_status st_backend_check_ops(const char *name, struct st_err *err);

/* ---- tensors: memory --------------------------------------------------- */

/* Allocate a dense tensor of 'type' and shape ne (ne[k] >= 1; ne[0] a
 * whole number of blocks), zero-filled (KV caches rely on this only for
 * tidiness: attention never reads past a row's position). *out is owned:
 * free it with st_backend_release. ST_ERR_DEVICE_OOM / ST_ERR_NOMEM when
 * it does not fit; ST_ERR_INVALID for a bad shape. */
enum st_status st_backend_alloc(struct st_backend *be, enum st_dtype type,
                                const int64_t ne[ST_TENSOR_DIMS],
                                struct st_tensor *out, struct st_err *err);

/* st_backend_alloc, except that memory is only reserved: a page is
 * committed when it is first written, and st_backend_discard gives pages
 * back (the unified KV pool, docs/CLI.md --kv-unified: every slot's region
 * is the whole context, but only what slots hold costs memory). Reads of a
 * page never written give zeros. The CPU backend maps anonymous memory
 * with MAP_NORESERVE. ST_ERR_UNSUPPORTED for a backend that cannot (cuda
 * for now). */
enum st_status st_backend_alloc_lazy(struct st_backend *be, enum st_dtype type,
                                     const int64_t ne[ST_TENSOR_DIMS],
                                     struct st_tensor *out, struct st_err *err);

/* Give back the memory of the whole pages inside bytes [offset, offset+n)
 * of a lazy tensor (st_backend_alloc_lazy); they read as zeros afterwards
 * and are committed again when written. Parts of pages at either end stay.
 * Returns the bytes given back; 0 for any other tensor, a backend without
 * lazy memory, or a range outside the tensor. Synchronous (the CPU runs its
 * ops in call order, so every op before it has written what it drops). */
size_t st_backend_discard(struct st_backend *be, const struct st_tensor *t, size_t offset,
                          size_t n);

/* Bytes of tensor t that hold committed memory now: for a lazy tensor the
 * pages written and not given back (mincore), else its whole size. For
 * tests and the load log. */
size_t st_backend_resident(struct st_backend *be, const struct st_tensor *t);

/* Make a weight tensor from 'nbytes' bytes of host memory at 'host' (e.g.
 * an mmap of the GGUF file) holding a dense tensor of 'type' and shape ne.
 * The CPU backend wraps the memory in place, without a copy: 'host' is
 * borrowed and must stay mapped and unchanged until the tensor is
 * released. A device backend copies it to device memory and does not keep
 * 'host'. nbytes must equal the tensor's size. Release with
 * st_backend_release. */
enum st_status st_backend_wrap(struct st_backend *be, enum st_dtype type,
                               const int64_t ne[ST_TENSOR_DIMS], const void *host,
                               size_t nbytes, struct st_tensor *out, struct st_err *err);

/* Free what st_backend_alloc/st_backend_wrap made and reset *t to empty.
 * Views and empty tensors are a no-op. */
void st_backend_release(struct st_backend *be, struct st_tensor *t);

/* Copy n bytes from host 'src' into tensor t at byte offset 'offset'
 * (host -> device). The source may be reused when the call returns. */
enum st_status st_backend_write(struct st_backend *be, const struct st_tensor *t,
                                size_t offset, const void *src, size_t n,
                                struct st_err *err);

/* Copy n bytes of tensor t from byte offset 'offset' to host 'dst'. Waits
 * for every op enqueued before it (device -> host implies a sync). */
enum st_status st_backend_read(struct st_backend *be, const struct st_tensor *t,
                               size_t offset, void *dst, size_t n, struct st_err *err);

/* Wait until every enqueued op has finished; reports a deferred device
 * error. A no-op on the CPU. */
enum st_status st_backend_sync(struct st_backend *be, struct st_err *err);

/* Copy n bytes of tensor src from byte offset src_off to tensor dst at
 * byte offset dst_off, on the device (device -> device; no host round
 * trip). src and dst may be the same tensor or views of one storage, but
 * the two byte ranges must not overlap (ST_ERR_INVALID: it is a copy, not
 * a move). Enqueued in call order like an op (CUDA: cudaMemcpyAsync on the
 * backend's stream), so ops before it have written src and ops after it
 * see dst. Used to copy KV cache rows between slots (prefix sharing,
 * docs/BATCHING.md "Prefix reuse"). dst must not be a wrapped weight
 * (ST_ERR_INVALID); both must belong to 'be'. n = 0 is a no-op. */
enum st_status st_backend_copy(struct st_backend *be, const struct st_tensor *dst,
                               size_t dst_off, const struct st_tensor *src, size_t src_off,
                               size_t n, struct st_err *err);

/* ---- tensors: pure helpers (no backend call, no allocation) ------------ */

int64_t st_tensor_nelem(const struct st_tensor *t);
/* Bytes of one row of ne[0] elements (0 for an invalid shape). */
size_t st_tensor_row_bytes(const struct st_tensor *t);
/* Bytes of the whole tensor. */
size_t st_tensor_nbytes(const struct st_tensor *t);
/* ne[1]*ne[2]*ne[3]: the number of rows. */
int64_t st_tensor_nrows(const struct st_tensor *t);

/* A view of indices [start, start+len) of dimension 'dim' of t. Every
 * dimension above 'dim' must have ne == 1 so the view stays dense (rows of
 * a 2-D buffer: dim 1; expert e of a stacked [in, out, n_expert] weight:
 * dim 2; layer l of a [.., .., .., n_layer] KV cache: dim 3). Asserts on
 * out-of-range arguments (a programmer error). */
struct st_tensor st_tensor_slice(const struct st_tensor *t, int dim, int64_t start,
                                 int64_t len);

/* The same storage seen with shape ne (same number of elements; ne[0] a
 * whole number of blocks). Asserts when the counts differ. */
struct st_tensor st_tensor_reshape(const struct st_tensor *t,
                                   const int64_t ne[ST_TENSOR_DIMS]);

/* ---- ops ----------------------------------------------------------------
 * Notation: [a, b] = ne[0] = a, ne[1] = b (b rows of a elements). f32 =
 * ST_DTYPE_F32, i32 = ST_DTYPE_I32, "any" = F32, F16, BF16, Q8_0, Q4_0,
 * Q4_K, Q5_K, Q6_K, IQ3_S, IQ3_XXS or IQ4_XS. n = rows in the step. */

/* out[r, :] = table[ids[r], :], dequantized to f32.
 * out: f32 [E, n]; table: any [E, V] (token_embd; or an f32 activation
 * buffer, which makes this a row gather); ids: i32 [n], 0 <= id < V. */
enum st_status st_backend_embed(struct st_backend *be, const struct st_tensor *out,
                                const struct st_tensor *table, const struct st_tensor *ids,
                                struct st_err *err);

/* RMSNorm with gain, over groups of G = ne0(w) consecutive elements:
 * out = x / sqrt(mean(x^2 over the group) + eps) * w. With G = E this is
 * the per-row norm; with G = head_dim on x [H*D, n] it is Qwen3's
 * per-head Q/K norm (one gain vector shared by all heads). The mean is
 * accumulated in double, as ggml does.
 * out, x: f32 [C, n] with C a multiple of G; w: f32 [G]; eps > 0
 * (layer_norm_rms_epsilon). out may alias x. */
enum st_status st_backend_rms_norm(struct st_backend *be, const struct st_tensor *out,
                                   const struct st_tensor *x, const struct st_tensor *w,
                                   float eps, struct st_err *err);

/* y = x . W^T, batched over rows: y[r, o] = sum_i x[r, i] * W[o, i].
 * out: f32 [O, n]; x: f32 [I, n]; w: any [I, O] (O rows of I elements,
 * GGUF's ne0 = input width; a 2-D weight or one expert's slice). The
 * activations are quantized per row to the weight type's dot type
 * (docs/design/ENGINE.md 2.11: Q8_0 for Q4_0/Q8_0, Q8_K for K and IQ types, F16/BF16
 * for those) before the integer dot products, exactly as ggml's CPU path.
 * This is also the output head (w = output or token_embd, O = vocab). */
enum st_status st_backend_matmul(struct st_backend *be, const struct st_tensor *out,
                                 const struct st_tensor *x, const struct st_tensor *w,
                                 struct st_err *err);

/* Three matmuls of one x (an attention layer's wq, wk, wv): out_i = x .
 * w_i^T for i = 0, 1, 2, exactly st_backend_matmul(out0, x, w0), then
 * (out1, x, w1), then (out2, x, w2), bit for bit (the CPU backend runs
 * that). A device backend may run them as one kernel when the three
 * weights share a type. Shapes as matmul, each w_i with its own O_i; the
 * outputs may not overlap x or each other. */
enum st_status st_backend_matmul3(struct st_backend *be, const struct st_tensor *out0,
                                  const struct st_tensor *out1, const struct st_tensor *out2,
                                  const struct st_tensor *x, const struct st_tensor *w0,
                                  const struct st_tensor *w1, const struct st_tensor *w2,
                                  struct st_err *err);

/* out = a + b, element-wise (the residual), or a bias added to every row.
 * out, a: f32 [C, n]; b: f32 [C, n] (element-wise), or f32 [C, 1] (one
 * row, added to each of the n rows of a: glm4moe's q/k/v biases). out
 * may alias a (or b when the shapes are equal). */
enum st_status st_backend_add(struct st_backend *be, const struct st_tensor *out,
                              const struct st_tensor *a, const struct st_tensor *b,
                              struct st_err *err);

/* out = SiLU(gate) * up, element-wise (SwiGLU), SiLU(g) = g / (1 + e^-g).
 * All f32 [F, n]; out may alias gate or up. */
enum st_status st_backend_silu_mul(struct st_backend *be, const struct st_tensor *out,
                                   const struct st_tensor *gate, const struct st_tensor *up,
                                   struct st_err *err);

/* NEOX rotary embedding, per row at its own position. For each head of
 * head_dim D and i < n_rot/2 (n_rot = rope->n_rot), the pair (i, i +
 * n_rot/2) is rotated by theta = pos[r] * st_rope_inv_freq(rope, i) with
 * cos and sin times st_rope_mscale(rope) (strata/rope.h: no scaling,
 * linear, YaRN); dims >= n_rot pass through. out, x: f32 [H*D, n] (q or
 * k, after the per-head norm); pos: i32 [n], >= 0; n_rot even, <= D;
 * freq_base > 0 (Qwen3: 1e6); freq_scale > 0, 1 without context scaling;
 * ext_factor >= 0; attn_factor > 0. out may alias x. rope is read during
 * the call only. */
enum st_status st_backend_rope(struct st_backend *be, const struct st_tensor *out,
                               const struct st_tensor *x, const struct st_tensor *pos,
                               int32_t head_dim, const struct st_rope_params *rope,
                               struct st_err *err);

/* Causal GQA attention over a per-slot F16 KV cache, batched across slots
 * at different positions. Row r belongs to slot s = slot[r] at position
 * p = pos[r]. First every row's k and v are written (converted to F16)
 * into kcache/vcache at [slot s, position p]; then row r attends over that
 * slot's positions 0..p inclusive (so rows of one slot's read chunk see
 * each other causally):
 *   out[r, h] = sum_t softmax_t(scale * q[r, h] . K[s, t, g]) * V[s, t, g]
 * with g = h / (n_head / n_head_kv) (consecutive query heads share a KV
 * head) and scale = 1/sqrt(D) for Qwen3.
 * out, q: f32 [n_head*D, n]; k, v: f32 [n_head_kv*D, n];
 * kcache, vcache: F16 [n_head_kv*D, n_ctx, n_slots] (one layer; slice a
 * [.., .., .., n_layer] cache with dim 3), or Q8_0 when D is a multiple
 * of 32 (CPU only: cuda answers ST_ERR_UNSUPPORTED; k and v may differ);
 * the new rows are rounded to the cache's type; slot: i32 [n], 0 <= s < n_slots;
 * pos: i32 [n], 0 <= p < n_ctx. Two rows of one step may not share
 * (slot, position). Positions above p of a slot are never read, so a
 * slot is reused by simply writing from position 0 (or from the end of a
 * reused prefix) again. */
enum st_status st_backend_attention(struct st_backend *be, const struct st_tensor *out,
                                    const struct st_tensor *q, const struct st_tensor *k,
                                    const struct st_tensor *v, const struct st_tensor *kcache,
                                    const struct st_tensor *vcache, const struct st_tensor *slot,
                                    const struct st_tensor *pos, int32_t n_head,
                                    int32_t n_head_kv, float scale, struct st_err *err);

/* Residual add and RMSNorm in one op (the seam between two sub-blocks):
 *   x = x + o;  h = rmsnorm(x) * w   (groups of G = ne0(w), as rms_norm)
 * exactly st_backend_add(x, x, o) followed by st_backend_rms_norm(h, x, w,
 * eps) (the CPU backend runs that composition, bit for bit); a device
 * backend runs one kernel. x, o, h: f32 [E, n], E a multiple of G; w: f32
 * [G]; eps > 0. x is updated in place; h may alias o (not x). */
enum st_status st_backend_add_rms_norm(struct st_backend *be, const struct st_tensor *h,
                                       const struct st_tensor *x, const struct st_tensor *o,
                                       const struct st_tensor *w, float eps,
                                       struct st_err *err);

/* Per-head RMSNorm then NEOX rope (Qwen3's q_norm/k_norm before rope), in
 * one op: exactly st_backend_rms_norm(out, x, w, eps) followed by
 * st_backend_rope(out, out, pos, D, rope) with head_dim D = ne0(w).
 * out, x: f32 [H*D, n]; w: f32 [D]; pos: i32 [n]; the other arguments as
 * rope and rms_norm. out may alias x. */
enum st_status st_backend_rms_norm_rope(struct st_backend *be, const struct st_tensor *out,
                                        const struct st_tensor *x, const struct st_tensor *w,
                                        const struct st_tensor *pos,
                                        const struct st_rope_params *rope, float eps,
                                        struct st_err *err);

/* How moe_route turns router logits into expert weights. */
enum st_moe_gating {
    ST_MOE_GATING_SOFTMAX = 1,   /* p = softmax over all X (qwen3moe, Mixtral) */
    ST_MOE_GATING_SIGMOID = 2,   /* p = sigmoid(logit) per expert (glm4moe) */
};

struct st_moe_route_params {
    enum st_moe_gating      gating;
    const struct st_tensor *bias;   /* f32 [X] selection bias (glm4moe's exp_probs_b,
                                     * e_score_correction_bias) or NULL: added to p
                                     * for choosing the k experts only */
    bool                    norm;   /* renormalize the k weights to sum 1 */
    float                   scale;  /* weights times this (routed_scaling_factor); 1 = none */
};

/* MoE routing (docs/design/ENGINE.md 3.3 step 8): logits = router . x, p = gating of
 * the logits (rp->gating), sel = the k experts of highest p + bias (ties
 * to the lower index; bias NULL = 0), w = p[sel] (the unbiased values),
 * then w /= max(sum w, 6.1035e-5) when rp->norm, then w *= rp->scale
 * (skipped when scale == 1, so qwen3moe's softmax + norm is bit for bit
 * what it was). rp is read during the call only; the bias tensor's
 * contents are read when the op runs.
 * sel: i32 [k, n] (expert ids, in descending p + bias); weights: f32
 * [k, n]; x: f32 [E, n] (after ffn_norm); router: any [E, X] (F32 in
 * files); rp->bias: f32 [X]; rp->scale finite and > 0. */
enum st_status st_backend_moe_route(struct st_backend *be, const struct st_tensor *sel,
                                    const struct st_tensor *weights,
                                    const struct st_tensor *x, const struct st_tensor *router,
                                    const struct st_moe_route_params *rp, struct st_err *err);

/* Expert FFN: out[r] = sum_j weights[r, j] * down_e(SiLU(gate_e x[r]) *
 * up_e x[r]) with e = sel[r, j]. Rows are grouped by expert so each expert
 * slab is streamed once per step for all the rows that chose it.
 * out, x: f32 [E, n]; sel: i32 [k, n], 0 <= e < X; weights: f32 [k, n];
 * gate, up: any [E, F, X] (X stacked experts of F rows); down: any
 * [F, E, X]. out may not alias x. */
enum st_status st_backend_moe_ffn(struct st_backend *be, const struct st_tensor *out,
                                  const struct st_tensor *x, const struct st_tensor *sel,
                                  const struct st_tensor *weights,
                                  const struct st_tensor *gate, const struct st_tensor *up,
                                  const struct st_tensor *down, struct st_err *err);

/* ---- optional ops --------------------------------------------------------
 * A backend may leave these out; the calls below then do the documented
 * fallback, so the layer program can use them unconditionally. */

/* Decode steps as device graphs (CUDA graphs; a no-op elsewhere). Bracket
 * every op of a step:
 *
 *   st_backend_write(...)                       inputs (ids, pos, slots) first
 *   rc = st_backend_graph_begin(be, key, &replayed, err);
 *   if (!replayed) { ...the step's ops...; rc = st_backend_graph_end(be, err); }
 *   st_backend_read(...) or st_backend_sample(...)
 *
 * 'key' (!= 0) names the step's shape: whenever two steps share a key,
 * every op must get the same tensors (same data pointers and row counts)
 * and the same scalar arguments; only the contents of tensors may differ
 * (positions, slots, ids are read on the device). A backend may run the
 * first steps of a key eagerly and capture a later one. *replayed = true
 * means the whole step was enqueued by the call: do not issue its ops.
 * Without graph support: *replayed = false and graph_end does nothing.
 * If an op fails between begin and end, just return the error: the next
 * begin/write/read/sync discards the partial capture. */
enum st_status st_backend_graph_begin(struct st_backend *be, uint64_t key, bool *replayed,
                                      struct st_err *err);
enum st_status st_backend_graph_end(struct st_backend *be, struct st_err *err);

/* Draw one token per row on the device, so a step reads back n ids
 * instead of n rows of logits. Row r is drawn by the struct st_draw record
 * r of 'draws' (i32 [ST_DRAW_WORDS, n], written with st_backend_write):
 * top-k, top-p, min-p, temperature and the draw of include/strata/draw.h,
 * whose st_draw_row is the reference every backend matches. ids: i32 [n];
 * logits: f32 [V, n]. Penalties, logit_bias, masks and logprobs need the
 * logits on the host (st_backend_read). Every built-in backend implements
 * it. */
enum st_status st_backend_sample(struct st_backend *be, const struct st_tensor *ids,
                                 const struct st_tensor *logits, const struct st_tensor *draws,
                                 struct st_err *err);

/* Score rows of logits on the device, so a step that scores a prompt
 * (prompt logprobs, docs/API.md "Scoring prompts") reads back (1 + K) * 2
 * numbers per row instead of a row of vocabulary logits.
 * logits: f32 [V, n]; next: i32 [n], the token row r scores (-1: none,
 * only the top list); vals: f32 [1 + K, n]; ids: i32 [1 + K, n] with
 * 0 <= K <= ST_SCORE_MAX_TOP and K <= V. Row r of the outputs:
 *   vals[0] = logits[next] - logZ, ids[0] = 1 + the tokens whose logit is
 *   strictly higher (next = -1: vals[0] = 0, ids[0] = 0);
 *   ids[1..K] = the K best ids, most likely first, ties to the lower id,
 *   vals[1..K] their logits - logZ;
 * logZ = log(sum_i exp(l_i - max)) + max in a float exp (relative error
 * < 1e-7 per term, sums of float blocks in double). NaN logits: exp counts
 * them as 0 (like -inf); in the order they rank below every number, -inf
 * included (strata/draw.h st_draw_before), so a NaN 'next' has rank 1 +
 * the non-NaN tokens and a NaN logprob. st_score_row is the reference
 * every backend matches (logprobs to ~1e-6, ranks and ids exactly).
 * Every built-in backend implements it. */
#define ST_SCORE_MAX_TOP 20
enum st_status st_backend_score(struct st_backend *be, const struct st_tensor *vals,
                                const struct st_tensor *ids, const struct st_tensor *logits,
                                const struct st_tensor *next, struct st_err *err);

/* Counters of what a backend has run, for benchmarks and debug logs
 * (launches per decode step). Monotonic from open; read any time. */
struct st_backend_stats {
    uint64_t ops;            /* op calls (st_backend_<op>), replayed graphs included */
    uint64_t kernels;        /* device kernel launches, replayed graphs included (0 on cpu) */
    uint64_t quant_skipped;  /* q8_1 quantize launches saved by reuse or a norm epilogue */
    uint64_t graph_replays;  /* steps replayed from a captured graph */
};
void st_backend_stats(const struct st_backend *be, struct st_backend_stats *out);

/* The same for one row on the host (the CPU backend's SIMD; any thread):
 * logits[n_vocab], next in [-1, n_vocab), 0 <= k <= min(20, n_vocab);
 * vals[1 + k], ids[1 + k] as one row of st_backend_score. */
void st_score_row(const float *logits, int64_t n_vocab, int32_t next, int32_t k, float *vals,
                  int32_t *ids);

#endif /* STRATA_BACKEND_H */
