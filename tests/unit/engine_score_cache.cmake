# Prompt scores kept with a slot's cached prefix (src/engine/prefix.c
# "scores", prompt.c): a scored request sharing a prefix reads only the
# rest and gets a cold read's numbers, bit for bit (CPU model runner on a
# make-model file); a model swap forgets them (sim).
st_add_check_test(engine_score_cache SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_score_cache.c
                  LIBS st_engine m TIMEOUT 300)
target_include_directories(test_engine_score_cache PRIVATE ${PROJECT_SOURCE_DIR}/src)
