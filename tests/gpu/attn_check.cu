/* attn_check.cu -- the attention kernels on a real GPU, alone (no backend,
 * no test framework): both algorithms of kernels/attention*.cu against a
 * float64 reference on the host, then their speed. For the device machine
 * (tests/cuemu runs the same kernels in CI, with the tensor-core products
 * in software; this is where the mma instruction itself runs).
 *
 *   nvcc -std=c++17 -O2 -arch=sm_90 -Ikernels -Iinclude -Xcompiler -fopenmp \
 *        kernels/attention.cu kernels/attention_tc.cu tests/gpu/attn_check.cu \
 *        -o attn_check -lgomp && ./attn_check
 *
 * Exit status 0 when every case is within its tolerance (tiled 1e-4: q and p
 * reach the tensor cores as two f16 parts each, ~1e-6 on tests/cuemu; split
 * 1e-5; over a Q8_0 cache the tiled kernel rounds d*q to f16: 1e-3), 1
 * otherwise. Timings are printed, not judged. Q8_0 caches (kv_q8.cuh):
 * some shapes again with K and V in Q8_0 (and each alone), against the
 * reference over the dequantized cache, and decode at depth 16K timed
 * over both cache types.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.h"

#define CK(x)                                                                   \
    do {                                                                        \
        cudaError_t e_ = (x);                                                   \
        if (e_ != cudaSuccess) {                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,          \
                    cudaGetErrorString(e_));                                    \
            exit(2);                                                            \
        }                                                                       \
    } while (0)

static unsigned long long g_rng = 88172645463325252ull;
static float frand(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

struct shape {
    int H, Hkv, D;
    int64_t n_ctx, n_slots;
};

struct dev {
    shape sh;
    int kq8, vq8;                       /* Q8_0 K / V cache */
    uint16_t *kc, *vc;
    float *part;
    unsigned *flag;
    int sm;
};

/* Bytes of a cache of n elements. */
static size_t cache_bytes(size_t n, int q8)
{
    return q8 ? n / 32 * 34 : n * 2;
}

/* n random elements in [-1, 1) as the cache stores them (f16, or Q8_0
 * blocks quantized as st_quantize_row_q8_0 does). */
static std::vector<uint16_t> cache_rand(size_t n, int q8)
{
    std::vector<uint16_t> h(cache_bytes(n, q8) / 2);
    if (!q8) {
        for (size_t i = 0; i < n; i++)
            h[i] = __half_as_ushort(__float2half_rn(frand()));
        return h;
    }
    for (size_t b = 0; b < n / 32; b++) {
        float x[32], amax = 0.0f;
        for (int i = 0; i < 32; i++) {
            x[i] = frand();
            amax = fmaxf(amax, fabsf(x[i]));
        }
        const float dd = amax / 127.0f, id = dd != 0.0f ? 1.0f / dd : 0.0f;
        h[b * 17] = __half_as_ushort(__float2half_rn(dd));
        int8_t *q = (int8_t *)&h[b * 17 + 1];
        for (int i = 0; i < 32; i++)
            q[i] = (int8_t)roundf(x[i] * id);
    }
    return h;
}

/* The cache as floats (Q8_0: d * q). */
static std::vector<float> cache_floats(const uint16_t *dp, size_t n, int q8)
{
    std::vector<uint16_t> h(cache_bytes(n, q8) / 2);
    CK(cudaMemcpy(h.data(), dp, h.size() * 2, cudaMemcpyDeviceToHost));
    std::vector<float> f(n);
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        if (!q8) {
            f[i] = __half2float(__ushort_as_half(h[i]));
        } else {
            const uint16_t *blk = &h[i / 32 * 17];
            f[i] = __half2float(__ushort_as_half(blk[0])) *
                   (float)((const int8_t *)(blk + 1))[i % 32];
        }
    }
    return f;
}

static void dev_open(dev *d, shape sh, int kq8 = 0, int vq8 = 0)
{
    d->sh = sh;
    d->kq8 = kq8;
    d->vq8 = vq8;
    const size_t n = (size_t)sh.Hkv * sh.D * sh.n_ctx * sh.n_slots;
    std::vector<uint16_t> h = cache_rand(n, kq8);     /* stale context: random, finite */
    CK(cudaMalloc(&d->kc, cache_bytes(n, kq8)));
    CK(cudaMalloc(&d->vc, cache_bytes(n, vq8)));
    CK(cudaMemcpy(d->kc, h.data(), cache_bytes(n, kq8), cudaMemcpyHostToDevice));
    h = cache_rand(n, vq8);
    CK(cudaMemcpy(d->vc, h.data(), cache_bytes(n, vq8), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d->part, (size_t)256 << 20));
    CK(cudaMalloc(&d->flag, 4));
    CK(cudaMemset(d->flag, 0, 4));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    d->sm = p.multiProcessorCount;
}

static void dev_close(dev *d)
{
    cudaFree(d->kc);
    cudaFree(d->vc);
    cudaFree(d->part);
    cudaFree(d->flag);
}

/* the backend's choice (src/backend/cuda/cuda_attention.c) */
static int n_split_for(int64_t rows, int64_t n_ctx, int n_kv, int sm)
{
    int64_t n = (2 * sm + rows * n_kv - 1) / (rows * n_kv), most = (n_ctx + 63) / 64;
    n = n > most ? most : n;
    n = n > 128 ? 128 : n;
    return n < 1 ? 1 : (int)n;
}

struct step {
    std::vector<int32_t> slot, pos;
    std::vector<float> q, k, v;
    float *dq, *dk, *dv, *dout;
    int32_t *dslot, *dpos;
};

static void step_make(step *s, const shape &sh, const std::vector<int32_t> &slot,
                      const std::vector<int32_t> &pos)
{
    const int64_t n = (int64_t)slot.size(), qw = (int64_t)sh.H * sh.D, kw = (int64_t)sh.Hkv * sh.D;
    s->slot = slot;
    s->pos = pos;
    s->q.resize(qw * n);
    s->k.resize(kw * n);
    s->v.resize(kw * n);
    for (auto &x : s->q) x = frand();
    for (auto &x : s->k) x = frand();
    for (auto &x : s->v) x = frand();
    CK(cudaMalloc(&s->dq, qw * n * 4));
    CK(cudaMalloc(&s->dout, qw * n * 4));
    CK(cudaMalloc(&s->dk, kw * n * 4));
    CK(cudaMalloc(&s->dv, kw * n * 4));
    CK(cudaMalloc(&s->dslot, n * 4));
    CK(cudaMalloc(&s->dpos, n * 4));
    CK(cudaMemcpy(s->dq, s->q.data(), qw * n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s->dk, s->k.data(), kw * n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s->dv, s->v.data(), kw * n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s->dslot, slot.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s->dpos, pos.data(), n * 4, cudaMemcpyHostToDevice));
}

static void step_free(step *s)
{
    cudaFree(s->dq); cudaFree(s->dout); cudaFree(s->dk); cudaFree(s->dv);
    cudaFree(s->dslot); cudaFree(s->dpos);
}

/* the backend's default short-path bound (cuda_attention.c ATT_SHORT_MAX);
 * 0 = the split kernel's old decode path */
#define SHORT_MAX 256

static st_kern_attn attn_args(dev *d, step *s, int tiled, int n_split, int short_max)
{
    st_kern_attn a;
    memset(&a, 0, sizeof a);
    a.out = s->dout; a.q = s->dq; a.k = s->dk; a.v = s->dv;
    a.kc = d->kc; a.vc = d->vc; a.slot = s->dslot; a.pos = s->dpos;
    a.n_rows = (int64_t)s->slot.size(); a.n_ctx = d->sh.n_ctx; a.n_slots = d->sh.n_slots;
    a.n_head = d->sh.H; a.n_kv = d->sh.Hkv; a.head_dim = d->sh.D;
    a.scale = 1.0f / sqrtf((float)d->sh.D);
    a.n_split = n_split; a.split_min = 64; a.short_max = short_max; a.tiled = tiled;
    a.kq8 = d->kq8; a.vq8 = d->vq8;
    a.part = d->part; a.err_flag = d->flag;
    return a;
}

/* float64 attention over the cache as it is after the step (its k/v written) */
static double ref_err(dev *d, step *s, const std::vector<float> &out)
{
    const shape &sh = d->sh;
    const int64_t n = (int64_t)s->slot.size(), kw = (int64_t)sh.Hkv * sh.D;
    const size_t nc = (size_t)kw * sh.n_ctx * sh.n_slots;
    const std::vector<float> kf = cache_floats(d->kc, nc, d->kq8);
    const std::vector<float> vf = cache_floats(d->vc, nc, d->vq8);
    const int gq = sh.H / sh.Hkv;
    double num = 0, den = 0;
#pragma omp parallel for reduction(+ : num, den) schedule(dynamic)
    for (int64_t rh = 0; rh < n * sh.H; rh++) {
        const int64_t r = rh / sh.H;
        const int h = (int)(rh % sh.H), g = h / gq;
        const float *q = &s->q[rh * sh.D];
        const int64_t p = s->pos[r], base = (int64_t)s->slot[r] * sh.n_ctx;
        std::vector<double> sc(p + 1), acc(sh.D, 0.0);
        double mx = -1e300, l = 0;
        for (int64_t t = 0; t <= p; t++) {
            const float *k = &kf[((base + t) * sh.Hkv + g) * sh.D];
            double x = 0;
            for (int i = 0; i < sh.D; i++) x += (double)q[i] * k[i];
            sc[t] = x / sqrt((double)sh.D);
            mx = sc[t] > mx ? sc[t] : mx;
        }
        for (int64_t t = 0; t <= p; t++) {
            const double e = exp(sc[t] - mx);
            const float *v = &vf[((base + t) * sh.Hkv + g) * sh.D];
            l += e;
            for (int i = 0; i < sh.D; i++) acc[i] += e * v[i];
        }
        for (int i = 0; i < sh.D; i++) {
            const double o = acc[i] / l, dlt = out[rh * sh.D + i] - o;
            num += dlt * dlt;
            den += o * o;
        }
    }
    return sqrt(num / (den > 0 ? den : 1));
}

static int g_fail;

/* one step through each algorithm (split with the short path, split
 * without it for decode-sized steps, tiled); the cache is restored by
 * re-running the KV write of the same k/v, so all see the same cache */
static void check(dev *d, const char *name, const std::vector<int32_t> &slot,
                  const std::vector<int32_t> &pos)
{
    step s;
    step_make(&s, d->sh, slot, pos);
    const int64_t n = (int64_t)slot.size();
    for (int alg = 0; alg < 3; alg++) {
        const int tiled = alg == 2, short_max = alg == 0 ? SHORT_MAX : 0;
        if (tiled && !st_kern_attn_tiled_supported(d->sh.D, d->sh.H / d->sh.Hkv, 8))
            continue;
        bool has_short = false;
        for (int32_t p : pos)
            has_short |= p < SHORT_MAX;
        /* else the same kernel path as alg 0 (q8_0 caches never take the short one) */
        if (alg == 1 && (n > 16 || !has_short || d->kq8 || d->vq8))
            continue;
        const int ns = tiled ? 1 : n_split_for(n, d->sh.n_ctx, d->sh.Hkv, d->sm);
        st_kern_attn a = attn_args(d, &s, tiled, ns, short_max);
        CK(cudaMemset(s.dout, 0xff, n * d->sh.H * d->sh.D * 4));   /* NaN: every value written */
        CK(st_kern_attention(&a, 0));
        CK(cudaDeviceSynchronize());
        std::vector<float> out((size_t)n * d->sh.H * d->sh.D);
        CK(cudaMemcpy(out.data(), s.dout, out.size() * 4, cudaMemcpyDeviceToHost));
        const double e = ref_err(d, &s, out);
        const double tol = tiled ? (d->kq8 || d->vq8 ? 1e-3 : 1e-4) : 1e-5;
        unsigned flag;
        CK(cudaMemcpy(&flag, d->flag, 4, cudaMemcpyDeviceToHost));
        const bool ok = e <= tol && flag == 0;
        g_fail |= !ok;
        printf("%-5s H=%2d Hkv=%2d D=%3d %-4s/%-4s %-30s rows %4lld n_split %3d: rel err %.3g "
               "%s\n", tiled ? "tiled" : alg == 0 && !d->kq8 && !d->vq8 ? "short" : "split", d->sh.H, d->sh.Hkv, d->sh.D,
               d->kq8 ? "q8_0" : "f16", d->vq8 ? "q8_0" : "f16", name, (long long)n, ns, e,
               ok ? "ok" : "FAIL");
    }
    step_free(&s);
}

static std::vector<int32_t> iota(int64_t from, int64_t n)
{
    std::vector<int32_t> v(n);
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)(from + i);
    return v;
}

static void cases(shape sh, int kq8 = 0, int vq8 = 0)
{
    dev d;
    dev_open(&d, sh, kq8, vq8);
    check(&d, "chunk of 512 at 0", std::vector<int32_t>(512, 0), iota(0, 512));
    check(&d, "ragged chunk of 333 at 4000", std::vector<int32_t>(333, 1), iota(4000, 333));
    check(&d, "chunk of 17 at 7000", std::vector<int32_t>(17, 2), iota(7000, 17));
    {   /* a chunk of slot 2 with decode rows of slots 0, 1, 3 among its rows */
        std::vector<int32_t> sl(100, 2), po = iota(2000, 100);
        sl[5] = 0; po[5] = 512;
        sl[40] = 1; po[40] = 4333;
        sl[41] = 3; po[41] = 9;
        check(&d, "mixed: chunk + 3 decode rows", sl, po);
    }
    check(&d, "decode: 4 slots 7999/0/4333/100", { 3, 2, 1, 0 }, { 7999, 0, 4333, 100 });
    check(&d, "decode: 1 slot at 8000", { 3 }, { 8000 });
    check(&d, "decode: one chunk 0/30/32/63", { 0, 1, 2, 3 }, { 0, 30, 32, 63 });
    check(&d, "decode: 1 slot at 64", { 2 }, { 64 });
    check(&d, "decode: 1/2/31/33 positions", { 0, 1, 2, 3 }, { 0, 1, 30, 32 });
    check(&d, "decode: 65/200/255/256 positions", { 3, 2, 1, 0 }, { 64, 199, 254, 255 });
    check(&d, "decode: 1 slot at 200", { 1 }, { 200 });
    dev_close(&d);
}

/* a captured decode step replayed with new positions (written before the
 * launch, as the engine does) */
static void graph_check(void)
{
    shape sh = { 32, 4, 128, 8192, 2 };
    dev d;
    dev_open(&d, sh);
    step s;
    step_make(&s, sh, { 0, 1 }, { 10, 20 });
    st_kern_attn a = attn_args(&d, &s, 0, n_split_for(2, sh.n_ctx, sh.Hkv, d.sm), SHORT_MAX);
    cudaStream_t st;
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamCreate(&st));
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    CK(st_kern_attention(&a, st));
    CK(cudaStreamEndCapture(st, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    const int32_t ps[4][2] = { { 10, 20 }, { 255, 256 }, { 5000, 21 }, { 8191, 3000 } };
    for (int i = 0; i < 4; i++) {
        s.pos = { ps[i][0], ps[i][1] };
        CK(cudaMemcpyAsync(s.dpos, s.pos.data(), 8, cudaMemcpyHostToDevice, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaStreamSynchronize(st));
        std::vector<float> out((size_t)2 * sh.H * sh.D);
        CK(cudaMemcpy(out.data(), s.dout, out.size() * 4, cudaMemcpyDeviceToHost));
        const double e = ref_err(&d, &s, out);
        g_fail |= !(e <= 1e-5);
        printf("graph replay %d at %d/%d: rel err %.3g %s\n", i, ps[i][0], ps[i][1], e,
               e <= 1e-5 ? "ok" : "FAIL");
    }
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(gr);
    cudaStreamDestroy(st);
    step_free(&s);
    dev_close(&d);
}

static float time_ms(dev *d, step *s, int tiled, int ns, int short_max)
{
    st_kern_attn a = attn_args(d, s, tiled, ns, short_max);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(st_kern_attention(&a, 0));                  /* warm-up */
    CK(cudaEventRecord(e0));
    for (int i = 0; i < 10; i++)
        CK(st_kern_attention(&a, 0));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms / 10;
}

/* the A3B shape: a 512-row prompt chunk at depth N, and decode rows at
 * depths 32 .. 32K (1 and 4 rows, 4 slots: rows at N, N+1, ...) */
static void speed(void)
{
    shape sh = { 32, 4, 128, 32768 + 512, 4 };
    dev d;
    dev_open(&d, sh);
    const int64_t depths[] = { 0, 4096, 16384, 32768 };
    for (int64_t dp : depths) {
        step s;
        step_make(&s, sh, std::vector<int32_t>(512, 0), iota(dp, 512));
        const float tt = time_ms(&d, &s, 1, 1, 0), ts = time_ms(&d, &s, 0, 1, 0);
        printf("speed: prompt chunk 512 at depth %6lld: tiled %8.3f ms, split (one chunk a row) "
               "%8.3f ms\n", (long long)dp, tt, ts);
        step_free(&s);
    }
    /* decode: n_pos = depth + 1 (short: one chunk a row, the split block
     * writes the output; deep: several chunks and the merge) */
    const int64_t ddepths[] = { 32, 512, 4096, 16384, 32768 };
    for (int rows = 1; rows <= 4; rows *= 4) {
        for (int64_t dp : ddepths) {
            step s;
            std::vector<int32_t> sl, po;
            for (int r = 0; r < rows; r++) { sl.push_back(r); po.push_back((int32_t)dp + r); }
            step_make(&s, sh, sl, po);
            const int ns = n_split_for(rows, sh.n_ctx, sh.Hkv, d.sm);
            const float t1 = time_ms(&d, &s, 0, 1, 0), tn = time_ms(&d, &s, 0, ns, SHORT_MAX);
            printf("speed: decode %d row(s) at depth %6lld: n_split 1 %8.3f ms, n_split %3d "
                   "%8.3f ms\n", rows, (long long)dp, t1, ns, tn);
            step_free(&s);
        }
    }
    /* the cache types at depth 16K: decode (1 and 4 rows) and a 512-row
     * chunk, f16 against q8_0 (K and V): the bytes read are 34/64 */
    dev q;
    dev_open(&q, sh, 1, 1);
    for (int rows = 1; rows <= 4; rows *= 4) {
        step s;
        std::vector<int32_t> sl, po;
        for (int r = 0; r < rows; r++) { sl.push_back(r); po.push_back(16384 + r); }
        step_make(&s, sh, sl, po);
        const int ns = n_split_for(rows, sh.n_ctx, sh.Hkv, d.sm);
        const float tf = time_ms(&d, &s, 0, ns, 0), tq = time_ms(&q, &s, 0, ns, 0);
        printf("speed: kv types: decode %d row(s) at depth 16384, n_split %3d: f16 %8.3f ms, "
               "q8_0 %8.3f ms\n", rows, ns, tf, tq);
        step_free(&s);
    }
    {
        step s;
        step_make(&s, sh, std::vector<int32_t>(512, 0), iota(16384, 512));
        const float tf = time_ms(&d, &s, 1, 1, 0), tq = time_ms(&q, &s, 1, 1, 0);
        printf("speed: kv types: prompt chunk 512 at depth 16384, tiled: f16 %8.3f ms, q8_0 "
               "%8.3f ms\n", tf, tq);
        step_free(&s);
    }
    dev_close(&q);
    /* the short path against the split kernel's old decode path at short
     * depths (row r of the step has depth + r positions): the A/B of
     * STRATA_CUDA_ATTN_SHORT, and where the bound SHORT_MAX should sit */
    const int64_t sdepths[] = { 16, 32, 63, 200, 256, 512, 1024 };
    for (int rows = 1; rows <= 4; rows *= 4) {
        for (int64_t dp : sdepths) {
            step s;
            std::vector<int32_t> sl, po;
            for (int r = 0; r < rows; r++) { sl.push_back(r); po.push_back((int32_t)dp - 1 + r); }
            step_make(&s, sh, sl, po);
            const int ns = n_split_for(rows, sh.n_ctx, sh.Hkv, d.sm);
            const float t_old = time_ms(&d, &s, 0, ns, 0);
            const float t_short = time_ms(&d, &s, 0, ns, 1 << 20);
            printf("speed: short A/B %d row(s) of %5lld positions: old %7.4f ms, short %7.4f ms "
                   "(%.2fx)\n", rows, (long long)dp, t_old, t_short, t_old / t_short);
            step_free(&s);
        }
    }
    dev_close(&d);
}

int main(int argc, char **argv)
{
    const shape shapes[] = {
        { 32, 4, 128, 8192, 4 },    /* A3B: GQA 8 */
        { 16, 4, 128, 8192, 4 },    /* GQA 4 */
        { 16, 16, 64, 8192, 4 },    /* GQA 1 */
        { 8, 2, 256, 8192, 4 },     /* D 256 */
        { 12, 4, 80, 8192, 4 },     /* GQA 3, D 80 */
        { 4, 2, 16, 8192, 4 },      /* the tiny preset */
        { 32, 2, 64, 8192, 4 },     /* GQA 16 */
    };
    for (const shape &sh : shapes)
        cases(sh);
    /* Q8_0 caches: head dims 128, 64, 256; GQA 8, 4, 1; K or V alone */
    cases(shapes[0], 1, 1);
    cases(shapes[1], 1, 0);
    cases(shapes[2], 0, 1);
    cases(shapes[3], 1, 1);
    graph_check();
    if (argc < 2 || strcmp(argv[1], "--no-speed") != 0)
        speed();
    printf("%s\n", g_fail ? "FAILED" : "all ok");
    return g_fail;
}
