st_add_check_test(gguf SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gguf.c LIBS st_model)
