/* rope_params.cuh -- the per-pair rope frequency and cos/sin multiplier
 * (no scaling, linear, YaRN) for the CUDA kernels: the __host__ __device__
 * twin of strata/rope.h's st_rope_inv_freq / st_rope_mscale (the formulas
 * are documented there). test_cuda_kern_host runs the host build against
 * the C functions.
 *
 * Device code rounds every product and sum explicitly (__fmul_rn,
 * __fadd_rn) so nvcc's contraction choices cannot make rope.cu's two
 * kernels (rope_neox, rms_norm_rope) differ; the host build uses plain
 * operators (no contraction in host code here), which is what the C
 * functions compute.
 */
#ifndef STRATA_KERNELS_ROPE_PARAMS_CUH
#define STRATA_KERNELS_ROPE_PARAMS_CUH

#include <math.h>

#include "strata/rope.h"

#ifdef __CUDA_ARCH__
#define KR_MUL(a, b) __fmul_rn((a), (b))
#define KR_ADD(a, b) __fadd_rn((a), (b))
#else
#define KR_MUL(a, b) ((a) * (b))
#define KR_ADD(a, b) ((a) + (b))
#endif

/* YaRN's ramp: 1 for pair i <= low (trained frequency), 0 for i >= high. */
static __host__ __device__ __forceinline__ float kr_yarn_ramp(float low, float high, int i)
{
    const float d = high - low > 0.001f ? high - low : 0.001f;
    float y = ((float)i - low) / d;
    y = y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
    return 1.0f - y;
}

/* Angle per position of pair i: theta = pos * kr_rope_inv_freq(p, i). */
static __host__ __device__ __forceinline__ float kr_rope_inv_freq(const st_rope_params &p, int i)
{
    const float extrap = powf(p.freq_base, -2.0f * (float)i / (float)p.n_rot);
    if (p.ext_factor == 0.0f)
        return KR_MUL(p.freq_scale, extrap);      /* none / linear */
    const float m = KR_MUL(kr_yarn_ramp(p.corr_low, p.corr_high, i), p.ext_factor);
    const float mix = KR_MUL(p.freq_scale, 1.0f - m);
    return KR_MUL(extrap, KR_ADD(mix, m));
}

/* Multiplier of cos and sin (attn_factor; YaRN: times 1 + 0.1 ln factor). */
static __host__ __device__ __forceinline__ float kr_rope_mscale(const st_rope_params &p)
{
    if (p.ext_factor == 0.0f)
        return p.attn_factor;
    return KR_MUL(p.attn_factor, KR_ADD(1.0f, KR_MUL(0.1f, logf(1.0f / p.freq_scale))));
}

#endif
