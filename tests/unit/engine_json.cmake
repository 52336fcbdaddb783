# response_format json_object through the engine loop on the CPU model
# runner: the text is a JSON prefix, and MTP on/off agree token for token.
# It reaches src/engine/pool.h (the pool stats' MTP counters).
st_add_check_test(engine_json SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_json.c
                  LIBS st_engine m TIMEOUT 600)
target_include_directories(test_engine_json PRIVATE ${PROJECT_SOURCE_DIR}/src)
