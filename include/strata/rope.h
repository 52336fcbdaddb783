/* rope.h -- rotary embedding parameters and the per-pair frequency formula
 * (no scaling, linear scaling, YaRN) shared by the CPU backend, the op
 * checker and the model loader. kernels/rope_yarn.cuh holds the CUDA twin
 * of st_rope_inv_freq / st_rope_mscale (test_cuda_kern_host checks the
 * two agree).
 *
 * Pair i < n_rot/2 of a head rotates by theta = pos * inv_freq(i) with
 *   extrap(i) = base^(-2i/n_rot)                 (the trained frequency)
 *   none/linear (ext_factor == 0):  inv_freq = freq_scale * extrap
 *   YaRN (ext_factor > 0):          inv_freq = extrap * (freq_scale * (1 - m) + m),
 *                                   m = ramp(i) * ext_factor
 *   ramp(i) = 1 - clamp((i - corr_low) / max(0.001, corr_high - corr_low), 0, 1)
 * i.e. pos * (interp * (1 - m) + extrap * m) with interp = freq_scale *
 * extrap: fast pairs (i <= corr_low, many turns within the trained context)
 * keep their trained frequency, slow pairs (i >= corr_high) are
 * interpolated like linear scaling, a linear ramp in between. cos and sin
 * are multiplied by mscale = attn_factor * (1 + 0.1 ln(1 / freq_scale))
 * under YaRN (attn_factor alone otherwise; 1 for every model here).
 * The none/linear expression is exactly the one the backend used before
 * YaRN existed, so those paths stay bit for bit what they were.
 */
#ifndef STRATA_ROPE_H
#define STRATA_ROPE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Rope scaling past the trained context: the GGUF's rope.scaling.type, the
 * --rope-scaling flag and config key, the engine's model config and the
 * loader's override all use this one enum. MODEL is a choice ("keep the
 * file's"), never what a loaded model ends up with. */
enum st_rope_scaling {
    ST_ROPE_SCALING_MODEL,   /* the file's (the flag's default) */
    ST_ROPE_SCALING_NONE,
    ST_ROPE_SCALING_LINEAR,
    ST_ROPE_SCALING_YARN,
};

/* "model", "none", "linear", "yarn", indexed by the enum, NULL-terminated:
 * the spellings of the flag and the config key (src/util/rope_scaling.c). */
extern const char *const st_rope_scaling_names[];

/* The spelling of s; "?" out of range. */
const char *st_rope_scaling_name(enum st_rope_scaling s);

/* s spelled as above -> *out; false (and *out untouched) otherwise. */
bool st_rope_scaling_parse(const char *s, enum st_rope_scaling *out);

/* How positions are mapped to angles. Built by st_rope_params_init. */
struct st_rope_params {
    int32_t n_rot;       /* rotated dims per head: even, <= head_dim */
    float   freq_base;   /* > 0 (Qwen3: 1e6; llama: 1e4 or 5e5) */
    float   freq_scale;  /* 1 / scaling factor (linear, yarn); 1 without scaling */
    float   ext_factor;  /* YaRN ramp weight: 0 = off (none, linear), 1 = YaRN */
    float   attn_factor; /* cos/sin multiplier (YaRN multiplies in 1 + 0.1 ln factor); 1 */
    float   corr_low;    /* YaRN: last pair index kept at its trained frequency */
    float   corr_high;   /* YaRN: first pair index fully interpolated */
};

/* The (fractional) pair index i whose wavelength 2 pi / extrap(i) fits r
 * times into n_ctx_orig positions: n_rot ln(n_ctx_orig / (2 pi r)) / (2 ln base). */
static inline float st_rope_yarn_corr_dim(int32_t n_rot, float base, int64_t n_ctx_orig, float r)
{
    return (float)n_rot * logf((float)n_ctx_orig / (r * 2.0f * 3.14159265358979f)) /
           (2.0f * logf(base));
}

/* Parameters for no scaling (factor 1), linear (freq_scale = 1/factor)
 * or YaRN (ext_factor > 0) with correction range from beta_fast / beta_slow
 * (32 and 1 in every published YaRN model) over n_ctx_orig positions. */
static inline struct st_rope_params st_rope_params_init(int32_t n_rot, float freq_base,
                                                        float freq_scale, float ext_factor,
                                                        float attn_factor, int64_t n_ctx_orig,
                                                        float beta_fast, float beta_slow)
{
    struct st_rope_params p = { n_rot, freq_base, freq_scale, ext_factor, attn_factor, 0, 0 };
    if (ext_factor != 0.0f && n_ctx_orig > 0) {
        float lo = floorf(st_rope_yarn_corr_dim(n_rot, freq_base, n_ctx_orig, beta_fast));
        float hi = ceilf(st_rope_yarn_corr_dim(n_rot, freq_base, n_ctx_orig, beta_slow));
        p.corr_low = lo > 0.0f ? lo : 0.0f;
        p.corr_high = hi < (float)(n_rot - 1) ? hi : (float)(n_rot - 1);
        /* a tiny n_ctx_orig (beta_slow's end below 0), a huge one (beta_fast's
         * past n_rot - 1) or beta_slow > beta_fast leave the ends crossed: the
         * ramp is then a step at corr_low, which high = low gives the same
         * (the width is max(0.001, high - low) either way), and the op
         * checker takes it */
        if (!(p.corr_high >= p.corr_low))
            p.corr_high = p.corr_low;
    }
    return p;
}

/* YaRN's ramp: 1 for pair i <= low (extrapolate), 0 for i >= high. */
static inline float st_rope_yarn_ramp(float low, float high, int32_t i)
{
    float d = high - low > 0.001f ? high - low : 0.001f;
    float y = ((float)i - low) / d;
    y = y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
    return 1.0f - y;
}

/* Angle per position of pair i (theta = pos * this). */
static inline float st_rope_inv_freq(const struct st_rope_params *p, int32_t i)
{
    float extrap = powf(p->freq_base, -2.0f * (float)i / (float)p->n_rot);
    if (p->ext_factor == 0.0f)
        return p->freq_scale * extrap;      /* the pre-YaRN expression, unchanged */
    float m = st_rope_yarn_ramp(p->corr_low, p->corr_high, i) * p->ext_factor;
    float mix = p->freq_scale * (1.0f - m);
    return extrap * (mix + m);
}

/* Multiplier of cos and sin (1 without YaRN and attn_factor 1). */
static inline float st_rope_mscale(const struct st_rope_params *p)
{
    if (p->ext_factor == 0.0f)
        return p->attn_factor;
    return p->attn_factor * (1.0f + 0.1f * logf(1.0f / p->freq_scale));
}

#endif
