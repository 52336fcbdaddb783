# bench_sched: the scheduler's cost (issue 3 item 9b): decisions per second
# with 100k waiting, st_sched_stats with 10k waiting (not a ctest; scripts/bench.sh or by
# hand: build-x/tests/bench_sched [waiting] [decisions]).
add_executable(bench_sched ${CMAKE_CURRENT_LIST_DIR}/bench_sched.c)
target_link_libraries(bench_sched PRIVATE st_sched st_warnings)
