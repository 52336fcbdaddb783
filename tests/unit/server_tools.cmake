# Tool calls and reasoning on the server side (gen_reply.c, oai_tools.c,
# the parsed shapes of oai_response.c), without a network.
if(TARGET st_server)
    st_add_check_test(server_tools SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_tools.c
                      LIBS st_server PkgConfig::CJSON)
    target_include_directories(test_server_tools PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
