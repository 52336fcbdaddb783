# POST /v1/messages (Anthropic's Messages API) in the server's pure parts:
# the body's translation onto a chat request, the 400s naming the Messages
# field, Anthropic's error body, the message object and the stream's events
# (messages_request.c, messages_reply.c).
if(TARGET st_server)
    st_add_check_test(server_messages SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_messages.c
                      LIBS st_server PkgConfig::CJSON)
    target_include_directories(test_server_messages PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
