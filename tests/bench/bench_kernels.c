/* bench_kernels.c -- matmul throughput of the CPU backend per weight type.
 *
 * For every weight type and the medium preset's shapes (768x768
 * attention, 256x768 expert slab, 151936x768 output head) it times
 * st_backend_matmul at batch 1 and 4 with the run-time kernels and with
 * the scalar reference, in the same process, and prints ms per call,
 * GB/s of weights streamed, weight rows/s, and the speedup. A read-only
 * sweep over a large buffer on the same threads gives the machine's
 * streaming bandwidth for scale.
 *
 * Usage: bench_kernels [threads (default 2)] [type ...]
 * BENCH_NO_HEAD=1 skips the (slow to fill) output head shape.
 * BENCH_VS_ISA=avx2|avx-vnni|avx512-vnni also times that one level's
 * table (its own dot and dotw, no merging with other levels) and prints
 * the run-time kernels' speedup over it ("vs <level>").
 * With STRATA_BENCH_SUMMARY set (scripts/bench.sh) it also appends a
 * summary row per type (768x768 at batch 1, GB/s, best vs scalar) and one
 * for the geometric mean of every row's speedup (bench_summary.h).
 * Not a test: it asserts nothing and is not registered with ctest.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_summary.h"
#include "cpu/cpu.h"
#include "strata/backend.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_state = 42;
static double g_log_speedup;   /* sum of log(scalar / best) over the rows printed */
static int    g_rows;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* Random quant bytes with sane fp16 scales (values do not matter for speed,
 * but NaN/inf scales would slow float paths down). */
static void fill_weights(enum st_dtype t, uint8_t *p, size_t nbytes)
{
    const struct st_dtype_info *info = st_dtype_info(t);
    size_t bb = (size_t)info->block_bytes;
    uint16_t one = st_f32_to_fp16(0.01f), bone = st_f32_to_bf16(0.01f);
    float f = 0.01f;

    for (size_t i = 0; i + 8 <= nbytes; i += 8) {
        uint64_t v = rnd();
        memcpy(p + i, &v, 8);
    }
    if (t == ST_DTYPE_F32 || t == ST_DTYPE_F16 || t == ST_DTYPE_BF16) {
        for (size_t i = 0; i < nbytes / bb; i++) {
            if (t == ST_DTYPE_F32)
                memcpy(p + 4 * i, &f, 4);
            else
                memcpy(p + 2 * i, t == ST_DTYPE_F16 ? &one : &bone, 2);
        }
        return;
    }
    for (size_t b = 0; b < nbytes / bb; b++) {
        uint8_t *blk = p + b * bb;
        size_t d_at = t == ST_DTYPE_Q6_K ? 208 : t == ST_DTYPE_Q3_K ? 108
                    : t == ST_DTYPE_Q2_K ? 80 : 0;
        memcpy(blk + d_at, &one, 2);
        if (t == ST_DTYPE_Q4_K || t == ST_DTYPE_Q5_K || t == ST_DTYPE_Q4_1 || t == ST_DTYPE_Q5_1 ||
            t == ST_DTYPE_Q2_K)
            memcpy(blk + d_at + 2, &one, 2);   /* dmin / m */
    }
}

struct read_job { const uint64_t *p; size_t n; uint64_t sums[64]; };

static void read_task(void *ctx, int ith, int nth)
{
    struct read_job *j = ctx;
    int64_t lo, hi;
    uint64_t s = 0;
    cpu_split((int64_t)j->n, ith, nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        s += j->p[i];
    j->sums[ith] = s;
}

/* The same sweep with 4 independent 256-bit accumulators (what a kernel
 * that is not compute-bound can reach). */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx2"))) static void read_task_avx2(void *ctx, int ith, int nth)
{
    struct read_job *j = ctx;
    int64_t lo, hi;
    cpu_split((int64_t)(j->n / 16), ith, nth, &lo, &hi);
    const __m256i *p = (const __m256i *)(const void *)j->p;
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (int64_t i = lo * 4; i < hi * 4; i += 4) {
        a = _mm256_add_epi64(a, _mm256_loadu_si256(p + i));
        b = _mm256_add_epi64(b, _mm256_loadu_si256(p + i + 1));
        c = _mm256_add_epi64(c, _mm256_loadu_si256(p + i + 2));
        d = _mm256_add_epi64(d, _mm256_loadu_si256(p + i + 3));
    }
    a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
    j->sums[ith] = (uint64_t)_mm256_extract_epi64(a, 0);
}
#endif

static void bench_bandwidth(struct st_backend *be)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    size_t n = (size_t)512 << 20;
    struct read_job j = { malloc(n), n / 8, { 0 } };
    memset((void *)j.p, 1, n);
    cpu_pool_run(cb->pool, read_task, &j, cb->n_threads);
    double t0 = now_s();
    for (int r = 0; r < 4; r++)
        cpu_pool_run(cb->pool, read_task, &j, cb->n_threads);
    double dt = (now_s() - t0) / 4;
    printf("streaming read, %d threads: %.1f GB/s (plain C loop)\n", cb->n_threads,
           (double)n / dt / 1e9);
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
        for (int t = 1; t <= cb->n_threads; t++) {
            double best = 1e30;
            for (int r = 0; r < 4; r++) {
                double ts = now_s();
                cpu_pool_run(cb->pool, read_task_avx2, &j, t);
                double el = now_s() - ts;
                best = el < best ? el : best;
            }
            printf("streaming read, %d threads: %.1f GB/s (AVX2, 4 accumulators, best of 4)\n", t,
                   (double)n / best / 1e9);
        }
    }
#endif
    printf("\n");
    free((void *)j.p);
}

/* Seconds per st_backend_matmul call (median of a few timed repetitions). */
static double time_matmul(struct st_backend *be, const struct st_tensor *y,
                          const struct st_tensor *x, const struct st_tensor *w, double budget)
{
    struct st_err err;
    double best = 1e30, spent = 0.0;
    int reps = 0;
    (void)st_backend_matmul(be, y, x, w, &err);   /* warm-up */
    while (reps < 3 || (spent < budget && reps < 200)) {
        double t0 = now_s();
        if (st_backend_matmul(be, y, x, w, &err) != ST_OK) {
            fprintf(stderr, "matmul: %s\n", err.msg);
            exit(1);
        }
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
        spent += dt;
        reps++;
    }
    return best;
}

/* The level BENCH_VS_ISA names, or NULL. */
static const struct cpu_kernels *vs_level(void)
{
    static const char *const names[CPU_ISA_COUNT] = { "scalar", "avx2", "avx-vnni",
                                                      "avx512-vnni" };
    const char *want = getenv("BENCH_VS_ISA");
    for (int i = 0; want && i < CPU_ISA_COUNT; i++)
        if (strcmp(want, names[i]) == 0)
            return cpu_kernels_for((enum cpu_isa)i);
    return NULL;
}

static void bench_shape(struct st_backend *be, enum st_dtype t, int64_t n_in, int64_t n_out,
                        const char *label)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    const struct cpu_kernels *fast = cb->kern, *vs = vs_level();
    size_t nbytes = st_dtype_row_bytes(t, n_in) * (size_t)n_out;
    uint8_t *wdata = malloc(nbytes);
    struct st_tensor w, x, y;
    struct st_err err;

    fill_weights(t, wdata, nbytes);
    if (st_backend_wrap(be, t, (int64_t[4]){ n_in, n_out, 1, 1 }, wdata, nbytes, &w, &err) ||
        st_backend_alloc(be, ST_DTYPE_F32, (int64_t[4]){ n_in, 4, 1, 1 }, &x, &err) ||
        st_backend_alloc(be, ST_DTYPE_F32, (int64_t[4]){ n_out, 4, 1, 1 }, &y, &err)) {
        fprintf(stderr, "bench: %s\n", err.msg);
        exit(1);
    }
    float *xf = malloc((size_t)(n_in * 4) * sizeof(float));
    for (int64_t i = 0; i < n_in * 4; i++)
        xf[i] = (float)((int64_t)(rnd() % 2001) - 1000) / 1000.0f;
    (void)st_backend_write(be, &x, 0, xf, (size_t)(n_in * 4) * sizeof(float), &err);
    for (int batch = 1; batch <= 4; batch *= 4) {
        struct st_tensor xb = st_tensor_slice(&x, 1, 0, batch), yb = st_tensor_slice(&y, 1, 0, batch);
        double budget = nbytes > (64u << 20) ? 1.0 : 0.3;
        cb->kern = fast;
        double tf = time_matmul(be, &yb, &xb, &w, budget);
        cb->kern = &cpu_kernels_scalar;
        double ts = time_matmul(be, &yb, &xb, &w, nbytes > (64u << 20) ? 0.5 : 0.2);
        double tv = 0.0;
        if (vs && vs->dot[t]) {
            cb->kern = vs;
            tv = time_matmul(be, &yb, &xb, &w, budget);
        }
        cb->kern = fast;
        printf("%-8s %-14s b=%d  %9.3f ms  %7.2f GB/s  %8.2f Mrows/s  scalar %8.2f GB/s  x%5.1f",
               st_dtype_info(t)->name, label, batch, tf * 1e3, (double)nbytes / tf / 1e9,
               (double)n_out / tf / 1e6, (double)nbytes / ts / 1e9, ts / tf);
        if (tv > 0.0)
            printf("  vs %s %7.2f GB/s x%4.2f", vs->name, (double)nbytes / tv / 1e9, tv / tf);
        printf("\n");
        fflush(stdout);
        g_log_speedup += log(ts / tf);
        g_rows++;
        if (batch == 1 && n_in == 768 && n_out == 768) {
            char what[64], base[32], fig[32];
            snprintf(what, sizeof(what), "%s matmul 768x768 b=1, GB/s: scalar vs best kernels",
                     st_dtype_info(t)->name);
            snprintf(base, sizeof(base), "%.2f GB/s", (double)nbytes / ts / 1e9);
            snprintf(fig, sizeof(fig), "%.2f GB/s", (double)nbytes / tf / 1e9);
            bench_summary("kernels", what, base, fig, ts / tf);
        }
    }
    st_backend_release(be, &w);
    st_backend_release(be, &x);
    st_backend_release(be, &y);
    free(xf);
    free(wdata);
}

int main(int argc, char **argv)
{
    static const enum st_dtype all[] = {
        ST_DTYPE_Q8_0, ST_DTYPE_Q4_0, ST_DTYPE_Q4_K, ST_DTYPE_Q5_K, ST_DTYPE_Q6_K, ST_DTYPE_IQ3_S,
        ST_DTYPE_IQ3_XXS, ST_DTYPE_IQ4_XS, ST_DTYPE_F16, ST_DTYPE_BF16, ST_DTYPE_F32,
        ST_DTYPE_Q4_1, ST_DTYPE_Q5_0, ST_DTYPE_Q5_1, ST_DTYPE_Q2_K, ST_DTYPE_Q3_K,
    };
    struct st_backend_config cfg = { argc > 1 ? atoi(argv[1]) : 2, 0 };
    struct st_backend *be;
    struct st_err err;

    if (st_backend_open("cpu", &cfg, &be, &err) != ST_OK) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    printf("%s\n", st_backend_describe(be));
    bench_bandwidth(be);
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        enum st_dtype t = all[i];
        bool want = argc <= 2;
        for (int a = 2; a < argc; a++) {
            enum st_dtype p;
            want |= st_dtype_parse(argv[a], &p) && p == t;
        }
        if (!want)
            continue;
        bench_shape(be, t, 768, 768, "768x768");
        bench_shape(be, t, 768, 256, "256x768 exp");
        if (!getenv("BENCH_NO_HEAD"))
            bench_shape(be, t, 768, 151936, "151936x768");
    }
    if (g_rows > 0) {
        char what[96];
        snprintf(what, sizeof(what), "geometric mean of the %d rows' speedups (all shapes, b=1 "
                 "and 4)", g_rows);
        bench_summary("kernels", what, "scalar", "best kernels", exp(g_log_speedup / g_rows));
    }
    st_backend_close(be);
    return 0;
}
