st_add_check_test(tokenizer SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer.c LIBS st_tok)
target_include_directories(test_tokenizer PRIVATE ${PROJECT_SOURCE_DIR}/src)
