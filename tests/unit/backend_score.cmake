# The optional score op of the backend table on the CPU (st_backend_score,
# st_score_row) against a brute-force double reference; run twice: the
# AVX2 path (when the CPU has it) and the scalar one (STRATA_CPU_ISA).
st_add_check_test(backend_score SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_backend_score.c
                  LIBS st_backend m)
add_test(NAME backend_score_scalar COMMAND test_backend_score)
set_tests_properties(backend_score_scalar PROPERTIES LABELS unit TIMEOUT 120
    ENVIRONMENT "STRATA_CPU_ISA=scalar;CK_DEFAULT_TIMEOUT=60")
