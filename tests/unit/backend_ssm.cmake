# The recurrent ops of hybrid models (strata/backend_ssm.h) on the CPU
# backend against scalar references.
st_add_check_test(backend_ssm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_backend_ssm.c
                  LIBS st_backend m)
