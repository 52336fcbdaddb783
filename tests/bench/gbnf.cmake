# bench_gbnf: the GBNF mask's cost per token on the real Qwen3 vocabulary,
# against json_schema / json_object on the same documents (not a ctest;
# usage in the file header).
add_executable(bench_gbnf ${CMAKE_CURRENT_LIST_DIR}/bench_gbnf.c
               ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref/hf_tokenizer.c)
target_include_directories(bench_gbnf PRIVATE ${PROJECT_SOURCE_DIR}/src
                           ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref
                           ${PROJECT_SOURCE_DIR}/tests/unit)
target_link_libraries(bench_gbnf PRIVATE st_engine PkgConfig::CJSON st_warnings)
