/* cpu_scratch.c -- the backend's scratch buffer, grown on demand.
 *
 * Its own file because the ops (attention, matmul, MoE) borrow it and the
 * op table in cpu_backend.c calls those ops: kept in cpu_backend.c it
 * would tie the two into a cycle.
 */
#include <stdlib.h>

#include "cpu.h"

#define ALIGN 64

void *cpu_scratch(struct cpu_backend *cb, size_t n)
{
    if (n <= cb->scratch_size)
        return cb->scratch;
    size_t want = n + n / 4 + ALIGN;
    void *p = NULL;
    if (posix_memalign(&p, ALIGN, (want + ALIGN - 1) / ALIGN * ALIGN) != 0)
        return NULL;
    free(cb->scratch);
    cb->scratch = p;
    cb->scratch_size = want;
    return p;
}

void cpu_scratch_free(struct cpu_backend *cb)
{
    free(cb->scratch);
    cb->scratch = NULL;
    cb->scratch_size = 0;
}
