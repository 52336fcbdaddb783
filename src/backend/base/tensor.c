/* tensor.c -- pure helpers on struct st_tensor: sizes, slices, reshapes.
 *
 * No backend is called and nothing is allocated: a view is a copy of the
 * descriptor with 'data' moved along. That works for device pointers too,
 * because storage is dense and a view's offset is plain byte arithmetic.
 */
#include "strata/backend.h"
#include "strata/compiler.h"

int64_t st_tensor_nelem(const struct st_tensor *t)
{
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

int64_t st_tensor_nrows(const struct st_tensor *t)
{
    return t->ne[1] * t->ne[2] * t->ne[3];
}

size_t st_tensor_row_bytes(const struct st_tensor *t)
{
    return st_dtype_row_bytes(t->type, t->ne[0]);
}

size_t st_tensor_nbytes(const struct st_tensor *t)
{
    return st_tensor_row_bytes(t) * (size_t)st_tensor_nrows(t);
}

struct st_tensor st_tensor_slice(const struct st_tensor *t, int dim, int64_t start,
                                 int64_t len)
{
    struct st_tensor v = *t;
    size_t stride;

    ST_ASSERT(dim >= 1 && dim < ST_TENSOR_DIMS);
    ST_ASSERT(start >= 0 && len >= 1 && start + len <= t->ne[dim]);
    for (int d = dim + 1; d < ST_TENSOR_DIMS; d++)
        ST_ASSERT(t->ne[d] == 1);
    stride = st_tensor_row_bytes(t);
    for (int d = 1; d < dim; d++)
        stride *= (size_t)t->ne[d];
    v.ne[dim] = len;
    v.data = (char *)t->data + (size_t)start * stride;
    v.flags = ST_TENSOR_VIEW;
    return v;
}

struct st_tensor st_tensor_reshape(const struct st_tensor *t,
                                   const int64_t ne[ST_TENSOR_DIMS])
{
    struct st_tensor v = *t;

    for (int d = 0; d < ST_TENSOR_DIMS; d++)
        v.ne[d] = ne[d];
    ST_ASSERT(st_tensor_nelem(&v) == st_tensor_nelem(t));
    ST_ASSERT(st_tensor_row_bytes(&v) != 0);
    v.flags = ST_TENSOR_VIEW;
    return v;
}
