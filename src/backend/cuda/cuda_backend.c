/* cuda_backend.c -- the CUDA backend: device selection, tensors, weight
 * upload and the op table. The services every op uses are below it: the
 * error mapping (cuda_status.c), the scratch (cuda_mem.c), the q8_1 record
 * (cuda_fuse.c), dropping graphs (cuda_graph_drop.c); nothing in this
 * folder calls back into this file.
 *
 * Memory. Every tensor is its own cudaMalloc (zero-filled). Weights
 * (st_backend_wrap) are copied once from the host mapping through two
 * pinned 32 MiB staging buffers, alternating, so the copy from the page
 * cache of one chunk overlaps the DMA of the other; the host memory is not
 * kept. A progress line is logged every GiB with what the device has left.
 * Out of memory names the size wanted and what is free.
 *
 * Errors: see cuda_internal.h and cuda_status.c. Per-row integers are
 * range-checked on the device (kernels.h ST_KF_*): the word is read back
 * at sync()/read().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "strata/log.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* ---- open / close ------------------------------------------------------- */

static void cuda_close(struct st_backend *be)
{
    struct cuda_backend *cb = cuda_of(be);

    (void)cudaSetDevice(cb->device);
    if (cb->stream)
        (void)cudaStreamSynchronize(cb->stream);
    cuda_graphs_free(cb);
    for (int i = 0; i < 2; i++) {
        if (cb->stage_done[i])
            cudaEventDestroy(cb->stage_done[i]);
        if (cb->stage[i])
            cudaFreeHost(cb->stage[i]);
    }
    if (cb->err_host)
        cudaFreeHost(cb->err_host);
    cudaFree(cb->err_flag);
    cudaFree(cb->scratch);
    cudaFree(cb->aux);
    cudaFree(cb->actq);
    cudaFree(cb->moe_grp);
    cudaFree(cb->blas_ws);
    if (cb->blas)
        cublasDestroy(cb->blas);
    if (cb->stream)
        cudaStreamDestroy(cb->stream);
    (void)cudaGetLastError();
    free(cb);
}

static enum st_status pick_device(const struct st_backend_config *cfg, int *dev,
                                  struct st_err *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);

    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        return st_err_set(err, ST_ERR_DEVICE, "cuda: no usable GPU (%s)",
                          e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    }
    if (cfg->device < 0 || cfg->device >= n)
        return st_err_set(err, ST_ERR_INVALID, "cuda: device %d requested, %d present (0..%d)",
                          cfg->device, n, n - 1);
    *dev = cfg->device;
    return ST_OK;
}

/* The stream and the device error word with its pinned host copy. */
static enum st_status open_stream(struct cuda_backend *cb, struct st_err *err)
{
    enum st_status rc;

    rc = ST_CUDA(cb, cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking), err);
    if (rc != ST_OK)
        return rc;
    rc = ST_CUDA(cb, cudaMalloc((void **)&cb->err_flag, sizeof(unsigned)), err);
    if (rc != ST_OK)
        return rc;
    rc = ST_CUDA(cb, cudaMemset(cb->err_flag, 0, sizeof(unsigned)), err);
    if (rc != ST_OK)
        return rc;
    rc = ST_CUDA(cb, cudaMalloc((void **)&cb->moe_grp, CUDA_MOE_GRP_INTS * sizeof(int32_t)),
                 err);
    if (rc != ST_OK)
        return rc;
    return ST_CUDA(cb, cudaMallocHost((void **)&cb->err_host, sizeof(unsigned)), err);
}

/* The two pinned upload buffers and the events that say they are free. */
static enum st_status open_staging(struct cuda_backend *cb, struct st_err *err)
{
    for (int i = 0; i < 2; i++) {
        enum st_status rc = ST_CUDA(cb, cudaMallocHost(&cb->stage[i], CUDA_STAGE_BYTES), err);
        if (rc != ST_OK)
            return rc;
        rc = ST_CUDA(cb, cudaEventCreateWithFlags(&cb->stage_done[i], cudaEventDisableTiming),
                     err);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

/* cuBLAS on the stream, with its own workspace (graph capture needs one). */
static enum st_status open_blas(struct cuda_backend *cb, struct st_err *err)
{
    enum st_status rc = ST_CUDA(cb, cudaMalloc(&cb->blas_ws, CUDA_CUBLAS_WS_BYTES), err);

    if (rc != ST_OK)
        return rc;
    cb->buffer_bytes = CUDA_CUBLAS_WS_BYTES;
    rc = ST_CUBLAS(cb, cublasCreate(&cb->blas), err);
    if (rc != ST_OK)
        return rc;
    rc = ST_CUBLAS(cb, cublasSetStream(cb->blas, cb->stream), err);
    if (rc != ST_OK)
        return rc;
    return ST_CUBLAS(cb, cublasSetWorkspace(cb->blas, cb->blas_ws, CUDA_CUBLAS_WS_BYTES), err);
}

static enum st_status open_resources(struct cuda_backend *cb, struct st_err *err)
{
    struct cudaDeviceProp prop;
    enum st_status rc = ST_CUDA(cb, cudaSetDevice(cb->device), err);

    if (rc == ST_OK)
        rc = ST_CUDA(cb, cudaGetDeviceProperties(&prop, cb->device), err);
    if (rc != ST_OK)
        return rc;
    snprintf(cb->name, sizeof(cb->name), "%s", prop.name);
    cb->cc_major = prop.major;
    cb->cc_minor = prop.minor;
    cb->n_sm = prop.multiProcessorCount;
    cb->total_mem = prop.totalGlobalMem;
    if (prop.major < 6)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "cuda:%d %s is sm_%d%d; dp4a needs sm_61+",
                          cb->device, prop.name, prop.major, prop.minor);
    rc = open_stream(cb, err);
    if (rc != ST_OK)
        return rc;
    rc = open_staging(cb, err);
    if (rc != ST_OK)
        return rc;
    rc = open_blas(cb, err);
    if (rc != ST_OK)
        return rc;
    *cb->err_host = 0;
    return ST_OK;
}

static enum st_status cuda_open(const struct st_backend_config *cfg, struct st_backend **out,
                                struct st_err *err)
{
    struct cuda_backend *cb;
    enum st_status rc;
    int dev = 0;

    rc = pick_device(cfg, &dev, err);
    if (rc != ST_OK)
        return rc;
    cb = calloc(1, sizeof(*cb));
    if (!cb)
        return st_err_set(err, ST_ERR_NOMEM, "cuda backend: out of host memory");
    cb->base.ops = &st_backend_cuda_ops;
    cb->device = dev;
    cb->next_log = (size_t)1 << 30;
    cuda_fuse_init(cb);
    /* STRATA_CUDA_DELTA_CHUNK=0: prompt reads of the delta rule row by row
     * (gpu_bench's baseline for the chunked form) */
    const char *dc = getenv("STRATA_CUDA_DELTA_CHUNK");
    cb->delta_recurrent = dc && strcmp(dc, "0") == 0;
    cb->attn_short = cuda_attn_short_max(dev);
    rc = open_resources(cb, err);
    if (rc != ST_OK) {
        cuda_close(&cb->base);
        return rc;
    }
    st_log(ST_LOG_INFO, "cuda", "device %d: %s, sm_%d%d, %d SMs, %.1f GiB", dev, cb->name,
           cb->cc_major, cb->cc_minor, cb->n_sm, (double)cb->total_mem / GIB);
    *out = &cb->base;
    return ST_OK;
}

static const char *cuda_describe(const struct st_backend *be)
{
    struct cuda_backend *cb = (struct cuda_backend *)(uintptr_t)be;
    snprintf(cb->desc, sizeof(cb->desc),
             "cuda:%d %s (sm_%d%d, %d SMs, %.1f GiB): weights %.2f GiB in %lld tensors, "
             "buffers %.2f GiB%s", cb->device, cb->name, cb->cc_major, cb->cc_minor, cb->n_sm,
             (double)cb->total_mem / GIB, (double)cb->weight_bytes / GIB,
             (long long)cb->n_weights, (double)cb->buffer_bytes / GIB,
             cb->poisoned ? ", POISONED" : "");
    return cb->desc;
}

/* ---- memory ------------------------------------------------------------- */

static enum st_status cuda_alloc(struct st_backend *be, struct st_tensor *t, size_t nbytes,
                                 struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc == ST_OK)
        rc = cuda_dev_alloc(cb, nbytes, &t->data, "a tensor", err);
    if (rc != ST_OK)
        return rc;
    rc = ST_CUDA(cb, cudaMemsetAsync(t->data, 0, nbytes, cb->stream), err);
    if (rc != ST_OK) {
        cudaFree(t->data);
        t->data = NULL;
        return rc;
    }
    cb->buffer_bytes += nbytes;
    return ST_OK;
}

/* Copy host -> device through the pinned staging buffers. */
static enum st_status staged_upload(struct cuda_backend *cb, void *dst, const void *host,
                                    size_t nbytes, struct st_err *err)
{
    enum st_status rc;
    size_t off = 0;
    int k = 0;

    while (off < nbytes) {
        size_t n = nbytes - off < CUDA_STAGE_BYTES ? nbytes - off : CUDA_STAGE_BYTES;
        rc = ST_CUDA(cb, cudaEventSynchronize(cb->stage_done[k]), err);
        if (rc != ST_OK)
            return rc;
        memcpy(cb->stage[k], (const char *)host + off, n);
        rc = ST_CUDA(cb, cudaMemcpyAsync((char *)dst + off, cb->stage[k], n,
                                         cudaMemcpyHostToDevice, cb->stream), err);
        if (rc != ST_OK)
            return rc;
        rc = ST_CUDA(cb, cudaEventRecord(cb->stage_done[k], cb->stream), err);
        if (rc != ST_OK)
            return rc;
        off += n;
        k ^= 1;
    }
    return ST_CUDA(cb, cudaStreamSynchronize(cb->stream), err);
}

static enum st_status cuda_wrap(struct st_backend *be, struct st_tensor *t, const void *host,
                                size_t nbytes, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc == ST_OK)
        rc = cuda_dev_alloc(cb, nbytes, &t->data, "weights", err);
    if (rc != ST_OK)
        return rc;
    rc = staged_upload(cb, t->data, host, nbytes, err);
    if (rc != ST_OK) {
        cudaFree(t->data);
        t->data = NULL;
        return rc;
    }
    cb->weight_bytes += nbytes;
    cb->n_weights++;
    if (cb->weight_bytes >= cb->next_log) {
        size_t free_b = 0, total_b = 0;
        (void)cudaMemGetInfo(&free_b, &total_b);
        st_log(ST_LOG_INFO, "cuda", "device %d: %.1f GiB of weights uploaded (%lld tensors), "
               "%.1f GiB free", cb->device, (double)cb->weight_bytes / GIB,
               (long long)cb->n_weights, (double)free_b / GIB);
        while (cb->next_log <= cb->weight_bytes)
            cb->next_log += (size_t)1 << 30;
    }
    return ST_OK;
}

static void cuda_release(struct st_backend *be, struct st_tensor *t)
{
    struct cuda_backend *cb = cuda_of(be);
    size_t n = st_tensor_nbytes(t);

    (void)cudaSetDevice(cb->device);
    /* Captured graphs may point at this memory (a replay would read freed
     * or reused memory): drop them all; a release happens at unload, not
     * between decode steps. */
    cuda_graphs_invalidate(cb);
    cuda_actq_forget(cb);     /* the address may come back with other contents */
    cuda_moe_forget(cb);
    if (!cb->poisoned)
        (void)cudaStreamSynchronize(cb->stream);   /* no op may still read it */
    cudaFree(t->data);
    (void)cudaGetLastError();
    if (t->flags & ST_TENSOR_WRAPPED) {
        cb->weight_bytes -= ST_MIN(n, cb->weight_bytes);
        cb->n_weights--;
    } else {
        cb->buffer_bytes -= ST_MIN(n, cb->buffer_bytes);
    }
}

static enum st_status cuda_write(struct st_backend *be, const struct st_tensor *t,
                                 size_t offset, const void *src, size_t n, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_capture_abort(cb);   /* inputs are written before graph_begin, never inside */
    cuda_actq_wrote(cb, (char *)t->data + offset, n);
    /* From pageable memory the copy is staged before the call returns, so
     * 'src' may be reused at once, as backend.h promises. */
    return ST_CUDA(cb, cudaMemcpyAsync((char *)t->data + offset, src, n,
                                       cudaMemcpyHostToDevice, cb->stream), err);
}

/* Wait for the stream, then report a deferred kernel error or a bad input. */
static enum st_status finish(struct cuda_backend *cb, struct st_err *err)
{
    enum st_status rc = ST_CUDA(cb, cudaMemcpyAsync(cb->err_host, cb->err_flag, sizeof(unsigned),
                                                    cudaMemcpyDeviceToHost, cb->stream), err);
    if (rc != ST_OK)
        return rc;
    rc = ST_CUDA(cb, cudaStreamSynchronize(cb->stream), err);
    if (rc != ST_OK)
        return rc;
    return cuda_check_flag(cb, err);
}

static enum st_status cuda_read(struct st_backend *be, const struct st_tensor *t, size_t offset,
                                void *dst, size_t n, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_capture_abort(cb);
    rc = ST_CUDA(cb, cudaMemcpyAsync(dst, (const char *)t->data + offset, n,
                                     cudaMemcpyDeviceToHost, cb->stream), err);
    return rc == ST_OK ? finish(cb, err) : rc;
}

static enum st_status cuda_sync(struct st_backend *be, struct st_err *err)
{
    struct cuda_backend *cb = cuda_of(be);
    enum st_status rc = cuda_enter(cb, err);

    if (rc != ST_OK)
        return rc;
    cuda_capture_abort(cb);
    return finish(cb, err);
}

const struct st_backend_ops st_backend_cuda_ops = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .describe = cuda_describe,
    .alloc = cuda_alloc,
    .wrap = cuda_wrap,
    .release = cuda_release,
    .write = cuda_write,
    .read = cuda_read,
    .sync = cuda_sync,
    .copy = st_backend_cuda_copy,
#define CUDA_OP_ENTRY(name, params, args) .name = cuda_op_##name,
    ST_OP_MAP(CUDA_OP_ENTRY)
    ST_OPT_OP_MAP(CUDA_OP_ENTRY)
#undef CUDA_OP_ENTRY
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
    .sample = cuda_op_sample,
    .score = cuda_op_score,
    .stats = cuda_stats,
};
