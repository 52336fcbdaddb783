/* kernels.h -- C entry points of the CUDA kernels (the .cu files of kernels/).
 *
 * Every launcher enqueues on 'stream', never synchronises, never
 * allocates, and returns cudaGetLastError() from its launch (or
 * cudaErrorInvalidValue for arguments it cannot run). Pointers are device
 * pointers unless a comment says otherwise. Plain C types only: this header
 * is compiled by cc (the C files of src/backend/cuda) and by nvcc.
 *
 * Shapes use the backend notation: [a, b] = b rows of a contiguous
 * elements. Weight types are the st_dtype ids (GGUF ggml_type ids).
 *
 * Per-row integers (token ids, slots, positions, expert ids) live on the
 * device, so the kernels that read them check their range themselves: an
 * out-of-range value is clamped (no out-of-bounds access) and a ST_KF_* bit
 * is OR-ed into *err_flag (a device word, may be NULL). The backend reads
 * the word back at its next sync and reports ST_ERR_INVALID.
 */
#ifndef STRATA_KERNELS_H
#define STRATA_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "strata/dtype.h"   /* a C header: C linkage for its functions in C++ too */
#include "strata/rope.h"    /* struct st_rope_params (its inline helpers are host-only) */

/* Bits of the device error word. */
#define ST_KF_BAD_ID 1u      /* embed: id outside [0, rows of the table); score: next */
#define ST_KF_BAD_SLOT 2u    /* attention: slot outside [0, n_slots) */
#define ST_KF_BAD_POS 4u     /* attention/rope: position outside [0, n_ctx) */
#define ST_KF_BAD_EXPERT 8u  /* moe: expert id outside [0, n_expert) */

/* ---- activations --------------------------------------------------------- */

/* Bytes of one q8_1 activation row of n elements (n a multiple of 32): n
 * int8 quants, then n/32 float2 (d, s), padded to 16 bytes. */
static inline size_t st_kern_q8_1_row_bytes(int64_t n)
{
    size_t b = (size_t)n + 8 * (size_t)(n / 32);
    return (b + 15) / 16 * 16;
}

/* dst row r (stride dst_stride bytes) = q8_1 of x[r, :] for r < n_rows;
 * x: f32 [n, n_rows], n a multiple of 32. d = amax/127, q = round(x/d),
 * s = sum of the 32 floats. */
cudaError_t st_kern_quantize_q8_1(void *dst, size_t dst_stride, const float *x, int64_t n,
                                  int64_t n_rows, cudaStream_t stream);

/* dst[i] = fp16(x[i]) for i < n (round to nearest; beyond +-65504 saturates
 * to +-65504 instead of inf; NaN stays NaN). */
cudaError_t st_kern_f32_to_f16(uint16_t *dst, const float *x, int64_t n, cudaStream_t stream);

/* ---- matrix-vector products (mmvq.cu) -------------------------------------
 * y[p, o] = sum_i x[p, i] * W[o, i] for the rows p of each group. Weights
 * of any type st_kern_mmv_supported accepts; quantized types take x as q8_1
 * rows (st_kern_quantize_q8_1), float types (F32, F16, BF16) as f32 rows.
 *
 * Dense mode (groups == NULL): one group, rows 0..n_rows-1, weight w.
 * Grouped mode (MoE): groups[0] = number of groups G' <= max_groups;
 * groups[1 + g] = expert of group g; groups[1 + max_groups + g] = first row
 * of group g and groups[2 + max_groups + g] = one past its last (rows are
 * "sorted pairs", st_kern_moe_group). The weight of group g is the slab
 * (const char *)w + expert * w_slab_bytes. Activation row of output row p:
 * x_rows[p] when x_rows != NULL, else p.
 *
 * With w2 != NULL (same type and shape as w, gate and up of SwiGLU) the
 * kernel computes both products and stores SiLU(x.w) * (x.w2). */
#define ST_KERN_MMV_PARTS 3   /* matrices one multi-mode launch takes (wq, wk, wv) */

struct st_kern_mmv_args {
    int            type;          /* st_dtype of w (and w2) */
    const void    *w;             /* [n_in, n_out] (x max_groups slabs when grouped) */
    const void    *w2;            /* NULL, or the "up" weight for the fused SwiGLU */
    size_t         w_row_bytes;   /* st_dtype_row_bytes(type, n_in) */
    size_t         w_slab_bytes;  /* bytes between experts (grouped mode) */
    int64_t        n_in, n_out;
    const void    *x;             /* activation rows */
    size_t         x_stride;      /* bytes between activation rows */
    float         *y;             /* output rows */
    int64_t        y_stride;      /* floats between output rows */
    int64_t        n_rows;        /* dense mode: rows; grouped mode: a bound on a group's rows
                                   * that sizes the kernel's row chunk (0 = none; any bound
                                   * gives the same results) */
    const int32_t *groups;        /* grouped mode: see above; NULL = dense */
    int32_t        max_groups;
    const int32_t *x_rows;        /* grouped mode: activation row per output row, or NULL */
    /* multi mode (dense only): n_parts - 1 more weights of the same type and
     * n_in, dotted with the same x in the same launch, each into its own y:
     * part i >= 1 is (part_w[i-1], part_n_out[i-1], part_y[i-1],
     * part_y_stride[i-1]). Each part's outputs are those of a launch of that
     * part alone, bit for bit. 0 or 1 = a single matrix. */
    int32_t        n_parts;
    const void    *part_w[ST_KERN_MMV_PARTS - 1];
    int64_t        part_n_out[ST_KERN_MMV_PARTS - 1];
    float         *part_y[ST_KERN_MMV_PARTS - 1];
    int64_t        part_y_stride[ST_KERN_MMV_PARTS - 1];
};

/* True when the matmul kernels have this weight type and row width. */
bool st_kern_mmv_supported(int type, int64_t n_in);
/* True when 'type' takes q8_1 activations (false: f32 activations). */
bool st_kern_mmv_quantized(int type);
cudaError_t st_kern_mmv(const struct st_kern_mmv_args *a, cudaStream_t stream);

/* ---- dequantization (dequant.cu) ----------------------------------------- */

/* out[r, :] = dequant(table row ids[r]) for r < n_rows; table: 'type'
 * [n_cols, n_table] with rows of row_bytes; out f32 [n_cols, n_rows];
 * n_cols a multiple of 32. */
cudaError_t st_kern_embed(float *out, const void *table, int type, size_t row_bytes,
                          int64_t n_table, const int32_t *ids, int64_t n_rows, int64_t n_cols,
                          unsigned *err_flag, cudaStream_t stream);

/* out = fp16 of n_rows rows of w (row_bytes each, n_cols elements, a
 * multiple of 32): the weight side of the cuBLAS path. */
cudaError_t st_kern_dequant_f16(uint16_t *out, const void *w, int type, size_t row_bytes,
                                int64_t n_rows, int64_t n_cols, cudaStream_t stream);

/* True when dequant/embed support 'type' (every weight type). */
bool st_kern_dequant_supported(int type);

/* ---- element-wise and per-row (norm.cu, rope.cu) ------------------------- */

/* out = x / sqrt(mean(x^2 over each group of g) + eps) * w[0..g), over
 * n_groups consecutive groups; out may alias x. */
cudaError_t st_kern_rms_norm(float *out, const float *x, const float *w, int64_t n_groups,
                             int64_t g, float eps, cudaStream_t stream);
/* st_kern_rms_norm with two optional fusions (one launch):
 *   add != NULL: first x += add (stored), then the norm of the sum; the
 *     result is bit for bit st_kern_add(x, x, add) then st_kern_rms_norm.
 *     out may alias add, not x.
 *   q != NULL (g % 32 == 0): group r's output also goes to q + r*q_stride
 *     as a q8_1 row, the bytes st_kern_quantize_q8_1 would write from out.
 * Without add, x is only read (out may alias it). */
cudaError_t st_kern_rms_norm_ex(float *out, float *x, const float *add, const float *w,
                                int64_t n_groups, int64_t g, float eps, void *q,
                                size_t q_stride, cudaStream_t stream);
cudaError_t st_kern_add(float *out, const float *a, const float *b, int64_t n,
                        cudaStream_t stream);
/* out[r, i] = a[r, i] + b[i]: one row b of 'width' floats added to each of
 * the n_rows rows of a (a bias). out may alias a. */
cudaError_t st_kern_add_row(float *out, const float *a, const float *b, int64_t width,
                            int64_t n_rows, cudaStream_t stream);
/* out = SiLU(gate) * up */
cudaError_t st_kern_silu_mul(float *out, const float *gate, const float *up, int64_t n,
                             cudaStream_t stream);

/* NEOX rope over x f32 [width, n_rows] (heads of head_dim), rows at pos[r],
 * with the frequencies and cos/sin multiplier of *rope (none, linear,
 * YaRN: strata/rope.h; read at launch, passed by value); out may alias x. */
cudaError_t st_kern_rope_neox(float *out, const float *x, const int32_t *pos, int64_t n_rows,
                              int64_t width, int head_dim, const struct st_rope_params *rope,
                              unsigned *err_flag, cudaStream_t stream);

/* Per-head RMSNorm (gain w[head_dim]) then NEOX rope, one kernel: the
 * values of st_kern_rms_norm(out, x, w, n_rows*heads, head_dim) then
 * st_kern_rope_neox(out, out, ...) (same arithmetic, same order).
 * head_dim <= 256; out may alias x. */
cudaError_t st_kern_rms_norm_rope(float *out, const float *x, const float *w,
                                  const int32_t *pos, int64_t n_rows, int64_t width,
                                  int head_dim, const struct st_rope_params *rope, float eps,
                                  unsigned *err_flag, cudaStream_t stream);

/* ---- attention (attention.cu, attention_tc.cu) ----------------------------
 * Writes k, v (f32 [n_kv*D, n_rows]) into kc/vc ([n_kv*D, n_ctx, n_slots]
 * of f16, or of GGML Q8_0 blocks where kq8 / vq8 is set: kv_q8.cuh) at
 * (slot[r], pos[r]), then for each row and
 * query head h attends over positions 0..pos[r] of its slot with KV head
 * h / (n_head / n_kv). Two algorithms (docs/CUDA.md "Attention"):
 * - split (tiled == 0): each row's range 0..pos[r] is cut on the device into
 *   n_split chunks of at least split_min positions; each (row, KV head,
 *   chunk) is one block with an online softmax, and a second kernel merges
 *   the chunks by log-sum-exp. 'part' is scratch of
 *   st_kern_attn_scratch_bytes(). A row of at most short_max positions
 *   (0: none; decided on the device) takes the short path instead: the
 *   row's blocks split its query heads, not its positions, and write the
 *   output themselves (no merge).
 * - tiled (tiled != 0, st_kern_attn_tiled_supported): blocks of query rows
 *   x the query heads of one KV head stream the slot's K/V in tiles through
 *   shared memory, products on tensor cores (mma.sync m16n8k16, f16 inputs,
 *   q and p as two f16 parts each, f32 accumulation). No scratch, no q8
 *   epilogue.
 * The launch shapes depend only on n_rows, n_ctx and n_split, never on the
 * positions (read on the device), so a captured CUDA graph stays valid. */
struct st_kern_attn {
    float         *out;          /* f32 [n_head*D, n_rows] */
    const float   *q, *k, *v;
    uint16_t      *kc, *vc;
    const int32_t *slot, *pos;
    int64_t        n_rows, n_ctx, n_slots;
    int32_t        n_head, n_kv, head_dim;
    float          scale;
    int32_t        n_split, split_min;
    int32_t        short_max;    /* split: rows of <= short_max positions take the short
                                  * path (a block per query head); 0 = never; f16 caches only */
    int32_t        tiled;
    int32_t        kq8, vq8;     /* 1: kc / vc hold Q8_0 blocks (17 uint16 each; head_dim
                                  * 32, 64, 128 or 256: st_kern_attn_q8_supported) */
    float         *part;
    unsigned      *err_flag;
    void          *q8;           /* NULL, or q8_1 rows of out (head_dim % 32 == 0): the
                                  * merge writes them too (st_kern_quantize_q8_1's bytes) */
    size_t         q8_stride;    /* bytes between those rows */
};

size_t st_kern_attn_scratch_bytes(int64_t n_rows, int32_t n_head, int32_t head_dim,
                                  int32_t n_split);
/* head_dim <= 256 and query heads per KV head within the kernel's limits. */
bool st_kern_attn_supported(int32_t head_dim, int32_t group);
/* A Q8_0 K or V cache: head_dim / 32 blocks a head, a power of two (32, 64,
 * 128 or 256), so head rows start on aligned words (kv_q8.cuh). */
bool st_kern_attn_q8_supported(int32_t head_dim);
/* The tiled kernel takes this shape (head_dim a multiple of 16, <= 256;
 * group <= 16) on a device of compute capability cc_major.x (>= 8: the
 * kernel is built for sm_80 and newer; tests/cuemu runs it with the matrix
 * products in software). */
bool st_kern_attn_tiled_supported(int32_t head_dim, int32_t group, int cc_major);
cudaError_t st_kern_attention(const struct st_kern_attn *a, cudaStream_t stream);

/* ---- recurrent layers (ssm.cu): strata/backend_ssm.h --------------------
 * Rows are taken in order; slot[r] outside [0, n_slots) is clamped and
 * flagged ST_KF_BAD_SLOT; pos[r] == 0 clears the slot's state first. */

/* out, x: f32 [C, n]; w: f32 [K, C]; state: f32 [C, K-1, n_slots]:
 * st_backend_ssm_conv (out may not alias x). */
cudaError_t st_kern_ssm_conv(float *out, float *state, const float *x, const float *w,
                             const int32_t *slot, const int32_t *pos, int64_t C, int K,
                             int64_t n, int64_t n_slots, unsigned *err_flag,
                             cudaStream_t stream);

/* st_backend_delta_net: qkv f32 [(2*Hk + Hv)*D, n]; alpha, beta f32 [Hv, n];
 * dt_bias, a f32 [Hv]; state f32 [D, D, Hv, n_slots]; out f32 [Hv*D, n].
 * head_dim <= 256. Runs of >= 32 rows of one slot (prompt reads) take the
 * chunked form at head_dim <= 128 unless 'recurrent' is set (a baseline). */
struct st_kern_delta_net {
    float         *out, *state;
    const float   *qkv, *alpha, *beta, *dt_bias, *a;
    const int32_t *slot, *pos;
    int64_t        n, n_slots;
    int32_t        n_k_heads, n_v_heads, head_dim;
    float          eps;
    unsigned      *err_flag;
    int32_t        recurrent;   /* 1: row by row even for long runs */
    int32_t        v_grouped;   /* v head h reads q/k head h / (Hv/Hk), else h mod Hk */
};
cudaError_t st_kern_delta_net(const struct st_kern_delta_net *a, cudaStream_t stream);

/* out[r, c] = x[r, c] * sigmoid(g[r, c mod cg]) for x, out f32 [C, n_rows],
 * g f32 [cg, n_rows], cg = C or 1; out may alias x. */
cudaError_t st_kern_sigmoid_mul(float *out, const float *x, const float *g, int64_t C,
                                int64_t cg, int64_t n_rows, cudaStream_t stream);

/* ---- mixture of experts (moe.cu) ------------------------------------------ */

/* Per row r of logits f32 [n_exp, n_rows]: p = softmax (sigmoid = false)
 * or per-expert sigmoid (sigmoid = true); top-k of p + bias (bias f32
 * [n_exp] or NULL; ties to the lower index, descending p + bias); weights
 * = the chosen p, renormalized (sum clamped to >= 6.1035e-5) when norm,
 * times scale when scale != 1 (backend.h st_backend_moe_route).
 * sel i32 [k, n_rows], wts f32 [k, n_rows]. n_exp <= 1024, k <= 32. */
cudaError_t st_kern_moe_route(int32_t *sel, float *wts, const float *logits, int64_t n_rows,
                              int32_t n_exp, int32_t k, bool sigmoid, const float *bias,
                              bool norm, float scale, cudaStream_t stream);

/* Group the n_rows*k (row, choice) pairs by expert (one block, counting
 * sort, stable). groups: the layout of struct st_kern_mmv_args with max_groups
 * = min(n_exp, n_rows*k); pair_row[p] = activation row of sorted pair p;
 * pair_of[r*k + j] = the sorted index of (r, j). */
cudaError_t st_kern_moe_group(int32_t *groups, int32_t *pair_row, int32_t *pair_of,
                              const int32_t *sel, int64_t n_rows, int32_t k, int32_t n_exp,
                              int32_t max_groups, unsigned *err_flag, cudaStream_t stream);

/* st_kern_moe_route then st_kern_moe_group of its sel, in one launch (one
 * block): a decode step's routing, n_rows <= 32, n_exp <= 256 (else
 * cudaErrorInvalidValue: ST_KERN_MOE_RG_MAX_EXP). The same sel, wts and
 * groups (within a group the order of pairs may differ, as between two
 * runs of st_kern_moe_group). */
#define ST_KERN_MOE_RG_MAX_EXP 256
struct st_kern_moe_route_group {
    int32_t     *sel;
    float       *wts;
    const float *logits;
    int64_t      n_rows;
    int32_t      n_exp, k;
    bool         sigmoid, norm;
    const float *bias;
    float        scale;
    int32_t     *groups, *pair_row, *pair_of;
    int32_t      max_groups;
    unsigned    *err_flag;
};
cudaError_t st_kern_moe_route_group(const struct st_kern_moe_route_group *a,
                                    cudaStream_t stream);

/* out[r, :] = sum_j wts[r, j] * yd[pair_of[r*k + j], :]; yd f32 [n_embd, pairs]. */
cudaError_t st_kern_moe_combine(float *out, const float *yd, const float *wts,
                                const int32_t *pair_of, int64_t n_rows, int32_t k,
                                int64_t n_embd, cudaStream_t stream);

/* ---- sampling (sample.cu) --------------------------------------------------
 * ids[r] for logits f32 [n_vocab, n_rows], drawn by draws[r] (struct
 * st_draw): the chain of include/strata/draw.h, st_draw_row's result. */
cudaError_t st_kern_sample(int32_t *ids, const float *logits, int64_t n_rows, int64_t n_vocab,
                           const void *draws, cudaStream_t stream);

/* ---- scoring (score.cu) ---------------------------------------------------
 * backend.h st_backend_score on logits f32 [n_vocab, n_rows]: row r of
 * vals f32 / ids i32 [1 + k, n_rows] = (logprob, rank) of next[r], then
 * the k best (logprob, id); 0 <= k <= 20 (ST_SCORE_MAX_TOP), k <= n_vocab.
 * next[r] outside [-1, n_vocab): scored as -1, ST_KF_BAD_ID raised. */
cudaError_t st_kern_score(float *vals, int32_t *ids, const float *logits, const int32_t *next,
                          int64_t n_rows, int64_t n_vocab, int32_t k, unsigned *err_flag,
                          cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_KERNELS_H */
