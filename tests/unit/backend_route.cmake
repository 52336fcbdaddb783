# glm4moe's op-table additions on the CPU backend: the bias add and the
# routing parameters (sigmoid, selection bias, norm, scale), hand-computed.
st_add_check_test(backend_route SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_backend_route.c
                  LIBS st_backend m)
