# Prefix sharing across slots (src/engine/prefix.c, st_engine_prefix_pull):
# the sim on a manual clock (copies from busy and free slots, the threshold,
# cache_prompt false, kept scores) and the CPU model runner on make-model
# files (greedy output and prompt scores the same as a cold read).
st_add_check_test(engine_prefix_copy SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_prefix_copy.c
                  LIBS st_engine m TIMEOUT 300)
target_include_directories(test_engine_prefix_copy PRIVATE ${PROJECT_SOURCE_DIR}/src)
