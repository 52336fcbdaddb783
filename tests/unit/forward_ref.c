/* forward_ref.c -- the reference forward of forward_ref.h, and the dense
 * test-model writer. Plain loops over dequantized f32 weights, double sums.
 */
#include "forward_ref.h"
#include "forward_ref_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/backend.h"
#include "strata/gguf_write.h"
#include "strata/quant.h"

float *ref_deq(const struct st_gguf_tensor *t)
{
    if (!t)
        return NULL;
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    float *f = malloc((size_t)n * sizeof(float));
    st_dequant_row(t->type, t->data, f, n);
    return f;
}

struct ref_mat ref_mat_of(const struct st_gguf_tensor *t)
{
    struct ref_mat m = { ref_deq(t), t ? t->type : ST_DTYPE_F32 };
    return m;
}

/* The nextn pieces of block n_layer with their fallbacks (docs/design/ENGINE.md 4.1). */
static void ref_new_mtp(struct ref_model *r, const struct st_model_desc *d)
{
    const struct st_layer_desc *s = &d->layers[d->hp.n_layer];
    r->eh = ref_mat_of(s->nextn_eh_proj);
    r->enorm = ref_deq(s->nextn_enorm);
    r->hnorm = ref_deq(s->nextn_hnorm);
    r->mtp_hn = s->nextn_head_norm ? ref_deq(s->nextn_head_norm) : NULL;
    r->mtp_emb = s->nextn_embed ? ref_deq(s->nextn_embed) : NULL;
    r->mtp_out = s->nextn_head ? ref_mat_of(s->nextn_head) : (struct ref_mat){ NULL, ST_DTYPE_F32 };
}

struct ref_model *ref_new(const struct st_model_desc *d, int64_t n_ctx, bool emulate)
{
    struct ref_model *r = calloc(1, sizeof(*r));
    r->hp = d->hp;
    r->n_ctx = n_ctx;
    r->emulate = emulate;
    r->emb = ref_deq(d->tok_embd);
    r->onorm = ref_deq(d->output_norm);
    r->out = d->output == d->tok_embd ? (struct ref_mat){ r->emb, d->tok_embd->type }
                                      : ref_mat_of(d->output);
    r->n_all = d->n_layers_all;
    r->hid = calloc((size_t)d->hp.n_embd, sizeof(float));
    r->L = calloc((size_t)r->n_all, sizeof(*r->L));
    for (int64_t l = 0; l < r->n_all; l++) {
        const struct st_layer_desc *s = &d->layers[l];
        struct ref_layer *w = &r->L[l];
        w->attn_norm = ref_deq(s->attn_norm);
        w->wq = ref_mat_of(s->wq);
        w->wk = ref_mat_of(s->wk);
        w->wv = ref_mat_of(s->wv);
        w->wo = ref_mat_of(s->wo);
        w->q_norm = ref_deq(s->q_norm);
        w->k_norm = ref_deq(s->k_norm);
        w->ffn_norm = ref_deq(s->ffn_norm);
        w->gate = ref_mat_of(s->ffn_gate);
        w->up = ref_mat_of(s->ffn_up);
        w->down = ref_mat_of(s->ffn_down);
        w->router = ref_mat_of(s->ffn_gate_inp);
        w->gate_e = ref_mat_of(s->ffn_gate_exps);
        w->up_e = ref_mat_of(s->ffn_up_exps);
        w->down_e = ref_mat_of(s->ffn_down_exps);
        w->bq = ref_deq(s->bq);
        w->bk = ref_deq(s->bk);
        w->bv = ref_deq(s->bv);
        w->exp_b = ref_deq(s->exp_probs_b);
        w->gate_s = ref_mat_of(s->ffn_gate_shexp);
        w->up_s = ref_mat_of(s->ffn_up_shexp);
        w->down_s = ref_mat_of(s->ffn_down_shexp);
        if (st_arch_is_hybrid(d->hp.arch))
            ref_next_load(r, s, w);
    }
    size_t kv = (size_t)(r->n_all * n_ctx * d->hp.n_head_kv * d->hp.head_dim_k);
    r->kc = calloc(kv, sizeof(float));
    r->vc = calloc(kv, sizeof(float));
    if (d->hp.n_nextn > 0)
        ref_new_mtp(r, d);
    return r;
}

void ref_free(struct ref_model *r)
{
    if (!r)
        return;
    for (int64_t l = 0; l < r->n_all; l++) {
        struct ref_layer *w = &r->L[l];
        float *all[] = { w->attn_norm, w->wq.w, w->wk.w, w->wv.w, w->wo.w, w->q_norm,
                         w->k_norm, w->ffn_norm, w->gate.w, w->up.w, w->down.w, w->router.w,
                         w->gate_e.w, w->up_e.w, w->down_e.w, w->bq, w->bk, w->bv,
                         w->exp_b, w->gate_s.w, w->up_s.w, w->down_s.w };
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
            free(all[i]);
        ref_next_free(r, w);
    }
    free(r->L);
    if (r->out.w != r->emb)
        free(r->out.w);
    free(r->emb);
    free(r->onorm);
    free(r->kc);
    free(r->vc);
    free(r->hid);
    free(r->eh.w);
    free(r->enorm);
    free(r->hnorm);
    free(r->mtp_hn);
    free(r->mtp_emb);
    free(r->mtp_out.w);
    free(r->conv_state);
    free(r->delta_state);
    free(r);
}

/* x rounded through the activation type a dot with weight type t uses
 * (docs/design/ENGINE.md 2.11): Q8_0 for the 32-element types (Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0; the CPU backend uses Q8_0 where ggml has Q8_1), Q8_K for the K and
 * IQ types, F16 / BF16 for those, unchanged for F32. */
static void round_act(enum st_dtype t, const float *x, float *out, int64_t n)
{
    bool q32 = t == ST_DTYPE_Q4_0 || t == ST_DTYPE_Q4_1 || t == ST_DTYPE_Q5_0 ||
               t == ST_DTYPE_Q5_1 || t == ST_DTYPE_Q8_0;
    enum st_dtype a = q32 ? ST_DTYPE_Q8_0
                    : t == ST_DTYPE_F16 || t == ST_DTYPE_BF16 || t == ST_DTYPE_F32 ? t
                    : ST_DTYPE_Q8_K;
    if (a == ST_DTYPE_F32) {
        memcpy(out, x, (size_t)n * sizeof(float));
        return;
    }
    void *q = malloc(st_dtype_row_bytes(a, n));
    if (a == ST_DTYPE_Q8_0)
        st_quantize_row_q8_0(x, q, n);
    else if (a == ST_DTYPE_Q8_K)
        st_quantize_row_q8_k(x, q, n);
    else
        st_quantize_row(a, x, q, n);
    st_dequant_row(a, q, out, n);
    free(q);
}

/* y[o] = sum_i W[o][i] x[i]; W is n_out rows of n_in (the slab starting at
 * element 'off' of m). With emulate, x first goes through round_act. */
void ref_matvec_at(const struct ref_model *r, struct ref_mat m, int64_t off, const float *x,
                      float *y, int64_t n_in, int64_t n_out)
{
    float *xr = malloc((size_t)n_in * sizeof(float));
    if (r->emulate)
        round_act(m.type, x, xr, n_in);
    else
        memcpy(xr, x, (size_t)n_in * sizeof(float));
    const float *w = m.w + off;
    for (int64_t o = 0; o < n_out; o++) {
        double s = 0;
        for (int64_t i = 0; i < n_in; i++)
            s += (double)w[o * n_in + i] * xr[i];
        y[o] = (float)s;
    }
    free(xr);
}

void ref_matvec(const struct ref_model *r, struct ref_mat m, const float *x, float *y,
                   int64_t n_in, int64_t n_out)
{
    ref_matvec_at(r, m, 0, x, y, n_in, n_out);
}

void ref_rmsnorm(float *out, const float *x, const float *g, int64_t n, float eps)
{
    double ss = 0;
    for (int64_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float scale = 1.0f / sqrtf((float)(ss / (double)n) + eps);
    for (int64_t i = 0; i < n; i++)
        out[i] = x[i] * scale * g[i];
}

/* YaRN's angle of pair i in double from its definition (pos * (interp *
 * (1 - m) + extrap * m), m = ramp(i) * ext_factor), and the cos/sin
 * multiplier; the ramp ends come from hp->rope (st_rope_params_init). */
static double yarn_theta(const struct st_hparams *hp, int64_t pos, int64_t i, double *ms)
{
    const struct st_rope_params *p = &hp->rope;
    double extrap = (double)pos * pow((double)p->freq_base, -2.0 * (double)i / (double)p->n_rot);
    double y = ((double)i - p->corr_low) / fmax(0.001, (double)p->corr_high - p->corr_low);
    double m = (1.0 - fmin(1.0, fmax(0.0, y))) * p->ext_factor;
    *ms = p->attn_factor * (1.0 + 0.1 * log(1.0 / (double)p->freq_scale));
    return extrap * p->freq_scale * (1.0 - m) + extrap * m;
}

/* Rotate each head's pairs: NEOX (i, i + n_rot/2) or adjacent (2i, 2i+1). */
void ref_rope(float *x, int64_t n_head, const struct st_hparams *hp, int64_t pos)
{
    int64_t d = hp->head_dim_k, nr = hp->n_rot;
    for (int64_t h = 0; h < n_head; h++) {
        float *v = x + h * d;
        for (int64_t i = 0; i < nr / 2; i++) {
            double ms = 1.0, theta = (double)pos * hp->rope_freq_scale *
                           pow((double)hp->rope_freq_base, -2.0 * (double)i / (double)nr);
            if (hp->rope.ext_factor != 0.0f)
                theta = yarn_theta(hp, pos, i, &ms);
            int64_t a = hp->rope_neox ? i : 2 * i, b = hp->rope_neox ? i + nr / 2 : 2 * i + 1;
            double x0 = v[a], x1 = v[b];
            v[a] = (float)(ms * (x0 * cos(theta) - x1 * sin(theta)));
            v[b] = (float)(ms * (x0 * sin(theta) + x1 * cos(theta)));
        }
    }
}

void ref_attention(struct ref_model *r, int64_t l, const float *q, int64_t pos, float *out)
{
    const struct st_hparams *hp = &r->hp;
    int64_t d = hp->head_dim_k, kvd = hp->n_head_kv * d, grp = hp->n_head / hp->n_head_kv;
    const float *kc = r->kc + l * r->n_ctx * kvd, *vc = r->vc + l * r->n_ctx * kvd;
    double *p = malloc((size_t)(pos + 1) * sizeof(double));
    for (int64_t h = 0; h < hp->n_head; h++) {
        int64_t g = h / grp;
        double mx = -INFINITY, sum = 0;
        for (int64_t t = 0; t <= pos; t++) {
            double s = 0;
            for (int64_t i = 0; i < d; i++)
                s += (double)q[h * d + i] * kc[t * kvd + g * d + i];
            p[t] = s / sqrt((double)d);
            mx = p[t] > mx ? p[t] : mx;
        }
        for (int64_t t = 0; t <= pos; t++)
            sum += (p[t] = exp(p[t] - mx));
        for (int64_t i = 0; i < d; i++) {
            double acc = 0;
            for (int64_t t = 0; t <= pos; t++)
                acc += p[t] / sum * vc[t * kvd + g * d + i];
            out[h * d + i] = (float)acc;
        }
    }
    free(p);
}

float ref_silu(float g) { return (float)((double)g / (1.0 + exp(-(double)g))); }

/* SwiGLU FFN of expert 'x' (0 for the dense FFN): y = down(ref_silu(gate h) * up h). */
void ref_swiglu(const struct ref_model *r, const struct ref_mat *gate,
                   const struct ref_mat *up, const struct ref_mat *down, int64_t x,
                   const float *h, int64_t e, int64_t f, float *y)
{
    float *a = malloc((size_t)f * sizeof(float)), *b = malloc((size_t)f * sizeof(float));
    ref_matvec_at(r, *gate, x * f * e, h, a, e, f);
    ref_matvec_at(r, *up, x * f * e, h, b, e, f);
    for (int64_t i = 0; i < f; i++)
        a[i] = ref_silu(a[i]) * b[i];
    ref_matvec_at(r, *down, x * e * f, a, y, f, e);
    free(a);
    free(b);
}

/* Router probabilities p[x] (softmax over all experts, or a sigmoid per
 * expert) and the selection keys p + bias (bias NULL: p). */
static void route_probs(const struct st_hparams *hp, const float *lg, const float *bias,
                        double *p, double *key)
{
    int64_t x = hp->n_expert;
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < x; i++)
        mx = lg[i] > mx ? lg[i] : mx;
    for (int64_t i = 0; i < x; i++)
        sum += exp(lg[i] - mx);
    for (int64_t i = 0; i < x; i++) {
        p[i] = hp->moe_gating == ST_MOE_GATING_SIGMOID ? 1.0 / (1.0 + exp(-(double)lg[i]))
                                                       : exp(lg[i] - mx) / sum;
        key[i] = bias ? p[i] + bias[i] : p[i];
    }
}

/* gating -> top-k of p + bias (ties to the lower index) -> the chosen
 * (unbiased) p, renormalized when moe_norm, times moe_scale; plus the
 * shared expert when the layer has one. */
void ref_moe(struct ref_model *r, const struct ref_layer *w, const float *h, float *y)
{
    const struct st_hparams *hp = &r->hp;
    int64_t e = hp->n_embd, x = hp->n_expert, f = hp->n_ff_exp;
    float *lg = malloc((size_t)x * sizeof(float)), *ye = malloc((size_t)e * sizeof(float));
    double *p = malloc((size_t)x * sizeof(double)), *key = malloc((size_t)x * sizeof(double));
    double wsum = 0;
    bool *taken = calloc((size_t)x, 1);
    int64_t sel[64];
    ref_matvec(r, w->router, h, lg, e, x);
    route_probs(hp, lg, w->exp_b, p, key);
    for (int64_t j = 0; j < hp->n_expert_used; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < x; i++)
            if (!taken[i] && (best < 0 || key[i] > key[best]))
                best = i;
        taken[best] = true;
        sel[j] = best;
        wsum += p[best];
    }
    for (int64_t i = 0; i < x; i++) {   /* margin between the last chosen and the rest */
        int64_t last = sel[hp->n_expert_used - 1];
        /* softmax: in logits; sigmoid (+ bias): in keys, times 4 (the most
         * a logit change moves a sigmoid is a quarter of it) */
        double gap = hp->moe_gating == ST_MOE_GATING_SIGMOID ? 4.0 * (key[last] - key[i])
                                                             : lg[last] - lg[i];
        if (!taken[i] && gap < r->route_gap)
            r->route_gap = gap;
    }
    if (!hp->moe_norm)
        wsum = 1.0;
    else if (wsum < 6.1035e-5)
        wsum = 6.1035e-5;
    memset(y, 0, (size_t)e * sizeof(float));
    for (int64_t j = 0; j < hp->n_expert_used; j++) {
        int64_t s = sel[j];
        ref_swiglu(r, &w->gate_e, &w->up_e, &w->down_e, s, h, e, f, ye);
        for (int64_t i = 0; i < e; i++)
            y[i] += (float)(p[s] / wsum * hp->moe_scale * ye[i]);
    }
    if (w->gate_s.w && !w->shexp_gate.w) {   /* glm4moe's (qwen35moe's is gated) */
        ref_swiglu(r, &w->gate_s, &w->up_s, &w->down_s, 0, h, e, f * hp->n_expert_shared, ye);
        for (int64_t i = 0; i < e; i++)
            y[i] += ye[i];
    }
    free(lg);
    free(ye);
    free(p);
    free(key);
    free(taken);
}

/* v[i] += b[i] when the layer has the bias. */
static void add_vec(float *v, const float *b, int64_t n)
{
    for (int64_t i = 0; b && i < n; i++)
        v[i] += b[i];
}

static void layer(struct ref_model *r, int64_t l, float *x, int64_t pos)
{
    if (st_arch_is_hybrid(r->hp.arch)) {
        ref_next_layer(r, l, x, pos);
        return;
    }
    const struct st_hparams *hp = &r->hp;
    const struct ref_layer *w = &r->L[l];
    int64_t e = hp->n_embd, d = hp->head_dim_k, qd = hp->n_head * d, kvd = hp->n_head_kv * d;
    float *h = malloc((size_t)e * 4), *q = malloc((size_t)qd * 4), *att = malloc((size_t)qd * 4);
    float *y = malloc((size_t)e * 4);
    float *k = r->kc + (l * r->n_ctx + pos) * kvd, *v = r->vc + (l * r->n_ctx + pos) * kvd;
    ref_rmsnorm(h, x, w->attn_norm, e, hp->rms_eps);
    ref_matvec(r, w->wq, h, q, e, qd);
    ref_matvec(r, w->wk, h, k, e, kvd);
    ref_matvec(r, w->wv, h, v, e, kvd);
    add_vec(q, w->bq, qd);
    add_vec(k, w->bk, kvd);
    add_vec(v, w->bv, kvd);
    for (int64_t i = 0; hp->qk_norm && i < hp->n_head; i++)
        ref_rmsnorm(q + i * d, q + i * d, w->q_norm, d, hp->rms_eps);
    for (int64_t i = 0; hp->qk_norm && i < hp->n_head_kv; i++)
        ref_rmsnorm(k + i * d, k + i * d, w->k_norm, d, hp->rms_eps);
    ref_rope(q, hp->n_head, hp, pos);
    ref_rope(k, hp->n_head_kv, hp, pos);
    for (int64_t i = 0; r->emulate && i < kvd; i++) {   /* the cache is f16 */
        k[i] = st_fp16_to_f32(st_f32_to_fp16(k[i]));
        v[i] = st_fp16_to_f32(st_f32_to_fp16(v[i]));
    }
    ref_attention(r, l, q, pos, att);
    ref_matvec(r, w->wo, att, y, qd, e);
    for (int64_t i = 0; i < e; i++)
        x[i] += y[i];
    ref_rmsnorm(h, x, w->ffn_norm, e, hp->rms_eps);
    if (w->router.w)     /* MoE layers (glm4moe's leading layers are dense) */
        ref_moe(r, w, h, y);
    else
        ref_swiglu(r, &w->gate, &w->up, &w->down, 0, h, e, hp->n_ff, y);
    for (int64_t i = 0; i < e; i++)
        x[i] += y[i];
    free(h);
    free(q);
    free(att);
    free(y);
}

void ref_step(struct ref_model *r, int32_t token, int64_t pos, float *logits)
{
    int64_t e = r->hp.n_embd;
    float *x = malloc((size_t)e * 4), *h = malloc((size_t)e * 4);
    memcpy(x, r->emb + (int64_t)token * e, (size_t)e * 4);
    r->route_gap = INFINITY;
    for (int64_t l = 0; l < r->hp.n_layer; l++)
        layer(r, l, x, pos);
    ref_rmsnorm(h, x, r->onorm, e, r->hp.rms_eps);
    memcpy(r->hid, h, (size_t)e * 4);
    ref_matvec(r, r->out, h, logits, e, r->hp.n_vocab);
    free(x);
    free(h);
}

const float *ref_hidden(const struct ref_model *r) { return r->hid; }

void ref_mtp_step(struct ref_model *r, int32_t token, const float *h_prev, int64_t pos,
                  float *h_out, float *logits)
{
    int64_t e = r->hp.n_embd;
    float *cat = malloc((size_t)(2 * e) * 4), *x = malloc((size_t)e * 4);
    const float *emb = r->mtp_emb ? r->mtp_emb : r->emb;
    ref_rmsnorm(cat, emb + (int64_t)token * e, r->enorm, e, r->hp.rms_eps);   /* embedding first */
    if (h_prev)
        ref_rmsnorm(cat + e, h_prev, r->hnorm, e, r->hp.rms_eps);
    else
        memset(cat + e, 0, (size_t)e * 4);
    ref_matvec(r, r->eh, cat, x, 2 * e, e);
    r->route_gap = INFINITY;
    layer(r, r->hp.n_layer, x, pos);
    ref_rmsnorm(h_out, x, r->mtp_hn ? r->mtp_hn : r->onorm, e, r->hp.rms_eps);
    ref_matvec(r, r->mtp_out.w ? r->mtp_out : r->out, h_out, logits, e, r->hp.n_vocab);
    free(cat);
    free(x);
}

double ref_route_gap(const struct ref_model *r)
{
    return r->route_gap;
}

struct ref_cmp ref_compare(const float *ref, const float *fast, int64_t n, double tie)
{
    double dot = 0, na = 0, nb = 0, mx = 0, md = 0;
    int64_t ia = 0, ib = 0;
    for (int64_t i = 0; i < n; i++) {
        dot += (double)ref[i] * fast[i];
        na += (double)ref[i] * ref[i];
        nb += (double)fast[i] * fast[i];
        mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
        md = fabs((double)ref[i] - fast[i]) > md ? fabs((double)ref[i] - fast[i]) : md;
        ia = ref[i] > ref[ia] ? i : ia;
        ib = fast[i] > fast[ib] ? i : ib;
    }
    struct ref_cmp c = {
        .cos = dot / (sqrt(na) * sqrt(nb) + 1e-30),
        .rel = md / (mx + 1e-30),
        .argmax_ok = ia == ib || (double)ref[ia] - ref[ib] <= tie * mx,
        .argmax = (int32_t)ia,
    };
    return c;
}

void ref_tokens(uint64_t seed, int32_t *out, int64_t n, int64_t n_vocab)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out[i] = (int32_t)(s % (uint64_t)n_vocab);
    }
}

/* ---- dense test models -------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float rng_unit(uint64_t *s)   /* uniform in [-1, 1) */
{
    return (float)((double)(rng_next(s) >> 11) / (double)(1ull << 52) - 1.0);
}

struct dense_ctx {
    void *bufs[64];
    int   n;
};

/* A random tensor: weights uniform with std ~1/sqrt(in), or gains 1 +- 0.2. */
static void add_t(struct st_gguf_writer *w, struct dense_ctx *c, uint64_t *s, const char *name,
                  enum st_dtype type, int64_t in, int64_t out, bool norm)
{
    int64_t n = in * out;
    float *f = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        f[i] = norm ? 1.0f + 0.2f * rng_unit(s) : rng_unit(s) * 1.7f / sqrtf((float)in);
    enum st_dtype t = norm ? ST_DTYPE_F32 : type;
    void *data = f;
    if (t != ST_DTYPE_F32) {
        data = malloc(st_dtype_row_bytes(t, in) * (size_t)out);
        for (int64_t r = 0; r < out; r++)
            st_quantize_row(t, f + r * in, (char *)data + st_dtype_row_bytes(t, in) * r, in);
        free(f);
    }
    int64_t ne[2] = { in, out };
    st_gguf_writer_add_tensor(w, name, t, norm ? 1 : 2, ne, data);
    c->bufs[c->n++] = data;
}

bool ref_write_dense(const char *path, const char *arch, enum st_dtype type, int64_t n_rot,
                     uint64_t seed)
{
    const int64_t E = 64, L = 2, H = 4, Hkv = 2, D = 16, F = 96, V = 128;
    bool qk = strcmp(arch, "qwen3") == 0;
    struct st_gguf_writer *w = st_gguf_writer_new(0);
    struct dense_ctx c = { .n = 0 };
    uint64_t s = seed | 1;
    char key[96];
    st_gguf_writer_set_str(w, "general.architecture", arch);
#define KEY(suffix) (snprintf(key, sizeof(key), "%s.%s", arch, suffix), key)
    st_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)E);
    st_gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)L);
    st_gguf_writer_set_u32(w, KEY("context_length"), 256);
    st_gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)F);
    st_gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)H);
    st_gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)Hkv);
    st_gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)D);
    st_gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)D);
    st_gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)n_rot);
    st_gguf_writer_set_f32(w, KEY("rope.freq_base"), 10000.0f);
    st_gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), 1e-5f);
#undef KEY
    add_t(w, &c, &s, "token_embd.weight", type, E, V, false);
    add_t(w, &c, &s, "output_norm.weight", type, E, 1, true);
    add_t(w, &c, &s, "output.weight", type, E, V, false);
    for (int64_t l = 0; l < L; l++) {
        const struct { const char *n; int64_t in, out; bool norm; } ts[] = {
            { "attn_norm", E, 1, true },     { "attn_q", E, H * D, false },
            { "attn_k", E, Hkv * D, false }, { "attn_v", E, Hkv * D, false },
            { "attn_output", H * D, E, false }, { "attn_q_norm", D, 1, true },
            { "attn_k_norm", D, 1, true },   { "ffn_norm", E, 1, true },
            { "ffn_gate", E, F, false },     { "ffn_up", E, F, false },
            { "ffn_down", F, E, false },
        };
        for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
            bool qk_only = strcmp(ts[i].n, "attn_q_norm") == 0 ||
                           strcmp(ts[i].n, "attn_k_norm") == 0;
            if (qk_only && !qk)
                continue;
            snprintf(key, sizeof(key), "blk.%lld.%s.weight", (long long)l, ts[i].n);
            add_t(w, &c, &s, key, type, ts[i].in, ts[i].out, ts[i].norm);
        }
    }
    struct st_err err = { 0 };
    enum st_status rc = st_gguf_writer_write(w, path, &err);
    st_gguf_writer_free(w);
    for (int i = 0; i < c.n; i++)
        free(c.bufs[i]);
    if (rc != ST_OK)
        fprintf(stderr, "ref_write_dense: %s\n", err.msg);
    return rc == ST_OK;
}
