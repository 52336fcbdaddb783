# The slots' KV as KV-event blocks (src/engine/kv_blocks.c): the sim on a
# manual clock, the events read from the queue (no ZeroMQ needed).
st_add_check_test(engine_kv_blocks SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_kv_blocks.c
                  LIBS st_engine m TIMEOUT 120)
target_include_directories(test_engine_kv_blocks PRIVATE ${PROJECT_SOURCE_DIR}/src)
