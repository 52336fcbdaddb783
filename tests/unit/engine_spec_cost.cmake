# The draft cost model and the cost-aware draft-length plan (spec_cost.c)
# with injected timings: no clock, no model. It reaches src/engine/pool.h.
st_add_check_test(engine_spec_cost SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_spec_cost.c
                  LIBS st_engine m)
target_include_directories(test_engine_spec_cost PRIVATE ${PROJECT_SOURCE_DIR}/src)
