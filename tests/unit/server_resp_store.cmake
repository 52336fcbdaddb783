# Stored /v1/responses: the bounded LRU store (responses_store.c), store and
# previous_response_id of a body (responses_chain.c), a finished response
# kept by its renderer (responses_reply.c) and the GET / DELETE routes.
if(TARGET st_server)
    st_add_check_test(server_resp_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_resp_store.c
                      LIBS st_server PkgConfig::CJSON Threads::Threads)
    target_include_directories(test_server_resp_store PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
