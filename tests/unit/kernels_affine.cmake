# Q4_1 / Q5_1 dots against a double reference from the GGUF block
# definition: exact in the min term (no fp16 rounding of the block sum).
st_add_check_test(kernels_affine SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernels_affine.c
                  LIBS st_backend)
target_include_directories(test_kernels_affine PRIVATE ${PROJECT_SOURCE_DIR}/src/backend)
