/* model_load.c -- st_model_open / st_model_load: from a GGUF file to weights
 * on a backend, a KV cache and activation buffers (forward.h).
 *
 * Weights are made with st_backend_wrap straight from the mapping: the CPU
 * backend keeps the pointer (zero copy), a device backend uploads. While
 * loading, every weight page is touched once, layer by layer, so the load
 * reports real progress and the first request does not pay the page
 * faults; afterwards RSS is about the file size plus the KV cache.
 *
 * llama's q and k rows are permuted into NEOX order here (see forward.h);
 * those two matrices per layer are the only copies.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward_internal.h"
#include "strata/clock.h"
#include "strata/log.h"
#include "strata/quant.h"
#include "strata/rss.h"

#define DEFAULT_CTX 4096
#define DEFAULT_UBATCH 512

/* ---- open ------------------------------------------------------------- */

static void count_tensor(struct st_model *m, const struct st_gguf_tensor *t)
{
    if (!t)
        return;
    m->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    m->weight_bytes += t->nbytes;
}

/* Parameters of what a forward reads: main layers, embeddings, head. */
static void count_params(struct st_model *m)
{
    const struct st_model_desc *d = m->desc;
    count_tensor(m, d->tok_embd);
    count_tensor(m, d->output_norm);
    if (d->output != d->tok_embd)
        count_tensor(m, d->output);
    for (int64_t l = 0; l < d->hp.n_layer; l++) {
        const struct st_layer_desc *ld = &d->layers[l];
        const struct st_gguf_tensor *all[] = {
            ld->attn_norm, ld->wq, ld->wk, ld->wv, ld->wo, ld->q_norm, ld->k_norm,
            ld->bq, ld->bk, ld->bv, ld->ffn_norm, ld->ffn_gate, ld->ffn_up, ld->ffn_down,
            ld->ffn_gate_inp, ld->ffn_gate_exps, ld->ffn_up_exps, ld->ffn_down_exps,
            ld->exp_probs_b, ld->ffn_gate_shexp, ld->ffn_up_shexp, ld->ffn_down_shexp,
            ld->wqkv, ld->wz, ld->ssm_conv1d, ld->ssm_dt, ld->ssm_a, ld->ssm_alpha,
            ld->ssm_beta, ld->ssm_norm, ld->ssm_out, ld->ffn_gate_inp_shexp, ld->ssm_ba,
            ld->ssm_in,
        };
        for (size_t i = 0; i < ST_ARRAY_LEN(all); i++)
            count_tensor(m, all[i]);
    }
}

/* The file mapped and its model described (st_model_free undoes both). */
static enum st_status open_desc(struct st_model *m, const char *path, struct st_err *err)
{
    TRY(st_gguf_open(path, &m->gguf, err));
    return st_model_desc_load(m->gguf, &m->desc, err);
}

enum st_status st_model_open(const char *path, struct st_model **out, struct st_err *err)
{
    *out = NULL;
    struct st_model *m = calloc(1, sizeof(*m));
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return st_err_set(err, ST_ERR_NOMEM, "no memory to open %s", path);
    }
    enum st_status rc = open_desc(m, path, err);
    if (rc != ST_OK) {
        st_model_free(m);
        return rc;
    }
    count_params(m);
    *out = m;
    return ST_OK;
}

/* ---- weights ---------------------------------------------------------- */

/* Prefix err's message with 'what' (copied first: the message is rewritten). */
static enum st_status prefix_err(struct st_err *err, enum st_status rc, const char *what)
{
    char msg[sizeof(err->msg)];
    snprintf(msg, sizeof(msg), "%s", err && err->msg[0] ? err->msg : st_status_msg(rc));
    return st_err_set(err, rc, "%s: %s", what, msg);
}

/* Read one byte per page of [p, p + n) so the mapping is resident. */
static uint64_t touch_pages(const void *p, size_t n)
{
    static size_t page;
    if (!page) {
        long ps = sysconf(_SC_PAGESIZE);
        page = ps > 0 ? (size_t)ps : 4096;
    }
    const volatile unsigned char *c = p;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i += page)
        sum += c[i];
    if (n)
        sum += c[n - 1];
    return sum;
}

static enum st_status wrap_weight(struct st_model *m, const struct st_gguf_tensor *gt,
                                  struct st_tensor *out, struct st_err *err)
{
    if (!gt)
        return ST_OK;
    (void)touch_pages(gt->data, gt->nbytes);
    enum st_status rc = st_backend_wrap(m->be, gt->type, gt->ne, gt->data, gt->nbytes, out, err);
    if (rc != ST_OK) {
        char what[96];
        snprintf(what, sizeof(what), "weight %.*s", (int)gt->name.len, gt->name.ptr);
        return prefix_err(err, rc, what);
    }
    return ST_OK;
}

/* Row o of the NEOX-ordered matrix = row src_row(o) of the original, within
 * each head of D rows: (2i, 2i+1) -> (i, i + n_rot/2); rows >= n_rot stay. */
static int64_t src_row(int64_t o, int64_t d, int64_t n_rot)
{
    int64_t head = o / d, j = o % d, half = n_rot / 2;
    if (j >= n_rot)
        return o;
    return head * d + (j < half ? 2 * j : 2 * (j - half) + 1);
}

/* A copy of a q or k weight with its output rows permuted into NEOX order. */
static enum st_status wrap_permuted(struct st_model *m, const struct st_gguf_tensor *gt,
                                    struct st_tensor *out, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    enum st_status rc = st_backend_alloc(m->be, gt->type, gt->ne, out, err);
    if (rc != ST_OK)
        return rc;
    size_t row = st_tensor_row_bytes(out);
    const char *src = gt->data;
    for (int64_t o = 0; o < gt->ne[1] && rc == ST_OK; o++) {
        int64_t s = src_row(o, hp->head_dim_k, hp->n_rot);
        rc = st_backend_write(m->be, out, (size_t)o * row, src + (size_t)s * row, row, err);
    }
    return rc;
}

static enum st_status load_layer(struct st_model *m, int64_t l, struct st_err *err)
{
    const struct st_layer_desc *d = &m->desc->layers[l];
    struct st_fwd_layer *w = &m->layers[l];
    bool permute = !m->desc->hp.rope_neox, gated = m->desc->hp.attn_gate;
    w->kv_index = l;
    w->state_index = -1;
    /* a gated attn_q is split by st_fwd_load_hybrid */
    if (!gated)
        TRY(permute ? wrap_permuted(m, d->wq, &w->wq, err) : wrap_weight(m, d->wq, &w->wq, err));
    TRY(permute ? wrap_permuted(m, d->wk, &w->wk, err) : wrap_weight(m, d->wk, &w->wk, err));
    const struct { const struct st_gguf_tensor *g; struct st_tensor *t; } rest[] = {
        { d->attn_norm, &w->attn_norm }, { d->wv, &w->wv }, { d->wo, &w->wo },
        { d->q_norm, &w->q_norm }, { d->k_norm, &w->k_norm }, { d->ffn_norm, &w->ffn_norm },
        { d->ffn_gate, &w->ffn_gate }, { d->ffn_up, &w->ffn_up }, { d->ffn_down, &w->ffn_down },
        { d->ffn_gate_inp, &w->router }, { d->ffn_gate_exps, &w->gate_exps },
        { d->ffn_up_exps, &w->up_exps }, { d->ffn_down_exps, &w->down_exps },
        { d->bq, &w->bq }, { d->bk, &w->bk }, { d->bv, &w->bv },
        { d->exp_probs_b, &w->exp_probs_b }, { d->ffn_gate_shexp, &w->gate_shexp },
        { d->ffn_up_shexp, &w->up_shexp }, { d->ffn_down_shexp, &w->down_shexp },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(rest); i++)
        TRY(wrap_weight(m, rest[i].g, rest[i].t, err));
    return st_arch_is_hybrid(m->desc->hp.arch) ? st_fwd_load_hybrid(m, l, err) : ST_OK;
}

static void release_layer(struct st_backend *be, struct st_fwd_layer *w)
{
    struct st_tensor *all[] = { ST_FWD_LAYER_TENSORS(w) };
    for (size_t i = 0; i < ST_ARRAY_LEN(all); i++)
        st_backend_release(be, all[i]);
}

/* ---- KV cache and activations ----------------------------------------- */

static enum st_status alloc_f(struct st_model *m, struct st_tensor *t, enum st_dtype type,
                              int64_t n0, int64_t n1, size_t *bytes, struct st_err *err)
{
    const int64_t ne[ST_TENSOR_DIMS] = { n0, n1, 1, 1 };
    enum st_status rc = st_backend_alloc(m->be, type, ne, t, err);
    if (rc == ST_OK)
        *bytes += st_tensor_nbytes(t);
    return rc;
}

/* Q8_0 rows are blocks of 32 elements and a KV head must start on one; the
 * cuda kernels also want a power-of-two number of blocks a head
 * (kernels/kv_q8.cuh). F32 and BF16 have kernels on the cpu backend only. */
static enum st_status check_kv_types(const struct st_model *m, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    const enum st_kv_type t[2] = { m->p.type_k, m->p.type_v };
    const bool cuda = strcmp(st_backend_name(m->be), "cuda") == 0;
    const int64_t d = hp->head_dim_k;
    for (int i = 0; i < 2; i++) {
        if ((int)t[i] < 0 || t[i] >= ST_KV_COUNT_)
            return st_err_set(err, ST_ERR_INVALID, "KV cache type %d is not f16, q8_0, f32 "
                              "or bf16", (int)t[i]);
        if (t[i] == ST_KV_F16)
            continue;
        const bool cpu = strcmp(st_backend_name(m->be), "cpu") == 0;
        if (!cpu && (!cuda || t[i] != ST_KV_Q8_0))
            return st_err_set(err, ST_ERR_UNSUPPORTED, "--cache-type-%c: KV cache type %s is "
                              "not in the %s backend yet (use %s)", "kv"[i],
                              st_kv_type_name(t[i]), st_backend_name(m->be),
                              cuda ? "f16 or q8_0" : "f16");
        if (t[i] != ST_KV_Q8_0)
            continue;
        if (d % ST_QK != 0)
            return st_err_set(err, ST_ERR_UNSUPPORTED, "--cache-type-%c %s needs a head dim "
                              "that is a multiple of %d; this model's is %d (use f16)",
                              "kv"[i], st_kv_type_name(t[i]), ST_QK, (int)d);
        if (cuda && d != 32 && d != 64 && d != 128 && d != 256)
            return st_err_set(err, ST_ERR_UNSUPPORTED, "--cache-type-%c %s on the cuda backend "
                              "needs a head dim of 32, 64, 128 or 256; this model's is %d "
                              "(use f16)", "kv"[i], st_kv_type_name(t[i]), (int)d);
    }
    return ST_OK;
}

static enum st_status alloc_kv(struct st_model *m, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    /* only attention layers have KV (qwen35moe: one in four) */
    const int64_t ne[ST_TENSOR_DIMS] = { hp->n_head_kv * hp->head_dim_k, m->p.n_ctx,
                                         m->p.n_slots,
                                         ST_MAX(hp->n_layer - hp->n_recurrent, 1) };
    enum st_status rc = check_kv_types(m, err);
    if (rc != ST_OK)
        return rc;
    /* kv_lazy (--kv-unified): every slot's region is the whole context,
     * committed only as written (kv_trim.c gives it back) */
    enum st_status (*alloc)(struct st_backend *, enum st_dtype, const int64_t *,
                            struct st_tensor *, struct st_err *) =
        m->p.kv_lazy ? st_backend_alloc_lazy : st_backend_alloc;
    rc = alloc(m->be, st_kv_type_dtype(m->p.type_k), ne, &m->kcache, err);
    if (rc == ST_OK)
        rc = alloc(m->be, st_kv_type_dtype(m->p.type_v), ne, &m->vcache, err);
    if (rc == ST_ERR_UNSUPPORTED && m->p.kv_lazy)
        return st_err_set(err, rc, "--kv-unified: the %s backend cannot commit KV memory as "
                          "slots grow yet (drop --kv-unified: each slot then gets ctx_size / "
                          "parallel tokens)", st_backend_name(m->be));
    if (rc != ST_OK) {
        char what[96];
        snprintf(what, sizeof(what), "KV cache of %d slots x %lld tokens", (int)m->p.n_slots,
                 (long long)m->p.n_ctx);
        return prefix_err(err, rc, what);
    }
    m->kv_bytes = st_tensor_nbytes(&m->kcache) + st_tensor_nbytes(&m->vcache);
    return st_fwd_alloc_state(m, err);
}

static enum st_status alloc_act(struct st_model *m, struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    struct st_fwd_act *a = &m->act;
    int64_t r = m->p.max_rows, o = m->p.max_out, e = hp->n_embd;
    int64_t qd = hp->n_head * hp->head_dim_k, kd = hp->n_head_kv * hp->head_dim_k;
    /* g, u: the dense FFN (dense models, glm4moe's leading layers) and the
     * shared expert share them; so: the shared expert's output */
    int64_t fs = hp->n_ff_exp * hp->n_expert_shared + hp->n_ff_shexp;   /* one is 0 */
    int64_t fd = ST_MAX(hp->n_expert > 0 && hp->n_dense_lead == 0 ? 1 : hp->n_ff, 1);
    fd = ST_MAX(fd, fs);
    int64_t so = fs > 0 ? e : 1;
    int64_t k = ST_MAX(hp->n_expert_used, 1);
    /* qwen35moe's buffers: the attention gate, the DeltaNet projections */
    bool next = st_arch_is_hybrid(hp->arch);
    int64_t c3 = next ? 2 * hp->ssm.n_k_heads * hp->ssm.head_dim + hp->ssm.d_inner : 1;
    int64_t cv = next ? hp->ssm.d_inner : 1, hv = next ? hp->ssm.n_v_heads : 1;
    size_t *sz = &m->act_bytes;
    const struct { struct st_tensor *t; enum st_dtype ty; int64_t n0, n1; } all[] = {
        { &a->x, ST_DTYPE_F32, e, r },      { &a->h, ST_DTYPE_F32, e, r },
        { &a->q, ST_DTYPE_F32, qd, r },     { &a->k, ST_DTYPE_F32, kd, r },
        { &a->v, ST_DTYPE_F32, kd, r },     { &a->att, ST_DTYPE_F32, qd, r },
        { &a->o, ST_DTYPE_F32, e, r },      { &a->g, ST_DTYPE_F32, fd, r },
        { &a->u, ST_DTYPE_F32, fd, r },     { &a->so, ST_DTYPE_F32, so, r },
        { &a->sel, ST_DTYPE_I32, k, r },
        { &a->wts, ST_DTYPE_F32, k, r },    { &a->ids, ST_DTYPE_I32, 1, r },
        { &a->pos, ST_DTYPE_I32, 1, r },    { &a->slot, ST_DTYPE_I32, 1, r },
        { &a->gidx, ST_DTYPE_I32, 1, o },   { &a->hout, ST_DTYPE_F32, e, o },
        { &a->logits, ST_DTYPE_F32, hp->n_vocab, o },
        { &a->draw_id, ST_DTYPE_I32, 1, o }, { &a->draw_p, ST_DTYPE_I32, ST_DRAW_WORDS, o },
        { &a->score_next, ST_DTYPE_I32, 1, o },
        { &a->score_vals, ST_DTYPE_F32, 1, (1 + ST_SCORE_MAX_TOP) * o },
        { &a->score_ids, ST_DTYPE_I32, 1, (1 + ST_SCORE_MAX_TOP) * o },
        { &a->qgate, ST_DTYPE_F32, next ? qd : 1, r }, { &a->sgate, ST_DTYPE_F32, 1, r },
        { &a->mix, ST_DTYPE_F32, c3, r },   { &a->conv, ST_DTYPE_F32, c3, r },
        { &a->z, ST_DTYPE_F32, cv, r },     { &a->alpha, ST_DTYPE_F32, hv, r },
        { &a->beta, ST_DTYPE_F32, hv, r },  { &a->y, ST_DTYPE_F32, cv, r },
    };
    enum st_status rc = ST_OK;
    for (size_t i = 0; i < ST_ARRAY_LEN(all) && rc == ST_OK; i++)
        rc = alloc_f(m, all[i].t, all[i].ty, all[i].n0, all[i].n1, sz, err);
    if (rc != ST_OK)
        return rc;
    m->logits_host = malloc((size_t)o * (size_t)hp->n_vocab * sizeof(float));
    m->i32_host = malloc((size_t)ST_MAX(r, o) * sizeof(int32_t));
    if (!m->logits_host || !m->i32_host)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for %lld rows of logits", (long long)o);
    return ST_OK;
}

static void release_act(struct st_backend *be, struct st_fwd_act *a)
{
    struct st_tensor *all[] = {
        &a->x, &a->h, &a->q, &a->k, &a->v, &a->att, &a->o, &a->g, &a->u, &a->so, &a->sel, &a->wts,
        &a->ids, &a->pos, &a->slot, &a->gidx, &a->hout, &a->logits,
        &a->draw_id, &a->draw_p, &a->score_next, &a->score_vals, &a->score_ids,
        &a->qgate, &a->sgate, &a->mix, &a->conv, &a->z, &a->alpha, &a->beta, &a->y,
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(all); i++)
        st_backend_release(be, all[i]);
}

/* ---- load ------------------------------------------------------------- */

/* A context past what the positions were trained for: without rope
 * scaling past context_length, under YaRN past original length * factor
 * (linear: the file's context_length is ambiguous there, no warning). */
static void warn_context(const struct st_hparams *hp, int64_t n_ctx)
{
    if (hp->rope_scaling == ST_ROPE_SCALING_NONE && hp->n_ctx_train > 0 &&
        n_ctx > hp->n_ctx_train)
        st_log(ST_LOG_WARN, "model", "context %lld is above the model's trained %lld and no "
               "rope scaling is on: output past %lld tokens may degrade; for Qwen3: "
               "--rope-scaling yarn --rope-scale %g --yarn-orig-ctx %lld (docs/CLI.md "
               "\"Long context\")", (long long)n_ctx, (long long)hp->n_ctx_train,
               (long long)hp->n_ctx_train, ceil((double)n_ctx / (double)hp->n_ctx_train),
               (long long)hp->n_ctx_train);
    double reach = (double)hp->rope_n_ctx_orig * hp->rope_factor;
    if (hp->rope_scaling == ST_ROPE_SCALING_YARN && (double)n_ctx > reach)
        st_log(ST_LOG_WARN, "model", "context %lld is above the %.0f positions yarn reaches "
               "(%lld x %g): output past them may degrade; raise --rope-scale",
               (long long)n_ctx, reach, (long long)hp->rope_n_ctx_orig, (double)hp->rope_factor);
}

static enum st_status resolve_params(struct st_model *m, const struct st_model_params *in,
                                     struct st_err *err)
{
    const struct st_hparams *hp = &m->desc->hp;
    struct st_model_params p = *in;
    if (!p.backend)
        p.backend = "cpu";
    if (p.n_ctx <= 0)
        p.n_ctx = hp->n_ctx_train > 0 ? ST_MIN(hp->n_ctx_train, DEFAULT_CTX) : DEFAULT_CTX;
    if (p.max_rows <= 0)
        p.max_rows = DEFAULT_UBATCH + p.n_slots;
    if (p.max_out <= 0)
        p.max_out = p.n_slots + 1;
    if (p.n_slots < 1 || p.n_ctx > INT32_MAX || p.n_threads < 0)
        return st_err_set(err, ST_ERR_INVALID, "model: %d slots, %lld context, %d threads: "
                          "expected >= 1 slot, context < 2^31, threads >= 0",
                          (int)p.n_slots, (long long)p.n_ctx, (int)p.n_threads);
    if (hp->head_dim_k != hp->head_dim_v)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "%s: key length %lld != value length %lld "
                          "is not supported", m->path, (long long)hp->head_dim_k,
                          (long long)hp->head_dim_v);
    warn_context(hp, p.n_ctx);
    m->p = p;
    return ST_OK;
}

/* Resident memory of the process in MiB (0 if unknown). */
static double rss_mib(void)
{
    return (double)st_rss_bytes() / (1024.0 * 1024.0);
}

static enum st_status load_weights(struct st_model *m, st_model_progress_fn *progress,
                                   void *ctx, struct st_err *err)
{
    const struct st_model_desc *d = m->desc;
    int64_t n_layer = d->hp.n_layer;
    m->layers = calloc((size_t)ST_MAX(n_layer, 1), sizeof(*m->layers));
    if (!m->layers)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for %lld layers", (long long)n_layer);
    m->tied = d->output == d->tok_embd;
    TRY(wrap_weight(m, d->tok_embd, &m->tok_embd, err));
    TRY(wrap_weight(m, d->output_norm, &m->output_norm, err));
    if (!m->tied)
        TRY(wrap_weight(m, d->output, &m->output, err));
    enum st_status rc = ST_OK;
    for (int64_t l = 0; l < n_layer && rc == ST_OK; l++) {
        rc = load_layer(m, l, err);
        if (progress)
            progress(ctx, (double)(l + 1) / (double)(n_layer + 1));
        st_log(ST_LOG_DEBUG, "model", "loaded layer %lld/%lld", (long long)l + 1,
               (long long)n_layer);
    }
    return rc;
}

/* The weights, the KV cache, the activations; st_model_unload undoes them. */
static enum st_status load_all(struct st_model *m, st_model_progress_fn *progress, void *ctx,
                               struct st_err *err)
{
    TRY(load_weights(m, progress, ctx, err));
    TRY(alloc_kv(m, err));
    return alloc_act(m, err);
}

enum st_status st_model_load(struct st_model *m, const struct st_model_params *p,
                             st_model_progress_fn *progress, void *ctx, struct st_err *err)
{
    if (m->loaded)
        return st_err_set(err, ST_ERR_INVALID, "model %s is already loaded", m->path);
    int64_t t0 = st_clock_now(st_clock_real());
    double rss0 = rss_mib();
    enum st_status rc = resolve_params(m, p, err);
    if (rc != ST_OK)
        return rc;
    struct st_backend_config bc = { .n_threads = m->p.n_threads,
                                   .device = m->p.device };
    rc = st_backend_open(m->p.backend, &bc, &m->be, err);
    if (rc != ST_OK)
        return rc;
    m->loaded = true;   /* from here st_model_unload cleans up */
    st_log(ST_LOG_INFO, "model", "loading %s: %s, %lld layers, %.2f M params, %.1f MiB of "
           "weights on %s", m->path, m->desc->hp.arch_name, (long long)m->desc->hp.n_layer,
           (double)m->n_params / 1e6, (double)m->weight_bytes / (1024.0 * 1024.0),
           st_backend_describe(m->be));
    rc = load_all(m, progress, ctx, err);
    if (rc != ST_OK) {
        st_model_unload(m);
        return rc;
    }
    if (progress)
        progress(ctx, 1.0);
    double rss1 = rss_mib();
    /* what one token of a slot costs: k and v of every attention layer */
    double per_token = (double)(st_tensor_nbytes(&m->kcache) + st_tensor_nbytes(&m->vcache)) /
                       ((double)m->p.n_slots * (double)m->p.n_ctx);
    st_log(ST_LOG_INFO, "model", "loaded %s in %.2f s: weights %.1f MiB (%s), KV cache %.1f "
           "MiB%s (%d slots x %lld tokens, k %s v %s, %.1f KiB per token), buffers %.1f MiB; "
           "RSS %.1f -> %.1f MiB",
           m->path, (double)(st_clock_now(st_clock_real()) - t0) / (double)ST_NS_PER_SEC,
           (double)m->weight_bytes / (1024.0 * 1024.0),
           m->desc->hp.rope_neox ? "in place" : "in place; q/k copied for rope order",
           (double)m->kv_bytes / (1024.0 * 1024.0),
           m->p.kv_lazy ? " reserved, committed as slots fill it" : "",
           (int)m->p.n_slots, (long long)m->p.n_ctx,
           st_kv_type_name(m->p.type_k), st_kv_type_name(m->p.type_v), per_token / 1024.0, (double)m->act_bytes / (1024.0 * 1024.0), rss0, rss1);
    return ST_OK;
}

void st_model_unload(struct st_model *m)
{
    if (!m || !m->loaded)
        return;
    for (int64_t l = 0; m->layers && l < m->desc->hp.n_layer; l++)
        release_layer(m->be, &m->layers[l]);
    free(m->layers);
    m->layers = NULL;
    st_backend_release(m->be, &m->tok_embd);
    st_backend_release(m->be, &m->output_norm);
    st_backend_release(m->be, &m->output);
    st_backend_release(m->be, &m->kcache);
    st_backend_release(m->be, &m->vcache);
    st_backend_release(m->be, &m->conv_state);
    st_backend_release(m->be, &m->delta_state);
    st_backend_release(m->be, &m->conv_saved);
    st_backend_release(m->be, &m->delta_saved);
    st_model_state_keep_release(m);
    st_model_state_ckpt_release(m);
    release_act(m->be, &m->act);
    free(m->logits_host);
    free(m->i32_host);
    m->logits_host = NULL;
    m->last_n_out = 0;
    m->i32_host = NULL;
    st_backend_close(m->be);
    m->be = NULL;
    m->kv_bytes = m->act_bytes = 0;
    m->loaded = false;
}

void st_model_free(struct st_model *m)
{
    if (!m)
        return;
    st_model_unload(m);
    st_model_desc_free(m->desc);
    st_gguf_close(m->gguf);
    free(m->path);
    free(m);
}

enum st_status st_model_set_rope(struct st_model *m, const struct st_rope_override *ov,
                                 struct st_err *err)
{
    return st_hparams_rope_override(&m->desc->hp, ov, err);
}

/* ---- facts ------------------------------------------------------------ */

const struct st_gguf *st_model_gguf(const struct st_model *m) { return m->gguf; }
const struct st_model_desc *st_model_description(const struct st_model *m) { return m->desc; }
const struct st_hparams *st_model_hparams(const struct st_model *m) { return &m->desc->hp; }
const char *st_model_path(const struct st_model *m) { return m->path; }
bool st_model_loaded(const struct st_model *m) { return m->loaded; }
int64_t st_model_n_params(const struct st_model *m) { return m->n_params; }
size_t st_model_weight_bytes(const struct st_model *m) { return m->weight_bytes; }
const struct st_model_params *st_model_params_of(const struct st_model *m) { return &m->p; }
struct st_backend *st_model_backend(const struct st_model *m) { return m->be; }
size_t st_model_kv_bytes(const struct st_model *m) { return m->kv_bytes; }
size_t st_model_state_bytes(const struct st_model *m)
{
    return st_tensor_nbytes(&m->conv_state) + st_tensor_nbytes(&m->delta_state);
}
size_t st_model_act_bytes(const struct st_model *m) { return m->act_bytes; }
