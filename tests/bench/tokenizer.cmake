# bench_tokenizer: tokenizer throughput on a ~100K-token prompt with the real
# Qwen3 vocabulary (not a ctest; scripts/bench.sh runs it; usage in the file header).
add_executable(bench_tokenizer
    ${CMAKE_CURRENT_LIST_DIR}/bench_tokenizer.c
    ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref/hf_tokenizer.c)
target_include_directories(bench_tokenizer PRIVATE ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref)
target_link_libraries(bench_tokenizer PRIVATE st_tok PkgConfig::CJSON st_warnings)
