/* backend.c -- the registry of backends and the public st_backend_* calls.
 *
 * Every public op first validates shapes and dtypes (op_check.c, shared by all
 * backends so they agree on what is legal) and then dispatches through the
 * backend's op table. Memory calls validate their arguments here too, so
 * a backend's entries only ever see well-formed requests.
 */
#include <stdio.h>
#include <string.h>

#include "op_check.h"
#include "internal.h"
#include "strata/compiler.h"

static const struct st_backend_ops *const registry[] = {
    &st_backend_cpu_ops,
#ifdef STRATA_HAVE_CUDA
    &st_backend_cuda_ops,
#endif
};

static const struct st_backend_ops *find_ops(const char *name)
{
    for (size_t i = 0; i < ST_ARRAY_LEN(registry); i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

static const char *const op_names[] = {
#define ST_OP_NAME(name, params, args) #name,
    ST_OP_MAP(ST_OP_NAME)
#undef ST_OP_NAME
};

const char *st_op_name(enum st_op op)
{
    if ((unsigned)op >= ST_OP_COUNT)
        return "?";
    return op_names[op];
}

bool st_backend_available(const char *name)
{
    return name && find_ops(name) != NULL;
}

enum st_status st_backend_check_ops(const char *name, struct st_err *err)
{
    const struct st_backend_ops *ops = find_ops(name);

    if (!ops)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "backend '%s' is not built in", name);
    if (!ops->open || !ops->close || !ops->describe || !ops->alloc || !ops->wrap ||
        !ops->release || !ops->write || !ops->read || !ops->sync || !ops->copy)
        return st_err_set(err, ST_ERR_INTERNAL, "backend '%s': a memory entry is NULL", name);
#define ST_OP_CHECK(opname, params, args)                                                \
    if (!ops->opname)                                                                  \
        return st_err_set(err, ST_ERR_INTERNAL, "backend '%s' lacks op %s", name, #opname);
    ST_OP_MAP(ST_OP_CHECK)
#undef ST_OP_CHECK
    return ST_OK;
}

enum st_status st_backend_open(const char *name, const struct st_backend_config *cfg,
                               struct st_backend **out, struct st_err *err)
{
    static const struct st_backend_config defaults = { 0, 0 };
    const struct st_backend_ops *ops;
    char built[128] = "";

    *out = NULL;
    ops = name ? find_ops(name) : NULL;
    if (!ops) {
        for (size_t i = 0; i < ST_ARRAY_LEN(registry); i++) {
            strncat(built, i ? ", " : "", sizeof(built) - strlen(built) - 1);
            strncat(built, registry[i]->name, sizeof(built) - strlen(built) - 1);
        }
        return st_err_set(err, ST_ERR_UNSUPPORTED,
                          "backend '%s' is not built into this binary (built: %s)",
                          name ? name : "(null)", built);
    }
    if (cfg && cfg->n_threads < 0)
        return st_err_set(err, ST_ERR_INVALID, "backend %s: thread count %d is negative",
                          name, cfg->n_threads);
    return ops->open(cfg ? cfg : &defaults, out, err);
}

void st_backend_close(struct st_backend *be)
{
    if (be)
        be->ops->close(be);
}

const char *st_backend_name(const struct st_backend *be)
{
    return be->ops->name;
}

const char *st_backend_describe(const struct st_backend *be)
{
    return be->ops->describe(be);
}

/* Validate (type, ne), fill the descriptor and return its byte size. */
static enum st_status init_desc(struct st_backend *be, enum st_dtype type,
                                const int64_t ne[ST_TENSOR_DIMS], struct st_tensor *t,
                                size_t *nbytes, struct st_err *err)
{
    memset(t, 0, sizeof(*t));
    t->type = type;
    t->be = be;
    for (int d = 0; d < ST_TENSOR_DIMS; d++) {
        if (ne[d] < 1)
            return st_err_set(err, ST_ERR_INVALID, "tensor dim %d is %lld (must be >= 1)",
                              d, (long long)ne[d]);
        t->ne[d] = ne[d];
    }
    size_t row = st_dtype_row_bytes(type, ne[0]);
    if (row == 0)
        return st_err_set(err, ST_ERR_INVALID,
                          "tensor of type %u: %lld elements are not whole blocks",
                          (unsigned)type, (long long)ne[0]);
    size_t n = row;
    for (int d = 1; d < ST_TENSOR_DIMS; d++)
        if (__builtin_mul_overflow(n, (size_t)ne[d], &n))
            return st_err_set(err, ST_ERR_INVALID, "tensor size overflows");
    *nbytes = n;
    return ST_OK;
}

/* An owned tensor of 'type' and shape 'ne'; lazy: its memory is committed
 * as it is written (st_backend_alloc_lazy). */
static enum st_status alloc_tensor(struct st_backend *be, enum st_dtype type,
                                   const int64_t ne[ST_TENSOR_DIMS], bool lazy,
                                   struct st_tensor *out, struct st_err *err)
{
    struct st_tensor t;
    size_t nbytes = 0;
    enum st_status rc = init_desc(be, type, ne, &t, &nbytes, err);

    memset(out, 0, sizeof(*out));
    if (rc != ST_OK)
        return rc;
    if (lazy && !be->ops->alloc_lazy)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "the %s backend has no lazily committed "
                          "memory", be->ops->name);
    t.flags = ST_TENSOR_OWNED | (lazy ? ST_TENSOR_LAZY : 0);
    rc = lazy ? be->ops->alloc_lazy(be, &t, nbytes, err) : be->ops->alloc(be, &t, nbytes, err);
    if (rc == ST_OK)
        *out = t;
    return rc;
}

enum st_status st_backend_alloc(struct st_backend *be, enum st_dtype type,
                                const int64_t ne[ST_TENSOR_DIMS], struct st_tensor *out,
                                struct st_err *err)
{
    return alloc_tensor(be, type, ne, false, out, err);
}

enum st_status st_backend_alloc_lazy(struct st_backend *be, enum st_dtype type,
                                     const int64_t ne[ST_TENSOR_DIMS], struct st_tensor *out,
                                     struct st_err *err)
{
    return alloc_tensor(be, type, ne, true, out, err);
}

static enum st_status check_range(const struct st_tensor *t, size_t offset, size_t n,
                                  const char *what, struct st_err *err);

size_t st_backend_discard(struct st_backend *be, const struct st_tensor *t, size_t offset,
                          size_t n)
{
    struct st_err err = { 0 };
    if (!t || t->be != be || !(t->flags & ST_TENSOR_LAZY) || !be->ops->discard || n == 0 ||
        check_range(t, offset, n, "discard", &err) != ST_OK)
        return 0;
    return be->ops->discard(be, t, offset, n);
}

size_t st_backend_resident(struct st_backend *be, const struct st_tensor *t)
{
    if (!t || !t->be)
        return 0;
    if ((t->flags & ST_TENSOR_LAZY) && be->ops->resident)
        return be->ops->resident(be, t);
    return st_tensor_nbytes(t);
}

enum st_status st_backend_wrap(struct st_backend *be, enum st_dtype type,
                               const int64_t ne[ST_TENSOR_DIMS], const void *host,
                               size_t nbytes, struct st_tensor *out, struct st_err *err)
{
    struct st_tensor t;
    size_t want = 0;
    enum st_status rc = init_desc(be, type, ne, &t, &want, err);

    memset(out, 0, sizeof(*out));
    if (rc != ST_OK)
        return rc;
    if (want != nbytes || !host)
        return st_err_set(err, ST_ERR_INVALID, "wrap: %zu bytes given, the shape needs %zu",
                          nbytes, want);
    t.flags = ST_TENSOR_WRAPPED;
    rc = be->ops->wrap(be, &t, host, nbytes, err);
    if (rc == ST_OK)
        *out = t;
    return rc;
}

void st_backend_release(struct st_backend *be, struct st_tensor *t)
{
    if (!t || !t->be || (t->flags & ST_TENSOR_VIEW))
        return;
    ST_ASSERT(t->be == be);
    be->ops->release(be, t);
    memset(t, 0, sizeof(*t));
}

static enum st_status check_range(const struct st_tensor *t, size_t offset, size_t n,
                                  const char *what, struct st_err *err)
{
    size_t total = st_tensor_nbytes(t);
    if (!t->be || offset > total || n > total - offset)
        return st_err_set(err, ST_ERR_INVALID, "%s: bytes [%zu, +%zu) outside a %zu-byte tensor",
                          what, offset, n, total);
    return ST_OK;
}

enum st_status st_backend_write(struct st_backend *be, const struct st_tensor *t,
                                size_t offset, const void *src, size_t n, struct st_err *err)
{
    enum st_status rc = check_range(t, offset, n, "write", err);
    return rc != ST_OK ? rc : be->ops->write(be, t, offset, src, n, err);
}

enum st_status st_backend_read(struct st_backend *be, const struct st_tensor *t,
                               size_t offset, void *dst, size_t n, struct st_err *err)
{
    enum st_status rc = check_range(t, offset, n, "read", err);
    return rc != ST_OK ? rc : be->ops->read(be, t, offset, dst, n, err);
}

enum st_status st_backend_sync(struct st_backend *be, struct st_err *err)
{
    return be->ops->sync(be, err);
}

enum st_status st_backend_copy(struct st_backend *be, const struct st_tensor *dst,
                               size_t dst_off, const struct st_tensor *src, size_t src_off,
                               size_t n, struct st_err *err)
{
    if (!dst || !src || dst->be != be || src->be != be)
        return st_err_set(err, ST_ERR_INVALID, "copy: both tensors must belong to backend %s",
                          be->ops->name);
    ST_TRY(check_range(dst, dst_off, n, "copy (destination)", err));
    ST_TRY(check_range(src, src_off, n, "copy (source)", err));
    if (dst->flags & ST_TENSOR_WRAPPED)
        return st_err_set(err, ST_ERR_INVALID, "copy: the destination is a wrapped weight");
    if (n == 0)
        return ST_OK;
    /* Host and device pointers alike are addresses in one space: ranges of
     * one storage overlap exactly when their address ranges do. */
    uintptr_t d = (uintptr_t)dst->data + dst_off, s = (uintptr_t)src->data + src_off;
    if (d < s + n && s < d + n)
        return st_err_set(err, ST_ERR_INVALID, "copy: the %zu-byte ranges at source offset "
                          "%zu and destination offset %zu overlap", n, src_off, dst_off);
    return be->ops->copy(be, dst, dst_off, src, src_off, n, err);
}

/* ---- optional ops (backend.h) -------------------------------------------- */

enum st_status st_backend_graph_begin(struct st_backend *be, uint64_t key, bool *replayed,
                                      struct st_err *err)
{
    *replayed = false;
    if (key == 0)
        return st_err_set(err, ST_ERR_INVALID, "graph_begin: key 0 is reserved");
    return be->ops->graph_begin ? be->ops->graph_begin(be, key, replayed, err) : ST_OK;
}

enum st_status st_backend_graph_end(struct st_backend *be, struct st_err *err)
{
    return be->ops->graph_end ? be->ops->graph_end(be, err) : ST_OK;
}

static bool vec_ok(struct st_backend *be, ST_T t, enum st_dtype type, int64_t n)
{
    return t && t->be == be && t->data && t->type == type && t->ne[0] == n && t->ne[1] == 1 &&
           t->ne[2] == 1 && t->ne[3] == 1;
}

enum st_status st_backend_sample(struct st_backend *be, ST_T ids, ST_T logits, ST_T draws,
                                 struct st_err *err)
{
    int64_t n;

    if (!logits || logits->be != be || !logits->data || logits->type != ST_DTYPE_F32 ||
        logits->ne[2] != 1 || logits->ne[3] != 1)
        return st_err_set(err, ST_ERR_INVALID, "sample: logits must be f32 [V, n]");
    n = logits->ne[1];
    if (!vec_ok(be, ids, ST_DTYPE_I32, n))
        return st_err_set(err, ST_ERR_INVALID, "sample: ids must be i32 [%lld]", (long long)n);
    if (!draws || draws->be != be || !draws->data || draws->type != ST_DTYPE_I32 ||
        draws->ne[0] != ST_DRAW_WORDS || draws->ne[1] != n || draws->ne[2] != 1 ||
        draws->ne[3] != 1)
        return st_err_set(err, ST_ERR_INVALID, "sample: draws must be i32 [%lld, %lld]",
                          (long long)ST_DRAW_WORDS, (long long)n);
    if (!be->ops->sample)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "sample: backend %s has no sampler",
                          be->ops->name);
    return be->ops->sample(be, ids, logits, draws, err);
}

static bool score_out_ok(struct st_backend *be, ST_T t, enum st_dtype type, int64_t n)
{
    return t && t->be == be && t->data && t->type == type && t->ne[0] >= 1 &&
           t->ne[0] <= 1 + ST_SCORE_MAX_TOP && t->ne[1] == n && t->ne[2] == 1 && t->ne[3] == 1;
}

/* Shapes here; 'next' in [-1, V) is checked by the backend, which holds the
 * ids (CPU: before scoring, ST_ERR_INVALID; CUDA: the kernel scores such a
 * row as -1 and reports ST_KF_BAD_ID at the next read or sync). */
enum st_status st_backend_score(struct st_backend *be, ST_T vals, ST_T ids, ST_T logits,
                                ST_T next, struct st_err *err)
{
    if (!logits || logits->be != be || !logits->data || logits->type != ST_DTYPE_F32 ||
        logits->ne[2] != 1 || logits->ne[3] != 1)
        return st_err_set(err, ST_ERR_INVALID, "score: logits must be f32 [V, n]");
    const int64_t V = logits->ne[0], n = logits->ne[1];
    if (!vec_ok(be, next, ST_DTYPE_I32, n))
        return st_err_set(err, ST_ERR_INVALID, "score: next must be i32 [%lld]", (long long)n);
    if (!score_out_ok(be, vals, ST_DTYPE_F32, n) || !score_out_ok(be, ids, ST_DTYPE_I32, n) ||
        ids->ne[0] != vals->ne[0])
        return st_err_set(err, ST_ERR_INVALID, "score: vals and ids must be f32/i32 [1 + K, "
                          "%lld] with 0 <= K <= %d", (long long)n, ST_SCORE_MAX_TOP);
    if (vals->ne[0] - 1 > V)
        return st_err_set(err, ST_ERR_INVALID, "score: %lld alternatives of a vocabulary of "
                          "%lld", (long long)(vals->ne[0] - 1), (long long)V);
    if (!be->ops->score)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "score: backend %s has no scorer",
                          be->ops->name);
    return be->ops->score(be, vals, ids, logits, next, err);
}

void st_backend_stats(const struct st_backend *be, struct st_backend_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->ops = be->n_ops;
    if (be->ops->stats)
        be->ops->stats(be, out);
}

/* The public ops: validate, count, then dispatch. */
#define ST_OP_WRAPPER(name, params, args)                                                \
    enum st_status st_backend_##name params                                            \
    {                                                                                  \
        enum st_status rc = st_check_##name args;                                      \
        if (rc != ST_OK)                                                               \
            return rc;                                                                 \
        be->n_ops++;                                                                   \
        return be->ops->name args;                                                     \
    }
ST_OP_MAP(ST_OP_WRAPPER)
#undef ST_OP_WRAPPER
