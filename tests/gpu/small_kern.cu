/* small_kern.cu -- the small per-layer decode kernels on a real GPU, alone
 * (no backend): RMSNorm (plain, add + q8_1 epilogue), the fused per-head
 * norm + rope, the MoE router, grouping and combine, and quantize_q8_1, at
 * the a3b shape (hidden 2048, 32 q / 4 kv heads of 128, 128 experts top 8)
 * for 1 and 4 rows. Correctness is tests/unit/test_cuda_ops.c's job (on
 * tests/cuemu and here under ctest); this prints only times:
 *
 *   nvcc -std=c++17 -O2 -arch=sm_90 -Ikernels -Iinclude kernels/norm.cu \
 *        kernels/rope.cu kernels/moe.cu kernels/quantize.cu \
 *        tests/gpu/small_kern.cu -o small_kern && ./small_kern
 *
 * Each line: the time per launch of 50 launches of one kernel captured in
 * a CUDA graph and replayed (what a graphed decode step pays: the kernel's
 * latency plus the gap to the next), and eagerly launched back to back.
 */
#include <stdio.h>
#include <stdlib.h>

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

#define REPS 50
#define E 2048
#define HD 128
#define NQ 32
#define NKV 4
#define NX 128
#define K 8

struct bufs {
    float *x, *add, *w, *out, *q, *k, *logits, *wts, *yd, *moe_out;
    int32_t *pos, *sel, *groups, *pair_row, *pair_of;
    uint8_t *q8;
    unsigned *err;
    struct st_rope_params rope;
};

static float *dev_floats(size_t n, float scale)
{
    float *h = (float *)malloc(n * sizeof(float)), *d;
    unsigned long long s = 88172645463325252ull + n;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = scale * ((float)(s % 20001) / 10000.0f - 1.0f);
    }
    CK(cudaMalloc(&d, n * sizeof(float)));
    CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static void one(int which, int n, struct bufs *b, cudaStream_t st)
{
    switch (which) {
    case 0:
        CK(st_kern_rms_norm_ex(b->out, b->x, b->add, b->w, n, E, 1e-6f, b->q8,
                               st_kern_q8_1_row_bytes(E), st));
        break;
    case 1:
        CK(st_kern_rms_norm(b->out, b->x, b->w, n, E, 1e-6f, st));
        break;
    case 2:
        CK(st_kern_rms_norm_rope(b->q, b->q, b->w, b->pos, n, NQ * HD, HD, &b->rope, 1e-6f,
                                 b->err, st));
        break;
    case 3:
        CK(st_kern_rms_norm_rope(b->k, b->k, b->w, b->pos, n, NKV * HD, HD, &b->rope, 1e-6f,
                                 b->err, st));
        break;
    case 4:
        CK(st_kern_moe_route(b->sel, b->wts, b->logits, n, NX, K, false, NULL, true, 1.0f, st));
        break;
    case 5:
        CK(st_kern_moe_group(b->groups, b->pair_row, b->pair_of, b->sel, n, K, NX,
                             n * K < NX ? n * K : NX, b->err, st));
        break;
    case 6:
        CK(st_kern_moe_combine(b->moe_out, b->yd, b->wts, b->pair_of, n, K, E, st));
        break;
    default:
        CK(st_kern_quantize_q8_1(b->q8, st_kern_q8_1_row_bytes(E), b->out, E, n, st));
        break;
    }
}

static const char *const names[] = { "rms_norm_ex add+q8_1", "rms_norm", "rms_norm_rope q",
                                     "rms_norm_rope k", "moe_route softmax", "moe_group",
                                     "moe_combine", "quantize_q8_1" };

int main(void)
{
    struct bufs b;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    b.x = dev_floats(4 * E, 1.0f);
    b.add = dev_floats(4 * E, 1e-3f);
    b.w = dev_floats(E, 1.0f);
    b.out = dev_floats(4 * E, 1.0f);
    b.q = dev_floats(4 * NQ * HD, 1.0f);
    b.k = dev_floats(4 * NKV * HD, 1.0f);
    b.logits = dev_floats(4 * NX, 2.0f);
    b.wts = dev_floats(4 * K, 1.0f);
    b.yd = dev_floats(4 * K * E, 1.0f);
    b.moe_out = dev_floats(4 * E, 1.0f);
    CK(cudaMalloc(&b.pos, 4 * sizeof(int32_t)));
    CK(cudaMemset(b.pos, 0, 4 * sizeof(int32_t)));
    CK(cudaMalloc(&b.sel, 4 * K * sizeof(int32_t)));
    CK(cudaMalloc(&b.groups, (2 + 2 * NX) * sizeof(int32_t)));
    CK(cudaMalloc(&b.pair_row, 4 * K * sizeof(int32_t)));
    CK(cudaMalloc(&b.pair_of, 4 * K * sizeof(int32_t)));
    CK(cudaMalloc(&b.q8, 4 * st_kern_q8_1_row_bytes(E)));
    CK(cudaMalloc(&b.err, sizeof(unsigned)));
    b.rope = st_rope_params_init(HD, 1e6f, 1.0f, 0.0f, 1.0f, 0, 32.0f, 1.0f);

    for (int n = 1; n <= 4; n *= 4) {
        one(4, n, &b, st);                /* sel, then pair_of, for the combine */
        one(5, n, &b, st);
        CK(cudaStreamSynchronize(st));
        for (int which = 0; which < 8; which++) {
            cudaGraph_t g;
            cudaGraphExec_t ge;
            cudaEvent_t e0, e1;
            float ms_g, ms_e;
            CK(cudaEventCreate(&e0));
            CK(cudaEventCreate(&e1));
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
            for (int r = 0; r < REPS; r++)
                one(which, n, &b, st);
            CK(cudaStreamEndCapture(st, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            CK(cudaGraphLaunch(ge, st));          /* warm-up */
            CK(cudaEventRecord(e0, st));
            for (int t = 0; t < 10; t++)
                CK(cudaGraphLaunch(ge, st));
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms_g, e0, e1));
            CK(cudaEventRecord(e0, st));
            for (int t = 0; t < 10 * REPS; t++)
                one(which, n, &b, st);
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms_e, e0, e1));
            printf("speed: %-22s np=%d: %6.2f us graphed, %6.2f us eager\n", names[which], n,
                   ms_g * 1e3 / (10 * REPS), ms_e * 1e3 / (10 * REPS));
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
            CK(cudaEventDestroy(e0));
            CK(cudaEventDestroy(e1));
        }
    }
    return 0;
}
