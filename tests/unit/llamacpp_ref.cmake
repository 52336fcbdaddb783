# Next-token choices against llama.cpp's, on files make-model writes
# (reference data in tests/data/llamacpp/).
st_add_check_test(llamacpp_ref SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llamacpp_ref.c
                  LIBS st_model m SLOW_CASES TIMEOUT 900)
