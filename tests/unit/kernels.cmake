# The CPU dot kernels: every SIMD table against the scalar reference, and
# the scalar reference against the dequantizers. src/backend is on the
# include path for the backend's private cpu/cpu.h.
st_add_check_test(kernels SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernels.c LIBS st_backend)
target_include_directories(test_kernels PRIVATE ${PROJECT_SOURCE_DIR}/src/backend)
