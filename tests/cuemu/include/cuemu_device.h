/* cuemu_device.h -- the device side of CUDA C++ as plain C++ on the CPU, for
 * the kernels of kernels/ (tests/cuemu, docs/CUDA.md "Running the CUDA
 * backend without a GPU").
 *
 * A launch runs its blocks one after another; a block's threads are fibers
 * (one stack each) on the launching OS thread, switched only where CUDA
 * threads synchronize: __syncthreads, __syncwarp and the warp intrinsics
 * (__shfl*_sync, __ballot_sync, __match_any_sync, ...). So every
 * barrier, every shuffle and every warp vote has CUDA's meaning, and what
 * breaks CUDA's rules (a shuffle whose mask names an exited lane, warps
 * that reach different intrinsics, a barrier some threads never reach)
 * stops the program with the kernel, block and thread named. Shared
 * memory is per OS thread (one block at a time runs there). Atomics are
 * plain read-modify-writes: fibers never interleave between switches.
 *
 * Launches are written KQ_LAUNCH(grid, block, smem, stream, kernel)(args)
 * in kernels/ (common.cuh), which is kernel<<<...>>>(args) under nvcc and
 * cuemu_launch(...)(args) here.
 */
#ifndef CUEMU_DEVICE_H
#define CUEMU_DEVICE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_runtime_api.h"

/* ---- qualifiers ------------------------------------------------------------ */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
/* One block at a time runs on an OS thread, so its shared variables are
 * that thread's: every fiber of the block sees the same object. */
#define __shared__ static thread_local

/* ---- vector types ---------------------------------------------------------- */

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) int2 {
    int x, y;
};
struct alignas(16) int4 {
    int x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};

static inline float2 make_float2(float x, float y)
{
    return float2{ x, y };
}
static inline float4 make_float4(float x, float y, float z, float w)
{
    return float4{ x, y, z, w };
}
static inline int4 make_int4(int x, int y, int z, int w)
{
    return int4{ x, y, z, w };
}
static inline uint2 make_uint2(unsigned x, unsigned y)
{
    return uint2{ x, y };
}

/* ---- where a thread is ------------------------------------------------------- */

/* Set by the scheduler each time it switches to a fiber. GNU __thread,
 * not thread_local: a plain thread-local load, no C++ TLS wrapper call
 * (GCC 12 with UBSan miscompiles the wrapper's null check into a false
 * "member access within null pointer"). */
struct cuemu_where {
    uint3 thread, block, block_dim, grid_dim;
};
extern __thread cuemu_where cuemu_now;

#define threadIdx (cuemu_now.thread)
#define blockIdx (cuemu_now.block)
#define blockDim (cuemu_now.block_dim)
#define gridDim (cuemu_now.grid_dim)
static const int warpSize = 32;

/* ---- synchronization --------------------------------------------------------- */

enum cuemu_warp_kind {
    CUEMU_SHFL_XOR, CUEMU_SHFL_IDX, CUEMU_SHFL_DOWN, CUEMU_SHFL_UP,
    CUEMU_BALLOT, CUEMU_MATCH_ANY, CUEMU_ALL, CUEMU_ANY, CUEMU_SYNCWARP,
    CUEMU_BUTTERFLY_SUM, CUEMU_BUTTERFLY_MAX
};

void __syncthreads(void);
/* Every lane of 'mask' meets here; returns this lane's result. */
uint64_t cuemu_warp_op(enum cuemu_warp_kind kind, unsigned mask, uint64_t value, int arg,
                       int width);

static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    (void)cuemu_warp_op(CUEMU_SYNCWARP, mask, 0, 0, 32);
}

template <class T>
static inline uint64_t cuemu_bits(T v)
{
    static_assert(sizeof(T) <= 8, "a warp value is at most 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}

template <class T>
static inline T cuemu_from_bits(uint64_t b)
{
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}

template <class T>
static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    return cuemu_from_bits<T>(cuemu_warp_op(CUEMU_SHFL_XOR, mask, cuemu_bits(v), lane_mask,
                                            width));
}
template <class T>
static inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32)
{
    return cuemu_from_bits<T>(cuemu_warp_op(CUEMU_SHFL_IDX, mask, cuemu_bits(v), src_lane,
                                            width));
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return cuemu_from_bits<T>(cuemu_warp_op(CUEMU_SHFL_DOWN, mask, cuemu_bits(v), (int)delta,
                                            width));
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    return cuemu_from_bits<T>(cuemu_warp_op(CUEMU_SHFL_UP, mask, cuemu_bits(v), (int)delta,
                                            width));
}
static inline unsigned __ballot_sync(unsigned mask, int pred)
{
    return (unsigned)cuemu_warp_op(CUEMU_BALLOT, mask, pred != 0, 0, 32);
}
static inline int __all_sync(unsigned mask, int pred)
{
    return (int)cuemu_warp_op(CUEMU_ALL, mask, pred != 0, 0, 32);
}
static inline int __any_sync(unsigned mask, int pred)
{
    return (int)cuemu_warp_op(CUEMU_ANY, mask, pred != 0, 0, 32);
}
/* v = v + __shfl_xor_sync(full, v, off, 32) (or fmaxf) for off = width/2
 * down to 1, as kernels/common.cuh's warp reductions do, in one meeting of
 * the warp instead of log2(width): the same result, bit for bit (the
 * emulator's own test checks it), for a fraction of the switches. */
static inline float cuemu_butterfly(float v, int width, bool take_max)
{
    return cuemu_from_bits<float>(cuemu_warp_op(take_max ? CUEMU_BUTTERFLY_MAX
                                                         : CUEMU_BUTTERFLY_SUM,
                                                0xffffffffu, cuemu_bits(v), 0, width));
}

template <class T>
static inline unsigned __match_any_sync(unsigned mask, T v)
{
    return (unsigned)cuemu_warp_op(CUEMU_MATCH_ANY, mask, cuemu_bits(v), (int)sizeof(T), 32);
}

/* ---- atomics (fibers do not interleave inside one) ---------------------------- */

#define CUEMU_ATOMIC(name, update)              \
    template <class T>                          \
    static inline T name(T *p, T v)             \
    {                                           \
        T old = *p;                             \
        *p = (update);                          \
        return old;                             \
    }
CUEMU_ATOMIC(atomicAdd, old + v)
CUEMU_ATOMIC(atomicSub, old - v)
CUEMU_ATOMIC(atomicOr, old | v)
CUEMU_ATOMIC(atomicAnd, old & v)
CUEMU_ATOMIC(atomicMax, old < v ? v : old)
CUEMU_ATOMIC(atomicMin, v < old ? v : old)
CUEMU_ATOMIC(atomicExch, v)
#undef CUEMU_ATOMIC

template <class T>
static inline T atomicCAS(T *p, T cmp, T v)
{
    T old = *p;
    if (old == cmp)
        *p = v;
    return old;
}

/* ---- integer and float intrinsics ---------------------------------------------- */

static inline int __popc(unsigned v)
{
    return __builtin_popcount(v);
}
static inline int __popcll(unsigned long long v)
{
    return __builtin_popcountll(v);
}
static inline int __ffs(int v)
{
    return __builtin_ffs(v);
}
static inline int __clz(int v)
{
    return v ? __builtin_clz((unsigned)v) : 32;
}
static inline float __int_as_float(int v)
{
    return cuemu_from_bits<float>((uint32_t)v);
}
static inline float __uint_as_float(unsigned v)
{
    return cuemu_from_bits<float>(v);
}
static inline int __float_as_int(float f)
{
    return (int)(uint32_t)cuemu_bits(f);
}
static inline unsigned __float_as_uint(float f)
{
    return (uint32_t)cuemu_bits(f);
}
/* The _rn forms exist on the device to forbid FMA contraction; the host
 * compiler here does not contract (no -ffp-contract=fast, no FMA target). */
static inline float __fmul_rn(float a, float b)
{
    return a * b;
}
static inline float __fadd_rn(float a, float b)
{
    return a + b;
}
static inline float __fmaf_rn(float a, float b, float c)
{
    return fmaf(a, b, c);
}
static inline float __fdividef(float a, float b)
{
    return a / b;
}
static inline float rsqrtf(float x)
{
    return 1.0f / sqrtf(x);
}
static inline float __saturatef(float x)
{
    return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x;
}

/* CUDA's device min/max overloads. */
#define CUEMU_MINMAX(T)                          \
    static inline T min(T a, T b)                \
    {                                            \
        return b < a ? b : a;                    \
    }                                            \
    static inline T max(T a, T b)                \
    {                                            \
        return a < b ? b : a;                    \
    }
CUEMU_MINMAX(int)
CUEMU_MINMAX(unsigned)
CUEMU_MINMAX(long)
CUEMU_MINMAX(unsigned long)
CUEMU_MINMAX(long long)
CUEMU_MINMAX(unsigned long long)
CUEMU_MINMAX(float)
CUEMU_MINMAX(double)
#undef CUEMU_MINMAX

/* ---- launches ---------------------------------------------------------------- */

struct cuemu_cfg {
    const char  *name;     /* the kernel as written at the launch */
    dim3         grid, block;
    size_t       smem;     /* dynamic shared memory, bytes */
    cudaStream_t stream;
};

/* The block's dynamic shared memory (cfg.smem bytes, NaN-filled at block start). */
void *cuemu_dyn_smem(void);
/* Check the launch, then run 'body' once per thread of every block, now or
 * (stream capturing) when the graph is launched. Sets the error that
 * cudaGetLastError returns. */
void cuemu_submit(const cuemu_cfg &c, std::function<void()> body);
/* A pointer argument must be device memory of the current device (or
 * pinned host memory, which the device may read); stops the program if not. */
void cuemu_check_pointer(const cuemu_cfg &c, int arg, const void *p);

template <class... P>
struct cuemu_launcher {
    void (*kernel)(P...);
    cuemu_cfg cfg;

    template <class Tuple, size_t... I>
    void check(const Tuple &t, std::index_sequence<I...>) const
    {
        (check_one(I, std::get<I>(t)), ...);
    }
    template <class T>
    void check_one(size_t i, const T &v) const
    {
        if constexpr (std::is_pointer<T>::value)
            cuemu_check_pointer(cfg, (int)i, (const void *)v);
    }

    template <class... A>
    void operator()(A &&...a) const
    {
        static_assert(sizeof...(A) == sizeof...(P), "kernel argument count");
        auto args = std::make_shared<std::tuple<typename std::decay<P>::type...>>(
            std::forward<A>(a)...);
        check(*args, std::index_sequence_for<P...>{});
        void (*k)(P...) = kernel;
        cuemu_submit(cfg, [k, args] { std::apply(k, *args); });
    }
};

template <class... P>
static inline cuemu_launcher<P...> cuemu_launch(const char *name, void (*kernel)(P...), dim3 grid,
                                                dim3 block, size_t smem, cudaStream_t stream)
{
    return cuemu_launcher<P...>{ kernel, cuemu_cfg{ name, grid, block, smem, stream } };
}

#endif /* CUEMU_DEVICE_H */
