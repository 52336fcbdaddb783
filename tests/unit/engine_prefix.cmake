# Prefix reuse (src/engine/prefix.c): the sim on a manual clock (shorter
# reads, slot choice, per-slot caches, give-way) and the CPU model runner on
# a make-model file (greedy output the same cached or cold).
st_add_check_test(engine_prefix SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_prefix.c
                  LIBS st_engine m TIMEOUT 300)
