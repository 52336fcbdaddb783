st_add_check_test(util_out SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_util_out.c LIBS st_util)
