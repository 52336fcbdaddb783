# The scheduler's suites (st_sched only): one executable each, so a failure
# names the area. sched_sim.c is the tiny simulated engine they drive the
# scheduler with; src/sched is on the include path for internal.h
# (st_sched_check_invariants).
st_add_check_test(sched_intake SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sched_intake.c LIBS st_sched)
foreach(suite queue batch random)
    st_add_check_test(sched_${suite}
        SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sched_${suite}.c ${CMAKE_CURRENT_LIST_DIR}/sched_sim.c
        LIBS st_sched)
    target_include_directories(test_sched_${suite} PRIVATE ${PROJECT_SOURCE_DIR}/src/sched)
endforeach()
