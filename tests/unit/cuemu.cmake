# tests/cuemu itself (the CPU emulation the CUDA suites run on without a
# GPU): its warp intrinsics, barriers, runtime rules and GEMMs against what
# CUDA specifies. Only in the emulated configuration (-DSTRATA_CUDA_EMU=ON).
if(STRATA_CUDA_EMU)
    st_add_check_test(cuemu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cuemu.cu
                      LIBS st_backend st_kernels LABELS "unit;cuda")
    set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/test_cuemu.cu PROPERTIES LANGUAGE CXX)
    set_target_properties(test_cuemu PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
    target_compile_options(test_cuemu PRIVATE -Wno-unknown-pragmas)
endif()
