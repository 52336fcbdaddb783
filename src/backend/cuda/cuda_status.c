/* cuda_status.c -- the CUDA backend's error mapping (STYLE.md b.4): CUDA
 * and cuBLAS results, a launcher's answer, the entry check every op makes
 * and the device's error word. Nothing here aborts; sticky errors poison
 * the backend (cuda_internal.h).
 */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "strata/log.h"

#define MIB (1024.0 * 1024.0)

static bool sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError: case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc: case cudaErrorAssert: case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable: case cudaErrorUnknown:
        return true;
    default:
        return false;
    }
}

/* Where every failed CUDA or cuBLAS call becomes a status ('lib' prefixes
 * the library, "" for the runtime; 'detail' is what it said): out of
 * memory names the call and what the device has free; a failure that
 * leaves the device unusable poisons the backend once (cuda_enter then
 * refuses every op) and logs why; anything else is a device error naming
 * the call. */
static enum st_status failed(struct cuda_backend *cb, const char *lib, bool oom, bool unusable,
                             const char *detail, const char *what, const char *file, int line,
                             struct st_err *err)
{
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    int device = cb ? cb->device : -1;

    if (oom) {
        size_t free_b = 0, total_b = 0;
        (void)cudaGetLastError();
        (void)cudaMemGetInfo(&free_b, &total_b);
        return st_err_set(err, ST_ERR_DEVICE_OOM,
                          "cuda:%d %sout of memory in %s (%s:%d); %.1f MiB free of %.1f MiB",
                          device, lib, what, base, line, (double)free_b / MIB,
                          (double)total_b / MIB);
    }
    if (cb && unusable && !cb->poisoned) {
        cb->poisoned = true;
        snprintf(cb->poison_msg, sizeof(cb->poison_msg), "%s%s in %s (%s:%d)", lib, detail, what,
                 base, line);
        st_log(ST_LOG_ERROR, "cuda", "device %d is unusable: %s", cb->device, cb->poison_msg);
    }
    return st_err_set(err, ST_ERR_DEVICE, "cuda:%d %s%s: %s (%s:%d)", device, lib, what, detail,
                      base, line);
}

enum st_status cuda_status(struct cuda_backend *cb, cudaError_t e, const char *what,
                           const char *file, int line, struct st_err *err)
{
    if (e == cudaSuccess)
        return ST_OK;
    if (e != cudaErrorMemoryAllocation && !sticky(e))
        (void)cudaGetLastError();   /* clear a non-sticky error so later calls are clean */
    return failed(cb, "", e == cudaErrorMemoryAllocation, sticky(e), cudaGetErrorString(e), what,
                  file, line, err);
}

enum st_status cuda_launched(struct cuda_backend *cb, cudaError_t e, const char *what,
                             const char *file, int line, struct st_err *err)
{
    if (e == cudaErrorInvalidValue)
        return st_err_set(err, ST_ERR_UNSUPPORTED, "cuda: %s: shape not supported by the kernel",
                          what);
    return cuda_status(cb, e, what, file, line, err);
}

enum st_status cuda_blas_status(struct cuda_backend *cb, cublasStatus_t s, const char *what,
                                const char *file, int line, struct st_err *err)
{
    char detail[48];

    if (s == CUBLAS_STATUS_SUCCESS)
        return ST_OK;
    snprintf(detail, sizeof(detail), "%sstatus %d",
             s == CUBLAS_STATUS_EXECUTION_FAILED ? "execution failed, " : "", (int)s);
    return failed(cb, "cuBLAS ", s == CUBLAS_STATUS_ALLOC_FAILED,
                  s == CUBLAS_STATUS_EXECUTION_FAILED, detail, what, file, line, err);
}

enum st_status cuda_enter(struct cuda_backend *cb, struct st_err *err)
{
    int cur = -1;

    if (cb->poisoned)
        return st_err_set(err, ST_ERR_DEVICE, "cuda:%d is unusable after an earlier error: %s",
                          cb->device, cb->poison_msg);
    /* Every op comes here, also while a graph is captured: only switch
     * when needed (cheaper, and no device call inside a capture). */
    if (cudaGetDevice(&cur) == cudaSuccess && cur == cb->device)
        return ST_OK;
    return ST_CUDA(cb, cudaSetDevice(cb->device), err);
}

enum st_status cuda_check_flag(struct cuda_backend *cb, struct st_err *err)
{
    unsigned f = *cb->err_host;
    char what[128] = "";

    if (f == 0)
        return ST_OK;
    *cb->err_host = 0;
    (void)cudaMemsetAsync(cb->err_flag, 0, sizeof(unsigned), cb->stream);
    if (f & ST_KF_BAD_ID)
        strcat(what, " token id");
    if (f & ST_KF_BAD_SLOT)
        strcat(what, " slot");
    if (f & ST_KF_BAD_POS)
        strcat(what, " position");
    if (f & ST_KF_BAD_EXPERT)
        strcat(what, " expert id");
    return st_err_set(err, ST_ERR_INVALID,
                      "cuda:%d an op got an out-of-range%s (the rows were clamped or skipped)",
                      cb->device, what);
}

const char *cuda_type_name(enum st_dtype t)
{
    const struct st_dtype_info *info = st_dtype_info((uint32_t)t);
    return info && info->name ? info->name : "?";
}
