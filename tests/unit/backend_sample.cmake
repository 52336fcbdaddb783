# The optional ops of the backend table (sampling, graph calls) on the CPU.
st_add_check_test(backend_sample SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_backend_sample.c
                  LIBS st_backend)
