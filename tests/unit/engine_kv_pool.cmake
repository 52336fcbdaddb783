# The unified KV pool (--kv-unified, src/engine/kv_pool.c): the accounting
# on the sim (room at admission, waiting, LRU eviction of idle prefixes,
# "length" when dry) and the memory on the CPU (lazy tensors, a cut slot's
# tail given back). It reaches src/runner/runner_model.h.
st_add_check_test(engine_kv_pool SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_kv_pool.c
                  LIBS st_engine m TIMEOUT 300)
target_include_directories(test_engine_kv_pool PRIVATE ${PROJECT_SOURCE_DIR}/src)
