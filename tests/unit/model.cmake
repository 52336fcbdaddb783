st_add_check_test(model SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model.c LIBS st_model m
                  TIMEOUT 300)
