/* forward.c -- the layer program, written once against the op table
 * (backend.h) for qwen3moe, qwen3, llama and glm4moe (docs/design/ENGINE.md 3.3).
 *
 * Per chunk of n rows (every slot's rows of the step together):
 *
 *   x = token_embd[ids]                                   [E, n]
 *   per layer:
 *     h = rmsnorm(x) * attn_norm                          (layer 0; later: below)
 *     q, k, v = h Wq^T, h Wk^T, h Wv^T                     [H*D | Hkv*D, n]
 *               (+ bq, bk, bv: glm4moe, one row added to every row)
 *     q, k = per-head rmsnorm * q_norm / k_norm           (qwen3*, before rope;
 *            then NEOX rope at each row's position         one fused op)
 *            (llama: rope only, rows pre-permuted)
 *     att = causal GQA attention over the slot's KV cache (writes k, v first)
 *     x += att Wo^T;  h = rmsnorm(x) * ffn_norm           (one fused op)
 *     o = MoE(h)  (softmax -> top-k -> renormalize; SwiGLU experts;
 *                  glm4moe: sigmoid -> top-k of p + bias -> renormalize
 *                  -> x routed_scaling_factor, plus the shared expert)
 *       or dense SwiGLU FFN (every layer of a dense model, glm4moe's
 *       leading dense layers)
 *     x += o;  h = rmsnorm(x) * next layer's attn_norm    (fused; last layer: add)
 *   the rows that want logits are gathered into hout
 *
 * and once per forward, over the gathered rows only:
 *   hout = rmsnorm(hout) * output_norm          (in place: st_model_hidden reads it)
 *   logits = hout . output^T (token_embd when tied)
 *
 * One op call covers every row of the chunk, so a device backend gets one
 * launch per op per layer, and each weight is streamed once per chunk.
 * Decode-shaped steps (<= ST_FWD_GRAPH_ROWS rows) bracket their ops with
 * st_backend_graph_begin/end so a device backend replays them as one graph.
 */
#include <math.h>
#include <string.h>

#include "forward_internal.h"

struct st_tensor st_fwd_column(const struct st_tensor *t, int64_t start, int64_t n)
{
    struct st_tensor v = st_tensor_slice(t, 1, start, n);
    const int64_t ne[ST_TENSOR_DIMS] = { n, 1, 1, 1 };
    return st_tensor_reshape(&v, ne);
}

/* Rows [0, n) of an activation matrix [cols, R]. */
static struct st_tensor cut(const struct st_tensor *t, int64_t n)
{
    return st_tensor_slice(t, 1, 0, n);
}

void st_fwd_cut_rows(const struct st_fwd_act *a, int64_t n, struct st_fwd_rows *r)
{
    r->x = cut(&a->x, n);
    r->h = cut(&a->h, n);
    r->q = cut(&a->q, n);
    r->k = cut(&a->k, n);
    r->v = cut(&a->v, n);
    r->att = cut(&a->att, n);
    r->o = cut(&a->o, n);
    r->g = cut(&a->g, n);
    r->u = cut(&a->u, n);
    r->so = cut(&a->so, n);
    r->sel = cut(&a->sel, n);
    r->wts = cut(&a->wts, n);
    r->ids = st_fwd_column(&a->ids, 0, n);
    r->pos = st_fwd_column(&a->pos, 0, n);
    r->slot = st_fwd_column(&a->slot, 0, n);
    r->qgate = cut(&a->qgate, n);
    r->sgate = cut(&a->sgate, n);
    r->mix = cut(&a->mix, n);
    r->conv = cut(&a->conv, n);
    r->z = cut(&a->z, n);
    r->alpha = cut(&a->alpha, n);
    r->beta = cut(&a->beta, n);
    r->y = cut(&a->y, n);
}

/* t += bias (one row added to every row) when the layer has one. */
static enum st_status add_bias(struct st_model *m, const struct st_tensor *t,
                               const struct st_tensor *bias, struct st_err *err)
{
    return bias->data ? st_backend_add(m->be, t, t, bias, err) : ST_OK;
}

/* h = rmsnorm(x) * attn_norm (unless h_ready: the previous layer's fused
 * add+norm left it), then k and v of every row, k normed (qwen3*) and
 * roped: everything the cache needs. */
static enum st_status project_kv(struct st_model *m, const struct st_fwd_layer *w,
                                 const struct st_fwd_rows *r, bool h_ready, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    if (!h_ready)
        TRY(st_backend_rms_norm(m->be, &r->h, &r->x, &w->attn_norm, hp->rms_eps, err));
    TRY(st_backend_matmul(m->be, &r->k, &r->h, &w->wk, err));
    TRY(add_bias(m, &r->k, &w->bk, err));
    TRY(st_backend_matmul(m->be, &r->v, &r->h, &w->wv, err));
    TRY(add_bias(m, &r->v, &w->bv, err));
    return st_fwd_norm_rope(m, &r->k, &w->k_norm, r, err);
}

/* q of every row from h (left by project_kv), normed (qwen3*) and roped. */
static enum st_status project_q(struct st_model *m, const struct st_fwd_layer *w,
                                const struct st_fwd_rows *r, struct st_err *err)
{
    TRY(st_backend_matmul(m->be, &r->q, &r->h, &w->wq, err));
    TRY(add_bias(m, &r->q, &w->bq, err));
    return st_fwd_norm_rope(m, &r->q, &w->q_norm, r, err);
}

/* The FFN of h (= rmsnorm(x) * ffn_norm) into o: the routed experts (plus
 * glm4moe's shared expert, added), or the dense FFN of a layer without a
 * router (dense models, glm4moe's leading dense layers). */
static enum st_status ffn(struct st_model *m, const struct st_fwd_layer *w,
                          const struct st_fwd_rows *r, struct st_err *err)
{
    struct st_backend *be = m->be;

    if (!w->router.data)
        return st_fwd_swiglu(m, &r->o, &w->ffn_gate, &w->ffn_up, &w->ffn_down, r, err);
    TRY(st_fwd_moe(m, w, r, err));
    if (!w->gate_shexp.data)
        return ST_OK;
    TRY(st_fwd_swiglu(m, &r->so, &w->gate_shexp, &w->up_shexp, &w->down_shexp, r, err));
    return st_backend_add(be, &r->o, &r->o, &r->so, err);   /* routed + shared */
}

/* project_kv then project_q with the three matmuls of h as one matmul3
 * (a device backend runs them as one kernel: docs/CUDA.md "Launches per
 * layer"): the same ops otherwise, and the same values. */
static enum st_status project_qkv(struct st_model *m, const struct st_fwd_layer *w,
                                  const struct st_fwd_rows *r, bool h_ready, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    if (!h_ready)
        TRY(st_backend_rms_norm(m->be, &r->h, &r->x, &w->attn_norm, hp->rms_eps, err));
    TRY(st_backend_matmul3(m->be, &r->k, &r->v, &r->q, &r->h, &w->wk, &w->wv, &w->wq, err));
    TRY(add_bias(m, &r->k, &w->bk, err));
    TRY(add_bias(m, &r->v, &w->bv, err));
    TRY(st_fwd_norm_rope(m, &r->k, &w->k_norm, r, err));
    TRY(add_bias(m, &r->q, &w->bq, err));
    return st_fwd_norm_rope(m, &r->q, &w->q_norm, r, err);
}

enum st_status st_fwd_layer_block(struct st_model *m, const struct st_fwd_layer *w,
                                  const struct st_tensor *kc, const struct st_tensor *vc,
                                  const struct st_fwd_rows *r, bool h_ready,
                                  const struct st_tensor *next_norm, struct st_err *err)
{
    if (w->wq.type == w->wk.type && w->wk.type == w->wv.type) {
        TRY(project_qkv(m, w, r, h_ready, err));
    } else {
        TRY(project_kv(m, w, r, h_ready, err));
        TRY(project_q(m, w, r, err));
    }
    TRY(st_fwd_attend(m, kc, vc, r, err));
    TRY(st_backend_matmul(m->be, &r->o, &r->att, &w->wo, err));
    TRY(st_fwd_residual(m, r, &w->ffn_norm, err));    /* x += o; h = ffn_norm(x) */
    TRY(ffn(m, w, r, err));
    return st_fwd_residual(m, r, next_norm, err);
}

enum st_status st_fwd_attn_kv_only(struct st_model *m, const struct st_fwd_layer *w,
                                   const struct st_tensor *kc, const struct st_tensor *vc,
                                   const struct st_fwd_rows *r, struct st_err *err)
{
    TRY(project_kv(m, w, r, false, err));
    return st_fwd_attend(m, kc, vc, r, err);
}

/* One decoder layer of the main model: its own slice of the KV cache (a
 * qwen35moe layer: forward_hybrid.c).
 * Layer l > 0 finds h = rmsnorm(x) * attn_norm left by layer l - 1's last
 * add; the last layer only adds (the final norm runs over the gathered
 * logit rows, st_fwd_head_ops). */
static enum st_status layer(struct st_model *m, int64_t l, const struct st_fwd_rows *r,
                            struct st_err *err)
{
    const struct st_fwd_layer *w = &m->layers[l];
    const struct st_tensor *next =
        l + 1 < m->desc->hp.n_layer ? &m->layers[l + 1].attn_norm : NULL;
    if (st_arch_is_hybrid(m->desc->hp.arch))
        return st_fwd_hybrid_layer(m, w, r, l > 0, next, err);
    struct st_tensor kc = st_tensor_slice(&m->kcache, 3, w->kv_index, 1);
    struct st_tensor vc = st_tensor_slice(&m->vcache, 3, w->kv_index, 1);
    return st_fwd_layer_block(m, w, &kc, &vc, r, l > 0, next, err);
}

/* Upload rows [r0, r1) of one per-row integer column. */
static enum st_status put_i32(struct st_model *m, const struct st_tensor *t,
                              const int32_t *src32, const int64_t *src64, int64_t r0,
                              int64_t n, struct st_err *err)
{
    for (int64_t i = 0; i < n; i++)
        m->i32_host[i] = src32 ? src32[r0 + i] : (int32_t)src64[r0 + i];
    return st_backend_write(m->be, t, 0, m->i32_host, (size_t)n * sizeof(int32_t), err);
}

/* Whether chunk rows [r0, r1) of b keep their DeltaNet inputs (the whole
 * batch in one chunk of at most k->cap rows: forward_hybrid.c input_of)
 * and which slots and positions those rows are (state_reread.c). */
static void keep_rows(struct st_state_keep *k, const struct st_model_batch *b, int64_t r0,
                      int64_t r1)
{
    k->rows = k->cap > 0 && r0 == 0 && r1 == b->n_rows && r1 <= k->cap ? r1 : 0;
    for (int64_t i = 0; i < k->rows; i++) {
        k->slot[i] = b->slots[i];
        k->pos[i] = b->pos[i];
    }
}

/* Write chunk rows [r0, r1)'s inputs (ids, positions, slots) and the
 * gather indices of out_rows[o0, o1) relative to r0: every host->device
 * write of the chunk happens before its first op, so a CUDA graph of the
 * ops reads them from the same tensors at each replay (docs/CUDA.md). */
enum st_status st_fwd_chunk_inputs(struct st_model *m, const struct st_model_batch *b,
                                   int64_t r0, int64_t r1, int64_t o0, int64_t o1,
                                   const struct st_fwd_rows *r, struct st_err *err)
{
    int64_t n = r1 - r0;
    /* host side, so a replayed graph (whose head ops do not run on the
     * host) still tells st_model_hidden which hout rows are current */
    m->last_n_out = o1;
    keep_rows(&m->keep, b, r0, r1);
    TRY(put_i32(m, &r->ids, b->tokens, NULL, r0, n, err));
    TRY(put_i32(m, &r->pos, NULL, b->pos, r0, n, err));
    TRY(put_i32(m, &r->slot, b->slots, NULL, r0, n, err));
    if (o1 == o0)
        return ST_OK;
    for (int64_t j = o0; j < o1; j++)
        m->i32_host[j - o0] = (int32_t)(b->out_rows[j] - r0);
    struct st_tensor gidx = st_fwd_column(&m->act.gidx, 0, o1 - o0);
    return st_backend_write(m->be, &gidx, 0, m->i32_host, (size_t)(o1 - o0) * sizeof(int32_t),
                            err);
}

/* The ops of one chunk (inputs already written): embed, every layer, and
 * the gather of the logit rows into hout rows [o0, o1). */
enum st_status st_fwd_chunk_ops(struct st_model *m, const struct st_fwd_rows *r, int64_t o0,
                                int64_t o1, struct st_err *err)
{
    TRY(st_backend_embed(m->be, &r->x, &m->tok_embd, &r->ids, err));
    for (int64_t l = 0; l < m->desc->hp.n_layer; l++)
        TRY(layer(m, l, r, err));
    if (o1 == o0)
        return ST_OK;
    /* Gather the rows that want logits: embed over the f32 residual is a
     * row gather, so the final norm and the head only see those rows. */
    struct st_tensor gidx = st_fwd_column(&m->act.gidx, 0, o1 - o0);
    struct st_tensor hout = st_tensor_slice(&m->act.hout, 1, o0, o1 - o0);
    return st_backend_embed(m->be, &hout, &r->x, &gidx, err);
}

enum st_status st_fwd_chunk(struct st_model *m, const struct st_model_batch *b, int64_t r0,
                            int64_t r1, int64_t o0, int64_t o1, struct st_err *err)
{
    struct st_fwd_rows r;
    st_fwd_cut_rows(&m->act, r1 - r0, &r);
    TRY(st_fwd_chunk_inputs(m, b, r0, r1, o0, o1, &r, err));
    return st_fwd_chunk_ops(m, &r, o0, o1, err);
}

/* Final norm and head over hout rows [0, n_out) into the logits tensor. */
enum st_status st_fwd_head_ops(struct st_model *m, int64_t n_out, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    m->last_n_out = n_out;   /* hout rows [0, n_out) now hold the normed states */
    struct st_tensor h = st_tensor_slice(&m->act.hout, 1, 0, n_out);
    struct st_tensor lg = st_tensor_slice(&m->act.logits, 1, 0, n_out);
    TRY(st_backend_rms_norm(m->be, &h, &h, &m->output_norm, hp->rms_eps, err));
    return st_backend_matmul(m->be, &lg, &h, m->tied ? &m->tok_embd : &m->output, err);
}

enum st_status st_fwd_read_logits(struct st_model *m, int64_t n_out, struct st_err *err)
{
    struct st_tensor lg = st_tensor_slice(&m->act.logits, 1, 0, n_out);
    return st_backend_read(m->be, &lg, 0, m->logits_host, st_tensor_nbytes(&lg), err);
}

enum st_status st_fwd_head(struct st_model *m, int64_t n_out, struct st_err *err)
{
    TRY(st_fwd_head_ops(m, n_out, err));
    return st_fwd_read_logits(m, n_out, err);
}

/* A decode-shaped step (one chunk of <= ST_FWD_GRAPH_ROWS rows) as a backend
 * graph: inputs first, then every op of the chunk and the head between
 * graph_begin/graph_end, keyed by the shape (row count, logit rows), which
 * fixes every tensor view and scalar the ops see; only contents change.
 * A device backend captures the key on its second run and replays it from
 * then on; the CPU backend's graph calls do nothing (same ops, same order).
 * The logits stay on the backend: the caller reads or draws from them. */
static enum st_status forward_graphed(struct st_model *m, const struct st_model_batch *b,
                                      struct st_err *err)
{
    int64_t n = b->n_rows, n_out = b->n_out;
    struct st_fwd_rows r;
    st_fwd_cut_rows(&m->act, n, &r);
    TRY(st_fwd_chunk_inputs(m, b, 0, n, 0, n_out, &r, err));
    uint64_t key = ST_FWD_GRAPH_KEY(ST_FWD_GRAPH_FORWARD, n, n_out);
    bool replayed = false;
    TRY(st_backend_graph_begin(m->be, key, &replayed, err));
    if (!replayed) {
        TRY(st_fwd_chunk_ops(m, &r, 0, n_out, err));
        if (n_out > 0)
            TRY(st_fwd_head_ops(m, n_out, err));
        TRY(st_backend_graph_end(m->be, err));
    }
    return ST_OK;
}

enum st_status st_model_hidden(struct st_model *m, int64_t j, float *out, struct st_err *err)
{
    if (!m->loaded)
        return st_err_set(err, ST_ERR_LOADING, "model %s is not loaded", m->path);
    if (j < 0 || j >= m->last_n_out)
        return st_err_set(err, ST_ERR_INVALID, "hidden state of logit row %lld: the last "
                          "forward had %lld", (long long)j, (long long)m->last_n_out);
    /* rms_norm(hout) * output_norm ran in place (st_fwd_head_ops) */
    struct st_tensor h = st_tensor_slice(&m->act.hout, 1, j, 1);
    return st_backend_read(m->be, &h, 0, out, st_tensor_nbytes(&h), err);
}

/* Every row in range, out_rows ascending: a bad batch is the caller's bug,
 * reported rather than computed into a wrong cache. */
static enum st_status check_batch(const struct st_model *m, const struct st_model_batch *b,
                                  struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    if (b->n_rows < 0 || b->n_out < 0 || b->n_out > m->p.max_out || b->n_out > b->n_rows)
        return st_err_set(err, ST_ERR_INVALID, "forward: %lld rows, %lld logit rows (at most "
                          "%d)", (long long)b->n_rows, (long long)b->n_out, (int)m->p.max_out);
    for (int64_t i = 0; i < b->n_rows; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= hp->n_vocab || b->slots[i] < 0 ||
            b->slots[i] >= m->p.n_slots || b->pos[i] < 0 || b->pos[i] >= m->p.n_ctx)
            return st_err_set(err, ST_ERR_INVALID, "forward: row %lld (token %d, slot %d, "
                              "position %lld) is out of range (vocab %lld, %d slots, context "
                              "%lld)", (long long)i, (int)b->tokens[i], (int)b->slots[i],
                              (long long)b->pos[i], (long long)hp->n_vocab, (int)m->p.n_slots,
                              (long long)m->p.n_ctx);
    }
    for (int64_t j = 0; j < b->n_out; j++) {
        if (b->out_rows[j] < 0 || b->out_rows[j] >= b->n_rows ||
            (j > 0 && b->out_rows[j] <= b->out_rows[j - 1]))
            return st_err_set(err, ST_ERR_INVALID, "forward: logit row %lld (= row %lld) is "
                              "out of range or not ascending", (long long)j,
                              (long long)b->out_rows[j]);
    }
    return ST_OK;
}

enum st_status st_fwd_chunks(struct st_model *m, const struct st_model_batch *b,
                             st_fwd_after_fn *after, void *ctx, struct st_err *err)
{
    int64_t o0 = 0;
    for (int64_t r0 = 0; r0 < b->n_rows; r0 += m->p.max_rows) {
        int64_t r1 = ST_MIN(r0 + m->p.max_rows, b->n_rows);
        int64_t o1 = o0;
        while (o1 < b->n_out && b->out_rows[o1] < r1)
            o1++;
        TRY(st_fwd_chunk(m, b, r0, r1, o0, o1, err));
        if (after)
            TRY(after(ctx, b, r0, r1, err));
        o0 = o1;
    }
    return ST_OK;
}

/* Every layer over the batch, the head into act.logits (rows [0, n_out));
 * nothing is read back yet. */
static enum st_status forward_rows(struct st_model *m, const struct st_model_batch *b,
                                   struct st_err *err)
{
    if (!m->loaded)
        return st_err_set(err, ST_ERR_LOADING, "model %s is not loaded", m->path);
    TRY(check_batch(m, b, err));
    if (b->n_rows > 0 && b->n_rows <= ST_FWD_GRAPH_ROWS && b->n_rows <= m->p.max_rows)
        return forward_graphed(m, b, err);
    TRY(st_fwd_chunks(m, b, NULL, NULL, err));
    return b->n_out > 0 ? st_fwd_head_ops(m, b->n_out, err) : ST_OK;
}

enum st_status st_model_forward(struct st_model *m, const struct st_model_batch *b,
                                const float **logits, struct st_err *err)
{
    if (logits)
        *logits = NULL;
    TRY(forward_rows(m, b, err));
    if (b->n_out > 0) {
        TRY(st_fwd_read_logits(m, b->n_out, err));
        if (logits)
            *logits = m->logits_host;
    }
    return ST_OK;
}

/* The draw of each logit row on the backend: the n records go up, n ids
 * come back. */
static enum st_status draw_rows(struct st_model *m, int64_t n, const struct st_draw *draw,
                                int32_t *ids, struct st_err *err)
{
    struct st_tensor id = st_fwd_column(&m->act.draw_id, 0, n);
    struct st_tensor p = st_tensor_slice(&m->act.draw_p, 1, 0, n);
    struct st_tensor lg = st_tensor_slice(&m->act.logits, 1, 0, n);

    TRY(st_backend_write(m->be, &p, 0, draw, (size_t)n * sizeof(*draw), err));
    TRY(st_backend_sample(m->be, &id, &lg, &p, err));
    return st_backend_read(m->be, &id, 0, ids, (size_t)n * sizeof(int32_t), err);
}

enum st_status st_model_forward_draw(struct st_model *m, const struct st_model_batch *b,
                                     const struct st_draw *draw, int32_t *ids,
                                     struct st_err *err)
{
    TRY(forward_rows(m, b, err));
    return b->n_out > 0 ? draw_rows(m, b->n_out, draw, ids, err) : ST_OK;
}

/* [1 + k, n] over the first (1 + k) * n entries of a [1, W] buffer. */
static struct st_tensor score_view(const struct st_tensor *t, int32_t k, int64_t n)
{
    struct st_tensor v = st_tensor_slice(t, 1, 0, (1 + k) * n);
    const int64_t ne[ST_TENSOR_DIMS] = { 1 + k, n, 1, 1 };
    return st_tensor_reshape(&v, ne);
}

/* Logit rows [a, b) to the host, at their places in logits_host. */
static enum st_status read_rows(struct st_model *m, int64_t a, int64_t b, struct st_err *err)
{
    if (a >= b)
        return ST_OK;
    const int64_t nv = m->desc->hp.n_vocab;
    struct st_tensor lg = st_tensor_slice(&m->act.logits, 1, a, b - a);
    return st_backend_read(m->be, &lg, 0, m->logits_host + a * nv, st_tensor_nbytes(&lg), err);
}

static enum st_status score_rows(struct st_model *m, const struct st_model_score *s,
                                 struct st_err *err)
{
    struct st_tensor nx = st_fwd_column(&m->act.score_next, 0, s->n);
    struct st_tensor lg = st_tensor_slice(&m->act.logits, 1, s->first, s->n);
    struct st_tensor v = score_view(&m->act.score_vals, s->k, s->n);
    struct st_tensor id = score_view(&m->act.score_ids, s->k, s->n);
    TRY(st_backend_write(m->be, &nx, 0, s->next, (size_t)s->n * sizeof(int32_t), err));
    TRY(st_backend_score(m->be, &v, &id, &lg, &nx, err));
    TRY(st_backend_read(m->be, &v, 0, s->vals, st_tensor_nbytes(&v), err));
    return st_backend_read(m->be, &id, 0, s->ids, st_tensor_nbytes(&id), err);
}

enum st_status st_model_forward_score(struct st_model *m, const struct st_model_batch *b,
                                      const struct st_model_score *s, const float **logits,
                                      struct st_err *err)
{
    if (logits)
        *logits = NULL;
    if (s->n < 1 || s->first < 0 || s->first + s->n > b->n_out || s->k < 0 ||
        s->k > ST_SCORE_MAX_TOP || s->k > m->desc->hp.n_vocab)
        return st_err_set(err, ST_ERR_INVALID, "forward: scored logit rows [%lld, +%lld) with "
                          "%d alternatives of %lld logit rows", (long long)s->first,
                          (long long)s->n, (int)s->k, (long long)b->n_out);
    TRY(forward_rows(m, b, err));
    TRY(score_rows(m, s, err));
    int64_t skip_end = s->first + s->n - (s->keep_last ? 1 : 0);
    TRY(read_rows(m, 0, s->first, err));
    TRY(read_rows(m, skip_end, b->n_out, err));
    if (logits)
        *logits = m->logits_host;
    return ST_OK;
}
