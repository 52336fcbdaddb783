# bench_priority: issue 3 item 9a, the seed's two real-engine scenarios on
# the sim engine (manual clock, instant), with and without priority (not a
# ctest; scripts/bench.sh or by hand: build-x/tests/bench_priority [prompt_tps decode_tps]).
add_executable(bench_priority ${CMAKE_CURRENT_LIST_DIR}/bench_priority.c)
target_include_directories(bench_priority PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)
target_link_libraries(bench_priority PRIVATE st_engine st_warnings)
