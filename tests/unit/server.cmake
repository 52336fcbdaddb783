# The server module's unit suite: request parsing, response and SSE
# rendering, error mapping, auth and ids, routes, metrics text -- all
# without a network (the e2e suites in tests/e2e drive the real binary).
if(TARGET st_server)
    st_add_check_test(server SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server.c
                      LIBS st_server PkgConfig::CJSON)
    target_include_directories(test_server PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
