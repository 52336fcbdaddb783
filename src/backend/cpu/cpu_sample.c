/* cpu_sample.c -- the optional sampler of the op table on the CPU: each
 * row through the host chain of include/strata/draw.h (st_draw_row), the
 * reference the CUDA kernel (kernels/sample.cu) is tested against.
 *
 * Per row: keep the k best (logit, id) pairs in a small sorted array while
 * scanning the row once (k <= 256, so an insertion is cheap next to the
 * scan), then top-p, min-p and the draw over those k.
 */
#include "cpu.h"
#include "strata/draw.h"

enum st_status cpu_op_sample(struct st_backend *be, ST_T ids, ST_T logits, ST_T draws,
                             struct st_err *err)
{
    const int64_t n = logits->ne[1], V = logits->ne[0];
    const struct st_draw *d = draws->data;
    int32_t *out = ids->data;

    (void)be;
    (void)err;
    for (int64_t r = 0; r < n; r++)
        out[r] = st_draw_row((const float *)logits->data + r * V, V, &d[r]);
    return ST_OK;
}
