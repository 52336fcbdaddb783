st_add_check_test(chat_fast_path SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_chat_fast_path.c LIBS st_chat st_model)
target_include_directories(test_chat_fast_path PRIVATE ${PROJECT_SOURCE_DIR}/src)
