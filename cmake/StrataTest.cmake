# st_add_check_test(name SOURCES ... LIBS ... [LABELS ...] [TIMEOUT s] [SLOW_CASES]
#                   [INPUT_CASES tag] [COST s])
# One Check suite per executable, one ctest entry per executable; with
# SLOW_CASES the tcases tagged "slow" run as ${name}_slow, with INPUT_CASES
# the tcases tagged 'tag' (those that read an input from outside the
# repository) run as ${name}_${tag}. COST: the suite's rough run time in
# seconds under the sanitizers, so that ctest -j starts the long suites first
# instead of leaving one to run alone at the end (CI builds are clean: ctest
# has no timings of its own from an earlier run). Exit 77 means "skipped" (CUDA suites
# without a GPU; an input case whose input is missing).
pkg_check_modules(CHECK REQUIRED IMPORTED_TARGET check)

function(st_add_check_test name)
    cmake_parse_arguments(T "SLOW_CASES" "TIMEOUT;INPUT_CASES;COST" "SOURCES;LIBS;LABELS" ${ARGN})
    add_executable(test_${name} ${T_SOURCES})
    target_link_libraries(test_${name} PRIVATE st_test_support ${T_LIBS}
                          PkgConfig::CHECK st_warnings)
    add_test(NAME ${name} COMMAND test_${name})
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 120)
    endif()
    if(NOT T_LABELS)
        set(T_LABELS unit)
    endif()
    # Check's own default limit of 4 s per test is a timing assertion on a
    # shared, noisy machine (a brute-force test under ASan beside another
    # suite went past it in CI): 60 s per test unless a tcase sets its own,
    # and ctest's TIMEOUT for the whole suite, catch what hangs.
    set(env "STRATA_SOURCE_DIR=${PROJECT_SOURCE_DIR};STRATA_BINARY_DIR=${PROJECT_BINARY_DIR};CK_DEFAULT_TIMEOUT=60")
    set(excluded "")
    if(T_INPUT_CASES)
        # Its own entry, so that a missing input shows as a skip (the test's
        # main returns 77, support_input_missing) instead of a pass.
        add_test(NAME ${name}_${T_INPUT_CASES} COMMAND test_${name})
        set_tests_properties(${name}_${T_INPUT_CASES} PROPERTIES
            LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
            ENVIRONMENT "${env};CK_INCLUDE_TAGS=${T_INPUT_CASES}")
        set(excluded "${T_INPUT_CASES}")
    endif()
    if(T_SLOW_CASES)
        # The suite's tcases tagged "slow" (brute-force property runs) are a
        # second ctest, ${name}_slow, labelled slow: the sanitizer pass of
        # scripts/test.sh leaves them out (-LE slow), the plain pass runs both.
        add_test(NAME ${name}_slow COMMAND test_${name})
        set_tests_properties(${name}_slow PROPERTIES
            LABELS "${T_LABELS};slow" TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77
            ENVIRONMENT "${env};CK_INCLUDE_TAGS=slow")
        set(excluded "${excluded} slow")
    endif()
    string(STRIP "${excluded}" excluded)
    if(excluded)
        set(env "${env};CK_EXCLUDE_TAGS=${excluded}")
    endif()
    set_tests_properties(${name} PROPERTIES
        LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
    if(T_COST)
        set_tests_properties(${name} PROPERTIES COST ${T_COST})
    endif()
endfunction()
