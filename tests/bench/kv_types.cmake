# bench_kv_types: the accuracy cost of a Q8_0 KV cache against F16 on one
# model (docs/ENGINE.md "KV cache types"; not a ctest; by hand:
# build-x/tests/bench_kv_types MODEL.gguf [prompt] [generated] [threads]).
add_executable(bench_kv_types ${CMAKE_CURRENT_LIST_DIR}/bench_kv_types.c)
target_link_libraries(bench_kv_types PRIVATE st_model m st_warnings)
