/* cuda_runtime.h -- cuemu: the runtime API (cuda_runtime_api.h) and, for
 * C++ (the kernels), the device side run on the CPU (cuemu_device.h).
 */
#ifndef CUEMU_CUDA_RUNTIME_H
#define CUEMU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
#include "cuemu_device.h"
#endif

#endif /* CUEMU_CUDA_RUNTIME_H */
