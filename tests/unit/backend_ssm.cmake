# The recurrent ops of hybrid models (strata/backend_ssm.h) on the CPU
# backend against scalar references; run twice: the AVX2 dots of the
# chunked delta rule (when the CPU has them) and the scalar ones
# (STRATA_CPU_ISA).
st_add_check_test(backend_ssm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_backend_ssm.c
                  LIBS st_backend m)
add_test(NAME backend_ssm_scalar COMMAND test_backend_ssm)
set_tests_properties(backend_ssm_scalar PROPERTIES LABELS unit TIMEOUT 120
    ENVIRONMENT "STRATA_CPU_ISA=scalar;CK_DEFAULT_TIMEOUT=60")
