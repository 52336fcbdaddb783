st_add_check_test(json_prefix SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json_prefix.c LIBS st_grammar)
