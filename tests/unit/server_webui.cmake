# The dashboard's embedded files (src/server/webui): the table
# cmake/StrataEmbed.cmake generates, content types, ETags, the routes.
if(TARGET st_server)
    st_add_check_test(server_webui SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_webui.c
                      LIBS st_server)
    target_include_directories(test_server_webui PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_definitions(test_server_webui PRIVATE
                               ST_WEBUI_SOURCE_DIR="${PROJECT_SOURCE_DIR}/webui")
endif()
