# response_format after a reasoning model's think block: the mask against
# a brute-force think-then-JSON validator on a small vocabulary, and the
# engine loop on the CPU model runner (reasoning + a schema-valid document,
# the same tokens with MTP and n-gram drafts); the thinking budget (the
# sampler's count and forced close, and on the model: the cut at exactly N
# reasoning tokens, with and without a schema, with drafts). It reaches
# src/engine/pool.h (the sampler).
st_add_check_test(engine_think SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_think.c
                  LIBS st_engine m TIMEOUT 600 COST 50)
target_include_directories(test_engine_think PRIVATE ${PROJECT_SOURCE_DIR}/src)
