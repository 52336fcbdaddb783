/* forward_ref_next.c -- the reference forward's hybrid layers (qwen35moe,
 * qwen3next, qwen35), written from llama.cpp's graphs and ggml's ops as
 * plain loops (doubles for the recurrent state), sharing nothing with
 * src/model or the backend: the causal conv1d over the last K-1 inputs,
 * SiLU, l2-normed q and k, the gated delta rule, the gated RMSNorm, the
 * gated attention and the sigmoid-gated shared expert (qwen35: the dense
 * FFN). qwen3next's fused ssm_ba (and ssm_in) are multiplied whole and
 * viewed per k head, as its graph does, and its v heads are grouped by k
 * head. One sequence, one token at a time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref_internal.h"
#include "strata/quant.h"

/* Rows [h*2D, h*2D + D) of attn_q are head h's query, the next D its gate. */
static void split_q(const struct ref_model *r, struct ref_layer *w)
{
    const struct st_hparams *hp = &r->hp;
    int64_t e = hp->n_embd, d = hp->head_dim_k, n = hp->n_head;
    float *q = malloc((size_t)(n * d * e) * sizeof(float));
    float *g = malloc((size_t)(n * d * e) * sizeof(float));
    for (int64_t h = 0; h < n; h++) {
        memcpy(q + h * d * e, w->wq.w + 2 * h * d * e, (size_t)(d * e) * sizeof(float));
        memcpy(g + h * d * e, w->wq.w + (2 * h + 1) * d * e, (size_t)(d * e) * sizeof(float));
    }
    free(w->wq.w);
    w->wq.w = q;
    w->wq_gate = (struct ref_mat){ g, w->wq.type };
}

void ref_next_load(struct ref_model *r, const struct st_layer_desc *s, struct ref_layer *w)
{
    const struct st_ssm_hparams *sh = &r->hp.ssm;
    w->recurrent = s->recurrent;
    w->shexp_gate = ref_mat_of(s->ffn_gate_inp_shexp);
    if (!s->recurrent) {
        split_q(r, w);
    } else {
        w->wqkv = ref_mat_of(s->wqkv);
        w->wz = ref_mat_of(s->wz);
        w->alpha = ref_mat_of(s->ssm_alpha);
        w->beta = ref_mat_of(s->ssm_beta);
        w->ba = ref_mat_of(s->ssm_ba);
        w->ssm_in = ref_mat_of(s->ssm_in);
        w->ssm_out = ref_mat_of(s->ssm_out);
        w->conv1d = ref_deq(s->ssm_conv1d);
        w->dt_bias = ref_deq(s->ssm_dt);
        w->decay_a = ref_deq(s->ssm_a);
        w->ssm_norm = ref_deq(s->ssm_norm);
    }
    if (!r->conv_state) {
        int64_t c3 = 2 * sh->n_k_heads * sh->head_dim + sh->d_inner;
        r->conv_state = calloc((size_t)(r->n_all * (sh->conv_kernel - 1) * c3), sizeof(float));
        r->delta_state = calloc((size_t)(r->n_all * sh->n_v_heads * sh->head_dim *
                                         sh->head_dim), sizeof(double));
    }
}

void ref_next_free(struct ref_model *r, struct ref_layer *w)
{
    (void)r;
    float *all[] = { w->wq_gate.w, w->wqkv.w, w->wz.w, w->alpha.w, w->beta.w, w->ssm_out.w,
                     w->shexp_gate.w, w->conv1d, w->dt_bias, w->decay_a, w->ssm_norm,
                     w->ba.w, w->ssm_in.w };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        free(all[i]);
}

/* mix -> SiLU(conv over the layer's last K-1 inputs and mix), in place;
 * the state then holds the last K-1 inputs. */
static void conv(struct ref_model *r, int64_t l, const struct ref_layer *w, float *mix,
                 int64_t pos)
{
    const struct st_ssm_hparams *sh = &r->hp.ssm;
    int64_t k = sh->conv_kernel, c3 = 2 * sh->n_k_heads * sh->head_dim + sh->d_inner;
    float *st = r->conv_state + l * (k - 1) * c3;
    if (pos == 0)
        memset(st, 0, (size_t)((k - 1) * c3) * sizeof(float));
    float *in = malloc((size_t)c3 * sizeof(float));
    memcpy(in, mix, (size_t)c3 * sizeof(float));
    for (int64_t c = 0; c < c3; c++) {
        double s = (double)w->conv1d[c * k + k - 1] * in[c];
        for (int64_t j = 0; j < k - 1; j++)
            s += (double)w->conv1d[c * k + j] * st[j * c3 + c];
        mix[c] = ref_silu((float)s);
    }
    memmove(st, st + c3, (size_t)((k - 2) * c3) * sizeof(float));
    memcpy(st + (k - 2) * c3, in, (size_t)c3 * sizeof(float));
    free(in);
}

static void l2norm(const float *x, double *out, int64_t n, float eps)
{
    double ss = 0;
    for (int64_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    double scale = 1.0 / fmax(sqrt(ss), (double)eps);
    for (int64_t i = 0; i < n; i++)
        out[i] = x[i] * scale;
}

/* The gated delta rule of every v-head on the conv output c (q | k | v). */
static void delta_rule(struct ref_model *r, int64_t l, const struct ref_layer *w,
                       const float *c, const float *alpha, const float *beta, int64_t pos,
                       float *y)
{
    const struct st_ssm_hparams *sh = &r->hp.ssm;
    int64_t d = sh->head_dim, hk = sh->n_k_heads, hv = sh->n_v_heads;
    double *m0 = r->delta_state + l * hv * d * d, *q = malloc((size_t)(2 * d) * 8), *k = q + d;
    if (pos == 0)
        memset(m0, 0, (size_t)(hv * d * d) * sizeof(double));
    bool grouped = r->hp.arch == ST_ARCH_QWEN3NEXT;
    for (int64_t h = 0; h < hv; h++) {
        /* qwen35*: ggml tiles the k heads over the v heads (the converter
         * reorders them); qwen3next repeats each k head for its group */
        int64_t g = grouped ? h / (hv / hk) : h % hk;
        const float *v = c + 2 * hk * d + h * d;
        double *m = m0 + h * d * d;
        l2norm(c + g * d, q, d, r->hp.rms_eps);
        l2norm(c + hk * d + g * d, k, d, r->hp.rms_eps);
        double x = (double)alpha[h] + w->dt_bias[h];
        double sp = x > 20.0 ? x : log1p(exp(x));
        double decay = exp(sp * w->decay_a[h]), b = 1.0 / (1.0 + exp(-(double)beta[h]));
        for (int64_t i = 0; i < d * d; i++)
            m[i] *= decay;
        for (int64_t j = 0; j < d; j++) {
            double sk = 0;
            for (int64_t i = 0; i < d; i++)
                sk += m[j * d + i] * k[i];
            double dj = (v[j] - sk) * b;
            for (int64_t i = 0; i < d; i++)
                m[j * d + i] += k[i] * dj;
        }
        for (int64_t j = 0; j < d; j++) {
            double o = 0;
            for (int64_t i = 0; i < d; i++)
                o += m[j * d + i] * q[i];
            y[h * d + j] = (float)(o / sqrt((double)d));
        }
    }
    free(q);
}

/* The input projections: mix (q | k | v), z, alpha, beta of every v head.
 * qwen3next: ssm_ba per k head holds Hv/Hk betas then Hv/Hk alphas; the
 * older ssm_in per k head q, k, the group's v heads, then their z. */
static void project(struct ref_model *r, const struct ref_layer *w, const float *h, float *mix,
                    float *z, float *al, float *be)
{
    const struct st_ssm_hparams *sh = &r->hp.ssm;
    int64_t e = r->hp.n_embd, d = sh->head_dim, hk = sh->n_k_heads, hv = sh->n_v_heads;
    int64_t g_v = hv / hk * d, cv = sh->d_inner;
    if (w->ssm_in.w) {
        int64_t per = 2 * d + 2 * g_v;
        float *all = malloc((size_t)(hk * per) * sizeof(float));
        ref_matvec(r, w->ssm_in, h, all, e, hk * per);
        for (int64_t g = 0; g < hk; g++) {
            const float *src = all + g * per;
            memcpy(mix + g * d, src, (size_t)d * sizeof(float));
            memcpy(mix + hk * d + g * d, src + d, (size_t)d * sizeof(float));
            memcpy(mix + 2 * hk * d + g * g_v, src + 2 * d, (size_t)g_v * sizeof(float));
            memcpy(z + g * g_v, src + 2 * d + g_v, (size_t)g_v * sizeof(float));
        }
        free(all);
    } else {
        ref_matvec(r, w->wqkv, h, mix, e, 2 * hk * d + cv);
        ref_matvec(r, w->wz, h, z, e, cv);
    }
    if (!w->ba.w) {
        ref_matvec(r, w->alpha, h, al, e, hv);
        ref_matvec(r, w->beta, h, be, e, hv);
        return;
    }
    float *ba = malloc((size_t)(2 * hv) * sizeof(float));
    int64_t n = hv / hk;
    ref_matvec(r, w->ba, h, ba, e, 2 * hv);
    for (int64_t i = 0; i < hv; i++) {
        be[i] = ba[(i / n) * 2 * n + i % n];
        al[i] = ba[(i / n) * 2 * n + n + i % n];
    }
    free(ba);
}

static void delta_net(struct ref_model *r, int64_t l, const float *h, int64_t pos, float *out)
{
    const struct st_hparams *hp = &r->hp;
    const struct ref_layer *w = &r->L[l];
    int64_t e = hp->n_embd, d = hp->ssm.head_dim, cv = hp->ssm.d_inner;
    int64_t hv = hp->ssm.n_v_heads, c3 = 2 * hp->ssm.n_k_heads * d + cv;
    float *mix = malloc((size_t)c3 * 4), *z = malloc((size_t)cv * 4), *y = malloc((size_t)cv * 4);
    float *al = malloc((size_t)hv * 4), *be = malloc((size_t)hv * 4);
    project(r, w, h, mix, z, al, be);
    conv(r, l, w, mix, pos);
    delta_rule(r, l, w, mix, al, be, pos, y);
    for (int64_t i = 0; i < hv; i++)
        ref_rmsnorm(y + i * d, y + i * d, w->ssm_norm, d, hp->rms_eps);
    for (int64_t i = 0; i < cv; i++)
        y[i] *= ref_silu(z[i]);
    ref_matvec(r, w->ssm_out, y, out, cv, e);
    free(mix);
    free(z);
    free(y);
    free(al);
    free(be);
}

static float sigmoid(float x) { return (float)(1.0 / (1.0 + exp(-(double)x))); }

static void gated_attention(struct ref_model *r, int64_t l, const float *h, int64_t pos,
                            float *out)
{
    const struct st_hparams *hp = &r->hp;
    const struct ref_layer *w = &r->L[l];
    int64_t e = hp->n_embd, d = hp->head_dim_k, qd = hp->n_head * d, kvd = hp->n_head_kv * d;
    float *q = malloc((size_t)qd * 4), *g = malloc((size_t)qd * 4), *att = malloc((size_t)qd * 4);
    float *k = r->kc + (l * r->n_ctx + pos) * kvd, *v = r->vc + (l * r->n_ctx + pos) * kvd;
    ref_matvec(r, w->wq, h, q, e, qd);
    ref_matvec(r, w->wq_gate, h, g, e, qd);
    ref_matvec(r, w->wk, h, k, e, kvd);
    ref_matvec(r, w->wv, h, v, e, kvd);
    for (int64_t i = 0; i < hp->n_head; i++)
        ref_rmsnorm(q + i * d, q + i * d, w->q_norm, d, hp->rms_eps);
    for (int64_t i = 0; i < hp->n_head_kv; i++)
        ref_rmsnorm(k + i * d, k + i * d, w->k_norm, d, hp->rms_eps);
    ref_rope(q, hp->n_head, hp, pos);
    ref_rope(k, hp->n_head_kv, hp, pos);
    for (int64_t i = 0; r->emulate && i < kvd; i++) {   /* the cache is f16 */
        k[i] = st_fp16_to_f32(st_f32_to_fp16(k[i]));
        v[i] = st_fp16_to_f32(st_f32_to_fp16(v[i]));
    }
    ref_attention(r, l, q, pos, att);
    for (int64_t i = 0; i < qd; i++)
        att[i] *= sigmoid(g[i]);
    ref_matvec(r, w->wo, att, out, qd, e);
    free(q);
    free(g);
    free(att);
}

void ref_next_layer(struct ref_model *r, int64_t l, float *x, int64_t pos)
{
    const struct st_hparams *hp = &r->hp;
    const struct ref_layer *w = &r->L[l];
    int64_t e = hp->n_embd;
    float *h = malloc((size_t)e * 4), *y = malloc((size_t)e * 4), *ys = malloc((size_t)e * 4);
    float gate;
    ref_rmsnorm(h, x, w->attn_norm, e, hp->rms_eps);
    if (w->recurrent)
        delta_net(r, l, h, pos, y);
    else
        gated_attention(r, l, h, pos, y);
    for (int64_t i = 0; i < e; i++)
        x[i] += y[i];
    ref_rmsnorm(h, x, w->ffn_norm, e, hp->rms_eps);
    if (!w->router.w) {   /* qwen35: the dense FFN */
        ref_swiglu(r, &w->gate, &w->up, &w->down, 0, h, e, hp->n_ff, y);
        for (int64_t i = 0; i < e; i++)
            x[i] += y[i];
        free(h);
        free(y);
        free(ys);
        return;
    }
    ref_moe(r, w, h, y);
    ref_swiglu(r, &w->gate_s, &w->up_s, &w->down_s, 0, h, e, hp->n_ff_shexp, ys);
    ref_matvec(r, w->shexp_gate, h, &gate, e, 1);
    for (int64_t i = 0; i < e; i++)
        x[i] += y[i] + sigmoid(gate) * ys[i];
    free(h);
    free(y);
    free(ys);
}
