# bench_prefix: prefix sharing across slots (docs/BATCHING.md "Prefix
# reuse") on the CPU model runner: a second request's time to first token
# and a 4-slot multiple choice, copy vs cold read (not a ctest; run by
# scripts/bench.sh or by hand: build-x/tests/bench_prefix MODEL.gguf ...).
add_executable(bench_prefix ${CMAKE_CURRENT_LIST_DIR}/bench_prefix.c)
target_link_libraries(bench_prefix PRIVATE st_engine st_warnings)
