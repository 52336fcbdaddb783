st_add_check_test(quant SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_quant.c LIBS st_backend m)
