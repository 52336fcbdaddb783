/* cuemu_internal.h -- what the pieces of cuemu share: the stream queue
 * (cuemu_runtime.cpp: run an operation now, or record it while the stream
 * is captured into a graph), the memory registry (device and pinned
 * allocations, checked by copies, kernel arguments and cuBLAS), the grid
 * executor (cuemu_exec.cpp) and the one way to stop on a misuse.
 */
#ifndef CUEMU_INTERNAL_H
#define CUEMU_INTERNAL_H

#include <stddef.h>

#include <functional>

#include "cuda_runtime.h"

/* Record e (not cudaSuccess) as this OS thread's last error, the one
 * cudaGetLastError returns and clears; returns e. */
cudaError_t cuemu_set_error(cudaError_t e);

/* Run 'op' on stream s now, or record it when s is being captured. */
cudaError_t cuemu_enqueue(cudaStream_t s, std::function<void()> op);

enum cuemu_mem { CUEMU_MEM_NONE, CUEMU_MEM_DEVICE, CUEMU_MEM_PINNED };
/* What [p, p + n) lies in: one device allocation (*device set to its GPU),
 * one pinned host allocation, or neither. */
enum cuemu_mem cuemu_mem_of(const void *p, size_t n, int *device);
/* The current device of this OS thread. */
int cuemu_current_device(void);

/* Run every block of the launch (cuemu_exec.cpp). */
void cuemu_exec_grid(const cuemu_cfg &c, const std::function<void()> &body);

/* Print "cuemu: <what>" and abort: the program broke a CUDA rule the GPU
 * would punish (a hang, an illegal address, undefined results). */
[[noreturn]] void cuemu_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* CUEMU_INTERNAL_H */
