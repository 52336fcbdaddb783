/* cuda_copy.c -- the CUDA backend's device-to-device copy (backend.h
 * st_backend_copy): KV cache rows copied between slots for prefix sharing
 * (docs/BATCHING.md "Prefix reuse", docs/CUDA.md).
 *
 * One cudaMemcpyAsync on the backend's stream, so it is ordered with the
 * ops around it like any op: what an earlier forward wrote is copied, and
 * the next forward reads the copy. Not meant to run inside a graph capture
 * (copies come between steps): a capture left open is ended first, as
 * write and read do. backend.c has checked the ranges (in bounds, disjoint,
 * dst writable).
 *
 * Threads: the backend's driving thread (like every entry).
 */
#include "cuda_internal.h"

enum st_status st_backend_cuda_copy(struct st_backend *be, const struct st_tensor *dst,
                                    size_t dst_off, const struct st_tensor *src, size_t src_off,
                                    size_t n, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_capture_abort(cb);
    cuda_actq_wrote(cb, (char *)dst->data + dst_off, n);
    return ST_CUDA(cb, cudaMemcpyAsync((char *)dst->data + dst_off,
                                       (const char *)src->data + src_off, n,
                                       cudaMemcpyDeviceToDevice, cb->stream), err);
}
