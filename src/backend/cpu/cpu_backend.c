/* cpu_backend.c -- the CPU backend: memory, the worker pool, the op table.
 *
 * Memory is plain host memory. Activation buffers and KV caches are
 * 64-byte aligned allocations; weights are wrapped in place (the pointer
 * into the model's mmap is used as is, no copy), so loading a model costs
 * its page cache and nothing more. Ops run synchronously on the calling
 * thread plus the pool's workers, so sync() has nothing to wait for.
 *
 * Lazy tensors (st_backend_alloc_lazy: the unified KV pool) are anonymous
 * mappings with MAP_NORESERVE: the kernel commits a page when it is first
 * written (zero-filled, so reads of the rest give zeros as alloc's memset
 * does), madvise(MADV_DONTNEED) gives pages back, mincore counts them.
 *
 * Threads: one engine thread drives a backend; the pool's workers only
 * run inside the ops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu.h"

#define ALIGN 64

static enum st_status cpu_open(const struct st_backend_config *cfg, struct st_backend **out,
                               struct st_err *err)
{
    struct cpu_backend *cb = calloc(1, sizeof(*cb));
    int n = cfg->n_threads;

    if (!cb)
        return st_err_set(err, ST_ERR_NOMEM, "cpu backend: out of memory");
    if (n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (int)cores : 1;
    }
    if (n > 256)
        n = 256;
    cb->base.ops = &st_backend_cpu_ops;
    cb->n_threads = n;
    cb->kern = cpu_kernels_best();
    cb->pool = cpu_pool_new(n);
    if (!cb->pool) {
        free(cb);
        return st_err_set(err, ST_ERR_NOMEM, "cpu backend: cannot start %d worker threads", n);
    }
    snprintf(cb->desc, sizeof(cb->desc), "cpu: %d thread%s, kernels %s", n, n == 1 ? "" : "s",
             cb->kern->name);
    *out = &cb->base;
    return ST_OK;
}

static void cpu_close(struct st_backend *be)
{
    struct cpu_backend *cb = (struct cpu_backend *)be;
    cpu_pool_free(cb->pool);
    cpu_scratch_free(cb);
    free(cb);
}

static const char *cpu_describe(const struct st_backend *be)
{
    return ((const struct cpu_backend *)be)->desc;
}

static enum st_status cpu_alloc(struct st_backend *be, struct st_tensor *t, size_t nbytes,
                                struct st_err *err)
{
    size_t rounded = (nbytes + ALIGN - 1) / ALIGN * ALIGN;
    void *p = NULL;

    (void)be;
    if (rounded < nbytes || posix_memalign(&p, ALIGN, rounded ? rounded : ALIGN) != 0)
        return st_err_set(err, ST_ERR_NOMEM, "cpu backend: cannot allocate %zu bytes", nbytes);
    memset(p, 0, rounded);
    t->data = p;
    return ST_OK;
}

static enum st_status cpu_wrap(struct st_backend *be, struct st_tensor *t, const void *host,
                               size_t nbytes, struct st_err *err)
{
    (void)be;
    (void)nbytes;
    (void)err;
    t->data = (void *)host;   /* zero-copy: borrowed until release */
    return ST_OK;
}

static size_t page_size(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    return ps > 0 ? (size_t)ps : 4096;
}

/* The mapping's length: the tensor's bytes rounded up to whole pages. */
static size_t lazy_len(const struct st_tensor *t)
{
    size_t ps = page_size();
    return (st_tensor_nbytes(t) + ps - 1) / ps * ps;
}

static enum st_status cpu_alloc_lazy(struct st_backend *be, struct st_tensor *t, size_t nbytes,
                                     struct st_err *err)
{
    (void)be;
    size_t len = lazy_len(t);
    void *p = mmap(NULL, len ? len : page_size(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return st_err_set(err, ST_ERR_NOMEM, "cpu backend: cannot reserve %zu bytes of address "
                          "space", nbytes);
    t->data = p;
    return ST_OK;
}

static size_t cpu_discard(struct st_backend *be, const struct st_tensor *t, size_t offset,
                          size_t n)
{
    (void)be;
    size_t ps = page_size();
    size_t from = (offset + ps - 1) / ps * ps, to = (offset + n) / ps * ps;
    if (to <= from)
        return 0;
    if (madvise((char *)t->data + from, to - from, MADV_DONTNEED) != 0)
        return 0;
    return to - from;
}

static size_t cpu_resident(struct st_backend *be, const struct st_tensor *t)
{
    (void)be;
    size_t ps = page_size(), len = lazy_len(t), pages = len / ps, n = 0;
    unsigned char vec[4096];
    for (size_t at = 0; at < pages; at += sizeof(vec)) {
        size_t k = pages - at < sizeof(vec) ? pages - at : sizeof(vec);
        if (mincore((char *)t->data + at * ps, k * ps, vec) != 0)
            return st_tensor_nbytes(t);   /* cannot tell: say all of it */
        for (size_t i = 0; i < k; i++)
            n += vec[i] & 1;
    }
    return n * ps;
}

static void cpu_release(struct st_backend *be, struct st_tensor *t)
{
    (void)be;
    if ((t->flags & ST_TENSOR_OWNED) && (t->flags & ST_TENSOR_LAZY)) {
        size_t len = lazy_len(t);
        munmap(t->data, len ? len : page_size());
    } else if (t->flags & ST_TENSOR_OWNED) {
        free(t->data);
    }
}

static enum st_status cpu_write(struct st_backend *be, const struct st_tensor *t, size_t offset,
                                const void *src, size_t n, struct st_err *err)
{
    (void)be;
    if (t->flags & ST_TENSOR_WRAPPED)
        return st_err_set(err, ST_ERR_INVALID, "cpu backend: wrapped weights are read-only");
    memcpy((char *)t->data + offset, src, n);
    return ST_OK;
}

static enum st_status cpu_read(struct st_backend *be, const struct st_tensor *t, size_t offset,
                               void *dst, size_t n, struct st_err *err)
{
    (void)be;
    (void)err;
    memcpy(dst, (const char *)t->data + offset, n);
    return ST_OK;
}

/* Ranges checked by backend.c (in bounds, disjoint, dst writable). */
static enum st_status cpu_copy(struct st_backend *be, const struct st_tensor *dst,
                               size_t dst_off, const struct st_tensor *src, size_t src_off,
                               size_t n, struct st_err *err)
{
    (void)be;
    (void)err;
    memcpy((char *)dst->data + dst_off, (const char *)src->data + src_off, n);
    return ST_OK;
}

static enum st_status cpu_sync(struct st_backend *be, struct st_err *err)
{
    (void)be;
    (void)err;
    return ST_OK;
}

const struct st_backend_ops st_backend_cpu_ops = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .describe = cpu_describe,
    .alloc = cpu_alloc,
    .wrap = cpu_wrap,
    .release = cpu_release,
    .alloc_lazy = cpu_alloc_lazy,
    .discard = cpu_discard,
    .resident = cpu_resident,
    .write = cpu_write,
    .read = cpu_read,
    .sync = cpu_sync,
    .copy = cpu_copy,
#define CPU_OP_ENTRY(name, params, args) .name = cpu_op_##name,
    ST_OP_MAP(CPU_OP_ENTRY)
#undef CPU_OP_ENTRY
    .sample = cpu_op_sample,   /* ops run synchronously: no graphs */
    .score = cpu_op_score,
#define CPU_OPT_OP_ENTRY(name, params, args) .name = cpu_op_##name,
    ST_OPT_OP_MAP(CPU_OPT_OP_ENTRY)
#undef CPU_OPT_OP_ENTRY
};
