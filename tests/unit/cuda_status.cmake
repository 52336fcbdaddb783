# The CUDA backend's error mapping (src/backend/cuda/cuda_status.c) on a
# backend struct of the test's own: no kernel, no device needed (the runtime
# is asked only for free memory). Only with the CUDA backend.
if(STRATA_HAVE_CUDA)
    st_add_check_test(cuda_status SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cuda_status.c
                      LIBS st_backend st_kernels CUDA::cublas LABELS "unit;cuda")
    target_include_directories(test_cuda_status PRIVATE ${PROJECT_SOURCE_DIR}/src/backend/cuda)
endif()
