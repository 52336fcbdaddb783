/* cuemu_runtime.cpp -- the CUDA runtime API on the CPU: devices, memory,
 * copies, streams, events, graph capture and replay, launches, errors.
 *
 * Every stream runs its work at once, in call order, on the calling thread
 * (so a stream is always idle and synchronizing is a no-op), except while
 * it is being captured: then kernels, copies and memsets are recorded into
 * the graph, and run when the instantiated graph is launched, with the
 * arguments and host pointers they were captured with, as on a GPU.
 *
 * What CUDA would refuse is refused the same way, so the backend's error
 * paths run as they would on a GPU:
 *   - an unsafe call (allocation, free, a synchronizing call, a blocking
 *     copy or memset) while this thread captures: cudaErrorStreamCapture-
 *     Unsupported, and the capture is invalidated (its end returns
 *     cudaErrorStreamCaptureInvalidated);
 *   - a copy whose device side is not inside one allocation of device
 *     memory, or whose host side is: cudaErrorInvalidValue;
 *   - a launch with more than 1024 threads per block, a grid dimension out
 *     of range, more than 48 KiB of dynamic shared memory, or on a stream
 *     of another device: cudaErrorInvalidConfiguration / InvalidValue /
 *     InvalidResourceHandle, and nothing runs;
 *   - allocations beyond the emulated memory (CUEMU_MEM_MB, default
 *     8192): cudaErrorMemoryAllocation.
 * A kernel argument that is a pointer outside device (or pinned) memory
 * stops the program (cuemu_fail): on a GPU it is an illegal address.
 *
 * Device memory is malloc'd (so AddressSanitizer sees a kernel read past
 * a buffer) and filled with 0xff bytes (NaN floats, -1 integers), as a
 * GPU's fresh memory is garbage too. CUEMU_DEVICES (default 1; 0 = a
 * machine without a GPU) sets how many devices there are; each allocation
 * belongs to the current device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <mutex>
#include <vector>

#include "cuemu_internal.h"

struct CUstream_st {
    int device;
    bool capturing, invalidated;
    CUgraph_st *graph;
};

struct CUgraph_st {
    std::vector<std::function<void()>> nodes;
};

struct CUgraphExec_st {
    std::vector<std::function<void()>> nodes;
};

struct CUevent_st {
    int device;
};

namespace {

struct allocation {
    size_t size;
    cuemu_mem kind;
    int device;
};

struct registry {
    std::mutex lock;
    std::map<uintptr_t, allocation> blocks;   /* by base address */
    size_t device_bytes = 0;
};

registry &mem()
{
    static registry r;
    return r;
}

/* A decimal setting from the environment; 'dflt' when unset or not a number. */
size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    char *end = nullptr;
    unsigned long long n = v ? strtoull(v, &end, 10) : 0;
    return v && end != v && *end == '\0' ? (size_t)n : dflt;
}

size_t mem_limit()
{
    static const size_t limit = env_size("CUEMU_MEM_MB", 8192) << 20;
    return limit;
}

int device_count()
{
    static const int n = (int)env_size("CUEMU_DEVICES", 1);
    return n;
}

thread_local cudaError_t last_error = cudaSuccess;
thread_local int current_device = 0;
thread_local cudaStream_t capturing_here = nullptr;   /* this thread's capture */

cudaError_t fail(cudaError_t e)
{
    return cuemu_set_error(e);
}

/* An unsafe call while this thread captures: invalidate the capture. */
bool capture_forbids(void)
{
    if (!capturing_here)
        return false;
    capturing_here->invalidated = true;
    fail(cudaErrorStreamCaptureUnsupported);
    return true;
}

void *alloc_host(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p;
}

cudaError_t add_block(void *p, size_t n, cuemu_mem kind)
{
    registry &r = mem();
    std::lock_guard<std::mutex> g(r.lock);
    r.blocks[(uintptr_t)p] = allocation{ n, kind, current_device };
    if (kind == CUEMU_MEM_DEVICE)
        r.device_bytes += n;
    return cudaSuccess;
}

/* Forget the block at base p; false when p is not the base of one of 'kind'. */
bool drop_block(void *p, cuemu_mem kind)
{
    registry &r = mem();
    std::lock_guard<std::mutex> g(r.lock);
    auto it = r.blocks.find((uintptr_t)p);
    if (it == r.blocks.end() || it->second.kind != kind)
        return false;
    if (kind == CUEMU_MEM_DEVICE)
        r.device_bytes -= it->second.size;
    r.blocks.erase(it);
    return true;
}

bool device_range(const void *p, size_t n)
{
    int dev = -1;
    return cuemu_mem_of(p, n, &dev) == CUEMU_MEM_DEVICE;
}

bool host_range(const void *p, size_t n)
{
    int dev = -1;
    return cuemu_mem_of(p, n, &dev) != CUEMU_MEM_DEVICE;
}

} // namespace

/* ---- shared with the other pieces ---------------------------------------------- */

cudaError_t cuemu_set_error(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

enum cuemu_mem cuemu_mem_of(const void *p, size_t n, int *device)
{
    registry &r = mem();
    std::lock_guard<std::mutex> g(r.lock);
    const uintptr_t a = (uintptr_t)p;
    auto it = r.blocks.upper_bound(a);
    if (it == r.blocks.begin())
        return CUEMU_MEM_NONE;
    --it;
    const uintptr_t base = it->first;
    if (a < base || a - base > it->second.size || n > it->second.size - (a - base))
        return CUEMU_MEM_NONE;
    *device = it->second.device;
    return it->second.kind;
}

int cuemu_current_device(void)
{
    return current_device;
}

cudaError_t cuemu_enqueue(cudaStream_t s, std::function<void()> op)
{
    if (s && s->capturing) {
        if (!s->invalidated)
            s->graph->nodes.push_back(std::move(op));
        return cudaSuccess;
    }
    op();
    return cudaSuccess;
}

void cuemu_submit(const cuemu_cfg &c, std::function<void()> body)
{
    const unsigned long long threads = (unsigned long long)c.block.x * c.block.y * c.block.z;
    if (threads < 1 || threads > 1024 || c.block.z > 64 || c.grid.x < 1 ||
        c.grid.x > 0x7fffffffu || c.grid.y < 1 || c.grid.y > 65535 || c.grid.z < 1 ||
        c.grid.z > 65535) {
        fail(cudaErrorInvalidConfiguration);
        return;
    }
    if (c.smem > 48 * 1024) {
        fail(cudaErrorInvalidValue);
        return;
    }
    if (c.stream && c.stream->device != current_device) {
        fail(cudaErrorInvalidResourceHandle);
        return;
    }
    cuemu_cfg cfg = c;
    cuemu_enqueue(c.stream, [cfg, body] { cuemu_exec_grid(cfg, body); });
}

void cuemu_check_pointer(const cuemu_cfg &c, int arg, const void *p)
{
    if (!p)
        return;
    int dev = -1;
    cuemu_mem kind = cuemu_mem_of(p, 0, &dev);
    if (kind == CUEMU_MEM_NONE)
        cuemu_fail("kernel %s: argument %d (%p) is not device memory: an illegal address on a "
                   "GPU", c.name, arg, p);
    if (kind == CUEMU_MEM_DEVICE && dev != current_device)
        cuemu_fail("kernel %s on device %d: argument %d (%p) is memory of device %d", c.name,
                   current_device, arg, p, dev);
}

/* ---- errors ------------------------------------------------------------------------- */

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "the capture was not initiated in this stream";
    default: return "unknown error";
    }
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

/* ---- devices ------------------------------------------------------------------------ */

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = device_count();
    return *n > 0 ? cudaSuccess : fail(cudaErrorNoDevice);   /* as the driver says it */
}

cudaError_t cudaGetDevice(int *dev)
{
    *dev = current_device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev)
{
    if (dev < 0 || dev >= device_count())
        return fail(cudaErrorInvalidDevice);
    current_device = dev;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int dev)
{
    if (dev < 0 || dev >= device_count())
        return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "cuemu %d (CUDA emulated on the CPU)", dev);
    prop->totalGlobalMem = mem_limit();
    prop->sharedMemPerBlock = 48 * 1024;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->major = 9;   /* Hopper's compute capability: the backend's paths for sm_90 */
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    registry &r = mem();
    std::lock_guard<std::mutex> g(r.lock);
    *total_bytes = mem_limit();
    *free_bytes = r.device_bytes < mem_limit() ? mem_limit() - r.device_bytes : 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    return capture_forbids() ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

/* ---- memory -------------------------------------------------------------------------- */

cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = nullptr;
    if (capture_forbids())
        return cudaErrorStreamCaptureUnsupported;
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    if (n > free_b)
        return fail(cudaErrorMemoryAllocation);
    void *m = alloc_host(n);
    if (!m)
        return fail(cudaErrorMemoryAllocation);
    memset(m, 0xff, n);
    *p = m;
    return add_block(m, n, CUEMU_MEM_DEVICE);
}

cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
    (void)s;
    if (capturing_here)   /* allowed in a capture on a GPU (a graph node); not here */
        return fail(cudaErrorStreamCaptureUnsupported);
    return cudaMalloc(p, n);
}

cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    if (capture_forbids())
        return cudaErrorStreamCaptureUnsupported;
    if (!drop_block(p, CUEMU_MEM_DEVICE))
        return fail(cudaErrorInvalidDevicePointer);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t n)
{
    *p = nullptr;
    if (capture_forbids())
        return cudaErrorStreamCaptureUnsupported;
    void *m = alloc_host(n);
    if (!m)
        return fail(cudaErrorMemoryAllocation);
    *p = m;
    return add_block(m, n, CUEMU_MEM_PINNED);
}

cudaError_t cudaFreeHost(void *p)
{
    if (!p)
        return cudaSuccess;
    if (capture_forbids())
        return cudaErrorStreamCaptureUnsupported;
    if (!drop_block(p, CUEMU_MEM_PINNED))
        return fail(cudaErrorInvalidValue);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s)
{
    if (!device_range(p, n))
        return fail(cudaErrorInvalidValue);
    return cuemu_enqueue(s, [p, value, n] { memset(p, value, n); });
}

cudaError_t cudaMemset(void *p, int value, size_t n)
{
    if (capture_forbids())
        return cudaErrorStreamCaptureUnsupported;
    return cudaMemsetAsync(p, value, n, nullptr);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    bool ok = false;
    switch (kind) {
    case cudaMemcpyHostToHost: ok = host_range(dst, n) && host_range(src, n); break;
    case cudaMemcpyHostToDevice: ok = device_range(dst, n) && host_range(src, n); break;
    case cudaMemcpyDeviceToHost: ok = host_range(dst, n) && device_range(src, n); break;
    case cudaMemcpyDeviceToDevice: ok = device_range(dst, n) && device_range(src, n); break;
    case cudaMemcpyDefault: ok = true; break;
    }
    if (!ok)
        return fail(cudaErrorInvalidValue);
    return cuemu_enqueue(s, [dst, src, n] { memmove(dst, src, n); });
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    if (capture_forbids())
        return cudaErrorStreamCaptureUnsupported;
    return cudaMemcpyAsync(dst, src, n, kind, nullptr);
}

/* ---- streams and events -------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = new CUstream_st{ current_device, false, false, nullptr };
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!s)
        return fail(cudaErrorInvalidResourceHandle);
    if (s->capturing) {
        if (capturing_here == s)
            capturing_here = nullptr;
        delete s->graph;
    }
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (s && s->capturing) {
        s->invalidated = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    return capture_forbids() ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned flags)
{
    (void)flags;
    *ev = new CUevent_st{ current_device };
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *ev)
{
    return cudaEventCreateWithFlags(ev, cudaEventDefault);
}

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s)
{
    if (!ev)
        return fail(cudaErrorInvalidResourceHandle);
    return cuemu_enqueue(s, [] {});   /* the stream is idle once the call returns */
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
    if (!ev)
        return fail(cudaErrorInvalidResourceHandle);
    return capture_forbids() ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
    delete ev;
    return cudaSuccess;
}

/* ---- graphs -------------------------------------------------------------------------- */

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    if (!s || s->capturing || capturing_here)
        return fail(cudaErrorInvalidValue);
    s->capturing = true;
    s->invalidated = false;
    s->graph = new CUgraph_st;
    if (mode != cudaStreamCaptureModeRelaxed)
        capturing_here = s;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    *graph = nullptr;
    if (!s || !s->capturing)
        return fail(cudaErrorStreamCaptureUnmatched);
    if (capturing_here == s)
        capturing_here = nullptr;
    s->capturing = false;
    if (s->invalidated) {
        delete s->graph;
        s->graph = nullptr;
        return fail(cudaErrorStreamCaptureInvalidated);
    }
    *graph = s->graph;
    s->graph = nullptr;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags)
{
    (void)flags;
    *exec = nullptr;
    if (!graph)
        return fail(cudaErrorInvalidValue);
    *exec = new CUgraphExec_st{ graph->nodes };
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    if (!exec)
        return fail(cudaErrorInvalidValue);
    for (const std::function<void()> &op : exec->nodes)
        cuemu_enqueue(s, op);
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    delete graph;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}
