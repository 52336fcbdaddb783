st_add_check_test(detok SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_detok.c LIBS st_tok)
target_include_directories(test_detok PRIVATE ${PROJECT_SOURCE_DIR}/src)
