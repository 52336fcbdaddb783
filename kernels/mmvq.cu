/* mmvq.cu -- matrix-vector and small-batch matmul: y[p, o] = x[p, :] . W[o, :].
 *
 * Mapping. A block is 128 threads. TPR threads (8 or 32, a power of two
 * dividing the warp) share R weight rows (R = 1 or 2), so a block covers
 * R * 128/TPR consecutive rows: o = (blockIdx.x * (128/TPR) + threadIdx.x
 * / TPR) * R + r. The TPR lanes of a row group walk its items
 * (quant_dev.cuh: 32 or 64 elements of one block) with stride TPR, so a
 * warp reads contiguous bytes of one or several rows. Each item is decoded
 * ONCE into registers and dotted with a chunk of NX = 1, 4 or 8 activation
 * rows (dp4a on q8_1), which is what makes a batch of decode rows cost
 * about one pass over the weights. Partial sums are reduced across the TPR
 * lanes with shuffles; lane 0 stores.
 * blockIdx.y is the expert group in grouped mode (MoE): group g's rows are
 * [start, end) of the sorted pairs and its weight is the expert's slab;
 * blocks of groups beyond the live count exit at once (the grid is sized
 * for the worst case so it never depends on data: CUDA-graph safe).
 * Multi mode (n_parts 2..3, dense): the blocks of each further matrix
 * follow those of the one before (blockIdx.x - the parts' blocks before
 * it), so wq, wk and wv of one x fill one grid: a 512-row wk alone is 128
 * blocks, fewer than the SMs. A block never straddles two matrices, and
 * each output's sum is the one a launch of its matrix alone computes.
 *
 * Memory-level parallelism (decode is latency-bound: a 512 x 2048 Q4_K
 * matrix is 0.6 MB, less than the H200 needs in flight to reach its
 * bandwidth): NX and R are template parameters, so every load of an item
 * (R weight items, NX activation items; rows past the end repeat the last
 * one and are not stored) is unconditional and issued before the first
 * dot, instead of one activation row's load per branch of a loop over a
 * run-time count; NX = 1 at np 1 keeps the registers (and so the warps per
 * SM) of the common case low. R = 2 halves the activation reads (L1) per
 * weight byte at np 4 and doubles a warp's weight bytes in flight; the
 * launcher takes it only when the grid keeps >= 256 blocks. The sum of one
 * output takes its items in the same order whatever NX and R are, so the
 * results do not depend on them (nor on the row count of a launch).
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
/* Blocks per SM the register allocation must allow: without it ptxas
 * (CUDA 13, sm_90) capped the kernels at 80-128 registers and spilled;
 * at np 1 (NX = 1, <= 128 registers: 16 warps an SM) the weight loads
 * are what must be in flight, at NX 4/8 the activation items too. */
#define MMV_MIN_BLOCKS(NX) ((NX) == 1 ? 4 : 2)

struct mmv_rows {
    int64_t p0, p1;           /* output rows [p0, p1) of this block's group */
    const uint8_t *w, *w2;    /* this group's weight (slab) */
    float *y;                 /* this block's matrix's outputs (multi mode: its part's) */
    int64_t y_stride, n_out;
    int64_t bx;               /* the block's index within its matrix's blocks */
};

/* The group (and in multi mode the part) of this block, or false when the
 * block has nothing to do. RPB: weight rows a block covers. */
template <int RPB>
static __device__ __forceinline__ bool mmv_group(const st_kern_mmv_args &a, mmv_rows &r)
{
    r.w = (const uint8_t *)a.w;
    r.w2 = (const uint8_t *)a.w2;
    r.y = a.y;
    r.y_stride = a.y_stride;
    r.n_out = a.n_out;
    r.bx = blockIdx.x;
    for (int i = 0; i + 1 < a.n_parts; i++) {
        const int64_t nb = (r.n_out + RPB - 1) / RPB;
        if (r.bx < nb)
            break;
        r.bx -= nb;
        r.w = (const uint8_t *)a.part_w[i];
        r.y = a.part_y[i];
        r.y_stride = a.part_y_stride[i];
        r.n_out = a.part_n_out[i];
    }
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

/* Reduce and store the sums of the first cnt of NX rows (all lanes call it). */
template <int TPR, int NX, bool GLU>
static __device__ __forceinline__ void mmv_store(const mmv_rows &g, const float *acc,
                                                 const float *acc2, int cnt, int64_t p,
                                                 int64_t o, bool live, int lane)
{
#pragma unroll
    for (int j = 0; j < NX; j++) {
        if (j < cnt) {
            float v = kq_group_sum<TPR>(acc[j]);
            float v2 = GLU ? kq_group_sum<TPR>(acc2[j]) : 0.0f;
            if (lane == 0 && live)
                g.y[(p + j) * g.y_stride + o] = GLU ? mmv_silu(v) * v2 : v;
        }
    }
}

/* The NX activation rows of the chunk at p; rows past the group's end
 * repeat its last row (computed, never stored), so every load of the
 * unrolled loops below is unconditional and can be in flight at once. */
template <int NX>
static __device__ __forceinline__ void mmv_xrows(const st_kern_mmv_args &a, int64_t p, int cnt,
                                                 const uint8_t **xr)
{
#pragma unroll
    for (int j = 0; j < NX; j++)
        xr[j] = mmv_xrow(a, p + (j < cnt ? j : cnt - 1));
}

/* R rows per lane group: row o0 + r of the group's TPR lanes. Rows past
 * n_out repeat the last row (lanes join the shuffles, nothing is stored). */
template <int R>
static __device__ __forceinline__ void mmv_rows_of(const mmv_rows &g, int tpr, int64_t *o,
                                                   bool *live)
{
    const int64_t o0 = (g.bx * (MMV_THREADS / tpr) + threadIdx.x / tpr) * R;
#pragma unroll
    for (int r = 0; r < R; r++) {
        o[r] = o0 + r;
        live[r] = o[r] < g.n_out;
        if (!live[r])
            o[r] = g.n_out - 1;
    }
}

/* One item 'it' of R weight rows dotted with NX activation rows: all the
 * item's loads (R weight items, NX activation items) are issued before the
 * first dot, and each activation item is reused for the R rows. The sums
 * of an output (o, p) still take its items in the order it = lane,
 * lane + TPR, ... whatever R and NX are: the result does not depend on them. */
template <int T, int NX, int R, bool GLU>
static __device__ __forceinline__ void mmv_item(const st_kern_mmv_args &a,
                                                const uint8_t *const *wr,
                                                const uint8_t *const *wr2,
                                                const uint8_t *const *xr, int it,
                                                float (*acc)[NX], float (*acc2)[NX])
{
    typedef kq<T> K;
    const int blk = it / K::NI, sub = it % K::NI;
    typename K::W wv[R], wv2[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        K::load(wr[r] + (size_t)blk * K::BB, sub, wv[r]);
        if (GLU)
            K::load(wr2[r] + (size_t)blk * K::BB, sub, wv2[r]);
    }
#pragma unroll
    for (int j = 0; j < NX; j++) {
        int xi[K::IE / 4];   /* q8_1 rows: 16-byte aligned, IE a multiple of 32 */
        float2 ds[K::IE / 32];
        kq_load_ints16<K::IE / 4>(xr[j] + (size_t)it * K::IE, xi);
        const float2 *d = (const float2 *)(xr[j] + a.n_in) + (size_t)it * (K::IE / 32);
#pragma unroll
        for (int k = 0; k < K::IE / 32; k++)
            ds[k] = d[k];
#pragma unroll
        for (int r = 0; r < R; r++) {
            acc[r][j] += K::dot(wv[r], xi, ds);
            if (GLU)
                acc2[r][j] += K::dot(wv2[r], xi, ds);
        }
    }
}

/* q8_1 activations; NX rows per chunk, R weight rows per lane group. */
template <int T, int TPR, int NX, int R, bool GLU>
static __global__ void __launch_bounds__(MMV_THREADS, MMV_MIN_BLOCKS(NX)) mmv_quant(const st_kern_mmv_args a)
{
    typedef kq<T> K;
    mmv_rows g;
    if (!mmv_group<R * (MMV_THREADS / TPR)>(a, g))
        return;
    const int lane = threadIdx.x % TPR;
    int64_t o[R];
    bool live[R];
    mmv_rows_of<R>(g, TPR, o, live);
    const uint8_t *wr[R], *wr2[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        wr[r] = g.w + (size_t)o[r] * a.w_row_bytes;
        wr2[r] = GLU ? g.w2 + (size_t)o[r] * a.w_row_bytes : nullptr;
    }
    const int n_items = (int)(a.n_in / K::IE);

    for (int64_t p = g.p0; p < g.p1; p += NX) {
        const int cnt = (int)min((int64_t)NX, g.p1 - p);
        const uint8_t *xr[NX];
        mmv_xrows<NX>(a, p, cnt, xr);
        float acc[R][NX], acc2[R][NX];
#pragma unroll
        for (int r = 0; r < R; r++) {
#pragma unroll
            for (int j = 0; j < NX; j++)
                acc[r][j] = acc2[r][j] = 0.0f;
        }
        for (int it = lane; it < n_items; it += TPR)
            mmv_item<T, NX, R, GLU>(a, wr, wr2, xr, it, acc, acc2);
#pragma unroll
        for (int r = 0; r < R; r++)
            mmv_store<TPR, NX, GLU>(g, acc[r], acc2[r], cnt, p, o[r], live[r], lane);
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

/* Float weights, f32 activations; n_in % 8 == 0 (the launcher checks).
 * The item loop is unrolled (by 4 at NX 1, 2 at NX 4: the registers of
 * more spill) so that a lane has several items' loads in flight (a 128 x
 * 2048 router is 8 items a lane: otherwise 8 round trips); the sums still
 * take the items in order. */
template <int T, int TPR, int NX, bool GLU>
static __global__ void __launch_bounds__(MMV_THREADS, 2) mmv_float(const st_kern_mmv_args a)
{
    mmv_rows g;
    if (!mmv_group<MMV_THREADS / TPR>(a, g))
        return;
    const int lane = threadIdx.x % TPR;
    int64_t o;
    bool live;
    mmv_rows_of<1>(g, TPR, &o, &live);
    const uint8_t *wr = g.w + (size_t)o * a.w_row_bytes;
    const uint8_t *wr2 = GLU ? g.w2 + (size_t)o * a.w_row_bytes : nullptr;
    const int64_t n_items = a.n_in / 8;

    for (int64_t p = g.p0; p < g.p1; p += NX) {
        const int cnt = (int)min((int64_t)NX, g.p1 - p);
        const uint8_t *xb[NX];
        mmv_xrows<NX>(a, p, cnt, xb);
        float acc[NX], acc2[NX];
#pragma unroll
        for (int j = 0; j < NX; j++)
            acc[j] = acc2[j] = 0.0f;
#pragma unroll(NX == 1 ? 4 : NX == 4 ? 2 : 1)
        for (int64_t it = lane; it < n_items; it += TPR) {
            float w[8], w2[8];
            mmv_load8<T>(wr, it, w);
            if (GLU)
                mmv_load8<T>(wr2, it, w2);
#pragma unroll
            for (int j = 0; j < NX; j++) {
                const float *x = (const float *)xb[j] + it * 8;
                acc[j] += mmv_dot8(w, x);
                if (GLU)
                    acc2[j] += mmv_dot8(w2, x);
            }
        }
        mmv_store<TPR, NX, GLU>(g, acc, acc2, cnt, p, o, live, lane);
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

/* The chunk of activation rows a kernel takes at once: 1, 4 or 8 (rows
 * past the end are computed and dropped), from the host's bound on the
 * rows of a launch (a group's rows in grouped mode; 0 = unknown). */
static int mmv_nx(int64_t rows)
{
    return rows == 1 ? 1 : rows >= 1 && rows <= 4 ? 4 : MMV_NX;
}

/* Weight rows per lane group: 2 when the grid still has >= 256 blocks
 * (2 rows double the bytes a warp has in flight and halve the activation
 * reads), else 1 so that small matrices (512 rows) spread over the SMs.
 * The fused gate/up already reads two rows; 8 activation rows fill the
 * registers. */
/* Blocks of a dense launch of rpb weight rows a block: every part's own,
 * one after the other (mmv_group). */
static int64_t mmv_blocks(const st_kern_mmv_args &a, int64_t rpb)
{
    int64_t b = kq_cdiv(a.n_out, rpb);
    for (int i = 0; i + 1 < a.n_parts; i++)
        b += kq_cdiv(a.part_n_out[i], rpb);
    return b;
}

static int mmv_r(const st_kern_mmv_args &a, int tpr, int nx)
{
    if (a.w2 || nx > 4)
        return 1;
    int64_t blocks = mmv_blocks(a, 2 * (MMV_THREADS / tpr)) * (a.groups ? a.max_groups : 1);
    return blocks >= 256 ? 2 : 1;
}

template <int T, int TPR, int NX>
static void mmv_launch_nx(const st_kern_mmv_args &a, dim3 grid, cudaStream_t s)
{
    if (a.w2)
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_float<T, TPR, NX, true>)(a);
    else
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_float<T, TPR, NX, false>)(a);
}

template <int T, int TPR>
static void mmv_launch(const st_kern_mmv_args &a, int nx, cudaStream_t s)
{
    dim3 grid((unsigned)mmv_blocks(a, MMV_THREADS / TPR), a.groups ? (unsigned)a.max_groups : 1u);
    if (nx == 1)
        mmv_launch_nx<T, TPR, 1>(a, grid, s);
    else if (nx == 4)
        mmv_launch_nx<T, TPR, 4>(a, grid, s);
    else
        mmv_launch_nx<T, TPR, MMV_NX>(a, grid, s);
}

template <int T, int TPR, int NX>
static void mmq_launch_nx(const st_kern_mmv_args &a, cudaStream_t s)
{
    const unsigned gy = a.groups ? (unsigned)a.max_groups : 1u;
    if (a.w2) {
        dim3 grid((unsigned)mmv_blocks(a, MMV_THREADS / TPR), gy);
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_quant<T, TPR, NX, 1, true>)(a);
    } else if (NX <= 4 && mmv_r(a, TPR, NX) == 2) {
        dim3 grid((unsigned)mmv_blocks(a, 2 * (MMV_THREADS / TPR)), gy);
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_quant<T, TPR, NX, (NX <= 4 ? 2 : 1), false>)(a);
    } else {
        dim3 grid((unsigned)mmv_blocks(a, MMV_THREADS / TPR), gy);
        KQ_LAUNCH(grid, MMV_THREADS, 0, s, mmv_quant<T, TPR, NX, 1, false>)(a);
    }
}

template <int T, int TPR>
static void mmq_launch(const st_kern_mmv_args &a, int nx, cudaStream_t s)
{
    if (nx == 1)
        mmq_launch_nx<T, TPR, 1>(a, s);
    else if (nx == 4)
        mmq_launch_nx<T, TPR, 4>(a, s);
    else
        mmq_launch_nx<T, TPR, MMV_NX>(a, s);
}

extern "C" cudaError_t st_kern_mmv(const struct st_kern_mmv_args *a, cudaStream_t stream)
{
    if (!st_kern_mmv_supported(a->type, a->n_in) || a->n_out < 1 ||
        (a->groups && a->max_groups < 1) || (!a->groups && a->n_rows < 1))
        return cudaErrorInvalidValue;
    if (a->groups && a->max_groups > 65535)
        return cudaErrorInvalidValue;
    if (a->n_parts < 0 || a->n_parts > ST_KERN_MMV_PARTS || (a->n_parts > 1 && a->groups))
        return cudaErrorInvalidValue;
    for (int i = 0; i + 1 < a->n_parts; i++)
        if (!a->part_w[i] || !a->part_y[i] || a->part_n_out[i] < 1)
            return cudaErrorInvalidValue;
    if (a->n_parts > 1 && mmv_blocks(*a, MMV_THREADS / 32) > 0x7fffffff)
        return cudaErrorInvalidValue;
    const int64_t n_items = a->n_in / mmv_item_elems(a->type);
    const int tpr = n_items >= 32 ? 32 : 8;
    const int nx = mmv_nx(a->n_rows);

    switch (a->type) {
#define MMV_CASE_F(T)                                         \
    case T:                                                   \
        if (tpr == 32)                                        \
            mmv_launch<T, 32>(*a, nx, stream);                \
        else                                                  \
            mmv_launch<T, 8>(*a, nx, stream);                 \
        break;
        KQ_FLOAT_TYPES(MMV_CASE_F)
#undef MMV_CASE_F
#define MMV_CASE_Q(T)                                         \
    case T:                                                   \
        if (tpr == 32)                                        \
            mmq_launch<T, 32>(*a, nx, stream);                \
        else                                                  \
            mmq_launch<T, 8>(*a, nx, stream);                 \
        break;
        KQ_QUANT_TYPES(MMV_CASE_Q)
#undef MMV_CASE_Q
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
