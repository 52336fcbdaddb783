/* cuda_mem.c -- device memory of the CUDA backend: one cudaMalloc with an
 * out-of-memory message that says what is free, and the persistent scratch
 * buffers the ops carve their temporaries from (cuda_internal.h).
 *
 * The scratch only grows, between steps: captured graphs hold pointers
 * into it, so growing drops them first (cuda_graph_drop.c).
 */
#include "cuda_internal.h"

#define MIB (1024.0 * 1024.0)

enum st_status cuda_dev_alloc(struct cuda_backend *cb, size_t nbytes, void **p, const char *what,
                              struct st_err *err)
{
    cudaError_t e;

    if (cb->capturing)
        return st_err_set(err, ST_ERR_INTERNAL, "cuda: %s allocation during a graph capture",
                          what);
    e = cudaMalloc(p, nbytes ? nbytes : 1);
    if (e == cudaErrorMemoryAllocation) {
        size_t free_b = 0, total_b = 0;
        (void)cudaGetLastError();
        (void)cudaMemGetInfo(&free_b, &total_b);
        return st_err_set(err, ST_ERR_DEVICE_OOM,
                          "cuda:%d cannot allocate %.1f MiB for %s: %.1f MiB free of %.1f MiB "
                          "(weights hold %.1f MiB)", cb->device, (double)nbytes / MIB, what,
                          (double)free_b / MIB, (double)total_b / MIB,
                          (double)cb->weight_bytes / MIB);
    }
    return ST_CUDA(cb, e, err);
}

/* Grow the persistent device buffer *buf (*size bytes) to at least n bytes.
 * Captured graphs hold kernel arguments that point into the old buffer, so
 * they are dropped before it is freed (replaying one would read freed
 * memory: the usual way this happens is a long prompt after decode steps
 * were captured). Never during a capture. */
enum st_status cuda_grow(struct cuda_backend *cb, void **buf, size_t *size, size_t n,
                         const char *what, struct st_err *err)
{
    enum st_status rc;
    void *p = NULL;
    size_t want;

    if (cb->capturing)
        return st_err_set(err, ST_ERR_INTERNAL,
                          "cuda: %s must grow to %zu bytes during a graph capture", what, n);
    want = n + n / 4 + 4096;
    rc = ST_CUDA(cb, cudaStreamSynchronize(cb->stream), err);
    if (rc != ST_OK)
        return rc;
    cuda_graphs_invalidate(cb);
    cudaFree(*buf);
    cb->buffer_bytes -= *size;
    *buf = NULL;
    *size = 0;
    rc = cuda_dev_alloc(cb, want, &p, what, err);   /* out of memory names the size and what is free */
    if (rc == ST_ERR_DEVICE_OOM) {               /* without the headroom */
        want = n;
        rc = cuda_dev_alloc(cb, want, &p, what, err);
    }
    if (rc != ST_OK)
        return rc;
    *buf = p;
    *size = want;
    cb->buffer_bytes += want;
    return ST_OK;
}

/* *buf grown to at least n bytes when smaller, then *out = *buf. */
static enum st_status reserve(struct cuda_backend *cb, void **buf, size_t *size, size_t n,
                              const char *what, void **out, struct st_err *err)
{
    if (n > *size) {
        enum st_status rc = cuda_grow(cb, buf, size, n, what, err);
        if (rc != ST_OK)
            return rc;
    }
    *out = *buf;
    return ST_OK;
}

enum st_status cuda_scratch(struct cuda_backend *cb, size_t n, void **out, struct st_err *err)
{
    return reserve(cb, &cb->scratch, &cb->scratch_size, n, "scratch", out, err);
}

enum st_status cuda_aux(struct cuda_backend *cb, size_t n, void **out, struct st_err *err)
{
    return reserve(cb, &cb->aux, &cb->aux_size, n, "aux scratch", out, err);
}

enum st_status cuda_scratch_parts(struct cuda_backend *cb, int n, const size_t *sizes,
                                  void **ptrs, struct st_err *err)
{
    size_t total = 0, off[16];
    void *base;
    enum st_status rc;

    ST_ASSERT(n <= 16);
    for (int i = 0; i < n; i++) {
        off[i] = total;
        total += (sizes[i] + 255) / 256 * 256;
    }
    rc = cuda_scratch(cb, total ? total : 256, &base, err);
    if (rc != ST_OK)
        return rc;
    for (int i = 0; i < n; i++)
        ptrs[i] = (char *)base + off[i];
    return ST_OK;
}
