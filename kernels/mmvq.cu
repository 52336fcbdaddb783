/* mmvq.cu -- matrix-vector and small-batch matmul: y[p, o] = x[p, :] . W[o, :].
 *
 * Mapping. A block is 128 threads. TPR threads (8 or 32, a power of two
 * dividing the warp) share one weight row o, so a block covers 128/TPR
 * consecutive rows: o = blockIdx.x * (128/TPR) + threadIdx.x / TPR. The
 * TPR lanes of a row walk its items (quant_dev.cuh: 32 or 64 elements of
 * one block) with stride TPR, so a warp reads contiguous bytes of one or
 * several rows. Each item is decoded ONCE into registers and dotted with
 * up to NX = 8 activation rows (dp4a on q8_1), which is what makes a batch
 * of decode rows cost about one pass over the weights. Partial sums are
 * reduced across the TPR lanes with shuffles; lane 0 stores.
 * blockIdx.y is the expert group in grouped mode (MoE): group g's rows are
 * [start, end) of the sorted pairs and its weight is the expert's slab;
 * blocks of groups beyond the live count exit at once (the grid is sized
 * for the worst case so it never depends on data: CUDA-graph safe).
 *
 * Rows beyond NX are handled by looping over chunks of NX rows (the
 * weights come from L1/L2 again); the backend only sends dense matmuls of
 * at most ST_CUDA_MMV_MAX_ROWS rows here, larger ones go to cuBLAS.
 *
 * Layout assumed: weight rows of w_row_bytes, dense; q8_1 rows as in
 * kernels.h (quants then (d, s) pairs), 16-byte aligned; f32 rows for the
 * float weight types (F32/F16/BF16 weights are dotted in float, 8 elements
 * per item, 16/32-byte loads).
 */
#include "quant_dev.cuh"

#define MMV_THREADS 128
#define MMV_NX 8

struct mmv_rows {
    int64_t p0, p1;           /* output rows [p0, p1) of this block's group */
    const uint8_t *w, *w2;    /* this group's weight (slab) */
};

/* The group of this block, or false when the block has nothing to do. */
static __device__ __forceinline__ bool mmv_group(const st_kern_mmv_args &a, mmv_rows &r)
{
    r.w = (const uint8_t *)a.w;
    r.w2 = (const uint8_t *)a.w2;
    if (!a.groups) {
        r.p0 = 0;
        r.p1 = a.n_rows;
        return true;
    }
    int g = blockIdx.y;
    if (g >= a.groups[0])
        return false;
    int64_t e = a.groups[1 + g];
    r.p0 = a.groups[1 + a.max_groups + g];
    r.p1 = a.groups[2 + a.max_groups + g];
    r.w += (size_t)e * a.w_slab_bytes;
    if (r.w2)
        r.w2 += (size_t)e * a.w_slab_bytes;
    return true;
}

static __device__ __forceinline__ const uint8_t *mmv_xrow(const st_kern_mmv_args &a, int64_t p)
{
    int64_t xr = a.x_rows ? a.x_rows[p] : p;
    return (const uint8_t *)a.x + (size_t)xr * a.x_stride;
}

static __device__ __forceinline__ float mmv_silu(float g)
{
    return g / (1.0f + expf(-g));
}

/* Reduce and store the NX sums of one chunk (all lanes call it). */
template <int TPR, bool GLU>
static __device__ __forceinline__ void mmv_store(const st_kern_mmv_args &a, const float *acc,
                                                 const float *acc2, int cnt, int64_t p,
                                                 int64_t o, bool live, int lane)
{
#pragma unroll
    for (int j = 0; j < MMV_NX; j++) {
        if (j < cnt) {
            float v = kq_group_sum<TPR>(acc[j]);
            float v2 = GLU ? kq_group_sum<TPR>(acc2[j]) : 0.0f;
            if (lane == 0 && live)
                a.y[(p + j) * a.y_stride + o] = GLU ? mmv_silu(v) * v2 : v;
        }
    }
}

template <int T, int TPR, bool GLU>
static __global__ void __launch_bounds__(MMV_THREADS) mmv_quant(const st_kern_mmv_args a)
{
    typedef kq<T> K;
    mmv_rows g;
    if (!mmv_group(a, g))
        return;
    const int lane = threadIdx.x % TPR;
    int64_t o = (int64_t)blockIdx.x * (MMV_THREADS / TPR) + threadIdx.x / TPR;
    const bool live = o < a.n_out;
    if (!live)
        o = a.n_out - 1;     /* compute a duplicate so every lane joins the shuffles */
    const uint8_t *wr = g.w + (size_t)o * a.w_row_bytes;
    const uint8_t *wr2 = GLU ? g.w2 + (size_t)o * a.w_row_bytes : nullptr;
    const int n_items = (int)(a.n_in / K::IE);

    for (int64_t p = g.p0; p < g.p1; p += MMV_NX) {
        const int cnt = (int)min((int64_t)MMV_NX, g.p1 - p);
        const uint8_t *xr[MMV_NX];
        float acc[MMV_NX], acc2[MMV_NX];
#pragma unroll
        for (int j = 0; j < MMV_NX; j++) {
            xr[j] = j < cnt ? mmv_xrow(a, p + j) : nullptr;
            acc[j] = 0.0f;
            acc2[j] = 0.0f;
        }
        for (int it = lane; it < n_items; it += TPR) {
            const int blk = it / K::NI, sub = it % K::NI;
            typename K::W wv, wv2;
            K::load(wr + (size_t)blk * K::BB, sub, wv);
            if (GLU)
                K::load(wr2 + (size_t)blk * K::BB, sub, wv2);
#pragma unroll
            for (int j = 0; j < MMV_NX; j++) {
                if (j < cnt) {
                    int xi[K::IE / 4];   /* q8_1 rows: 16-byte aligned, IE a multiple of 32 */
                    kq_load_ints16<K::IE / 4>(xr[j] + (size_t)it * K::IE, xi);
                    const float2 *ds =
                        (const float2 *)(xr[j] + a.n_in) + (size_t)it * (K::IE / 32);
                    acc[j] += K::dot(wv, xi, ds);
                    if (GLU)
                        acc2[j] += K::dot(wv2, xi, ds);
                }
            }
        }
        mmv_store<TPR, GLU>(a, acc, acc2, cnt, p, o, live, lane);
    }
}

/* 8 float weights of type T at element 8*it of row wr. */
template <int T>
static __device__ __forceinline__ void mmv_load8(const uint8_t *wr, int64_t it, float *w)
{
    if (T == ST_DTYPE_F32) {
        const float4 *p = (const float4 *)(wr + (size_t)it * 32);
        float4 a = p[0], b = p[1];
        w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w;
        w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
    } else {
        uint4 v = *(const uint4 *)(wr + (size_t)it * 16);
        uint32_t u[4] = { v.x, v.y, v.z, v.w };
#pragma unroll
        for (int k = 0; k < 4; k++) {
            uint16_t lo = (uint16_t)(u[k] & 0xffff), hi = (uint16_t)(u[k] >> 16);
            w[2 * k] = T == ST_DTYPE_F16 ? kq_h2f(lo) : kq_bf2f(lo);
            w[2 * k + 1] = T == ST_DTYPE_F16 ? kq_h2f(hi) : kq_bf2f(hi);
        }
    }
}

static __device__ __forceinline__ float mmv_dot8(const float *w, const float *x)
{
    float4 a = ((const float4 *)x)[0], b = ((const float4 *)x)[1];
    return w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w + w[4] * b.x + w[5] * b.y +
           w[6] * b.z + w[7] * b.w;
}

/* Float weights, f32 activations; n_in % 8 == 0 (the launcher checks). */
template <int T, int TPR, bool GLU>
static __global__ void __launch_bounds__(MMV_THREADS) mmv_float(const st_kern_mmv_args a)
{
    mmv_rows g;
    if (!mmv_group(a, g))
        return;
    const int lane = threadIdx.x % TPR;
    int64_t o = (int64_t)blockIdx.x * (MMV_THREADS / TPR) + threadIdx.x / TPR;
    const bool live = o < a.n_out;
    if (!live)
        o = a.n_out - 1;
    const uint8_t *wr = g.w + (size_t)o * a.w_row_bytes;
    const uint8_t *wr2 = GLU ? g.w2 + (size_t)o * a.w_row_bytes : nullptr;
    const int64_t n_items = a.n_in / 8;

    for (int64_t p = g.p0; p < g.p1; p += MMV_NX) {
        const int cnt = (int)min((int64_t)MMV_NX, g.p1 - p);
        const float *xr[MMV_NX];
        float acc[MMV_NX], acc2[MMV_NX];
#pragma unroll
        for (int j = 0; j < MMV_NX; j++) {
            xr[j] = j < cnt ? (const float *)mmv_xrow(a, p + j) : nullptr;
            acc[j] = 0.0f;
            acc2[j] = 0.0f;
        }
        for (int64_t it = lane; it < n_items; it += TPR) {
            float w[8], w2[8];
            mmv_load8<T>(wr, it, w);
            if (GLU)
                mmv_load8<T>(wr2, it, w2);
#pragma unroll
            for (int j = 0; j < MMV_NX; j++) {
                if (j < cnt) {
                    acc[j] += mmv_dot8(w, xr[j] + it * 8);
                    if (GLU)
                        acc2[j] += mmv_dot8(w2, xr[j] + it * 8);
                }
            }
        }
        mmv_store<TPR, GLU>(a, acc, acc2, cnt, p, o, live, lane);
    }
}

/* Elements per item of a type (8 for the float kernel). */
static int mmv_item_elems(int type)
{
    switch (type) {
    case ST_DTYPE_F32: case ST_DTYPE_F16: case ST_DTYPE_BF16: return 8;
#define MMV_IE(T) case T: return kq<T>::IE;
    KQ_QUANT_TYPES(MMV_IE)
#undef MMV_IE
    default: return 0;
    }
}

extern "C" bool st_kern_mmv_supported(int type, int64_t n_in)
{
    int ie = mmv_item_elems(type);
    return ie > 0 && n_in > 0 && n_in % ie == 0 && (ie == 8 || n_in % 32 == 0);
}

extern "C" bool st_kern_mmv_quantized(int type)
{
    return type != ST_DTYPE_F32 && type != ST_DTYPE_F16 && type != ST_DTYPE_BF16;
}

template <int T, int TPR>
static void mmv_launch(const st_kern_mmv_args &a, dim3 grid, cudaStream_t s)
{
    if (a.w2)
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_float<T, TPR, true>)(a);
    else
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_float<T, TPR, false>)(a);
}

template <int T, int TPR>
static void mmq_launch(const st_kern_mmv_args &a, dim3 grid, cudaStream_t s)
{
    if (a.w2)
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_quant<T, TPR, true>)(a);
    else
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_quant<T, TPR, false>)(a);
}

extern "C" cudaError_t st_kern_mmv(const struct st_kern_mmv_args *a, cudaStream_t stream)
{
    if (!st_kern_mmv_supported(a->type, a->n_in) || a->n_out < 1 ||
        (a->groups && a->max_groups < 1) || (!a->groups && a->n_rows < 1))
        return cudaErrorInvalidValue;
    const int64_t n_items = a->n_in / mmv_item_elems(a->type);
    const int tpr = n_items >= 32 ? 32 : 8;
    dim3 grid(kq_cdiv(a->n_out, MMV_THREADS / tpr), a->groups ? (unsigned)a->max_groups : 1u);
    if (grid.y > 65535)
        return cudaErrorInvalidValue;

    switch (a->type) {
#define MMV_CASE_F(T)                                         \
    case T:                                                   \
        if (tpr == 32)                                        \
            mmv_launch<T, 32>(*a, grid, stream);              \
        else                                                  \
            mmv_launch<T, 8>(*a, grid, stream);               \
        break;
        KQ_FLOAT_TYPES(MMV_CASE_F)
#undef MMV_CASE_F
#define MMV_CASE_Q(T)                                         \
    case T:                                                   \
        if (tpr == 32)                                        \
            mmq_launch<T, 32>(*a, grid, stream);              \
        else                                                  \
            mmq_launch<T, 8>(*a, grid, stream);               \
        break;
        KQ_QUANT_TYPES(MMV_CASE_Q)
#undef MMV_CASE_Q
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
