# tests/gpu: the GPU check's measuring tool (run by tests/gpu/run.sh, not by
# ctest). Needs only st_model + st_backend, so it builds without the server.
add_executable(gpu_bench ${CMAKE_CURRENT_LIST_DIR}/gpu_bench.c)
target_link_libraries(gpu_bench PRIVATE st_model st_backend st_util st_warnings m)
