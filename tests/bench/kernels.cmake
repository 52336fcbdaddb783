# bench_kernels: matmul throughput per weight type on the medium preset's
# shapes, best kernels vs the scalar reference (not a ctest; scripts/bench.sh or by hand:
# build-x/tests/bench_kernels [threads]).
add_executable(bench_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_kernels.c)
target_include_directories(bench_kernels PRIVATE ${PROJECT_SOURCE_DIR}/src/backend)
target_link_libraries(bench_kernels PRIVATE st_backend st_util st_warnings m)
