# The whole model on the CUDA backend against the CPU backend: greedy decoding
# through the graphed forward, the device draw, MTP verify and drafts. Built
# in every configuration; without a CUDA backend or a GPU it exits 77
# (skipped). STRATA_CUDA_TEST_AS=cpu rehearses it without a GPU.
st_add_check_test(cuda_model SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cuda_model.c
                  LIBS st_model m LABELS "unit;cuda" TIMEOUT 600 COST 40)
