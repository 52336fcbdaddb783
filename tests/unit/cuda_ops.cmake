# Every op on the CUDA backend against the CPU backend (public API only).
# Built in every configuration: without a CUDA backend or without a GPU it
# exits 77, which ctest reports as skipped. On a GPU machine: ctest -L cuda.
st_add_check_test(cuda_ops SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cuda_ops.c
                  LIBS st_backend LABELS "unit;cuda" TIMEOUT 600)
