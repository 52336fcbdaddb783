# Echo and prompt_logprobs in the server's pure parts: parsing into engine
# parameters, the 400s, the legacy and vLLM renderings of prompt tokens.
if(TARGET st_server)
    st_add_check_test(server_echo SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_echo.c
                      LIBS st_server PkgConfig::CJSON)
    target_include_directories(test_server_echo PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
