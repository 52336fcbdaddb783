st_add_check_test(jinja_golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_jinja_golden.c LIBS st_chat)
target_include_directories(test_jinja_golden PRIVATE ${PROJECT_SOURCE_DIR}/src)
