/* backend_ssm.h -- the optional ops of hybrid models' recurrent layers
 * (qwen35moe's Gated DeltaNet; docs/ENGINE.md "qwen35moe"), in the
 * notation of backend.h: f32 everywhere, [a, b] = ne0 a, b rows, n = rows
 * of the step, S = slots.
 *
 * Recurrent state. Each op keeps a per-slot state that stands for
 * everything the slot has read. Rows are taken in row order; the rows of
 * one slot in a step have consecutive positions (several slots may be
 * mixed in one step); a row at position 0 first clears its slot's state
 * (a fresh sequence). The state cannot be cut back to an earlier
 * position: a caller continues a slot exactly where it stopped, or starts
 * it again at 0.
 *
 * A backend may leave these out (the CPU and CUDA backends have them): the
 * calls then answer ST_ERR_UNSUPPORTED naming the op and the backend.
 */
#ifndef STRATA_BACKEND_SSM_H
#define STRATA_BACKEND_SSM_H

#include "strata/backend.h"

/* True when the backend has all three ops below (a model with recurrent
 * layers checks it at load). */
bool st_backend_has_ssm(const struct st_backend *be);

/* The short causal depthwise conv1d with per-slot state, then SiLU.
 * out, x: f32 [C, n]; w: f32 [K, C] (GGUF ssm_conv1d: K taps per channel,
 * K >= 2); state: f32 [C, K-1, S] (per slot the K-1 previous inputs, oldest
 * first; one layer's slice of a bigger tensor); slot, pos: i32 [n].
 * For row r of slot s: window = the slot's K-1 stored inputs, then x[r];
 * out[r, c] = SiLU(sum_j w[c, j] * window[j][c]); the state then drops
 * its oldest input and keeps x[r]. out may not alias x. */
enum st_status st_backend_ssm_conv(struct st_backend *be, const struct st_tensor *out,
                                   const struct st_tensor *x, const struct st_tensor *w,
                                   const struct st_tensor *state, const struct st_tensor *slot,
                                   const struct st_tensor *pos, struct st_err *err);

struct st_delta_net_params {
    int32_t n_k_heads;   /* Hk: q and k heads */
    int32_t n_v_heads;   /* Hv: v heads, a multiple of Hk */
    int32_t head_dim;    /* D: the width of every q, k and v head */
    float   eps;         /* the l2 norm's floor (layer_norm_rms_epsilon) */
    bool    v_grouped;   /* v head h reads q/k head h / (Hv/Hk) (qwen3next), not h mod Hk */
};

/* The gated delta rule (Gated DeltaNet), per row in order, with a D x D
 * matrix of state per slot and v head. qkv: f32 [2*Hk*D + Hv*D, n] (q
 * heads, k heads, v heads: the conv's output); alpha, beta: f32 [Hv, n]
 * (raw projections); dt_bias, a: f32 [Hv] (a = -exp(A_log) < 0); state:
 * f32 [D, D, Hv, S] (element (i, j, h, s): row j, column i of slot s's
 * matrix M for head h; one layer's slice); out: f32 [Hv*D, n].
 * For v head h (its q/k head is g = h mod Hk, ggml's tiling; with
 * p->v_grouped, g = h / (Hv/Hk), Qwen3-Next's v heads grouped by k head):
 *   q = q_g / max(|q_g|, eps), k = k_g / max(|k_g|, eps)
 *   M *= exp(softplus(alpha[h] + dt_bias[h]) * a[h])   softplus(x > 20) = x
 *   d[j] = (v_h[j] - sum_i M[j][i] k[i]) * sigmoid(beta[h])
 *   M[j][i] += k[i] d[j]
 *   out[h*D + j] = sum_i M[j][i] q[i] / sqrt(D)
 * (llama.cpp's ggml_gated_delta_net). out may not alias qkv. */
enum st_status st_backend_delta_net(struct st_backend *be, const struct st_tensor *out,
                                    const struct st_tensor *qkv, const struct st_tensor *alpha,
                                    const struct st_tensor *beta, const struct st_tensor *dt_bias,
                                    const struct st_tensor *a, const struct st_tensor *state,
                                    const struct st_tensor *slot, const struct st_tensor *pos,
                                    const struct st_delta_net_params *p, struct st_err *err);

/* out[r, c] = x[r, c] * sigmoid(g[r, c mod Cg]): x, out f32 [C, n]; g f32
 * [Cg, n] with Cg = C (gated attention's output gate) or 1 (the shared
 * expert's gate, one per row). out may alias x. */
enum st_status st_backend_sigmoid_mul(struct st_backend *be, const struct st_tensor *out,
                                      const struct st_tensor *x, const struct st_tensor *g,
                                      struct st_err *err);

#endif /* STRATA_BACKEND_SSM_H */
