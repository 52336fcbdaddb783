st_add_check_test(util SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_util.c LIBS st_util)
