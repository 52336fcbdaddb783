/* kern_dispatch.c -- which kernel runs: the run-time choice of instruction
 * set, the dot type of every weight type, and activation quantization.
 *
 * The choice is made once (pthread_once) from __builtin_cpu_supports,
 * never from /proc. STRATA_CPU_ISA=scalar|avx2|avx-vnni|avx512-vnni caps
 * the level so tests and benchmarks can compare paths in one binary.
 * On the Sapphire Rapids development VM the three x86 levels measured
 * within noise of each other per type at batch 1, and the avx512-vnni
 * table (32 registers, 8 rows per pass) was ahead at batch 4, so the
 * preference is simply the highest level available, per type.
 */
#include <pthread.h>
#include <stdlib.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <string.h>

#include "cpu.h"

enum st_dtype cpu_dot_type(enum st_dtype t)
{
    switch (t) {
    case ST_DTYPE_F32: return ST_DTYPE_F32;
    case ST_DTYPE_F16: return ST_DTYPE_F16;
    case ST_DTYPE_BF16: return ST_DTYPE_BF16;
    case ST_DTYPE_Q8_0: case ST_DTYPE_Q4_0: case ST_DTYPE_Q4_1:
    case ST_DTYPE_Q5_0: case ST_DTYPE_Q5_1:
        return ST_DTYPE_Q8_0;       /* Q4_1/Q5_1: ggml's Q8_1, see kern_scalar.c */
    case ST_DTYPE_Q2_K: case ST_DTYPE_Q3_K: case ST_DTYPE_Q4_K: case ST_DTYPE_Q5_K: case ST_DTYPE_Q6_K:
    case ST_DTYPE_IQ3_S: case ST_DTYPE_IQ3_XXS: case ST_DTYPE_IQ4_XS:
        return ST_DTYPE_Q8_K;
    default:
        return ST_DTYPE_COUNT_;
    }
}

#if defined(__x86_64__)
/* Features clang 14's __builtin_cpu_supports does not know, read from
 * cpuid directly. The OS-support (XSAVE) side is covered by the avx2 check
 * the callers make first. */
static bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, unsigned bit)
{
    unsigned r[4] = { 0, 0, 0, 0 };
    if ((unsigned)__get_cpuid_max(0, NULL) < leaf)
        return false;
    __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
    return (r[reg] >> bit) & 1u;
}

/* cpuid is slow (a VM exit under some hypervisors): read once. */
static bool has_f16c, has_avx2_f16c;
static pthread_once_t feat_once = PTHREAD_ONCE_INIT;

static void read_features(void)
{
    has_f16c = cpuid_bit(1, 0, 2, 29);  /* CPUID.1:ECX.F16C[bit 29] */
    __builtin_cpu_init();
    has_avx2_f16c = has_f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool cpu_has_f16c(void)
{
    pthread_once(&feat_once, read_features);
    return has_f16c;
}

bool cpu_has_avx2_f16c(void)
{
    pthread_once(&feat_once, read_features);
    return has_avx2_f16c;
}

static bool cpu_has_avxvnni(void)
{
    return cpuid_bit(7, 1, 0, 4);       /* CPUID.(7,1):EAX.AVX-VNNI[bit 4] */
}
#else
bool cpu_has_f16c(void)
{
    return false;
}

bool cpu_has_avx2_f16c(void)
{
    return false;
}
#endif

static bool isa_supported(enum cpu_isa isa)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    switch (isa) {
    case CPU_ISA_SCALAR: return true;
    case CPU_ISA_AVX2: return avx2;
    case CPU_ISA_AVXVNNI: return avx2 && cpu_has_avxvnni();
    case CPU_ISA_AVX512:
        return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    default: return false;
    }
#else
    return isa == CPU_ISA_SCALAR;
#endif
}

const struct cpu_kernels *cpu_kernels_for(enum cpu_isa isa)
{
    if (!isa_supported(isa))
        return NULL;
    switch (isa) {
    case CPU_ISA_SCALAR: return &cpu_kernels_scalar;
#if defined(__x86_64__)
    case CPU_ISA_AVX2: return &cpu_kernels_avx2;
    case CPU_ISA_AVXVNNI: return &cpu_kernels_avxvnni;
    case CPU_ISA_AVX512: return &cpu_kernels_avx512;
#endif
    default: return NULL;
    }
}

static struct cpu_kernels best;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

static void pick_best(void)
{
    static const char *const names[CPU_ISA_COUNT] = { "scalar", "avx2", "avx-vnni",
                                                      "avx512-vnni" };
    const char *cap = getenv("STRATA_CPU_ISA");
    int top = CPU_ISA_COUNT - 1;

    for (int i = 0; cap && i < CPU_ISA_COUNT; i++)
        if (strcmp(cap, names[i]) == 0)
            top = i;
    best = cpu_kernels_scalar;
    for (int i = top; i >= 0; i--) {
        const struct cpu_kernels *k = cpu_kernels_for((enum cpu_isa)i);
        if (!k)
            continue;
        if (best.nx == 1 && k->nx > 1) {   /* first (highest) level found names the set */
            best.name = k->name;
            best.nx = k->nx;
        }
        for (int t = 0; t < ST_DTYPE_COUNT_; t++) {
            if (k->dot[t] && best.dot[t] == cpu_kernels_scalar.dot[t]) {
                best.dot[t] = k->dot[t];
                best.dotw[t] = k->dotw[t];   /* only with its own level's dot */
                best.dotw_nx[t] = k->dotw_nx[t];
            }
            if (k->quant[t] && !best.quant[t])
                best.quant[t] = k->quant[t];
        }
    }
}

const struct cpu_kernels *cpu_kernels_best(void)
{
    pthread_once(&best_once, pick_best);
    return &best;
}

static void to_f16(const float *x, uint16_t *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = st_f32_to_fp16(x[i]);
}

static void to_bf16(const float *x, uint16_t *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = st_f32_to_bf16(x[i]);
}

void cpu_quantize_act(const struct cpu_kernels *k, enum st_dtype dot_type, const float *x,
                      void *dst, int64_t n)
{
    if (k && k->quant[dot_type]) {
        k->quant[dot_type](x, dst, n);
        return;
    }
    switch (dot_type) {
    case ST_DTYPE_F32: memcpy(dst, x, (size_t)n * sizeof(float)); break;
    case ST_DTYPE_F16: to_f16(x, dst, n); break;
    case ST_DTYPE_BF16: to_bf16(x, dst, n); break;
    case ST_DTYPE_Q8_0: st_quantize_row_q8_0(x, dst, n); break;
    case ST_DTYPE_Q8_K: st_quantize_row_q8_k(x, dst, n); break;
    default: ST_ASSERT(!"no activation quantizer for this type"); break;
    }
}
