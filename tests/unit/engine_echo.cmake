# Echo and prompt logprobs (src/engine/prompt.c, score.c): scoring equals
# forced generation on the CPU model runner, chunked reads agree, a cached
# prefix is still scored; the sim's made-up numbers.
st_add_check_test(engine_echo SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_echo.c
                  LIBS st_engine m TIMEOUT 300)
target_include_directories(test_engine_echo PRIVATE ${PROJECT_SOURCE_DIR}/src)
