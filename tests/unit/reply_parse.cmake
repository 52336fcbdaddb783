st_add_check_test(reply_parse SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_reply_parse.c LIBS st_reply)
