# bench_jsmask: the json_schema mask in bounded and pattern strings, with and
# without the string fast path, Qwen3 vocabulary (not a ctest;
# usage in the file header).
add_executable(bench_jsmask ${CMAKE_CURRENT_LIST_DIR}/bench_jsmask.c
               ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref/hf_tokenizer.c)
target_include_directories(bench_jsmask PRIVATE ${PROJECT_SOURCE_DIR}/src
                           ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref
                           ${PROJECT_SOURCE_DIR}/tests/unit)
target_link_libraries(bench_jsmask PRIVATE st_engine PkgConfig::CJSON st_warnings)
