# /infill bodies and the legacy "suffix" in the server's pure parts: parsing,
# defaults, n_predict, and the 400s naming the field.
if(TARGET st_server)
    st_add_check_test(server_infill SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_server_infill.c
                      LIBS st_server PkgConfig::CJSON)
    target_include_directories(test_server_infill PRIVATE ${PROJECT_SOURCE_DIR}/src)
endif()
