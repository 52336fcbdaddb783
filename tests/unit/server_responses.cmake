# POST /v1/responses in the server's pure parts: the body's translation onto
# a chat request, the 400s naming the Responses field, the response object
# and the stream's events (responses_request.c, responses_reply.c).
if(TARGET st_server)
    st_add_check_test(server_responses SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_responses.c
                      LIBS st_server PkgConfig::CJSON)
    target_include_directories(test_server_responses PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
