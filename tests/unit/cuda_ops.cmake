# Every op on the CUDA backend against the CPU backend (public API only).
# Built in every configuration: without a CUDA backend or without a GPU it
# exits 77, which ctest reports as skipped. On a GPU machine: ctest -L cuda.
# On tests/cuemu (-DSTRATA_CUDA_EMU=ON) it runs for real on the CPU: minutes
# under the sanitizers, hence the longer limit there.
if(STRATA_CUDA_EMU)
    set(ST_CUDA_OPS_TIMEOUT 1800)
else()
    set(ST_CUDA_OPS_TIMEOUT 600)
endif()
st_add_check_test(cuda_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cuda_ops.c
                  LIBS st_backend LABELS "unit;cuda" TIMEOUT ${ST_CUDA_OPS_TIMEOUT} COST 130)
