# POST /v1/embeddings in the server's pure parts: body parsing (every input
# form, caps, 400s naming the field), truncation, base64, the body's shape.
if(TARGET st_server)
    st_add_check_test(server_embed SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_embed.c
                      LIBS st_server PkgConfig::CJSON m)
    target_include_directories(test_server_embed PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
