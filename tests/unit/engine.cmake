# The engine's suites: the loop through the sim runner on a manual clock
# (engine), the scheduler scenarios end to end (engine_sched), and the
# sampler on hand-made logits (engine_sample; it reaches the sampler's
# private header engine/sample/sample.h, so src is on its include path).
st_add_check_test(engine SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine.c LIBS st_engine)
st_add_check_test(engine_sched SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_sched.c LIBS st_engine)
st_add_check_test(engine_sample SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_sample.c
                  LIBS st_engine m)
target_include_directories(test_engine_sample PRIVATE ${PROJECT_SOURCE_DIR}/src)
