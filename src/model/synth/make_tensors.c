/* make_tensors.c -- adding one tensor to the synthetic model being built
 * (make_build.h): its type under --quant and llama-quantize's mixes, its
 * seeded random generator (or mtp-demo's fixed fills), written block by
 * block while the file is written. make_model.c and make_next.c list the
 * tensors.
 */
#include <stdio.h>
#include <string.h>

#include "model/synth/make_build.h"
#include "model/synth/synth.h"
#include "strata/quant.h"

/* mtp-demo and next-mtp-demo (docs/ENGINE.md "MTP"): a model whose MTP drafts mostly agree,
 * to measure the draft/verify mechanism, not real acceptance. Every
 * block's output projections (attn_output, ffn_down_exps) are scaled by
 * DEMO_BLOCK_SCALE, so the residual stream stays close to the token's
 * embedding and the next token is mostly f(t) = argmax output .
 * norm(token_embd[t]). The MTP block's eh_proj is [I | 0] (F16, exact):
 * it passes the normed embedding half through and ignores the hidden
 * half; enorm is all ones; its block adds as little as the main ones. So
 * given t_p it computes the same f(t_p) one position ahead. The size (~36
 * MiB at Q8_0) makes a CPU decode step stream weights rather than pay
 * per-op overhead, so verifying drafts is measured at a realistic cost. */
#define DEMO_BLOCK_SCALE 0.001f
/* next-mtp-demo adds twice the terms a layer (the shared expert, and
 * every DeltaNet layer's read-out of its whole history): at 0.001 its
 * drafts agreed 82% of the time in test_mtp's 40 steps (mtp-demo: 93%),
 * at half that 95%: the two measure the mechanism at about the same
 * acceptance. */
#define DEMO_NEXT_SCALE 0.0005f

/* llama-quantize's use_more_bits: first and last eighth, every third between. */
static bool more_bits(int64_t i, int64_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* A row width that is not a whole number of blocks falls back to a
 * 32-element type: Q8_0 for the 5/6-bit types, Q4_0 for the rest (Q2_K
 * and Q3_K included; llama.cpp would pick IQ4_NL, which we lack). */
static enum st_dtype fit(enum st_dtype t, int64_t ne0)
{
    const struct st_dtype_info *info = st_dtype_info((uint32_t)t);
    if (ne0 % info->block_elems == 0)
        return t;
    t = (t == ST_DTYPE_Q5_K || t == ST_DTYPE_Q6_K) ? ST_DTYPE_Q8_0 : ST_DTYPE_Q4_0;
    return ne0 % ST_QK == 0 ? t : ST_DTYPE_F32;
}

/* The mix's type for attn_v / attn_output / ffn_down of layer il of nl
 * (llama-quantize's rules for a model with n_expert != 8; its Mixtral
 * special cases are not reproduced). Other roles keep the base type. */
static enum st_dtype mix_type(const struct plan *pl, enum role r, int64_t il, int64_t nl)
{
    bool v = r == R_ATTN_V, down = r == R_FFN_DOWN, out = r == R_ATTN_OUT;
    switch (pl->mix) {
    case MIX_Q4_K_M:
        return (v || down) && more_bits(il, nl) ? ST_DTYPE_Q6_K : pl->base;
    case MIX_Q2_K:
        if (v)
            return pl->gqa >= 4 ? ST_DTYPE_Q4_K : ST_DTYPE_Q3_K;
        return down || out ? ST_DTYPE_Q3_K : pl->base;
    case MIX_Q2_K_S:
        if (v && pl->gqa >= 4)
            return ST_DTYPE_Q4_K;
        return down && il < nl / 8 ? ST_DTYPE_Q4_K : pl->base;
    case MIX_Q3_K_M:
        if (v)
            return il < 2 ? ST_DTYPE_Q5_K : ST_DTYPE_Q4_K;
        if (down)
            return il < nl / 16 ? ST_DTYPE_Q5_K : ST_DTYPE_Q4_K;
        return out ? ST_DTYPE_Q4_K : pl->base;
    case MIX_Q3_K_L:
        return v || down || out ? ST_DTYPE_Q5_K : pl->base;
    default:
        return pl->base;
    }
}

static enum st_dtype pick_type(const struct plan *pl, enum role r, int64_t il, int64_t nl,
                               int64_t ne0)
{
    enum st_dtype b = pl->base;
    bool float_or_q8 = b == ST_DTYPE_F32 || b == ST_DTYPE_F16 || b == ST_DTYPE_BF16 ||
                       b == ST_DTYPE_Q8_0;
    switch (r) {
    case R_NORM:
    case R_ROUTER:
    case R_BIAS:
    case R_F32:
    case R_DECAY:
        return ST_DTYPE_F32;
    case R_OUTPUT:
        return fit(float_or_q8 ? b : ST_DTYPE_Q6_K, ne0);
    case R_ATTN_V:
        if (b == ST_DTYPE_IQ3_S || b == ST_DTYPE_IQ3_XXS)
            return fit(ST_DTYPE_Q4_K, ne0);
        return fit(mix_type(pl, r, il, nl), ne0);
    case R_ATTN_OUT:
    case R_FFN_DOWN:
        return fit(mix_type(pl, r, il, nl), ne0);
    default:
        return fit(b, ne0);
    }
}

static uint64_t seed_for(uint64_t seed, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *c = name; *c; c++)
        h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
    uint64_t z = seed ^ h;                        /* splitmix64 finalizer */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 0x9e3779b97f4a7c15ull;
}

/* The fixed (non-random) fills of mtp-demo: F32 ones, or [I | 0] rows in
 * F32 or F16 (both represent 0 and 1 exactly). */
static void fill_fixed(const struct gen *g, int64_t row0, int64_t nrows, void *dst)
{
    for (int64_t r = 0; r < nrows; r++) {
        for (int64_t i = 0; i < g->ne0; i++) {
            float v = g->kind == GEN_ONES ? 1.0f : (i == row0 + r ? 1.0f : 0.0f);
            size_t at = (size_t)(r * g->ne0 + i);
            if (g->type == ST_DTYPE_F32) {
                memcpy((char *)dst + 4 * at, &v, 4);
            } else {
                uint16_t h = st_f32_to_fp16(v);
                memcpy((char *)dst + 2 * at, &h, 2);
            }
        }
    }
}

static enum st_status fill(void *ctx, int64_t row0, int64_t nrows, void *dst, struct st_err *err)
{
    struct gen *g = ctx;
    (void)err;
    if (g->kind == GEN_ONES || g->kind == GEN_EYE_LEFT) {
        fill_fixed(g, row0, nrows, dst);
        return ST_OK;
    }
    /* rows come in order: the state is the position */
    st_mm_random_rows(&g->state, (int)g->type, g->ne0, nrows, g->sigma, dst);
    if (g->kind == GEN_DECAY) {
        float *f = dst;
        for (int64_t i = 0; i < g->ne0 * nrows; i++) {
            float mag = 0.5f + (f[i] < 0.0f ? -f[i] : f[i]);
            f[i] = -(mag < 2.5f ? mag : 2.5f);
        }
    }
    if (g->norm) {
        float *f = dst;
        for (int64_t i = 0; i < g->ne0 * nrows; i++)
            f[i] += 1.0f;
    }
    return ST_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* mtp-demo's changes to one tensor's generator (see DEMO_BLOCK_SCALE).
 * next-mtp-demo: the same, and its other output projections (the
 * DeltaNet's ssm_out, the shared expert's down) scaled too; its MTP head
 * norm (nextn.shared_head_norm) is drawn as output_norm is, bit for bit,
 * so the nextn block's head is the model's. */
static void demo_tweak(const struct build *b, const char *name, struct gen *g)
{
    if (ends_with(name, ".attn_output.weight") || ends_with(name, ".ffn_down_exps.weight") ||
        ends_with(name, ".ssm_out.weight") || ends_with(name, ".ffn_down_shexp.weight"))
        g->sigma *= b->p->next ? DEMO_NEXT_SCALE : DEMO_BLOCK_SCALE;
    if (ends_with(name, ".nextn.shared_head_norm.weight"))
        g->state = seed_for(b->seed, "output_norm.weight");
    if (ends_with(name, ".nextn.enorm.weight"))
        g->kind = GEN_ONES;
    if (ends_with(name, ".nextn.eh_proj.weight")) {
        g->kind = GEN_EYE_LEFT;
        g->type = b->plan.base == ST_DTYPE_F32 ? ST_DTYPE_F32 : ST_DTYPE_F16;
    }
}

/* Add tensor 'name' with ne (n_dims of them) in the role's type. */
void st_mm_add(struct build *b, const char *name, enum role r, int64_t il, int n_dims,
               int64_t ne0, int64_t ne1, int64_t ne2)
{
    int64_t ne[3] = { ne0, ne1, ne2 };
    struct gen *g = &b->gens[b->n_gens++];
    ST_ASSERT(b->n_gens <= b->cap_gens);
    g->state = seed_for(b->seed, name);
    g->type = pick_type(&b->plan, r, il, b->p->L, ne0);
    g->ne0 = ne0;
    g->norm = r == R_NORM;
    /* sqrt(1/fan_in) by Newton: no libm in this module */
    double x = 1.0 / (double)ne0, s = 1.0;
    for (int it = 0; it < 60; it++)
        s = 0.5 * (s + x / s);
    g->sigma = g->norm ? 0.2f / 1.7320508f : r == R_BIAS ? 0.1f : (float)s;
    g->kind = r == R_DECAY ? GEN_DECAY : GEN_RANDOM;
    if (r == R_DECAY)
        g->sigma = 1.0f;
    if (b->p->mtp_demo)
        demo_tweak(b, name, g);
    st_gguf_writer_add_tensor_fn(b->w, name, g->type, n_dims, ne, fill, g);
}

void st_mm_add_blk(struct build *b, int64_t il, const char *what, enum role r, int n_dims,
                   int64_t ne0, int64_t ne1, int64_t ne2)
{
    char name[96];
    snprintf(name, sizeof(name), "blk.%lld.%s.%s", (long long)il, what,
             r == R_BIAS ? "bias" : "weight");
    st_mm_add(b, name, r, il, n_dims, ne0, ne1, ne2);
}
