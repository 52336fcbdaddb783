/* mtp_load.c -- st_mtp_new / st_mtp_free: the nextn block's weights on the
 * model's backend (wrapped in place, like the main weights), its KV cache
 * and the upkeep/draft buffers (mtp_internal.h).
 *
 * Which block: the first nextn block, blk.{n_layer}. Files with several
 * (step35-style "chain heads") would use block i for draft step i; strata
 * chains the first one, as llama.cpp does for qwen3next / qwen35.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtp_internal.h"
#include "strata/log.h"

bool st_mtp_available(const struct st_model *m)
{
    const struct st_hparams *hp = &m->desc->hp;
    return hp->n_nextn > 0 && hp->rope_neox &&
           m->desc->layers[hp->n_layer].nextn_eh_proj != NULL;
}

static enum st_status wrap(struct st_mtp *t, const struct st_gguf_tensor *gt,
                           struct st_tensor *out, struct st_err *err)
{
    if (!gt)
        return ST_OK;
    enum st_status rc = st_backend_wrap(t->m->be, gt->type, gt->ne, gt->data, gt->nbytes, out,
                                        err);
    if (rc != ST_OK && err) {
        char msg[sizeof(err->msg)];   /* copied: the message is rewritten */
        snprintf(msg, sizeof(msg), "%s", err->msg[0] ? err->msg : st_status_msg(rc));
        st_err_set(err, rc, "MTP weight %.*s: %s", (int)gt->name.len, gt->name.ptr, msg);
    }
    return rc;
}

static enum st_status wrap_block(struct st_mtp *t, const struct st_layer_desc *d,
                                 struct st_err *err)
{
    struct st_fwd_layer *w = &t->w;
    bool gated = t->m->desc->hp.attn_gate;   /* qwen35moe: attn_q is split below */
    w->kv_index = -1;                        /* the block has its own cache */
    w->state_index = -1;                     /* and is attention, never recurrent */
    const struct { const struct st_gguf_tensor *g; struct st_tensor *t; } all[] = {
        { d->attn_norm, &w->attn_norm }, { gated ? NULL : d->wq, &w->wq }, { d->wk, &w->wk },
        { d->wv, &w->wv }, { d->wo, &w->wo }, { d->q_norm, &w->q_norm },
        { d->k_norm, &w->k_norm }, { d->ffn_norm, &w->ffn_norm }, { d->ffn_gate, &w->ffn_gate },
        { d->ffn_up, &w->ffn_up }, { d->ffn_down, &w->ffn_down },
        { d->ffn_gate_inp, &w->router }, { d->ffn_gate_exps, &w->gate_exps },
        { d->ffn_up_exps, &w->up_exps }, { d->ffn_down_exps, &w->down_exps },
        { d->bq, &w->bq }, { d->bk, &w->bk }, { d->bv, &w->bv },
        { d->exp_probs_b, &w->exp_probs_b }, { d->ffn_gate_shexp, &w->gate_shexp },
        { d->ffn_up_shexp, &w->up_shexp }, { d->ffn_down_shexp, &w->down_shexp },
        { d->nextn_eh_proj, &t->eh_proj }, { d->nextn_enorm, &t->enorm },
        { d->nextn_hnorm, &t->hnorm }, { d->nextn_embed, &t->own_embed },
        { d->nextn_head, &t->own_head }, { d->nextn_head_norm, &t->own_head_norm },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(all); i++)
        TRY(wrap(t, all[i].g, all[i].t, err));
    if (gated)
        TRY(st_fwd_load_hybrid_block(t->m, d, w, err));
    const struct st_model *m = t->m;
    t->embed = d->nextn_embed ? &t->own_embed : &m->tok_embd;
    t->head = d->nextn_head ? &t->own_head : (m->tied ? &m->tok_embd : &m->output);
    t->head_norm = d->nextn_head_norm ? &t->own_head_norm : &m->output_norm;
    return ST_OK;
}

static enum st_status alloc2(struct st_mtp *t, struct st_tensor *out, enum st_dtype type,
                             int64_t n0, int64_t n1, struct st_err *err)
{
    const int64_t ne[ST_TENSOR_DIMS] = { n0, n1, 1, 1 };
    TRY(st_backend_alloc(t->m->be, type, ne, out, err));
    t->act_bytes += st_tensor_nbytes(out);
    return ST_OK;
}

static enum st_status alloc_buffers(struct st_mtp *t, struct st_err *err)
{
    const struct st_hparams *hp = &t->m->desc->hp;
    const int64_t kne[ST_TENSOR_DIMS] = { hp->n_head_kv * hp->head_dim_k, t->m->p.n_ctx, t->S,
                                          1 };
    /* the unified KV pool: committed as written, like the main cache (kv_trim.c) */
    enum st_status (*alloc)(struct st_backend *, enum st_dtype, const int64_t *,
                            struct st_tensor *, struct st_err *) =
        t->m->p.kv_lazy ? st_backend_alloc_lazy : st_backend_alloc;
    TRY(alloc(t->m->be, ST_DTYPE_F16, kne, &t->kcache, err));
    TRY(alloc(t->m->be, ST_DTYPE_F16, kne, &t->vcache, err));
    t->kv_bytes = 2 * st_tensor_nbytes(&t->kcache);
    int64_t E = t->E, R = t->R, S = t->S;
    const struct { struct st_tensor *t; enum st_dtype ty; int64_t n0, n1; } all[] = {
        { &t->hbuf, ST_DTYPE_F32, E, S + 1 + R + S * t->K }, { &t->dbuf, ST_DTYPE_F32, E, S },
        { &t->esrc, ST_DTYPE_F32, E, 2 * R },     { &t->cat, ST_DTYPE_F32, 2 * E, R },
        { &t->ids, ST_DTYPE_I32, 1, R },          { &t->pos, ST_DTYPE_I32, 1, R },
        { &t->slot, ST_DTYPE_I32, 1, R },         { &t->hidx, ST_DTYPE_I32, 1, R },
        { &t->cidx, ST_DTYPE_I32, 1, 2 * R },     { &t->logits, ST_DTYPE_F32, t->V, S },
    };
    for (size_t i = 0; i < ST_ARRAY_LEN(all); i++)
        TRY(alloc2(t, all[i].t, all[i].ty, all[i].n0, all[i].n1, err));
    return ST_OK;
}

static enum st_status alloc_host(struct st_mtp *t, struct st_err *err)
{
    t->logits_host = malloc((size_t)(t->S * t->V) * sizeof(float));
    t->i32_host = malloc((size_t)(2 * t->R) * sizeof(int32_t));
    t->carry_pos = malloc((size_t)t->S * sizeof(int64_t));
    t->chunk_slot = malloc((size_t)t->R * sizeof(int32_t));
    t->chunk_pos = malloc((size_t)t->R * sizeof(int64_t));
    t->hrow_host = malloc((size_t)t->R * sizeof(int32_t));
    t->stash_tok = malloc((size_t)(t->S * t->K) * sizeof(int32_t));
    t->stash_lo = malloc((size_t)t->S * sizeof(int64_t));
    t->stash_hi = malloc((size_t)t->S * sizeof(int64_t));
    t->ctok = malloc((size_t)t->R * sizeof(int32_t));
    t->cslot = malloc((size_t)t->R * sizeof(int32_t));
    t->cpos = malloc((size_t)t->R * sizeof(int64_t));
    int32_t **i32s[] = { &t->dtok, &t->dslot, &t->drow, &t->dwant, &t->mark };
    bool ok = t->logits_host && t->i32_host && t->carry_pos && t->chunk_slot && t->chunk_pos &&
              t->hrow_host && t->stash_tok && t->stash_lo && t->stash_hi && t->ctok &&
              t->cslot && t->cpos;
    for (size_t i = 0; i < ST_ARRAY_LEN(i32s); i++) {
        *i32s[i] = malloc((size_t)t->S * sizeof(int32_t));
        ok = ok && *i32s[i];
    }
    t->dpos = malloc((size_t)t->S * sizeof(int64_t));
    if (!ok || !t->dpos)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the MTP state of %lld slots",
                          (long long)t->S);
    for (int64_t s = 0; s < t->S; s++) {
        t->carry_pos[s] = -1;
        t->stash_lo[s] = t->stash_hi[s] = -1;   /* nothing kept */
    }
    return ST_OK;
}

/* The block's weights, the device buffers, the host ones; st_mtp_free
 * undoes what was done. */
static enum st_status make_state(struct st_mtp *t, const struct st_hparams *hp,
                                 struct st_err *err)
{
    TRY(wrap_block(t, &t->m->desc->layers[hp->n_layer], err));
    TRY(alloc_buffers(t, err));
    return alloc_host(t, err);
}

enum st_status st_mtp_new(struct st_model *m, int32_t max_draft, struct st_mtp **out,
                          struct st_err *err)
{
    *out = NULL;
    if (!m->loaded)
        return st_err_set(err, ST_ERR_LOADING, "MTP: model %s is not loaded", m->path);
    const struct st_hparams *hp = &m->desc->hp;
    if (!st_mtp_available(m))
        return st_err_set(err, ST_ERR_UNSUPPORTED, "%s has no MTP layer%s", m->path,
                          hp->n_nextn > 0 ? " strata can run (its rope is not NEOX)"
                                          : " (no nextn_predict_layers / blk.N.nextn.*)");
    if (m->p.max_rows < m->p.n_slots)
        return st_err_set(err, ST_ERR_INVALID, "MTP: the model's %d rows per chunk are fewer "
                          "than its %d slots", (int)m->p.max_rows, (int)m->p.n_slots);
    if (max_draft < 1 || max_draft > ST_MTP_MAX_DRAFT)
        return st_err_set(err, ST_ERR_INVALID, "MTP: %d draft tokens (expected 1..%d)",
                          (int)max_draft, ST_MTP_MAX_DRAFT);
    struct st_mtp *t = calloc(1, sizeof(*t));
    if (!t)
        return st_err_set(err, ST_ERR_NOMEM, "no memory for the MTP state");
    *t = (struct st_mtp){ .m = m, .max_draft = max_draft, .E = hp->n_embd, .V = hp->n_vocab,
                          .S = m->p.n_slots, .R = m->p.max_rows, .K = ST_MTP_KEEP };
    enum st_status rc = make_state(t, hp, err);
    if (rc != ST_OK) {
        st_mtp_free(t);
        return rc;
    }
    st_log(ST_LOG_INFO, "model", "MTP: nextn block %lld of %s, drafts of up to %d tokens, MTP "
           "KV cache %.1f MiB, buffers %.1f MiB", (long long)hp->n_layer, m->path,
           (int)max_draft, (double)t->kv_bytes / (1024.0 * 1024.0),
           (double)t->act_bytes / (1024.0 * 1024.0));
    *out = t;
    return ST_OK;
}

void st_mtp_free(struct st_mtp *t)
{
    if (!t)
        return;
    struct st_backend *be = t->m->be;
    struct st_fwd_layer *w = &t->w;
    struct st_tensor *all[] = {
        ST_FWD_LAYER_TENSORS(w), &t->eh_proj, &t->enorm, &t->hnorm, &t->own_embed, &t->own_head,
        &t->own_head_norm, &t->kcache, &t->vcache, &t->hbuf, &t->dbuf, &t->esrc, &t->cat,
        &t->ids, &t->pos, &t->slot, &t->hidx, &t->cidx, &t->logits,
    };
    for (size_t i = 0; be && i < ST_ARRAY_LEN(all); i++)
        st_backend_release(be, all[i]);
    free(t->logits_host);
    free(t->i32_host);
    free(t->carry_pos);
    free(t->chunk_slot);
    free(t->chunk_pos);
    free(t->hrow_host);
    free(t->dtok);
    free(t->dslot);
    free(t->drow);
    free(t->dwant);
    free(t->mark);
    free(t->dpos);
    free(t->stash_tok);
    free(t->stash_lo);
    free(t->stash_hi);
    free(t->ctok);
    free(t->cslot);
    free(t->cpos);
    free(t);
}

size_t st_mtp_kv_bytes(const struct st_mtp *t) { return t ? t->kv_bytes : 0; }
size_t st_mtp_act_bytes(const struct st_mtp *t) { return t ? t->act_bytes : 0; }
