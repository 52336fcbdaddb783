# tool_choice "required" / a named function in the sampler (mask vs the call
# grammar on a small vocabulary) and through the engine loop on the CPU
# model runner, with and without MTP. It reaches src/engine/pool.h.
st_add_check_test(engine_calls SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_calls.c
                  LIBS st_engine m TIMEOUT 600 SLOW_CASES COST 130)
target_include_directories(test_engine_calls PRIVATE ${PROJECT_SOURCE_DIR}/src)
