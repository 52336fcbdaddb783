# GBNF grammars in the sampler (mask vs recognizer on a small vocabulary
# and, in its own entry, Qwen3's) and through the engine
# loop on the CPU model runner. It reaches src/engine/pool.h.
st_add_check_test(engine_gbnf SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_gbnf.c
                  ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref/hf_tokenizer.c
                  LIBS st_engine PkgConfig::CJSON m TIMEOUT 600 INPUT_CASES real_tokenizer COST 20)
target_include_directories(test_engine_gbnf PRIVATE ${PROJECT_SOURCE_DIR}/src
                           ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref)
# engine_gbnf_real_tokenizer (the real-vocabulary walk) runs after
# tokenizer_ref, which installs Qwen3's tokenizer.json; skipped without it.
set_tests_properties(engine_gbnf_real_tokenizer PROPERTIES DEPENDS tokenizer_ref
                     COST 80)
