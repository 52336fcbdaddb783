# GBNF grammars in the sampler (mask vs recognizer on a small vocabulary
# and, when the e2e set-up installed it, Qwen3's) and through the engine
# loop on the CPU model runner. It reaches src/engine/pool.h.
st_add_check_test(engine_gbnf SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_gbnf.c
                  ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref/hf_tokenizer.c
                  LIBS st_engine PkgConfig::CJSON m TIMEOUT 600)
target_include_directories(test_engine_gbnf PRIVATE ${PROJECT_SOURCE_DIR}/src
                           ${PROJECT_SOURCE_DIR}/tests/e2e/tokenizer_ref)
# After tokenizer_ref, which installs the real Qwen3 tokenizer.json into the
# build tree (the real-vocabulary walk reads it there).
set_tests_properties(engine_gbnf PROPERTIES DEPENDS tokenizer_ref)
