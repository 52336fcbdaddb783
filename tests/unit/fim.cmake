st_add_check_test(fim SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fim.c LIBS st_chat)
target_include_directories(test_fim PRIVATE ${PROJECT_SOURCE_DIR}/src)
