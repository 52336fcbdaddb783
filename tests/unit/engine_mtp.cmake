# --batch-mtp through the engine loop on the CPU model runner: greedy
# identity with and without MTP, forced rollbacks, seeded sampling, a model
# without an MTP layer. It reaches src/engine/pool.h (the test hook).
st_add_check_test(engine_mtp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_mtp.c
                  LIBS st_engine m TIMEOUT 600 COST 140)
target_include_directories(test_engine_mtp PRIVATE ${PROJECT_SOURCE_DIR}/src)
