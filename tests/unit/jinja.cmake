st_add_check_test(jinja SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_jinja.c LIBS st_chat)
target_include_directories(test_jinja PRIVATE ${PROJECT_SOURCE_DIR}/src)
