# The backend op table on the CPU backend: every op against a naive float
# implementation (public API only).
st_add_check_test(backend_cpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_backend_cpu.c
                  LIBS st_backend TIMEOUT 300)
