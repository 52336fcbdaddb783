# models: several models on shared sim engines (issue 8, docs/MODELS.md),
# end to end through the scheduler on a manual clock. src/sched is on the
# include path for st_sched_check_invariants (internal.h).
st_add_check_test(models SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_models.c LIBS st_engine)
target_include_directories(test_models PRIVATE ${PROJECT_SOURCE_DIR}/src/sched)
