# --spec ngram: the n-gram index on its own, and n-gram drafts through the
# engine loop on the CPU model runner (greedy / seeded / penalties / JSON
# identity, forced rollbacks, with MTP) and on the sim. It reaches
# src/engine/pool.h (the index, the test hook).
st_add_check_test(engine_ngram SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_ngram.c
                  LIBS st_engine m TIMEOUT 600)
target_include_directories(test_engine_ngram PRIVATE ${PROJECT_SOURCE_DIR}/src)
