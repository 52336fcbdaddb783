# The CUDA kernels' block decoders (kernels/quant_dev.cuh), compiled for the
# host and checked against the C reference: runs without a GPU, so CI that
# has nvcc tests them. Only with a CUDA compiler.
if(STRATA_HAVE_CUDA)
    st_add_check_test(cuda_kern_host SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cuda_kern_host.cu
                      LIBS st_backend st_kernels LABELS "unit;cuda")
    set_target_properties(test_cuda_kern_host PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                          CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
    if(STRATA_CUDA_EMU)
        set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/test_cuda_kern_host.cu
                                    PROPERTIES LANGUAGE CXX)
        target_compile_options(test_cuda_kern_host PRIVATE -Wno-unknown-pragmas)
    endif()
    target_compile_options(test_cuda_kern_host PRIVATE
        $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
endif()
