st_add_check_test(chat SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_chat.c LIBS st_chat)
target_include_directories(test_chat PRIVATE ${PROJECT_SOURCE_DIR}/src)
