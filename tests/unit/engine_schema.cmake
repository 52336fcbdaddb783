# response_format json_schema in the sampler (mask vs validator on a small
# vocabulary) and through the engine loop on the CPU model runner. It
# reaches src/engine/pool.h (the sampler).
st_add_check_test(engine_schema SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_schema.c
                  LIBS st_engine m TIMEOUT 600 SLOW_CASES)
target_include_directories(test_engine_schema PRIVATE ${PROJECT_SOURCE_DIR}/src)
