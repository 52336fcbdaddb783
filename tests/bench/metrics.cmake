# bench_metrics: one /metrics scrape (stats snapshots + the full text) with
# 10,000 waiting against an empty queue in the same run (issue 21: under
# 1 ms for a picker scraping every 50 ms). Not a ctest; scripts/bench.sh
# or by hand: build-x/tests/bench_metrics [waiting] [scrapes].
if(TARGET st_server)
    add_executable(bench_metrics ${CMAKE_CURRENT_LIST_DIR}/bench_metrics.c)
    target_include_directories(bench_metrics PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(bench_metrics PRIVATE st_server st_warnings)
endif()
